"""Mixture-of-experts on the card (issue 19): the scatters, the grouped matmul, and the
Mixtral and Qwen2-MoE small configs.

* `spyre.scatter_add` on the L1 interpreter against torch's index_add (repeats, negative
  positions, bf16), and both scatters lowered by spyre-lower-scatter to L2 (race
  checks) against L1: floats through the one-hot matmul, integers and booleans through
  the one-hot select and row sum.
* The scatters, index_add and transformers' grouped_mm_fallback compiled on the card
  executor against eager.
* The models (random weights from configs), compiled with backend="spyre" on the card,
  against eager, with each of transformers' two compile-friendly experts paths: the
  default grouped_mm (sort, histc, grouped matmuls) and batched_mm. The CPU ops left are
  named exactly; none is a compile error (tests/conftest.py fails on one).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from test_dataflow_differential import lowered_matches
from test_sim_engine import parse

import spyre_ir.lowering.fx_importer as fx_importer
from spyre_ir.interp import tensor as l1
from spyre_ir.runtime import fallbacks
from spyre_ir.runtime.f32_policy import SpyreF32Warning

F32, F16, BF16, I64 = torch.float32, torch.float16, torch.bfloat16, torch.int64


# ------------------------------------------------------------------ L1 and L2
def _scatter_add_text(dest: str, n: int, src: str, dim: int, idx: str = "i64") -> str:
    return f"""
func.func @main(%x: tensor<{dest}>, %i: tensor<{n}x{idx}>, %v: tensor<{src}>) -> tensor<{dest}> {{
  %r = spyre.scatter_add %x[%i], %v dim = {dim} : tensor<{dest}>, tensor<{n}x{idx}>, tensor<{src}> -> tensor<{dest}>
  func.return %r : tensor<{dest}>
}}"""


@pytest.mark.parametrize("dtype", [F32, F16, BF16], ids=str)
def test_scatter_add_interpreter_matches_index_add(dtype: torch.dtype) -> None:
    """Repeated and negative positions along a middle dim, as torch's index_add."""
    g = torch.Generator().manual_seed(0)
    x, v = torch.randn(3, 9, 5, generator=g), torch.randn(3, 6, 5, generator=g)
    index = torch.tensor([2, -1, 2, 0, 8, -7])
    elem = {F32: "f32", F16: "f16", BF16: "bf16"}[dtype]
    module = parse(_scatter_add_text(f"3x9x5x{elem}", 6, f"3x6x5x{elem}", 1))
    want = x.to(dtype).index_add(1, index % 9, v.to(dtype))
    arrays = [t.to(dtype).float().numpy() if dtype == BF16 else t.to(dtype).numpy() for t in (x, v)]
    (got,) = l1.run_module(module, [arrays[0], index.numpy(), arrays[1]])
    tol = 1e-6 if dtype == F32 else 1e-2
    torch.testing.assert_close(torch.from_numpy(np.asarray(got, np.float32)), want.float(),
                               rtol=tol, atol=tol)  # fmt: skip


CASES = {
    # (op, dest type, index length, source type, dim)
    "add_f32_repeats": ("scatter_add", "67x5xf32", 9, "9x5xf32", 0),
    "add_f16_one": ("scatter_add", "4x33xf16", 1, "4x1xf16", 1),
    "add_i64": ("scatter_add", "2x17x3xi64", 7, "2x7x3xi64", 1),
    "add_i1": ("scatter_add", "40xi1", 6, "6xi1", 0),
    "set_i64": ("scatter", "37xi64", 37, "37xi64", 0),
    "set_i32_rows": ("scatter", "12x8xi32", 4, "4x8xi32", 0),
}


def _inputs(module, distinct: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    (fn,) = module.body.block.ops
    (dest, index, source) = (a.type for a in fn.body.block.args)
    dim = next(o for o in fn.body.block.ops).axis
    size, n = dest.get_shape()[dim], index.get_shape()[0]
    positions = rng.permutation(size)[:n] if distinct else rng.integers(-size, size, n)
    out = []
    for t in (dest, source):
        shape, name = list(t.get_shape()), str(t.element_type)
        if name.startswith("f"):
            out.append(
                rng.standard_normal(shape).astype(np.float16 if name == "f16" else np.float32)
            )
        elif name == "i1":
            out.append(rng.random(shape) < 0.3)
        else:
            out.append(rng.integers(-50, 50, shape).astype(np.int64 if name == "i64" else np.int32))
    return [out[0], positions.astype(np.int64), out[1]]


@pytest.mark.parametrize("name", CASES)
def test_lowered_scatters_match_l1(name: str) -> None:
    """spyre-lower-scatter, then the whole L1 -> L2 road, run by the L2 interpreter with
    race checks, against L1 (a plain scatter at distinct positions: a repeat is undefined)."""
    op, dest, n, src, dim = CASES[name]
    text = _scatter_add_text(dest, n, src, dim)
    if op == "scatter":
        text = text.replace("spyre.scatter_add", "spyre.scatter")
    module = parse(text)
    inputs = _inputs(module, distinct=op == "scatter")
    tol = 1e-2 if "f16" in dest else 1e-5
    # the one-hot kernels (a plain scatter into an unread argument is otherwise stored
    # in place, between kernels: test_tied_results.py)
    lowered_matches(module, inputs, tol, in_place=False)


# ------------------------------------------------------------------ on the card
F32_AS_F16 = "float32 ops run on the card in DLFloat16"


def _compiled(fn, *args):
    """(compiled result, eager result); the only warning allowed is the card's f32 one."""
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, want = torch.compile(fn, backend="spyre", dynamic=False)(*args), fn(*args)
    unexpected = [str(w.message) for w in caught
                  if not issubclass(w.category, SpyreF32Warning) and F32_AS_F16 not in str(w.message)]  # fmt: skip
    assert not unexpected, unexpected
    return got, want


def test_scatters_on_the_card(card) -> None:
    """index_add with repeats, scatter_add, scatter_reduce(sum), integer routing counts
    and an inverse permutation: the whole road to the simulated card, strict."""
    g = torch.Generator().manual_seed(2)
    x, src = torch.randn(33, 40, generator=g).half(), torch.randn(33, 6, generator=g).half()
    idx = torch.argsort(torch.rand(33, 40, generator=g), dim=1)[:, :6]
    rows, perm = torch.tensor([5, 0, 5, 32, 7, 0]), torch.randperm(37, generator=g)

    def floats(x, src, idx, rows):
        return (x.index_add(0, rows, src[:, :1].expand(-1, 40)[:6]), x.scatter_add(1, idx, src),
                x.scatter_reduce(1, idx, src, "sum", include_self=False), x.scatter(1, idx, src))  # fmt: skip

    def integers(perm, rows):
        inv = torch.empty_like(perm)
        inv[perm] = torch.arange(perm.shape[0])
        return inv, torch.zeros(33, dtype=I64).index_add(0, rows, torch.ones_like(rows))

    got, want = _compiled(floats, x, src, idx, rows)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-2, atol=1e-2)
    got, want = _compiled(integers, perm, rows)
    for a, b in zip(got, want, strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_grouped_mm_fallback_on_the_card(dtype: torch.dtype, card) -> None:
    """transformers' grouped matmul: an expert without rows, rows past the last offset."""
    import transformers.integrations.moe  # noqa: F401  (defines the op)

    g = torch.Generator().manual_seed(3)
    x = torch.randn(21, 64, generator=g).to(dtype)
    w = (torch.randn(4, 64, 48, generator=g) / 8).to(dtype)
    offs = torch.tensor([5, 5, 12, 19], dtype=torch.int32)
    got, want = _compiled(lambda x, w, o: torch.ops.transformers.grouped_mm_fallback(x, w, o),
                          x, w, offs)  # fmt: skip
    scale = want.abs().max().item()
    assert (got.float() - want.float()).abs().max().item() <= 2e-2 * scale
    assert torch.equal(got[19:], torch.zeros_like(got[19:]))


# ------------------------------------------------------------------ the models
SORTING_ON_CARD = {
    "aten.topk.default",
    "aten.sort.default",
    "aten.div.Tensor_mode",
    "aten.histc.default",
}
"""grouped_mm sorts tokens by expert (sort), finds each sorted slot's token (perm // top_k:
div.Tensor_mode) and counts rows per expert (histc); both paths route with topk."""
ON_CARD = {
    "grouped_mm": {"transformers.grouped_mm_fallback.default", "aten.index_put.default",
                   "aten.empty.memory_format", "aten.cumsum.default", *SORTING_ON_CARD},
    "batched_mm": {"aten.bmm.default", "aten.index.Tensor", "aten.topk.default"},
}  # fmt: skip


def moe_lm(family: str, experts: str, seed: int = 0) -> torch.nn.Module:
    """A 2-layer, hidden-64 ``MixtralForCausalLM`` / ``Qwen2MoeForCausalLM`` (8 experts,
    top 2; Qwen2-MoE with its shared expert and gate) in f16, random weights at a scale
    that keeps activations O(1), with the experts path `experts`."""
    import transformers

    common = {"vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 2, "num_key_value_heads": 1, "initializer_range": 0.125,
              "max_position_embeddings": 128, "tie_word_embeddings": False,
              "num_experts_per_tok": 2}  # fmt: skip
    if family == "mixtral":
        config = transformers.MixtralConfig(**common, intermediate_size=64, num_local_experts=8)
    else:
        config = transformers.Qwen2MoeConfig(**common, intermediate_size=128, num_experts=8,
                                             moe_intermediate_size=32,
                                             shared_expert_intermediate_size=64)  # fmt: skip
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, experts_implementation=experts)
    return model.to(F16).eval()


class Imported:
    """The ATen targets the backend imported to spyre (its partitions)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.targets: set[str] = set()
        real = fx_importer.import_graph

        def recording(gm, name="main"):
            self.targets |= {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
            return real(gm, name)

        monkeypatch.setattr(fx_importer, "import_graph", recording)


@pytest.mark.slow
@pytest.mark.parametrize("experts", ["grouped_mm", "batched_mm"])
@pytest.mark.parametrize("family", ["mixtral", "qwen2_moe"])
def test_moe_config_on_the_card_matches_eager(family: str, experts: str, card) -> None:
    """Logits of a 2 x 8 prompt within 2e-2 of eager's largest; routing (softmax, top-k
    weights, their normalisation) and the experts on spyre, nothing on CPU."""
    card.setenv("SPYRE_STRICT", "1")  # any op left on CPU is an error
    imported = Imported(card)
    model = moe_lm(family, experts)
    ids = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(4))
    fallbacks.clear()
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallbacks are asserted from their record
        want = model(ids).logits
        got = torch.compile(model, backend="spyre", dynamic=False)(ids).logits
    on_cpu = {f.op for f in fallbacks.records()}
    assert on_cpu == set(), on_cpu
    assert ON_CARD[experts] <= imported.targets
    assert "aten._softmax.default" not in on_cpu and "aten.amax.default" in imported.targets
    scale = want.abs().max().item()
    assert scale > 1.0  # weights at a scale where a wrong expert would show
    err = (got.float() - want.float()).abs().max().item()
    assert err <= 2e-2 * scale, err
