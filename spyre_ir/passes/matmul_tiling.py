"""The tiling plan of one matmul kernel, as a pure object: from the matmul's shapes, its
core split, element size, the LX budget and the card, the tile sizes, each core's share
of the tiles, the loop structure (which variant spyre-tile emits), split-K and row
blocking. No IR is read or built here; tile_matmul.py emits the plan's kernel."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from spyre_ir import cost_model, matmul_plan
from spyre_ir.hardware import SpyreConfig
from spyre_ir.lpddr_runs import MatmulLayouts


class MatmulVariant(enum.Enum):
    """The loop structure of a matmul kernel (one emitter each in tile_matmul.py)."""

    PLAIN = "plain"
    """One K step per output tile: the A tile is loaded once per M tile and the N loop
    streams B tiles."""
    SPLIT_K = "split-k"
    """PLAIN with the K steps split over the cores and no epilogue: the reduced tile
    is computed stacked as [sk, tm / sk, tn] and each core of a K group stores its
    row block of it."""
    K_LOOP = "k-loop"
    """A K loop inside the N loop; the tile is finished after it."""
    ROW_BLOCKED = "row-blocked"
    """K_LOOP whose last K step computes, finishes and stores the tile in row blocks,
    so stores stream to LPDDR5 while the PE arrays compute the other blocks."""
    A_RESIDENT = "a-resident"
    """K_LOOP whose A tiles stay in LX: a fill loop loads the M tile's whole A row
    block (a slot per K step) once, then the N loop's K loops stream only B tiles."""


@dataclass(frozen=True)
class MatmulShape:
    """What the plan is computed from, besides the card."""

    batch: int
    m: int
    n: int
    k: int
    elem_bytes: int
    epilogue_bytes_per_elem: int = 0
    """LX bytes per output element the epilogue's tiles take (the planner's budget)."""
    rhs_batched: bool = False
    stackable: bool = False
    """The group allows SPLIT_K's stacked tile: 2-D, no epilogue, the matmul's result
    its only output."""
    a_shareable: bool = True
    """The A tile may be loaded in slices and all-gathered (a 2-D, untransposed A)."""
    paired: bool = False
    """`n` is a pair's two matmuls side by side (each tile half of each, one corelet
    per half: see `matmul_plan.plan_matmul`)."""
    prologue: bool = False
    """A is a norm prologue's result, computed in the kernel from x: the plan weighs
    the statistics' pass over x (`matmul_plan.plan_matmul`'s `prologue`)."""
    head_width: int | None = None
    """The epilogue's head view has heads this wide: a corelet's share of a tile is
    whole heads, or one corelet takes the tile (`cost_model.corelets_sharing`)."""
    batch_tileable: bool = False
    """A tile may hold several batches: a 3-D matmul with a 3-D A and nothing but the
    matmul in its group (no epilogue, prologue, pair or later segment)."""
    layouts: MatmulLayouts | None = None
    """Where A, B and C live in LPDDR5: the planner counts its tiles' runs."""


@dataclass(frozen=True)
class MatmulTiling:
    """Tiles and loops of one matmul kernel (see `plan_tiling`)."""

    shape: MatmulShape
    split: tuple[int, int, int]
    """Cores along M (of batch x M tiles; of one batch's M tiles under `split_b`), N
    and K."""
    tm: int
    tn: int
    tk: int
    halves: int
    """Corelets sharing a tile's columns: each has tn / halves of them."""
    row_blocks: int
    shares_a: bool
    """The cores of an N group each load 1 / split_n of the A tile and all-gather it."""
    a_resident: bool = False
    """The A row block of an M tile stays in LX over its N tiles (A_RESIDENT)."""
    split_b: int | None = None
    """Core groups along the batch, each walking a contiguous range of batches (the
    card's forced division); None: the M split divides batch x M tiles."""
    batch_tile: int = 1
    """Batches per tile under `split_b` (dividing `batch_per`): a move takes that many
    batches of its rows at once, so in torch-spyre's layout of a 3-D tensor ([m, k/64,
    b, 64]: the batch just outside the stick) its runs are that many sticks long."""

    def batch_extents(self, rank: int) -> list[int]:
        """A rank-`rank` tile's extents along its batch dims: `batch_tile` batches of
        the innermost (a batch-tileable matmul has one), 1 of the others."""
        return [1] * (rank - 3) + [self.batch_tile] if rank > 2 else []

    @property
    def cores(self) -> int:
        sm, sn, sk = self.split
        return (self.split_b or 1) * sm * sn * sk

    @property
    def batch_per(self) -> int:
        """Batches per core group of the batch split (1 without one)."""
        return self.shape.batch // self.split_b if self.split_b else 1

    @property
    def m_tiles_per_batch(self) -> int:
        """Under a batch split, the M tiles of one batch each core of the M split takes."""
        return cost_model.ceil_div(self.m_chunks, self.split[0])

    @property
    def th(self) -> int:
        """Columns of one corelet's half tile."""
        return self.tn // self.halves

    @property
    def rows_per_block(self) -> int:
        return self.tm // self.row_blocks

    @property
    def m_chunks(self) -> int:
        """M tiles of one batch."""
        return cost_model.ceil_div(self.shape.m, self.tm)

    @property
    def m_per(self) -> int:
        """(batch, M) tiles per core of the M split."""
        if self.split_b:
            return self.batch_per // self.batch_tile * self.m_tiles_per_batch
        return cost_model.ceil_div(self.shape.batch * self.m_chunks, self.split[0])

    @property
    def n_per(self) -> int:
        """N tiles per core of the N split."""
        return cost_model.ceil_div(cost_model.ceil_div(self.shape.n, self.split[1]), self.tn)

    @property
    def k_per(self) -> int:
        """K steps per core of the K split."""
        return cost_model.ceil_div(cost_model.ceil_div(self.shape.k, self.split[2]), self.tk)

    @property
    def rows_per_core(self) -> int:
        """Rows of a reduced tile each core of a K group stores."""
        return self.tm // self.split[2]

    @property
    def variant(self) -> MatmulVariant:
        if self.k_per == 1:
            stacked = self.split[2] > 1 and self.shape.stackable
            return MatmulVariant.SPLIT_K if stacked else MatmulVariant.PLAIN
        if self.a_resident:
            return MatmulVariant.A_RESIDENT
        return MatmulVariant.ROW_BLOCKED if self.row_blocks > 1 else MatmulVariant.K_LOOP


def plan_tiling(shape: MatmulShape, config: SpyreConfig, cores: int,
                split: tuple[int, int, int], lx_bytes: int,
                a_resident: bool = False, split_b: int | None = None) -> MatmulTiling:  # fmt: skip
    """The cost model's tiles for `shape` on `split` (and `split_b` cores along the
    batch) within `lx_bytes`; raises ValueError when none fits. `a_resident`:
    A_RESIDENT tilings are weighed too (spyre-tile's `a-resident` option, off by
    default).

    Under a batch split a batch-tileable shape's tiles take the most batches of the
    core group (a divisor of its batches; under split-K a multiple of the K group, whose
    cores each store tb / sk of them) that the cost model's tiles, that many batches
    deep, fit LX with. A core's batches are adjacent sticks in LPDDR5 (torch-spyre's
    layout of a 3-D tensor), so its moves are runs of that many sticks, not one
    (lpddr_runs.box_runs). The tiles per batch stay the planner's: shrinking them to fit more
    batches (tried) makes split-K rows of matmul_splits.csv slower. On a card that
    limits a core's requests in flight (a one-batch tile is then a request per stick)
    they shrink when no batch tile fits otherwise: the most batches whose tiles the
    planner finds within 1 / tb of LX."""
    tiling = _plan_tiling(shape, config, cores, split, lx_bytes, a_resident, split_b)
    if not (split_b and shape.batch_tileable) or tiling.a_resident:
        return tiling  # (an A_RESIDENT block is one batch's)
    per, sk = shape.batch // split_b, split[2]
    lx = matmul_plan.matmul_lx_bytes(tiling.tm, tiling.tn, tiling.tk, shape.elem_bytes,
                                    shape.epilogue_bytes_per_elem, sk)  # fmt: skip
    batch_tiles = [tb for tb in range(per, 1, -1) if per % tb == 0 and tb % sk == 0]
    for tb in batch_tiles:
        if tb * lx <= lx_bytes:
            return replace(tiling, batch_tile=tb)
    if not config.lpddr_core_requests_in_flight:
        return tiling
    for tb in batch_tiles:
        try:
            smaller = _plan_tiling(shape, config, cores, split, lx_bytes // tb, False, split_b)
        except ValueError:
            continue
        return replace(smaller, batch_tile=tb)
    return tiling


def _plan_tiling(shape: MatmulShape, config: SpyreConfig, cores: int,
                 split: tuple[int, int, int], lx_bytes: int,
                 a_resident: bool, split_b: int | None) -> MatmulTiling:  # fmt: skip
    s = shape
    mp = matmul_plan.plan_matmul(s.batch, s.m, s.n, s.k, s.elem_bytes, config, cores,
                                s.epilogue_bytes_per_elem, split, lx_bytes,
                                s.rhs_batched, s.paired, a_resident, split_b, s.prologue,
                                s.head_width, s.layouts, s.a_shareable)  # fmt: skip
    tiling = MatmulTiling(
        shape, split, mp.tm, mp.tn, mp.tk,
        cost_model.corelets_sharing(mp.tn, config, s.head_width),
        mp.row_blocks, mp.shares_a and s.a_shareable, mp.a_resident, split_b,
    )  # fmt: skip
    # Row blocks pay off only in a K loop's last step (the planner's `row_blocks`).
    assert tiling.row_blocks == 1 or tiling.k_per > 1, tiling
    assert not tiling.a_resident or (tiling.row_blocks == 1 and tiling.k_per > 1), tiling
    return tiling
