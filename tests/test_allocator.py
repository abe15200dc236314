"""The LPDDR5 store and its caching allocator: placement, caching, coalescing, both
memory modes, out-of-memory recovery, stats, and that the store stays sparse."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spyre_ir.hardware import DEFAULT_CONFIG, SpyreConfig
from spyre_ir.runtime.allocator import DeviceBlock, LpddrAllocator, SpyreOutOfMemoryError
from spyre_ir.sim.memory import Lpddr5, LpddrAccessError

# A small card: two 64 KiB segments in vf mode, at most four regions in pf mode.
SMALL = DEFAULT_CONFIG.with_options(
    vf_segments=2, vf_segment_bytes=64 * 1024, pf_region_limit=4, lpddr_usable_bytes=256 * 1024
)


def make(mode: str, config: SpyreConfig = SMALL) -> LpddrAllocator:
    return LpddrAllocator(config, Lpddr5(config), mode)


def check_invariants(alloc: LpddrAllocator) -> None:
    """Live and free blocks tile every mapped region exactly, aligned, without overlap,
    and the stats agree with them."""
    live, free = alloc.live_blocks(), alloc.free_blocks()
    regions = alloc.memory.regions()
    by_region: dict[int, list[DeviceBlock]] = {}
    for block in live + free:
        assert block.offset % 128 == 0 and block.size % 128 == 0 and block.size > 0
        by_region.setdefault(block.region, []).append(block)
    assert set(by_region) == set(regions)
    for region, blocks in by_region.items():
        blocks.sort(key=lambda b: b.offset)
        cursor = 0
        for block in blocks:
            assert block.offset == cursor, f"gap or overlap at {block}"
            cursor += block.size
        assert cursor == regions[region]
    if alloc.mode == "pf":
        assert all(len(blocks) == 1 for blocks in by_region.values())
    stats = alloc.stats()
    assert stats.allocated_bytes == sum(b.size for b in live)
    assert stats.reserved_bytes == sum(regions.values()) == alloc.memory.mapped_bytes
    assert stats.reserved_bytes - stats.allocated_bytes == sum(b.size for b in free)
    assert stats.active_blocks == len(live) and stats.cached_blocks == len(free)
    assert stats.peak_allocated_bytes >= stats.allocated_bytes
    assert stats.largest_free_block == max((b.size for b in free), default=0)
    assert 0.0 <= stats.fragmentation < 1.0


# A step: allocate n bytes, or free the i-th live block (modulo the count).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("alloc"), st.integers(0, 40_000)),
        st.tuples(st.just("free"), st.integers(0, 1000)),
    ),
    max_size=60,
)


@pytest.mark.parametrize("mode", ["vf", "pf"])
@settings(max_examples=150, deadline=None)
@given(sequence=steps)
def test_random_alloc_free_sequences(mode: str, sequence: list[tuple[str, int]]) -> None:
    alloc = make(mode)
    live: list[tuple[DeviceBlock, int, int]] = []  # block, requested bytes, tag byte
    for tag, (action, n) in enumerate(sequence):
        if action == "alloc":
            try:
                block = alloc.allocate(n)
            except SpyreOutOfMemoryError as error:
                assert error.requested == n
                continue
            assert block.size >= n
            # Tag the block's first and last byte: a later overlap would overwrite them.
            view = alloc.memory.view(block.region, block.offset, block.size)
            view[0] = view[-1] = tag % 256
            live.append((block, n, tag % 256))
        elif live:
            block, _, _ = live.pop(n % len(live))
            alloc.free(block)
        check_invariants(alloc)
        assert alloc.stats().requested_bytes == sum(n for _, n, _ in live)
        for block, _, tag_byte in live:
            view = alloc.memory.view(block.region, block.offset, block.size)
            assert view[0] == view[-1] == tag_byte
    for block, _, _ in live:
        alloc.free(block)
    check_invariants(alloc)
    stats = alloc.stats()
    # Full coalescing: every mapped region is one free block again.
    assert stats.cached_blocks == stats.regions and stats.fragmentation == 0.0
    assert stats.allocated_bytes == 0
    alloc.empty_cache()
    assert alloc.stats().reserved_bytes == 0 and alloc.memory.mapped_bytes == 0


def test_blocks_are_aligned_region_offset_descriptors() -> None:
    alloc = make("vf")
    a, b, c = alloc.allocate(1), alloc.allocate(0), alloc.allocate(300)
    assert (a, b, c) == (DeviceBlock(0, 0, 128), DeviceBlock(0, 128, 128), DeviceBlock(0, 256, 384))


def test_best_fit_and_split() -> None:
    alloc = make("vf")
    a = alloc.allocate(1024)
    alloc.allocate(128)
    c = alloc.allocate(4096)
    alloc.allocate(128)
    alloc.free(a)
    alloc.free(c)
    # 900 bytes fit both holes; the smaller (a's 1024) is chosen.
    assert alloc.allocate(900) == DeviceBlock(0, a.offset, 1024)
    # 2048 fits only c's hole, which is split: the rest stays free at its end.
    d = alloc.allocate(2048)
    assert d == DeviceBlock(0, c.offset, 2048)
    assert DeviceBlock(0, c.offset + 2048, 2048) in alloc.free_blocks()


def test_freed_blocks_stay_reserved_and_coalesce() -> None:
    alloc = make("vf")
    blocks = [alloc.allocate(1024) for _ in range(4)]
    reserved = alloc.stats().reserved_bytes
    alloc.free(blocks[1])
    alloc.free(blocks[2])  # merges with blocks[1]'s hole
    assert DeviceBlock(0, 1024, 2048) in alloc.free_blocks()
    assert alloc.stats().reserved_bytes == reserved
    assert alloc.allocate(2048) == DeviceBlock(0, 1024, 2048)  # reused, no new region
    assert alloc.stats().regions == 1


def test_fragmentation_is_largest_free_over_cached() -> None:
    config = SMALL.with_options(vf_segment_bytes=4096)
    alloc = make("vf", config)
    blocks = [alloc.allocate(1024) for _ in range(4)]
    alloc.free(blocks[0])
    alloc.free(blocks[2])
    stats = alloc.stats()
    # 2048 cached bytes in two 1024-byte holes: 1 - 1024 / 2048.
    assert (stats.reserved_bytes - stats.allocated_bytes, stats.largest_free_block) == (2048, 1024)
    assert stats.fragmentation == 0.5


def test_empty_cache_returns_only_wholly_free_regions() -> None:
    alloc = make("vf")
    first = alloc.allocate(40_000)
    second = alloc.allocate(40_000)  # does not fit beside `first`: segment 1
    assert (first.region, second.region) == (0, 1)
    alloc.free(second)
    assert alloc.empty_cache() == 64 * 1024
    assert alloc.memory.regions() == {0: 64 * 1024}
    assert alloc.stats().reserved_bytes == 64 * 1024


def test_peak_stats() -> None:
    alloc = make("vf")
    a = alloc.allocate(10_000)
    b = alloc.allocate(5_000)
    alloc.free(a)
    stats = alloc.stats()
    assert stats.peak_allocated_bytes == alloc.round_size(10_000) + alloc.round_size(5_000)
    alloc.reset_peak_stats()
    assert alloc.stats().peak_allocated_bytes == b.size


@pytest.mark.parametrize("mode", ["vf", "pf"])
def test_out_of_memory_names_sizes_and_recovers(mode: str) -> None:
    alloc = make(mode)
    held = [alloc.allocate(64 * 1024) for _ in range(2 if mode == "vf" else 4)]
    before = alloc.stats()
    with pytest.raises(SpyreOutOfMemoryError) as info:
        alloc.allocate(1000)
    free = alloc.capacity - before.allocated_bytes
    assert (info.value.requested, info.value.free) == (1000, free)
    assert "1000 bytes" in str(info.value) and f"{free} bytes free" in str(info.value)
    after = alloc.stats()
    assert after.num_ooms == 1
    assert (after.allocated_bytes, after.reserved_bytes, after.active_blocks) == (
        before.allocated_bytes, before.reserved_bytes, before.active_blocks)  # fmt: skip
    check_invariants(alloc)
    alloc.free(held.pop())
    block = alloc.allocate(1000)
    assert block.size >= 1000
    check_invariants(alloc)


def test_vf_request_larger_than_a_segment() -> None:
    alloc = make("vf")
    with pytest.raises(SpyreOutOfMemoryError, match="one segment of 65536 bytes") as info:
        alloc.allocate(64 * 1024 + 1)
    assert info.value.free == 128 * 1024
    assert alloc.allocate(64 * 1024).size == 64 * 1024


def test_pf_one_region_per_tensor() -> None:
    alloc = make("pf")
    blocks = [alloc.allocate(n) for n in (100, 5000, 100)]
    assert [(b.region, b.offset) for b in blocks] == [(0, 0), (1, 0), (2, 0)]
    assert alloc.memory.regions() == {0: 128, 1: 5120, 2: 128}


def test_pf_reuses_cached_regions_and_flushes_the_cache_at_the_limit() -> None:
    alloc = make("pf")
    small = [alloc.allocate(128) for _ in range(4)]
    alloc.free(small[0])
    assert alloc.allocate(100) == small[0]  # the cached region is reused
    alloc.free(small[1])
    # 4096 bytes do not fit the cached 128-byte region and the region limit is reached:
    # the allocator empties its cache (unmapping region 1) and maps a new region.
    big = alloc.allocate(4096)
    assert big.region == 4 and alloc.stats().num_cache_flushes == 1
    assert 1 not in alloc.memory.regions() and alloc.stats().regions == 4


def test_pf_does_not_pin_a_big_region_with_a_small_tensor() -> None:
    alloc = make("pf")
    big = alloc.allocate(8192)
    alloc.free(big)
    small = alloc.allocate(128)
    assert small.region != big.region


def test_bad_requests() -> None:
    alloc = make("vf")
    with pytest.raises(ValueError, match="non-negative int, got -1"):
        alloc.allocate(-1)
    with pytest.raises(ValueError, match="must be an int, got 1.5"):
        alloc.allocate(1.5)  # type: ignore[arg-type]
    assert alloc.allocate(np.int64(300)).size == 384
    block = alloc.allocate(128)
    alloc.free(block)
    with pytest.raises(ValueError, match="double free"):
        alloc.free(block)
    with pytest.raises(ValueError, match="not a live block"):
        alloc.free(DeviceBlock(7, 0, 128))
    with pytest.raises(ValueError, match="unknown memory mode 'xf'"):
        make("xf")


def test_memory_bounds_and_roundtrip() -> None:
    memory = Lpddr5(SMALL)
    memory.map_region(3, 1024)
    memory.write(3, 1000, np.arange(6, dtype=np.float32))
    assert memory.read(3, 1000, 24).view(np.float32).tolist() == [0, 1, 2, 3, 4, 5]
    assert memory.read(3, 0, 8).tolist() == [0] * 8  # untouched memory reads zeros
    with pytest.raises(LpddrAccessError, match="outside region 3 of 1024 bytes"):
        memory.view(3, 1000, 25)
    with pytest.raises(LpddrAccessError, match="region 4 is not mapped"):
        memory.read(4, 0, 1)
    with pytest.raises(ValueError, match="already mapped"):
        memory.map_region(3, 128)
    with pytest.raises(MemoryError, match="exceeds the card's 262144 usable bytes"):
        memory.map_region(5, 256 * 1024)
    memory.unmap_region(3)
    with pytest.raises(ValueError, match="not mapped"):
        memory.unmap_region(3)


def _rss_bytes() -> int:
    resident_pages = int(Path("/proc/self/statm").read_text().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def test_a_reserved_12_gb_segment_costs_little_host_memory() -> None:
    alloc = make("vf", DEFAULT_CONFIG)
    before = _rss_bytes()
    block = alloc.allocate(10 * 10**9)  # maps a whole 12 GB segment
    assert alloc.stats().reserved_bytes == 12 * 10**9
    view = alloc.memory.view(block.region, block.offset, block.size)
    view[: 1 << 20] = 1  # touch the first and last MiB only
    view[-(1 << 20) :] = 2
    assert alloc.memory.read(block.region, 5 * 10**9, 4).tolist() == [0, 0, 0, 0]
    grown = _rss_bytes() - before
    assert grown < 64 * 2**20, f"resident memory grew by {grown} bytes"
    del view
    alloc.free(block)
    alloc.empty_cache()
    assert alloc.memory.mapped_bytes == 0
