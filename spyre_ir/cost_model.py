"""Cost formulas the compiler uses to choose work divisions and tile sizes.

Every number comes from `SpyreConfig`; these are estimates for ranking choices, the
simulator measures. Units: seconds and bytes; the instruction timings the simulator
uses (at the end) are in core clock cycles.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from spyre_ir import op_facts
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


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pe_utilisation(tm: int, tn: int, config: SpyreConfig) -> float:
    """Fraction of the PE arrays a tm x tn output tile keeps busy: rows go to the
    array's rows, columns to its columns times the fp16 lanes."""
    rows = config.pe_rows
    cols = config.pe_cols * config.pe_fp16_lanes
    return (tm / (ceil_div(tm, rows) * rows)) * (tn / (ceil_div(tn, cols) * cols))


def corelets_sharing(tn: int, config: SpyreConfig, head_width: int | None = None) -> int:
    """Corelets that share a tile of `tn` columns: spyre-tile gives each tn / corelets
    of them, when that is whole PE column groups and, under an epilogue's head view of
    `head_width` columns a head, whole heads (a tile of whole heads whose share would
    split one, e.g. rotary's halves of a head, is one corelet's); else one corelet
    holds the tile."""
    corelets = config.corelets_per_core
    cols = config.pe_cols * config.pe_fp16_lanes
    if tn % (cols * corelets):
        return 1
    if head_width and tn % head_width == 0 and (tn // corelets) % head_width:
        return 1
    return corelets


def pe_seconds(flops: float, tm: int, tn: int, config: SpyreConfig,
               head_width: int | None = None) -> float:  # fmt: skip
    """One core's PE time for `flops` in tiles of tm x tn (see `corelets_sharing`), at
    the array's sustained rate (`pe_sustained_fraction` of its peak)."""
    corelets = config.corelets_per_core
    used = corelets_sharing(tn, config, head_width)
    peak = config.fp16_peak_flops_per_core * used / corelets * config.pe_sustained_fraction
    return flops / (peak * pe_utilisation(tm, tn, config))


def ddr_seconds(total_bytes: float, config: SpyreConfig) -> float:
    """All cores share LPDDR5 bandwidth; reads sustain `lpddr_read_efficiency` of it."""
    return total_bytes / config.sustained_read_bandwidth


def lpddr_seconds(
    read_bytes: float, write_bytes: float, core_bytes: float, config: SpyreConfig
) -> float:
    """LPDDR5 time of a kernel reading `read_bytes` and writing `write_bytes` from the
    card's memory (multicast boxes counted once) while its busiest core moves
    `core_bytes` in its busier direction: the shared bus at the sustained rates of each
    direction, or the core's own channel, limited by its requests in flight
    (spyre_ir/sim/lpddr.py, `move_cycles`)."""
    shared = (read_bytes / config.sustained_read_bandwidth
              + write_bytes / config.sustained_write_bandwidth)  # fmt: skip
    own = core_bytes / (config.lpddr_core_bytes_per_cycle * config.clock_hz)
    return max(shared, own)


def ring_allreduce_seconds(
    bytes_per_core: float, group: int, config: SpyreConfig, stride: int = 1
) -> float:
    """A ring all-reduce moves 2 (g - 1) / g of the buffer over each link, shared by
    `ring_link_sharers(stride)` groups (its reduction, `allreduce_reduction_cycles`,
    comes on top and holds the LS unit)."""
    if group <= 1:
        return 0.0
    sharers = ring_link_sharers(stride, config)
    return 2 * (group - 1) / group * bytes_per_core / config.ring_bandwidth * sharers


def allreduce_reduction_cycles(nbytes: float, group: int, config: SpyreConfig) -> float:
    """The reduction of an all-reduce of an `nbytes` buffer over `group` cores:
    ceil(log2(g)) rounds, each adding a partner's share of the buffer into the core's,

        ceil(log2(g)) * nbytes / g * allreduce_round_cycles_per_byte

    (CALIBRATED on the card's split-K matmuls, hardware.py). The load/store unit adds
    the partner's share as it arrives and issues nothing meanwhile, so the reduction
    does not overlap the unit's next moves. Zero for a group of one."""
    if group <= 1:
        return 0.0
    rounds = math.ceil(math.log2(group))
    return rounds * nbytes / group * config.allreduce_round_cycles_per_byte


def ring_allgather_seconds(
    full_bytes: float, group: int, config: SpyreConfig, stride: int = 1
) -> float:
    """A ring all-gather moves (g - 1) / g of the gathered buffer over each link, shared
    by `ring_link_sharers(stride)` groups."""
    if group <= 1:
        return 0.0
    sharers = ring_link_sharers(stride, config)
    return (group - 1) / group * full_bytes / config.ring_bandwidth * sharers


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
        for tm in TILE_ROWS:
            if tm > max(config.pe_rows, 2 * mc) or tm % sk or tm < min(mc, config.pe_rows):
                continue
            for tn in column_tiles(nc):
                if tn > max(64, 2 * nc) and not (paired and tn == 2 * TILE_COLS[0]):
                    continue
                if paired and (tn < 2 * TILE_COLS[0] or tn % (2 * TILE_COLS[0])):
                    # a pair's halves (one a corelet) are whole sticks
                    continue
                # The core's whole K share, when runs cost: a row-major A's rows whole.
                whole_k = (kc,) if p.runs_cost and kc % 64 == 0 and kc not in TILE_COLS else ()
                for tk in TILE_COLS + whole_k:
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


PIPELINE_DEPTH = 4
"""Tiles per core below which a row kernel cannot keep its units overlapped."""


def balanced_rows_tile(
    outer: int, inner: int, row_bytes: int, cores: int, lx_bytes: int, stick: int = 1
) -> tuple[int, int, int]:
    """(tile rows t, cores used, tiles per core) for a row kernel over `outer` x `inner`
    rows: a tile is t rows of the innermost row dim. One row of every buffer must fit
    in half of LX (the other half double-buffers); among the tile sizes that fit, the
    one whose busiest core covers the fewest rows wins (ties: enough tiles per core to
    pipeline, then bigger tiles, fewer per-tile costs), and only as many cores as have
    work are used, so no core streams a tile past the end while the others wait."""
    budget = lx_bytes // 2
    if row_bytes > budget:
        raise ValueError(f"one row needs {row_bytes} bytes; half of LX is {budget}")
    largest = min(inner, max(1, budget // max(row_bytes, 1)))
    best: tuple[int, int, int] | None = None
    best_key: tuple[int, int, int] | None = None
    for t in range(largest, 0, -1):
        if t < inner and t % stick:
            continue
        items = outer * ceil_div(inner, t)
        used = max(1, min(cores, items))
        per_core = ceil_div(items, used)
        used = ceil_div(items, per_core)
        # Fewest rows on the busiest core; then at least a few tiles per core, so
        # loads, compute and stores of successive tiles overlap; then bigger tiles.
        key = (per_core * t, max(0, PIPELINE_DEPTH - per_core), per_core)
        if best_key is None or key < best_key:
            best, best_key = (t, used, per_core), key
    if best is None:  # only whole sticks fit: one stick of rows
        t = min(inner, stick)
        items = outer * ceil_div(inner, t)
        used = max(1, min(cores, items))
        per_core = ceil_div(items, used)
        return t, ceil_div(items, per_core), per_core
    return best


def kernel_bound_seconds(
    flops: float, read_bytes: float, write_bytes: float, config: SpyreConfig
) -> float:
    """The fastest a kernel can be on the card as calibrated: the larger of its flops
    at the sustained PE rate and its bytes at the sustained stream rates of its
    read/write mix (reads and writes share the LPDDR5 bus):

        max(flops / sustained_fp16_flops,
            read_bytes / sustained_read_bandwidth + write_bytes / sustained_write_bandwidth)"""
    memory = (read_bytes / config.sustained_read_bandwidth
              + write_bytes / config.sustained_write_bandwidth)  # fmt: skip
    return max(flops / config.sustained_fp16_flops, memory)


def bandwidth_seconds(nbytes: float, config: SpyreConfig) -> float:
    return nbytes / config.lpddr_bandwidth


def roofline_seconds(flops: float, nbytes: float, config: SpyreConfig) -> float:
    return max(flops / config.fp16_peak_flops, nbytes / config.lpddr_bandwidth)


# ---------------------------------------------------------------- convolutions
@dataclass(frozen=True)
class ConvShape:
    """A 2-D convolution (a 1-D one has h = kh = 1): input (n, c, h, w), weights
    (o, c / groups, kh, kw), per-dim stride, padding and dilation."""

    n: int
    c: int
    h: int
    w: int
    o: int
    kh: int
    kw: int
    stride: tuple[int, int] = (1, 1)
    padding: tuple[int, int] = (0, 0)
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1

    @property
    def out(self) -> tuple[int, int]:
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        return ((self.h + 2 * ph - dh * (self.kh - 1) - 1) // sh + 1,
                (self.w + 2 * pw - dw * (self.kw - 1) - 1) // sw + 1)  # fmt: skip

    @property
    def m(self) -> int:
        """Output positions: n * oh * ow."""
        return self.n * self.out[0] * self.out[1]

    def flops(self) -> int:
        """2 * m * o * (c / groups) * kh * kw: one multiply-add per weight and output."""
        return 2 * self.m * self.o * (self.c // self.groups) * self.kh * self.kw

    def min_bytes(self, elem: int) -> int:
        """Input, weights and output, each once: what an ideal kernel moves."""
        weights = self.o * (self.c // self.groups) * self.kh * self.kw
        return elem * (self.n * self.c * self.h * self.w + weights + self.m * self.o)

    def im2col_bytes(self, elem: int) -> int:
        """The im2col buffer (n, c, kh * kw, oh * ow) of the lowering
        (lowering/aten_conv.py): written once by its row kernel, read once by the matmul."""
        return elem * self.m * self.kh * self.kw * self.c


def conv_roofline_seconds(conv: ConvShape, elem: int, config: SpyreConfig) -> float:
    """The convolution's roofline: its flops at the fp16 peak or its minimal bytes at
    the LPDDR5 bandwidth, whichever is longer."""
    return roofline_seconds(conv.flops(), conv.min_bytes(elem), config)


def conv_im2col_bound_seconds(conv: ConvShape, elem: int, config: SpyreConfig) -> float:
    """The fastest the im2col form can be as calibrated: the input read and the buffer
    written (the kernel that builds it), the buffer and weights read and the output
    written (the matmul), at the sustained rates (`kernel_bound_seconds` of each kernel,
    summed)."""
    weights = conv.o * (conv.c // conv.groups) * conv.kh * conv.kw * elem
    buffer = conv.im2col_bytes(elem)
    build = kernel_bound_seconds(0, conv.n * conv.c * conv.h * conv.w * elem, buffer, config)
    matmul = kernel_bound_seconds(conv.flops(), buffer + weights, conv.m * conv.o * elem, config)
    return build + matmul


# ---------------------------------------------------------------- instruction timing
#
# Durations of single L3 instructions, in core clock cycles: the simulator
# (spyre_ir/sim/engine.py) takes every duration from here. Sourced numbers and the model
# assumptions (sfp_*, lpddr_latency_s, ring_hop_latency_cycles, ls_issue_cycles) both
# come from `SpyreConfig`; docs/simulator.md lists them all.

# The cost class of each op is its `cost` in spyre_ir/op_facts.py (COST_CLASSES there
# names each class's formula); these sets of short names ("exp") derive from it.
SFP_SIMPLE = frozenset(
    op_facts.names(cost="elementwise", prefixed=False)
    | op_facts.names(cost="simple", prefixed=False)
    | op_facts.names(cost="fill", prefixed=False)
)
"""Ops an SFP pass does in one simple pass: its own simple ops, and the PE array's
elementwise ops and fills."""
SFP_SPECIAL = op_facts.names(cost="special", prefixed=False)
SFP_ACTIVATIONS = op_facts.names(cost="activation", prefixed=False)
SFP_REDUCTIONS = op_facts.names(cost="reduction", prefixed=False)
SFP_NORMS = op_facts.names(cost="norm", prefixed=False)


def cost_class(kind: str) -> str | None:
    """The cost class (op_facts.COST_CLASSES) of the op `kind` ('spyre.exp' or 'exp'),
    None for an op without facts."""
    facts = op_facts.facts_of(kind)
    return facts.cost if facts else None


def pe_fill_cycles(config: SpyreConfig) -> int:
    """Fill/drain latency of one PE instruction: pe_rows + pe_cols cycles (16)."""
    return config.pe_rows + config.pe_cols


def pe_matmul_cycles(m: int, n: int, k: int, config: SpyreConfig, batch: int = 1) -> int:
    """One corelet's PE array on a (batch x) m x n x k matmul tile:

        batch * ceil(m / pe_rows) * ceil(n / (pe_cols * pe_fp16_lanes)) * k
            + pe_rows + pe_cols

    Each cycle the 8 x 8 array with 8 fp16 lanes per PE does an 8-row x 64-column
    outer-product step of one k, at `pe_sustained_fraction` of that rate (the first
    term is divided by it, rounded up); the last term fills and drains the array."""
    rows = ceil_div(m, config.pe_rows)
    cols = ceil_div(n, config.pe_cols * config.pe_fp16_lanes)
    steps = batch * rows * cols * k
    return math.ceil(steps / config.pe_sustained_fraction) + pe_fill_cycles(config)


def pe_elementwise_cycles(elements: int, config: SpyreConfig) -> int:
    """An elementwise tile op on one corelet's PE array:

        ceil(elements / (pe_rows * pe_cols * pe_fp16_lanes)) + pe_rows + pe_cols

    (512 elements per cycle, plus the fill/drain latency)."""
    per_cycle = config.pe_rows * config.pe_cols * config.pe_fp16_lanes
    return ceil_div(elements, per_cycle) + pe_fill_cycles(config)


def sfp_cost_factor(kind: str, config: SpyreConfig) -> int:
    """Passes over the data of the SFP op `kind` ('spyre.exp' or 'exp'):

    simple functions `sfp_cost_simple`; special functions (exp, tanh, erf, rsqrt,
    reciprocal, div ...) `sfp_cost_special`; gelu/silu a special function and a simple
    one; reductions `sfp_cost_reduction` (var: two of them); softmax `sfp_cost_softmax`;
    layer_norm/rms_norm `sfp_cost_norm`. Anything else counts as simple."""
    cost = cost_class(kind)
    factors = {
        "special": config.sfp_cost_special,
        "activation": config.sfp_cost_special + config.sfp_cost_simple,
        "reduction": config.sfp_cost_reduction,
        "variance": 2 * config.sfp_cost_reduction,
        "softmax": config.sfp_cost_softmax,
        "norm": config.sfp_cost_norm,
    }
    if cost in factors:
        return factors[cost]
    return config.sfp_cost_simple


# ---- sorting (issue 19): spyre.sort / spyre.argsort over one row whole in LX
SFP_SORTING = op_facts.names(cost="sort", prefixed=False)


def sort_passes(n: int, k: int, config: SpyreConfig) -> int:
    """SFP passes over a row of `n` elements to find its first `k` in sorted order: the
    cheaper of a bitonic network, ceil(log2 n) (ceil(log2 n) + 1) / 2 compare-exchange
    stages of two simple passes each (a min and a max of lane pairs), and `k`
    max-extractions, each a reduction over the row and a simple pass that masks the
    winner out. Small k over long rows (sampling) extracts, full sorts use the network."""
    depth = max(n - 1, 0).bit_length()
    network = depth * (depth + 1) // 2 * 2 * config.sfp_cost_simple
    extract = k * (config.sfp_cost_reduction + config.sfp_cost_simple)
    return max(min(network, extract), config.sfp_cost_simple)


def sort_cycles(row: int, k: int, elements: int, config: SpyreConfig) -> int:
    """One corelet's SFP on a sorting tile of `elements` input elements in rows of `row`:

    ceil(elements / sfp_lanes) * sort_passes(row, k)"""
    return ceil_div(elements, config.sfp_lanes) * sort_passes(row, k, config)


def sfp_cycles(kind: str, elements: int, config: SpyreConfig) -> int:
    """One corelet's special-function pipeline on a tile of `elements` elements (the
    largest operand: a reduction reads all of its input):

        ceil(elements / sfp_lanes) * sfp_cost_factor(kind)"""
    return ceil_div(elements, config.sfp_lanes) * sfp_cost_factor(kind, config)


def box_sticks(extents: Sequence[int], shape: Sequence[int], stick_dim: int, per_stick: int) -> int:
    """Sticks a box of `extents` covers in a tensor of `shape` stored in sticks of
    `per_stick` elements along `stick_dim`, the box starting at a stick boundary and
    clipped to the tensor:

        ceil(min(e[s], n[s]) / per_stick) * prod(min(e[d], n[d]) for d != s)

    A rank-0 tensor is one stick. (An edge tile that overhangs the tensor moves only the
    sticks inside it; a core whose tile lies past the end still spends this time, as
    every core runs the same program.)"""
    count = 1
    for d, (e, n) in enumerate(zip(extents, shape)):
        inside = min(e, n)
        count *= ceil_div(inside, per_stick) if d == stick_dim else inside
    return count


def lpddr_transfer_cycles(nbytes: float, active_cores: int, config: SpyreConfig) -> float:
    """Cycles one core's load/store unit streams `nbytes` (whole sticks) from or to
    LPDDR5 while `active_cores` cores stream at once (processor sharing of the card's
    bandwidth - the contention):

        nbytes / (lpddr_bandwidth / active_cores) * clock_hz"""
    return nbytes * active_cores / config.lpddr_bytes_per_cycle


def lpddr_cycles(nbytes: float, active_cores: int, config: SpyreConfig) -> float:
    """Latency + transfer of one LPDDR5 move: lpddr_latency_s * clock_hz +
    lpddr_transfer_cycles(nbytes, active_cores). The simulator keeps the load/store
    unit's LPDDR5 port busy for the transfer only (several requests in flight) and makes
    the result available after both."""
    return config.lpddr_latency_cycles + lpddr_transfer_cycles(nbytes, active_cores, config)


def ring_link_sharers(stride: int, config: SpyreConfig) -> int:
    """Collectives sharing each ring link a collective of cores `stride` apart crosses:
    the `stride` groups interleaved with it (`SpyreConfig.ring_ports_shared`; 1 when
    the links are not shared). Groups of adjacent cores share none."""
    return max(1, stride) if config.ring_ports_shared else 1


def ring_allreduce_cycles(nbytes: float, group: int, config: SpyreConfig, stride: int = 1) -> float:
    """A ring all-reduce of an `nbytes` buffer over `group` cores `stride` apart:

        2 (g - 1) / g * nbytes / ring_bytes_per_cycle * sharers
            + 2 (g - 1) * stride * ring_hop_latency_cycles

    (reduce-scatter then all-gather: 2 (g - 1) steps of nbytes / g, each crossing
    `stride` hops, on links shared by `ring_link_sharers` groups), plus the reduction's
    adds (`allreduce_reduction_cycles`). Zero for a group of one."""
    if group <= 1:
        return 0.0
    steps = 2 * (group - 1)
    sharers = ring_link_sharers(stride, config)
    return (steps / group * nbytes / config.ring_bytes_per_cycle * sharers
            + steps * stride * config.ring_hop_latency_cycles
            + allreduce_reduction_cycles(nbytes, group, config))  # fmt: skip


def ring_allgather_cycles(
    full_bytes: float, group: int, config: SpyreConfig, stride: int = 1
) -> float:
    """A ring all-gather of parts stacking to `full_bytes` over `group` cores `stride`
    apart:

        (g - 1) / g * full_bytes / ring_bytes_per_cycle * sharers
            + (g - 1) * stride * ring_hop_latency_cycles

    (links shared by `ring_link_sharers` groups). Zero for a group of one."""
    if group <= 1:
        return 0.0
    steps = group - 1
    sharers = ring_link_sharers(stride, config)
    return (steps / group * full_bytes / config.ring_bytes_per_cycle * sharers
            + steps * stride * config.ring_hop_latency_cycles)  # fmt: skip


def ring_bytes_sent(nbytes: float, group: int, allreduce: bool) -> float:
    """Bytes one core sends in a ring collective: 2 (g - 1) / g * nbytes for an
    all-reduce of an nbytes buffer, (g - 1) / g * nbytes for an all-gather of nbytes."""
    if group <= 1:
        return 0.0
    return (2 if allreduce else 1) * (group - 1) / group * nbytes


def ls_rearrange_cycles(nbytes: int, config: SpyreConfig) -> int:
    """An LX -> LX rearrangement on the load/store unit (transpose, slice, pad, concat,
    broadcast of a tile), one stick per cycle:

        ceil(nbytes / stick_bytes)    (nbytes: the bytes written)"""
    return ceil_div(nbytes, config.stick_bytes)


def ls_issue_cycles(config: SpyreConfig) -> int:
    """Cycles the load/store unit spends issuing one instruction (a move, a ring
    collective or a rearrangement) to its port, before the port starts it:
    `ls_issue_cycles` (a model assumption). The port's own time comes on top."""
    return config.ls_issue_cycles


def cycles_to_us(cycles: float, config: SpyreConfig) -> float:
    return cycles / config.clock_hz * 1e6


def host_transfer_s(nbytes: int, config: SpyreConfig) -> float:
    """One host <-> card DMA transfer of `nbytes` over the host link (one direction):

        host_transfer_latency_s + nbytes / host_link_bandwidth

    Zero for zero bytes (no transfer is issued)."""
    if nbytes <= 0:
        return 0.0
    return config.host_transfer_latency_s + nbytes / config.host_link_bandwidth


def device_copy_s(nbytes: int, config: SpyreConfig) -> float:
    """An on-card LPDDR5 -> LPDDR5 copy of `nbytes`: every byte is read and written, at
    the sustained rates of each direction (spyre_ir/sim/lpddr.py),

        nbytes / sustained_read_bandwidth + nbytes / sustained_write_bandwidth"""
    return nbytes / config.sustained_read_bandwidth + nbytes / config.sustained_write_bandwidth
