"""The simulator's `check_races` sees races inside LX between the units of a core: a
program whose data queue from the LS unit to the SFP is taken out reads a tile before
the load that writes it is ordered before the read, a located error naming both."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from spyre_ir import registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects import core
from spyre_ir.interp import units as l3
from spyre_ir.interp.dataflow import InterpreterError
from spyre_ir.lowering.dataflow_to_units import ConvertDataflowToUnits

SOURCE = Path(__file__).parent / "units_patterns" / "sibling_same_reader.mlir"


def lowered():
    ctx = registry.make_context()
    module = parse_and_verify(ctx, SOURCE.read_text(), str(SOURCE))
    ConvertDataflowToUnits().apply(ctx, module)
    return module


def args() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, (64, 64)).astype(np.float16) for _ in range(2)]


def test_ordered_program_has_no_lx_race() -> None:
    l3.run_module(lowered(), args(), check_races=True)


def test_missing_data_queue_is_an_lx_race() -> None:
    module = lowered()
    data = [
        q
        for q in module.walk()
        if isinstance(q, core.QueueOp)
        and (q.source.data, q.dest.data) == ("ls", "sfp0")
        and q.credits.value.data == 0
    ][0]  # fmt: skip  (the first loop's; each version of the tile has its own)
    for op in [o for o in module.walk() if isinstance(o, (core.PushOp, core.PopOp))]:
        if op.queue is data.queue:
            op.detach()
            op.erase()
    with pytest.raises(InterpreterError, match=r"LX race: on sfp0, sfp\.compute reads LX bytes "
                                               r"that .*sibling_same_reader\.mlir:16:7: 'ls\.load' on ls writes"):  # fmt: skip
        l3.run_module(module, args(), check_races=True)
