"""The card's LPDDR5 as a sparse byte store.

The runtime's allocator maps regions (a VF segment is 12 GB) and places blocks inside
them; the simulator and the runtime read and write bytes through views. A region is an
anonymous private memory mapping made with MAP_NORESERVE: the kernel commits a page
only when it is first written, so a mapped but untouched region costs no host RAM and
no swap reservation. Reading an untouched page reads zeros.
"""

from __future__ import annotations

import mmap

import numpy as np

from spyre_ir.hardware import DEFAULT_CONFIG, SpyreConfig

# MAP_NORESERVE keeps the kernel from reserving swap for the whole region up front;
# Python exposes it on Linux only. Without it a mapping is still lazily committed.
_LAZY_FLAGS = (mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0)
               | getattr(mmap, "MAP_NORESERVE", 0))  # fmt: skip


class LpddrAccessError(IndexError):
    """A read or write outside a mapped region."""


class Lpddr5:
    """Sparse LPDDR5 of one card: regions of bytes, addressed as (region, offset).

    `capacity` is the usable LPDDR5 (after ECC) of the config; the mapped regions
    together never exceed it."""

    def __init__(self, config: SpyreConfig = DEFAULT_CONFIG) -> None:
        self.config = config
        self.capacity = config.lpddr_usable_bytes
        self._regions: dict[int, np.ndarray] = {}
        self._backings: dict[int, mmap.mmap] = {}

    @property
    def mapped_bytes(self) -> int:
        """Bytes of all mapped regions (reserved, whether or not written)."""
        return sum(r.size for r in self._regions.values())

    def regions(self) -> dict[int, int]:
        """Mapped region id -> its size in bytes."""
        return {region: r.size for region, r in self._regions.items()}

    def map_region(self, region: int, nbytes: int) -> None:
        """Map `nbytes` of zeroed LPDDR5 as `region`. Host memory is committed page by
        page as the region is written."""
        if region in self._regions:
            raise ValueError(f"LPDDR5 region {region} is already mapped")
        if nbytes <= 0:
            raise ValueError(f"LPDDR5 region {region}: size must be positive, got {nbytes}")
        if self.mapped_bytes + nbytes > self.capacity:
            raise MemoryError(
                f"mapping LPDDR5 region {region} of {nbytes} bytes exceeds the card's "
                f"{self.capacity} usable bytes ({self.mapped_bytes} already mapped)"
            )
        backing = mmap.mmap(-1, nbytes, flags=_LAZY_FLAGS)
        self._regions[region] = np.frombuffer(backing, dtype=np.uint8)
        self._backings[region] = backing

    def unmap_region(self, region: int) -> None:
        """Forget `region`; its host pages go back to the OS once no view of it is
        alive (a view keeps its mapping alive, so stale views stay safe to touch)."""
        if self._regions.pop(region, None) is None:
            raise ValueError(f"LPDDR5 region {region} is not mapped")
        self._backings.pop(region, None)

    def discard(self, region: int, offset: int, nbytes: int) -> None:
        """Give the host pages lying wholly inside `nbytes` at `offset` back to the OS
        (bytes nobody reads again: they read as zeros afterwards)."""
        self.view(region, offset, nbytes)  # checks the range
        page = mmap.PAGESIZE
        start, end = -(-offset // page) * page, (offset + nbytes) // page * page
        if end > start and hasattr(mmap, "MADV_DONTNEED"):
            self._backings[region].madvise(mmap.MADV_DONTNEED, start, end - start)

    def view(self, region: int, offset: int, nbytes: int) -> np.ndarray:
        """A writable uint8 view of `nbytes` at `offset` in `region`."""
        try:
            data = self._regions[region]
        except KeyError:
            raise LpddrAccessError(f"LPDDR5 region {region} is not mapped") from None
        if offset < 0 or nbytes < 0 or offset + nbytes > data.size:
            raise LpddrAccessError(
                f"LPDDR5 access of {nbytes} bytes at offset {offset} is outside region "
                f"{region} of {data.size} bytes"
            )
        return data[offset : offset + nbytes]

    def read(self, region: int, offset: int, nbytes: int) -> np.ndarray:
        """A copy of `nbytes` at `offset` in `region`."""
        return self.view(region, offset, nbytes).copy()

    def write(self, region: int, offset: int, data: np.ndarray | bytes) -> None:
        """Write the bytes of `data` (any array: its raw bytes in C order) at `offset`."""
        if isinstance(data, (bytes, bytearray)):
            raw = np.frombuffer(data, dtype=np.uint8)
        else:
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        self.view(region, offset, raw.size)[:] = raw
