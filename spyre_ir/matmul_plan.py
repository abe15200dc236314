"""The matmul planner: the work division (cores along M, N and K, and the batch) and
the tiles of one matmul kernel with the lowest estimated time that fits LX, from the
cost formulas of spyre_ir/cost_model.py and the card's `SpyreConfig`. spyre-partition-cores
asks it for the split, spyre-tile (passes/matmul_tiling.py) for the tiles."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from spyre_ir.cost_model import (
    allreduce_reduction_cycles,
    ceil_div,
    corelets_sharing,
    ddr_seconds,
    lpddr_seconds,
    pe_seconds,
    ring_allgather_seconds,
    ring_allreduce_seconds,
)
from spyre_ir.hardware import SpyreConfig
from spyre_ir.lpddr_runs import MatmulLayouts

TILE_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
"""Tile rows; fewer than the PE array's only when a core has fewer rows of output (a
decode GEMV): the array idles on the missing rows either way, and LX, the loads and the
numerics then carry no padding rows."""
TILE_COLS = (64, 128, 256, 512, 1024, 2048)
STATS_COLUMNS = 128
"""Columns of x a norm prologue's statistics loop reads at a time (tile_prologue.py):
its tiles take LX that the matmul's tiles would otherwise have."""


@dataclass(frozen=True)
class MatmulPlan:
    """Work division (m, n, k splits over cores) and tiles of one matmul kernel."""

    split_m: int
    split_n: int
    split_k: int
    tm: int
    tn: int
    tk: int
    pe_s: float
    ddr_s: float
    ring_s: float
    """All-gathers of shared A tiles and the split-K all-reduces that the next output
    tile's work hides: they overlap PE and LPDDR5 work."""
    reduce_s: float = 0.0
    """What nothing overlaps: the last output tile's final matmul instruction (of its
    first row block, see `row_blocks`) and its split-K all-reduce (every all-reduce
    when a core has one output tile per M tile)."""
    row_blocks: int = 1
    """Row blocks the A tile and the accumulators are kept in, so that the last K step
    computes, finishes (cast, epilogue) and stores the output tile block by block
    (spyre-tile; see `tail_row_blocks`)."""
    a_resident: bool = False
    """A core keeps its M tile's whole A row block (every K step's A tile) in LX while
    it walks its N tiles, loading it once per M tile instead of once per N tile (a K
    loop's A tiles otherwise stream again for every N tile)."""
    split_b: int | None = None
    """Cores along the batch of a batched matmul, each group of split_m x split_n x
    split_k cores taking a contiguous range of the batch (the M split then divides the
    rows of each batch); None: the M split divides the rows of all batches."""

    @property
    def shares_a(self) -> bool:
        """The cores that split N load one slice of each A tile and all-gather it."""
        return self.split_n > 1 and self.tm % self.split_n == 0

    @property
    def cores(self) -> int:
        return (self.split_b or 1) * self.split_m * self.split_n * self.split_k

    @property
    def estimate_s(self) -> float:
        return max(self.pe_s, self.ddr_s, self.ring_s) + self.reduce_s

    @property
    def rank(self) -> tuple[float, float, int, int]:
        """Lowest estimate first; among equals, less total work, then the narrower
        widest cohort (on the card the splits of one matmul at the same traffic get
        slower as the cores sharing an operand grow: matmul_splits.csv, 1x512x4096x4096
        under 1x4x8x1 317 us, 1x8x4x1 376, 1x16x2x1 434, 1x2x16x1 551, 1x1x32x1 614,
        1x32x1x1 803), then more cores (a tie means the bound is shared, and more cores
        leave more headroom)."""
        return (round(self.estimate_s, 12), round(self.pe_s + self.ddr_s, 12),
                max(self.split_m, self.split_n), -self.cores)  # fmt: skip


def matmul_lx_bytes(
    tm: int, tn: int, tk: int, elem: int, extra_per_elem: int, split_k: int = 1
) -> int:
    """Double-buffered A and B tiles, an f32 accumulator, the output tile and
    `extra_per_elem` bytes per output element for epilogue buffers; with split-K also
    the output tile split into the row blocks the cores of a K group store, a second
    accumulator and output slot (a tile's all-reduce overlaps the next tile's matmul)
    and the A tile stacked by K group ([sk, tm / sk, tk])."""
    split_k_bytes = tm * tn * (2 * elem + 4) + tm * tk * elem if split_k > 1 else 0
    return (2 * (tm * tk + tk * tn) * elem + tm * tn * (4 + elem + extra_per_elem)
            + split_k_bytes)  # fmt: skip


TAIL_ROW_BLOCKS = 4
"""Row blocks of a tile's last K step: its first block's stores start after a quarter
of the step's matmul, while each block still fills the PE rows."""


def tail_row_blocks(rows: int, tm: int, share: int, k_tiles: int, tiles: int,
                    split_k: int, config: SpyreConfig) -> int:  # fmt: skip
    """Row blocks (1, 2 or 4) of a `tm`-row output tile of a matmul with `rows` rows
    whose last K step is computed, finished and stored block by block: only when the
    cores walk K (k_tiles > 1, no split-K) for one output tile each - with more, each
    tile's stores still hold up the next tile's first loads, whatever the last tile
    does - and the tiles do not overhang the rows (every core moves a block's time,
    so a block of padding would cost as much as one of data). Each block is whole PE
    rows and, when the A tile is shared over `share` cores, whole rows for each."""
    if k_tiles == 1 or tiles > 1 or split_k > 1 or rows % tm:
        return 1
    blocks = TAIL_ROW_BLOCKS
    while blocks > 1 and (tm % (blocks * share) or (tm // blocks) % config.pe_rows):
        blocks //= 2
    return blocks


def prologue_stats_in_k_loop(rows: int, tk: int, share: int, k_tiles: int, n_tiles: int,
                              split_k: int) -> bool:  # fmt: skip
    """Whether a streaming matmul's norm prologue (spyre-fuse-norm-prologue) adds its
    row statistics from the A tiles of x its K loop loads (`rows` of them in a row
    block, `share` cores of an N group each taking a slice), rather than in a loop of
    its own over x: one N tile per core (each A tile loaded once), several K steps, no
    split-K (each core sees whole rows), and the f32 copy of the core's slice within
    the LX kept for the statistics' own chunks (tile_prologue.prologue_bytes)."""
    return (k_tiles > 1 and n_tiles == 1 and split_k == 1
            and 4 * (rows // share) * tk <= 6 * rows * min(tk, STATS_COLUMNS))  # fmt: skip


def column_tiles(columns: int) -> tuple[int, ...]:
    """Tile widths tried for a core's `columns` of N: `TILE_COLS`, and the core's whole
    share when it is whole sticks within the widest tile and no power of two divides it
    (1,600 columns of 12,800 under 8 cores along N: 256-column tiles would overhang it
    by 192 columns, which every core loads and computes)."""
    if columns % 64 or columns > TILE_COLS[-1] or columns in TILE_COLS:
        return TILE_COLS
    return (*TILE_COLS, columns)


def _splits(cores: int) -> list[tuple[int, int, int]]:
    """(m, n, k) splits over a divisor of `cores` cores."""
    out = []
    for used in (d for d in range(1, cores + 1) if cores % d == 0):
        for sm in range(1, used + 1):
            if used % sm:
                continue
            for sn in range(1, used // sm + 1):
                if (used // sm) % sn == 0:
                    out.append((sm, sn, used // sm // sn))
    return out


@functools.lru_cache(maxsize=256)  # a layer repeats shapes (q/o, k/v, gate/up); plans are frozen
def plan_matmul(
    batch: int,
    m: int,
    n: int,
    k: int,
    elem: int,
    config: SpyreConfig,
    cores: int,
    epilogue_bytes_per_elem: int = 0,
    split: tuple[int, int, int] | None = None,
    lx_bytes: int | None = None,
    rhs_batched: bool = False,
    paired: bool = False,
    a_resident: bool = False,
    split_b: int | None = None,
    prologue: bool = False,
    head_width: int | None = None,
    layouts: MatmulLayouts | None = None,
    a_shareable: bool = True,
) -> MatmulPlan:
    """The (split, tile) with the lowest estimated time that fits LX.

    `paired`: `n` is two matmuls' columns side by side (spyre-fuse's pairs, SwiGLU's gate
    and up), and each output tile is half the first's and half the second's, one
    corelet each: a tile is at least two sticks wide, so that each half is whole sticks
    (a half-stick half would load every B row in half sticks).

    `a_resident`: also weigh A_RESIDENT tilings (a K loop whose M tile's A row block
    stays in LX over its N tiles). Off by default: where the estimate prefers it (8B
    prefill gate/up) the simulator measures it slower (docs/passes.md).

    Rows of all batches form the M side, unless `split_b` (with `split`) puts split_b
    groups of cores along the batch, each walking its batches and splitting each
    batch's rows by split_m (the card's forced division); K is split only with a ring all-reduce of the
    partial f32 tiles. Each core streams its B tiles from LPDDR5; the cores that split N
    need the same A tiles, so each loads 1/split_n of an A tile and a ring all-gather
    completes it (when the tile's rows divide); with one K step per output tile the A
    tile is loaded once per M tile. Every core writes its C tiles; with split-K each
    core of a K group stores its tm / split_k rows of the reduced tile.

    `layouts`: where A, B and C live; on a card that limits a core's requests in flight
    each tile's moves also cost their contiguous runs (`lpddr_runs`), and a core's whole
    K share is weighed as a tile too (a row-major A is then a run per tile row block,
    not a run per row and K tile).

    `a_shareable`: the cores splitting N may load slices of an A tile and all-gather it
    (spyre-tile does for a 2-D, untransposed A); else each loads the whole tile."""
    if split_b is not None and (split is None or batch % split_b):
        raise ValueError(f"a batch split of {split_b} needs a forced split and a batch "
                         f"it divides (batch {batch})")  # fmt: skip
    problem = _MatmulProblem(batch, m, elem, config, epilogue_bytes_per_elem, rhs_batched,
                             lx_bytes or config.lx_bytes, split_b, prologue,
                             head_width, layouts, a_shareable)  # fmt: skip
    capacity = problem.capacity
    best: MatmulPlan | None = None
    best_rank: tuple[float, float, int] | None = None
    for candidate in _candidates(problem, n, k, cores, split, paired, a_resident):
        plan = _estimate(problem, *candidate)
        if plan is not None and (best_rank is None or plan.rank < best_rank):
            best, best_rank = plan, plan.rank
    if best is None and head_width:  # no tile of whole heads fits: spyre-tile splits it
        return plan_matmul(batch, m, n, k, elem, config, cores, epilogue_bytes_per_elem,
                           split, lx_bytes, rhs_batched, paired, a_resident, split_b,
                           prologue, layouts=layouts, a_shareable=a_shareable)  # fmt: skip
    if best is None:
        raise ValueError(f"no matmul tiling of {batch}x{m}x{n}x{k} fits {capacity} bytes of LX")
    return best


@dataclass(frozen=True)
class _MatmulProblem:
    """What `plan_matmul` tiles, read by every candidate's estimate."""

    batch: int
    m: int
    elem: int
    config: SpyreConfig
    epilogue_bytes_per_elem: int
    rhs_batched: bool
    capacity: int
    split_b: int | None = None
    prologue: bool = False
    head_width: int | None = None
    layouts: MatmulLayouts | None = None
    a_shareable: bool = True

    @property
    def runs_cost(self) -> bool:
        """Tiles cost their runs: the card limits requests and the layouts are known."""
        return bool(self.layouts and self.config.lpddr_core_requests_in_flight)

    @property
    def rows(self) -> int:
        """The rows the M split divides: of one batch under a batch split."""
        return self.m if self.split_b else self.batch * self.m

    def m_tiles(self, sm: int, mc: int, tm: int) -> int:
        """M tiles (of tm rows) per core of the M split, mc rows each."""
        if self.split_b:  # each batch of the core's range: its share of the M tiles
            return self.batch // self.split_b * ceil_div(ceil_div(self.m, tm), sm)
        if self.batch == 1:
            return ceil_div(mc, tm)
        return ceil_div(self.batch * ceil_div(self.m, tm), sm)


def _candidates(p: _MatmulProblem, n: int, k: int, cores: int,
                split: tuple[int, int, int] | None, paired: bool, a_resident: bool):  # fmt: skip
    """Each (split, per-core extents, tile, resident) `plan_matmul` weighs, in its order."""
    config, rows, batch, m = p.config, p.rows, p.batch, p.m
    for sm, sn, sk in [split] if split else _splits(cores):
        if sm > rows or sn > ceil_div(n, 128 if paired else 64) or sk > ceil_div(k, 64):
            continue
        # A tile's rows never span two batches (spyre-tile walks batch x m tiles).
        mc = ceil_div(rows, sm) if batch == 1 or p.split_b else min(m, ceil_div(rows, sm))
        nc = ceil_div(n, sn)
        kc = ceil_div(k, sk)
        # The core's whole K share, when runs cost: a row-major A's rows whole.
        whole_k = (kc,) if p.runs_cost and kc % 64 == 0 and kc not in TILE_COLS else ()
        k_widths = TILE_COLS + whole_k
        for tm in TILE_ROWS:
            if tm > max(config.pe_rows, 2 * mc) or tm % sk or tm < min(mc, config.pe_rows):
                continue
            for tn in column_tiles(nc):
                if tn > max(64, 2 * nc) and not (paired and tn == 2 * TILE_COLS[0]):
                    continue
                if paired and (tn < 2 * TILE_COLS[0] or tn % (2 * TILE_COLS[0])):
                    # a pair's halves (one a corelet) are whole sticks
                    continue
                for tk in k_widths:
                    if tk > max(64, 2 * kc):
                        continue
                    for resident in (False, True) if a_resident else (False,):
                        yield (sm, sn, sk), (mc, nc, kc), (tm, tn, tk), resident


def _estimate(p: _MatmulProblem, split: tuple[int, int, int], extents: tuple[int, int, int],
              tile: tuple[int, int, int], resident: bool) -> MatmulPlan | None:  # fmt: skip
    """One candidate's plan with its estimated times, or None when it does not fit LX
    (or is an A_RESIDENT tiling with nothing to keep)."""
    (sm, sn, sk), (mc, nc, kc), (tm, tn, tk) = split, extents, tile
    batch, rows, elem, config = p.batch, p.rows, p.elem, p.config
    epilogue_bytes_per_elem, rhs_batched = p.epilogue_bytes_per_elem, p.rhs_batched
    lx = matmul_lx_bytes(tm, tn, tk, elem, epilogue_bytes_per_elem, sk)
    if resident:  # the A row block in place of two A tiles
        lx += (ceil_div(kc, tk) - 2) * tm * tk * elem
    if lx > p.capacity:
        return None
    m_tiles = p.m_tiles(sm, mc, tm)
    n_tiles = ceil_div(nc, tn)
    k_tiles = ceil_div(kc, tk)
    if resident and (k_tiles == 1 or n_tiles == 1):
        return None  # PLAIN loads A once per M tile; one N tile, too
    if resident and p.prologue and sk > 1:
        return None  # the fill's statistics need whole rows (spyre-tile)
    if p.head_width and nc % p.head_width == 0 and tn % p.head_width:
        # The core's columns are whole heads, so are tiles that do not overhang them:
        # in a tile of part of a head the view would run as a kernel of its own.
        return None
    steps = m_tiles * n_tiles * k_tiles
    flops = 2 * steps * tm * tn * tk
    share = p.a_shareable and sn > 1 and tm % sn == 0
    # One K step per output tile: the A tile is the same for every N
    # tile of an M tile, so it is loaded once per M tile (spyre-tile).
    a_loads = m_tiles if k_tiles == 1 else steps
    if resident:  # A_RESIDENT: each K step's A tile once per M tile
        a_loads = m_tiles * k_tiles
    a_bytes = a_loads * tm * tk * elem / (sn if share else 1)
    b_bytes = steps * tk * tn * elem
    # With split-K each core of a K group stores tm / sk rows of a tile.
    c_bytes = m_tiles * tm * n_tiles * tn * elem / sk
    sb = p.split_b or 1
    used = sb * sm * sn * sk
    # The N cohort sharing an A tile: sn cores sk apart (K innermost).
    gather = (ring_allgather_seconds(tm * tk * elem, sn, config, sk)
              if share else 0.0)  # fmt: skip
    reduce = ring_allreduce_seconds(tm * tn * 4, sk, config)
    # Its reduction holds the LS unit: never hidden behind other tiles.
    reduction = allreduce_reduction_cycles(tm * tn * 4, sk, config) / config.clock_hz
    tiles = m_tiles * n_tiles
    # An output tile's all-reduce overlaps the next tile of its M tile
    # (the accumulator alternates between two slots); the last does not.
    hidden = tiles - m_tiles if n_tiles > 1 else 0
    # Split-K with one K step: spyre-tile computes the tile stacked as
    # [sk, tm / sk, tn], so the PE rows hold tm / sk rows at a time.
    pe_rows = tm // sk if k_tiles == 1 and sk > 1 else tm
    blocks = tail_row_blocks(rows, tm, sn if share else 1, k_tiles, tiles,
                             sk, config) if batch == 1 else 1  # fmt: skip
    corelets = corelets_sharing(tn, config, p.head_width)
    last_step = pe_seconds(2 * tm * tn * tk, pe_rows, tn, config, p.head_width)
    # The card multicasts a tile several cores load at once: the sm
    # cores of an N column share each B tile (of one batch; under a
    # batch split, the M cores of a batch group), the sn cores of an M
    # row each A tile they do not split and gather.
    if p.split_b:
        b_cohort = sm if rhs_batched else sb * sm
    else:
        b_cohort = max(1, sm // batch) if rhs_batched else sm
    b_cohort = b_cohort if config.lpddr_multicast else 1
    a_cohort = sn if config.lpddr_multicast and not share else 1
    ddr = lpddr_seconds(used * (a_bytes / a_cohort + b_bytes / b_cohort),
                        used * c_bytes, max(a_bytes + b_bytes, c_bytes),
                        config)  # fmt: skip
    # Two slots keep two steps' loads in flight: step k + 2's load starts
    # once step k's matmul has freed its slot, so two steps take at least
    # a matmul, the LPDDR5 latency and a step's transfer (short streams
    # of small tiles are latency-bound, not bandwidth-bound).
    step_bytes = (a_bytes / a_loads if k_tiles > 1 and not resident else 0
                  ) + tk * tn * elem  # fmt: skip
    transfer = lpddr_seconds(used * step_bytes / b_cohort, 0.0, step_bytes,
                             config)  # fmt: skip
    edges = 0.0
    if p.runs_cost:
        # Each move holds its core's channel for its bytes or its requests (one per
        # run at least), whichever binds: a core's loads share its read channel, its
        # stores the write channel. The first step's loads and the last tile's store
        # overlap nothing, which a move of many runs makes matter.
        a_move, b_move, c_move = p.layouts.move_seconds(
            tm // sn if share else tm, tk, tn, tm // sk, elem, (blocks, corelets), config
        )
        ddr = max(ddr, a_loads * a_move + steps * b_move, tiles * c_move)
        transfer = max(transfer, (a_move if k_tiles > 1 and not resident else 0) + b_move)
        edges = a_move + b_move + c_move
    pe = pe_seconds(flops, pe_rows, tn, config, p.head_width)
    if blocks > 1 and corelets == 1:
        pe /= config.corelets_per_core  # the row blocks take turns
    # A step's matmul at the kernel's PE rate (with row blocks taking
    # turns, both corelets share every step, as in `pe`).
    step = config.lpddr_latency_s + transfer + pe / steps
    ddr = max(ddr, steps * step / 2)
    if k_tiles == 1 and n_tiles > 1:
        # Two B slots: tile j + 2's load waits for tile j's matmul and
        # all-reduce, so two tiles take at least one tile's B load plus
        # that chain; less the reductions, which reduce_s adds to all.
        b_tile = ddr_seconds(used * tk * tn * elem / b_cohort, config)
        ddr = max(ddr, tiles * ((b_tile + last_step + reduce - reduction) / 2))
    if blocks > 1:
        # Two slots: step k + 2's last B tile (a corelet's) is loaded
        # once step k's matmul is done, which waited for that tile of
        # step k to land: two steps take at least that chain.
        b_last = ddr_seconds(
            used * tk * tn * elem / b_cohort / corelets,
            config,
        )
        chain = b_last + config.lpddr_latency_s + pe / steps
        ddr = max(ddr, steps * chain / 2)
        # One output tile per core: its stores follow the PE arrays' work
        # but for the last step's later blocks.
        c_store = used * c_bytes / config.sustained_write_bandwidth
        ddr = max(ddr, pe - last_step + last_step / blocks + c_store)
    ring = a_loads * gather + hidden * reduce
    fill = 0.0
    if resident:
        # Each M tile's A row block lands (and is gathered) before its
        # first matmul: nothing overlaps the fill.
        block = a_bytes / m_tiles
        fill = m_tiles * (
            config.lpddr_latency_s
            + lpddr_seconds(used * block / a_cohort, 0.0, block, config)
            + k_tiles * gather
        )
        ring = hidden * reduce
    elif p.prologue and not prologue_stats_in_k_loop(tm // blocks, tk, sn if share else 1,
                                                     k_tiles, n_tiles, sk):  # fmt: skip
        # The statistics' loop over the core's rows of x (whole rows, split-K or not)
        # precedes each M tile's N loop: nothing overlaps it either.
        rows_x = tm * kc * sk * elem / (sn if share else 1)
        fill = m_tiles * (config.lpddr_latency_s
                          + lpddr_seconds(used * rows_x / a_cohort, 0.0, rows_x, config))  # fmt: skip
    return MatmulPlan(
        sm, sn, sk, tm, tn, tk,
        pe,
        ddr,
        ring,
        last_step / blocks + (tiles - hidden) * reduce + tiles * reduction
        + fill + edges,
        blocks,
        resident,
        p.split_b,
    )  # fmt: skip
