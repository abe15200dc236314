"""spyre-run's command line: the argument parser and the checks of option values made
before any work (ranges, writable outputs that are not inputs)."""

from __future__ import annotations

import argparse
import os

from spyre_ir.registry import option_problem
from spyre_ir.tools.output import check_writable
from spyre_ir.tools.run_common import DEFAULT_LEVEL, LEVELS, RunError


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
