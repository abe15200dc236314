"""Plans that cost contiguous runs (spyre_ir/lpddr_runs.py), on a card that limits a
core's LPDDR5 requests in flight (`lpddr_core_requests_in_flight`, off on the default
card: docs/simulator.md, "The batched matmuls"): the matmul planner counts each tile's
runs, a rows kernel takes box tiles of few runs, a batched matmul's tiles hold several
batches; on the default card the plans are what they were.

Hand-computed from the default card: latency 550 cycles at 1.1 GHz, 22,400 B in flight
per core (40.73 B per cycle); f16 sticks of 64 elements (128 B)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_spyre_run import model_files  # noqa: F401 (the fixture)

from spyre_ir import matmul_plan, registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.layout import default_layout
from spyre_ir.lpddr_runs import MatmulLayouts, box_runs, channel_seconds
from spyre_ir.pipelines import lower_to_units
from spyre_ir.sim.engine import simulate
from spyre_ir.tools.spyre_run import main

LIMITED = DEFAULT_CONFIG.with_options(lpddr_core_requests_in_flight=2.2)
CORE = 22_400 / 550  # B per cycle, one core's channel
RUN = 550 / 2.2  # cycles a run's request holds the channel on LIMITED


def test_a_move_holds_its_channel_for_its_bytes_or_its_requests() -> None:
    # 16 rows x 256 of a row-major [1, 512, 4096] (device [512, 64, 1, 64]): a run per
    # row, 16 x 250 = 4,000 cycles of requests against 8,192 / 40.73 = 201 of bytes.
    a = default_layout((1, 512, 4096), "f16")
    assert box_runs((1, 16, 256), a) == 16
    assert channel_seconds(8192, 16, LIMITED) == pytest.approx(16 * RUN / 1.1e9)
    assert channel_seconds(8192, 16, DEFAULT_CONFIG) == pytest.approx(8192 / CORE / 1.1e9)
    # MatmulLayouts moves A in row blocks and B and C in corelet halves, each its runs.
    layouts = MatmulLayouts(a, default_layout((4096, 1024), "f16"),
                            default_layout((1, 512, 1024), "f16"))  # fmt: skip
    a_s, b_s, c_s = layouts.move_seconds(16, 256, 128, 16, 2, (2, 2), LIMITED)
    assert a_s == pytest.approx(2 * 8 * RUN / 1.1e9)  # two blocks of 8 rows
    # B [256, 64] per half of [4096, 1024] (device [16, 4096, 64]): one run of 256 sticks.
    assert b_s == pytest.approx(2 * 256 * 128 / CORE / 1.1e9)
    assert c_s == pytest.approx(2 * 16 * RUN / 1.1e9)  # [16, 64] a half: a run per row


def test_the_planner_costs_runs_only_on_a_card_that_limits_requests() -> None:
    layouts = MatmulLayouts(default_layout((1, 512, 4096), "f16"),
                            default_layout((4096, 1024), "f16"),
                            default_layout((1, 512, 1024), "f16"))  # fmt: skip
    args = (1, 512, 1024, 4096, 2)
    plain = matmul_plan.plan_matmul(*args, DEFAULT_CONFIG, 32, a_shareable=False)
    assert matmul_plan.plan_matmul(*args, DEFAULT_CONFIG, 32, layouts=layouts,
                                  a_shareable=False) == plain  # fmt: skip
    limited = matmul_plan.plan_matmul(*args, LIMITED, 32, layouts=layouts, a_shareable=False)
    # Costed by bytes alone, a row block of the plan's A tile is a run per row of one
    # stick (16 rows x 64); with runs costed the K tile is longer: fewer requests a byte.
    assert (plain.tm // plain.row_blocks, plain.tk) == (16, 64)
    assert box_runs((1, 16, 64), layouts.a) == 16
    assert limited.tk >= 16 * plain.tk


def test_an_unshareable_a_is_not_assumed_gathered() -> None:
    # A 3-D A is loaded whole by every core of its N cohort (spyre-tile shares only a
    # 2-D one over the ring): no all-gather in the estimate.
    shared = matmul_plan.plan_matmul(1, 512, 4096, 4096, 2, DEFAULT_CONFIG, 32, split=(4, 8, 1))
    whole = matmul_plan.plan_matmul(1, 512, 4096, 4096, 2, DEFAULT_CONFIG, 32, split=(4, 8, 1),
                                   a_shareable=False)  # fmt: skip
    assert shared.ring_s > 0 and whole.ring_s == 0


ADD = """
func.func @main(%x: tensor<4096x4096xf16>, %z: tensor<4096x4096xf16>) -> tensor<4096x4096xf16> {
  %y = spyre.add %x, %z : tensor<4096x4096xf16>, tensor<4096x4096xf16> -> tensor<4096x4096xf16>
  func.return %y : tensor<4096x4096xf16>
}
"""


def _simulated_us(text: str, config, cores: int) -> tuple[float, list]:
    module = parse_and_verify(registry.make_context(), text, "test")
    lower_to_units(module, cores, config.lx_bytes, config=config)
    fn = next(op for op in module.walk() if op.name == "func.func")
    args = [np.zeros(t.get_shape(), np.float16) for t in fn.function_type.inputs.data]
    result = simulate(module, args, config=config, numerics=False, trace=True)
    loads = [e for e in result.trace["traceEvents"] if e.get("name") == "ls.load"]
    return result.report["simulated_us"], loads


def test_a_rows_kernel_on_a_limited_card_takes_tiles_of_few_runs() -> None:
    # [4096, 4096] lives as [64, 4096, 64]: the rows kernel's 32 whole rows are 64 runs
    # of 32 sticks, a request each; a box tile of whole sticks down the rows is a run or
    # two. One core reads 64 MiB: 1,498 us at its 44.8 GB/s, what the card measures
    # (elementwise_cores.csv, add 4096x4096 on 1 core: 1,498.9 us).
    limited_us, loads = _simulated_us(ADD, LIMITED, 1)
    assert max(e["args"]["runs"] for e in loads) <= 2
    assert limited_us == pytest.approx(2 * 4096 * 4096 * 2 / (CORE * 1.1e9) * 1e6, rel=0.02)
    # The default card keeps the rows kernel's own tiles (32 rows: 2,048 sticks).
    default_us, loads = _simulated_us(ADD, DEFAULT_CONFIG, 1)
    assert {e["args"]["sticks"] for e in loads} == {32 * 64}
    assert default_us == pytest.approx(limited_us, rel=0.02)


BATCH_ADD = """
func.func @main(%x: tensor<4x1x4096xf16>, %z: tensor<4x1x4096xf16>) -> tensor<4x1x4096xf16> {
  %y = spyre.add %x, %z : tensor<4x1x4096xf16>, tensor<4x1x4096xf16> -> tensor<4x1x4096xf16>
  func.return %y : tensor<4x1x4096xf16>
}
"""


def test_a_rows_kernel_of_one_row_per_batch_takes_the_batches_together() -> None:
    # [4, 1, 4096] lives as [1, 64, 4, 64]: one batch's row is 64 runs of a stick, so
    # 4 cores of one row each wait 64 x 250 cycles on requests; tiles of every batch
    # are runs of 4 sticks and more.
    limited_us, loads = _simulated_us(BATCH_ADD, LIMITED, 32)
    assert {e["args"]["runs"] for e in loads} == {1}
    assert limited_us < 64 * RUN / 1.1e3  # under one batch row's requests
    default_us, _ = _simulated_us(BATCH_ADD, DEFAULT_CONFIG, 32)
    assert limited_us == pytest.approx(default_us, rel=0.1)


LIMITED_CARD = str(Path(__file__).parent / "filecheck" / "passes" / "limited_requests_card.json")


def test_every_frontend_model_checks_on_the_limited_card(model_files, capsys) -> None:  # noqa: F811
    # The box tiles (down to the stick dim), the planner's other tiles and the batch
    # tiles change how results are computed, not what: every model of tests/models.py
    # matches the L1 interpreter on the limited card, and is timed on it.
    for path, inputs in model_files:
        assert main([str(path), "--inputs", inputs, "--check", "--card", LIMITED_CARD]) == 0
        out = capsys.readouterr().out
        assert "check: ok (max abs error " in out, (path, out)
