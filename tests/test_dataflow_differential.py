"""Differential tests of L2: every frontend graph, lowered by spyre-to-dataflow and run
by the L2 interpreter (with race checks), matches the L1 interpreter."""

from __future__ import annotations

import capture
import models
import numpy as np
import pytest
import torch

from spyre_ir import registry
from spyre_ir.dialects import dataflow
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.pipelines import lower_to_dataflow

DTYPES = {"f32": torch.float32, "f16": torch.float16}
# The L2 interpreter computes each tile op as the L1 interpreter does; what may differ
# is rounding order (f16 partial sums of a K loop, f32 accumulators): a few ulps.
TOLERANCE = {"f32": 1e-5, "f16": 1e-2}


def assert_close(got: list[np.ndarray], want: list[np.ndarray], tol: float) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol)


def lowered_matches(module, inputs, tol: float, **options) -> dataflow.KernelOp:
    want = l1.run_module(module, inputs)
    lower_to_dataflow(module, **options)
    kernels = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    assert kernels, "nothing was lowered"
    assert not [g for g in module.walk() if isinstance(g, dataflow.GroupOp)]
    for k in kernels:
        assert k.lx_peak_bytes is not None
        assert 0 < k.lx_peak_bytes.value.data <= k.capacity
    assert_close(l2.run_module(module, inputs, check_races=True), want, tol)
    return kernels


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(models.MODELS))
def test_frontend_graphs_match_l1(name: str, dtype: str) -> None:
    model, args = models.build(name, DTYPES[dtype])
    graphs = capture.capture(model, args)
    assert graphs
    for module, inputs in graphs:
        lowered_matches(module, inputs, TOLERANCE[dtype])


AWKWARD = [(67, 256), (71, 129), (4097, 64), (3, 7, 9), (63, 129)]


@pytest.mark.parametrize("shape", AWKWARD, ids=lambda s: "x".join(map(str, s)))
def test_uneven_rows_softmax_and_norm(shape: tuple[int, ...]) -> None:
    w = torch.randn(shape[-1])

    def fn(x):
        y = torch.softmax(x * 1.5, dim=-1)
        return torch.nn.functional.rms_norm(y + x, (shape[-1],), w, 1e-6)

    ((module, inputs),) = capture.capture(fn, [torch.randn(*shape)])
    lowered_matches(module, inputs, TOLERANCE["f32"])


@pytest.mark.parametrize("mnk", [(67, 71, 129), (1, 4097, 64), (129, 64, 4097), (3, 200, 300)])
def test_uneven_matmul_with_bias(mnk: tuple[int, int, int]) -> None:
    m, n, k = mnk
    lin = torch.nn.Linear(k, n).half()
    ((module, inputs),) = capture.capture(lin, [torch.randn(m, k).half()])
    lowered_matches(module, inputs, TOLERANCE["f16"])


def test_small_scratchpad_forces_smaller_tiles() -> None:
    def fn(x, y):
        return torch.softmax(x @ y, dim=-1)

    args = [torch.randn(256, 512).half(), torch.randn(512, 1024).half()]
    ((module, inputs),) = capture.capture(fn, args)
    big = lowered_matches(module.clone(), inputs, TOLERANCE["f16"])
    small = lowered_matches(module, inputs, TOLERANCE["f16"], lx_bytes=64 * 1024)
    assert max(k.lx_peak_bytes.value.data for k in small) <= 64 * 1024
    assert max(k.lx_peak_bytes.value.data for k in small) < max(
        k.lx_peak_bytes.value.data for k in big
    )


def test_fewer_cores_config() -> None:
    ((module, inputs),) = capture.capture(lambda x: torch.tanh(x) * 2, [torch.randn(67, 256)])
    kernels = lowered_matches(module, inputs, TOLERANCE["f32"], cores=8)
    assert all(k.core_count <= 8 for k in kernels)


def test_large_matmul_is_divided_over_all_cores() -> None:
    ctx = registry.make_context()
    from spyre_ir.diagnostics import parse_and_verify

    module = parse_and_verify(ctx, MATMUL_512, "matmul.mlir")
    lower_to_dataflow(module)
    (kernel,) = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    assert kernel.core_count == 32


MATMUL_512 = """
func.func @main(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<512x4096xf16> {
  %c = spyre.matmul %a, %b : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
  func.return %c : tensor<512x4096xf16>
}
"""
