"""spyre-run's shared pieces: its error, a level's outcome and options, and the
runners of the three execution levels (the L1 and L2 interpreters, the simulator),
each imported only when it runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp


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
