"""Matmul epilogues fused into the matmul kernel (spyre-fuse's switches, and
spyre-sink-matmul-reshapes for linear layers on 3-D activations): each kind, fused and
switched off, lowered to L2 and run by the L2 interpreter, matches the L1 interpreter;
fused, the matmul and its epilogue are one kernel."""

from __future__ import annotations

import capture
import numpy as np
import pytest
import torch
from test_dataflow_differential import lowered_matches
from test_sim_engine import parse
from torch import nn

from spyre_ir.pipelines import UNFUSED

MATMUL = "%p = spyre.matmul %a, %b : tensor<67x96xf32>, tensor<96x130xf32> -> tensor<67x130xf32>"
ARGS = "%a: tensor<67x96xf32>, %b: tensor<96x130xf32>"
# kind -> (extra arguments, epilogue ops ending in %r, its switch)
EPILOGUES = {
    "bias": (", %c: tensor<130xf32>",
             "%r = spyre.add %p, %c : tensor<67x130xf32>, tensor<130xf32> -> tensor<67x130xf32>",
             "fuse_bias"),
    "residual": (", %x: tensor<67x130xf32>",
                 "%r = spyre.add %x, %p : tensor<67x130xf32>, tensor<67x130xf32> -> tensor<67x130xf32>",
                 "fuse_residual"),
    "scale": ("", """%s = spyre.full {value = 0.125 : f64} : tensor<f32>
  %r = spyre.mul %p, %s : tensor<67x130xf32>, tensor<f32> -> tensor<67x130xf32>""", "fuse_scale"),
    "gelu": ("", "%r = spyre.gelu %p : tensor<67x130xf32> -> tensor<67x130xf32>", "fuse_activation"),
    "silu": ("", """%n = spyre.neg %p : tensor<67x130xf32> -> tensor<67x130xf32>
  %e = spyre.exp %n : tensor<67x130xf32> -> tensor<67x130xf32>
  %one = spyre.full {value = 1.0 : f64} : tensor<f32>
  %d = spyre.add %e, %one : tensor<67x130xf32>, tensor<f32> -> tensor<67x130xf32>
  %r = spyre.div %p, %d : tensor<67x130xf32>, tensor<67x130xf32> -> tensor<67x130xf32>""",
             "fuse_activation"),
    "cast": ("", "%r = spyre.cast %p : tensor<67x130xf32> -> tensor<67x130xf16>", "fuse_cast"),
}  # fmt: skip


def module_of(kind: str):
    extra, ops, _ = EPILOGUES[kind]
    out = "tensor<67x130xf16>" if kind == "cast" else "tensor<67x130xf32>"
    return parse(f"""
func.func @main({ARGS}{extra}) -> {out} {{
  {MATMUL}
  {ops}
  func.return %r : {out}
}}""")


def inputs_of(module) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    (fn,) = module.body.block.ops
    return [rng.standard_normal([int(d) for d in a.type.get_shape()]).astype(np.float32)
            for a in fn.body.block.args]  # fmt: skip


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "off"])
@pytest.mark.parametrize("kind", EPILOGUES)
def test_epilogue_matches_l1(kind: str, fused: bool) -> None:
    module = module_of(kind)
    switch = EPILOGUES[kind][2]
    # An f16 result: one f16 ulp where the f32 sums round to either side.
    tol = 1e-2 if kind == "cast" else 1e-5
    kernels = lowered_matches(module, inputs_of(module), tol, **({} if fused else {switch: False}))
    assert len(kernels) == (1 if fused else 2)


class Linear3d(nn.Module):
    """nn.Linear on [b, s, d] with a bias, then silu and a residual add."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(96, 96)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + nn.functional.silu(self.proj(x))


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_linear_layer_epilogue_on_3d_activations(fused: bool) -> None:
    x = torch.randn(2, 33, 96, generator=torch.Generator().manual_seed(1))
    ((module, inputs),) = capture.capture(Linear3d(), (x,))
    kernels = lowered_matches(module, inputs, 1e-5, **({} if fused else UNFUSED))
    matmul = [k for k in kernels if k.sym_name.data.startswith("matmul")]
    assert len(matmul) == 1
    if fused:
        # Bias, silu and the residual run in the matmul's kernel; what is left is
        # layout (the 3-D input and output's own stick layouts).
        body = {op.properties["kind"].data for op in matmul[0].walk() if "kind" in op.properties}
        assert {"spyre.add", "spyre.exp", "spyre.div"} <= body
    assert len(kernels) < 4 if fused else len(kernels) >= 3


SWIGLU = """
func.func @main(%a: tensor<67x256xf32>, %wg: tensor<130x256xf32>, %wu: tensor<130x256xf32>) -> tensor<67x130xf32> {
  %tg = spyre.transpose %wg perm = [1, 0] : tensor<130x256xf32> -> tensor<256x130xf32>
  %g = spyre.matmul %a, %tg : tensor<67x256xf32>, tensor<256x130xf32> -> tensor<67x130xf32>
  %n = spyre.neg %g : tensor<67x130xf32> -> tensor<67x130xf32>
  %e = spyre.exp %n : tensor<67x130xf32> -> tensor<67x130xf32>
  %one = spyre.full {value = 1.0 : f64} : tensor<f32>
  %d = spyre.add %e, %one : tensor<67x130xf32>, tensor<f32> -> tensor<67x130xf32>
  %s = spyre.div %g, %d : tensor<67x130xf32>, tensor<67x130xf32> -> tensor<67x130xf32>
  %tu = spyre.transpose %wu perm = [1, 0] : tensor<130x256xf32> -> tensor<256x130xf32>
  %u = spyre.matmul %a, %tu : tensor<67x256xf32>, tensor<256x130xf32> -> tensor<67x130xf32>
  %r = spyre.mul %s, %u : tensor<67x130xf32>, tensor<67x130xf32> -> tensor<67x130xf32>
  func.return %r : tensor<67x130xf32>
}"""

TWO_OUTPUTS = """
func.func @main(%a: tensor<67x256xf32>, %b: tensor<256x130xf32>, %c: tensor<256x130xf32>) -> (tensor<67x130xf32>, tensor<67x130xf32>) {
  %p = spyre.matmul %a, %b : tensor<67x256xf32>, tensor<256x130xf32> -> tensor<67x130xf32>
  %q = spyre.matmul %a, %c : tensor<67x256xf32>, tensor<256x130xf32> -> tensor<67x130xf32>
  func.return %p, %q : tensor<67x130xf32>, tensor<67x130xf32>
}"""


@pytest.mark.parametrize("fused", [True, False], ids=["paired", "off"])
@pytest.mark.parametrize("text", [SWIGLU, TWO_OUTPUTS], ids=["swiglu", "two-outputs"])
@pytest.mark.parametrize("split", [(), (1, 8, 1, 4), (1, 32, 1, 1)], ids=["planned", "k4", "m32"])
def test_matmul_pair_matches_l1(text: str, fused: bool, split: tuple[int, ...]) -> None:
    """Two matmuls sharing A in one kernel (spyre-fuse's pairs), their B tiles one per
    corelet, with the K loop split over cores too: the same values as L1."""
    # A forced split needs whole sticks of N; planned, N is not a multiple of one.
    module = parse(text.replace("130", "192") if split else text)
    options = {"split": split} if split else {}
    if not fused:
        options["fuse_matmul_pairs"] = False
    # Weights at Linear's scale (1 / sqrt(K)), so g, u and silu(g) * u stay O(1) and f32
    # rounding of the K loop's partial sums stays within the tolerance.
    a, *weights = inputs_of(module)
    inputs = [a, *(w / 16 for w in weights)]
    kernels = lowered_matches(module, inputs, 1e-5, **options)
    matmuls = [k for k in kernels if k.sym_name.data.startswith("matmul")]
    assert len(matmuls) == (1 if fused else 2)


RESIDUAL_THEN_NORM = """
func.func @main(%a: tensor<67x256xf32>, %w: tensor<256x130xf32>, %x: tensor<67x130xf32>) -> (tensor<67x130xf32>, tensor<67x130xf32>) {
  %p = spyre.matmul %a, %w : tensor<67x256xf32>, tensor<256x130xf32> -> tensor<67x130xf32>
  %s = spyre.add %x, %p : tensor<67x130xf32>, tensor<67x130xf32> -> tensor<67x130xf32>
  %two = spyre.full {value = 2.0 : f64} : tensor<f32>
  %q = spyre.pow %s, %two : tensor<67x130xf32>, tensor<f32> -> tensor<67x130xf32>
  %m = spyre.mean %q dims = [-1] keepdim : tensor<67x130xf32> -> tensor<67x1xf32>
  %r = spyre.rsqrt %m : tensor<67x1xf32> -> tensor<67x1xf32>
  %n = spyre.mul %s, %r : tensor<67x130xf32>, tensor<67x1xf32> -> tensor<67x130xf32>
  func.return %s, %n : tensor<67x130xf32>, tensor<67x130xf32>
}"""


@pytest.mark.parametrize("trim", [True, False], ids=["trimmed", "kept"])
def test_trimmed_epilogue_matches_l1(trim: bool) -> None:
    """A residual add then an RMSNorm: trimmed, the square leaves the matmul's kernel
    for the norm's, which reads only the sum; the values are L1's either way."""
    module = parse(RESIDUAL_THEN_NORM)
    a, w, x = inputs_of(module)
    kernels = lowered_matches(module, [a, w / 16, x], 1e-5, trim_epilogues=trim)
    (matmul,) = [k for k in kernels if k.sym_name.data.startswith("matmul")]
    body = {op.properties["kind"].data for op in matmul.walk() if "kind" in op.properties}
    assert ("spyre.pow" in body) is not trim
    assert len(matmul.outputs) == (1 if trim else 2)


NARROW_THEN_BROADCAST = """
func.func @main(%a: tensor<8x64xf32>, %w: tensor<1x64xf32>, %v: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %t = spyre.transpose %w perm = [1, 0] : tensor<1x64xf32> -> tensor<64x1xf32>
  %g = spyre.matmul %a, %t : tensor<8x64xf32>, tensor<64x1xf32> -> tensor<8x1xf32>
  %s = spyre.sigmoid %g : tensor<8x1xf32> -> tensor<8x1xf32>
  %r = spyre.mul %s, %v : tensor<8x1xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  func.return %r : tensor<8x64xf32>
}"""


def test_matmul_result_broadcast_wider_is_not_an_epilogue() -> None:
    """Qwen2-MoE's shared-expert gate, sigmoid(x @ w^T) [m, 1] times the shared expert's
    [m, n]: the mul is wider than the matmul's tiles, so it runs in a rows kernel of its
    own (it was fused and failed: a cast of the [8, 1] accumulator into an [8, 64] tile,
    or NotRowLocal in the epilogue's row analysis)."""
    module = parse(NARROW_THEN_BROADCAST)
    kernels = lowered_matches(module, inputs_of(module), 1e-5)
    (matmul,) = [k for k in kernels if k.sym_name.data.startswith("matmul")]
    body = {op.properties["kind"].data for op in matmul.walk() if "kind" in op.properties}
    assert "spyre.sigmoid" in body and "spyre.mul" not in body
