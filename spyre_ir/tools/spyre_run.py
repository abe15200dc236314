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
import io
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

# One BLAS thread, set before numpy loads OpenBLAS (a setting of the user's own wins):
# the simulator's tile matmuls are small, and OpenBLAS's workers spin while they wait -
# with other processes on the cores, a 32x128x512 batch took a second instead of 10 ms.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from xdsl.dialects import func  # noqa: E402
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import DiagnosticException

from spyre_ir.diagnostics import (
    Diagnostic,
    DiagnosticError,
    NotRegularFile,
    failure_diagnostics,
    internal_error,
    op_location,
    open_regular,
    parse_file,
    verify_all,
)
from spyre_ir.registry import make_context, option_problem
from spyre_ir.tools.output import (
    GuardedStream,
    OutputError,
    check_writable,
    discard,
    flush_stdout,
    write_atomically,
)


class RunError(Exception):
    """A user-facing failure: printed as `spyre-run: error: MESSAGE`, exit `code`."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


@dataclass
class Outcome:
    """What a level's run gives: the results, and the simulator's report and trace."""

    outputs: list[np.ndarray]
    report: dict | None = None
    trace: dict | None = None


@dataclass(frozen=True)
class RunOptions:
    trace: bool = False
    check_races: bool = False
    # Kernel (program) name -> the contents its outputs start with (untouched memory).
    output_contents: dict[str, list[np.ndarray]] | None = None
    # How the L2 interpreter holds f16: "ieee" (as L1) or "dlfloat16" (as the card).
    halves: str = "ieee"


Runner = Callable[[ModuleOp, list[np.ndarray], str, RunOptions], Outcome]


def _run_tensor(module: ModuleOp, args: list[np.ndarray], entry: str, opts: RunOptions) -> Outcome:
    from spyre_ir.interp.tensor import InterpreterError, run_module

    try:
        return Outcome(run_module(module, args, entry))
    except InterpreterError as error:
        raise RunError(str(error)) from None


def _run_dataflow(
    module: ModuleOp, args: list[np.ndarray], entry: str, opts: RunOptions
) -> Outcome:
    from spyre_ir.interp.dataflow import InterpreterError, run_module

    try:
        return Outcome(
            run_module(
                module,
                args,
                entry,
                check_races=opts.check_races,
                halves=opts.halves,
                output_contents=opts.output_contents,
            )
        )
    except InterpreterError as error:
        raise RunError(str(error)) from None


def _run_sim(module: ModuleOp, args: list[np.ndarray], entry: str, opts: RunOptions) -> Outcome:
    from spyre_ir.interp.tensor import InterpreterError
    from spyre_ir.sim.engine import simulate

    try:
        result = simulate(
            module,
            args,
            entry,
            trace=opts.trace,
            check_races=opts.check_races,
            output_contents=opts.output_contents,
        )
    except InterpreterError as error:  # SimulationError (a deadlock ...) is one
        raise RunError(str(error)) from None
    return Outcome(result.outputs, result.report, result.trace)


# Execution levels by name: the runner and the IR level (1 = L1 ...) it runs.
LEVELS: dict[str, tuple[Runner, int]] = {
    "tensor": (_run_tensor, 1),
    "dataflow": (_run_dataflow, 2),
    "units": (_run_sim, 3),
    "sim": (_run_sim, 3),
}
DEFAULT_LEVEL = "sim"
DEFAULT_INDEX_BOUND = 16
REFERENCE = {1: "the L1 interpreter", 2: "the L2 interpreter"}
# Tolerance (rtol = atol) of --check by element type; integers and i1 compare exactly.
# f16: twice the 1e-2 of bf16, since the simulated card holds 16-bit floats as DLFloat16
# (9 fraction bits to fp16's 10; docs/dlfloat16.md) and the references compute IEEE fp16.
TOLERANCE = {"f32": 1e-4, "f16": 2e-2, "bf16": 1e-2}


def _positive(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"expected a seed in [0, 2**64), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spyre-run",
        description="Run a spyre-ir program (L1, L2 or L3 IR) on the simulated Spyre card "
        "or an interpreter, and show its results.",
    )
    parser.add_argument("file", metavar="FILE", help="the .mlir file to run (L1, L2 or L3)")
    parser.add_argument("--entry", default="main", help="function to run (default: main)")
    parser.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help="seed of the random inputs (default: 0), drawn when --inputs is not given: "
        "floats standard normal, but N(0, 1/K) for the right operand of an L1 matmul (a "
        "weight, K the contracted size); i1 a fair coin; integers uniform in [0, 16), "
        "or [0, rows) for the indices of a smaller gather table",
    )
    parser.add_argument(
        "--inputs", metavar="A.npy,B.npy", help="comma-separated .npy files, one per argument"
    )
    parser.add_argument(
        "--level",
        choices=list(LEVELS),
        default=DEFAULT_LEVEL,
        help="where to run: the L1 interpreter (tensor), the L2 interpreter (dataflow) or "
        "the simulator (units, sim; the default)",
    )
    parser.add_argument(
        "--cores", type=_positive, metavar="N", help="cores for the L1 -> L2 lowering"
    )
    parser.add_argument(
        "--lx-bytes",
        type=_positive,
        metavar="N",
        help="LX scratchpad bytes per core for the L1 -> L2 lowering",
    )
    parser.add_argument(
        "--card",
        metavar="FILE.json",
        help="compile for and simulate on this card: a JSON object of SpyreConfig fields "
        "that differ from the default card",
    )
    parser.add_argument(
        "--report",
        choices=("text", "json"),
        help="print the simulator's report: readable text, or JSON alone on stdout",
    )
    parser.add_argument(
        "--trace", metavar="OUT.json", help="write the simulator's Perfetto/Chrome trace"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare the results with the interpreter of the input's level; exit 1 on a mismatch",
    )
    parser.add_argument(
        "--reference",
        metavar="REF.mlir",
        help="with --check (implied): compare with this L1 or L2 file's results instead",
    )
    parser.add_argument(
        "--scalars",
        metavar="NAME=VALUE,...",
        help="a KTIR kernel's scalar arguments by name (see spyre_ir/tools/ktir_inputs.py)",
    )
    parser.add_argument(
        "--address-unit",
        choices=["element", "byte", "stick"],
        help="what a KTIR kernel's absolute addresses count (default element; docs/ktir.md)",
    )
    parser.add_argument(
        "--grid",
        metavar="N[,M...]",
        help="the launch grid of a KTIR kernel written without a grid attribute",
    )
    parser.add_argument("--print", action="store_true", help="print the result values")
    parser.add_argument("--output", metavar="OUT.npz", help="save the results to an .npz file")
    return parser


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


def find_entry(module: ModuleOp, entry: str) -> func.FuncOp:
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    for f in funcs:
        if f.sym_name.data == entry and f.body.blocks:
            return f
    known = ", ".join(f"@{f.sym_name.data}" for f in funcs) or "none"
    raise RunError(f"no function @{entry} with a body (functions: {known})")


def _tensor_types(fn: func.FuncOp) -> list[TensorType]:
    types = list(fn.function_type.inputs.data)
    for index, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise RunError(f"argument {index} of @{fn.sym_name.data} is {t}, not a tensor")
    return types  # type: ignore[return-value]


def _index_bounds(fn: func.FuncOp) -> dict[int, int]:
    """Per integer argument, the upper bound of its random values: the rows of the
    tables it indexes (L1), or of the smallest table any gather of the module reads
    (L2, L3, where indices reach gathers through kernel buffers)."""
    from spyre_ir.dialects import dataflow as D
    from spyre_ir.dialects.spyre import GatherOp, shape_of

    module = fn.parent_op()
    lowered = DEFAULT_INDEX_BOUND
    if module is not None:
        for op in module.walk():
            if isinstance(op, D.GatherBase):
                table = op.table.type
                if isinstance(table, D.DdrType) and table.get_shape():
                    lowered = min(lowered, max(table.get_shape()[0], 1))
    bounds: dict[int, int] = {}
    for index, arg in enumerate(fn.body.block.args):
        bound = lowered
        for use in arg.uses:
            if isinstance(use.operation, GatherOp) and use.index == 1:
                bound = min(bound, max(shape_of(use.operation.table)[0], 1))
        bounds[index] = bound
    return bounds


def random_inputs(fn: func.FuncOp, seed: int) -> list[np.ndarray]:
    from spyre_ir.dialects.spyre import element_type_name
    from spyre_ir.interp.numerics import to_storage

    check_input_bytes(fn)
    rng = np.random.default_rng(seed)
    bounds, scales = _index_bounds(fn), _weight_scales(fn)
    inputs = []
    for index, t in enumerate(_tensor_types(fn)):
        shape, name = tuple(t.get_shape()), element_type_name(t.element_type)
        if name == "i1":
            value = rng.random(shape) < 0.5
        elif name in ("i32", "i64"):
            value = rng.integers(0, bounds[index], size=shape)
        else:
            value = rng.standard_normal(shape, dtype=np.float32)
            if index in scales:
                value *= np.float32(scales[index])
        inputs.append(to_storage(value, name))
    return inputs


def _weight_scales(fn: func.FuncOp) -> dict[int, float]:
    """Per float argument that is the right operand of an L1 `spyre.matmul` (directly or
    through `spyre.transpose`): 1/sqrt(K), K the contracted size (the smallest over its
    uses), so that its random values are a weight initialised as a layer's (LeCun normal)
    and the matmul's outputs keep the variance of its inputs. Standard normal weights
    grow each product by sqrt(K): the two matmuls before a softmax then give scores of
    hundreds, where the softmax is an argmax and a rounding of a score (a DLFloat16
    place is 2 at 1024) changes the result wholesale - a check of rounding noise, not of
    the program."""
    from spyre_ir.dialects.spyre import MatmulOp, TransposeOp, shape_of

    scales: dict[int, float] = {}
    for index, arg in enumerate(fn.body.block.args):
        values, contracted = [arg], []
        while values:
            value = values.pop()
            for use in value.uses:
                op = use.operation
                if isinstance(op, TransposeOp):
                    values.append(op.result)
                elif isinstance(op, MatmulOp) and use.index == 1:
                    rhs = shape_of(op.rhs)
                    contracted.append(rhs[-2] if len(rhs) > 1 else rhs[0])
        if contracted and min(contracted) > 0:
            scales[index] = 1 / math.sqrt(min(contracted))
    return scales


def input_byte_limit() -> int:
    """The most bytes of arguments a run draws: what the card's LPDDR5 holds, and no
    more than half of this machine's memory (the interpreters copy them)."""
    from spyre_ir.hardware import DEFAULT_CONFIG

    limit = DEFAULT_CONFIG.lpddr_usable_bytes
    try:
        limit = min(limit, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2)
    except (ValueError, OSError, AttributeError):
        pass  # no figure for the host: the card's is the bound
    return limit


def check_input_bytes(fn: func.FuncOp) -> None:
    """A RunError, before anything is allocated, when @fn's arguments are too large."""
    from spyre_ir.dialects.spyre import element_type_name
    from spyre_ir.hardware import ELEMENT_BYTES

    total = 0
    for t in _tensor_types(fn):
        name = element_type_name(t.element_type)
        total += math.prod(t.get_shape()) * ELEMENT_BYTES.get(name, 8)
    limit = input_byte_limit()
    if total > limit:
        raise RunError(
            f"the arguments of @{fn.sym_name.data} take {total} bytes; a run draws at "
            f"most {limit} (the card's LPDDR5, half of this machine's memory)"
        )


def _load_npy(path: str) -> np.ndarray:
    """One array from a regular .npy file whose header agrees with its size, so that
    neither a FIFO nor a header declaring a huge shape can hang or exhaust memory."""
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if f.read(6) != b"\x93NUMPY":
                raise RunError(f"input '{path}' is not a .npy file (one array per argument)")
            f.seek(0)
            version = np.lib.format.read_magic(f)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(f)  # refuses headers over 10000 bytes
            if dtype.hasobject:
                raise RunError(f"input '{path}' holds Python objects, not numbers")
            need = math.prod(shape) * dtype.itemsize
            if need > size - f.tell():
                raise RunError(
                    f"input '{path}': its header declares shape {shape} of {dtype} "
                    f"({need} bytes), but the file holds {size - f.tell()} bytes of data"
                )
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except NotRegularFile as error:
        raise RunError(f"cannot read input '{path}': {error}") from None
    except OSError as error:
        raise RunError(f"cannot read input '{path}': {error.strerror or error}") from None
    except (ValueError, EOFError, SyntaxError, TypeError) as error:
        raise RunError(f"cannot load input '{path}': {' '.join(str(error).split())}") from None


def load_inputs(spec: str, fn: func.FuncOp) -> list[np.ndarray]:
    from spyre_ir.interp.tensor import InterpreterError, check_value

    paths = [p.strip() for p in spec.split(",") if p.strip()]
    types = _tensor_types(fn)
    entry = fn.sym_name.data
    if len(paths) != len(types):
        raise RunError(
            f"@{entry} takes {len(types)} argument{'s' * (len(types) != 1)}, "
            f"but --inputs names {len(paths)} file{'s' * (len(paths) != 1)}"
        )
    inputs = []
    for index, (path, t) in enumerate(zip(paths, types)):
        value = _load_npy(path)
        hint = fn.body.block.args[index].name_hint
        label = f"input '{path}' for argument {index}" + (f" (%{hint})" if hint else "")
        try:
            inputs.append(check_value(value, t, label))
        except InterpreterError as error:
            raise RunError(str(error)) from None
    return inputs


# ---------------------------------------------------------------- results


def describe(t: Attribute) -> str:
    from spyre_ir.interp.numerics import describe_type

    return describe_type(t)


def _moments(x: np.ndarray, chunk: int = 1 << 16) -> tuple[float, float]:
    """Mean and standard deviation of a 1-D array, in float64, a chunk at a time (the
    float64 temporaries of a whole large result cost more than the statistics)."""
    mean = float(np.add.reduce(x, dtype=np.float64)) / x.size
    squares = 0.0
    for start in range(0, x.size, chunk):
        d = x[start : start + chunk].astype(np.float64)
        d -= mean
        squares += float(np.dot(d, d))
    return mean, math.sqrt(squares / x.size)


def summary(value: np.ndarray, t: Attribute) -> str:
    from spyre_ir.dialects.spyre import element_type_name

    assert isinstance(t, TensorType)
    name = element_type_name(t.element_type)
    dtype = "bf16 (float32 storage)" if name == "bf16" else str(value.dtype)
    head = f"{describe(t)}  shape {value.shape}  dtype {dtype}"
    if value.size == 0:
        return f"{head}  (empty)"
    if value.dtype == np.bool_:
        return f"{head}  true {int(value.sum())} of {value.size}"
    # float32 holds every value of the card's types exactly (float64 only for f64 and
    # 64-bit integers); the mean and std accumulate in float64 all the same.
    wide = value.dtype.itemsize > 4 or value.dtype.kind in "iu" and value.dtype.itemsize > 2
    if value.dtype == np.float16:  # exact as it is: no float32 copy of a large result
        x = value.reshape(-1)
    else:
        x = value.astype(np.float64 if wide else np.float32).reshape(-1)
    lo, hi = x.min(), x.max()
    # Finite ends (min and max propagate NaN): every value finite, no pass counts them.
    clean = bool(np.isfinite(lo) and np.isfinite(hi))
    finite = x if clean else x[np.isfinite(x)]
    if not clean and finite.size:
        lo, hi = finite.min(), finite.max()
    parts = []
    if finite.size:
        g = lambda v: f"{v:.6g}"  # noqa: E731
        mean, std = _moments(finite)
        parts.append(f"min {g(lo)}  max {g(hi)}  mean {g(mean)}  std {g(std)}")
    nans, infs = (0, 0) if clean else (int(np.isnan(x).sum()), int(np.isinf(x).sum()))
    if nans:
        parts.append(f"nan {nans}")
    if infs:
        parts.append(f"inf {infs}")
    return "  ".join([head, *parts])


def report(
    fn: func.FuncOp, results: Sequence[np.ndarray], show_values: bool, out: IO[str] | None = None
) -> None:
    out = out or sys.stdout
    types = fn.function_type.outputs.data
    print(f"@{fn.sym_name.data}: {len(results)} result{'s' * (len(results) != 1)}", file=out)
    for index, (value, t) in enumerate(zip(results, types)):
        print(f"result {index}: {summary(value, t)}", file=out)
        if show_values:
            with np.printoptions(threshold=sys.maxsize, linewidth=100):
                print(np.array2string(value, separator=", "), file=out)


def save(path: str, results: Sequence[np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **{f"result_{i}": r for i, r in enumerate(results)})
    write_atomically(path, buffer.getvalue())


# ---------------------------------------------------------------- the simulator's report


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n:,} B ({n / size:.2f} {unit})"
    return f"{n:,} B"


def _flops(n: int) -> str:
    for unit, size in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= size:
            return f"{n:,} ({n / size:.3g} {unit})"
    return f"{n:,}"


def one_line_report(rep: dict) -> str:
    """The simulator's verdict in one line, printed after the results."""
    kernels = rep.get("kernels", [])
    return (
        f"simulated {rep['simulated_us']:.3f} us on the card, {len(kernels)} "
        f"kernel{'s' * (len(kernels) != 1)} (roofline {rep['roofline_us']:.3f} us, "
        f"{_percent(rep['roofline_fraction'])}); bottleneck {rep['bottleneck'] or '-'}"
    )


def format_report(rep: dict) -> str:
    """The simulator's report as readable text (`--report text`)."""
    from spyre_ir.hardware import DEFAULT_CONFIG

    util = rep.get("utilization", {})
    units = "  ".join(f"{k} {_percent(util[k])}" for k in ("ls", "pe0", "pe1", "sfp0", "sfp1")
                      if k in util)  # fmt: skip
    kinds = "  ".join(f"{k} {_percent(util[k])}" for k in ("pe", "sfp", "lpddr", "ring")
                      if k in util)  # fmt: skip
    lines = [
        "simulator report (default card)",
        f"  simulated time     {rep['simulated_us']:.3f} us",
        f"  roofline time      {rep['roofline_us']:.3f} us",
        f"  roofline fraction  {_percent(rep['roofline_fraction'])}",
        f"  flops              {_flops(rep['flops'])}",
        f"  LPDDR5 bytes       {_bytes(rep['lpddr_bytes'])} served"
        f" ({_bytes(rep['delivered_bytes'])} delivered to the cores)",
        f"  ring bytes         {_bytes(rep.get('ring_bytes', 0))}",
        f"  LX peak            {_bytes(rep['lx_peak_bytes'])} per core"
        f" (of {_bytes(DEFAULT_CONFIG.lx_bytes)})",
        f"  bottleneck         {rep['bottleneck'] or '-'}",
        f"  utilization        {units or '-'}",
        f"                     {kinds}" if kinds else "",
    ]
    lines = [line for line in lines if line]
    kernels = rep.get("kernels", [])
    lines.append(f"kernels ({len(kernels)}, run one after another)")
    if kernels:
        width = max(len("name"), *(len(k["name"]) for k in kernels))
        lines.append(f"  {'name':<{width}}  {'cores':>5}  {'us':>10}  {'roofline':>8}  bottleneck")
        for k in kernels:
            lines.append(
                f"  {k['name']:<{width}}  {k['cores']:>5}  {k['simulated_us']:>10.3f}  "
                f"{_percent(k['roofline_fraction']):>8}  {k['bottleneck'] or '-'}"
            )
    return "\n".join(lines)


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def write_trace(path: str, trace: dict) -> None:
    write_atomically(path, json.dumps(trace, default=_json_default))


# ---------------------------------------------------------------- --check


def tolerance(t: Attribute) -> float | None:
    """rtol = atol of --check for results of type `t`; None: exact."""
    from spyre_ir.dialects.spyre import element_type_name

    assert isinstance(t, TensorType)
    return TOLERANCE.get(element_type_name(t.element_type))


def _value(x: np.generic) -> str:
    v = x.item()
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _at(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, index)) + "]"


_COMPARE_CHUNK = 1 << 22
"""Elements compared per pass: the float64 temporaries of a chunk, not of a whole
result (a 1.31 GB paged KV cache would take 20 GB of them)."""


def compare(got: np.ndarray, want: np.ndarray, t: Attribute) -> tuple[float, str | None]:
    """(max abs error over elements finite in both, a mismatch description or None)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return float("inf"), (
            f"got shape {got.shape}, dtype {got.dtype}; want shape {want.shape}, dtype {want.dtype}"
        )
    if got.size == 0:
        return 0.0, None
    tol = tolerance(t)
    flat_got, flat_want = got.reshape(-1), want.reshape(-1)
    atol = tol
    if tol is not None and want.dtype == np.float16:
        # the card rounds partial sums to DLFloat16: errors follow the largest
        # magnitudes, two DLFloat16 places (2**-9) of the largest |want|
        largest = _largest_finite(flat_want)
        if largest is not None:
            atol = max(tol, 2 * 2.0**-9 * largest)
    max_err, count, worst, at = 0.0, 0, -1.0, 0
    for start in range(0, got.size, _COMPARE_CHUNK):
        stop = start + _COMPARE_CHUNK
        part_got, part_want = flat_got[start:stop], flat_want[start:stop]
        if np.array_equal(part_got, part_want):  # equal, NaN-free: no error, no mismatch
            continue
        with np.errstate(all="ignore"):
            g, w = part_got.astype(np.float64), part_want.astype(np.float64)
            if tol is None:
                bad = part_got != part_want
            else:
                bad = ~np.isclose(g, w, rtol=tol, atol=atol, equal_nan=True)
            finite = np.isfinite(g) & np.isfinite(w)
            err = np.where(finite, np.abs(g - w), 0.0)
        max_err = max(max_err, float(err.max()))
        n_bad = int(bad.sum())
        if n_bad:
            count += n_bad
            scores = np.where(bad, np.where(finite, err, np.inf), -1.0)
            k = int(np.argmax(scores))
            if scores[k] > worst:
                worst, at = float(scores[k]), start + k
    if not count:
        return max_err, None
    index = tuple(int(i) for i in np.unravel_index(at, got.shape))
    rule = "exactly" if tol is None else f"within rtol = atol = {tol:g}"
    return max_err, (
        f"{count} of {got.size} elements differ (expected {rule}); max abs error "
        f"{max_err:.6g}; at {_at(index)}: got {_value(got[index])}, want {_value(want[index])}"
    )


def _largest_finite(values: np.ndarray) -> float | None:
    """The largest finite |value| of a 1-D float array (None when none is finite)."""
    largest = None
    for start in range(0, values.size, _COMPARE_CHUNK):
        part = np.abs(values[start : start + _COMPARE_CHUNK])
        part = part[np.isfinite(part)]
        if part.size:
            largest = max(largest or 0.0, float(part.max()))
    return largest


def check(
    fn: func.FuncOp, got: Sequence[np.ndarray], want: Sequence[np.ndarray], reference: str
) -> list[str]:
    """The check's lines; the first says `ok` or the rest say `MISMATCH`."""
    types = fn.function_type.outputs.data
    if len(got) != len(want):
        return [f"check: MISMATCH: {len(got)} results, {reference} gives {len(want)}"]
    errors, problems = [], []
    for index, (g, w, t) in enumerate(zip(got, want, types)):
        err, problem = compare(g, w, t)
        errors.append(err)
        if problem:
            problems.append(f"check: MISMATCH in result {index}: {problem} ({reference})")
    if problems:
        return problems
    worst = max(errors, default=0.0)
    return [
        f"check: ok (max abs error {worst:.3g} against {reference}, {len(got)} "
        f"result{'s' * (len(got) != 1)})"
    ]


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


def check_values(args: argparse.Namespace) -> None:
    """Option values in range and outputs writable, before any work."""
    for option in ("cores", "lx_bytes"):
        value = getattr(args, option)
        problem = option_problem(option, value)
        if problem:
            raise RunError(f"--{option.replace('_', '-')} {value} {problem}")
    for path in (args.output, args.trace):
        if path is not None:
            check_writable(path)
    check_distinct_outputs(args)


def check_distinct_outputs(args: argparse.Namespace) -> None:
    """A RunError when --output or --trace names a file the run reads (FILE,
    --reference, an --inputs file) or both name one file: either would be overwritten,
    the input lost or one output silently replaced by the other."""
    reads = [("FILE", args.file), ("--reference", args.reference)]
    reads += [("--inputs", p) for p in (args.inputs or "").split(",") if p.strip()]
    seen: list[tuple[str, str]] = []
    for flag, path in (("--output", args.output), ("--trace", args.trace)):
        if path is None:
            continue
        for other_flag, other in [*reads, *seen]:
            if other is not None and _same_file(path, other):
                raise RunError(f"{flag} {path} is the file {other_flag} names: it would be "
                               "overwritten")  # fmt: skip
        seen.append((flag, path))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): the same path is the same file
        return os.path.realpath(a) == os.path.realpath(b)


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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stdout = sys.stdout
    sys.stdout = GuardedStream(stdout)  # type: ignore[assignment]
    try:
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
