"""spyre-fold-broadcast-matmul on grouped-query attention captured from torch: the
expansion of the keys and values disappears, the L1 values stay those of torch's
graph, and the whole pipeline to the simulated card still computes them."""

from __future__ import annotations

import math

import capture
import numpy as np
import pytest
import torch

from spyre_ir import registry
from spyre_ir.dialects import spyre
from spyre_ir.interp import tensor as l1
from spyre_ir.passes.fold_broadcast_matmul import SpyreFoldBroadcastMatmul
from spyre_ir.pipelines import PIPELINES, lower_to_units
from spyre_ir.sim.engine import simulate


def gqa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Llama's repeat_kv, then attention with an additive mask."""
    b, kv, t, d = k.shape
    group = q.shape[1] // kv
    k = k[:, :, None].expand(b, kv, group, t, d).reshape(b, kv * group, t, d)
    v = v[:, :, None].expand(b, kv, group, t, d).reshape(b, kv * group, t, d)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d) + mask
    return torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v


def inputs(batch: int, heads: int, kv: int, rows: int, keys: int, dim: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    mask = torch.full((rows, keys), float("-inf")).triu(keys - rows + 1)
    return [torch.randn(batch, heads, rows, dim, generator=g).half(),
            torch.randn(batch, kv, keys, dim, generator=g).half(),
            torch.randn(batch, kv, keys, dim, generator=g).half(), mask.half()]  # fmt: skip


def count(module: object, kind: type) -> int:
    return sum(isinstance(op, kind) for op in module.walk())


SHAPES = {
    "prefill": (1, 8, 2, 16, 16, 32),
    "decode batch 3": (3, 8, 4, 1, 40, 64),
    "one KV head": (2, 4, 1, 5, 5, 16),
}


@pytest.mark.parametrize("name", SHAPES)
def test_gqa_loses_its_expansion_and_keeps_its_values(name: str) -> None:
    args = inputs(*SHAPES[name])
    ((module, arrays),) = capture.capture(gqa, args)
    want = l1.run_module(module, arrays)
    assert count(module, spyre.BroadcastToOp) == 2
    SpyreFoldBroadcastMatmul().apply(registry.make_context(), module)
    module.verify()
    assert count(module, spyre.BroadcastToOp) == 0
    assert count(module, spyre.MatmulOp) == 2
    # The same dot products in the same order: equal up to one f16 rounding.
    for got, w in zip(l1.run_module(module, arrays), want):
        np.testing.assert_allclose(got.astype(np.float32), w.astype(np.float32),
                                   atol=2e-3, rtol=2e-3)  # fmt: skip
    with torch.no_grad():
        eager = gqa(*args).float().numpy()
    lower_to_units(module)
    result = simulate(module, arrays)
    np.testing.assert_allclose(result.outputs[0].astype(np.float32), eager, atol=1e-2, rtol=1e-2)


def test_it_runs_right_before_stickify() -> None:
    # Before stickify: it builds plain tensors and leaves laid-out ones alone. Between
    # the two only spyre-decompose-long-rows runs, which builds plain tensors too.
    passes = PIPELINES["spyre-to-dataflow"]
    at, stickify = passes.index("spyre-fold-broadcast-matmul"), passes.index("spyre-stickify")
    assert at < stickify and passes[at + 1 : stickify] == ["spyre-decompose-long-rows"]


def test_without_grouping_nothing_changes() -> None:
    ((module, _),) = capture.capture(gqa, inputs(2, 4, 4, 5, 5, 16))
    before = str(module)
    SpyreFoldBroadcastMatmul().apply(registry.make_context(), module)
    assert str(module) == before


def test_laid_out_tensors_are_left_alone() -> None:
    args = inputs(*SHAPES["prefill"])
    ((module, _),) = capture.capture(gqa, args)
    from spyre_ir.passes.stickify import SpyreStickify

    SpyreStickify().apply(registry.make_context(), module)
    before = str(module)
    SpyreFoldBroadcastMatmul().apply(registry.make_context(), module)
    assert str(module) == before
