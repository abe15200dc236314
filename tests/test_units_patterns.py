"""Hand-written L2 patterns that the compiler does not emit but convert-dataflow-to-units
must not get silently wrong: each runs through the L2 interpreter and, lowered, through
L3 (the simulator's numerics); the results agree, or the lowering stops with a located
error naming the pattern. The inputs live in tests/units_patterns/."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func

from spyre_ir import registry
from spyre_ir.diagnostics import DiagnosticError, parse_and_verify
from spyre_ir.dialects import core
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import units as l3
from spyre_ir.lowering.dataflow_to_units import ConvertDataflowToUnits

HERE = Path(__file__).parent / "units_patterns"

# input -> (line of the refused op, words of its error) or None: must lower and agree.
PATTERNS = {
    "sibling_loads.mlir": None,
    "sibling_same_reader.mlir": None,
    "in_place.mlir": None,
    "reused_bytes.mlir": None,
    "ring.mlir": (17, "a loop-carried value used as a ring buffer"),
}


def l2_and_l3(path: Path, check_races: bool = False) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Results of the L2 module at `path` on random inputs, by L2 (with the card's
    DLFloat16 halves) and by L3 after convert-dataflow-to-units (with `check_races`, the
    simulator's race checks on: an unordered LX access is a located error)."""
    ctx = registry.make_context()
    module = parse_and_verify(ctx, path.read_text(), str(path))
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    rng = np.random.default_rng(0)
    args = [
        rng.uniform(-1, 1, t.get_shape()).astype(np.float16) for t in main.function_type.inputs.data
    ]
    expected = l2.run_module(module, args, halves="dlfloat16")
    ConvertDataflowToUnits().apply(ctx, module)
    module.verify()  # queue balance and no wait cycle
    return expected, l3.run_module(module, args, check_races=check_races)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_agrees_or_is_refused_with_a_located_error(name: str) -> None:
    path = HERE / name
    try:
        expected, got = l2_and_l3(path)
    except DiagnosticError as error:
        line, words = PATTERNS[name]
        message = str(error)
        assert f"{path}:{line}:" in message, message
        assert "convert-dataflow-to-units" in message and words in message, message
        return
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)


def test_separate_buffers_agree(tmp_path: Path) -> None:
    """The sibling-loop kernel with a buffer per loop is ordered by its queues: L3
    agrees with L2 bit for bit (so the comparison above can see a difference)."""
    text = (HERE / "sibling_loads.mlir").read_text()
    text = text.replace(
        "    %c0 = arith.constant 0 : index",
        "    %a2 = dataflow.alloc_lx {offset = 6144 : i64} : !dataflow.lx<16x64xf16>\n"
        "    %c0 = arith.constant 0 : index",
        1,
    )
    head, loop2 = text.split("dataflow.load %ym", 1)
    loop2 = loop2.replace("into %a ", "into %a2 ", 1).replace("(%a, %c)", "(%a2, %c)", 1)
    path = tmp_path / "separate.mlir"
    path.write_text(head + "dataflow.load %ym" + loop2)
    expected, got = l2_and_l3(path)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)


def test_reused_bytes_are_ordered_after_their_previous_occupant() -> None:
    """A buffer on the bytes of a dead one, first written by an op with no operands (a
    PE fill while the SFP reads the old occupant): a queue orders the fill after that
    read, so the race check finds nothing and L3 agrees with L2."""
    path = HERE / "reused_bytes.mlir"
    expected, got = l2_and_l3(path, check_races=True)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g, e)
    ctx = registry.make_context()
    module = parse_and_verify(ctx, path.read_text(), str(path))
    ConvertDataflowToUnits().apply(ctx, module)
    queues = [op for op in module.walk() if isinstance(op, core.QueueOp)]
    assert any(q.source.data == "sfp0" and q.dest.data.startswith("pe") for q in queues)
