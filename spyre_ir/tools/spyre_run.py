"""spyre-run: run a spyre-ir program on the simulated card (or an interpreter) and show
its results, its performance report and trace, and check it against a reference.

    spyre-run FILE.mlir [--entry main] [--seed N] [--inputs a.npy,b.npy]
                        [--level tensor|dataflow|units|sim] [--cores N] [--lx-bytes N]
                        [--report text|json] [--trace OUT.json]
                        [--check] [--reference REF.mlir]
                        [--print] [--output OUT.npz]

FILE holds IR at any level; its level is detected from the ops it contains: L1 (only
`spyre`, `func` and `arith` ops), L2 (a `dataflow.kernel` or `dataflow.group`) or L3 (a
`core.program`). The file is parsed and verified (errors: `FILE:LINE:COL: error: ...`,
exit 1), lowered as far as `--level` asks, and `func.func @ENTRY` (`--entry`, default
`main`) runs there:

* `--level sim` (the default), or its synonym `--level units`: lower to L3 (L1 through
  the `spyre-to-units` pipeline, L2 through `convert-dataflow-to-units`) and run on the
  simulated card (`spyre_ir.sim.engine.simulate`, the default 32-core card).
* `--level dataflow`: lower L1 to L2 (`spyre-to-dataflow`) and run the L2 interpreter
  (`spyre_ir.interp.dataflow`); an L3 file cannot run there.
* `--level tensor`: the L1 interpreter (`spyre_ir.interp.tensor`), for L1 files only.

`--cores N` and `--lx-bytes N` are the options of the L1 -> L2 lowering (cores to use,
LX scratchpad bytes per core); they are an error when nothing is lowered from L1. A pass
that fails (say a kernel needing more LX than `--lx-bytes`) prints its located
diagnostic `FILE:LINE:COL: error: ...` and exits 1.

Each result prints as one line: its type, numpy shape and dtype, and min/max/mean/std
(NaN and inf counted apart); `--print` also prints every value; `--output out.npz`
saves the results as `result_0`, `result_1`, ... (bf16 results as float32). On the
simulator one more line gives the simulated time, the roofline and the bottleneck.

Inputs come from `--inputs`, one .npy file per argument in order, whose shape and dtype
must match the signature exactly (bf16 arguments take float32 arrays). Without
`--inputs`, random inputs are drawn from `--seed` (default 0): floats are standard
normal (rounded to the element type) except the right operand of an L1 `spyre.matmul`
(directly or through a transpose), a weight, which is normal with variance 1/K (K the
contracted size, a layer's LeCun-normal initialisation: a matmul keeps its input's
scale, and an attention block's softmax scores stay of order 1 instead of hundreds,
where DLFloat16 rounding alone would decide the argmax), i1 is a fair coin, and integer arguments are
uniform in [0, 16) -- they are usually indices -- narrowed to [0, rows) when the
argument indexes a gather table with fewer rows (at L2 and L3: the smallest table that
any gather reads).

Simulator options (an error at the interpreter levels):

* `--report text`: a readable summary of the simulator's report - simulated time,
  roofline time and fraction, flops, LPDDR5 bytes, ring bytes, LX peak, bottleneck,
  per-unit utilisation, and a table of the kernels (name, cores, time, roofline
  fraction, bottleneck).
* `--report json`: the report dict (`simulated_us`, `roofline_us`, `roofline_fraction`,
  `flops`, `lpddr_bytes`, `delivered_bytes`, `ring_bytes`, `lx_peak_bytes`, `bottleneck`, `utilization`,
  `busy_us`, `kernels`; see `spyre_ir.sim.engine`) as JSON on stdout, and nothing else
  there: the results and every other message go to stderr, so
  `spyre-run f.mlir --report json | python -m json.tool` works.
* `--trace OUT.json`: write the Chrome/Perfetto trace (one process per program, one
  thread per unit; open it in https://ui.perfetto.dev).

`--check` also runs a reference on the same inputs and compares every result with it:
f32 to rtol = atol = 1e-4, f16 to 2e-2 (the card's DLFloat16 against the interpreters'
IEEE fp16; atol at least two DLFloat16 places of the largest |reference|, as partial sums
are rounded), bf16 to 1e-2, integers and booleans exactly (NaN
matches NaN). It prints `check: ok (max abs error ...)`, or one `check: MISMATCH in
result K: ...` line per differing result (how many elements differ, the largest error,
the worst element) and exits 1. The reference is the interpreter of the input's own
level: the L1 interpreter for an L1 file, the L2 interpreter for an L2 file (so an
L2 check tests the L2 -> L3 lowering and the simulator, not the L2 program itself). An
L2 reference of a run on the card holds 16-bit floats as DLFloat16 at each tile op, as
the card does (`halves="dlfloat16"`, bit for bit with the simulator; KTIR's check
rounds its reference the same way), so its check is exact in practice; the L1
interpreter computes IEEE fp16, hence the f16 tolerance above. An
L3 file has no reference above it, and a run at the input's own level would compare
the reference with itself: both exit 2 with an explanation. `--reference REF.mlir`
(implies `--check`) names the reference instead: an L1 or L2 file whose `@ENTRY` has
the same signature, e.g. the L1 source of a lowered or hand-edited L2 or L3 file
(`SPYRE_IR_DUMP` writes such pairs); random inputs are then drawn from its signature.
Under `--check` the simulator (and the L2 interpreter) also run their race checks (two
cores storing different values to one element, outputs left unwritten).

Exit codes: 0 success; 1 a bad file, bad inputs or options, a failed lowering, an error
while running (e.g. a deadlocked L3 program: `FILE:LINE:COL: error: ...` naming the
waiting units) or a check mismatch; 2 a `--check` that cannot apply, or a command-line
syntax error (from argparse). Errors are messages on stderr, never a traceback: one
about a place in FILE starts with `FILE:LINE:COL: error:`, the others with
`spyre-run: error:`; an unexpected exception is caught at the boundary and printed as a
located `internal error` (exit 1). Option values are range-checked (`--cores` within
the card's cores, `--lx-bytes` within a core's LX, `--seed` in [0, 2**64)); `--inputs`
reads only regular .npy files whose header agrees with their size; `--output` and
`--trace` are written atomically, and only once the run has succeeded.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

# One BLAS thread, set before numpy loads OpenBLAS (a setting of the user's own wins):
# the simulator's tile matmuls are small, and OpenBLAS's workers spin while they wait -
# with other processes on the cores, a 32x128x512 batch took a second instead of 10 ms.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from xdsl.dialects import func  # noqa: E402
from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.ir import Operation  # noqa: E402
from xdsl.utils.exceptions import DiagnosticException  # noqa: E402

from spyre_ir.diagnostics import (  # noqa: E402
    Diagnostic,
    DiagnosticError,
    failure_diagnostics,
    internal_error,
    op_location,
    parse_file,
    verify_all,
)
from spyre_ir.registry import make_context  # noqa: E402
from spyre_ir.tools.output import GuardedStream, OutputError, discard, flush_stdout  # noqa: E402

# The pieces of spyre-run, by concern; their names stay importable from here.
from spyre_ir.tools.run_args import build_parser, check_values  # noqa: E402, F401
from spyre_ir.tools.run_check import check, compare, tolerance  # noqa: E402, F401
from spyre_ir.tools.run_common import (  # noqa: E402, F401
    DEFAULT_INDEX_BOUND,
    DEFAULT_LEVEL,
    LEVELS,
    REFERENCE,
    TOLERANCE,
    Outcome,
    RunError,
    RunOptions,
    _run_sim,
)
from spyre_ir.tools.run_inputs import (  # noqa: E402, F401
    _load_npy,
    find_entry,
    input_byte_limit,
    load_inputs,
    random_inputs,
)
from spyre_ir.tools.run_results import (  # noqa: E402, F401
    _json_default,
    describe,
    format_report,
    one_line_report,
    report,
    save,
    summary,
    write_trace,
)

# ---------------------------------------------------------------- levels


def detect_level(module: ModuleOp) -> tuple[int, Operation | None]:
    """The IR level of `module` (1, 2 or 3) and an op that shows it (None for L1)."""
    from spyre_ir.dialects import core
    from spyre_ir.dialects import dataflow as D

    l2: Operation | None = None
    for op in module.walk():
        if isinstance(op, core.ProgramOp):
            return 3, op
        if l2 is None and isinstance(op, (D.KernelOp, D.GroupOp)):
            l2 = op
    return (2, l2) if l2 is not None else (1, None)


def _describe_op(op: Operation | None, path: str) -> str:
    if op is None:
        return ""
    file, line, col = op_location(op, path)
    name = getattr(op, "sym_name", None)
    symbol = f" @{name.data}" if name is not None else ""
    return f" ({op.name}{symbol} at {file}:{line}:{col})"


def lower(module: ModuleOp, source: int, target: int, args: argparse.Namespace) -> None:
    """Lower `module` in place from level `source` to level `target` (the compile driver's
    stages); a failure raises a located DiagnosticError or a RunError (bad options)."""
    from dataclasses import replace

    from spyre_ir import driver
    from spyre_ir.hardware import card_of, read_card, set_card

    if getattr(args, "card", None):  # compiled for and simulated on this card
        try:
            set_card(module, read_card(args.card))
        except ValueError as error:
            raise RunError(str(error)) from None
    if target <= source:
        return
    options = {
        k: v for k, v in (("cores", args.cores), ("lx_bytes", args.lx_bytes)) if v is not None
    }
    levels = driver.LEVELS
    try:
        driver.lower(module, source=levels[source - 1], target=levels[target - 1],
                     config=replace(card_of(module), **options), hooks=())  # fmt: skip
        problems = verify_all(module, args.file)
    except (DiagnosticError, DiagnosticException) as error:
        problems = failure_diagnostics(error, module, args.file)
    except ValueError as error:  # bad pass options, e.g. an LX too small for a stick
        raise RunError(f"lowering failed: {error}") from None
    if problems:
        raise DiagnosticError(problems)


# ---------------------------------------------------------------- inputs


# ---------------------------------------------------------------- results


# ---------------------------------------------------------------- the simulator's report


# ---------------------------------------------------------------- --check


# ---------------------------------------------------------------- main


@dataclass
class Reference:
    """What --check compares with: a module, its level and where it came from."""

    module: ModuleOp
    level: int
    fn: func.FuncOp
    label: str


def _signature(fn: func.FuncOp) -> str:
    ins = ", ".join(describe(t) for t in fn.function_type.inputs.data)
    outs = ", ".join(describe(t) for t in fn.function_type.outputs.data)
    return f"({ins}) -> ({outs})"


def check_options(
    args: argparse.Namespace, source: int, target: int, witness: Operation | None
) -> None:
    """Reject option combinations that cannot apply, before any work."""
    if target < source:
        others = " or ".join(f"--level {n}" for n, (_, lv) in LEVELS.items() if lv >= source)
        raise RunError(
            f"--level {args.level} runs L{target} IR, but {args.file} is at L{source}"
            f"{_describe_op(witness, args.file)}; use {others}"
        )
    if LEVELS[args.level][0] is not _run_sim:
        for flag, value in (("--report", args.report), ("--trace", args.trace)):
            if value is not None:
                raise RunError(
                    f"{flag} needs the simulator (--level sim), not --level {args.level}"
                )
    if (args.cores is not None or args.lx_bytes is not None) and not source == 1 < target:
        what = "--cores" if args.cores is not None else "--lx-bytes"
        raise RunError(
            f"{what} is an option of the L1 -> L2 lowering, but nothing is lowered from L1 "
            f"here ({args.file} is at L{source}, --level {args.level} runs L{target})"
        )
    if args.check and args.reference is None:
        if source == 3:
            raise RunError(
                f"--check needs an L1 or L2 input, whose interpreter is the reference, but "
                f"{args.file} is at L3{_describe_op(witness, args.file)}; run --check on the "
                "L1 or L2 file it was lowered from, or name that file with --reference",
                code=2,
            )
        if target == source:
            raise RunError(
                f"--check compares a lower level with {REFERENCE[source]}, but --level "
                f"{args.level} runs {REFERENCE[source]} itself; use a lower --level",
                code=2,
            )


def load_reference(args: argparse.Namespace, module: ModuleOp, fn: func.FuncOp) -> Reference:
    """The reference of --check: the input itself (at its own level), or --reference."""
    if args.reference is None:
        source, _ = detect_level(module)
        return Reference(module.clone(), source, fn, REFERENCE[source])
    path = args.reference
    ref = parse_file(make_context(), path)
    level, witness = detect_level(ref)
    if level == 3:
        raise RunError(
            f"--reference {path} is at L3{_describe_op(witness, path)}; the reference runs "
            "on an interpreter: name an L1 or L2 file",
            code=2,
        )
    try:
        ref_fn = find_entry(ref, args.entry)
    except RunError as error:
        raise RunError(f"--reference {path}: {error}") from None
    if _signature(ref_fn) != _signature(fn):
        raise RunError(
            f"--reference {path}: @{args.entry} is {_signature(ref_fn)}, but in "
            f"{args.file} it is {_signature(fn)}"
        )
    return Reference(ref, level, ref_fn, f"{REFERENCE[level]} on {path}")


def run(args: argparse.Namespace) -> int:
    if args.reference is not None:
        args.check = True
    check_values(args)
    started = time.perf_counter()
    module = parse_file(make_context(), args.file)
    from spyre_ir.tools import ktir_inputs

    if ktir_inputs.is_ktir(module):  # a KTIR (ktdp) kernel: its own inputs and reference
        return ktir_inputs.run(args, module, time.perf_counter() - started)
    if args.scalars is not None:
        raise RunError("--scalars applies to KTIR kernels only")
    if args.grid is not None:
        raise RunError("--grid applies to KTIR kernels only")
    if args.address_unit is not None:
        raise RunError("--address-unit applies to KTIR kernels only")
    runner, target = LEVELS[args.level]
    source, witness = detect_level(module)
    check_options(args, source, target, witness)
    fn = find_entry(module, args.entry)
    reference = load_reference(args, module, fn) if args.check else None
    if args.inputs is not None:
        inputs = load_inputs(args.inputs, fn)
    else:
        # The reference's signature is the same, and its index bounds are known better.
        inputs = random_inputs(reference.fn if reference else fn, args.seed)
    lower(module, source, target, args)
    options = RunOptions(trace=args.trace is not None, check_races=args.check)
    outcome = runner(module, inputs, args.entry, options)

    # With --report json, stdout holds the JSON alone; everything else goes to stderr.
    out = sys.stderr if args.report == "json" else sys.stdout
    report(fn, outcome.outputs, args.print, out)
    if args.output:
        save(args.output, outcome.outputs)
        n = len(outcome.outputs)
        print(f"wrote {n} result{'s' * (n != 1)} to {args.output}", file=out)
    if outcome.report is not None:
        if args.report == "text":
            print(format_report(outcome.report), file=out)
        elif args.report is None:
            print(one_line_report(outcome.report), file=out)
    if args.trace and outcome.trace is not None:
        write_trace(args.trace, outcome.trace)
        events = sum(1 for e in outcome.trace["traceEvents"] if e.get("ph") == "X")
        print(f"wrote trace ({events} events) to {args.trace}", file=out)
    status = 0
    if reference is not None:
        ref_runner = LEVELS["tensor" if reference.level == 1 else "dataflow"][0]
        # An L2 reference of a run on the card rounds 16-bit floats as the card does.
        card = reference.level == 2 and runner is _run_sim
        ref_options = RunOptions(halves="dlfloat16" if card else "ieee")
        want = ref_runner(reference.module, inputs, args.entry, ref_options).outputs
        label = reference.label + (" in DLFloat16" if card else "")
        lines = check(fn, outcome.outputs, want, label)
        for line in lines:
            print(line, file=out)
        status = 1 if "MISMATCH" in lines[0] else 0
    if args.report == "json" and outcome.report is not None:
        sys.stdout.write(json.dumps(outcome.report, indent=2, default=_json_default) + "\n")
    return status


# The cyclic collector's young-generation threshold during a run: a run builds its IR
# once and lets it go at exit, so the default (700) collected some 150 times during a
# KTIR kernel's run, 0.1 s of it, freeing nothing of note (the peak memory is the same).
RUN_GC_THRESHOLD = (5000, 20, 100)


@contextmanager
def _rare_collections() -> Iterator[None]:
    """RUN_GC_THRESHOLD inside the block; the caller's thresholds again after it (main
    also runs inside other processes: the tests)."""
    previous = gc.get_threshold()
    gc.set_threshold(*RUN_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stdout = sys.stdout
    sys.stdout = GuardedStream(stdout)  # type: ignore[assignment]
    try:
        with _rare_collections():
            status = run(args)
        flush_stdout()
        return status
    except BrokenPipeError:
        discard(sys.stdout)  # the reader went away: nothing left to report
        return 0
    except DiagnosticError as error:
        for d in error.diagnostics:
            print(d, file=sys.stderr)
        return 1
    except (RunError, OutputError) as error:
        print(_run_error_line(str(error)), file=sys.stderr)
        return error.code if isinstance(error, RunError) else 1
    except Exception as error:  # the catch-all: located, never a traceback
        print(internal_error(error, args.file), file=sys.stderr)
        return 1
    finally:
        sys.stdout = stdout


def _run_error_line(message: str) -> str:
    """`spyre-run: error: MESSAGE`, or `FILE:LINE:COL: error: ...` when the message
    starts with a location (errors raised while running an op keep it first)."""
    located = _LOCATED_MESSAGE.match(message)
    if located:
        file, line, col, text = located.groups()
        return str(Diagnostic(file, int(line), int(col), text))
    return f"spyre-run: error: {message}"


_LOCATED_MESSAGE = re.compile(r"^(\S+?):(\d+):(\d+): (?:error: )?(.*)$", re.DOTALL)


if __name__ == "__main__":
    sys.exit(main())
