"""Greedy HF ``generate()`` on the card for six decoder families besides Llama (issue 14):
Qwen2, Granite, GPT-2, Mistral, Phi-3 and Gemma, each with a DynamicCache and a
StaticCache, ``torch.compile(model.forward, backend="spyre")`` with dynamo's defaults and
SPYRE_STRICT=1 (a CPU fallback or a hidden compile error raises).

Each case asserts the tokens eager ``generate()`` makes, at most 3 backend compiles (and
dynamo graphs) for the whole generation, one card launch per forward (so no part of any
step ran on CPU), and that eager's greedy choices were no near-ties: at every step the
top logit leads the runner-up by more than twice the card's largest logit error, so the
tokens agree because the logits do, not by luck of rounding. The models are
``models.tiny_causal_lm`` (2 layers, hidden 64, f16, random weights)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import torch

from spyre_ir.runtime import telemetry

sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402
from card_tolerance import as_on_the_card  # noqa: E402

FAMILIES = tuple(f for f in models.FAMILIES if f != "llama")  # Llama: test_dynamic_shapes.py
PROMPT = 8  # longer than Mistral's window (models.SLIDING_WINDOW): it slides from the start
FAST_TOKENS = 4
SLOW_TOKENS = 16


@pytest.fixture
def env(card):
    """The strict card (conftest.py), the default bucket floor, dynamo's counters cleared."""
    card.delenv("SPYRE_BUCKET_MIN", raising=False)
    torch._dynamo.utils.counters.clear()
    return card


def _generate(model, new_tokens: int, cache: str):
    ids = models.llama_inputs(seq=PROMPT)
    kw = {"max_new_tokens": new_tokens, "do_sample": False, "output_scores": True,
          "return_dict_in_generate": True}  # fmt: skip
    if cache == "static":
        kw["cache_implementation"] = "static"
    with torch.no_grad():
        return model.generate(ids, **kw)


def _run(family: str, cache: str, new_tokens: int):
    model = models.tiny_causal_lm(family)
    want = _generate(model, new_tokens, cache)
    model.forward = torch.compile(model.forward, backend="spyre")
    with telemetry.recording() as rec, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _generate(model, new_tokens, cache)
    others = [str(w.message) for w in caught if not str(w.message).startswith("spyre: float32")]
    return got, want, rec, others


def _check(family: str, cache: str, new_tokens: int, node: pytest.Item) -> None:
    """The assertions of the module docstring; the figures go to the test's properties
    (``--junitxml=F -o junit_family=xunit1`` writes them)."""
    got, want, rec, others = _run(family, cache, new_tokens)
    node.user_properties += [("compiles", [(g.graph, g.bucket) for g in rec.graphs]),
                             ("launches", len(rec.launches))]  # fmt: skip
    assert torch.equal(got.sequences, want.sequences), (got.sequences, want.sequences)
    assert got.sequences.shape[1] == PROMPT + new_tokens
    assert not others, others  # the float32 policy's notes only (docs/runtime.md)
    assert len(rec.graphs) <= 3, [(g.graph, g.bucket) for g in rec.graphs]
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] <= 3
    # one launch per forward (the prompt and every new token but the last): each step is
    # one partition on the card, nothing of it on CPU
    assert len(rec.launches) == new_tokens, [launch.graph for launch in rec.launches]
    eager, card = (torch.stack(s.scores).float()[:, 0] for s in (want, got))
    top = eager.topk(2, dim=-1).values
    margin = (top[:, 0] - top[:, 1]).min()
    error = (card - eager).abs().max()
    node.user_properties.append(("margin_over_error", round(float(margin / error), 2)))
    assert margin > 2 * error, f"near-tie: margin {margin:.4g}, card error {error:.4g}"


CASES = [
    pytest.param(f, c, marks=[] if c == "dynamic" else [pytest.mark.slow], id=f"{f}-{c}")
    for f in FAMILIES
    for c in ("dynamic", "static")
]


@pytest.mark.parametrize("family,cache", CASES)
def test_generate_matches_eager(family: str, cache: str, env, request) -> None:
    _check(family, cache, FAST_TOKENS, request.node)


@pytest.mark.slow
@pytest.mark.parametrize("family,cache", [pytest.param(*p.values, id=p.id) for p in CASES])
def test_generate_many_tokens_compiles_at_most_three_times(family: str, cache: str, env,
                                                           request) -> None:  # fmt: skip
    """Past the first bucket's early steps (and, for Mistral, long past its window)."""
    _check(family, cache, SLOW_TOKENS, request.node)


def test_a_window_offset_of_a_symbolic_length_is_a_host_length(env) -> None:
    """A sliding window's offset ``max(length - window + 1, 0)`` reaches the backend as
    ``torch.sym_max`` of a symbolic size: the bucketed graph computes it on the host per
    call like any other length, so two lengths (one below the window, one past it) share
    one compile, with the values of eager."""

    def shifted(x):
        return x * 2 + max(x.shape[0] - models.SLIDING_WINDOW + 1, 0)

    compiled = torch.compile(shifted, backend="spyre")
    with torch.no_grad(), telemetry.recording() as rec, \
            warnings.catch_warnings(record=True) as caught:  # fmt: skip
        warnings.simplefilter("always")
        for n in (3, 11):
            x = torch.randint(-50, 50, (n, 64), generator=models._seeded(n))
            torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), shifted(x), rtol=0, atol=0)
    assert not [str(w.message) for w in caught], [str(w.message) for w in caught]
    assert len(rec.graphs) == 1 and rec.graphs[0].bucket is not None
    assert len(rec.launches) == 2


def _slide(cache: torch.Tensor, k: torch.Tensor, step: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """A sliding-window StaticCache's decode write (transformers' StaticSlidingWindowLayer):
    the keys rolled left by one, the new key written last; and position arithmetic."""
    rolled = cache.roll(-1, dims=-2)
    rolled[:, :, torch.tensor([-1])] = k
    return rolled, torch.fmod(step - 9, 4), step % -3


def test_a_sliding_window_cache_write_runs_on_the_card(card) -> None:
    """torch.roll decomposes to an index by (arange + shift) fmod n: with aten.fmod
    lowered, the roll, the write and integer fmod/remainder all run on the card."""
    cache = models.randn(1, 2, models.SLIDING_WINDOW, 32).to(torch.float16)
    k = models.randn(1, 2, 1, 32, seed=2).to(torch.float16)
    step = torch.arange(-7, 9).view(2, 8)
    compiled = torch.compile(_slide, backend="spyre", dynamic=False)
    with torch.no_grad(), telemetry.recording() as rec:
        got = compiled(cache, k, step)
    want = _slide(cache, k, step)
    assert len(rec.launches) == 1  # one partition: nothing of it on CPU (strict mode)
    assert torch.equal(got[0], torch.from_numpy(as_on_the_card(want[0].numpy())))
    assert torch.equal(got[1], want[1]) and torch.equal(got[2], want[2])


class _Scaled(torch.nn.Module):
    """Gemma's embedding scale: a rank-0 f16 buffer, kept on the card between calls."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("normalizer", torch.tensor(8.0, dtype=torch.float16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.normalizer


def test_a_rank_zero_buffer_kept_on_the_card(card) -> None:
    model = _Scaled()
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    with torch.no_grad():
        for seed in (1, 2):  # the second call reads the kept image of the buffer
            x = models.randn(4, 64, seed=seed).to(torch.float16)
            want = torch.from_numpy(as_on_the_card((x * 8).numpy()))
            torch.testing.assert_close(compiled(x), want, rtol=0, atol=0)
