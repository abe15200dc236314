"""Copy kernels (spyre_ir/passes/tile_copy.py): a concat or restickify whose row does not
fit in half of LX is moved in boxes over many cores. Each case runs at L2 (with race
checks) and on the simulated card (L3), against the L1 interpreter: a copy moves bits,
so the results must be exact (on the card: the inputs as DLFloat16 holds them)."""

from __future__ import annotations

import numpy as np
import pytest
from card_tolerance import as_on_the_card

from spyre_ir import registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects import core, dataflow
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.lowering.dataflow_to_units import ConvertDataflowToUnits
from spyre_ir.passes.tile_copy import box_plan
from spyre_ir.pipelines import lower_to_dataflow
from spyre_ir.sim.engine import simulate

LX = 64 * 1024  # a small scratchpad makes copies of small tensors


def concat(shapes: list[tuple[int, ...]], dim: int, elem: str = "f16") -> str:
    out = list(shapes[0])
    out[dim] = sum(s[dim] for s in shapes)
    t = ["tensor<" + "x".join(map(str, s)) + f"x{elem}>" for s in [*shapes, out]]
    args = ", ".join(f"%a{i}: {t[i]}" for i in range(len(shapes)))
    names = ", ".join(f"%a{i}" for i in range(len(shapes)))
    return f"""
func.func @main({args}) -> {t[-1]} {{
  %c = spyre.concat {names} dim = {dim} : {", ".join(t[:-1])} -> {t[-1]}
  func.return %c : {t[-1]}
}}"""


def flatten(shape: tuple[int, ...], elem: str = "f16") -> str:
    src = "tensor<" + "x".join(map(str, shape)) + f"x{elem}>"
    dst = f"tensor<{int(np.prod(shape))}x{elem}>"
    return f"""
func.func @main(%a: {src}) -> {dst} {{
  %r = spyre.reshape %a : {src} -> {dst}
  func.return %r : {dst}
}}"""


def slice_of(shape: tuple[int, ...], dim: int, start: int, stop: int, elem: str = "f16") -> str:
    out = list(shape)
    out[dim] = stop - start
    src, dst = (f"tensor<{'x'.join(map(str, s))}x{elem}>" for s in (shape, out))
    starts = [start if d == dim else 0 for d in range(len(shape))]
    stops = [stop if d == dim else n for d, n in enumerate(shape)]
    return f"""
func.func @main(%a: {src}) -> {dst} {{
  %s = spyre.slice %a starts = {starts} stops = {stops} steps = {[1] * len(shape)} : {src} -> {dst}
  func.return %s : {dst}
}}"""


CASES = {
    # The last position of a long prompt (`hidden[:, -1:, :]`): a sliced dim is no row dim,
    # so a row tiling has one row, the whole tensor.
    "slice last row": (slice_of((1, 300, 512), 1, 299, 300), 16 * 1024),
    "slice middle dim ragged": (slice_of((2, 45, 33, 200), 1, 7, 40), 16 * 1024),
    "slice dim0 f32": (slice_of((70, 300), 0, 3, 68, "f32"), 8 * 1024),
    "concat dim0": (concat([(300, 1024), (212, 1024)], 0), LX),
    "concat dim0 three uneven": (concat([(37, 512), (64, 512), (5, 512)], 0), LX),
    "concat middle dim": (concat([(2, 200, 128), (2, 57, 128)], 1), 16 * 1024),
    "concat stick dim": (concat([(3, 4096), (3, 2048)], 1), 16 * 1024),
    "concat dim0 f32": (concat([(40, 1000), (24, 1000)], 0, "f32"), LX),
    "flatten": (flatten((100, 1000)), LX),
    "flatten odd": (flatten((7, 33, 129)), 16 * 1024),
    "concat dim0 default LX": (concat([(1024, 1024), (1024, 1024)], 0), None),
}


def lowered(text: str, lx_bytes: int | None) -> tuple[object, list[np.ndarray], list]:
    module = parse_and_verify(registry.make_context(), text, "copy.mlir")
    fn = next(op for op in module.walk() if op.name == "func.func")
    rng = np.random.default_rng(0)
    args = []
    for t in fn.function_type.inputs.data:
        dtype = np.float32 if "f32" in str(t.element_type) else np.float16
        args.append(rng.standard_normal(t.get_shape()).astype(dtype))
    want = l1.run_module(module, args)
    lower_to_dataflow(module, **({"lx_bytes": lx_bytes} if lx_bytes else {}))
    return module, args, want


@pytest.mark.parametrize("name", CASES)
def test_copy_kernel_matches_l1_at_l2_and_l3(name: str) -> None:
    text, lx_bytes = CASES[name]
    module, args, want = lowered(text, lx_bytes)
    kernels = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    assert [k.plan.kind for k in kernels] == ["copy"]
    out = kernels[0].results[0].type
    if np.prod(out.get_shape()) * 2 > (lx_bytes or LX) // 2:  # more than one box
        assert kernels[0].cores.value.data > 1, "a copy is split over the cores"
    for got, w in zip(l2.run_module(module, args, check_races=True), want):
        np.testing.assert_array_equal(got, w)
    ConvertDataflowToUnits().apply(registry.make_context(), module)
    module.verify()
    assert [p for p in module.walk() if isinstance(p, core.ProgramOp)]
    result = simulate(module, args, check_races=True)
    for got, w in zip(result.outputs, want):
        # Moves only: the card returns each value as DLFloat16 holds it.
        np.testing.assert_array_equal(got, as_on_the_card(w))


@pytest.mark.parametrize(
    "text",
    [concat([(64, 128), (64, 64)], 1), slice_of((64, 300, 128), 1, 5, 77)],
    ids=["concat of small rows", "slice of small rows"],
)
def test_rows_that_fit_stay_row_kernels(text: str) -> None:
    """A concat along the last dim of small rows, or a slice whose rows fit, is still a row
    kernel, not a copy."""
    module, _, _ = lowered(text, None)
    kinds = [k.plan.kind for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    assert kinds == ["rows"]


def test_a_slice_of_the_stick_dim_is_no_copy() -> None:
    """A slice that cuts the stick dim is not a box move (its boxes would start inside a
    stick), so a copy kernel does not take it."""
    from spyre_ir.passes.tile_copy import is_copy_op

    module = parse_and_verify(registry.make_context(), slice_of((4, 4096), 1, 10, 20), "copy.mlir")
    (op,) = [op for op in module.walk() if op.name == "spyre.slice"]
    assert not is_copy_op(op)


def test_box_plan_divides_the_concat_dim_and_keeps_whole_sticks() -> None:
    # Along the concat dim the box rows divide the piece (no store into the next piece).
    p, t = box_plan((300, 1024), 2, 32 * 1024, 64, 32, exact_dim=0)
    assert p == 1 and 300 % t == 0 and t * 1024 * 2 <= 32 * 1024
    # A box inside the stick dim holds whole sticks.
    p, t = box_plan((3, 4096), 2, 4000, 64, 32, exact_dim=None)
    assert p == 2 and t % 64 == 0 and t * 2 <= 4000


def test_the_last_position_of_a_long_prompt_stays_on_the_card(monkeypatch) -> None:
    """HF's `hidden_states[:, -1:, :]` before the LM head, on a prompt whose hidden states
    are more than half of LX: a copy kernel, not a CPU fallback (SPYRE_STRICT raises on one)."""
    import torch

    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()
    x = torch.randn(1, 600, 1024).to(torch.float16)
    got = torch.compile(lambda t: t[:, -1:, :], backend="spyre", dynamic=False)(x)
    assert got.shape == (1, 1, 1024)
    torch.testing.assert_close(got, torch.from_numpy(as_on_the_card(x[:, -1:, :].numpy())))
