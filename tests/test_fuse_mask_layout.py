"""spyre-fuse's `fuse-mask-layout`: an attention mask given as [s, t] over more than one stick of keys (one for every
batch and head, as bench/layer.py's causal mask) is viewed as [1, 1, s, t], which is no
view of its bytes: a restickify. Folded, the attention kernel's mask loads read the
[s, t] bytes and no kernel moves them; off, a kernel of its own does. Both match L1 and
eager at awkward lengths."""

from __future__ import annotations

import pytest
import torch
from test_fuse_attention import attention_kernels, fused_matches, gqa_attention, inputs


def two_d_mask(s: int, t: int) -> torch.Tensor:
    """An additive causal mask [s, t] for queries at the end of t keys."""
    return torch.full((s, t), float("-inf")).triu(t - s + 1).half()


@pytest.mark.parametrize("folded", [True, False], ids=["folded", "off"])
@pytest.mark.parametrize("s,t", [(17, 129), (64, 129), (5, 200)])
def test_2d_mask_matches_l1(s: int, t: int, folded: bool) -> None:
    args = [*inputs(1, s, t, "none"), two_d_mask(s, t)]
    kernels = fused_matches(gqa_attention("additive"), args, fuse_mask_layout=folded)
    assert len(attention_kernels(kernels)) == 1
    assert len(kernels) == (1 if folded else 2), [k.sym_name.data for k in kernels]
