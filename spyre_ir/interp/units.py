"""The functional interpreter of L3: run per-unit programs in an order their queues
allow, every core vectorised.

It is the simulated card's engine with the timing ignored (spyre_ir/sim/engine.py):
numerics and synchronisation are one mechanism, so the interpreter and the simulator
cannot disagree on what a program computes. A program whose queues do not order its
data computes wrong numbers or stops with a `SimulationError` naming the waiting units.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import ModuleOp


def run_module(
    module: ModuleOp, args: Sequence[np.ndarray], entry: str = "main", check_races: bool = False
) -> list[np.ndarray]:
    from spyre_ir.sim.engine import simulate

    return list(simulate(module, args, entry=entry, check_races=check_races).outputs)
