"""A reduction whose row does not fit LX and that has fewer rows than cores (a sum over
dim 0 has one row) is streamed with its chunks split over a ring group of cores: each
core reduces its own chunks into an f32 accumulator, a ring all-reduce combines them
(add, max or min), and every member stores the result (passes/tile_stream.py
`ring_split`). Before, the whole tensor streamed through one core. Each case, at sizes
that are no whole number of sticks or chunks, runs at L2 (race checks) and on the
simulated card (L3) against the L1 interpreter and torch; one goes through
torch.compile on the card, strict."""

from __future__ import annotations

import numpy as np
import pytest
from card_tolerance import assert_card_close

from spyre_ir import registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects import dataflow
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.lowering.dataflow_to_units import ConvertDataflowToUnits
from spyre_ir.pipelines import lower_to_dataflow
from spyre_ir.sim.engine import simulate


def reduction(op: str, shape: tuple[int, ...], dims: list[int]) -> str:
    out = tuple(1 if d in dims else n for d, n in enumerate(shape))
    src = "tensor<" + "x".join(map(str, shape)) + "xf16>"
    dst = "tensor<" + "x".join(map(str, out)) + "xf16>"
    return f"""
func.func @main(%x: {src}) -> {dst} {{
  %y = spyre.{op} %x dims = {dims} keepdim : {src} -> {dst}
  func.return %y : {dst}
}}"""


TORCH = {"sum": "sum", "mean": "mean", "reduce_max": "amax", "reduce_min": "amin"}
CASES = {
    # (op, shape, dims, LX bytes): rows of 700 / 999 / 130 columns (not whole sticks of
    # 64), lengths no multiple of the chunk
    "sum over dim 0": ("sum", (3001, 700), [0], 64 * 1024),
    "mean over dim 0": ("mean", (2500, 999), [0], 128 * 1024),
    "max over dim 0": ("reduce_max", (1777, 130), [0], 32 * 1024),
    "min over dim 0 of 3-D": ("reduce_min", (900, 3, 70), [0], 32 * 1024),
}


def inputs(shape: tuple[int, ...]) -> list[np.ndarray]:
    return [np.random.default_rng(5).standard_normal(shape).astype(np.float16)]


@pytest.mark.parametrize("name", CASES)
def test_reduction_over_dim_0_is_split_over_cores(name: str) -> None:
    import torch

    op, shape, dims, lx_bytes = CASES[name]
    module = parse_and_verify(registry.make_context(), reduction(op, shape, dims), "r.mlir")
    args = inputs(shape)
    want = l1.run_module(module, args)
    eager = getattr(torch, TORCH[op])(torch.from_numpy(args[0]).float(), dim=dims, keepdim=True)
    np.testing.assert_allclose(want[0], eager.numpy(), rtol=3e-3, atol=3e-2)
    lower_to_dataflow(module, lx_bytes=lx_bytes)
    (kernel,) = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    rings = [o for o in kernel.walk() if isinstance(o, dataflow.RingAllreduceOp)]
    assert kernel.core_count > 1 and len(rings) == 1, "the chunks spread over cores"
    assert rings[0].group_size.value.data == kernel.core_count
    (got,) = l2.run_module(module, args, check_races=True)
    np.testing.assert_allclose(got, want[0], rtol=2e-3, atol=2e-3)
    ConvertDataflowToUnits().apply(registry.make_context(), module)
    module.verify()
    (on_card,) = simulate(module, args, check_races=True).outputs
    assert_card_close(on_card, want[0], 2e-3, partials=4)


def test_split_streams_faster_than_one_core() -> None:
    # The point of the split: the card's time for a sum over dim 0 of 4000x1000 falls
    # with the cores that stream it (one core before).
    text = reduction("sum", (4000, 1000), [0])
    times = {}
    for cores in (1, 8):
        module = parse_and_verify(registry.make_context(), text, "r.mlir")
        lower_to_dataflow(module, cores=cores)
        ConvertDataflowToUnits().apply(registry.make_context(), module)
        times[cores] = simulate(module, inputs((4000, 1000))).report["simulated_us"]
    assert times[8] < times[1] / 2, times


def test_torch_compile_sum_over_dim_0_runs_on_the_card(card) -> None:
    import torch

    x = torch.randn(3001, 700, dtype=torch.float16)
    compiled = torch.compile(lambda t: t.sum(0, keepdim=True) * 0.5, backend="spyre",
                             dynamic=False)  # fmt: skip
    with torch.no_grad():
        got = compiled(x)
    want = x.float().sum(0, keepdim=True) * 0.5
    torch.testing.assert_close(got.float(), want, rtol=1e-2, atol=0.25)


MIXED = """
func.func @main(%x: tensor<3x20000xf16>) -> (tensor<3x1xf16>, tensor<3x20000xf16>) {
  %e = spyre.exp %x : tensor<3x20000xf16> -> tensor<3x20000xf16>
  %s = spyre.sum %e dims = [1] keepdim : tensor<3x20000xf16> -> tensor<3x1xf16>
  %m = spyre.reduce_max %x dims = [1] keepdim : tensor<3x20000xf16> -> tensor<3x1xf16>
  %d = spyre.sub %x, %m : tensor<3x20000xf16>, tensor<3x1xf16> -> tensor<3x20000xf16>
  %a = spyre.add %s, %m : tensor<3x1xf16>, tensor<3x1xf16> -> tensor<3x1xf16>
  func.return %a, %d : tensor<3x1xf16>, tensor<3x20000xf16>
}"""


def test_fused_group_mixing_reductions_that_does_not_fit_is_split() -> None:
    # Fused for the card's LX, tiled for 16 KiB: the one group's row (120 KB) does not
    # fit, and it mixes reductions with elementwise ops, so it is no lone reduction to
    # stream. spyre-tile splits it into a group per op (passes/split_group.py) instead
    # of "one row needs 120006 bytes; half of LX is 8192".
    import torch

    from spyre_ir.driver import STAGES, stage_passes

    module = parse_and_verify(registry.make_context(), MIXED, "mixed.mlir")
    x = np.random.default_rng(6).standard_normal((3, 20000)).astype(np.float16) / 4
    want = l1.run_module(module, [x])
    t = torch.from_numpy(x).float()
    m = t.amax(1, keepdim=True)
    eager = [t.exp().sum(1, keepdim=True) + m, t - m]
    for w, e in zip(want, eager):
        np.testing.assert_allclose(w, e.numpy(), rtol=3e-3, atol=3e-2)
    ctx = registry.make_context()
    for p in stage_passes(STAGES[0]):
        if p.name == "spyre-tile":
            p = type(p)(lx_bytes=16 * 1024)
        p.apply(ctx, module)
    kernels = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    assert len(kernels) == 5, [k.sym_name.data for k in kernels]
    assert all(k.lx_peak_bytes.value.data <= 16 * 1024 for k in kernels)
    for got, w in zip(l2.run_module(module, [x], check_races=True), want):
        np.testing.assert_allclose(got, w, rtol=3e-3, atol=3e-3)
    ConvertDataflowToUnits().apply(registry.make_context(), module)
    module.verify()
    for got, w in zip(simulate(module, [x], check_races=True).outputs, want):
        assert_card_close(got, w, 4e-3, partials=4)
