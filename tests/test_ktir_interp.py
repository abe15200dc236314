"""The KTIR reference interpreter (spyre_ir/interp/ktir.py) against numpy, on KTIR
kernels of our own (tests/ktir/)."""

from pathlib import Path

import numpy as np
import pytest

from spyre_ir.diagnostics import parse_file
from spyre_ir.interp.ktir import KtirError, run_kernel
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


def test_reduce_to_a_result_without_the_partials_unit_dim(capsys):
    # ktir-cpu's spelling (1x64 partials, a 64 result) computes what the spec's does,
    # with a located warning naming the rule it departs from.
    x = f16(256, 64)
    compat = run_kernel(
        kernel("unit_dim_reduce.mlir"), {0: x, 1: np.zeros((8, 64), np.float16)}, {}
    )
    warned = capsys.readouterr().err
    assert "unit_dim_reduce.mlir:" in warned and ": warning: 'ktdp.inter_tile_reduce'" in warned
    assert "'result types must match future partial types'" in warned
    spec = run_kernel(kernel("cross_tile_sum.mlir"), {0: x, 1: np.zeros((8, 64), np.float16)}, {})
    assert "warning" not in capsys.readouterr().err
    np.testing.assert_array_equal(compat[1], spec[1])
    sums = x.astype(np.float32).sum(axis=0)
    np.testing.assert_allclose(compat[1], np.broadcast_to(sums, (8, 64)), atol=0.25)


def test_group_sums_at_pointer_offsets_of_the_group_and_lane():
    # Tiles address rows by %ptr + tile * 64 and %ptr + (tile / 4) * 64; two groups of 4.
    x = f16(8, 64)
    out = run_kernel(kernel("group_ring_sums.mlir"), {0: x, 1: np.zeros((2, 64), np.float16)}, {})
    sums = x.astype(np.float32).reshape(2, 4, 64).sum(axis=1)
    np.testing.assert_allclose(out[1], sums, atol=0.02)


def test_distributed_view_over_two_pointers():
    # Each element of the global view comes from the partition whose set holds it.
    a0, a1 = f16(32, 48), f16(32, 80, seed=1)
    arrays = {0: a0, 1: a1, 2: np.zeros((32, 128), np.float16)}
    out = run_kernel(kernel("distributed_two_pointers.mlir"), arrays, {3: 128})
    np.testing.assert_array_equal(out[2], np.concatenate([a0, a1], axis=1))


def _kernel_text(tmp_path, text: str):
    path = tmp_path / "k.mlir"
    path.write_text(text)
    module = parse_file(make_context(), str(path))
    return next(op for op in module.walk() if op.name == "func.func")


def test_view_strides_past_the_pointer_are_a_located_error(tmp_path):
    # An out-view of strides [64, 1] over a 4x32 buffer (an IndexError in the store before).
    regression = Path(__file__).parent / "fuzz/regressions/ktir_out_view_strides_past_tensor.mlir"
    fn = _kernel_text(tmp_path, regression.read_text())
    buffers = {0: f16(128), 1: np.zeros(128, np.float16)}
    with pytest.raises(KtirError, match="'ktdp.store' writes past the end") as raised:
        run_kernel(fn, buffers, {})
    assert raised.value.op.name == "ktdp.store"
    # A negative leading stride reads before the buffer (numpy wrapped it around before).
    text = regression.read_text().replace("strides: [64, 1]", "strides: [32, 1]")
    text = text.replace("strides: [32, 1]", "strides: [-32, 1]", 1)
    fn = _kernel_text(tmp_path, text)
    with pytest.raises(KtirError, match="'ktdp.load' reads before the start"):
        run_kernel(fn, buffers, {})
