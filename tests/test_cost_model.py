"""The instruction timings of spyre_ir/cost_model.py (what the simulator charges), each
checked against cycles computed by hand from the default card's numbers."""

from __future__ import annotations

import inspect
import re

import pytest

from spyre_ir import cost_model as cm
from spyre_ir import matmul_plan
from spyre_ir.hardware import DEFAULT_CONFIG, UNCALIBRATED_CONFIG, SpyreConfig

C = DEFAULT_CONFIG
SIMPLE = UNCALIBRATED_CONFIG
"""The card before calibration (1.5 GHz, 204.8 GB/s, peaks sustained): the planner's
structural tests keep their short hand sums on it."""

NEW_FIELDS = (
    "sfp_lanes", "sfp_cost_simple", "sfp_cost_softmax", "sfp_cost_norm", "lpddr_latency_s",
    "ring_hop_latency_cycles", "ls_issue_cycles",
)  # fmt: skip
CALIBRATED_FIELDS = (
    "clock_hz", "lpddr_bandwidth", "sfp_cost_special", "sfp_cost_reduction",
    "pe_sustained_fraction", "lpddr_read_efficiency", "lpddr_write_efficiency",
    "lpddr_core_bytes_in_flight", "allreduce_round_cycles_per_byte",
)  # fmt: skip


def test_timing_fields_are_marked_as_model_assumptions() -> None:
    source = inspect.getsource(SpyreConfig)
    for name in NEW_FIELDS:
        assert re.search(rf"\n    {name}: .*\n    \"\"\"MODEL ASSUMPTION", source), name


def test_calibrated_fields_name_the_rows_they_were_fitted_to() -> None:
    source = inspect.getsource(SpyreConfig)
    for name in CALIBRATED_FIELDS:
        doc = re.search(rf"\n    {name}: .*\n    \"\"\"(.*?)\"\"\"", source, re.S)
        assert doc and "CALIBRATED" in doc.group(1), name
        assert ".csv" in doc.group(1), name  # the measured rows it was fitted to


def test_derived_lpddr_numbers() -> None:
    # 166.4e9 B/s at 1.1e9 cycles/s; 500 ns at 1.1 GHz.
    assert C.lpddr_bytes_per_cycle == pytest.approx(151.272727)
    assert C.lpddr_latency_cycles == pytest.approx(550)
    # One core: 22,400 bytes in flight per 550 cycles = 40.73 B per cycle, 44.8 GB/s.
    assert C.lpddr_core_bytes_per_cycle == pytest.approx(40.7273, rel=1e-5)
    assert C.sustained_read_bandwidth == pytest.approx(160.2432e9)
    assert C.sustained_write_bandwidth == pytest.approx(74.048e9)


def test_pe_matmul_cycles() -> None:
    # 512 rows / 8 = 64 row steps, 64 cols / (8 x 8 lanes) = 1, k = 64: 4096 steps at
    # 92 % of the array's rate = 4452.2 -> 4453 cycles; + 8 + 8 fill.
    assert cm.pe_matmul_cycles(512, 64, 64, C) == 4453 + 16 == 4469
    assert cm.pe_matmul_cycles(512, 64, 64, SIMPLE) == 4096 + 16  # at the peak
    # Uneven: ceil(67 / 8) = 9, ceil(100 / 64) = 2, k = 30 -> 540 / 0.92 -> 587, + 16.
    assert cm.pe_matmul_cycles(67, 100, 30, C) == 603
    # A batch of 3 tiles repeats the steps, the fill is paid once per instruction.
    assert cm.pe_matmul_cycles(67, 100, 30, C, batch=3) == 1761 + 16  # 1620 / 0.92
    # A 1 x 1 x 1 tile still takes one step (1 / 0.92 -> 2) plus the fill.
    assert cm.pe_matmul_cycles(1, 1, 1, C) == 18
    # A smaller array: 4 x 4 with 8 lanes -> ceil(8/4) * ceil(64/32) * 10 = 40 -> 44, + 8.
    small = C.with_options(pe_rows=4, pe_cols=4)
    assert cm.pe_matmul_cycles(8, 64, 10, small) == 44 + 8


def test_pe_elementwise_cycles() -> None:
    # 8 x 8 PEs x 8 lanes = 512 elements per cycle, + 16 fill.
    assert cm.pe_elementwise_cycles(512, C) == 1 + 16
    assert cm.pe_elementwise_cycles(3 * 256, C) == 2 + 16
    assert cm.pe_elementwise_cycles(128 * 1024, C) == 256 + 16


@pytest.mark.parametrize(
    ("kind", "factor"),
    [
        ("spyre.add", 1), ("spyre.cast", 1), ("spyre.select", 1), ("spyre.gt", 1),
        ("spyre.exp", 5), ("spyre.tanh", 5), ("spyre.erf", 5), ("spyre.log1p", 5),
        ("spyre.rsqrt", 5),
        ("spyre.reciprocal", 5), ("spyre.div", 5), ("spyre.gelu", 6), ("spyre.silu", 6),
        ("spyre.sum", 8), ("spyre.reduce_max", 8), ("spyre.cumsum", 8), ("spyre.var", 16),
        ("spyre.softmax", 5), ("spyre.layer_norm", 4), ("spyre.rms_norm", 4),
        ("exp", 5), ("spyre.something_new", 1), ("spyre.round", 1), ("spyre.bitwise_and", 1),
        ("spyre.shift_right", 1), ("spyre.bitwise_not", 1),
    ],
)  # fmt: skip
def test_sfp_cost_factor(kind: str, factor: int) -> None:
    assert cm.sfp_cost_factor(kind, C) == factor


def test_sfp_cycles() -> None:
    # 64 lanes: 128 x 1024 elements = 2048 passes-worth of cycles, times the factor.
    assert cm.sfp_cycles("spyre.exp", 128 * 1024, C) == 2048 * 5 == 10240
    assert cm.sfp_cycles("spyre.softmax", 128 * 1024, C) == 2048 * 5
    assert cm.sfp_cycles("spyre.add", 100, C) == 2  # ceil(100 / 64)
    assert cm.sfp_cycles("spyre.cast", 512 * 64, C) == 512
    assert cm.sfp_cycles("spyre.layer_norm", 64, C.with_options(sfp_lanes=32)) == 2 * 4


def test_box_sticks() -> None:
    # f16: 64 per stick. A 3 x 256 box: 4 sticks per row, 3 rows.
    assert cm.box_sticks((3, 256), (67, 256), 1, 64) == 12
    # An overhanging edge tile counts only the rows inside the tensor.
    assert cm.box_sticks((128, 64), (67, 320), 1, 64) == 67
    # A partial stick at the tensor's end is a whole stick: 100 -> 2.
    assert cm.box_sticks((5, 100), (5, 100), 1, 64) == 10
    # Sticked on dim 0: 8 of dim 0 share one stick, 100 columns -> 100 sticks.
    assert cm.box_sticks((8, 100), (10, 100), 0, 64) == 100
    assert cm.box_sticks((), (), -1, 64) == 1
    # f32: 32 per stick; 2 x 3 x 64 box -> 2 sticks per row, 6 rows.
    assert cm.box_sticks((2, 3, 64), (4, 3, 64), 2, 32) == 12


def test_lpddr_transfer_and_latency() -> None:
    # The plain shared bandwidth (the simple card; spyre_ir/sim/lpddr.py costs a move
    # on the calibrated one). 32 cores share 204.8 GB/s: 6.4 GB/s each; 8192 B take
    # 1.28 us = 1920 cycles.
    assert cm.lpddr_transfer_cycles(8192, 32, SIMPLE) == pytest.approx(1920)
    # One core alone: 8192 / 136.53 = 60 cycles.
    assert cm.lpddr_transfer_cycles(8192, 1, SIMPLE) == pytest.approx(60)
    # + 500 ns = 750 cycles of access latency.
    assert cm.lpddr_cycles(8192, 32, SIMPLE) == pytest.approx(2670)


def test_ring_allreduce_cycles() -> None:
    # 64 KiB over 4 cores on the plain ring: 2 * 3/4 * 65536 / 128 = 768 cycles,
    # + 2 * 3 steps * 10.
    assert cm.ring_allreduce_cycles(65536, 4, SIMPLE) == pytest.approx(828)
    # Group members 2 apart: every step crosses 2 hops.
    assert cm.ring_allreduce_cycles(65536, 4, SIMPLE, stride=2) == pytest.approx(888)
    # On the calibrated card the 2 interleaved groups share every link: 768 * 2, + 120
    # of hops, + the reduction (2 rounds of 16384 bytes at 0.8 cycles per byte).
    assert cm.ring_allreduce_cycles(65536, 4, C, stride=2) == pytest.approx(1536 + 120 + 26214.4)
    assert cm.ring_link_sharers(2, C) == 2 and cm.ring_link_sharers(2, SIMPLE) == 1
    assert cm.ring_link_sharers(1, C) == 1
    assert cm.ring_allreduce_cycles(65536, 1, C) == 0.0


def test_allreduce_reduction_is_calibrated_on_split_k() -> None:
    # The calibrated card adds the reduction: log2(4) = 2 rounds, each 0.8 cycles per
    # byte of the core's quarter of the buffer: 2 * 16384 * 0.8 = 26214.4 cycles.
    assert cm.allreduce_reduction_cycles(65536, 4, C) == pytest.approx(26214.4)
    assert cm.ring_allreduce_cycles(65536, 4, C) == pytest.approx(828 + 26214.4)
    # Two cores: one round over half the buffer; 3 cores round up to 2 rounds of a third.
    assert cm.allreduce_reduction_cycles(65536, 2, C) == pytest.approx(26214.4)
    assert cm.allreduce_reduction_cycles(65536, 3, C) == pytest.approx(2 * 65536 / 3 * 0.8)
    # A wider group reduces a smaller share per core: 8 cores, 3 rounds of an eighth.
    assert cm.allreduce_reduction_cycles(65536, 8, C) == pytest.approx(19660.8)
    assert cm.allreduce_reduction_cycles(65536, 1, C) == 0.0
    # The plain ring has none: the reduction is bandwidth only.
    assert cm.allreduce_reduction_cycles(65536, 4, SIMPLE) == 0.0


def test_ring_allgather_cycles() -> None:
    # A 64 KiB tile gathered over 32 cores: 31/32 * 65536 / 128 = 496, + 31 * 10.
    assert cm.ring_allgather_cycles(65536, 32, C) == pytest.approx(806)
    # Members 3 apart: 3 hops per step, and each link carries the chunks of the 3
    # interleaved groups at once: 1/2 * 4096 / 128 * 3 = 48 cycles, + 1 step * 3 * 10.
    assert cm.ring_allgather_cycles(4096, 2, C, stride=3) == pytest.approx(48 + 30)
    # The uncalibrated card gives every group the links to itself: 16 + 30.
    assert cm.ring_allgather_cycles(4096, 2, SIMPLE, stride=3) == pytest.approx(16 + 30)
    assert cm.ring_allgather_cycles(4096, 1, C) == 0.0


def test_ring_bytes_sent() -> None:
    assert cm.ring_bytes_sent(65536, 4, allreduce=True) == 98304  # 2 * 3/4
    assert cm.ring_bytes_sent(65536, 32, allreduce=False) == 63488  # 31/32
    assert cm.ring_bytes_sent(65536, 1, allreduce=True) == 0


def test_ls_rearrange_cycles() -> None:
    # One 128-byte stick per cycle: a 3 x 256 f16 tile is 1536 bytes = 12 sticks.
    assert cm.ls_rearrange_cycles(1536, C) == 12
    assert cm.ls_rearrange_cycles(100, C) == 1


def test_ls_issue_cycles() -> None:
    # A fixed cost per LS instruction, a model assumption: 4 cycles on the default card.
    assert cm.ls_issue_cycles(C) == 4
    assert cm.ls_issue_cycles(C.with_options(ls_issue_cycles=1)) == 1
    with pytest.raises(ValueError, match="ls_issue_cycles"):
        C.with_options(ls_issue_cycles=0)


def test_cycles_to_us() -> None:
    assert cm.cycles_to_us(1100, C) == pytest.approx(1.0)  # 1.1 GHz


# ---------------------------------------------------------------- matmul planning


def test_pe_seconds_of_a_tile_one_corelet_holds() -> None:
    # 64 x 128 x 64: the two corelets take 64 columns each, 2.2528e12 FLOP/s per core
    # at 1.1 GHz, sustained at 92 %: 2 * 64 * 128 * 64 / 2.072576e12 = 0.50593 us. A
    # 64-column tile cannot be shared, so one corelet does half the work, 64 x 64 x 64,
    # in as long.
    assert cm.pe_seconds(2 * 64 * 128 * 64, 64, 128, C) == pytest.approx(0.505929e-6, rel=1e-5)
    assert cm.pe_seconds(2 * 64 * 64 * 64, 64, 64, C) == pytest.approx(0.505929e-6, rel=1e-5)


def test_wide_matmul_splits_k_and_moves_each_tensor_once() -> None:
    # 512 x 4096 @ 4096 x 12800 on 32 cores: N = 200 sticks does not divide over 32
    # cores, so K is split 16 ways (one 256-row K tile per core, A loaded once) and N 2
    # ways (50 tiles of 128 columns). LPDDR5 bytes by hand: A 512 * 4096 * 2 = 4194304,
    # B 4096 * 12800 * 2 = 104857600, C 512 * 12800 * 2 = 13107200 (each core of a K
    # group stores 32 of the 512 rows): 122159104 B / 204.8e9 B/s = 596.48 us.
    plan = matmul_plan.plan_matmul(1, 512, 12800, 4096, 2, SIMPLE, 32)
    assert (plan.split_m, plan.split_n, plan.split_k) == (1, 2, 16)
    assert (plan.tm, plan.tn, plan.tk) == (512, 128, 256)
    assert plan.ddr_s == pytest.approx(596.48e-6)
    # The tail nothing hides: the last tile's matmul (2 * 512 * 128 * 256 flops with
    # 32-row stacked blocks, full PE rows: 10.923 us) and its all-reduce of 512 * 128
    # f32 over 16 cores (2 * 15 / 16 * 262144 B / 192e9 B/s = 2.560 us).
    assert plan.reduce_s == pytest.approx(10.9227e-6 + 2.560e-6, rel=1e-4)


def test_square_prefill_matmul_keeps_splitting_n() -> None:
    # 512 x 4096 @ 4096 x 4096: N divides into 128 columns per core, so split-N with
    # the shared A tile (all-gathered) streams exactly the tensors, 40 MiB in 204.8 us.
    plan = matmul_plan.plan_matmul(1, 512, 4096, 4096, 2, SIMPLE, 32)
    assert (plan.split_m, plan.split_n, plan.split_k) == (1, 32, 1)
    assert plan.ddr_s == pytest.approx(40 * 2**20 / 204.8e9)
    # Each core walks K for one 512 x 128 tile, kept in four row blocks of 128: what
    # nothing overlaps is the last step's first block, 2 * 128 * 128 * 64 flops on
    # the core's 3.072e12 FLOP/s (0.683 us), not the whole step's 2.731 us.
    assert (plan.tm, plan.tn, plan.tk, plan.row_blocks) == (512, 128, 64, 4)
    assert plan.reduce_s == pytest.approx(2 * 128 * 128 * 64 / 3.072e12)


@pytest.mark.parametrize(
    "rows, tm, share, k_tiles, tiles, split_k, blocks",
    [
        (512, 512, 32, 64, 1, 1, 4),  # 128-row blocks, 4 rows of each per core
        (64, 64, 32, 32, 1, 1, 2),  # 4 blocks of 16 rows would not split over 32 cores
        (64, 64, 1, 32, 1, 1, 4),  # unshared: 4 blocks of 16 rows
        (16, 16, 1, 32, 1, 1, 2),  # blocks of whole PE rows (8)
        (8, 8, 1, 32, 1, 1, 1),
        (512, 512, 32, 1, 1, 1, 1),  # one K step: nothing to peel
        (512, 512, 32, 64, 2, 1, 1),  # two tiles per core
        (512, 512, 1, 64, 1, 2, 1),  # split-K
        (130, 256, 32, 64, 1, 1, 1),  # the tile overhangs the rows
    ],
)
def test_tail_row_blocks(rows: int, tm: int, share: int, k_tiles: int, tiles: int,
                         split_k: int, blocks: int) -> None:  # fmt: skip
    assert matmul_plan.tail_row_blocks(rows, tm, share, k_tiles, tiles, split_k, C) == blocks


def test_short_streams_of_small_tiles_are_latency_bound() -> None:
    # 8 x 16384 @ 16384 x 64 on one core with 30000 B of LX: only 8 x 64 and 64 x 64
    # tiles fit, so K takes 256 steps of (8 * 64 + 64 * 64) * 2 = 9216 B (0.045 us at
    # the full bandwidth). Two slots: a step's load starts once the matmul two steps
    # back has freed its slot, so two steps take a matmul (2 * 8 * 64 * 64 flops on one
    # corelet, 1.536e12 FLOP/s: 0.0427 us), the 0.5 us latency and a transfer:
    # 256 * (0.5 + 0.045 + 0.0427) / 2 = 75.22 us, though the bytes alone take 11.5 us
    # (the simulator: 77 us).
    plan = matmul_plan.plan_matmul(1, 8, 64, 16384, 2, SIMPLE, 1, lx_bytes=30000)
    assert plan.tk == 64
    step = 0.5e-6 + 9216 / 204.8e9 + 2 * 8 * 64 * 64 / 1.536e12
    assert plan.ddr_s == pytest.approx(256 * step / 2)
    # With the whole LX the K tiles grow to 2048: 8 steps of (8 + 64) * 2048 * 2 B
    # (1.44 us) and a 2 * 8 * 64 * 2048-flop matmul (1.365 us), the chain still bounds
    # it, at a sixth of the small tiles' time.
    roomy = matmul_plan.plan_matmul(1, 8, 64, 16384, 2, SIMPLE, 1)
    assert roomy.tk == 2048
    chain = 0.5e-6 + 72 * 2048 * 2 / 204.8e9 + 2 * 8 * 64 * 2048 / 1.536e12
    assert roomy.ddr_s == pytest.approx(8 * chain / 2)
    assert roomy.ddr_s < plan.ddr_s / 5


def test_column_tiles_add_a_core_share_no_power_of_two_divides() -> None:
    # 12800 / 8 = 1600 columns = 25 sticks: no tile of TILE_COLS divides it, so the
    # whole share is tried too; shares of powers of two, of part sticks or wider than
    # the widest tile are not.
    assert matmul_plan.column_tiles(1600) == (*matmul_plan.TILE_COLS, 1600)
    assert matmul_plan.column_tiles(512) == matmul_plan.TILE_COLS
    assert matmul_plan.column_tiles(1601) == matmul_plan.TILE_COLS
    assert matmul_plan.column_tiles(3200) == matmul_plan.TILE_COLS


def test_prefill_up_projection_takes_tiles_that_divide_a_cores_columns() -> None:
    # 512 x 4096 @ 4096 x 12800 under 4 x 8 x 1 (the card's best split, 1016.9 us in
    # matmul_splits.csv): each core has 128 rows and 1600 columns. One 128 x 1600 tile
    # per core walks K in 64 steps, finished in four row blocks that take turns on the
    # two corelets (1600 columns are not whole sticks per corelet). By hand on the
    # calibrated card: the PE time 2 * 128 * 1600 * 4096 flops at one corelet's
    # 2.2528e12 / 2 * 0.92 = 1.036288e12 FLOP/s, halved: 809.49 us; the last step's
    # 2 * 128 * 1600 * 64 flops take 25.296 us of which three blocks' worth follow the
    # others; the stores of 32 x 128 x 1600 x 2 B at 166.4e9 x 0.445 B/s take 177.01 us
    # after the PE arrays: 809.49 - 0.75 x 25.296 + 177.01 = 967.53 us. With 256-column
    # tiles (7 per core, overhanging by 192 columns) the estimate was 1114 us.
    plan = matmul_plan.plan_matmul(1, 512, 12800, 4096, 2, C, 32, split=(4, 8, 1))
    assert (plan.tm, plan.tn, plan.tk, plan.row_blocks) == (128, 1600, 64, 4)
    assert plan.pe_s == pytest.approx(809.49e-6, rel=1e-4)
    assert plan.ddr_s == pytest.approx(967.53e-6, rel=1e-4)


def test_prefill_up_projection_on_the_card_computes_no_padding_columns() -> None:
    # The same kernel compiled and timed: with 1600-column tiles the PE arrays compute
    # exactly 2 * 512 * 12800 * 4096 flops (with 256-column tiles, 7 per core, they
    # computed 1792 of every 1600 columns: 12 % more), and the kernel is bound by the
    # planner's estimate above, 967.5 us, plus the pipeline's start and end (the
    # simulator: 994.4 us; the card 1016.9 us under this split).
    import numpy as np

    from spyre_ir import registry
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.pipelines import lower_to_units
    from spyre_ir.sim.engine import simulate

    text = """
func.func @main(%a: tensor<512x4096xf16>, %b: tensor<4096x12800xf16>) -> tensor<512x12800xf16> {
  %c = spyre.matmul %a, %b {spyre.split = array<i64: 1, 4, 8, 1>} : tensor<512x4096xf16>, tensor<4096x12800xf16> -> tensor<512x12800xf16>
  func.return %c : tensor<512x12800xf16>
}"""
    module = parse_and_verify(registry.make_context(), text, "up")
    lower_to_units(module, 32, C.lx_bytes, config=C)
    args = [np.zeros((512, 4096), np.float16), np.zeros((4096, 12800), np.float16)]
    report = simulate(module, args, config=C, numerics=False).report
    # (and one per output element: the SFP's cast of the f32 accumulator to f16)
    assert report["flops"] == 2 * 512 * 12800 * 4096 + 512 * 12800
    assert 967.5 < report["simulated_us"] < 967.5 * 1.05


def test_forced_split_k_plan_counts_each_reduction_once() -> None:
    # 512 x 4096 @ 4096 x 12800 forced to 4 x 1 x 8 (matmul_splits.csv): a core has 128
    # rows, all 12800 columns and 512 of K. One K step per tile loads the core's A
    # slice once; a K loop would load it again for each of its N tiles. The step chain
    # of one-K-step tiles (B load, matmul, all-reduce) counted every reduction on top
    # of reduce_s, which adds them all, so the planner took the K loop (the simulator:
    # 3446.6 us against 2701.0 for the one-step plan; the card 1958.4).
    plan = matmul_plan.plan_matmul(1, 512, 12800, 4096, 2, C, 32, split=(4, 1, 8))
    assert (plan.tm, plan.tn, plan.tk) == (128, 128, 512)
    # LPDDR5 by hand: reads A 4194304 + B 104857600 B at 166.4e9 x 0.963 B/s, writes
    # C 13107200 B at 166.4e9 x 0.445 B/s: 680.53 + 177.01 us = 857.55 us.
    assert plan.ddr_s == pytest.approx(857.55e-6, rel=1e-4)
    # 100 tiles of 128 x 128 f32 partial sums (65536 B), each reduced over 8 cores in
    # 3 rounds of 65536 / 8 B at 0.8 cycles per byte: 19660.8 cycles = 17.873 us,
    # 1787.3 us in all, once; the rest of reduce_s is the last tile's matmul and ring.
    assert 1787.3e-6 < plan.reduce_s < 1787.3e-6 + 10e-6
    assert plan.estimate_s == pytest.approx(plan.ddr_s + plan.reduce_s)
