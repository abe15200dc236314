"""Split-K matmul kernels (spyre-tile) on the simulated card: the resident A tile, the
stacked [sk, tm / sk, tn] tiles whose row blocks the cores of a K group store, and the
deferred stores; and kernels whose last K step runs in row blocks. All against the L2
interpreter (bit for bit) and L1 (to rounding), and moving exactly the tensors'
bytes. The kernels are planned for the uncalibrated card (SIMPLE): the shapes below
were chosen for the plans its planner makes."""

from __future__ import annotations

import pytest
from test_sim_engine import differential, lower, no_double_buffer, random_args

from spyre_ir import matmul_plan
from spyre_ir.dialects import core, dataflow
from spyre_ir.hardware import UNCALIBRATED_CONFIG
from spyre_ir.sim.engine import simulate

SIMPLE = UNCALIBRATED_CONFIG


def matmul(m: int, n: int, k: int, bias: bool = False, split: tuple[int, ...] = ()) -> str:
    attr = f" {{spyre.split = array<i64: {', '.join(map(str, split))}>}}" if split else ""
    if not bias:
        return f"""
func.func @main(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>) -> tensor<{m}x{n}xf16> {{
  %p = spyre.matmul %a, %b{attr} : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16> -> tensor<{m}x{n}xf16>
  func.return %p : tensor<{m}x{n}xf16>
}}"""
    return f"""
func.func @main(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>, %c: tensor<{n}xf16>) -> tensor<{m}x{n}xf16> {{
  %p = spyre.matmul %a, %b{attr} : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16> -> tensor<{m}x{n}xf16>
  %r = spyre.add %p, %c : tensor<{m}x{n}xf16>, tensor<{n}xf16> -> tensor<{m}x{n}xf16>
  func.return %r : tensor<{m}x{n}xf16>
}}"""


def pipelines(cores: int) -> dict[str, str]:
    return {"double-buffered": f"spyre-to-units{{cores={cores}}}",
            "single-buffered": no_double_buffer(cores)}  # fmt: skip


def split_of(text: str, cores: int) -> list[int]:
    module = lower(text, f"spyre-to-units{{cores={cores}}}", SIMPLE)
    (program,) = [op for op in module.walk() if isinstance(op, core.ProgramOp)]
    assert isinstance(program.plan, dataflow.MatmulPlanAttr)
    return list(program.plan.split_mnk)


# cores, m, n, k, bias, how often A is loaded (once per N tile of a core, or once when
# each output tile takes one K step) and B (once per M tile)
CASES = {
    # One K step per core and five N tiles: A resident, stacked tiles, deferred stores.
    "stacked": (4, 64, 640, 1024, False, 1, 1),
    # Three M tiles of 64 rows (the last one past the end of 130): A once per M tile.
    "stacked-m-tiles": (4, 130, 640, 1024, False, 1, 3),
    # N and K split (forced: with 640-column tiles the planner splits N 4 ways
    # instead): the A tile is gathered over the ring, then reshaped.
    "stacked-shared-a": (4, 64, 2560, 512, False, 1, 1),
    # A K loop per core (uneven K) over five N tiles: the reduced tile is reshaped on
    # the LS unit and each core stores its row block.
    "k-loop": (4, 67, 600, 2000, False, 5, 1),
    # An epilogue: the reshape path after the bias add.
    "epilogue": (4, 64, 640, 1024, True, 1, 1),
}
FORCED = {"stacked-shared-a": (1, 1, 2, 2)}
"""Splits forced by a `spyre.split` attribute (the planner's own choice is not split-K)."""


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("lowering", ["double-buffered", "single-buffered"])
def test_split_k_matmul_matches_and_moves_each_byte_once(case: str, lowering: str) -> None:
    cores, m, n, k, bias, a_loads, b_loads = CASES[case]
    text = matmul(m, n, k, bias, FORCED.get(case, ()))
    split = split_of(text, cores)
    assert split[2] > 1, split  # the planner splits K for these shapes
    result = differential(text, pipelines(cores)[lowering], config=SIMPLE)
    (kernel,) = result.report["kernels"]
    # Whole sticks of every tensor (`k-loop`'s 1000 and 600 columns: 16 and 10 sticks
    # a row), A and B as often as said, C once: each output row is stored by one core
    # of its K group, not by all of them.
    a, b, c = -(-k // 64) * m, -(-n // 64) * k, -(-n // 64) * m
    sticks = a_loads * a + b_loads * b + c + (-(-n // 64) * cores if bias else 0)
    assert kernel["lpddr_bytes"] == 128 * sticks
    assert kernel["ring_bytes"] > 0  # the split-K all-reduces


# cores, m, n, k, bias: each core walks K for one output tile, in four row blocks
ROW_BLOCKED = {
    # N split 4 ways, 16 K steps of 64 for a 128 x 128 tile: blocks of 32 rows, the
    # A tile shared (each core loads 8 rows of each block, the ring completes it).
    "plain": (4, 128, 512, 1024, False),
    # The bias epilogue runs block by block; its inputs are loaded for every block.
    "epilogue": (4, 128, 512, 1024, True),
    # 64 columns a core (the split forced: N over the 4 cores): one corelet's width, so
    # the row blocks take turns on the two.
    "one-corelet": (4, 64, 256, 2048, True, (1, 1, 4, 1)),
}


@pytest.mark.parametrize("case", ROW_BLOCKED)
@pytest.mark.parametrize("lowering", ["double-buffered", "single-buffered"])
def test_row_blocked_last_k_step_matches_and_moves_each_byte_once(case: str, lowering: str) -> None:
    cores, m, n, k, bias, *forced = ROW_BLOCKED[case]
    split = forced[0] if forced else ()
    epilogue = 2 * 2 if bias else 0  # the bias add's buffers, 2 bytes a value each
    plan = matmul_plan.plan_matmul(1, m, n, k, 2, SIMPLE, cores, epilogue, split[1:] or None)
    assert (plan.split_k, plan.row_blocks) == (1, 4) and plan.shares_a
    text = matmul(m, n, k, bias, split)
    result = differential(text, pipelines(cores)[lowering], config=SIMPLE)
    (kernel,) = result.report["kernels"]
    # A, B and C once; the bias (n / 64 sticks over the cores) once per row block.
    sticks = (k // 64) * m + (n // 64) * k + (n // 64) * m + (4 * n // 64 if bias else 0)
    assert kernel["lpddr_bytes"] == 128 * sticks


def test_row_blocks_store_while_the_last_step_computes() -> None:
    # 32 cores, 512 x 1024 @ 1024 x 4096: each core walks 16 K steps for a 512 x 128
    # tile. The first block's stores start before the last block's matmul ends, so
    # the simulated time is close to the planner's estimate (bandwidth plus the last
    # step's first block).
    text = matmul(512, 4096, 1024)
    plan = matmul_plan.plan_matmul(1, 512, 4096, 1024, 2, SIMPLE, 32)
    assert plan.row_blocks == 4
    result = simulate(lower(text, "spyre-to-units{cores=32}", SIMPLE), random_args(text),
                      config=SIMPLE, trace=True)  # fmt: skip
    events = [e for e in result.trace["traceEvents"] if e["ph"] == "X" and e["pid"] == 1]
    first_store = min(e["ts"] for e in events if e["name"] == "ls.store")
    last_matmul_end = max(e["ts"] + e["dur"] for e in events if e["name"] == "spyre.matmul")
    assert first_store < last_matmul_end
    assert result.report["simulated_us"] == pytest.approx(plan.estimate_s * 1e6, rel=0.01)
