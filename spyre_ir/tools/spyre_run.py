"""spyre-run: run a spyre-ir program on inputs and show its results.

    spyre-run FILE.mlir [--entry main] [--seed N] [--inputs a.npy,b.npy]
                        [--level tensor] [--print] [--output out.npz]

The file is parsed and verified (errors: `FILE:LINE:COL: error: ...`, exit 1), then
`func.func @ENTRY` runs at the chosen level; today only `tensor`, the numpy
interpreter of the `spyre` dialect (spyre_ir.interp.tensor). Each result prints as one
line: its type, numpy shape and dtype, and min/max/mean/std (NaN and inf counted apart).

Inputs come from `--inputs`, one .npy file per argument in order, whose shape and dtype
must match the signature exactly (bf16 arguments take float32 arrays). Without
`--inputs`, random inputs are drawn from `--seed` (default 0): floats are standard
normal (rounded to the element type), i1 is a fair coin, and integer arguments are
uniform in [0, 16) -- they are usually indices -- narrowed to [0, rows) when the
argument indexes a `spyre.gather` table with fewer rows.

`--print` also prints every value; `--output out.npz` saves the results as
`result_0`, `result_1`, ... (bf16 results as float32). Bad files, inputs or options end
with `spyre-run: error: ...` and exit code 1, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute

from spyre_ir.diagnostics import DiagnosticError, parse_file
from spyre_ir.registry import make_context

Runner = Callable[[ModuleOp, list[np.ndarray], str], list[np.ndarray]]


class RunError(Exception):
    """A user-facing failure: printed as `spyre-run: error: MESSAGE`, exit 1."""


def _run_tensor(module: ModuleOp, args: list[np.ndarray], entry: str) -> list[np.ndarray]:
    from spyre_ir.interp.tensor import InterpreterError, run_module

    try:
        return run_module(module, args, entry)
    except InterpreterError as error:
        raise RunError(str(error)) from None


# Execution levels by name; lower levels (dataflow, units, simulator) register here.
LEVELS: dict[str, Runner] = {"tensor": _run_tensor}
DEFAULT_INDEX_BOUND = 16


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spyre-run",
        description="Run a spyre-ir program and show its results.",
    )
    parser.add_argument("file", metavar="FILE", help="the .mlir file to run")
    parser.add_argument("--entry", default="main", help="function to run (default: main)")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the random inputs (default: 0)"
    )
    parser.add_argument(
        "--inputs", metavar="A.npy,B.npy", help="comma-separated .npy files, one per argument"
    )
    parser.add_argument(
        "--level", choices=list(LEVELS), default="tensor", help="where to run (default: tensor)"
    )
    parser.add_argument("--print", action="store_true", help="print the result values")
    parser.add_argument("--output", metavar="OUT.npz", help="save the results to an .npz file")
    return parser


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
    """Per integer argument, the upper bound of its random values."""
    from spyre_ir.dialects.spyre import GatherOp, shape_of

    bounds: dict[int, int] = {}
    for index, arg in enumerate(fn.body.block.args):
        bound = DEFAULT_INDEX_BOUND
        for use in arg.uses:
            if isinstance(use.operation, GatherOp) and use.index == 1:
                bound = min(bound, max(shape_of(use.operation.table)[0], 1))
        bounds[index] = bound
    return bounds


def random_inputs(fn: func.FuncOp, seed: int) -> list[np.ndarray]:
    from spyre_ir.dialects.spyre import element_type_name
    from spyre_ir.interp.numerics import to_storage

    rng = np.random.default_rng(seed)
    bounds = _index_bounds(fn)
    inputs = []
    for index, t in enumerate(_tensor_types(fn)):
        shape, name = tuple(t.get_shape()), element_type_name(t.element_type)
        if name == "i1":
            value = rng.random(shape) < 0.5
        elif name in ("i32", "i64"):
            value = rng.integers(0, bounds[index], size=shape)
        else:
            value = rng.standard_normal(shape, dtype=np.float32)
        inputs.append(to_storage(value, name))
    return inputs


def _load_npy(path: str) -> np.ndarray:
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
            f.seek(0)
            if magic != b"\x93NUMPY":
                raise RunError(f"input '{path}' is not a .npy file (one array per argument)")
            return np.load(f, allow_pickle=False)
    except OSError as error:
        raise RunError(f"cannot read input '{path}': {error.strerror or error}") from None
    except (ValueError, EOFError) as error:
        raise RunError(f"cannot load input '{path}': {error}") from None


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
    x = value.astype(np.float64)
    finite = x[np.isfinite(x)]
    parts = []
    if finite.size:
        g = lambda v: f"{v:.6g}"  # noqa: E731
        parts.append(
            f"min {g(finite.min())}  max {g(finite.max())}  mean {g(finite.mean())}"
            f"  std {g(finite.std())}"
        )
    nans, infs = int(np.isnan(x).sum()), int(np.isinf(x).sum())
    if nans:
        parts.append(f"nan {nans}")
    if infs:
        parts.append(f"inf {infs}")
    return "  ".join([head, *parts])


def report(fn: func.FuncOp, results: Sequence[np.ndarray], show_values: bool) -> None:
    types = fn.function_type.outputs.data
    print(f"@{fn.sym_name.data}: {len(results)} result{'s' * (len(results) != 1)}")
    for index, (value, t) in enumerate(zip(results, types)):
        print(f"result {index}: {summary(value, t)}")
        if show_values:
            with np.printoptions(threshold=sys.maxsize, linewidth=100):
                print(np.array2string(value, separator=", "))


def save(path: str, results: Sequence[np.ndarray]) -> None:
    try:
        with open(path, "wb") as f:
            np.savez(f, **{f"result_{i}": r for i, r in enumerate(results)})
    except OSError as error:
        raise RunError(f"cannot write '{path}': {error.strerror or error}") from None


# ---------------------------------------------------------------- main


def run(args: argparse.Namespace) -> None:
    try:
        module = parse_file(make_context(), args.file)
    except DiagnosticError as error:
        for d in error.diagnostics:
            print(d, file=sys.stderr)
        raise SystemExit(1) from None
    fn = find_entry(module, args.entry)
    if args.inputs is not None:
        inputs = load_inputs(args.inputs, fn)
    else:
        inputs = random_inputs(fn, args.seed)
    results = LEVELS[args.level](module, inputs, args.entry)
    report(fn, results, args.print)
    if args.output:
        save(args.output, results)
        print(f"wrote {len(results)} result{'s' * (len(results) != 1)} to {args.output}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        run(args)
    except RunError as error:
        print(f"spyre-run: error: {error}", file=sys.stderr)
        return 1
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
