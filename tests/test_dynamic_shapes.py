"""Dynamic shapes: graphs with symbolic sizes run through shape buckets with length masks
(spyre_ir/runtime/dynamic.py, docs/dynamic-shapes.md), on the card executor.

Each padded form is checked against eager at two lengths in one bucket (one compile, seen
in telemetry), and greedy HF ``generate()`` with a DynamicCache must decode on the card with
at most 3 compiles, the same tokens as eager, and no step on CPU."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import torch

from spyre_ir.runtime import telemetry
from spyre_ir.runtime.backend import reset_warnings
from spyre_ir.runtime.dynamic import DEFAULT_BUCKET_MIN, capacity

sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402

F16 = torch.float16


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The card executor with its own cache, strict mode (no CPU fallback allowed)."""
    for var in ("SPYRE_IR_DUMP", "SPYRE_EXECUTOR", "SPYRE_EXACT_F32", "SPYRE_BUCKET_MIN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    monkeypatch.setenv("SPYRE_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    reset_warnings()
    # Work an earlier test queued on the card runs now, not inside this test's recording.
    torch.spyre.synchronize()
    yield monkeypatch
    torch._dynamo.reset()
    reset_warnings()


def test_capacities_are_the_floor_then_powers_of_two() -> None:
    assert [capacity(n, 256) for n in (1, 255, 256, 257, 600)] == [256, 256, 256, 512, 1024]
    assert DEFAULT_BUCKET_MIN == 256


def _calls(fn, inputs_per_call, dynamic_dims):
    """Compile ``fn`` (dynamic=None, the given dims marked dynamic), call it on each input
    tuple; return the results, eager's, the telemetry recorder and the warnings."""
    compiled = torch.compile(fn, backend="spyre")
    got, want = [], []
    with torch.no_grad(), telemetry.recording() as rec, \
            warnings.catch_warnings(record=True) as caught:  # fmt: skip
        warnings.simplefilter("always")
        for inputs in inputs_per_call:
            for x, dims in zip(inputs, dynamic_dims):
                for d in dims:
                    torch._dynamo.mark_dynamic(x, d)
            got.append(compiled(*inputs))
            want.append(fn(*inputs))
    return got, want, rec, _not_f32_policy(caught)


def _not_f32_policy(caught) -> list[str]:
    """The warnings but the float32 policy's (f32 computed in f16, or exactly on the host
    when it depends only on integers: docs/runtime.md), which are not fallbacks."""
    return [str(w.message) for w in caught if not str(w.message).startswith("spyre: float32")]


def _close(got, want) -> None:
    for g, w in zip(got, want):
        for a, b in zip(g if isinstance(g, tuple) else (g,), w if isinstance(w, tuple) else (w,)):
            assert a.shape == b.shape
            torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2)


def _reductions(x):
    return x.sum(-1), x.amax(-1), x.mean(-1, keepdim=True), x.softmax(-1), (x > 0).any(-1)


def test_reductions_over_a_padded_dim_see_only_the_data(env) -> None:
    xs = [
        (models.randn(4, n, seed=n).to(F16) - 1.0,) for n in (40, 97)
    ]  # negative: padding zeros would win amax
    got, want, rec, caught = _calls(_reductions, xs, [(1,)])
    _close(got, want)
    assert not caught
    assert len(rec.graphs) == 1 and rec.graphs[0].bucket is not None
    assert len(rec.launches) == 2


def _decode_attention(q, k, v, k_new, v_new):
    keys, values = torch.cat([k, k_new], 0), torch.cat([v, v_new], 0)
    weights = torch.softmax(q @ keys.T / 8.0, -1)
    return weights @ values, keys, values


def test_cat_at_a_runtime_offset_and_a_contracted_padded_dim(env) -> None:
    """A KV cache growing by cat; the attention contracts the padded length."""

    def inputs(n: int, seed: int):
        q = models.randn(1, 64, seed=seed).to(F16)
        k, v = (
            models.randn(n, 64, seed=seed + 1).to(F16),
            models.randn(n, 64, seed=seed + 2).to(F16),
        )
        return (
            q,
            k,
            v,
            models.randn(1, 64, seed=seed + 3).to(F16),
            models.randn(1, 64, seed=seed + 4).to(F16),
        )

    got, want, rec, caught = _calls(_decode_attention, [inputs(9, 1), inputs(30, 2)],
                                    [(), (0,), (0,), (), ()])  # fmt: skip
    _close(got, want)
    assert not caught and len(rec.graphs) == 1 and len(rec.launches) == 2


def test_a_view_merging_a_padded_dim_is_specialised_with_a_warning(env) -> None:
    fn = lambda x: (x * 2).reshape(-1).cumsum(0)  # noqa: E731
    got, want, rec, caught = _calls(
        fn, [(models.randn(3, n, seed=n).to(F16),) for n in (70, 75)], [(1,)]
    )
    _close(got, want)
    assert (
        len(caught) == 1
        and "cannot be bucketed" in caught[0]
        and "merges a padded dim" in caught[0]
    )
    assert [g.bucket.startswith("shape") for g in rec.graphs] == [True, True]


# --------------------------------------------------------------------- generate
def _tiny_llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    models._seeded(0)
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                      tie_word_embeddings=False)  # fmt: skip
    return LlamaForCausalLM(cfg).eval()


def _generate(new_tokens: int, dynamic: bool | None, prompt: int = 8):
    model = _tiny_llama()
    ids = torch.randint(0, 256, (1, prompt), generator=models._seeded(1))
    with torch.no_grad():
        want = model.generate(ids, max_new_tokens=new_tokens, do_sample=False)
    model.forward = torch.compile(model.forward, backend="spyre", dynamic=dynamic)
    with torch.no_grad(), telemetry.recording() as rec, \
            warnings.catch_warnings(record=True) as caught:  # fmt: skip
        warnings.simplefilter("always")
        got = model.generate(ids, max_new_tokens=new_tokens, do_sample=False)
    return got, want, rec, _not_f32_policy(caught)


def _assert_generated_on_the_card(got, want, rec, caught, new_tokens: int) -> None:
    torch.testing.assert_close(got, want, rtol=0, atol=0)  # the same tokens
    assert not caught, caught  # strict mode: no fallback; nothing else either
    assert len(rec.graphs) <= 3, [(g.graph, g.bucket) for g in rec.graphs]
    # one launch per forward (prompt + each new token but the last): one partition per
    # step, so no op of any step ran on CPU
    assert len(rec.launches) == new_tokens
    # dynamo traced at most 3 graphs (its recompile limit is 8), all of them ours
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] <= 3


def test_generate_with_dynamic_cache_decodes_on_the_card(env) -> None:
    got, want, rec, caught = _generate(12, dynamic=None)
    _assert_generated_on_the_card(got, want, rec, caught, 12)
    assert [g.bucket is None for g in rec.graphs] == [True, True, False]  # prompt, step 1, steps 2+


@pytest.mark.slow
@pytest.mark.parametrize("dynamic", [None, True], ids=["dynamic_none", "dynamic_true"])
def test_generate_64_tokens_compiles_at_most_three_times(dynamic, env) -> None:
    got, want, rec, caught = _generate(64, dynamic=dynamic)
    _assert_generated_on_the_card(got, want, rec, caught, 64)


@pytest.mark.slow
@pytest.mark.parametrize("dynamic", [None, True], ids=["dynamic_none", "dynamic_true"])
def test_generate_with_static_cache_compiles_at_most_three_times(dynamic, env) -> None:
    """A StaticCache has static shapes (dynamic=None: nothing symbolic); under dynamic=True
    its length is a symbol and the decode step's cache write passes through the padding.
    The KV write reaches us as aten.index_put: without its lowering it is the one op left
    on CPU (and warned about); with it, nothing is."""
    from spyre_ir.lowering.aten_lowerings import supported_targets

    env.delenv("SPYRE_STRICT")
    model = _tiny_llama()
    ids = torch.randint(0, 256, (1, 8), generator=models._seeded(1))
    kw = {"max_new_tokens": 16, "do_sample": False, "cache_implementation": "static"}
    with torch.no_grad():
        want = model.generate(ids, **kw)
    model.forward = torch.compile(model.forward, backend="spyre", dynamic=dynamic)
    with torch.no_grad(), telemetry.recording() as rec, \
            warnings.catch_warnings(record=True) as caught:  # fmt: skip
        warnings.simplefilter("always")
        got = model.generate(ids, **kw)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert len(rec.graphs) <= 3 and torch._dynamo.utils.counters["stats"]["unique_graphs"] <= 3
    decode = [g for g in rec.graphs if g.bucket is None or g.bucket.startswith("bucket")][-1]
    fallbacks = [str(w.message) for w in caught if decode.graph in str(w.message)]
    if "aten.index_put.default" in supported_targets():
        assert not fallbacks, fallbacks
    else:
        assert fallbacks and all("aten.index_put.default" in m for m in fallbacks), fallbacks
