"""A forced split of a batched matmul keeps its batch axis (`split_b` of the plan): each
group of M x N x K cores walks a contiguous range of batches and the M split divides
each batch's rows (the card's division, matmul_splits.csv). The kernels give the L2
interpreter's numbers bit for bit (and L1's to rounding), and the numbers of the same
split folded into rows (B x M cores over the rows of all batches) to one ulp: the two
tile the rows differently, and the host's float32 BLAS sums a row in an order that
depends on how many rows its matrix has (on AVX-512 CPUs), so a few outputs round the
other way. A core group's batches go in tiles of several batches where LX allows
(`batch_tile`): bit for bit the numbers of one batch per tile, and torch's to rounding."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from card_tolerance import assert_card_close
from test_sim_engine import differential, lower, random_args

from spyre_ir.dialects import core, dataflow
from spyre_ir.hardware import UNCALIBRATED_CONFIG
from spyre_ir.sim.engine import simulate

SIMPLE = UNCALIBRATED_CONFIG


def bmm(lhs: tuple[int, ...], rhs: tuple[int, ...], split: tuple[int, int, int, int]) -> str:
    out = (*lhs[:-1], rhs[-1])
    t = ["x".join(map(str, s)) + "xf16" for s in (lhs, rhs, out)]
    attr = f"{{spyre.split = array<i64: {', '.join(map(str, split))}>}}"
    return f"""
func.func @main(%a: tensor<{t[0]}>, %b: tensor<{t[1]}>) -> tensor<{t[2]}> {{
  %p = spyre.matmul %a, %b {attr} : tensor<{t[0]}>, tensor<{t[1]}> -> tensor<{t[2]}>
  func.return %p : tensor<{t[2]}>
}}"""


# lhs, rhs, forced (b, m, n, k) split. Each case's batch split and folded split tile K
# alike (with K = 128 the folded broadcast and two-dim cases would take one K step of 128
# where the batch split takes two of 64).
CASES = {
    # Two batches per group, one M tile per core and batch.
    "groups": ((8, 128, 256), (8, 256, 128), (4, 1, 1, 1)),
    # 130 rows a batch split 2 ways: the second core's last M tile runs past the end.
    "uneven-rows": ((4, 130, 128), (4, 128, 128), (2, 2, 1, 1)),
    # A shared 2-d B (broadcast over the batch) and an N split inside each group.
    "broadcast-b": ((4, 64, 64), (64, 256), (2, 1, 2, 1)),
    # Two batch dims (2 x 2), one batch per group.
    "two-batch-dims": ((2, 2, 64, 64), (2, 2, 64, 128), (4, 1, 1, 1)),
    # Split-K inside each batch group.
    "split-k": ((4, 64, 256), (4, 256, 128), (2, 1, 1, 2)),
}


def plan_of(text: str, cores: int) -> dataflow.MatmulPlanAttr:
    module = lower(text, f"spyre-to-units{{cores={cores}}}", SIMPLE)
    (program,) = [op for op in module.walk() if isinstance(op, core.ProgramOp)]
    assert isinstance(program.plan, dataflow.MatmulPlanAttr)
    return program.plan


def within_an_ulp(got: np.ndarray, want: np.ndarray) -> None:
    """Results equal but for a few that round the other way: one ulp of DLFloat16 (the
    card's halves: 9 fraction bits, two f16 ulps) apart."""
    assert got.dtype == want.dtype == np.float16
    apart = np.abs(got.astype(np.float32) - want.astype(np.float32))
    ulp = 2 * np.spacing(np.abs(want)).astype(np.float32)
    assert (apart <= ulp).all(), f"{int((apart > ulp).sum())} results more than an ulp apart"
    assert (apart > 0).mean() < 1e-3, f"{int((apart > 0).sum())} of {got.size} results differ"


@pytest.mark.parametrize("case", CASES)
def test_batch_split_matches_and_equals_the_folded_split(case: str) -> None:
    lhs, rhs, split = CASES[case]
    sb, sm, sn, sk = split
    cores = sb * sm * sn * sk
    text = bmm(lhs, rhs, split)
    plan = plan_of(text, cores)
    assert (plan.batch_split, plan.split_mnk, plan.cores.data) == (sb, (sm, sn, sk), cores)
    result = differential(text, f"spyre-to-units{{cores={cores}}}", config=SIMPLE)
    # The old division (the batch split folded into rows) gives the same numbers.
    folded = bmm(lhs, rhs, (1, sb * sm, sn, sk))
    assert plan_of(folded, cores).batch_split == 1
    flat = bmm((int(np.prod(lhs[:-2])) * lhs[-2], lhs[-1]), rhs[-2:], (1, sb * sm, sn, sk)) \
        if len(rhs) == 2 else None  # fmt: skip
    args = random_args(text)
    other = simulate(lower(folded, f"spyre-to-units{{cores={cores}}}", SIMPLE), args,
                     config=SIMPLE)  # fmt: skip
    within_an_ulp(result.outputs[0], other.outputs[0])
    if flat is not None:  # a shared B: the rows of all batches as one matmul, no batch axis
        plain = simulate(lower(flat, f"spyre-to-units{{cores={cores}}}", SIMPLE),
                         [args[0].reshape(-1, lhs[-1]), args[1]], config=SIMPLE)  # fmt: skip
        assert plan_of(flat, cores).batch_split is None
        within_an_ulp(result.outputs[0].reshape(-1, rhs[-1]), plain.outputs[0])


def test_each_batch_group_loads_only_its_batches() -> None:
    # 8 batches over 4 groups: every byte of A and B is loaded once, C stored once,
    # whichever group loads it (B is per batch, so no multicast hides a reload).
    lhs, rhs, split = CASES["groups"]
    result = differential(bmm(lhs, rhs, split), "spyre-to-units{cores=4}", config=SIMPLE)
    (kernel,) = result.report["kernels"]
    a, b, c = (int(np.prod(s)) * 2 for s in (lhs, rhs, (*lhs[:-1], rhs[-1])))
    assert kernel["lpddr_bytes"] == a + b + c


# A core's batches in one tile (matmul_tiling.plan_tiling's batch_tile): lhs, rhs, forced
# split, the batches per tile, and whether B is read transposed (attention's q @ k^T).
BATCH_TILES = {
    # 8 batches a group of 4 cores (N split 2, K split 2): 8 per tile, each K core
    # storing 4 of them.
    "n-and-k-split": ((16, 64, 256), (16, 256, 256), (2, 1, 2, 2), 8, False),
    # q @ k^T of 8 heads of 64 rows: B loaded through its transpose, 4 heads a tile.
    "transposed-b": ((8, 64, 128), (8, 64, 128), (2, 1, 1, 1), 4, True),
    # A shared 2-D B: A and C in tiles of 4 batches.
    "broadcast-b": ((8, 64, 64), (64, 128), (2, 1, 1, 1), 4, False),
}


def bmm_text(lhs: tuple[int, ...], rhs: tuple[int, ...], split: tuple[int, ...],
             transposed: bool) -> str:  # fmt: skip
    if not transposed:
        return bmm(lhs, rhs, split)
    b, n, k = rhs
    t = [f"{x}x{y}x{z}xf16" for x, y, z in (lhs, rhs, (b, k, n), (*lhs[:-1], n))]
    attr = f"{{spyre.split = array<i64: {', '.join(map(str, split))}>}}"
    return f"""
func.func @main(%a: tensor<{t[0]}>, %b: tensor<{t[1]}>) -> tensor<{t[3]}> {{
  %t = spyre.transpose %b perm = [0, 2, 1] : tensor<{t[1]}> -> tensor<{t[2]}>
  %p = spyre.matmul %a, %t {attr} : tensor<{t[0]}>, tensor<{t[2]}> -> tensor<{t[3]}>
  func.return %p : tensor<{t[3]}>
}}"""


def batches_per_load(text: str, cores: int) -> set[int]:
    """The batches each load of a batched operand (a 3-D box) takes."""
    module = lower(text, f"spyre-to-dataflow{{cores={cores}}}", SIMPLE)
    return {op.dest.type.get_shape()[0] for op in module.walk()
            if isinstance(op, dataflow.LoadOp) and len(op.dest.type.get_shape()) == 3}  # fmt: skip


@pytest.mark.parametrize("case", BATCH_TILES)
def test_a_tile_of_several_batches_matches_one_batch_per_tile_and_torch(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from spyre_ir.passes import tile_matmul

    lhs, rhs, split, tb, transposed = BATCH_TILES[case]
    cores = int(np.prod(split))
    text = bmm_text(lhs, rhs, split, transposed)
    assert batches_per_load(text, cores) == {tb}
    result = differential(text, f"spyre-to-units{{cores={cores}}}", config=SIMPLE)
    args = random_args(text)
    b = torch.from_numpy(args[1]).float()
    want = torch.matmul(torch.from_numpy(args[0]).float(), b.transpose(-1, -2) if transposed else b)
    assert_card_close(result.outputs[0], want.half().numpy(), 1e-2)
    # Bit for bit the numbers of one batch per tile (the tiles' rows and K steps are the
    # same; only how many batches a move takes differs).
    shape = tile_matmul.MatmulGroup.shape
    monkeypatch.setattr(tile_matmul.MatmulGroup, "shape",
                        lambda self: replace(shape(self), batch_tileable=False))  # fmt: skip
    assert batches_per_load(text, cores) == {1}
    single = simulate(lower(text, f"spyre-to-units{{cores={cores}}}", SIMPLE), args,
                      config=SIMPLE)  # fmt: skip
    np.testing.assert_array_equal(result.outputs[0], single.outputs[0])
