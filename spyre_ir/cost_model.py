"""Cost formulas the compiler uses to choose work divisions and tile sizes.

Every number comes from `SpyreConfig`; these are estimates for ranking choices, the
simulator measures. Units: seconds and bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from spyre_ir.hardware import SpyreConfig

TILE_ROWS = (8, 16, 32, 64, 128, 256, 512)
TILE_COLS = (64, 128, 256, 512, 1024, 2048)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pe_utilisation(tm: int, tn: int, config: SpyreConfig) -> float:
    """Fraction of the PE arrays a tm x tn output tile keeps busy: rows go to the
    array's rows, columns to its columns times the fp16 lanes."""
    rows = config.pe_rows
    cols = config.pe_cols * config.pe_fp16_lanes
    return (tm / (ceil_div(tm, rows) * rows)) * (tn / (ceil_div(tn, cols) * cols))


def pe_seconds(flops: float, tm: int, tn: int, config: SpyreConfig) -> float:
    """One core's PE time for `flops` in tiles of tm x tn."""
    return flops / (config.fp16_peak_flops_per_core * pe_utilisation(tm, tn, config))


def ddr_seconds(total_bytes: float, config: SpyreConfig) -> float:
    """All cores share LPDDR5 bandwidth."""
    return total_bytes / config.lpddr_bandwidth


def ring_allreduce_seconds(bytes_per_core: float, group: int, config: SpyreConfig) -> float:
    """A ring all-reduce moves 2 (g - 1) / g of the buffer over each link."""
    if group <= 1:
        return 0.0
    return 2 * (group - 1) / group * bytes_per_core / config.ring_bandwidth


def ring_allgather_seconds(full_bytes: float, group: int, config: SpyreConfig) -> float:
    """A ring all-gather moves (g - 1) / g of the gathered buffer over each link."""
    if group <= 1:
        return 0.0
    return (group - 1) / group * full_bytes / config.ring_bandwidth


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
    """All-gathers of shared A tiles: they overlap PE and LPDDR5 work."""
    reduce_s: float = 0.0
    """Split-K all-reduces, after the K loop: they do not overlap."""

    @property
    def shares_a(self) -> bool:
        """The cores that split N load one slice of each A tile and all-gather it."""
        return self.split_n > 1 and self.tm % self.split_n == 0

    @property
    def cores(self) -> int:
        return self.split_m * self.split_n * self.split_k

    @property
    def estimate_s(self) -> float:
        return max(self.pe_s, self.ddr_s, self.ring_s) + self.reduce_s

    @property
    def rank(self) -> tuple[float, float, int]:
        """Lowest estimate first; among equals, less total work, then more cores (a
        tie means the bound is shared, and more cores leave more headroom)."""
        return (round(self.estimate_s, 12), round(self.pe_s + self.ddr_s, 12), -self.cores)


def matmul_lx_bytes(tm: int, tn: int, tk: int, elem: int, extra_per_elem: int) -> int:
    """Double-buffered A and B tiles, an f32 accumulator, the output tile and
    `extra_per_elem` bytes per output element for epilogue buffers."""
    return 2 * (tm * tk + tk * tn) * elem + tm * tn * (4 + elem + extra_per_elem)


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
) -> MatmulPlan:
    """The (split, tile) with the lowest estimated time that fits LX.

    Rows of all batches form the M side; K is split only with a ring all-reduce of the
    partial f32 tiles. Each core streams its B tiles from LPDDR5; the cores that split N
    need the same A tiles, so each loads 1/split_n of an A tile and a ring all-gather
    completes it (when the tile's rows divide). Every core writes its C tiles; with
    split-K each core of a K group stores the reduced tile (the same values)."""
    best: MatmulPlan | None = None
    rows = batch * m
    capacity = lx_bytes or config.lx_bytes
    for sm, sn, sk in [split] if split else _splits(cores):
        if sm > rows or sn > ceil_div(n, 64) or sk > ceil_div(k, 64):
            continue
        mc = ceil_div(rows, sm)
        nc = ceil_div(n, sn)
        kc = ceil_div(k, sk)
        for tm in TILE_ROWS:
            if tm > max(8, 2 * mc) or tm % sk:
                continue
            for tn in TILE_COLS:
                if tn > max(64, 2 * nc):
                    continue
                for tk in TILE_COLS:
                    if tk > max(64, 2 * kc):
                        continue
                    lx = matmul_lx_bytes(tm, tn, tk, elem, epilogue_bytes_per_elem)
                    if lx > capacity:
                        continue
                    m_tiles, n_tiles = ceil_div(mc, tm), ceil_div(nc, tn)
                    k_tiles = ceil_div(kc, tk)
                    steps = m_tiles * n_tiles * k_tiles
                    flops = 2 * steps * tm * tn * tk
                    share = sn > 1 and tm % sn == 0
                    a_bytes = steps * tm * tk * elem / (sn if share else 1)
                    b_bytes = steps * tk * tn * elem
                    c_bytes = m_tiles * tm * n_tiles * tn * elem
                    used = sm * sn * sk
                    gather = ring_allgather_seconds(tm * tk * elem, sn, config) if share else 0.0
                    plan = MatmulPlan(
                        sm, sn, sk, tm, tn, tk,
                        pe_seconds(flops, tm, tn, config),
                        ddr_seconds(used * (a_bytes + b_bytes + c_bytes), config),
                        steps * gather,
                        m_tiles * n_tiles * ring_allreduce_seconds(tm * tn * 4, sk, config),
                    )  # fmt: skip
                    if best is None or plan.rank < best.rank:
                        best = plan
    if best is None:
        raise ValueError(
            f"no matmul tiling of {batch}x{m}x{n}x{k} fits {capacity} bytes of LX"
        )
    return best


def rows_tile(
    rows: int, row_bytes: int, config: SpyreConfig, cores: int, lx_bytes: int | None = None
) -> tuple[int, int]:
    """(tile rows, cores used) for a row kernel: as many rows per tile as fit in half
    of LX (double buffering) and no more than a core's share."""
    budget = (lx_bytes or config.lx_bytes) // 2
    used = max(1, min(cores, rows))
    share = ceil_div(rows, used)
    t = max(1, min(share, budget // max(row_bytes, 1)))
    if t * row_bytes > budget:
        raise ValueError(f"one row needs {row_bytes} bytes; half of LX is {budget}")
    return t, used


def bandwidth_seconds(nbytes: float, config: SpyreConfig) -> float:
    return nbytes / config.lpddr_bandwidth


def roofline_seconds(flops: float, nbytes: float, config: SpyreConfig) -> float:
    return max(flops / config.fp16_peak_flops, nbytes / config.lpddr_bandwidth)

