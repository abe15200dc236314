"""`spyre-decompose` against torch eager: the primitive ops it emits, run by the numpy
interpreter (`spyre_ir.interp.tensor.run_module`), must compute softmax / layer_norm /
rms_norm as torch does on CPU (f32 to 1e-5, f16 and bf16 to 1e-2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from spyre_ir.diagnostics import parse_and_verify, verify_all
from spyre_ir.dialects.spyre import LayerNormOp, RmsNormOp, SoftmaxOp
from spyre_ir.interp.tensor import run_module
from spyre_ir.passes.decompose import SpyreDecompose
from spyre_ir.registry import make_context

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
TOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 1e-2}
COMPOSITES = (SoftmaxOp, LayerNormOp, RmsNormOp)

_CTX = make_context()


def ttype(shape: tuple[int, ...], elt: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + elt + ">"


def random_tensor(shape: tuple[int, ...], elt: str, seed: int, scale: float = 1.0) -> torch.Tensor:
    """A torch tensor of `elt` with normal values (offset so means are not ~0)."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale + 0.5).to(TORCH[elt])


def storage(t: torch.Tensor) -> np.ndarray:
    """The interpreter's storage array for a torch tensor (bf16 -> float32 values)."""
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def decompose(text: str, **options) -> object:
    module = parse_and_verify(_CTX, text, "test.mlir")
    SpyreDecompose(**options).apply(_CTX, module)
    assert verify_all(module, "test.mlir") == []
    return module


def run_decomposed(
    signature: list[tuple[str, tuple[int, ...], str]],
    body: str,
    result: str,
    args: list[torch.Tensor],
) -> np.ndarray:
    params = ", ".join(f"%{name}: {ttype(shape, elt)}" for name, shape, elt in signature)
    text = (
        f"func.func @main({params}) -> {result} {{\n"
        f"  %0 = {body}\n"
        f"  func.return %0 : {result}\n"
        f"}}\n"
    )
    module = decompose(text)
    assert not any(isinstance(op, COMPOSITES) for op in module.walk())
    (out,) = run_module(module, [storage(a) for a in args], entry="main")
    return out


def assert_matches(got: np.ndarray, expected: torch.Tensor, elt: str) -> None:
    want = storage(expected)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    tol = TOL[elt]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("shape,dim", [((4, 33), -1), ((4, 33), 0), ((2, 3, 17), 1), ((7,), 0)])
def test_softmax(elt, shape, dim):
    x = random_tensor(shape, elt, seed=1, scale=4.0)
    t = ttype(shape, elt)
    got = run_decomposed([("x", shape, elt)], f"spyre.softmax %x dim = {dim} : {t} -> {t}", t, [x])
    assert_matches(got, torch.softmax(x, dim), elt)


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize(
    "weight,bias", [(True, True), (False, False), (True, False), (False, True)]
)
@pytest.mark.parametrize("shape,ndim", [((4, 40), 1), ((2, 3, 24), 1), ((2, 3, 24), 2)])
def test_layer_norm(elt, weight, bias, shape, ndim):
    norm_shape = shape[-ndim:]
    x = random_tensor(shape, elt, seed=2, scale=3.0)
    w = random_tensor(norm_shape, elt, seed=3)
    b = random_tensor(norm_shape, elt, seed=4)
    t, nt = ttype(shape, elt), ttype(norm_shape, elt)
    signature, args, affine = [("x", shape, elt)], [x], ""
    if weight:
        signature.append(("w", norm_shape, elt))
        args.append(w)
        affine += f" weight(%w : {nt})"
    if bias:
        signature.append(("b", norm_shape, elt))
        args.append(b)
        affine += f" bias(%b : {nt})"
    body = (
        f"spyre.layer_norm %x{affine} {{eps = 1.0e-05 : f64, normalized_ndim = {ndim} : i64}}"
        f" : {t} -> {t}"
    )
    got = run_decomposed(signature, body, t, args)
    expected = F.layer_norm(x, norm_shape, w if weight else None, b if bias else None, 1e-5)
    assert_matches(got, expected, elt)


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("weight", [True, False])
@pytest.mark.parametrize("shape", [(4, 64), (2, 3, 48)])
def test_rms_norm(elt, weight, shape):
    x = random_tensor(shape, elt, seed=5, scale=2.0)
    w = random_tensor(shape[-1:], elt, seed=6)
    t, wt = ttype(shape, elt), ttype(shape[-1:], elt)
    signature, args = [("x", shape, elt)], [x]
    affine = ""
    if weight:
        signature.append(("w", shape[-1:], elt))
        args.append(w)
        affine = f" weight(%w : {wt})"
    body = f"spyre.rms_norm %x{affine} {{eps = 1.0e-06 : f64}} : {t} -> {t}"
    got = run_decomposed(signature, body, t, args)
    expected = F.rms_norm(x, shape[-1:], w if weight else None, 1e-6)
    assert_matches(got, expected, elt)


@pytest.mark.parametrize("elt", ["f16", "bf16"])
def test_half_inputs_compute_in_f32(elt):
    """Half composites are rewritten with casts to f32 and one cast back at the end."""
    t = ttype((4, 8), elt)
    module = decompose(
        f"func.func @main(%x: {t}) -> {t} {{\n"
        f"  %0 = spyre.softmax %x dim = 1 : {t} -> {t}\n"
        f"  func.return %0 : {t}\n}}\n"
    )
    text = str(module)
    assert f"spyre.cast %x : {t} -> tensor<4x8xf32>" in text
    assert text.count("spyre.cast") == 2
    assert "spyre.exp %2 : tensor<4x8xf32> -> tensor<4x8xf32>" in text


def test_ops_option_selects_composites():
    t = ttype((4, 8), "f32")
    text = (
        f"func.func @main(%x: {t}) -> ({t}, {t}, {t}) {{\n"
        f"  %0 = spyre.softmax %x dim = 1 : {t} -> {t}\n"
        f"  %1 = spyre.layer_norm %x {{eps = 1.0e-05 : f64}} : {t} -> {t}\n"
        f"  %2 = spyre.rms_norm %x {{eps = 1.0e-06 : f64}} : {t} -> {t}\n"
        f"  func.return %0, %1, %2 : {t}, {t}, {t}\n}}\n"
    )

    def left(**options) -> set[str]:
        module = decompose(text, **options)
        return {op.name for op in module.walk() if isinstance(op, COMPOSITES)}

    assert left() == set()
    assert left(ops=("softmax",)) == {"spyre.layer_norm", "spyre.rms_norm"}
    assert left(ops=("spyre.layer_norm", "rms_norm")) == {"spyre.softmax"}
    assert left(ops=()) == {"spyre.softmax", "spyre.layer_norm", "spyre.rms_norm"}


def test_ops_option_parses_from_a_pipeline():
    from xdsl.utils.arg_spec import parse_pipeline

    def parse(spec: str) -> SpyreDecompose:
        (arg_spec,) = parse_pipeline(spec)
        return SpyreDecompose.from_pass_spec(arg_spec)

    assert parse("spyre-decompose").ops == ("softmax", "layer_norm", "rms_norm")
    assert parse("spyre-decompose{ops=softmax}").ops == ("softmax",)
    assert parse("spyre-decompose{ops=softmax,rms_norm}").ops == ("softmax", "rms_norm")
    assert parse('spyre-decompose{ops="spyre.layer_norm"}').ops == ("spyre.layer_norm",)
    assert parse("spyre-decompose{ops}").ops == ()
    with pytest.raises(ValueError, match="unknown op"):
        parse("spyre-decompose{ops=gelu}")
