"""The attention kernel's tiling plan (spyre-tile, passes/tile_attention.py): how the
work of one `spyre.attention` is cut into units and key tiles, what a plan needs of LX,
and what it costs on the card, so that the cheapest plan that fits is chosen.

A unit is `heads` query heads of one key/value head and `rows` query positions of one
batch. Its keys are split over `split_kv` consecutive cores (each walks `key_tiles`
tiles of `keys` keys, then the cores combine their partial softmax states on the ring);
the core groups that result own `units_per_group` consecutive units each. A key tile is
computed in `keys // chunk` chunks of `chunk` keys: separate buffers, so the PE array
reduces the chunks elementwise (max, add) and the special-function pipeline - 17
passes per element for a reduction (hardware.py, sfp_cost_reduction) - folds only one
chunk's width per row, and the chunks' matmuls and exponentials spread over both
corelets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import Float32Type, IntegerType
from xdsl.ir import Attribute

from spyre_ir import cost_model
from spyre_ir.dialects import spyre
from spyre_ir.hardware import ELEMENT_BYTES, SpyreConfig

F32 = Float32Type()
I64 = IntegerType(64)
I1 = IntegerType(1)
# Key tiles are whole sticks of every mask element type (128 i1 per stick).
KEY_STEP = 128
# Chunks are one PE pass wide (64 columns: pe_cols x pe_fp16_lanes), the narrowest
# matmul output that wastes no column of the array.
CHUNK = 64


@dataclass(frozen=True)
class AttentionPlan:
    """A tiling of attention over the cores (see the module docstring)."""

    heads: int
    rows: int
    keys: int
    split_kv: int
    groups: int
    units_per_group: int
    key_tiles: int  # key tiles each core walks per unit
    chunk: int = CHUNK
    # The core's K and V (key_tiles tiles of one key/value head) are loaded into LX
    # once, before its units, which all read them (see `resident_possible`).
    resident_kv: bool = False

    @property
    def cores(self) -> int:
        return self.groups * self.split_kv

    @property
    def chunks(self) -> int:
        return self.keys // self.chunk


def nbytes(shape: tuple[int, ...], element: Attribute) -> int:
    return math.prod(shape) * ELEMENT_BYTES[spyre.element_type_name(element)]


def mask_tile(op: spyre.AttentionOp, extents: tuple[int, ...]) -> tuple[int, ...]:
    """The mask's tile for a score tile of `extents` (its broadcast dims stay 1)."""
    assert op.mask is not None
    _, h, s, _ = spyre.shape_of(op.q)
    full = (0, h, s, spyre.shape_of(op.k)[2])
    return tuple(x if n == f and f > 1 else 1
                 for x, n, f in zip(extents, spyre.shape_of(op.mask), full))  # fmt: skip


def lx_need(op: spyre.AttentionOp, plan: AttentionPlan) -> int:
    """Bytes of LX the kernel's buffers take, all counted as live at once. A buffer
    written in a loop that runs more than once gets two slots (spyre-double-buffer
    prefetches loads and alternates compute buffers across iterations)."""
    d = spyre.shape_of(op.q)[3]
    e = spyre.shape_of(op.v)[3]
    elt, out = spyre.element_of(op.q), spyre.element_of(op.result)
    tile, w = (1, plan.heads, plan.rows), plan.chunk
    chunk = (*tile, w)
    kv_chunk = nbytes((1, 1, d, w), elt) + nbytes((1, 1, w, e), elt)
    per_chunk = 0 if plan.resident_kv else kv_chunk
    per_chunk += 3 * nbytes(chunk, F32) + nbytes(chunk, elt)  # s, s - m, exp, p
    per_chunk += 2 * nbytes((1, 1, 1, w), I64) + nbytes((1, 1, plan.rows, w), I1)
    if op.mask is not None:
        m = mask_tile(op, chunk)
        per_chunk += nbytes(m, spyre.element_of(op.mask)) + nbytes(m, F32)
    per_key = plan.chunks * per_chunk + 2 * nbytes(chunk, F32)  # the max and sum trees
    per_key += 8 * nbytes((*tile, 1), F32) + nbytes((1, 1, plan.rows, 1), I64)
    per_unit = nbytes((*tile, d), elt) + 2 * nbytes((*tile, e), F32) + nbytes((*tile, e), out)
    per_unit += 8 * nbytes((*tile, 1), F32)
    key_slots = 2 if plan.key_tiles > 1 else 1
    unit_slots = 2 if plan.units_per_group > 1 else 1
    carried = nbytes((*tile, e), F32) + 4 * nbytes((*tile, 1), F32)
    resident = plan.key_tiles * plan.chunks * kv_chunk if plan.resident_kv else 0
    return unit_slots * (per_unit + key_slots * per_key) + carried + resident + KEY_STEP * 64


def units_per_item(op: spyre.AttentionOp, rows: int, heads: int) -> int:
    """Consecutive units on one (batch, key/value head)."""
    _, h, s, _ = spyre.shape_of(op.q)
    kvh = spyre.shape_of(op.k)[1]
    return (h // kvh // heads) * cost_model.ceil_div(s, rows)


def resident_possible(op: spyre.AttentionOp, plan: AttentionPlan) -> bool:
    """Whether K and V can stay in LX across a core's units: it walks more than one,
    and all of them are on one key/value head (its share of the units lies inside one
    head's)."""
    upi = units_per_item(op, plan.rows, plan.heads)
    return plan.units_per_group > 1 and upi % plan.units_per_group == 0


def split(op: spyre.AttentionOp, cores: int, heads: int, rows: int, keys: int,
          split_kv: int) -> AttentionPlan:  # fmt: skip
    """The plan of a unit shape and a key split: the keys of a unit in equal shares
    of whole tiles, the units spread over the core groups that remain."""
    b, h, s, _ = spyre.shape_of(op.q)
    kvh, t = spyre.shape_of(op.k)[1:3]
    units = b * kvh * (h // kvh // heads) * cost_model.ceil_div(s, rows)
    tiles = cost_model.ceil_div(max(t, 1), keys)
    key_tiles = cost_model.ceil_div(tiles, split_kv)
    split_kv = cost_model.ceil_div(tiles, key_tiles)
    groups = min(units, max(1, cores // split_kv))
    chunk = min(CHUNK, keys)
    return AttentionPlan(heads, rows, keys, split_kv, groups,
                         cost_model.ceil_div(units, groups), key_tiles, chunk)  # fmt: skip


def candidates(op: spyre.AttentionOp, cores: int) -> list[AttentionPlan]:
    """Every plan of the search: the heads of a group together or one by one, query
    tiles from the whole sequence down to 16 rows, key tiles of 128 to 512 keys, and
    the keys split over up to as many cores as units leave idle."""
    b, h, s, _ = spyre.shape_of(op.q)
    kvh, t = spyre.shape_of(op.k)[1:3]
    g = h // kvh
    key_cap = max(KEY_STEP, cost_model.ceil_div(max(t, 1), KEY_STEP) * KEY_STEP)
    rows_options = sorted({min(s, r) for r in (512, 256, 128, 64, 32, 16)}, reverse=True)
    if s <= 8:
        rows_options = [s]
    heads_options = sorted({g, *(n for n in (4, 2, 1) if g % n == 0)}, reverse=True)
    plans: list[AttentionPlan] = []
    for heads in heads_options:
        for rows in rows_options:
            units = b * kvh * (g // heads) * cost_model.ceil_div(s, rows)
            for keys in (512, 256, 128):
                if keys > key_cap:
                    continue
                tiles = cost_model.ceil_div(max(t, 1), keys)
                most = max(1, min(tiles, cores // units if units < cores else 1))
                splits = sorted({1, most, *(n for n in (2, 4, 8, 16, 32) if n <= most)})
                plans += [split(op, cores, heads, rows, keys, n) for n in splits]
    return list(dict.fromkeys(plans))


# Plans estimated within this share of the fastest count as equally fast.
TIME_TOLERANCE = 0.1


def choose_plan(op: spyre.AttentionOp, cores: int, config: SpyreConfig) -> AttentionPlan:
    """Of the plans that fit LX and are about as fast as the fastest, the one LPDDR5
    serves the fewest bytes (`served_bytes`: decode reads each key once, not once per
    query head), then the fastest, then the one on fewer cores; then, explicitly, the
    one of more heads, more rows and more keys per tile and fewer key splits (the order
    `candidates` lists them in). The copies of a multicast box each core takes in
    through its own read channel are in the time (`lpddr_cycles`), not in the bytes:
    they cost the card no read. Then K and V stay resident in LX (`resident_kv`) where
    that fits, serves fewer bytes and is as fast by the same measure. Residency
    changes what is read, not the tiling, so it is weighed for the chosen tiling only:
    a search over resident plans too favours many small units, which the estimate
    prices below what the simulator runs them at (the 8B layer's causal prefill 512
    attention alone: 1 head x 16 rows resident 253.4 us, the chosen 4 x 32 resident
    215.2 us, streaming 205.3 us)."""
    fitting = [p for p in candidates(op, cores) if lx_need(op, p) <= config.lx_bytes]
    if not fitting:
        raise ValueError("no attention tile fits in LX")
    times = {p: estimate_cycles(op, p, config) for p in fitting}
    fast = min(times.values()) * (1 + TIME_TOLERANCE)
    chosen = min((p for p in fitting if times[p] <= fast),
                 key=lambda p: (sum(served_bytes(op, p)), times[p], p.cores, -p.heads,
                                -p.rows, -p.keys, p.split_kv))  # fmt: skip
    twin = replace(chosen, resident_kv=True)
    if (resident_possible(op, chosen) and lx_need(op, twin) <= config.lx_bytes
            and sum(served_bytes(op, twin)) < sum(served_bytes(op, chosen))
            and estimate_cycles(op, twin, config) <= fast):  # fmt: skip
        return twin
    return chosen


def core_bytes(op: spyre.AttentionOp, plan: AttentionPlan) -> int:
    """Bytes one core loads: its units' Q tiles and key tiles (K and V; once for all
    its units when resident)."""
    d, e = spyre.shape_of(op.q)[3], spyre.shape_of(op.v)[3]
    elt, p = spyre.element_of(op.q), plan
    key_bytes = nbytes((1, 1, p.keys, d + e), elt)
    kv_loads = 1 if p.resident_kv else p.units_per_group
    return (
        p.units_per_group * nbytes((1, p.heads, p.rows, d), elt)
        + kv_loads * p.key_tiles * key_bytes
    )


def moved_bytes(op: spyre.AttentionOp, plan: AttentionPlan) -> int:
    """Bytes all the cores load, every copy of a multicast box counted (the
    simulator's `delivered_bytes` but for the output)."""
    return plan.cores * core_bytes(op, plan)


def estimate_cycles(op: spyre.AttentionOp, plan: AttentionPlan, config: SpyreConfig) -> float:
    """Cycles of the kernel under `plan`. A core's key tiles stream through the
    stages of passes/tile_attention.py (QK^T on one PE array, p V and the statistics on
    the other, the special-function pipelines between them, LPDDR5 feeding them), so
    the busiest stage sets the pace; one tile's pass through all of them fills the
    pipeline, and each unit ends with its ring combine."""
    d, e = spyre.shape_of(op.q)[3], spyre.shape_of(op.v)[3]
    p, w = plan, plan.chunk
    n, c = p.heads * p.rows * w, p.chunks  # elements of a chunk's score tile
    elementwise = cost_model.pe_elementwise_cycles(n, config)
    masked = (2 if op.mask is not None else 0) + (3 if op.causal_offset else 0)
    qk = c * (cost_model.pe_matmul_cycles(p.rows, w, d, config, p.heads)
              + (3 + masked) * elementwise)  # fmt: skip
    pv = c * (cost_model.pe_matmul_cycles(p.rows, e, w, config, p.heads) + 2 * elementwise)
    exp = cost_model.sfp_cycles("exp", n, config) + cost_model.sfp_cycles("cast", n, config)
    reduce = cost_model.sfp_cycles("sum", n, config)
    sfp = (c * exp) / 2 + reduce
    tiles = p.units_per_group * p.key_tiles
    served = served_bytes(op, plan)
    ddr = lpddr_cycles(op, plan, config, served)
    fill = qk + reduce + exp + pv + config.lpddr_latency_cycles
    if p.resident_kv:
        # The K and V fill precedes the first unit's Q: no compute overlaps it.
        elt = spyre.element_of(op.q)
        kv = p.key_tiles * nbytes((1, 1, p.keys, d + e), elt)
        reads = served[0] - nbytes(spyre.shape_of(op.q), elt)
        card = reads / (config.lpddr_bytes_per_cycle * config.lpddr_read_efficiency)
        fill += max(card, kv / config.lpddr_core_bytes_per_cycle)
    combine = 0.0
    if p.split_kv > 1:
        state = nbytes((1, p.heads, p.rows, e + 2), F32)
        combine = p.units_per_group * cost_model.ring_allreduce_cycles(state, p.split_kv, config)
    return max(tiles * max(qk, pv, sfp), ddr) + fill + combine


def lpddr_cycles(op: spyre.AttentionOp, plan: AttentionPlan, config: SpyreConfig,
                 served: tuple[int, int] | None = None) -> float:  # fmt: skip
    """LPDDR5 cycles of the kernel: the card's reads and writes (`served_bytes`, or
    `served` when the caller has them), or one core's own stream where that is longer
    (each member of a multicast cohort takes its copy in through its own read channel,
    so the copies are part of `core_bytes`)."""
    reads, writes = served or served_bytes(op, plan)
    per_cycle = config.lpddr_bytes_per_cycle
    card = (reads / (per_cycle * config.lpddr_read_efficiency)
            + writes / (per_cycle * config.lpddr_write_efficiency))  # fmt: skip
    return max(card, core_bytes(op, plan) / config.lpddr_core_bytes_per_cycle)


def served_bytes(op: spyre.AttentionOp, plan: AttentionPlan) -> tuple[int, int]:
    """(reads, writes) LPDDR5 serves under `plan` (the simulator's `lpddr_bytes`):
    a box several cores load at once is read once - the key tiles of one key/value head
    the core groups walk side by side - and Q and the output move once."""
    b, h, s, d = spyre.shape_of(op.q)
    kvh, t = spyre.shape_of(op.k)[1:3]
    e = spyre.shape_of(op.v)[3]
    p, elt = plan, spyre.element_of(op.q)
    g, q_blocks = h // kvh, cost_model.ceil_div(s, plan.rows)
    units = b * kvh * (g // p.heads) * q_blocks
    key_bytes = nbytes((1, 1, p.keys, d + e), elt)
    kv_reads = 0
    if p.resident_kv:
        # One fill per core before its units: the groups on one key/value head load
        # its tiles side by side, a multicast cohort.
        items = {
            u // units_per_item(op, p.rows, p.heads) for u in range(0, units, p.units_per_group)
        }
        kv_reads = len(items) * p.split_kv * p.key_tiles * key_bytes
    for ui in range(0 if p.resident_kv else p.units_per_group):
        # The cores of a wave that load one key tile are a multicast cohort: one read.
        wave = [u // (q_blocks * (g // p.heads)) for u in range(ui, units, p.units_per_group)]
        kv_reads += len(set(wave)) * p.split_kv * p.key_tiles * key_bytes
    q_bytes = nbytes((b, h, s, d), elt)
    return kv_reads + q_bytes, nbytes((b, h, s, e), spyre.element_of(op.result))
