"""Versions of arrays whose owner announces every change to them.

A simulator replay keeps the tiles it decodes from an input between runs
(`spyre_ir.sim.replay.cached_tile`) only when it can tell whether the input changed
under a tile since. An array `declare`d here carries that promise: every write to it is
announced with `changed(array, bounds)`, the box of elements written (or None: any of
them). The runtime declares a launch's kept images (a weight's read-only values; a KV
cache's writable buffer, `runtime/recipe.py`) and announces its own writes (a KV row
store, `runtime/row_store.py`); the kernel interpreter announces its stores and
scatters into DDR (`KernelMachine.store`, `.scatter`), so a program that writes a
declared cache keeps it truthful.

Each array keeps the boxes of its last `_KEPT_CHANGES` changes: a tile decoded at
version v is still good at a later version if none of the changes after v touched its
box (a KV cache changes one row a step; its other tiles stay).
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Sequence

import numpy as np

Bounds = tuple[tuple[int, int], ...]
"""Per dim [low, high) of the elements a change or a tile covers."""

_KEPT_CHANGES = 64


class Version:
    """A declared array's current version and the boxes of its recent changes."""

    __slots__ = ("number", "floor", "changes")

    def __init__(self) -> None:
        self.number = 0
        self.floor = 0  # changes after this one are all in `changes`
        self.changes: deque[tuple[int, Bounds]] = deque()

    def change(self, bounds: Bounds | None) -> None:
        self.number += 1
        if bounds is None:  # anything may have changed: no earlier tile stays good
            self.changes.clear()
            self.floor = self.number
            return
        self.changes.append((self.number, bounds))
        if len(self.changes) > _KEPT_CHANGES:
            self.floor = self.changes.popleft()[0]

    def changes_since(self, number: int, bounds: Bounds) -> list[Bounds] | None:
        """The boxes of the changes after version `number` that touch `bounds`, latest
        first; None when they are not known (forgotten, or a change of anything)."""
        if number == self.number:
            return []
        if number < self.floor:
            return None
        touching = []
        for at, box in reversed(self.changes):
            if at <= number:
                break
            if all(lo < b_hi and b_lo < hi for (lo, hi), (b_lo, b_hi) in zip(box, bounds)):
                touching.append(box)
        return touching


_DECLARED: dict[int, tuple[weakref.ref, Version]] = {}
"""id(array) -> (the array, weakly; its version) for declared arrays."""


def version_of(array: np.ndarray) -> Version | None:
    """The version of `array` if it is declared (the array itself, not another that
    took its id)."""
    known = _DECLARED.get(id(array))
    return known[1] if known is not None and known[0]() is array else None


def declare(array: np.ndarray) -> None:
    """Promise that every change to `array`, while it lives, is announced with `changed`
    (a read-only array: it keeps its values unless its owner says otherwise)."""
    if version_of(array) is None:
        key = id(array)
        _DECLARED[key] = (weakref.ref(array, lambda _, key=key: _DECLARED.pop(key, None)),
                          Version())  # fmt: skip


def changed(array: np.ndarray, bounds: Bounds | None = None) -> None:
    """Elements of `array` within `bounds` (None: any) were written; a no-op for an
    array nobody declared."""
    version = version_of(array)
    if version is not None:
        version.change(bounds)


def box_bounds(offsets: Sequence[object], extents: Sequence[int], shape: Sequence[int]) -> Bounds:
    """The elements every core's box [offset, offset + extent) covers, per dim (an
    offset is an int or one per core), clipped to the tensor."""
    bounds = []
    for offset, extent, size in zip(offsets, extents, shape):
        first = np.asarray(offset)
        lo, hi = int(first.min()), int(first.max()) + extent
        bounds.append((max(lo, 0), min(hi, size)))
    return tuple(bounds)


def index_bounds(index: tuple, shape: Sequence[int]) -> Bounds | None:
    """The elements a numpy basic or integer-array index `index` of an array of `shape`
    reaches, per dim; None when it cannot say cheaply (a mask, an Ellipsis, a negative
    position)."""
    if len(index) > len(shape):
        return None
    bounds = []
    for entry, size in zip((*index, *[slice(None)] * (len(shape) - len(index))), shape):
        if isinstance(entry, slice):
            start, stop, step = entry.indices(size)
            bounds.append((start, stop) if step == 1 else (0, size))
            continue
        positions = np.asarray(entry)
        if positions.dtype.kind not in "iu" or positions.size == 0:
            return None
        lo, hi = int(positions.min()), int(positions.max()) + 1
        if lo < 0:
            return None
        bounds.append((lo, min(hi, size)))
    return tuple(bounds)
