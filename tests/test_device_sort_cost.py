"""Issue 19, Deliver 2: the cost model's entry for the sorting ops (spyre.sort /
spyre.argsort, which topk, sort and argsort lower to), checked by hand from its
definition on the default config (64 SFP lanes, a simple pass 1 cycle, a reduction 8)."""

from __future__ import annotations

from spyre_ir import cost_model as cm
from spyre_ir.hardware import DEFAULT_CONFIG as C


def test_a_full_sort_of_a_row_costs_a_bitonic_network() -> None:
    # 64 elements: depth 6, 6 * 7 / 2 = 21 stages of 2 simple passes = 42 passes; sorting
    # all 64 by extraction would be 64 * (8 + 1) = 576 passes, so the network is taken.
    assert cm.sort_passes(64, 64, C) == 42
    # 4 rows of 64 in one tile: 256 / 64 lanes = 4 lane groups, 42 passes each.
    assert cm.sort_cycles(64, 64, 4 * 64, C) == 4 * 42


def test_a_small_k_over_a_long_row_extracts_its_winners() -> None:
    # top-2 of 4096 (routing, sampling): 2 * (8 + 1) = 18 passes, cheaper than the
    # network's 12 * 13 / 2 * 2 = 156.
    assert cm.sort_passes(4096, 2, C) == 18
    assert cm.sort_passes(4096, 64, C) == 156
    assert cm.sort_cycles(4096, 2, 4096, C) == 64 * 18


def test_a_row_of_one_element_still_takes_a_pass() -> None:
    assert cm.sort_passes(1, 1, C) == C.sfp_cost_simple
