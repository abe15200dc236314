"""A left-padded batch through greedy ``generate()`` on the card: prompts of different
lengths padded on the left, with their attention_mask, a StaticCache, strict mode (a CPU
fallback raises), and the tokens compared with eager ``generate()``'s."""

from __future__ import annotations

import models
import pytest
import torch

from spyre_ir.runtime import telemetry

# The model's f32 parts (RMSNorm statistics, rotary angles, the mask) are the card's
# DLFloat16 or the host's: the backend says so, and that is not a fallback.
pytestmark = pytest.mark.filterwarnings("ignore::spyre_ir.runtime.f32_policy.SpyreF32Warning")

LENGTHS = [5, 16, 9, 12]  # one prompt per row, left-padded to the longest
NEW_TOKENS = 5


def _model() -> torch.nn.Module:
    """The tiny Llama with its output projection scaled up: its logits then spread wide
    enough that f16 rounding (eager's and the card's, in different orders) cannot swap two
    greedy choices, so equal tokens are the test, not a coin toss."""
    model = models.tiny_llama("sdpa", torch.float16)
    with torch.no_grad():
        model.lm_head.weight.mul_(8)
    return model


@pytest.mark.slow  # two graphs of a 2-layer model at batch 4 on the simulator
def test_left_padded_batch_of_four_generates_eager_tokens_on_the_card(card) -> None:
    model = _model()
    ids, mask = models.padded_batch(LENGTHS, left=True)
    options = {"max_new_tokens": NEW_TOKENS, "min_new_tokens": NEW_TOKENS, "do_sample": False,
               "use_cache": True, "cache_implementation": "static", "pad_token_id": 0}  # fmt: skip
    model.generation_config.max_length = None
    with torch.no_grad():
        want = model.generate(ids, attention_mask=mask, **options)
        eager_forward = model.forward
        model.forward = torch.compile(eager_forward, backend="spyre", dynamic=False)
        with telemetry.recording() as rec:
            got = model.generate(ids, attention_mask=mask, **options)
        model.forward = eager_forward
    assert got.shape == (len(LENGTHS), max(LENGTHS) + NEW_TOKENS)
    assert got.tolist() == want.tolist()
    # every forward call ran on the card as one launch (strict: nothing fell back)
    assert len(rec.launches) == NEW_TOKENS
    assert len(rec.graphs) == 2, [g.graph for g in rec.graphs]  # the prompt, a decode step
    # the rows differ, so the batch was not one prompt four times
    assert len({tuple(row) for row in got[:, max(LENGTHS) :].tolist()}) > 1
