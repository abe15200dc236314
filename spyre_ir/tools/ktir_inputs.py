"""spyre-run on a KTIR file (a `ktdp` kernel, as Triton-Spyre writes it).

    spyre-run kernel.mlir [--entry K] [--inputs x.npy,y.npy,...] [--scalars N=V,...]
                          [--grid N[,M...]]
                          [--level dataflow|sim] [--lx-bytes N] [--report text|json]
                          [--trace OUT.json] [--check] [--print] [--output OUT.npz]

The kernel `func.func @K` (`--entry`; the file's only kernel when `--entry` is left
at `main`) is lowered by the pipeline `ktir-to-units` (`ktir-to-dataflow` for
`--level dataflow`) and run over its grid on the simulated card (or the L2
interpreter). Its arguments:

* pointer arguments (`index` values that address a `ktdp.construct_memory_view`): one
  array each, from `--inputs` (one .npy per pointer argument, in argument order,
  shape and dtype of the memory view) or random from `--seed` (floats standard normal;
  integers uniform in [0, 16), narrowed to the rows of the table an indirect access
  tile reads through them). Pointers that are only stored to start as zeros;
* scalar arguments (index, integer, float): `--scalars NAME=VALUE,...` by argument name
  (the kernel is specialised to them; a missing one is an error naming it);
* memory views at constant addresses (spyre_ir/lowering/ktir_address.py): each buffer
  of the kernel's address space is a pointer argument `%mem<ADDRESS>` after its own.

`--grid` launches a kernel written without a `grid` attribute over that many tiles.

The results are the arrays of the pointers the kernel stores to, printed as for our own
IR, with the simulator's one-line report (or `--report text|json`, `--trace`).
`--check` compares them with the KTIR reference interpreter (spyre_ir/interp/ktir.py)
on the same inputs. The report's `wall` line splits spyre-run's time into parse,
lowering and run.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, IntegerType, ModuleOp, TensorType

from spyre_ir.diagnostics import DiagnosticError
from spyre_ir.dialects import ktdp
from spyre_ir.interp.numerics import to_storage
from spyre_ir.lowering.ktir_address import bind_absolute_addresses, launch_grid, parse_grid
from spyre_ir.lowering.ktir_calls import inline_calls
from spyre_ir.lowering.ktir_kernel import ktir_kernels, parse_scalars
from spyre_ir.lowering.ktir_observe import observe_deliveries
from spyre_ir.lowering.ktir_specialize import specialize_views
from spyre_ir.lowering.ktir_tile_offset import rebase_tile_offsets
from spyre_ir.lowering.ktir_values import LoweringError, Pointer, kernel_pointers
from spyre_ir.tools import spyre_run as R
from spyre_ir.tools.ktir_alias import alias_note, aliases_of, share_regions


def is_ktir(module: ModuleOp) -> bool:
    return bool(ktir_kernels(module))


def find_kernel(module: ModuleOp, entry: str) -> func.FuncOp:
    kernels = ktir_kernels(module)
    for fn in kernels:
        if fn.sym_name.data == entry:
            return fn
    if entry == "main" and len(kernels) == 1:
        return kernels[0]
    names = ", ".join(f"@{k.sym_name.data}" for k in kernels)
    raise R.RunError(f"no KTIR kernel @{entry} (kernels: {names}); pick one with --entry")


def index_bounds(fn: func.FuncOp, pointers: dict[int, Pointer]) -> dict[int, int]:
    """Per integer pointer, the bound of its random values: the smallest extent of the
    table dims indirect access tiles index through it (rows for a row gather, each
    dim its own index view's for an element gather)."""

    bounds: dict[int, int] = {}
    for k, p in pointers.items():
        for view in p.views:
            for use in view.result.uses:
                op = use.operation
                if isinstance(op, ktdp.ConstructIndirectAccessTileOp) and use.index > 0:
                    dims = [d for d, indirect in enumerate(op.kinds()) if indirect]
                    j = use.index - 1  # among the index views, in subscript order
                    dim = dims[j] if j < len(dims) else 0
                    rows = op.base.type.get_shape()[dim]  # type: ignore[attr-defined]
                    bounds[k] = min(bounds.get(k, rows), rows)
    return bounds


def scatter_indices(fn: func.FuncOp, pointers: dict[int, Pointer]) -> list[tuple[list[int], tuple]]:
    """Per store through an indirect tile (a scatter) whose index views are pointers
    that no other indirect tile reads, one per indirect subscript: those pointers in
    subscript order and the table dims they index (dim 0 for a row scatter, every dim
    for an element scatter). Their random values are drawn without repeating a
    position (`distinct_positions`): a position written twice with different values
    is a race, the reference interpreter's located error."""
    users: dict[int, int] = {}  # pointer -> how many indirect tiles read it
    of_view = {id(v): k for k, p in pointers.items() for v in p.views}
    found = []
    for op in fn.walk():
        if not isinstance(op, ktdp.ConstructIndirectAccessTileOp):
            continue
        ks = [of_view.get(id(v.owner)) for v in op.indirect_memrefs]
        for k in set(ks):
            users[k] = users.get(k, 0) + 1  # type: ignore[index]
        stored = any(isinstance(u.operation, ktdp.StoreOp) for u in op.result.uses)
        if not stored or None in ks or len(set(ks)) != len(ks):
            continue
        dims = [d for d, indirect in enumerate(op.kinds()) if indirect]
        shape = op.base.type.get_shape()  # type: ignore[attr-defined]
        found.append((ks, tuple(shape[d] for d in dims)))
    return [(ks, dims) for ks, dims in found if all(users[k] == 1 for k in ks)]


def distinct_positions(
    rng: np.random.Generator, shapes: list[tuple[int, ...]], dims: tuple[int, ...]
) -> list[np.ndarray] | None:
    """Random coordinates in a box of `dims`, one array per dim of the index views'
    `shapes` (all one shape), no position twice; None when they do not fit."""
    if len(set(shapes)) != 1 or math.prod(shapes[0]) > math.prod(dims):
        return None
    # Without replacement in O(drawn), not O(table): a cache's pages or elements.
    flat = rng.choice(math.prod(dims), size=math.prod(shapes[0]), replace=False)
    return [c.reshape(shapes[0]) for c in np.unravel_index(flat, dims)]


# Random values a run draws for a kernel's views: a view as large as the card's memory
# (a mistyped size) would take minutes. 2 GiB holds a paged KV cache of 1.31 GB
# (ktir-cpu's paged-tensor-copy.mlir) with its other views.
RANDOM_DRAW_BYTES = 2 << 30
# An f16 view read by the kernel and larger than this gets arbitrary_halves (random
# bits, a quarter of the time of normal values: 4.5 s, not 17 s, for 655 M values here).
NORMAL_DRAW_BYTES = 256 << 20


def check_sizes(fn: func.FuncOp, pointers: Sequence[Pointer]) -> None:
    """A RunError, before anything is allocated, for a memory view of a negative size or
    views too large to draw (spyre_run.input_byte_limit)."""
    from spyre_ir.dialects.spyre import element_type_name
    from spyre_ir.hardware import ELEMENT_BYTES

    total = 0
    for p in pointers:  # static shapes: kernel_pointers refuses dynamic views
        total += math.prod(p.shape) * ELEMENT_BYTES.get(element_type_name(p.element), 8)
    limit = min(R.input_byte_limit(), RANDOM_DRAW_BYTES)
    if total > limit:
        raise R.RunError(
            f"the memory views of @{fn.sym_name.data} take {total} bytes; a run draws at most "
            f"{limit} bytes of random values (give larger views with --inputs)"
        )


def make_inputs(
    args: argparse.Namespace, fn: func.FuncOp, pointers: dict[int, Pointer]
) -> dict[int, np.ndarray]:
    from spyre_ir.dialects.spyre import element_type_name

    order = sorted(pointers)
    if args.inputs is not None:
        paths = [p.strip() for p in args.inputs.split(",") if p.strip()]
        if len(paths) != len(order):
            raise R.RunError(
                f"@{fn.sym_name.data} has {len(order)} pointer arguments, but --inputs names "
                f"{len(paths)} files"
            )
        arrays = {}
        for k, path in zip(order, paths):
            p = pointers[k]
            value = R._load_npy(path)
            want = to_storage(np.zeros(p.shape), element_type_name(p.element))
            if value.shape != p.shape or value.dtype != want.dtype:
                raise R.RunError(
                    f"input '{path}' for %{p.name} is {value.shape} {value.dtype}; the memory "
                    f"view is {p.shape} {want.dtype}"
                )
            arrays[k] = value
        return arrays
    check_sizes(fn, [pointers[k] for k in order])
    rng = np.random.default_rng(args.seed)
    # A stored-only pointer's memory before the run: random too, so the elements the
    # kernel leaves keep something a run that zeroes them would not match (its own
    # generator: the loaded pointers' values do not depend on the stored ones).
    before = np.random.default_rng([args.seed, 1])
    bounds = index_bounds(fn, pointers)
    arrays = {}
    for k in order:
        p = pointers[k]
        name = element_type_name(p.element)
        if not p.read:
            if name == "f16":  # random bits, cheap for an output as large as the input
                arrays[k] = arbitrary_halves(before, p.shape)
                continue
            value = before.random(p.shape, dtype=np.float32) * 2 - 1
            if name in ("i32", "i64", "i1", "i8", "i16"):
                value = before.integers(0, R.DEFAULT_INDEX_BOUND, size=p.shape)
        elif name in ("i32", "i64"):
            value = rng.integers(0, bounds.get(k, R.DEFAULT_INDEX_BOUND), size=p.shape)
        elif name == "f16" and math.prod(p.shape) * 2 > NORMAL_DRAW_BYTES:
            arrays[k] = arbitrary_halves(rng, p.shape)
            continue
        elif name == "f16":
            arrays[k] = normal_halves(rng, p.shape)
            continue
        else:
            value = rng.standard_normal(p.shape, dtype=np.float32)
        arrays[k] = to_storage(value, name)
    for ks, dims in scatter_indices(fn, pointers):  # a scatter's positions: no repeats
        coords = distinct_positions(rng, [pointers[k].shape for k in ks], dims)
        for k, c in zip(ks, coords or ()):
            arrays[k] = to_storage(c, element_type_name(pointers[k].element))
    return arrays


# Values normal_halves draws at a time: 256 KiB of float32, reused (cache-resident).
DRAW_BLOCK = 1 << 16


def normal_halves(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """`rng.standard_normal(shape, dtype=np.float32).astype(np.float16)` bit for bit
    (the generator's stream is the same drawn in blocks), without the whole float32
    draw: matmul 64x2048x8192's weight would take 64 MB of fresh memory, whose first
    touch costs more than the draw on this VM. numpy rounds to f16 itself: the
    torch-backed bulk path would import torch."""
    out = np.empty(shape, np.float16)
    flat = out.reshape(-1)
    block = np.empty(min(flat.size, DRAW_BLOCK), np.float32)
    for start in range(0, flat.size, DRAW_BLOCK):
        part = block[: flat.size - start]
        rng.standard_normal(dtype=np.float32, out=part)
        flat[start : start + part.size] = part
    return out


def arbitrary_halves(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random f16 values of either sign with magnitudes in [1/8, 2): random sign and
    fraction bits under an exponent drawn from four. A tenth of the time of drawing
    floats and rounding them (layernorm 1151x8192's output: 9.4 M values).

    The bits are `rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)`'s: numpy
    draws full-range uint16s as the two halves of one uint32 draw each, low half first
    (tests/test_ktir_inputs.py holds it to that), so the uint32 draw viewed as halves
    (little-endian) is the same stream at a fifth of the time; the exponent is set in
    place, a block at a time (no 9.4 M-value temporaries)."""
    n = math.prod(shape)
    words = rng.integers(0, 1 << 32, size=(n + 1) // 2, dtype=np.uint32)
    bits = words.view(np.uint16)[:n]
    scratch = np.empty(min(n, DRAW_BLOCK), np.uint16)
    for start in range(0, n, DRAW_BLOCK):
        part = bits[start : start + DRAW_BLOCK]
        exponent = scratch[: part.size]
        np.right_shift(part, np.uint16(10), out=exponent)
        exponent &= np.uint16(3)
        exponent += np.uint16(12)
        exponent <<= np.uint16(10)
        part &= np.uint16(0x83FF)
        part |= exponent
    return bits.reshape(shape).view(np.float16)


def scalar_values(
    fn: func.FuncOp, pointers: dict[int, Pointer], text: str | None
) -> dict[int, float]:
    try:
        named = parse_scalars(text or "")
    except ValueError as error:
        raise R.RunError(f"--scalars: {error}") from None
    values, missing, known = {}, [], []
    for k, arg in enumerate(fn.body.block.args):
        if k in pointers:
            continue
        name = arg.name_hint or f"arg{k}"
        known.append(name)
        if name in named:
            values[k] = _scalar_in_range(name, arg.type, named[name])
        else:
            missing.append(f"{name} ({arg.type})")
    if missing:
        raise R.RunError(
            f"@{fn.sym_name.data} needs --scalars for its scalar arguments: {', '.join(missing)}"
        )
    unknown = sorted(set(named) - set(known))
    if unknown:
        takes = ", ".join(known) or "none"
        raise R.RunError(f"--scalars names {', '.join(unknown)}, not a scalar argument of "
                         f"@{fn.sym_name.data} (its scalar arguments: {takes})")  # fmt: skip
    return values


# --scalars carries numbers as Python floats: integers are exact up to 2**53.
_EXACT = 1 << 53


def _scalar_in_range(name: str, kind: object, value: float) -> float:
    """`value` for scalar argument `name` of type `kind`: an integer type takes a whole
    number its width holds (index: 64 bits) and --scalars carries exactly; a RunError
    otherwise. Float arguments take any value (inf and nan included)."""
    if not isinstance(kind, IndexType | IntegerType):
        return value
    if not math.isfinite(value) or value != int(value):
        raise R.RunError(f"--scalars: {name} is {kind}, but {value!r} is not an integer")
    width = 64 if isinstance(kind, IndexType) else kind.width.data
    low, high = -(1 << max(width - 1, 0)), (1 << width) - 1  # signless: either reading
    if not max(low, -_EXACT) <= value <= min(high, _EXACT):
        raise R.RunError(
            f"--scalars: {name} = {value:.17g} is outside the integers {kind} holds and "
            f"--scalars carries exactly [{max(low, -_EXACT)}, {min(high, _EXACT)}]"
        )
    return value


def run(args: argparse.Namespace, module: ModuleOp, parse_seconds: float) -> int:
    if args.level == "tensor":
        raise R.RunError("a KTIR kernel runs at --level dataflow or sim, not tensor")
    if args.cores is not None:
        raise R.RunError("--cores does not apply to a KTIR kernel: its grid gives the cores")
    if args.reference is not None:
        raise R.RunError(
            "--reference does not apply to a KTIR kernel: --check compares with "
            "the KTIR interpreter",
            code=2,
        )
    try:
        inline_calls(module)  # a kernel sequencing others: one kernel, the stages in order
    except LoweringError as error:
        from spyre_ir.diagnostics import Diagnostic, op_location

        file, line, col = op_location(error.op, args.file) if error.op else (args.file, 0, 0)
        raise DiagnosticError([Diagnostic(file, line, col, str(error))]) from None
    fn = find_kernel(module, args.entry)
    try:
        # Views sized by scalar arguments are specialized to the values given.
        specialize_views(fn, parse_scalars(args.scalars or ""))
    except ValueError:
        pass  # a malformed --scalars is reported with the scalars below
    try:
        grid = parse_grid(args.grid) if args.grid else None
    except ValueError as error:
        raise R.RunError(f"--grid: {error}") from None
    try:
        if grid is not None:
            launch_grid(fn, grid)
        # The views at constant addresses get pointers.
        buffers = bind_absolute_addresses(fn, args.address_unit or "element")
        # A kernel storing nothing: its inter-tile results are stored to be compared.
        tiles = ktdp.grid_of(fn, LoweringError)
        observed = observe_deliveries(fn, tiles)
        original = fn.clone()  # the reference runs the kernel's own pointer arithmetic
        rebase_tile_offsets(fn, tiles)
        pointers = kernel_pointers(fn)
    except LoweringError as error:
        from spyre_ir.diagnostics import Diagnostic, op_location

        file, line, col = op_location(error.op, args.file) if error.op else (args.file, 0, 0)
        raise DiagnosticError([Diagnostic(file, line, col, str(error))]) from None
    scalars = scalar_values(fn, pointers, args.scalars)
    arrays = make_inputs(args, fn, pointers)
    # Views of several types sharing memory: one draw of its bytes, races checked.
    aliases = aliases_of(buffers, pointers)
    if aliases:
        share_regions(arrays, aliases, set(index_bounds(fn, pointers)), args.inputs is not None)
    entry = fn.sym_name.data
    named = ",".join(f"{fn.body.block.args[k].name_hint}={v!r}" for k, v in scalars.items())
    reference = None
    if args.check or aliases:
        from spyre_ir.interp.ktir import KtirError, run_kernel  # the reference: --check or aliases

        try:
            # On the simulator, f16 is the card's DLFloat16: the reference rounds as it.
            reference = run_kernel(
                original, arrays, scalars, card_halves=args.level != "dataflow", aliases=aliases
            )
            reference = reference if args.check else None
        except KtirError as error:
            # A kernel the lowering refuses at an op before the interpreter's failing one
            # gets the lowering's located error (the one a run without --check gives),
            # not the interpreter's later symptom of it.
            failed = _diag(error, args.file, (args.address_unit or "element") if aliases else None)
            refused = lowering_refusal(pipeline_of(args, named), module, args.file)
            if refused and _place(refused[0]) < _place(failed):
                raise DiagnosticError(refused) from None
            raise DiagnosticError([failed]) from None

    start = time.perf_counter()
    try:
        lower(pipeline_of(args, named), module, args.file)
    except DiagnosticError as error:
        raise DiagnosticError([*error.diagnostics, *_grid_note(fn, args.file)]) from None
    lowering_seconds = time.perf_counter() - start
    lowered = R.find_entry(module, entry)
    inputs = [
        arrays[k].reshape(t.get_shape())
        for k, t in zip(
            [k for k in sorted(pointers) if pointers[k].read], lowered.function_type.inputs.data
        )
    ]
    outputs = [k for k in sorted(pointers) if pointers[k].written]

    start = time.perf_counter()
    runner = R.LEVELS[args.level][0]
    # The memory a kernel stores to holds its input contents before the run (random or
    # --inputs, as the reference's): what the kernel does not store keeps them.
    out_types = lowered.function_type.outputs.data
    contents = [arrays[k].reshape(t.get_shape()) for k, t in zip(outputs, out_types)]
    opts = R.RunOptions(
        trace=args.trace is not None,
        check_races=args.check,
        output_contents=dict.fromkeys(_kernel_names(module), contents),
    )
    try:
        outcome = runner(module, inputs, entry, opts)
    except R.RunError as error:
        notes = _grid_note(fn, args.file)
        if not notes:
            raise
        raise R.RunError("\n".join([str(error), *map(str, notes)]), error.code) from None
    run_seconds = time.perf_counter() - start

    out = sys.stderr if args.report == "json" else sys.stdout
    results = [r.reshape(pointers[k].shape) for k, r in zip(outputs, outcome.outputs)]
    print(
        f"@{entry}: {len(results)} result{'s' * (len(results) != 1)} (the pointers it stores to)",
        file=out,
    )
    if aliases:
        print(alias_note(aliases, arrays, args.address_unit or "element"), file=out)
    if observed:
        print(
            f"(the kernel stores nothing: {', '.join('%' + n for n in observed)} "
            f"hold{'s' * (len(observed) == 1)} each tile's result of its inter-tile ops, "
            "tile t's at its t-th slab; docs/ktir.md)",
            file=out,
        )
    for k, value in zip(outputs, results):
        p = pointers[k]
        print(f"%{p.name}: {R.summary(value, TensorType(p.element, p.shape))}", file=out)
        if args.print:
            with np.printoptions(threshold=sys.maxsize, linewidth=100):
                print(np.array2string(value, separator=", "), file=out)
    if args.output:
        R.save(args.output, results)
    if outcome.report is not None:
        outcome.report["wall_seconds"] = {
            "parse": parse_seconds,
            "lowering": lowering_seconds,
            "run": run_seconds,
        }
        if args.report == "text":
            print(R.format_report(outcome.report), file=out)
        elif args.report is None:
            print(R.one_line_report(outcome.report), file=out)
    print(
        f"wall: parse {parse_seconds:.3f} s, lowering {lowering_seconds:.3f} s, "
        f"{'simulation' if outcome.report is not None else 'run'} {run_seconds:.3f} s",
        file=out,
    )
    if args.trace and outcome.trace is not None:
        R.write_trace(args.trace, outcome.trace)
        print(f"wrote trace to {args.trace}", file=out)
    status = 0
    if reference is not None:
        status = check(pointers, outputs, results, reference, out)
    if args.report == "json" and outcome.report is not None:
        sys.stdout.write(json.dumps(outcome.report, indent=2, default=R._json_default) + "\n")
    return status


def pipeline_of(args: argparse.Namespace, named: str):
    """The KTIR pipeline of `--level` with the run's options."""
    from spyre_ir.pipelines import KtirToDataflow, KtirToUnits

    pipeline = KtirToDataflow if args.level == "dataflow" else KtirToUnits
    options = {"scalars": named} | ({"lx_bytes": args.lx_bytes} if args.lx_bytes else {})
    return pipeline(**options)


def _place(diagnostic) -> tuple[int, int]:
    """Where a diagnostic is in the file (an unlocated one after everything)."""
    line = diagnostic.line or 1 << 62
    return (line, diagnostic.column)


def lowering_refusal(pipeline, module: ModuleOp, path: str) -> list:
    """The located diagnostics of the KTIR pipeline refusing (a copy of) `module`, or
    [] when it lowers it or fails in any other way (the caller's error stands)."""
    from xdsl.utils.exceptions import DiagnosticException

    from spyre_ir.diagnostics import failure_diagnostics
    from spyre_ir.registry import make_context

    copy = module.clone()
    try:
        pipeline.apply(make_context(), copy)
    except (DiagnosticError, DiagnosticException) as error:
        return failure_diagnostics(error, copy, path)
    except Exception:  # noqa: BLE001 - any other failure leaves the interpreter's error
        return []
    return []


def lower(pipeline, module: ModuleOp, path: str) -> None:
    """Run the KTIR pipeline on `module` in place; failures as located diagnostics."""
    from xdsl.utils.exceptions import DiagnosticException

    from spyre_ir.diagnostics import failure_diagnostics, verify_all
    from spyre_ir.registry import make_context

    try:
        pipeline.apply(make_context(), module)
        problems = verify_all(module, path)
    except (DiagnosticError, DiagnosticException) as error:
        problems = failure_diagnostics(error, module, path)
    except ValueError as error:
        raise R.RunError(f"lowering failed: {error}") from None
    if problems:
        raise DiagnosticError(problems)


def check(pointers, outputs, results, reference, out) -> int:
    problems, errors = [], []
    for k, got in zip(outputs, results):
        p = pointers[k]
        err, problem = R.compare(got, reference[k], TensorType(p.element, p.shape))
        errors.append(err)
        if problem:
            problems.append(f"check: MISMATCH in %{p.name}: {problem} (the KTIR interpreter)")
    for line in problems:
        print(line, file=out)
    if problems:
        return 1
    if not results:  # the spec's kt07a / kt07b: nothing stored, so nothing to compare
        print(
            "check: nothing to compare (the kernel stores nothing; it ran on the card and "
            "in the KTIR interpreter)",
            file=out,
        )
        return 0
    print(
        f"check: ok (max abs error {max(errors, default=0.0):.3g} against the KTIR "
        f"interpreter, {len(results)} result{'s' * (len(results) != 1)})",
        file=out,
    )
    return 0


def _diag(error, path: str, unit: str | None = None):
    """The interpreter's located error; with views that alias, the address reading."""
    from spyre_ir.diagnostics import Diagnostic, op_location

    file, line, col = op_location(error.op, path) if error.op is not None else (path, 0, 0)
    reading = f" (addresses read as {unit}s, --address-unit)" if unit else ""
    return Diagnostic(file, line, col, f"KTIR interpreter: {error}{reading}")


def _grid_note(fn: func.FuncOp, path: str) -> list:
    """A kernel that reads its tile id but has no grid runs on one tile: say so, as
    the likely cause of a failed lowering (outputs the other tiles would write)."""
    from spyre_ir.diagnostics import Diagnostic, op_location

    if "grid" in fn.attributes or not any(
        isinstance(op, ktdp.GetComputeTileIdOp) for op in fn.walk()
    ):
        return []
    file, line, col = op_location(fn, path)
    message = (
        f"@{fn.sym_name.data} reads its tile id but has no grid attribute: it runs on one "
        "tile (--grid N launches it over N)"
    )
    return [Diagnostic(file, line, col, message, severity="note")]


def _kernel_names(module: ModuleOp) -> list[str]:
    """The names of the lowered module's kernels (L2) or programs (L3): the KTIR
    kernel's lowering, whose outputs are the pointers it stores to."""
    from spyre_ir.dialects import core
    from spyre_ir.dialects import dataflow as D

    return [op.sym_name.data for op in module.walk() if isinstance(op, D.KernelOp | core.ProgramOp)]
