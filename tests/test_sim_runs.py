"""A core's requests in flight (spyre_ir/sim/lpddr.py: `box_runs`, `channel_cycles`):
a request never spans two contiguous runs of device memory, so a box of many short runs
is bound by runs x latency / requests in flight, whatever its bytes. The default card
leaves the limit off (`lpddr_core_requests_in_flight = 0`: docs/simulator.md, "The
batched matmuls", says why); these tests set it.

Hand-computed from the default card: latency 550 cycles, 22,400 B in flight per core
(40.73 B per cycle); f16 sticks of 64 elements (128 B).
"""

from __future__ import annotations

import pytest
from test_sim_engine import lower, random_args
from xdsl.dialects.builtin import Float16Type

from spyre_ir import lpddr_runs
from spyre_ir.dialects import dataflow as D
from spyre_ir.hardware import DEFAULT_CONFIG, UNCALIBRATED_CONFIG
from spyre_ir.layout import StickLayout, default_layout, validate
from spyre_ir.sim import lpddr
from spyre_ir.sim.engine import simulate

CORE = 22_400 / 550  # B per cycle, one core's channel


def test_runs_of_a_batched_operand_in_the_default_layout() -> None:
    # [32, 512, 512] f16 lives as device [512, 8, 32, 64] (rows, k-sticks, batch, stick):
    # the batch sits just outside the stick, so a box of one batch is a run per stick.
    a = default_layout((32, 512, 512), "f16")
    assert a.device_sizes == (512, 8, 32, 64)
    assert lpddr_runs.box_runs((1, 64, 64), a) == 64  # 64 rows x 1 k-stick x 1 batch
    assert lpddr_runs.box_runs((4, 64, 512), a) == 64 * 8  # runs of 4 sticks (the batches)
    # Every batch and every k-stick of 16 rows: one run of 16 x 8 x 32 sticks.
    assert lpddr_runs.box_runs((32, 16, 512), a) == 1
    # A matrix [512, 4096] is [64, 512, 64]: 128 of its rows in 8 k-sticks are 8 runs
    # of 128 sticks; all 512 rows of two sticks (100 columns, padded) are one run.
    b = default_layout((512, 4096), "f16")
    assert lpddr_runs.box_runs((128, 512), b) == 8
    assert lpddr_runs.box_runs((512, 100), b) == 1
    # A box overhanging the tensor is clipped first: 64 rows of a 48-row tensor = all.
    assert lpddr_runs.box_runs((64, 64), default_layout((48, 64), "f16")) == 1


def test_runs_of_a_tiled_layout() -> None:
    # [128, 64] f16 with its rows in two tiles of 64: device [2, 1, 64, 64] (row tile,
    # stick, row in tile, element). A box of one tile's rows, or part of them, is one
    # run; both tiles are one run too (the whole tensor).
    tiled = StickLayout((128, 64), 2, 1, (2, 1, 64, 64), (0, 1, 0, 1), (4096, 64, 64, 1))
    assert not validate(tiled, (128, 64), 2)
    assert [lpddr_runs.box_runs(box, tiled) for box in ((64, 64), (32, 64), (128, 64))] == [1, 1, 1]
    # [64, 128] f16 with two k-sticks and rows in tiles of 16: device [4, 2, 16, 64].
    # 16 rows x both sticks is one run; 32 rows x one stick is 2 runs of 16 sticks.
    rows = StickLayout((64, 128), 2, 1, (4, 2, 16, 64), (0, 1, 0, 1), (2048, 64, 128, 1))
    assert not validate(rows, (64, 128), 2)
    assert lpddr_runs.box_runs((16, 128), rows) == 1
    assert lpddr_runs.box_runs((32, 64), rows) == 2


def test_a_scalar_in_lpddr5_is_one_run() -> None:
    # A rank-0 tensor is one stick (cost_model.box_sticks): one run, no layout needed.
    scalar = D.DdrType([], Float16Type())
    assert lpddr.move_runs(scalar, ()) == 1
    assert lpddr.move_runs(D.DdrType([32, 512, 512], Float16Type()), (1, 64, 64)) == 64


def test_short_runs_bind_the_channel_by_requests() -> None:
    two = DEFAULT_CONFIG.with_options(lpddr_core_requests_in_flight=2)
    # 64 runs of one stick (8,192 B): the bytes take 8192 / 40.73 = 201.1 cycles, the
    # requests 64 x 550 / 2 = 17,600.
    assert lpddr.channel_cycles(8192, 64, two) == pytest.approx(17_600)
    assert lpddr.channel_cycles(8192, 64, DEFAULT_CONFIG) == pytest.approx(8192 / CORE)
    # One run of 1 MiB: 550 / 2 = 275 cycles of requests, 25,746 of bytes.
    assert lpddr.channel_cycles(2**20, 1, two) == pytest.approx(2**20 / CORE)
    # move_cycles carries it: one core, one box of 64 sticks in 64 runs.
    box = lpddr.BoxMoves(64, 64, 64)
    bus, channel, which = lpddr.move_cycles(box, 64, True, 1, two, runs=64)
    assert channel == pytest.approx(17_600) and which == lpddr.READ
    assert bus == pytest.approx(8192 / (166.4e9 / 1.1e9 * 0.963))


def test_the_default_and_uncalibrated_cards_have_no_request_limit() -> None:
    assert DEFAULT_CONFIG.lpddr_core_requests_in_flight == 0
    assert UNCALIBRATED_CONFIG.lpddr_core_requests_in_flight == 0


BMM = """
func.func @main(%a: tensor<8x64x128xf16>, %b: tensor<8x128x64xf16>) -> tensor<8x64x64xf16> {
  %c = spyre.matmul %a, %b : tensor<8x64x128xf16>, tensor<8x128x64xf16> -> tensor<8x64x64xf16>
  func.return %c : tensor<8x64x64xf16>
}
"""


def test_a_batched_matmul_of_one_stick_runs_waits_on_its_requests() -> None:
    # On one core with one request in flight, every run costs the whole 550-cycle
    # latency on its channel: the loads alone take (runs loaded) x 550 cycles at least.
    one = DEFAULT_CONFIG.with_options(lpddr_core_requests_in_flight=1)
    module = lower(BMM, "spyre-to-units{cores=1}")
    slow = simulate(module, random_args(BMM), config=one, trace=True)
    loads = [e for e in slow.trace["traceEvents"] if e.get("name") == "ls.load"]
    runs = sum(e["args"]["runs"] for e in loads)
    assert runs >= 8 * 64  # at least a run per batch and row of A: one stick each
    assert slow.report["simulated_us"] >= runs * 550 / 1.1e3
    fast = simulate(lower(BMM, "spyre-to-units{cores=1}"), random_args(BMM))
    assert fast.report["simulated_us"] < slow.report["simulated_us"] / 4
    assert (slow.outputs[0] == fast.outputs[0]).all()  # timing only
