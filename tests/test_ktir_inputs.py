"""spyre-run's host costs on a KTIR kernel: the fast random draws give the values (and
leave the generator where) the plain numpy draws they replace would; the cyclic
collector runs rarely during a run, and the caller's thresholds come back after it."""

import gc
from pathlib import Path

import numpy as np
import pytest

from spyre_ir.tools import ktir_inputs
from spyre_ir.tools.ktir_inputs import DRAW_BLOCK, arbitrary_halves, normal_halves
from spyre_ir.tools.spyre_run import RUN_GC_THRESHOLD, main

KERNELS = Path(__file__).parent / "ktir"


def _old_arbitrary_halves(rng, shape):
    bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
    exponent = (((bits >> 10) & np.uint16(3)) + np.uint16(12)) << np.uint16(10)
    return ((bits & np.uint16(0x83FF)) | exponent).view(np.float16)


SHAPES = [(0,), (1,), (3, 5), (7,), (2, DRAW_BLOCK + 3)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("buffered", [False, True])
def test_arbitrary_halves_are_the_uint16_draws(shape, buffered):
    # `buffered`: the generator holds half of a 64-bit draw from an earlier uint32 draw
    new, old = np.random.default_rng([3, 1]), np.random.default_rng([3, 1])
    if buffered:
        new.integers(0, 1 << 32, dtype=np.uint32)
        old.integers(0, 1 << 32, dtype=np.uint32)
    got, want = arbitrary_halves(new, shape), _old_arbitrary_halves(old, shape)
    assert got.shape == want.shape == shape and got.dtype == np.float16
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    assert np.array_equal(new.integers(0, 1 << 40, size=5), old.integers(0, 1 << 40, size=5))


@pytest.mark.parametrize("shape", SHAPES)
def test_normal_halves_are_the_rounded_float32_draw(shape):
    new, old = np.random.default_rng(0), np.random.default_rng(0)
    got = normal_halves(new, shape)
    want = old.standard_normal(shape, dtype=np.float32).astype(np.float16)
    assert got.shape == shape and got.dtype == np.float16
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))
    assert np.array_equal(new.standard_normal(5), old.standard_normal(5))


def test_a_run_collects_rarely_and_restores_the_thresholds(monkeypatch, capsys):
    seen = []
    run = ktir_inputs.run

    def spy(*args):
        seen.append(gc.get_threshold())
        return run(*args)

    monkeypatch.setattr(ktir_inputs, "run", spy)
    before = gc.get_threshold()
    assert main([str(KERNELS / "softmax.mlir"), "--seed", "0"]) == 0
    assert seen == [RUN_GC_THRESHOLD] and gc.get_threshold() == before
    assert "@softmax_kernel: 1 result" in capsys.readouterr().out
