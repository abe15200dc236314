"""Data races on memory that views of several element types share (docs/ktir.md,
"Views that alias").

Pointer arguments and absolute addresses address one memory: two views that overlap
share storage, as aliasing C pointers do. The lowering holds the buffer of each
element type apart (ktir_address), which is the kernel's meaning exactly when no
access races. The reference interpreter records every element each tile loads or
stores through such a buffer (the elements actually touched) and `RaceLog.check`
raises a located error naming both accesses when one of these happens on a byte of
the shared memory:

* a byte stored by one tile and loaded or stored by another (nothing orders two
  tiles' memory accesses);
* within a tile, a load through one type's buffer after a store through another's
  (the lowering keeps the buffers apart, so the load would not see the store);
* within a tile, stores through two types' buffers (the later would not overwrite
  the earlier);
* one store writing an element twice with different values (KTDP.td: "The `store`
  op does not define an ordering among writes").

`repeated_writes` checks the last rule on any buffer, for a store through an indirect
tile (a scatter), whose index views may name an element twice: on one tile or on two
(the same value twice is one write's meaning, and is fine).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation

from spyre_ir.diagnostics import op_location
from spyre_ir.interp.ktir_sets import KtirError


@dataclass(frozen=True)
class Alias:
    """A pointer's place in the memory region it shares with pointers of other types."""

    name: str
    region: int
    """The region's byte address."""
    byte_start: int
    """The pointer's element 0, in bytes of the same address space."""
    width: int
    """Its element's bytes."""


_LOAD, _STORE = 0, 1
_WHAT = {
    "tiles": "a data race between tiles (nothing orders two tiles' accesses to memory)",
    "read": (
        "a read after a store through a view of another element type, an order the "
        "lowering does not keep (it holds each type's buffer apart)"
    ),
    "write": (
        "two stores through views of different element types, an order the lowering "
        "does not keep (it holds each type's buffer apart)"
    ),
}


@dataclass
class RaceLog:
    """The accesses of a run to buffers that alias (by the interpreter's buffer index)."""

    aliases: dict[int, Alias]
    tiles: int
    ops: list[tuple[Operation, int]] = field(default_factory=list)
    """Per access: its op and its buffer."""
    parts: list[tuple[np.ndarray, np.ndarray, int, int]] = field(default_factory=list)
    """Per access: granules, tiles, sequence number, kind."""

    def __post_init__(self) -> None:
        widths: dict[int, int] = {}
        for a in self.aliases.values():
            widths[a.region] = math.gcd(widths.get(a.region, 0), a.width)
        self.granule = widths
        self.regions = {r: k for k, r in enumerate(sorted(widths))}

    def access(
        self,
        buffer: int,
        op: Operation,
        address: np.ndarray,
        ok: np.ndarray,
        data: np.ndarray | None = None,
    ) -> None:
        """Record that `op` loads (`data` None) or stores `data` at the elements
        `address` of `buffer` where `ok` (leading axis: tiles, or 1 for all)."""
        alias = self.aliases[buffer]
        rest = np.broadcast_shapes(address.shape, ok.shape)[1:]
        address = np.broadcast_to(address, (self.tiles, *rest))
        ok = np.broadcast_to(ok, (self.tiles, *rest))
        tile, *_ = np.nonzero(ok)
        element = address[ok].astype(np.int64)
        if data is not None:
            self._repeated_writes(op, alias, tile, element, np.broadcast_to(data, ok.shape)[ok])
        g = self.granule[alias.region]
        first = (alias.byte_start - alias.region + element * alias.width) // g
        span = alias.width // g
        granules = (first[:, None] + np.arange(span)).reshape(-1)
        key = granules + (self.regions[alias.region] << 44)
        seq = len(self.ops)
        self.ops.append((op, buffer))
        kind = _LOAD if data is None else _STORE
        self.parts.append((key, np.repeat(tile, span).astype(np.int64), seq, kind))

    def _repeated_writes(
        self, op: Operation, alias: Alias, tile: np.ndarray, element: np.ndarray, data
    ) -> None:
        if element.size < 2:
            return
        key, values, clash = _clashes(tile * (1 << 44) + element, np.asarray(data))
        if not clash.size:
            return
        i = clash[0]
        t, e = divmod(int(key[i]), 1 << 44)
        raise KtirError(
            f"'{op.name}' on tile {t} writes element {e} of %{alias.name} (byte "
            f"{alias.byte_start + e * alias.width}) twice with different values "
            f"({values[i]} and {values[i + 1]}), {clash.size} such writes in all: a race "
            "(KTDP.td: 'The store op does not define an ordering among writes')",
            op,
        )

    def check(self) -> None:
        """A KtirError naming the first race's two accesses, if any access races."""
        if not self.parts:
            return
        sizes = [p[0].size for p in self.parts]
        key = np.concatenate([p[0] for p in self.parts])
        tile = np.concatenate([p[1] for p in self.parts])
        seq = np.repeat(np.array([p[2] for p in self.parts], np.int64), sizes)
        kind = np.repeat(np.array([p[3] for p in self.parts], np.int64), sizes)
        buf = np.array([self.ops[s][1] for s in range(len(self.ops))], np.int64)[seq]
        found = _between_tiles(key, tile, kind) or _within_tiles(key, tile, seq, kind, buf)
        if found is None:
            return
        what, first, second, count = found
        raise self._error(what, (key[first], tile[first], seq[first]),
                          (key[second], tile[second], seq[second]), count)  # fmt: skip

    def _error(self, what: str, one, two, count: int) -> KtirError:
        (k1, t1, s1), (k2, t2, s2) = sorted([one, two], key=lambda r: r[2])
        op1, b1 = self.ops[int(s1)]
        op2, b2 = self.ops[int(s2)]
        a1, a2 = self.aliases[b1], self.aliases[b2]
        g = self.granule[a1.region]
        byte = a1.region + (int(k2) & ((1 << 44) - 1)) * g
        names = ", ".join(
            sorted({f"%{a.name}" for a in self.aliases.values() if a.region == a1.region})
        )
        _, line, col = op_location(op1, "")
        verb1 = "stores" if self._stores(s1) else "loads"
        verb2 = "stores" if self._stores(s2) else "loads"
        return KtirError(
            f"'{op2.name}' on tile {t2} {verb2[:-1]}s byte {byte} of the memory {names} "
            f"share (element {(byte - a2.byte_start) // a2.width} of %{a2.name}), which "
            f"'{op1.name}' at {line}:{col} on tile {t1} {verb1} (element "
            f"{(byte - a1.byte_start) // a1.width} of %{a1.name}): {_WHAT[what]}; "
            f"{count * g} bytes race in all",
            op2,
        )

    def _stores(self, s) -> bool:
        return self.parts[int(s)][3] == _STORE


def _groups(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start of each run of equal keys (sorted), and each element's run."""
    change = np.zeros(keys[0].size - 1, bool)
    for key in keys:
        change |= key[1:] != key[:-1]
    starts = np.concatenate([[0], np.nonzero(change)[0] + 1])
    run = np.repeat(np.arange(starts.size), np.diff(np.append(starts, keys[0].size)))
    return starts, run


def _between_tiles(key, tile, kind):
    """A byte one tile stores and another accesses: (what, store, other, racing bytes)."""
    order = np.lexsort((tile, key))
    k, t, s = key[order], tile[order], kind[order] == _STORE
    starts, run = _groups(k)
    low = np.minimum.reduceat(t, starts)
    high = np.maximum.reduceat(t, starts)
    stored = np.maximum.reduceat(s.astype(np.int64), starts) > 0
    bad = np.nonzero(stored & (low != high))[0]
    if not bad.size:
        return None
    members = np.nonzero(run == bad[0])[0]
    store = members[s[members]][0]
    other = members[t[members] != t[store]][0]
    return "tiles", order[store], order[other], bad.size


def _within_tiles(key, tile, seq, kind, buf):
    """Within a tile, a load through one type's buffer after a store through another's,
    or stores through two: (what, earlier, later, racing bytes)."""
    order = np.lexsort((seq, tile, key))
    k, t, q, s, b = key[order], tile[order], seq[order], kind[order] == _STORE, buf[order]
    starts, run = _groups(k, t)
    big = np.iinfo(np.int64).max
    first_store = np.minimum.reduceat(np.where(s, q, big), starts)[run]
    store_low = np.minimum.reduceat(np.where(s, b, big), starts)[run]
    store_high = np.maximum.reduceat(np.where(s, b, -1), starts)[run]
    writes = s & (store_low != store_high)
    reads = ~s & (q > first_store) & (b != store_low)
    for what, bad in (("write", writes), ("read", reads)):
        hit = np.nonzero(bad)[0]
        if hit.size:
            i = hit[0]
            members = np.nonzero(run == run[i])[0]
            stores = members[s[members] & (b[members] != b[i])]
            if what == "read":
                stores = stores[q[stores] < q[i]]
            return what, order[stores[0]], order[i], np.unique(run[hit]).size
    return None


def repeated_writes(
    op: Operation, name: str, address: np.ndarray, ok: np.ndarray, data: np.ndarray, dtype
) -> None:
    """A KtirError when the store `op` writes some element of buffer `name` (flat
    `address`, where `ok`; leading axis the tiles, or 1 for all) twice with different
    values of `data`, on one tile or on two."""
    element = address[ok].astype(np.int64)
    if element.size < 2:
        return
    tile = np.nonzero(ok)[0]
    order = np.argsort(element, kind="stable")
    element, values, clash = _clashes(element, np.asarray(data[ok]).astype(dtype), order)
    tile = tile[order]
    if not clash.size:
        return
    i = clash[0]
    where = (
        f"on tile {tile[i]}" if tile[i] == tile[i + 1] else f"on tiles {tile[i]} and {tile[i + 1]}"
    )
    raise KtirError(
        f"'{op.name}' through an indirect tile writes element {element[i]} of {name} "
        f"twice with different values ({values[i]} and {values[i + 1]}, {where}), "
        f"{clash.size} such writes in all: a race (KTDP.td: 'The store op does not "
        "define an ordering among writes')",
        op,
    )


def _clashes(
    key: np.ndarray, values: np.ndarray, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`key` and `values` sorted by key (stably, or in `order`), and the positions i
    where key i and i + 1 are one element written with different values (compared
    bit for bit: NaN equals its own bits, -0 differs from +0)."""
    if order is None:
        order = np.argsort(key, kind="stable")
    key, values = key[order], values[order]
    bits = values.view(f"u{values.dtype.itemsize}") if values.dtype.kind == "f" else values
    return key, values, np.nonzero((key[1:] == key[:-1]) & (bits[1:] != bits[:-1]))[0]
