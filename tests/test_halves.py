"""Half conversions (spyre_ir/interp/halves.py): the fast paths give numpy's results,
bit for bit (NaN payloads aside), for every half and for float32 values of every kind."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from spyre_ir.interp import halves

LARGE = halves.TORCH_MIN_VALUES  # at and above: torch's conversion


def all_halves() -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16)


def tricky_floats(count: int) -> np.ndarray:
    """Random float32 bit patterns (NaN, inf, subnormal, huge), plus every exact tie
    between two neighbouring halves and values just around f16's overflow."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, size=count, dtype=np.uint64).astype(np.uint32)
    finite = all_halves()[np.isfinite(all_halves())].astype(np.float32)
    ties = (finite.view(np.uint32) + np.uint32(1 << 12)).view(np.float32)
    edges = np.array([65504, 65519.99, 65520, 65536, 6e-8, 2.98e-8, 2.9e-8], np.float32)
    return np.concatenate([bits.view(np.float32), ties, edges, -edges])


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    width = np.uint16 if a.dtype == np.float16 else np.uint32
    np.testing.assert_array_equal(a[~nan].view(width), b[~nan].view(width))


@pytest.mark.parametrize("repeat", [1, 2])  # 65536 and 131072 values: both paths
def test_widening_every_half(repeat: int) -> None:
    h = np.tile(all_halves(), repeat)
    same_bits(halves.converted(h, np.float32), h.astype(np.float32))


@pytest.mark.parametrize("count", [1000, 4 * LARGE])
def test_narrowing_matches_numpy(count: int) -> None:
    x = tricky_floats(count)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    same_bits(halves.converted(x, np.float16), want)


@pytest.mark.parametrize("count", [1000, 4 * LARGE])
def test_round_to_f16_matches_a_round_trip(count: int) -> None:
    x = tricky_floats(count)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    same_bits(halves.round_to_f16(x), want)
    inplace = x.copy()
    assert halves.round_to_f16(inplace, overwrite=True) is inplace
    same_bits(inplace, want)


def test_convert_into_views_broadcasts_and_read_only_sources() -> None:
    rng = np.random.default_rng(1)
    big = rng.standard_normal((512, 512)).astype(np.float16)
    big.flags.writeable = False  # read-only: converted without a warning (-W error)
    dest = np.zeros((256, 512), np.float32)
    halves.convert_into(dest, big[::2])  # every other row: a strided view
    np.testing.assert_array_equal(dest, big[::2].astype(np.float32))
    halves.convert_into(dest, big[::-2])  # negative strides: numpy's path
    np.testing.assert_array_equal(dest, big[::-2].astype(np.float32))
    row = rng.standard_normal(512).astype(np.float32)
    wide = np.zeros((LARGE // 256, 512), np.float16)
    halves.convert_into(wide, row)  # broadcast along rows
    np.testing.assert_array_equal(wide, np.broadcast_to(row.astype(np.float16), wide.shape))


def test_conversions_leave_torch_threads_alone() -> None:
    before = torch.get_num_threads()
    out = halves.converted(np.ones(LARGE, np.float16), np.float32)
    assert torch.get_num_threads() == before
    np.testing.assert_array_equal(out, 1.0)


def test_large_conversions_never_import_torch() -> None:
    # A command-line run (spyre-run) must not pay torch's seconds-long import for a
    # conversion numpy does in milliseconds: torch is used only when already imported.
    code = (
        "import sys, numpy as np\n"
        "from spyre_ir.interp.halves import converted, round_to_f16\n"
        "x = np.linspace(-3, 3, 1 << 17, dtype=np.float32)\n"
        "h = converted(x, np.float16)\n"
        "assert np.array_equal(converted(h, np.float32), x.astype(np.float16).astype(np.float32))\n"
        "round_to_f16(x)\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
