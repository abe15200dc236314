"""Stick images written and read a few rows at a time (runtime/images.py) and the
DLFloat16 lookup tables (interp/dlfloat16.py) give what the whole-tensor conversions
give, bit for bit."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from spyre_ir import layout as L
from spyre_ir.interp import dlfloat16 as D
from spyre_ir.runtime import images

SHAPES = [(37,), (5, 200), (130, 65), (3, 7, 129), (2, 3, 5, 70), (1, 500), (600, 1)]


def _layouts(shape: tuple[int, ...]) -> list[L.StickLayout]:
    perms = list(itertools.permutations(range(len(shape))))[:4]
    return [L.default_layout(shape, 2)] + [L.generic_layout(shape, 2, p) for p in perms]


@pytest.mark.parametrize("shape", SHAPES)
def test_chunked_images_match_stickify(
    shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(images, "CHUNK_ELEMENTS", 300)  # many chunks, partial ones too
    rng = np.random.default_rng(len(shape))
    for lay in _layouts(shape):
        host = rng.integers(0, 60000, size=shape).astype(np.uint16)
        ref = L.stickify(host, lay, 7)
        image = np.zeros(lay.device_elements, np.uint16)
        images.write_image(image, lay, host, lambda a: a, np.uint16(7))
        assert np.array_equal(image, ref), lay
        out = np.empty(shape, np.uint16)
        images.read_image(ref, lay, lambda a: a, out)
        assert np.array_equal(out, L.unstickify(ref, lay)), lay
        strided = np.empty((*shape, 2), np.uint16)[..., 0]  # not reshapeable as a view
        images.read_image(ref, lay, lambda a: a, strided)
        assert np.array_equal(strided, out)


def test_lookup_tables_match_the_arithmetic() -> None:
    bits = np.arange(1 << 16, dtype=np.uint32)
    f16 = bits.astype(np.uint16).view(np.float16)
    assert np.array_equal(D.encode(f16), D._encode_chunk(f16.astype(np.float32)))
    bf16 = (bits << np.uint32(16)).view(np.float32)
    assert np.array_equal(
        D.translate(D.BF16_TO_CODE, bits.astype(np.uint16)), D._encode_chunk(bf16)
    )
    values = D.decode(bits.astype(np.uint16))
    assert np.array_equal(
        D.CODE_TO_F16.view(np.float16), D.to_user(values, np.float16), equal_nan=True
    )
    expected = (D.to_user(values, "bf16").view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    assert np.array_equal(D.CODE_TO_BF16, expected)


def test_encode_in_chunks_matches_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(5000) * np.exp(rng.uniform(-40, 40, 5000))).astype(np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 9e9]
    whole = D._encode_chunk(x)
    monkeypatch.setattr(D, "_CHUNK", 333)
    assert np.array_equal(D.encode(x.reshape(50, 100)), whole.reshape(50, 100))
    out = np.empty((50, 100), np.uint16)
    assert D.encode(x.reshape(50, 100), out=out) is out and np.array_equal(out.reshape(-1), whole)
    assert np.array_equal(D.encode(D.decode(whole)), whole)  # codes survive a round trip
