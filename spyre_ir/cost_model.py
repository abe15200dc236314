"""Cost formulas the compiler uses to choose work divisions and tile sizes.

Every number comes from `SpyreConfig`; these are estimates for ranking choices, the
simulator measures. Units: seconds and bytes; the instruction timings the simulator
uses (at the end) are in core clock cycles.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from spyre_ir import op_facts
from spyre_ir.hardware import SpyreConfig


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
