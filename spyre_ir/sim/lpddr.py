"""The simulated card's memory system: what a move between LPDDR5 and LX costs.

Geometry (which sticks each core's box touches) and the timing of a move, in core clock
cycles, for all the program's cores moving their boxes at once (they run one program
with one timing, see spyre_ir/sim/engine.py). docs/simulator.md states the model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import NoneAttr

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.hardware import ELEMENT_BYTES, SpyreConfig


def stick_geometry(memory: D.DdrType, config: SpyreConfig) -> tuple[int, int]:
    """(stick dim, elements per stick) of a tensor in LPDDR5: from its stick layout,
    else the default layout (the last dim, 128 bytes of elements)."""
    layout = memory.layout
    if not isinstance(layout, NoneAttr):
        return layout.stick_dim.data, layout.device_sizes.data[-1].data
    elem = ELEMENT_BYTES[element_type_name(memory.element_type)]
    return len(memory.get_shape()) - 1, config.stick_bytes // elem


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
    moves (`largest`) and the sum over cores (`total`)."""

    __slots__ = ("largest", "total")

    def __init__(self, largest: int, total: int):
        self.largest, self.total = largest, total


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
    return BoxMoves(largest, total)


def move_cycles(
    boxes: BoxMoves, nominal: int, load: bool, cores: int, config: SpyreConfig
) -> float:
    """Cycles of one core's LPDDR5 port for a move of `boxes` (never less than the
    `nominal` tile clipped to the tensor), all cores moving at once."""
    most = max(nominal, boxes.largest)
    return most * config.stick_bytes * cores / config.lpddr_bytes_per_cycle


def gather_cycles(nbytes: int, rows: int, cores: int, config: SpyreConfig) -> float:
    """Cycles of one core's LPDDR5 port for a gather of `rows` rows (`nbytes`)."""
    return nbytes * cores / config.lpddr_bytes_per_cycle
