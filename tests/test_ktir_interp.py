"""The KTIR reference interpreter (spyre_ir/interp/ktir.py) against numpy, on KTIR
kernels of our own (tests/ktir/)."""

from pathlib import Path

import numpy as np

from spyre_ir.diagnostics import parse_file
from spyre_ir.interp.ktir import run_kernel
from spyre_ir.registry import make_context

KERNELS = Path(__file__).parent / "ktir"


def kernel(name: str):
    module = parse_file(make_context(), str(KERNELS / name))
    return next(op for op in module.walk() if op.name == "func.func")


def f16(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float16)


def test_vector_add_over_the_grid():
    x, y = f16(2048), f16(2048, seed=1)
    out = run_kernel(kernel("vector_add.mlir"), {0: x, 1: y, 2: np.zeros(2048, np.float16)}, {})
    np.testing.assert_array_equal(out[2], (x + y).astype(np.float16))
    np.testing.assert_array_equal(out[0], x)  # inputs are not written


def test_row_softmax():
    x = f16(256, 512)
    out = run_kernel(kernel("softmax.mlir"), {0: np.zeros_like(x), 1: x}, {})
    xf = x.astype(np.float32)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out[0], e / e.sum(axis=1, keepdims=True), atol=2e-3)
