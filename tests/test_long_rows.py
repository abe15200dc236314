"""Rows longer than half of LX (spyre_ir/passes/row_model.py `fitting_rows`): a group of
row-local ops whose row body does not fit gets more row dims, down to the stick dim
tiled in whole sticks, instead of a "one row needs N bytes" error. Each case runs at L2
(with race checks) and on the simulated card (L3) against the L1 interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from card_tolerance import as_on_the_card, assert_card_close

from spyre_ir import registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects import core, dataflow
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.lowering.dataflow_to_units import ConvertDataflowToUnits
from spyre_ir.pipelines import lower_to_dataflow
from spyre_ir.sim.engine import simulate


def exp_add(rows: int, cols: int, elem: str = "f16") -> str:
    t = f"tensor<{rows}x{cols}x{elem}>"
    return f"""
func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %e = spyre.exp %x : {t} -> {t}
  %s = spyre.add %e, %y : {t}, {t} -> {t}
  func.return %s : {t}
}}"""


CASES = {
    # 8192 f16 columns x 3 buffers = 48 KiB a row; half of LX is 8 KiB.
    "two long rows": (exp_add(2, 8192), 16 * 1024),
    # a row that is not a whole number of tiles, over more tiles than cores
    "one row, ragged end": (exp_add(1, 5000), 8 * 1024),
    "f32": (exp_add(3, 4096, "f32"), 16 * 1024),
}


def lowered(text: str, lx_bytes: int):
    module = parse_and_verify(registry.make_context(), text, "rows.mlir")
    fn = next(op for op in module.walk() if op.name == "func.func")
    rng = np.random.default_rng(0)
    args = []
    for t in fn.function_type.inputs.data:
        dtype = np.float32 if "f32" in str(t.element_type) else np.float16
        args.append(rng.standard_normal(t.get_shape()).astype(dtype))
    want = l1.run_module(module, args)
    lower_to_dataflow(module, lx_bytes=lx_bytes)
    return module, args, want


@pytest.mark.parametrize("name", CASES)
def test_long_rows_are_tiled_along_the_stick_dim(name: str) -> None:
    text, lx_bytes = CASES[name]
    module, args, want = lowered(text, lx_bytes)
    kernels = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    assert kernels
    for kernel in kernels:
        assert isinstance(kernel.plan, dataflow.RowsPlanAttr)
        assert kernel.plan.row_dims.data == 2, "the stick dim became a row dim"
        assert kernel.core_count > 1, "the tiles of a long row spread over the cores"
    for got, w in zip(l2.run_module(module, args, check_races=True), want):
        np.testing.assert_allclose(got, w, rtol=2e-3, atol=2e-3)
    ConvertDataflowToUnits().apply(registry.make_context(), module)
    module.verify()
    assert [p for p in module.walk() if isinstance(p, core.ProgramOp)]
    for got, w in zip(simulate(module, args, check_races=True).outputs, want):
        assert_card_close(got, w, 2e-3)


def test_rows_that_fit_keep_the_stick_dim_whole() -> None:
    module, _, _ = lowered(exp_add(64, 256), 64 * 1024)
    kernels = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    assert kernels and all(k.plan.row_dims.data == 1 for k in kernels)


def reduction(op: str, shape: tuple[int, ...], dims: list[int], elem: str = "f16") -> str:
    out = tuple(1 if d in dims else n for d, n in enumerate(shape))
    src = "tensor<" + "x".join(map(str, shape)) + f"x{elem}>"
    dst = "tensor<" + "x".join(map(str, out)) + f"x{elem}>"
    return f"""
func.func @main(%x: {src}) -> {dst} {{
  %y = spyre.{op} %x dims = {dims} keepdim : {src} -> {dst}
  func.return %y : {dst}
}}"""


REDUCTIONS = {
    # (text, LX bytes, f32 tolerance of the result)
    "sum of long rows": (reduction("sum", (3, 20000), [1]), 16 * 1024),
    "mean of long rows": (reduction("mean", (2, 9000), [1]), 16 * 1024),
    "max over dim 0": (reduction("reduce_max", (512, 1024), [0], "f32"), 256 * 1024),
    "min over dims 1, 2": (reduction("reduce_min", (2, 100, 256), [1, 2]), 32 * 1024),
}


@pytest.mark.parametrize("name", REDUCTIONS)
def test_a_reduction_whose_row_does_not_fit_is_streamed(name: str) -> None:
    text, lx_bytes = REDUCTIONS[name]
    module, args, want = lowered(text, lx_bytes)
    (kernel,) = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    computes = [op for op in kernel.walk() if isinstance(op, dataflow.ComputeOp)]
    assert any(op.accumulate is not None for op in computes), "partial results accumulate"
    for got, w in zip(l2.run_module(module, args, check_races=True), want):
        np.testing.assert_allclose(got, w, rtol=2e-3, atol=2e-3)
    ConvertDataflowToUnits().apply(registry.make_context(), module)
    module.verify()
    for got, w in zip(simulate(module, args, check_races=True).outputs, want):
        assert_card_close(got, w, 2e-3, partials=4)


def composite(rows: int, cols: int, body: str, weight: bool = False) -> str:
    t = f"tensor<{rows}x{cols}xf16>"
    args = f"%x: {t}" + (f", %w: tensor<{cols}xf16>" if weight else "")
    return f"""
func.func @main({args}) -> {t} {{
  %y = {body.format(t=t, w=f"weight(%w : tensor<{cols}xf16>)")} : {t} -> {t}
  func.return %y : {t}
}}"""


COMPOSITES = {
    # softmax over dim 0: the whole 512x1024 tensor is one row (the example),
    # at the card's own LX
    "softmax dim 0": (composite(512, 1024, "spyre.softmax %x dim = 0"), None),
    "softmax long rows": (composite(2, 12000, "spyre.softmax %x dim = 1"), 16 * 1024),
    "rms_norm long rows": (
        composite(3, 8192, "spyre.rms_norm %x {w} {{eps = 1.0e-06 : f64}}", True),
        16 * 1024,
    ),
    "layer_norm long rows": (
        composite(2, 8192, "spyre.layer_norm %x {{eps = 1.0e-05 : f64}}"),
        16 * 1024,
    ),
}


@pytest.mark.parametrize("name", COMPOSITES)
def test_softmax_and_norms_over_rows_that_do_not_fit(name: str) -> None:
    text, lx_bytes = COMPOSITES[name]
    module = parse_and_verify(registry.make_context(), text, "rows.mlir")
    rng = np.random.default_rng(1)
    fn = next(op for op in module.walk() if op.name == "func.func")
    args = [rng.standard_normal(t.get_shape()).astype(np.float16)
            for t in fn.function_type.inputs.data]  # fmt: skip
    want = l1.run_module(module, args)
    # A softmax over the last dim would stream in one kernel (test_online_softmax.py):
    # the decomposition is what this test covers.
    lower_to_dataflow(module, stream_softmax=False,
                      **({"lx_bytes": lx_bytes} if lx_bytes else {}))  # fmt: skip
    kernels = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    assert len(kernels) > 1, "decomposed into reductions and elementwise kernels"
    for got, w in zip(l2.run_module(module, args, check_races=True), want):
        np.testing.assert_allclose(got, w, rtol=2e-3, atol=2e-3)
    ConvertDataflowToUnits().apply(registry.make_context(), module)
    for got, w in zip(simulate(module, args, check_races=True).outputs, want):
        assert_card_close(got, w, 4e-3, partials=4)


def test_softmax_over_dim_0_matches_torch() -> None:
    import torch

    text, _ = COMPOSITES["softmax dim 0"]
    module = parse_and_verify(registry.make_context(), text, "rows.mlir")
    x = np.random.default_rng(2).standard_normal((512, 1024)).astype(np.float16)
    lower_to_dataflow(module)
    (got,) = l2.run_module(module, [x])
    want = torch.softmax(torch.from_numpy(x), dim=0).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-5)


def test_torch_compile_softmax_over_dim_0_runs_on_the_card(card) -> None:
    """The frontend road, strict (a CPU fallback raises): softmax over dim 0 of
    512x1024 used to be rejected by spyre-tile and so ran on the host."""
    import torch

    torch._dynamo.reset()
    x = torch.randn(512, 1024, dtype=torch.float16)
    compiled = torch.compile(lambda t: torch.softmax(t, dim=0) * 2, backend="spyre",
                             dynamic=False)  # fmt: skip
    with torch.no_grad():
        got = compiled(x)
    want = torch.softmax(x.float(), dim=0) * 2
    torch.testing.assert_close(got.float(), want, rtol=1e-2, atol=1e-4)


def transpose(shape: tuple[int, ...], perm: list[int]) -> str:
    out = tuple(shape[p] for p in perm)
    src = "tensor<" + "x".join(map(str, shape)) + "xf16>"
    dst = "tensor<" + "x".join(map(str, out)) + "xf16>"
    return f"""
func.func @main(%x: {src}) -> {dst} {{
  %y = spyre.transpose %x perm = {perm} : {src} -> {dst}
  func.return %y : {dst}
}}"""


TRANSPOSES = {
    # A rows tile would be 64 whole rows (whole sticks of the input): 64 x 300 x 2 x 2
    # bytes, more than half of 32 KiB.
    "2-D, ragged blocks": (transpose((300, 128), [1, 0]), 32 * 1024),
    "batched last two": (transpose((3, 130, 200), [0, 2, 1]), 32 * 1024),
    "reversed": (transpose((200, 3, 100), [2, 1, 0]), 32 * 1024),
}


@pytest.mark.parametrize("name", TRANSPOSES)
def test_a_transpose_whose_rows_do_not_fit_moves_in_blocks(name: str) -> None:
    text, lx_bytes = TRANSPOSES[name]
    module, args, want = lowered(text, lx_bytes)
    (kernel,) = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    loads = [op for op in kernel.walk() if isinstance(op, dataflow.LoadOp)]
    assert loads and all(op.perm is not None for op in loads), "transposed loads"
    assert kernel.core_count > 1
    for got, w in zip(l2.run_module(module, args, check_races=True), want):
        np.testing.assert_array_equal(got, w)
    ConvertDataflowToUnits().apply(registry.make_context(), module)
    for got, w in zip(simulate(module, args, check_races=True).outputs, want):
        np.testing.assert_array_equal(got, as_on_the_card(w))
