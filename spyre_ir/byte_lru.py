"""A least-recently-used map bounded by the bytes its entries are estimated to hold.

The host caches of compiled programs (the eager path's prepared kernels, the simulator's
replay recordings) use it, so a long run over many shapes keeps a bounded amount of host
memory. The bound is one setting for every such cache: ``SPYRE_HOST_CACHE_MB`` (MiB per
cache, default :data:`DEFAULT_MB`), read when a cache is made, or ``limit_bytes`` set on it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["DEFAULT_MB", "ByteLRU", "setting_bytes"]

DEFAULT_MB = 1024

_WARM_EVERY = 32
"""Of the entries a `cold_when_full` cache takes in full, one in this many goes in warm."""

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def setting_bytes() -> int:
    """The per-cache bound in bytes from ``SPYRE_HOST_CACHE_MB`` (a clear error if bad)."""
    text = os.environ.get("SPYRE_HOST_CACHE_MB", "").strip()
    if not text:
        return DEFAULT_MB << 20
    try:
        mb = float(text)
    except ValueError:
        mb = -1.0
    if mb < 0:
        raise ValueError(f"SPYRE_HOST_CACHE_MB must be a non-negative number of MiB, got {text!r}")
    return int(mb * (1 << 20))


class ByteLRU(Generic[K, V]):
    """`size(key, value)` estimates an entry's bytes when it is stored; storing evicts the
    least recently used entries until the total fits `limit_bytes` (the newest entry
    always stays, even alone over the bound). Thread-safe.

    `cold_when_full`: an entry stored into a full cache goes in as the least recently
    used one (its first hit promotes it), except every `_WARM_EVERY`-th, which goes in
    as the most recent so that entries nobody uses any more still age out. A working
    set walked in a cycle and larger than the bound (a decode step's weight tiles) then
    keeps most of what fits, hit every cycle, where plain LRU evicts each entry just
    before its next use."""

    def __init__(self, size: Callable[[K, V], int], limit_bytes: int | None = None,
                 cold_when_full: bool = False) -> None:  # fmt: skip
        self._size = size
        self.cold_when_full = cold_when_full
        self._full_puts = 0
        self.limit_bytes = setting_bytes() if limit_bytes is None else limit_bytes
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.evictions = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    def put(self, key: K, value: V) -> None:
        nbytes = max(0, int(self._size(key, value)))
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            full = self._bytes + nbytes > self.limit_bytes
            while self._bytes + nbytes > self.limit_bytes and self._entries:
                _key, (_value, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped
                self.evictions += 1
            self._entries[key] = (value, nbytes)
            self._bytes += nbytes
            if full and self.cold_when_full:
                self._full_puts += 1
                if self._full_puts % _WARM_EVERY:
                    self._entries.move_to_end(key, last=False)

    def pop(self, key: K) -> V | None:
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None:
                return None
            self._bytes -= entry[1]
            return entry[0]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        """The estimated bytes held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> Iterator[K]:
        return iter(list(self._entries))
