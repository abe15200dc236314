"""The LPDDR5 allocator: regions of the card's memory, 128-byte-aligned blocks inside.

It caches the way torch's CUDA caching allocator does (c10/cuda/CUDACachingAllocator):
a freed block stays reserved for reuse and is merged with free neighbours; a request
takes the best-fitting free block (smallest that fits) and splits off the rest;
`empty_cache` gives wholly free regions back. Two memory modes, after torch-spyre's
allocator notes (SpyreAllocator_VFmode):

- "vf": a pool of `vf_segments` segments of `vf_segment_bytes`; each segment is one
  region, mapped when first needed; every block lives inside a segment.
- "pf": one region per tensor, sized to it; at most `pf_region_limit` regions.

A block is named by a region + offset descriptor (`DeviceBlock`), never by a pointer.
"""

from __future__ import annotations

import bisect
import operator
import threading
from dataclasses import dataclass

from spyre_ir.hardware import SpyreConfig
from spyre_ir.sim.memory import Lpddr5

MODES = ("vf", "pf")


@dataclass(frozen=True, order=True)
class DeviceBlock:
    """A block of LPDDR5: `size` bytes (a multiple of the alignment) at `offset` in
    `region`. Blocks order by address."""

    region: int
    offset: int
    size: int


class SpyreOutOfMemoryError(RuntimeError):
    """No block of `requested` bytes can be placed; `free` bytes of the card were free.
    The allocator is unchanged and stays usable."""

    def __init__(self, requested: int, free: int, detail: str) -> None:
        super().__init__(
            f"Spyre out of memory: tried to allocate {requested} bytes; "
            f"{free} bytes free ({detail})"
        )
        self.requested = requested
        self.free = free


@dataclass(frozen=True)
class AllocatorStats:
    """Counters of one allocator, in bytes unless named otherwise.

    fragmentation = 1 - (sum over regions of the region's largest free block)
                        / (reserved - allocated)
    0 when the cached free bytes of each region form one block (or there are none),
    near 1 when they are scattered in many small pieces. (A block never spans
    regions, so separate wholly free regions are not counted as fragmented.)"""

    allocated_bytes: int
    """Bytes of live blocks (rounded to the alignment)."""
    requested_bytes: int
    """Bytes the callers asked for, before rounding."""
    reserved_bytes: int
    """Bytes of mapped regions: live blocks plus cached free blocks."""
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    active_blocks: int
    cached_blocks: int
    """Free blocks kept in mapped regions."""
    regions: int
    """Mapped regions."""
    largest_free_block: int
    """Largest cached free block."""
    num_allocs: int
    num_frees: int
    num_ooms: int
    num_cache_flushes: int
    """Times a request emptied the cache and retried (pf mode)."""
    fragmentation: float


class _Block:
    """A piece of a region; the pieces of a region form a doubly linked list in
    address order so a freed block can merge with its neighbours."""

    __slots__ = ("region", "offset", "size", "requested", "free", "prev", "next")

    def __init__(self, region: int, offset: int, size: int) -> None:
        self.region = region
        self.offset = offset
        self.size = size
        self.requested = 0
        self.free = True
        self.prev: _Block | None = None
        self.next: _Block | None = None

    def key(self) -> tuple[int, int, int]:
        """Best-fit order: smallest first, then lowest address."""
        return (self.size, self.region, self.offset)


class LpddrAllocator:
    """Caching allocator of one card's LPDDR5 (`memory`), in mode "vf" or "pf"."""

    def __init__(self, config: SpyreConfig, memory: Lpddr5, mode: str = "vf") -> None:
        if mode not in MODES:
            raise ValueError(f"unknown memory mode '{mode}' (expected 'vf' or 'pf')")
        self.config = config
        self.memory = memory
        self.mode = mode
        self.alignment = config.stick_bytes
        self._lock = threading.RLock()
        self._free: list[tuple[int, int, int]] = []  # sorted keys of free blocks
        self._free_blocks: dict[tuple[int, int], _Block] = {}
        self._active: dict[tuple[int, int], _Block] = {}
        self._regions: dict[int, int] = {}  # mapped region -> size
        self._next_pf_region = 0
        self._allocated = 0
        self._requested = 0
        self._peak_allocated = 0
        self._peak_reserved = 0
        self._counts = {"allocs": 0, "frees": 0, "ooms": 0, "flushes": 0}

    @property
    def capacity(self) -> int:
        """Bytes this mode can ever reserve."""
        if self.mode == "vf":
            return min(self.config.vf_segments * self.config.vf_segment_bytes, self.memory.capacity)
        return self.memory.capacity

    def round_size(self, nbytes: int) -> int:
        """`nbytes` rounded up to whole alignment units; at least one unit, so every
        block has its own address."""
        units = max(1, -(-nbytes // self.alignment))
        return units * self.alignment

    def allocate(self, nbytes: int) -> DeviceBlock:
        """A block of at least `nbytes`, 128-byte aligned. Raises SpyreOutOfMemoryError
        (leaving the allocator as it was) when it cannot be placed."""
        try:
            nbytes = operator.index(nbytes)  # Python and numpy integers
        except TypeError:
            raise ValueError(f"allocation size must be an int, got {nbytes!r}") from None
        if nbytes < 0:
            raise ValueError(f"allocation size must be a non-negative int, got {nbytes}")
        size = self.round_size(nbytes)
        with self._lock:
            block = self._best_fit(size)
            if block is None:
                block = self._reserve(size, nbytes)
            self._take(block, size, nbytes)
            return DeviceBlock(block.region, block.offset, block.size)

    def free(self, block: DeviceBlock) -> None:
        """Give `block` back to the cache; it merges with free neighbours in its region."""
        with self._lock:
            live = self._active.pop((block.region, block.offset), None)
            if live is None or live.size != block.size:
                if live is not None:
                    self._active[(block.region, block.offset)] = live
                raise ValueError(f"{block} is not a live block of this allocator (double free?)")
            self._allocated -= live.size
            self._requested -= live.requested
            self._counts["frees"] += 1
            live.free = True
            for neighbour in (live.prev, live.next):
                if neighbour is not None and neighbour.free:
                    self._unlist(neighbour)
                    live = self._merge(live, neighbour)
            self._list(live)

    def empty_cache(self) -> int:
        """Unmap every region that holds no live block; return the bytes released."""
        with self._lock:
            released = 0
            for region, size in list(self._regions.items()):
                block = self._free_blocks.get((region, 0))
                if block is not None and block.size == size:
                    self._unlist(block)
                    self.memory.unmap_region(region)
                    del self._regions[region]
                    released += size
            return released

    def reset_event_counts(self) -> None:
        """Zero the event counters (allocations, frees, OOMs, cache flushes)."""
        with self._lock:
            for name in self._counts:
                self._counts[name] = 0

    def reset_peak_stats(self) -> None:
        with self._lock:
            self._peak_allocated = self._allocated
            self._peak_reserved = self.reserved_bytes

    @property
    def reserved_bytes(self) -> int:
        return sum(self._regions.values())

    def stats(self) -> AllocatorStats:
        with self._lock:
            reserved = self.reserved_bytes
            largest = self._largest_free()
            cached = reserved - self._allocated
            largest_per_region: dict[int, int] = {}
            for block in self._free_blocks.values():
                best = largest_per_region.get(block.region, 0)
                largest_per_region[block.region] = max(best, block.size)
            in_holes = cached - sum(largest_per_region.values())
            return AllocatorStats(
                allocated_bytes=self._allocated,
                requested_bytes=self._requested,
                reserved_bytes=reserved,
                peak_allocated_bytes=self._peak_allocated,
                peak_reserved_bytes=self._peak_reserved,
                active_blocks=len(self._active),
                cached_blocks=len(self._free),
                regions=len(self._regions),
                largest_free_block=largest,
                num_allocs=self._counts["allocs"],
                num_frees=self._counts["frees"],
                num_ooms=self._counts["ooms"],
                num_cache_flushes=self._counts["flushes"],
                fragmentation=in_holes / cached if cached else 0.0,
            )

    def live_blocks(self) -> list[DeviceBlock]:
        """Every live block, in address order."""
        with self._lock:
            return sorted(DeviceBlock(b.region, b.offset, b.size) for b in self._active.values())

    def free_blocks(self) -> list[DeviceBlock]:
        """Every cached free block, in address order."""
        with self._lock:
            blocks = self._free_blocks.values()
            return sorted(DeviceBlock(b.region, b.offset, b.size) for b in blocks)

    # -- internals ------------------------------------------------------------------

    def _best_fit(self, size: int) -> _Block | None:
        at = bisect.bisect_left(self._free, (size, -1, -1))
        while at < len(self._free):
            _, region, offset = self._free[at]
            block = self._free_blocks[(region, offset)]
            # pf keeps one tensor per region: reuse a cached region only when the
            # tensor would not waste over half of it, so big regions are not pinned
            # by small tensors (torch declines oversize cached blocks likewise).
            if self.mode == "vf" or block.size <= 2 * size:
                return block
            at += 1
        return None

    def _reserve(self, size: int, requested: int) -> _Block:
        """Map a new region that can hold `size` bytes and return its free block."""
        if self.mode == "vf":
            if size > self.config.vf_segment_bytes:
                self._oom(requested, f"largest possible block is one segment of "
                                     f"{self.config.vf_segment_bytes} bytes")  # fmt: skip
            unmapped = [r for r in range(self.config.vf_segments) if r not in self._regions]
            if not unmapped:
                self._oom(requested, f"all {self.config.vf_segments} segments mapped, largest "
                                     f"free block {self._largest_free()} bytes")  # fmt: skip
            region, region_size = unmapped[0], self.config.vf_segment_bytes
        else:
            if not self._pf_room(size):
                # Like torch on a failed cudaMalloc: give the cached regions back, retry.
                self._counts["flushes"] += 1
                self.empty_cache()
                if not self._pf_room(size):
                    self._oom(requested, f"{len(self._regions)} of {self.config.pf_region_limit} "
                                         f"regions mapped")  # fmt: skip
            region, region_size = self._next_pf_region, size
            self._next_pf_region += 1
        if self.reserved_bytes + region_size > self.memory.capacity:
            self._oom(requested, "LPDDR5 capacity reached")
        self.memory.map_region(region, region_size)
        self._regions[region] = region_size
        self._peak_reserved = max(self._peak_reserved, self.reserved_bytes)
        block = _Block(region, 0, region_size)
        self._list(block)
        return block

    def _pf_room(self, size: int) -> bool:
        return (len(self._regions) < self.config.pf_region_limit
                and self.reserved_bytes + size <= self.memory.capacity)  # fmt: skip

    def _oom(self, requested: int, detail: str) -> None:
        self._counts["ooms"] += 1
        raise SpyreOutOfMemoryError(requested, self.capacity - self._allocated, detail)

    def _take(self, block: _Block, size: int, requested: int) -> None:
        """Make `block` live with `size` bytes, splitting off the rest as a free block."""
        self._unlist(block)
        if block.size > size and self.mode == "vf":
            rest = _Block(block.region, block.offset + size, block.size - size)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._list(rest)
        block.free = False
        block.requested = requested
        self._active[(block.region, block.offset)] = block
        self._allocated += block.size
        self._requested += requested
        self._peak_allocated = max(self._peak_allocated, self._allocated)
        self._counts["allocs"] += 1

    def _merge(self, a: _Block, b: _Block) -> _Block:
        """Merge adjacent free blocks a and b (either order) into the lower one."""
        low, high = (a, b) if a.offset < b.offset else (b, a)
        low.size += high.size
        low.next = high.next
        if high.next is not None:
            high.next.prev = low
        return low

    def _list(self, block: _Block) -> None:
        bisect.insort(self._free, block.key())
        self._free_blocks[(block.region, block.offset)] = block

    def _unlist(self, block: _Block) -> None:
        at = bisect.bisect_left(self._free, block.key())
        del self._free[at]
        del self._free_blocks[(block.region, block.offset)]

    def _largest_free(self) -> int:
        return self._free[-1][0] if self._free else 0
