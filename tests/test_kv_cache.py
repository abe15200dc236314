"""KV-cache writes on the card (issue 14, item 2, lowering side): `spyre.scatter` (what
`index_copy_`, `cache[:, :, pos] = k`, slice and select assignment become) against torch
at L1, L2 and the simulator against L1, and a tiny Llama's prefill and decode step with
a StaticCache and with a DynamicCache compiled strictly (no CPU fallback) on the card."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.pipelines import lower_to_dataflow, lower_to_units
from spyre_ir.registry import make_context
from spyre_ir.sim.engine import simulate

sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402
from card_tolerance import as_on_the_card  # noqa: E402

SCATTER = """
func.func @main(%cache: tensor<1x2x64x32xf16>, %pos: tensor<{n}xi64>, %k: tensor<1x2x{n}x32xf16>) -> tensor<1x2x64x32xf16> {{
  %r = spyre.scatter %cache[%pos], %k dim = 2 : tensor<1x2x64x32xf16>, tensor<{n}xi64>, tensor<1x2x{n}x32xf16> -> tensor<1x2x64x32xf16>
  func.return %r : tensor<1x2x64x32xf16>
}}
"""


def _module(n: int):
    return parse_and_verify(make_context(), SCATTER.format(n=n), "test.mlir")


def _inputs(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    pos = rng.permutation(64)[:n].astype(np.int64)
    pos[0] -= 64  # a negative position counts from the end, as in torch
    return [rng.standard_normal((1, 2, 64, 32)).astype(np.float16), pos,
            rng.standard_normal((1, 2, n, 32)).astype(np.float16)]  # fmt: skip


@pytest.mark.parametrize("n", [1, 8, 64])  # 64: every position, a whole prefill
def test_scatter_l1_matches_torch(n: int) -> None:
    cache, pos, k = _inputs(n)
    want = torch.from_numpy(cache).clone()
    want[:, :, torch.from_numpy(pos)] = torch.from_numpy(k)
    (got,) = l1.run_module(_module(n), [cache, pos, k])
    np.testing.assert_array_equal(got, want.numpy())


def test_scatter_out_of_range_is_an_interpreter_error() -> None:
    cache, pos, k = _inputs(1)
    with pytest.raises(l1.InterpreterError, match="index 64 is out of range for dim 2"):
        l1.run_module(_module(1), [cache, np.array([64]), k])


# 64: every position, a whole prefill; 40: more rows than cores, so some cores of the
# row-store kernel store an early row again (the same values: no race)
@pytest.mark.parametrize("n", [1, 8, 40, 64])
def test_scatter_l2_and_simulator_match_l1(n: int) -> None:
    inputs = _inputs(n)
    (want,) = l1.run_module(_module(n), inputs)
    (got,) = l2.run_module(lower_to_dataflow(_module(n)), inputs, check_races=True)
    np.testing.assert_array_equal(got, want)
    result = simulate(lower_to_units(_module(n)), inputs, check_races=True)
    np.testing.assert_array_equal(result.outputs[0], as_on_the_card(want))  # moved as DLFloat16


@pytest.mark.slow  # two graphs of a 2-layer model on the simulator
@pytest.mark.filterwarnings("ignore:spyre. float32 ops run on the card in DLFloat16")  # RMSNorm
@pytest.mark.parametrize("kind", ["static", "dynamic"])
def test_llama_prefill_and_decode_with_cache_on_card(card, kind: str) -> None:
    from transformers import DynamicCache, LlamaForCausalLM, StaticCache

    cfg = models.tiny_llama_config("sdpa")
    cfg.use_cache = True
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).to(torch.float16).eval()
    ids = models.llama_inputs(seq=8)

    def new_cache():
        return (
            StaticCache(config=cfg, max_cache_len=64)
            if kind == "static"
            else DynamicCache(config=cfg)
        )

    def steps(fn):
        cache = new_cache()
        first = fn(input_ids=ids, cache=cache, use_cache=True, cache_position=torch.arange(8))
        token = first.logits[:, -1:].argmax(-1)
        second = fn(input_ids=token, cache=cache, use_cache=True, cache_position=torch.tensor([8]))
        return first.logits, second.logits

    with torch.no_grad():
        want = steps(model)
        got = steps(torch.compile(model, backend="spyre", dynamic=False))
    for g, w in zip(got, want):
        torch.testing.assert_close(g.float(), w.float(), rtol=1e-2, atol=1e-2)
