"""`spyre-stickify`: every tensor gets a valid stick layout, every encoded reshape is a
view, and the numerics do not move: the L1 interpreter gives bit-identical results
before and after, on the frontend's graphs and on hand-written L1."""

from __future__ import annotations

import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.printer import Printer

from spyre_ir.diagnostics import DiagnosticError, parse_and_verify, verify_all
from spyre_ir.dialects.spyre import (
    ReshapeOp,
    RestickifyOp,
    TransposeOp,
    element_type_name,
)
from spyre_ir.dialects.stick_layout import (
    StickLayoutAttr,
    tensor_layout,
    verify_tensor_layout,
)
from spyre_ir.interp.tensor import run_module
from spyre_ir.layout import (
    default_layout,
    generic_layout,
    host_to_device_offsets,
    layout_sticked_on,
    padding_elements,
)
from spyre_ir.passes.stickify import SpyreStickify, offsets_agree, reshape_is_view
from spyre_ir.registry import PASSES, make_context

sys.path.insert(0, str(Path(__file__).parent))
import capture  # noqa: E402
import models  # noqa: E402

_CTX = make_context()


def printed(module: ModuleOp) -> str:
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def stickify(module: ModuleOp) -> ModuleOp:
    SpyreStickify().apply(_CTX, module)
    assert verify_all(module, "test.mlir") == []
    return module


def tensor_values(module: ModuleOp):
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            for block in op.body.blocks:
                yield from block.args
        yield from op.results


def check_annotated(module: ModuleOp, custom: frozenset[str] = frozenset()) -> None:
    """The pass's contract on `module` (which came without layouts, but for the
    arguments named in `custom`)."""
    for value in tensor_values(module):
        t = value.type
        if not isinstance(t, TensorType):
            continue
        shape = t.get_shape()
        layout = tensor_layout(t)
        if not shape or 0 in shape:  # scalars and empty tensors stay plain
            assert layout is None, value
            continue
        if layout is None:
            # Only a reshape that is no view, read through restickifies only.
            assert isinstance(value.owner, ReshapeOp), t
            assert all(isinstance(u.operation, RestickifyOp) for u in value.uses)
            continue
        verify_tensor_layout(t)
        if value.name_hint in custom:
            continue
        assert layout == default_layout(shape, element_type_name(t.element_type)), value
    for op in module.walk():
        if isinstance(op, ReshapeOp) and tensor_layout(op.result.type) is not None:
            source = tensor_layout(op.input.type)
            assert source is not None
            assert offsets_agree(source, tensor_layout(op.result.type))
        if isinstance(op, (ReshapeOp, TransposeOp, RestickifyOp, func.ReturnOp, func.CallOp)):
            continue
        for operand in op.operands:  # every other op reads the default layout
            layout = tensor_layout(operand.type)
            if layout is not None:
                elt = element_type_name(operand.type.element_type)
                assert layout == default_layout(layout.host_shape, elt)


def assert_bit_identical(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.tobytes() == w.tobytes()


def count(module: ModuleOp, kind: type) -> int:
    return sum(isinstance(op, kind) for op in module.walk())


# ------------------------------------------------------------------ frontend graphs

FRONTEND = ["mlp", "rmsnorm_swiglu", "attention_manual", "attention_is_causal", "rotary"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["f32", "f16"])
@pytest.mark.parametrize("name", FRONTEND)
def test_frontend_graphs_keep_their_values(name: str, dtype: torch.dtype) -> None:
    model, args = models.build(name, dtype)
    graphs = capture.capture(model, args)
    assert graphs
    for module, inputs in graphs:
        want = run_module(module, inputs)
        stickify(module)
        check_annotated(module)
        assert_bit_identical(run_module(module, inputs), want)
        # Linear flattens [b, s, d] to [b * s, d]: dim 0 no longer sits just outside
        # the stick, so under default layouts that reshape moves bytes.
        assert count(module, RestickifyOp) > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny_llama_sdpa", "tiny_llama_eager"])
def test_llama_keeps_its_values(name: str) -> None:
    model, args = models.build(name, torch.float32)
    for module, inputs in capture.capture(model, args):
        want = run_module(module, inputs)
        stickify(module)
        check_annotated(module)
        assert_bit_identical(run_module(module, inputs), want)


def test_second_run_changes_nothing() -> None:
    model, args = models.build("attention_manual", torch.float16)
    ((module, _),) = capture.capture(model, args)
    once = printed(stickify(module))
    assert printed(stickify(module)) == once


# ------------------------------------------------------------------ hand-written L1


def stick_text(layout) -> str:
    return (
        f"#spyre.stick<dim = {layout.stick_dim}, device = {list(layout.device_sizes)},"
        f" map = {list(layout.dim_map)}, strides = {list(layout.stride_map)},"
        f" pad = {padding_elements(layout)}>"
    )


W_ON_K = layout_sticked_on((96, 80), "f16", 0)
HAND = f"""
func.func @main(%x: tensor<2x4x64xf16>, %b: tensor<4x100xf32>, %a: tensor<4x96xf16>,
                %w: tensor<96x80xf16, {stick_text(W_ON_K)}>, %s: tensor<f32>)
    -> (tensor<8x64xf16>, tensor<400xf32>, tensor<4x80xf16>, tensor<2x4x2x32xf16>,
        tensor<4x1xf32>, tensor<100x4xf32>, tensor<f32>) {{
  %rows = spyre.reshape %x : tensor<2x4x64xf16> -> tensor<8x64xf16>
  %flat = spyre.reshape %b : tensor<4x100xf32> -> tensor<400xf32>
  %e = spyre.exp %flat : tensor<400xf32> -> tensor<400xf32>
  %sq = spyre.mul %flat, %s : tensor<400xf32>, tensor<f32> -> tensor<400xf32>
  %sum = spyre.add %e, %sq : tensor<400xf32>, tensor<400xf32> -> tensor<400xf32>
  %mm = spyre.matmul %a, %w : tensor<4x96xf16>, tensor<96x80xf16, {stick_text(W_ON_K)}>
      -> tensor<4x80xf16>
  %heads = spyre.reshape %x : tensor<2x4x64xf16> -> tensor<2x4x2x32xf16>
  %red = spyre.sum %b dims = [1] keepdim : tensor<4x100xf32> -> tensor<4x1xf32>
  %t = spyre.transpose %b perm = [1, 0] : tensor<4x100xf32> -> tensor<100x4xf32>
  %one = spyre.reshape %red : tensor<4x1xf32> -> tensor<1x4xf32>
  %scalar = spyre.sum %one dims = [0, 1] : tensor<1x4xf32> -> tensor<f32>
  func.return %rows, %sum, %mm, %heads, %red, %t, %scalar
      : tensor<8x64xf16>, tensor<400xf32>, tensor<4x80xf16>, tensor<2x4x2x32xf16>,
        tensor<4x1xf32>, tensor<100x4xf32>, tensor<f32>
}}
"""


def hand_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    normal = lambda *shape: rng.standard_normal(shape)  # noqa: E731
    return [normal(2, 4, 64).astype(np.float16), normal(4, 100).astype(np.float32),
            normal(4, 96).astype(np.float16), normal(96, 80).astype(np.float16),
            np.asarray(0.5, np.float32)]  # fmt: skip


def test_hand_written_l1_keeps_its_values() -> None:
    module = parse_and_verify(_CTX, HAND, "hand.mlir")
    want = run_module(module, hand_inputs())
    stickify(module)
    check_annotated(module, custom=frozenset({"w"}))
    assert_bit_identical(run_module(module, hand_inputs()), want)

    restickified = {op.input.name_hint: op for op in module.walk() if isinstance(op, RestickifyOp)}
    # Non-view reshapes (one restickify each, shared by all users) and the weight
    # that came sticked on k; the [4, 1] -> [1, 4] reshape of the sparse sum is no view
    # either (one element per stick -> four in one stick).
    assert sorted(restickified) == ["flat", "heads", "one", "rows", "w"]
    default_w = StickLayoutAttr.from_layout(default_layout((96, 80), "f16"))
    assert restickified["w"].result.type.encoding == default_w
    assert tensor_layout(restickified["w"].input.type) == W_ON_K
    (fn,) = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    assert tensor_layout(fn.function_type.inputs.data[3]) == W_ON_K  # the caller's layout
    # The sparse result of a reduction over the stick dim: one element per stick.
    red = next(v for v in tensor_values(module) if v.name_hint == "red")
    assert tensor_layout(red.type).device_sizes == (1, 4, 32)
    assert padding_elements(tensor_layout(red.type)) == 31


def test_reshape_views_get_no_restickify() -> None:
    text = """
func.func @main(%x: tensor<2x4x128xf16>, %y: tensor<4x3x5x64xf32>, %z: tensor<1x100xf16>)
    -> (tensor<2x4x2x64xf16>, tensor<4x15x64xf32>, tensor<100xf16>) {
  %split = spyre.reshape %x : tensor<2x4x128xf16> -> tensor<2x4x2x64xf16>
  %merge = spyre.reshape %y : tensor<4x3x5x64xf32> -> tensor<4x15x64xf32>
  %drop = spyre.reshape %z : tensor<1x100xf16> -> tensor<100xf16>
  func.return %split, %merge, %drop : tensor<2x4x2x64xf16>, tensor<4x15x64xf32>, tensor<100xf16>
}
"""
    module = stickify(parse_and_verify(_CTX, text, "views.mlir"))
    check_annotated(module)
    assert count(module, RestickifyOp) == 0


def test_ops_it_cannot_annotate_are_located_errors() -> None:
    text = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""
    module = parse_and_verify(_CTX, text, "bad.mlir")
    where = r"bad.mlir:3:3: .*cannot give layouts to 'arith.addf'"
    with pytest.raises(DiagnosticError, match=where):
        SpyreStickify().apply(_CTX, module)


def test_every_spyre_op_is_annotated() -> None:
    # The dialect's round-trip file uses every op of SPYRE_OPS.
    path = Path(__file__).parent / "filecheck" / "dialects" / "spyre_roundtrip.mlir"
    module = stickify(parse_and_verify(_CTX, path.read_text(), str(path)))
    # Its @stick_layout and @restickify functions bring their own layouts.
    check_annotated(module, custom=frozenset({"restick"}))


def test_registered() -> None:
    assert PASSES["spyre-stickify"]() is SpyreStickify
    assert SpyreStickify.name == "spyre-stickify"


# ------------------------------------------------------------------ the view test


def _factorizations(n: int, max_rank: int) -> list[tuple[int, ...]]:
    if max_rank == 0:
        return []
    out = [(n,)]
    for d in range(1, n + 1):
        if n % d == 0:
            out += [(d, *rest) for rest in _factorizations(n // d, max_rank - 1)]
    return sorted(set(out))


def _layouts(shape: tuple[int, ...], dtype: str):
    yield default_layout(shape, dtype)
    for dim in range(len(shape) - 1):
        yield layout_sticked_on(shape, dtype, dim)
    if len(shape) >= 3:
        yield generic_layout(shape, dtype, (*range(2, len(shape)), 0, 1))


def _check_every_reshape(counts: list[int], dtype: str) -> None:
    """`reshape_is_view` against its definition for every pair of layouts of every pair
    of shapes (rank <= 4) holding `n` elements, for each n in `counts`."""
    views = 0
    for n in counts:
        layouts = [lay for shape in _factorizations(n, 4) for lay in _layouts(shape, dtype)]
        offsets = [host_to_device_offsets(lay) for lay in layouts]
        for a, oa in zip(layouts, offsets):
            for b, ob in zip(layouts, offsets):
                exact = a.device_elements == b.device_elements and np.array_equal(oa, ob)
                assert reshape_is_view(a, b) == exact, (a, b)
                views += exact and a.host_shape != b.host_shape
    assert views > 0  # some reshapes are views


@pytest.mark.parametrize("dtype", ["f16", "f32", "i64"])
def test_view_test_matches_the_offsets_on_every_small_reshape(dtype: str) -> None:
    _check_every_reshape([*range(1, 13), 16, 100], dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["f16", "f32", "i64"])
def test_view_test_matches_the_offsets_on_more_reshapes(dtype: str) -> None:
    _check_every_reshape([*range(13, 16), *range(17, 65), 96, 128, 192, 256], dtype)


@st.composite
def reshapes(draw: st.DrawFn):
    """A shape of up to 4096 elements and another factorisation of its count."""
    dims = draw(st.lists(st.integers(1, 200), min_size=1, max_size=4))
    n = int(np.prod(dims))
    if n > 4096:
        dims, n = dims[-1:], dims[-1]
    target = draw(st.sampled_from(_factorizations(n, 4)))
    dtype = draw(st.sampled_from(["f16", "f32", "i1", "i64"]))
    source_stick = draw(st.integers(0, len(dims) - 1))
    return tuple(dims), target, dtype, source_stick


@settings(max_examples=300, deadline=None)
@given(reshapes())
def test_view_test_matches_the_offsets_on_random_reshapes(case) -> None:
    source_shape, target_shape, dtype, source_stick = case
    source = layout_sticked_on(source_shape, dtype, source_stick)
    target = default_layout(target_shape, dtype)
    assert reshape_is_view(source, target) == offsets_agree(source, target)
    assert reshape_is_view(target, target)
