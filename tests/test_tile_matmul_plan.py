"""The matmul tiling plan (passes/matmul_tiling.py) as a pure object: its tiles cover
the matmul and fit LX, its variant follows the K steps, the split and the group's
structure; and the op-order contract spyre-tile keeps with spyre-double-buffer."""

from __future__ import annotations

import pytest
from test_matmul_split_k import matmul
from test_sim_engine import lower
from xdsl.dialects import scf

from spyre_ir import matmul_plan
from spyre_ir.diagnostics import DiagnosticError
from spyre_ir.dialects import dataflow
from spyre_ir.hardware import DEFAULT_CONFIG, UNCALIBRATED_CONFIG
from spyre_ir.passes.matmul_tiling import MatmulShape, MatmulVariant, plan_tiling
from spyre_ir.passes.tile_matmul import check_streamed_loads_lead

SIMPLE = UNCALIBRATED_CONFIG
LX = SIMPLE.lx_bytes

# (batch, m, n, k), split, stackable, variant
CASES = [
    ((1, 64, 640, 1024), (1, 1, 4), True, MatmulVariant.SPLIT_K),
    ((1, 64, 640, 1024), (1, 1, 4), False, MatmulVariant.PLAIN),
    ((1, 64, 640, 64), (1, 4, 1), True, MatmulVariant.PLAIN),
    ((1, 67, 600, 2000), (1, 1, 4), True, MatmulVariant.K_LOOP),
    ((1, 128, 512, 1024), (1, 4, 1), False, MatmulVariant.ROW_BLOCKED),
    ((4, 100, 300, 129), (2, 2, 1), False, MatmulVariant.K_LOOP),
]


@pytest.mark.parametrize("dims, split, stackable, variant", CASES)
def test_plan_covers_the_matmul_and_fits_lx(dims, split, stackable, variant) -> None:
    batch, m, n, k = dims
    shape = MatmulShape(batch, m, n, k, 2, stackable=stackable)
    t = plan_tiling(shape, SIMPLE, 4, split, LX)
    assert t.variant is variant
    assert t.split == split and t.cores == split[0] * split[1] * split[2]
    sm, sn, sk = split
    # Every output row, column and K step is some core's.
    assert t.m_per * sm >= batch * t.m_chunks and t.m_chunks * t.tm >= m
    assert t.n_per * t.tn * sn >= n and t.k_per * t.tk * sk >= k
    assert t.halves * t.th == t.tn and t.row_blocks * t.rows_per_block == t.tm
    assert matmul_plan.matmul_lx_bytes(t.tm, t.tn, t.tk, 2, 0, sk) <= LX
    if variant is MatmulVariant.SPLIT_K:
        assert t.rows_per_core * sk == t.tm


def test_plan_without_room_in_lx_is_an_error() -> None:
    with pytest.raises(ValueError):
        plan_tiling(MatmulShape(1, 512, 512, 512, 2), SIMPLE, 1, (1, 1, 1), 1024)


def test_shared_a_needs_a_plain_2d_operand() -> None:
    dims, split = (1, 128, 512, 1024), (1, 4, 1)
    shared = plan_tiling(MatmulShape(*dims, 2), SIMPLE, 4, split, LX)
    assert shared.shares_a
    transposed = MatmulShape(*dims, 2, a_shareable=False)
    assert not plan_tiling(transposed, SIMPLE, 4, split, LX).shares_a


def kernel_of(m: int, n: int, k: int, cores: int) -> dataflow.KernelOp:
    module = lower(matmul(m, n, k), f"spyre-fuse,spyre-partition-cores{{cores={cores}}},spyre-tile",
                   SIMPLE)  # fmt: skip
    (kernel,) = [op for op in module.walk() if isinstance(op, dataflow.KernelOp)]
    return kernel


def test_k_loop_loads_open_its_body() -> None:
    kernel = kernel_of(67, 600, 2000, 4)
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp)]
    k_loop = loops[-1]
    streamed = {op.dest for op in k_loop.body.block.ops if isinstance(op, dataflow.LoadOp)}
    assert streamed
    check_streamed_loads_lead(kernel, streamed)
    # A compute moved in front of the loads breaks the contract, and the check says so.
    compute = next(op for op in k_loop.body.block.ops if isinstance(op, dataflow.ComputeOp))
    compute.detach()
    k_loop.body.block.insert_op_before(compute, k_loop.body.block.first_op)
    with pytest.raises(DiagnosticError, match="does not open its loop body"):
        check_streamed_loads_lead(kernel, streamed)


@pytest.mark.parametrize("n", [128, 1408, 14336])
def test_pair_halves_are_whole_sticks(n: int) -> None:
    """A pair (gate and up side by side) gives each corelet one matmul's half of a tile:
    the plan's tiles are at least two sticks wide, so no half loads B in half sticks
    (the demo's decode gate/up pair, 1 x 512 x 1408 on the default card, was planned
    with 64-column tiles, 32 columns a half, and ran slower than two matmuls)."""
    config = DEFAULT_CONFIG
    stick = config.elements_per_stick("f16")
    plan = matmul_plan.plan_matmul(1, 1, 2 * n, 512, 2, config, config.cores, paired=True)
    assert plan.tn % (2 * stick) == 0
    split = (plan.split_m, plan.split_n, plan.split_k)
    t = plan_tiling(MatmulShape(1, 1, 2 * n, 512, 2, paired=True), config, config.cores,
                    split, config.lx_bytes)  # fmt: skip
    assert t.halves == 2 and t.th % stick == 0
