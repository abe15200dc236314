"""The boxes every core moves (spyre_ir/interp/dataflow.py `Box`): when the cores'
offsets form a grid (a step per core, or per group of cores and per core in a group),
a gather is one strided view of the tensor; it must read exactly what advanced
indexing reads."""

from __future__ import annotations

import numpy as np
import pytest

from spyre_ir.interp.kernel_memory import Box, core_grid


def test_core_grid_of_split_k_offsets() -> None:
    core = np.arange(32)
    # 2 N groups of 16 K-split cores: rows step 256 within a group, columns 6400 per group.
    starts = {0: 256 * (core % 16), 1: 6400 * (core // 16) + 128}
    assert core_grid(starts, 32) == (16, {0: (0, 0, 256), 1: (128, 6400, 0)})
    # One step per core.
    assert core_grid({1: 512 * core[:8]}, 8) == (1, {1: (0, 512, 0)})
    # No grid: decreasing, or irregular offsets.
    assert core_grid({0: 100 - core[:4]}, 4) is None
    assert core_grid({0: np.array([0, 3, 4, 9])}, 4) is None


@pytest.mark.parametrize("seed", range(4))
def test_grid_gather_reads_what_advanced_indexing_reads(seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((300, 500)).astype(np.float16)
    used = 0
    for _ in range(50):
        cores = int(rng.choice([2, 4, 8, 32]))
        core = np.arange(cores)
        extents = (int(rng.integers(1, 20)), int(rng.integers(1, 40)))
        group = int(rng.choice([q for q in (1, 2, 4) if cores % q == 0]))
        offsets = [
            [np.int64(3), 5 + 7 * core],
            [3 * (core % group), 10 * (core // group)],
            [rng.integers(0, 250, cores), rng.integers(0, 400, cores)],
            [5 + 0 * core, 470 + 3 * core],  # boxes past the end: no grid
        ][int(rng.integers(0, 4))]
        box = Box(offsets, extents, table.shape, cores)
        used += box.grid is not None
        got = box.gather(table, np.float16(0))
        box.grid = None  # the advanced-indexing path
        want = box.gather(table, np.float16(0))
        assert got.shape == want.shape == (cores, *extents)
        np.testing.assert_array_equal(got, want)
    assert used > 10  # the strided path really ran
