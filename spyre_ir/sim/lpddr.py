"""The simulated card's memory system: what a move between LPDDR5 and LX costs.

Geometry (which sticks each core's box touches) and the timing of a move, in core clock
cycles, for all the program's cores moving their boxes at once (they run one program
with one timing, see spyre_ir/sim/engine.py). docs/simulator.md states the model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import NoneAttr

from spyre_ir import lpddr_runs
from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.hardware import ELEMENT_BYTES, SpyreConfig
from spyre_ir.layout import StickLayout, default_layout
from spyre_ir.lpddr_runs import box_runs


def stick_geometry(memory: D.DdrType, config: SpyreConfig) -> tuple[int, int]:
    """(stick dim, elements per stick) of a tensor in LPDDR5: from its stick layout,
    else the default layout (the last dim, 128 bytes of elements)."""
    layout = memory.layout
    if not isinstance(layout, NoneAttr):
        return layout.stick_dim.data, layout.device_sizes.data[-1].data
    elem = ELEMENT_BYTES[element_type_name(memory.element_type)]
    return len(memory.get_shape()) - 1, config.stick_bytes // elem


def memory_layout(memory: D.DdrType) -> StickLayout:
    """Where a tensor in LPDDR5 lives: its stick layout, else torch-spyre's default
    layout of its shape (the last dim in sticks, the first dim just outside them)."""
    elem = ELEMENT_BYTES[element_type_name(memory.element_type)]
    shape = memory.get_shape()
    layout = memory.layout
    if isinstance(layout, NoneAttr):
        return default_layout(shape, elem)
    return layout.to_layout(shape, elem)


def move_runs(memory: D.DdrType, extents: Sequence[int]) -> int:
    """Contiguous runs a box of `extents` covers in the LPDDR5 tensor `memory`
    (`box_runs`); a rank-0 tensor is one stick, so one run."""
    if not memory.get_shape():
        return 1
    return box_runs(extents, memory_layout(memory))


def box_sticks_per_core(
    offsets: Sequence[object],
    extents: Sequence[int],
    shape: Sequence[int],
    stick_dim: int,
    per_stick: int,
    cores: int,
) -> tuple[int, int]:
    """(the most any core moves, the sum over cores): the sticks inside the tensor that
    each core's box touches. Offsets the same on every core (0-d) are counted in Python,
    the others as [cores] arrays."""
    uniform, varying = 1, []
    for d, (o, e, n) in enumerate(zip(offsets, extents, shape)):
        if isinstance(o, np.ndarray) and o.ndim:
            varying.append((d, o, e, n))
            continue
        o = int(o)
        lo, hi = min(max(o, 0), n), min(max(o + e, 0), n)
        if d == stick_dim:
            uniform *= -(-hi // per_stick) - lo // per_stick if hi > lo else 0
        else:
            uniform *= hi - lo
    if not varying:
        return uniform, uniform * cores
    count: object = uniform
    for d, o, e, n in varying:
        first, last = int(o.min()), int(o.max())
        if first >= 0 and last + e <= n and (d != stick_dim or not (o % per_stick).any()):
            # Every core's box lies inside (stick-aligned): all move the same.
            count = count * (-(-e // per_stick) if d == stick_dim else e)
            continue
        lo, hi = np.minimum(np.maximum(o, 0), n), np.minimum(np.maximum(o + e, 0), n)
        if d == stick_dim:
            inside = np.where(hi > lo, -(-hi // per_stick) - lo // per_stick, 0)
        else:
            inside = hi - lo
        count = count * inside
    counts = np.broadcast_to(np.asarray(count, dtype=np.int64), (cores,))
    return int(counts.max()), int(counts.sum())


class BoxMoves:
    """What the cores of a program move in one load or store: the most sticks any core
    moves (`largest`), the sum over cores (`total`), the sticks LPDDR5 serves once each
    box that several cores move at once is read once (`unique`), and the widest cohort
    of cores sharing one box: its size and its span on the ring (hops from its first
    core to its last)."""

    __slots__ = ("largest", "total", "unique", "cohort", "span")

    def __init__(self, largest: int, total: int, unique: int, cohort: int = 1, span: int = 0):
        self.largest, self.total, self.unique = largest, total, unique
        self.cohort, self.span = cohort, span


def _row_keys(columns: list[np.ndarray]) -> np.ndarray:
    """One int64 per core, equal where the cores' offsets are (a 1-D unique is a third
    of the time of numpy's unique over rows, called once per move); rows themselves
    when the mixed radix would not fit in 62 bits."""
    key = np.zeros(len(columns[0]), np.int64)
    radix = 1
    for c in columns:
        low = int(c.min())
        span = int(c.max()) - low + 1
        radix *= span
        if radix >= 1 << 62:
            return np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)[1].reshape(-1)
        key = key * span + (c - low)
    return key


def box_moves(
    offsets: Sequence[object],
    extents: Sequence[int],
    shape: Sequence[int],
    stick_dim: int,
    per_stick: int,
    cores: int,
) -> BoxMoves:
    """The boxes of one move on every core (offsets: ints or [cores] arrays)."""
    largest, total = box_sticks_per_core(offsets, extents, shape, stick_dim, per_stick, cores)
    varying = [o for o in offsets if isinstance(o, np.ndarray) and o.ndim]
    if cores == 1 or not total:
        return BoxMoves(largest, total, total)
    if not varying:  # every core moves the same box: one cohort of all cores
        return BoxMoves(largest, total, total // cores, cores, cores - 1)
    keys = _row_keys([np.broadcast_to(o, (cores,)) for o in varying])
    if (keys[1:] > keys[:-1]).all():  # a box per core, in core order (rows of a tile)
        return BoxMoves(largest, total, total)
    _, first, inverse, counts = np.unique(
        keys,
        return_index=True,
        return_inverse=True,
        return_counts=True,
    )
    if len(first) == cores:
        return BoxMoves(largest, total, total)
    ids = np.arange(cores)
    inverse = inverse.reshape(-1)
    spans = np.zeros(len(first), np.int64)
    np.maximum.at(spans, inverse, ids)
    lows = np.full(len(first), cores, np.int64)
    np.minimum.at(lows, inverse, ids)
    # Each distinct box is read once: its share of the total (boxes of one move have
    # the same sticks but where the tensor clips them).
    unique = total * len(first) // cores
    return BoxMoves(largest, total, unique, int(counts.max()), int((spans - lows).max()))


READ, WRITE = 0, 1
"""A core's two LPDDR5 channels: requests out and data in (loads, gathers), data out
(stores). They stream concurrently; the card's bus they share does not."""


def move_cycles(
    boxes: BoxMoves, nominal: int, load: bool, cores: int, config: SpyreConfig, runs: int = 1
) -> tuple[float, float, int]:
    """(bus cycles, channel cycles, channel) of one move of `boxes` (never less than the
    `nominal` tile clipped to the tensor), all the program's cores moving at once:

        bus     = card bytes / (lpddr_bytes_per_cycle x efficiency of the direction)
        channel = the core's bytes / lpddr_core_bytes_per_cycle

    The bus is the card's LPDDR5, shared by all cores and both directions (reads
    sustain `lpddr_read_efficiency`, writes `lpddr_write_efficiency`: the bus turning
    around between them). Card bytes are the core's bytes times the cores, or with
    multicast the distinct boxes' bytes only (a box several cores load is read once).
    The channel is the core's own: its requests in flight over the latency bound what
    one core streams in each direction, and every member of a multicast cohort takes
    its copy in through its own channel, so a box shared by many cores costs each of
    them its bytes (scheduler: a move holds the bus for `bus` and its channel for
    max(bus, channel)).

    The channel also holds at most `lpddr_core_requests_in_flight` requests, and a
    request never spans two of the box's `runs` (contiguous pieces of device memory):
    a box of many short runs takes at least runs x latency / requests cycles of it,
    however few its bytes."""
    most = max(nominal, boxes.largest) * config.stick_bytes
    if config.lpddr_multicast and load:
        card = max(boxes.unique * config.stick_bytes, most)
    else:
        card = most * cores
    efficiency = config.lpddr_read_efficiency if load else config.lpddr_write_efficiency
    bus = card / (config.lpddr_bytes_per_cycle * efficiency)
    return bus, channel_cycles(most, runs, config), READ if load else WRITE


def channel_cycles(nbytes: float, runs: int, config: SpyreConfig) -> float:
    """Cycles one core's channel takes for `nbytes` in `runs` contiguous pieces
    (`lpddr_runs.core_channel_cycles`: the compiler's tiling costs moves the same way)."""
    return lpddr_runs.core_channel_cycles(nbytes, runs, config)


def gather_cycles(nbytes: int, rows: int, cores: int, config: SpyreConfig) -> tuple:
    """(bus cycles, channel cycles, channel) of a gather of `rows` rows (`nbytes`):
    reads of the card's shared bandwidth and of the core's read channel."""
    bus = nbytes * cores / (config.lpddr_bytes_per_cycle * config.lpddr_read_efficiency)
    return bus, nbytes / config.lpddr_core_bytes_per_cycle, READ


def reserve(
    ready: float, bus: float, own: float, channel_free: float
) -> tuple[float, float, float]:
    """(bus start, end, channel start) of a move ready to start at `ready` (its bus
    free, its LX operands there) that takes `bus` cycles of the card's bus and `own`
    of its core's channel, whose earlier moves free it at `channel_free`.

    The bus and the channel are two rate limits on the move's bytes, reserved each in
    its own order: the channel takes them no earlier than the bus starts serving them,
    and the bus starts a move at most its own `bus` cycles ahead of the channel (the
    core's requests in flight hold one move ahead, not more). So a stream alternating
    bus-heavy moves (distinct boxes of every core) with channel-heavy ones (a box the
    whole cohort takes) runs at the larger of its two sums, not at their sum; a stream
    of one kind is timed as before. The move ends when both are done."""
    start = ready if ready > channel_free - bus else channel_free - bus
    own_start = start if start > channel_free else channel_free
    end = start + bus if start + bus > own_start + own else own_start + own
    return start, end, own_start


def scatter_cycles(nbytes: int, rows: int, cores: int, config: SpyreConfig) -> tuple:
    """(bus cycles, channel cycles, channel) of a scatter of `rows` rows (`nbytes`):
    writes of the card's shared bandwidth and of the core's write channel."""
    bus = nbytes * cores / (config.lpddr_bytes_per_cycle * config.lpddr_write_efficiency)
    return bus, nbytes / config.lpddr_core_bytes_per_cycle, WRITE
