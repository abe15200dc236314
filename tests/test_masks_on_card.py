"""Masks and indexing at any length on the card (issue 14, item 4).

Advanced indexing and gathers whose tiles cover part of a stick (HF's
``mask[batch_idx, kv_idx]`` lookup: 32 i1 elements of a 128-element stick, read by i64
indices of 16 per stick) compile: a tile holding part of a stick inside a tensor is a
`masked` load or store, never a verifier error. Checked level by level (L2 and the
simulator against L1, L1 against torch) and end to end: a left-padded batch through a
tiny Llama and a BERT encoder with an attention mask, with SPYRE_STRICT=1 (any CPU
fallback raises) on the card executor, against eager.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects import dataflow
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.pipelines import lower_to_dataflow, lower_to_units
from spyre_ir.registry import make_context
from spyre_ir.runtime import telemetry
from spyre_ir.sim.engine import simulate

sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402
from card_tolerance import as_on_the_card, assert_card_close  # noqa: E402

# transformers' masking_utils for a (4, 32) attention_mask, as the importer gives it:
# the padding mask flattened to 128 i1 and read at batch * 32 + kv for every (batch, kv).
MASK_LOOKUP = """
func.func @main(%mask: tensor<4x32xi64>) -> tensor<4x1x1x32xi1> {
  %b = spyre.cast %mask : tensor<4x32xi64> -> tensor<4x32xi1>
  %flat = spyre.reshape %b : tensor<4x32xi1> -> tensor<128xi1>
  %kv = spyre.iota {dim = 3 : i64, start = 0 : i64, step = 1 : i64} : tensor<1x1x1x32xi64>
  %bi = spyre.iota {dim = 0 : i64, start = 0 : i64, step = 32 : i64} : tensor<4x1x1x1xi64>
  %idx = spyre.add %kv, %bi : tensor<1x1x1x32xi64>, tensor<4x1x1x1xi64> -> tensor<4x1x1x32xi64>
  %m = spyre.gather %flat[%idx] : tensor<128xi1>, tensor<4x1x1x32xi64> -> tensor<4x1x1x32xi1>
  func.return %m : tensor<4x1x1x32xi1>
}
"""

# A lookup whose f16 results are written 16 at a time into 64-element sticks when LX is
# small: masked stores, neighbouring cores sharing a stick.
LOOKUP_1D = """
func.func @main(%table: tensor<4096xf16>, %ids: tensor<512xi64>) -> tensor<512xf16> {
  %g = spyre.gather %table[%ids] : tensor<4096xf16>, tensor<512xi64> -> tensor<512xf16>
  func.return %g : tensor<512xf16>
}
"""


def parse_text(text: str):
    return parse_and_verify(make_context(), text, "test.mlir")


def _mask_inputs() -> list[np.ndarray]:
    _, mask = models.padded_batch([32, 16, 8, 1], left=True)
    return [mask.numpy()]


def _lookup_inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(4096).astype(np.float16), rng.integers(0, 4096, 512)]


def _moves(module) -> list:
    return [op for op in module.walk() if isinstance(op, (dataflow.LoadOp, dataflow.StoreOp))]


def test_mask_lookup_l1_matches_numpy() -> None:
    (mask,) = _mask_inputs()
    (got,) = l1.run_module(parse_text(MASK_LOOKUP), [mask])
    want = mask.astype(bool)[:, None, None, :]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("lx_bytes", [None, 1024])
def test_lookup_l2_matches_l1(lx_bytes: int | None) -> None:
    """Default LX: whole sticks for every tile. 1 KiB of LX: 16-row tiles of the f16
    result (a quarter stick), stored masked; the race check sees no core overwrite
    another's elements of a shared stick."""
    module, inputs = parse_text(LOOKUP_1D), _lookup_inputs()
    want = l1.run_module(module, inputs)
    lower_to_dataflow(module, **({"lx_bytes": lx_bytes} if lx_bytes else {}))
    masked = [op for op in _moves(module) if op.masked is not None]
    assert bool(masked) == (lx_bytes is not None)
    for got, ref in zip(l2.run_module(module, inputs, check_races=True), want):
        np.testing.assert_array_equal(got, ref)


def test_mask_lookup_l2_and_simulator_match_l1() -> None:
    inputs = _mask_inputs()
    want = l1.run_module(parse_text(MASK_LOOKUP), inputs)
    lowered = lower_to_dataflow(parse_text(MASK_LOOKUP))
    for got, ref in zip(l2.run_module(lowered, inputs, check_races=True), want):
        np.testing.assert_array_equal(got, ref)
    units = lower_to_units(parse_text(MASK_LOOKUP))
    for g, ref in zip(simulate(units, inputs, check_races=True).outputs, want):
        np.testing.assert_array_equal(g, ref)


def test_masked_lookup_on_the_simulator_matches_l1() -> None:
    module, inputs = parse_text(LOOKUP_1D), _lookup_inputs()
    want = l1.run_module(module, inputs)
    result = simulate(lower_to_units(module, lx_bytes=1024), inputs, check_races=True)
    np.testing.assert_array_equal(result.outputs[0], as_on_the_card(want[0]))  # DLFloat16


def _on_card(model: torch.nn.Module, *args: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(eager, compiled) outputs; the compiled run launched on the card and nothing on CPU
    (strict mode would have raised)."""
    with torch.no_grad():
        want = model(*args)
        with telemetry.recording() as rec:
            got = torch.compile(model, backend="spyre", dynamic=False)(*args)
    assert rec.compiles and rec.launches
    return want, got


@pytest.mark.parametrize("index", ["batch_kv", "mid", "gather"])
def test_indexing_patterns_on_card(card, index: str) -> None:
    """HF's vmap'd mask lookup, indexing of a middle dim and a gather along the stick
    dim, at lengths that are not whole sticks (f16: 64 per stick, i64: 16)."""
    _, mask = models.padded_batch([16, 9, 3, 1], left=True)
    table = torch.randn(4, 3, 16, dtype=torch.float16)
    pick = torch.tensor([2, 0, 15, 7])
    where = torch.randint(0, 16, (4, 3, 10), generator=torch.Generator().manual_seed(0))
    batch, kv = torch.arange(4)[:, None, None, None], torch.arange(16)[None, None, None, :]
    fns = {
        "batch_kv": lambda m, t, w: m.bool()[batch, kv],
        "mid": lambda m, t, w: t[:, :, pick] + m[:, None, :4],
        "gather": lambda m, t, w: torch.gather(t, 2, w),
    }

    class Index(torch.nn.Module):
        def forward(self, m: torch.Tensor, t: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            return fns[index](m, t, w)

    want, got = _on_card(Index(), mask, table, where)
    if index == "mid":  # an add, rounded to DLFloat16 on the card
        assert_card_close(got.numpy(), want.numpy(), 1e-2)
        return
    if want.dtype == torch.float16:  # moves only: the table as DLFloat16 holds it
        want = torch.from_numpy(as_on_the_card(want.numpy()))
    assert torch.equal(got, want)


@pytest.mark.slow  # ~20 s
def test_left_padded_llama_prefill_on_card(card) -> None:
    """b = 4 prompts of 32, 64, 128 and 128 tokens, left-padded, with the attention mask:
    one graph, every op on the card, logits as eager's."""
    model = models.MaskedLogits(models.tiny_llama("sdpa", torch.float16))
    model.model.config.max_position_embeddings = 128
    ids, mask = models.padded_batch([32, 64, 128, 128], left=True)
    want, got = _on_card(model, ids, mask)
    real = mask.bool()  # padding positions' logits are not compared: eager's are arbitrary
    torch.testing.assert_close(got[real].float(), want[real].float(), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("attn", ["sdpa", pytest.param("eager", marks=pytest.mark.slow)])
def test_bert_with_attention_mask_on_card(card, attn: str) -> None:
    model = models.tiny_bert(attn, torch.float16)
    ids, mask = models.padded_batch([16, 48, 64, 40], left=False)
    want, got = _on_card(model, ids, mask)
    torch.testing.assert_close(got.float(), want.float(), rtol=1e-2, atol=1e-2)
