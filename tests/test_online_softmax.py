"""A lone softmax over the last dim whose row does not fit half of LX runs as one
streaming kernel (spyre_ir/passes/tile_online_softmax.py): an online max and rescaled
sum over the row's chunks, then a second pass writing exp(x - m) / s. Each case is run
at L2 (race checks) against the L1 interpreter and torch, and on the simulated card
(L3, race checks) against L2 with the card's numerics, bit for bit; the simulated time
is set against the decomposition's (stream_softmax=False) in the same run."""

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


def softmax(shape: tuple[int, ...], elem: str = "f16") -> str:
    t = "tensor<" + "x".join(map(str, shape)) + f"x{elem}>"
    return f"""
func.func @main(%x: {t}) -> {t} {{
  %y = spyre.softmax %x dim = -1 : {t} -> {t}
  func.return %y : {t}
}}"""


CASES = {
    # (shape, dtype, LX bytes): rows that are not whole sticks, at a small LX
    "3x20001 f16": ((3, 20001), "f16", 16 * 1024),
    "2x70000 f16": ((2, 70000), "f16", 16 * 1024),
    "2x3x9000 f16 (outer rows)": ((2, 3, 9000), "f16", 16 * 1024),
    "4x5000 f32": ((4, 5000), "f32", 16 * 1024),
}


def lowered(shape, elem, lx_bytes, **options):
    module = parse_and_verify(registry.make_context(), softmax(shape, elem), "softmax.mlir")
    lower_to_dataflow(module, lx_bytes=lx_bytes, **options)
    return module


def kernels(module) -> list[dataflow.KernelOp]:
    return [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]


@pytest.mark.parametrize("name", CASES)
def test_a_long_row_softmax_streams_in_one_kernel(name: str) -> None:
    import torch

    shape, elem, lx_bytes = CASES[name]
    dtype = np.float16 if elem == "f16" else np.float32
    x = (np.random.default_rng(3).standard_normal(shape) * 3).astype(dtype)
    module = parse_and_verify(registry.make_context(), softmax(shape, elem), "softmax.mlir")
    (want,) = l1.run_module(module, [x])
    lower_to_dataflow(module, lx_bytes=lx_bytes)
    (kernel,) = kernels(module)
    rows = int(np.prod(shape[:-1]))
    assert kernel.core_count > rows, "a row's chunks split over the idle cores (a ring)"
    (got,) = l2.run_module(module, [x], check_races=True)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-5)
    eager = torch.softmax(torch.from_numpy(x).float(), dim=-1).numpy()
    np.testing.assert_allclose(got, eager, rtol=2e-3, atol=2e-5)
    (card,) = l2.run_module(module, [x], halves="dlfloat16")
    ConvertDataflowToUnits().apply(registry.make_context(), module)
    result = simulate(module, [x], check_races=True)
    (simulated,) = result.outputs
    np.testing.assert_array_equal(simulated, card)
    # The row read twice and written once (to within the padding of its last stick).
    assert result.report["lpddr_bytes"] <= 3 * x.nbytes * 1.01
    assert_card_close(simulated, want, 4e-3, partials=4)


@pytest.mark.parametrize("name", ["3x20001 f16", "2x70000 f16"])
def test_the_decomposition_is_kept_behind_the_switch_and_is_slower(name: str) -> None:
    """stream_softmax=False decomposes the same softmax into several kernels; both run
    on the simulated card in this test, and the streaming kernel is faster (it reads
    the row twice and writes it once; the decomposition moves intermediates through
    LPDDR5)."""
    shape, _, lx_bytes = CASES[name]
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float16)
    times, moved = {}, {}
    for stream in (True, False):
        module = lowered(shape, "f16", lx_bytes, stream_softmax=stream)
        assert (len(kernels(module)) == 1) == stream
        ConvertDataflowToUnits().apply(registry.make_context(), module)
        report = simulate(module, [x], check_races=True).report
        times[stream], moved[stream] = report["simulated_us"], report["lpddr_bytes"]
    print(f"{name}: simulated us streaming {times[True]:.1f}, decomposed {times[False]:.1f}; "
          f"LPDDR5 bytes {moved[True]}, {moved[False]}")  # fmt: skip
    assert moved[True] <= 3 * x.nbytes * 1.01, "two reads and one write of the row"
    assert times[True] < times[False]


def test_a_fused_softmax_is_split_then_streamed() -> None:
    """exp -> softmax -> add over long rows: the fused group does not fit, so it is
    split per op and the softmax streamed on its own."""
    t = "tensor<3x20001xf16>"
    text = f"""
func.func @main(%x: {t}, %z: {t}) -> {t} {{
  %a = spyre.exp %x : {t} -> {t}
  %y = spyre.softmax %a dim = 1 : {t} -> {t}
  %w = spyre.add %y, %z : {t}, {t} -> {t}
  func.return %w : {t}
}}"""
    module = parse_and_verify(registry.make_context(), text, "fused.mlir")
    rng = np.random.default_rng(5)
    args = [rng.standard_normal((3, 20001)).astype(np.float16) for _ in range(2)]
    (want,) = l1.run_module(module, args)
    lower_to_dataflow(module, lx_bytes=16 * 1024)
    streamed = [k for k in kernels(module)
                if any(isinstance(op, dataflow.ComputeOp) and op.kind.data == "spyre.reciprocal"
                       for op in k.walk())]  # fmt: skip
    assert len(kernels(module)) == 3 and len(streamed) == 1
    (got,) = l2.run_module(module, args, check_races=True)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_a_chunk_that_does_not_fit_is_a_located_error() -> None:
    # One stick of 64 f16 and the f32 working tiles need more than half of 1 KiB.
    module = parse_and_verify(registry.make_context(), softmax((2, 4096)), "tiny.mlir")
    with pytest.raises(Exception, match=r"tiny.mlir:3:\d+: error: .*half of LX is 512"):
        lower_to_dataflow(module, lx_bytes=1024)
