"""Convolutions and sliding windows on spyre (lowering/aten_conv.py).

Three levels are compared: torch eager on CPU (f32, or f16 upcast: the truth), the L1
interpreter (``executor="reference"``, which must match torch to its own precision) and
the simulated card (``executor="card"``, DLFloat16 storage, which must match L1 within
tests/card_tolerance.py's bound for a result made of `taps` rounded partial sums).
Shapes are awkward on purpose: channel counts and widths that are not whole sticks,
odd spatial sizes, groups (depthwise included), 1-D convolutions. Every compile is
strict (a CPU fallback fails it); the eager tests run under -W error, so a fallback
warning fails them too.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from card_tolerance import as_on_the_card, assert_card_close

import spyre_ir.lowering.fx_importer as fx_importer
from spyre_ir.runtime import device, fallbacks

device.setup()

F16, F32 = torch.float16, torch.float32
REF_TOL = {F32: 1e-5, F16: 1e-2}


def randn(shape: tuple[int, ...], dtype: torch.dtype, seed: int, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * scale).to(dtype)


@dataclass(frozen=True)
class Conv:
    name: str
    x: tuple[int, ...]
    w: tuple[int, ...]
    stride: int | tuple[int, ...] = 1
    padding: int | tuple[int, ...] = 0
    dilation: int | tuple[int, ...] = 1
    groups: int = 1
    bias: bool = True

    def inputs(self, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, ...]:
        fan_in = self.w[1] * (self.w[2] * (self.w[3] if len(self.w) > 3 else 1))
        x = randn(self.x, dtype, seed)
        w = randn(self.w, dtype, seed + 1, scale=fan_in**-0.5)
        b = randn((self.w[0],), dtype, seed + 2)
        return (x, w, b) if self.bias else (x, w)

    def fn(self, x, w, b=None):
        conv = F.conv2d if len(self.x) == 4 else F.conv1d
        return conv(x, w, b, stride=self.stride, padding=self.padding,
                    dilation=self.dilation, groups=self.groups)  # fmt: skip

    @property
    def taps(self) -> int:
        return self.w[2] * (self.w[3] if len(self.w) > 3 else 1)


CONVS = [
    Conv("3x3_pad1_odd_channels", (2, 5, 9, 11), (7, 5, 3, 3), padding=1),
    Conv("stride2_no_bias", (1, 3, 13, 10), (5, 3, 3, 3), stride=2, bias=False),
    Conv("5x5_stride3_pad2", (1, 3, 13, 13), (6, 3, 5, 5), stride=3, padding=2),
    Conv("dilated_rect", (1, 4, 12, 9), (3, 4, 3, 2), padding=(2, 1), dilation=(2, 3)),
    Conv(
        "groups2_mixed",
        (2, 6, 10, 7),
        (4, 3, 3, 2),
        stride=(2, 1),
        padding=(1, 0),
        dilation=(1, 2),
        groups=2,
    ),  # fmt: skip
    Conv("depthwise", (2, 9, 9, 9), (9, 1, 3, 3), stride=2, padding=1, groups=9),
    Conv("depthwise_multiplier", (1, 4, 7, 7), (8, 1, 3, 3), padding=1, groups=4),
    Conv("pointwise_1x1", (2, 70, 5, 7), (67, 70, 1, 1)),
    Conv("wide_channels", (1, 67, 8, 8), (65, 67, 3, 3), padding=1),
    Conv("conv1d", (2, 5, 29), (6, 5, 3), stride=2, padding=1),
    Conv("conv1d_groups", (1, 6, 17), (6, 2, 4), dilation=2, groups=3),
]


def compiled(fn, executor: str):
    torch._dynamo.reset()
    options = {"strict": True, "executor": executor}
    return torch.compile(fn, backend="spyre", dynamic=False, options=options)


def imported_targets(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    seen: set[str] = set()
    real = fx_importer.import_graph

    def recording(gm: torch.fx.GraphModule, name: str = "main"):
        module = real(gm, name)
        module.verify()
        seen.update(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return module

    monkeypatch.setattr(fx_importer, "import_graph", recording)
    return seen


def close_to_torch(got: torch.Tensor, want: torch.Tensor, dtype: torch.dtype) -> None:
    """L1 against torch: f16 results rounded once from f32 sums, as eager's (which
    accumulate in f32), but here each tap's matmul rounds once: a few f16 places of the
    largest output."""
    tol = REF_TOL[dtype]
    atol = tol if dtype == F32 else max(tol, 4 * 2**-10 * float(want.abs().max()))
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=atol)


# ------------------------------------------------------------------------ compiled, L1
@pytest.mark.parametrize("dtype", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("conv", CONVS, ids=lambda c: c.name)
def test_l1_matches_torch(conv: Conv, dtype: torch.dtype, monkeypatch) -> None:
    seen = imported_targets(monkeypatch)
    f = compiled(conv.fn, "reference")
    with torch.no_grad():
        for seed in (0, 1):
            args = conv.inputs(dtype, seed)
            want = conv.fn(*(a.float() for a in args)).to(dtype)
            got = f(*args)
            assert got.dtype == dtype and got.shape == want.shape
            close_to_torch(got, want, dtype)
    assert "aten.convolution.default" in seen


# ------------------------------------------------------------------ the card against L1
CARD_CONVS = ["3x3_pad1_odd_channels", "groups2_mixed", "depthwise", "conv1d", "wide_channels"]


@pytest.mark.parametrize("dtype", [F16, F32], ids=["f16", "f32"])
@pytest.mark.parametrize("name", CARD_CONVS)
def test_card_matches_l1(name: str, dtype: torch.dtype) -> None:
    conv = next(c for c in CONVS if c.name == name)
    args = conv.inputs(dtype)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "spyre: float32")
        reference = compiled(conv.fn, "reference")(*args)
        card = compiled(conv.fn, "card")(*args)
    # f32 is stored as DLFloat16 on the card: compare it as an f16 result
    ref = reference.to(F16).numpy()
    assert_card_close(card.to(F16).numpy(), ref, 1e-2, partials=conv.taps + 2)


# ------------------------------------------------------- large planes, in row blocks
def test_row_blocks_cover_the_plane_within_the_budget() -> None:
    from spyre_ir.lowering import aten_conv

    lx = 2 * 1024 * 1024
    assert aten_conv.row_blocks(56, 56, 9, 2, lx, 64) == [(0, 56)]  # small: one block
    for oh, ow, taps in ((224, 224, 9), (112, 112, 49), (90, 117, 49), (7, 3000, 25)):
        blocks = aten_conv.row_blocks(oh, ow, taps, 2, lx, 64)
        assert len(blocks) > 1
        assert [first for first, _ in blocks] == [sum(r for _, r in blocks[:i])
                                                  for i in range(len(blocks))]  # fmt: skip
        assert sum(rows for _, rows in blocks) == oh
        cap = lx // aten_conv.BLOCK_LX_FRACTION
        assert all(taps * rows * ow * 2 <= max(cap, taps * ow * 2) for _, rows in blocks)


@pytest.mark.parametrize("conv", CONVS, ids=lambda c: c.name)
def test_l1_matches_torch_one_output_row_per_block(conv: Conv, monkeypatch) -> None:
    """Every convolution cut into blocks of one output row (the budgets made tiny):
    the row arithmetic of the blocks (stride, dilation, padding at the edges)."""
    from spyre_ir.lowering import aten_conv

    monkeypatch.setattr(aten_conv, "WHOLE_LX_FRACTION", 2**40)
    monkeypatch.setattr(aten_conv, "BLOCK_LX_FRACTION", 2**40)
    blocks = []
    real = aten_conv.conv2d_block
    monkeypatch.setattr(aten_conv, "conv2d_block", lambda *a: blocks.append(a) or real(*a))
    f = compiled(conv.fn, "reference")
    with torch.no_grad():
        args = conv.inputs(F32)
        want = conv.fn(*args)
        close_to_torch(f(*args), want, F32)
    assert len(blocks) == (want.shape[2] if want.dim() == 4 else 1)  # one per output row


def test_card_matches_l1_on_a_plane_in_row_blocks() -> None:
    """A 7x7 convolution whose one-channel buffer (49 x 90 x 117 f16, 1 MB) needs row
    blocks at the card's LX: the card against L1, and the blocks are there."""
    from spyre_ir.lowering import aten_conv

    conv = Conv("7x7_large_plane", (1, 3, 90, 117), (5, 3, 7, 7), padding=(3, 2))
    assert len(aten_conv.row_blocks(90, 115, 49, 2, 2 * 1024 * 1024, 64)) > 1
    args = conv.inputs(F16)
    with torch.no_grad():
        reference = compiled(conv.fn, "reference")(*args)
        card = compiled(conv.fn, "card")(*args)
    close_to_torch(reference, conv.fn(*(a.float() for a in args)).to(F16), F16)
    assert_card_close(card.numpy(), reference.numpy(), 1e-2, partials=conv.taps + 2)


class SmallCNN(torch.nn.Module):
    """Stem, depthwise-separable block, strided conv, global pooling, classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 12, 3, padding=1)
        self.depthwise = torch.nn.Conv2d(12, 12, 3, padding=1, groups=12)
        self.pointwise = torch.nn.Conv2d(12, 20, 1, bias=False)
        self.down = torch.nn.Conv2d(20, 24, 3, stride=2, padding=1, groups=4)
        self.head = torch.nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.stem(x))
        x = F.relu(self.pointwise(self.depthwise(x)) + x.mean(1, keepdim=True))
        x = F.silu(self.down(x))
        return self.head(x.mean((2, 3)))


@pytest.mark.parametrize("executor", ["reference", "card"])
def test_small_cnn(executor: str, monkeypatch) -> None:
    torch.manual_seed(0)
    model = SmallCNN().eval().to(F16)
    x = randn((2, 3, 15, 13), F16, 3)
    seen = imported_targets(monkeypatch)
    with torch.no_grad():
        want = model.float()(x.float())
        model = model.to(F16)
        got = compiled(model, executor)(x)
    assert "aten.convolution.default" in seen
    assert_card_close(got.numpy(), want.to(F16).numpy(), 1e-2, partials=12)


# ----------------------------------------------------------------------- sliding windows
def _windows(x, y):
    return (x.unfold(1, 3, 2), x.unfold(-1, 4, 4), x.unfold(0, 1, 1),
            F.unfold(y, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)), F.unfold(y, 1),
            F.unfold(y[0], 3, stride=2))  # fmt: skip


@pytest.mark.parametrize("executor", ["reference", "card"])
@pytest.mark.parametrize("dtype", [F32, F16], ids=["f32", "f16"])
def test_unfold_and_im2col(dtype: torch.dtype, executor: str, monkeypatch) -> None:
    seen = imported_targets(monkeypatch)
    x, y = randn((5, 11, 67), dtype, 0), randn((2, 3, 7, 9), dtype, 1)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "spyre: float32")
        got = compiled(_windows, executor)(x, y)
    for g, w in zip(got, _windows(x, y), strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        if executor == "card" and dtype == F16:  # moved as is, or stored as DLFloat16
            exact = g.numpy() == w.numpy()
            assert (exact | (g.numpy() == as_on_the_card(w.numpy()))).all()
        elif executor == "card":  # f32 stored as DLFloat16: one rounding, 9 fraction bits
            torch.testing.assert_close(g, w, rtol=2**-9, atol=0)
        else:  # data movement only: exact
            assert torch.equal(g, w)
    assert {"aten.unfold.default", "aten.im2col.default"} <= seen


# ------------------------------------------------------------------------------- eager
def test_eager_conv2d_on_the_card() -> None:
    conv = next(c for c in CONVS if c.name == "groups2_mixed")
    fallbacks.clear()
    args = conv.inputs(F16)
    got = conv.fn(*(a.to("spyre") for a in args))
    assert got.device.type == "spyre"
    want = conv.fn(*(a.float() for a in args)).to(F16)
    assert_card_close(got.cpu().numpy(), want.numpy(), 1e-2, partials=conv.taps + 2)
    assert not [r for r in fallbacks.records() if "convolution" in r.op]


def test_eager_conv_module_and_unfold_view() -> None:
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Conv1d(5, 7, 3, padding=1), torch.nn.ReLU()).to(F16)
    x = randn((2, 5, 19), F16, 4)
    with torch.no_grad():
        want = model.float()(x.float()).to(F16)
        got = model.to(F16).to("spyre")(x.to("spyre"))
    assert_card_close(got.cpu().numpy(), want.numpy(), 1e-2, partials=5)
    windows = x.to("spyre").unfold(2, 4, 3)  # a view, as on CPU
    assert torch.equal(windows.cpu(), x.unfold(2, 4, 3))
    image = randn((2, 3, 7, 9), F16, 5)
    cols = F.unfold(image.to("spyre"), (3, 2), padding=1, stride=(1, 2))  # compiled: im2col
    want = F.unfold(image, (3, 2), padding=1, stride=(1, 2)).numpy()
    got = cols.cpu().numpy()
    assert got.shape == want.shape
    assert ((got == want) | (got == as_on_the_card(want))).all()


# ---------------------------------------------------------------------------- limits
def test_transposed_and_3d_convolutions_fall_back_naming_the_op() -> None:
    fallbacks.clear()
    x = randn((1, 3, 6, 6), F16, 0)
    deconv = torch.nn.ConvTranspose2d(3, 2, 3).to(F16)
    with pytest.warns(UserWarning, match=r"aten\.convolution\.default.*transposed"):
        got = deconv.to("spyre")(x.to("spyre"))
    torch.testing.assert_close(got.cpu(), deconv.cpu()(x))
    x3, w3 = randn((1, 2, 4, 4, 4), F16, 1), randn((3, 2, 2, 2, 2), F16, 2)
    with pytest.warns(UserWarning, match=r"aten\.convolution\.default.*3-D convolutions"):
        F.conv3d(x3.to("spyre"), w3.to("spyre"))
    kinds = {r.kind for r in fallbacks.records() if "convolution" in r.op}
    assert kinds == {"unsupported"}


def test_strict_compile_names_the_unsupported_convolution() -> None:
    deconv = torch.nn.ConvTranspose1d(3, 2, 3)
    with pytest.raises(Exception, match=r"aten\.convolution\.default"):
        compiled(deconv, "reference")(randn((1, 3, 8), F32, 0))


# ------------------------------------------------------------------------------ costs
def test_conv_cost_entries_by_hand() -> None:
    from spyre_ir import cost_model as cm
    from spyre_ir.hardware import DEFAULT_CONFIG as C

    conv = cm.ConvShape(2, 6, 10, 7, 4, 3, 2, stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                        groups=2)  # fmt: skip
    assert conv.out == (5, 5)  # (10 + 2 - 2 - 1) // 2 + 1, (7 - 2 - 1) // 1 + 1
    assert conv.m == 50
    assert conv.flops() == 2 * 50 * 4 * 3 * 3 * 2
    assert conv.min_bytes(2) == 2 * (2 * 6 * 10 * 7 + 4 * 3 * 3 * 2 + 50 * 4)
    assert conv.im2col_bytes(2) == 2 * 50 * 6 * 6
    resnet = cm.ConvShape(1, 64, 56, 56, 64, 3, 3, padding=(1, 1))
    flops, nbytes = 2 * 56 * 56 * 64 * 64 * 9, 2 * (64 * 56 * 56 * 2 + 64 * 64 * 9)
    assert resnet.flops() == flops and resnet.min_bytes(2) == nbytes
    assert cm.conv_roofline_seconds(resnet, 2, C) == max(flops / C.fp16_peak_flops,
                                                         nbytes / C.lpddr_bandwidth)  # fmt: skip
    buffer = 2 * 56 * 56 * 9 * 64
    want = cm.kernel_bound_seconds(0, 2 * 64 * 56 * 56, buffer, C) + cm.kernel_bound_seconds(
        flops, buffer + 2 * 64 * 64 * 9, 2 * 56 * 56 * 64, C
    )
    assert cm.conv_im2col_bound_seconds(resnet, 2, C) == pytest.approx(want)
    assert cm.conv_im2col_bound_seconds(resnet, 2, C) > cm.conv_roofline_seconds(resnet, 2, C)


def test_simulated_conv_is_no_faster_than_its_bounds() -> None:
    from spyre_ir import cost_model as cm
    from spyre_ir.hardware import DEFAULT_CONFIG as C
    from spyre_ir.runtime import telemetry

    conv = Conv("3x3_pad1_odd_channels", (2, 5, 9, 11), (7, 5, 3, 3), padding=1, bias=False)
    args = conv.inputs(F16)
    f = compiled(conv.fn, "card")
    with torch.no_grad():
        f(*args)
        with telemetry.recording() as rec:
            f(*args)
    simulated = sum(launch.report["simulated_us"] for launch in rec.launches)
    shape = cm.ConvShape(2, 5, 9, 11, 7, 3, 3, padding=(1, 1))
    assert simulated * 1e-6 >= cm.conv_roofline_seconds(shape, 2, C)
    assert simulated * 1e-6 >= cm.conv_im2col_bound_seconds(shape, 2, C)
