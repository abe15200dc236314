"""The f32 parts of an f16 model on the card (spyre_ir/runtime/f32_policy.py): a
Llama-style block - RMSNorm with f32 statistics, rotary cos/sin from integer positions -
compiled for the card matches eager f16 on an outlier row (|x| = 10,000) and at
positions up to 8,191, and says where its f32 ops ran, every time it is compiled."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from spyre_ir.runtime.backend import reset_warnings
from spyre_ir.runtime.f32_policy import SpyreF32Warning

sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402
from card_tolerance import assert_card_close  # noqa: E402

POSITIONS = [0, 1, 2, 3, 500, 1000, 2000, 2001, 4000, 4095, 6000, 7000, 8000, 8100, 8190, 8191]


class LlamaStyleBlock(nn.Module):
    """RMSNorm (statistics in f32), q/k projections and rotary embeddings from integer
    position ids, as Llama computes them (inv_freq as a buffer, angles in f32)."""

    def __init__(self, dim: int = 128, heads: int = 4) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.norm = models.RMSNorm(dim)
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        inv = 1.0 / (
            10000.0 ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim)
        )
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, s, _ = x.shape
        h = self.norm(x)
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :].float()
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype)[:, None], emb.sin().to(x.dtype)[:, None]
        q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        rq = q * cos + models.rotate_half(q) * sin
        rk = k * cos + models.rotate_half(k) * sin
        return h, cos, sin, rq, rk


@pytest.fixture
def card(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for var in ("SPYRE_IR_DUMP", "SPYRE_EXECUTOR", "SPYRE_EXACT_F32"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPYRE_STRICT", "1")  # the host placement is policy, not a fallback
    monkeypatch.setenv("SPYRE_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    reset_warnings()
    yield
    torch._dynamo.reset()
    reset_warnings()


def inputs() -> tuple[torch.Tensor, torch.Tensor]:
    x = models.randn(1, len(POSITIONS), 128, dtype=torch.float16)
    x[0, 5, 17] = 10000.0  # an outlier: its square overflows fp16 (65,504), not DLFloat16
    x[0, 9, 3] = -3000.0
    return x, torch.tensor([POSITIONS])


def compile_and_run(model: nn.Module, args: tuple) -> tuple[tuple, list[warnings.WarningMessage]]:
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(*args)
    return got, [w for w in caught if issubclass(w.category, SpyreF32Warning)]


def test_rmsnorm_outlier_row_and_far_positions_match_eager_f16(card) -> None:
    torch.manual_seed(0)
    model = LlamaStyleBlock().half().eval()
    args = inputs()
    got, caught = compile_and_run(model, args)
    with torch.no_grad():
        want = model(*args)
    names = ("h", "cos", "sin", "rotated q", "rotated k")
    for name, g, w in zip(names, got, want, strict=True):
        assert g.dtype == w.dtype == torch.float16, name
        assert torch.isfinite(g).all(), name
        assert_card_close(g.numpy(), w.numpy(), 1e-2)
    # the outlier row is normalised, not lost: its big element stands out as in eager
    outlier = got[0][0, 5]
    assert outlier.abs().argmax().item() == 17 and outlier[17].item() > 5
    # cos/sin of the far positions are eager's (exact f32 angles), to fp16 rounding
    torch.testing.assert_close(got[1], want[1], rtol=0, atol=2.0**-10)
    torch.testing.assert_close(got[2], want[2], rtol=0, atol=2.0**-10)
    messages = [str(w.message) for w in caught]
    host = [m for m in messages if "exactly on the host" in m]
    card_f32 = [m for m in messages if "on the card in DLFloat16" in m]
    assert len(host) == 1 and "aten.cos.default" in host[0] and "aten.sin.default" in host[0]
    assert len(card_f32) == 1 and "aten.rsqrt.default" in card_f32[0]
    assert "aten.cos.default" not in card_f32[0]  # named once, where it ran


def test_the_warnings_come_with_every_compile(card) -> None:
    torch.manual_seed(0)
    model = LlamaStyleBlock().half().eval()
    args = inputs()
    for _ in range(2):
        _, caught = compile_and_run(model, args)
        kinds = sorted(
            "host" if "exactly on the host" in str(w.message) else "card" for w in caught
        )
        assert kinds == ["card", "host"]


def test_exact_f32_moves_nothing_and_warns_nothing(card, monkeypatch: pytest.MonkeyPatch) -> None:
    """SPYRE_EXACT_F32=1: f32 stays f32 on the simulated card, nothing goes to the host.
    The 16-bit tensors are still DLFloat16 there, inv_freq (an fp16 buffer) included:
    rounded to 9 fraction bits, it moves the angle of position 8,000 by radians - why
    the default computes those angles on the host."""
    monkeypatch.setenv("SPYRE_EXACT_F32", "1")
    torch.manual_seed(0)
    model = LlamaStyleBlock().half().eval()
    args = inputs()
    got, caught = compile_and_run(model, args)
    assert caught == []
    with torch.no_grad():
        want = model(*args)
    assert_card_close(got[0].numpy(), want[0].numpy(), 1e-2)  # RMSNorm, f32 statistics
    far = POSITIONS.index(8000)
    assert (got[1][0, 0, far] - want[1][0, 0, far]).abs().max().item() > 0.1
