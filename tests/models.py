"""Small reusable test models for the torch.compile(backend="spyre") tests.

Every builder seeds torch itself, so two calls give the same weights; every
``*_inputs`` helper does the same for its example inputs.  ``MODELS`` maps a
short name to ``(build_model(dtype), make_inputs(dtype))`` so tests can be
parametrised over all of them.

Nothing here touches the network: the HuggingFace model is built from a config
with random weights, and the offline switches are set before transformers is
imported.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence

# Never let huggingface_hub / transformers reach the network from a test.
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

BATCH = 2
SEQ = 32
DIM = 128


def _seeded(seed: int) -> torch.Generator:
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 1) -> torch.Tensor:
    """Deterministic normal input (made in f32, then cast, so all dtypes agree)."""
    return torch.randn(*shape, generator=_seeded(seed)).to(dtype)


# --------------------------------------------------------------------------- MLP
def mlp(dim: int = DIM, hidden: int = 4 * DIM, seed: int = 0) -> nn.Module:
    """Linear -> GELU -> Linear."""
    _seeded(seed)
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)).eval()


# ------------------------------------------------------------- RMSNorm + SwiGLU
class RMSNorm(nn.Module):
    """Llama-style RMSNorm: statistics in f32, result cast back to the input dtype."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class RMSNormSwiGLU(nn.Module):
    """Pre-norm residual block: x + SwiGLU(RMSNorm(x))."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.norm = RMSNorm(dim)
        self.mlp = SwiGLU(dim, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.norm(x))


def rmsnorm_swiglu(dim: int = DIM, hidden: int = 2 * DIM, seed: int = 0) -> nn.Module:
    _seeded(seed)
    return RMSNormSwiGLU(dim, hidden).eval()


# ------------------------------------------------------ causal self-attention
class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention.

    ``mask``:
      * ``"is_causal"``: ``F.scaled_dot_product_attention(..., is_causal=True)``
      * ``"bool"``: sdpa with an explicit boolean lower-triangular ``attn_mask``
      * ``"additive"``: sdpa with an explicit additive float mask (0 / -inf)
      * ``"manual"``: no sdpa; softmax(q k^T * scale + mask) v written out
    """

    MASKS = ("is_causal", "bool", "additive", "manual")

    def __init__(self, dim: int, heads: int, max_seq: int, mask: str = "is_causal") -> None:
        super().__init__()
        if mask not in self.MASKS:
            raise ValueError(f"mask must be one of {self.MASKS}, got {mask!r}")
        self.heads, self.head_dim, self.mask = heads, dim // heads, mask
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        tril = torch.tril(torch.ones(max_seq, max_seq, dtype=torch.bool))
        self.register_buffer("tril", tril, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        tril = self.tril[:s, :s]
        if self.mask == "is_causal":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif self.mask == "bool":
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=tril)
        elif self.mask == "additive":
            add = torch.zeros(s, s, dtype=x.dtype, device=x.device).masked_fill(
                ~tril, float("-inf")
            )
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=add)
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
            scores = scores.masked_fill(~tril, float("-inf"))
            y = torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v
        return self.out(y.transpose(1, 2).reshape(b, s, d))


def causal_attention(
    mask: str = "is_causal", dim: int = DIM, heads: int = 4, max_seq: int = 64, seed: int = 0
) -> nn.Module:
    _seeded(seed)
    return CausalSelfAttention(dim, heads, max_seq, mask).eval()


# ---------------------------------------------------------- rotary embeddings
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class RotaryBlock(nn.Module):
    """Project to q/k heads and apply rotary position embeddings.

    sin/cos are computed in forward (arange -> outer product -> cat -> cos/sin),
    as in Llama, so the graph exercises iota, sin, cos, slice, cat and neg.
    """

    def __init__(self, dim: int, heads: int, base: float = 10000.0) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.k = nn.Linear(dim, dim, bias=False)
        inv = 1.0 / (
            base ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim)
        )
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, s, _ = x.shape
        pos = torch.arange(s, device=x.device, dtype=torch.float32)
        freqs = pos[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rotary(dim: int = DIM, heads: int = 4, seed: int = 0) -> nn.Module:
    _seeded(seed)
    return RotaryBlock(dim, heads).eval()


# ------------------------------------------------------------- tiny Llama (HF)
LLAMA_VOCAB = 256


def tiny_llama_config(attn_implementation: str = "sdpa"):
    from transformers import LlamaConfig

    cfg = LlamaConfig(
        vocab_size=LLAMA_VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
        tie_word_embeddings=False,
    )
    cfg._attn_implementation = attn_implementation
    return cfg


def tiny_llama(
    attn_implementation: str = "sdpa", dtype: torch.dtype = torch.float32, seed: int = 0
) -> nn.Module:
    """LlamaForCausalLM (2 layers, hidden 128, 4 heads, 2 KV heads) with random weights.

    ``use_cache=False`` so forward builds no DynamicCache; returns the HF output
    object (use ``.logits``).
    """
    from transformers import LlamaForCausalLM

    if attn_implementation not in ("sdpa", "eager"):
        raise ValueError(
            f"attn_implementation must be 'sdpa' or 'eager', got {attn_implementation!r}"
        )
    _seeded(seed)
    model = LlamaForCausalLM(tiny_llama_config(attn_implementation))
    return model.to(dtype).eval()


def llama_inputs(batch: int = 1, seq: int = SEQ, seed: int = 1) -> torch.Tensor:
    """int64 token ids, shape (batch, seq)."""
    return torch.randint(0, LLAMA_VOCAB, (batch, seq), generator=_seeded(seed), dtype=torch.int64)


class LogitsOnly(nn.Module):
    """Wrap a HF causal LM so forward(input_ids) returns the logits tensor."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits


def padded_batch(
    lengths: Sequence[int], left: bool, seed: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """(int64 token ids, int64 attention_mask) for prompts of `lengths` tokens padded to the
    longest, on the left (decoder prompts) or on the right (encoder inputs)."""
    width = max(lengths)
    ids = torch.randint(
        0, LLAMA_VOCAB, (len(lengths), width), generator=_seeded(seed), dtype=torch.int64
    )
    mask = torch.zeros(len(lengths), width, dtype=torch.int64)
    for row, n in enumerate(lengths):
        if left:
            mask[row, width - n :] = 1
        else:
            mask[row, :n] = 1
    return ids, mask


class MaskedLogits(nn.Module):
    """A HF causal LM as forward(input_ids, attention_mask) -> logits (no cache)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False
        ).logits


def tiny_bert(
    attn_implementation: str = "sdpa", dtype: torch.dtype = torch.float32, seed: int = 0
) -> nn.Module:
    """BertModel (2 layers, hidden 128, 4 heads, no pooler) with random weights, as
    forward(input_ids, attention_mask) -> last hidden state."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=LLAMA_VOCAB, hidden_size=128, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=256, max_position_embeddings=128)  # fmt: skip
    cfg._attn_implementation = attn_implementation
    _seeded(seed)
    return BertHidden(BertModel(cfg, add_pooling_layer=False).to(dtype).eval())


class BertHidden(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class PaddedCachedAttention(nn.Module):
    """Attention over a KV cache with a padding mask, the way HF decoders do it: the new
    keys and values are written into cache buffers at runtime positions (`index_copy_`,
    StaticCache's write), and the padding mask is read as `mask[batch_idx, kv_idx]`
    (transformers' masking_utils) and combined with the causal mask."""

    def __init__(self, dim: int = DIM, heads: int = 4, cache_len: int = 48) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.register_buffer(
            "k_cache", torch.zeros(BATCH, heads, cache_len, dim // heads), persistent=False
        )
        self.register_buffer(
            "v_cache", torch.zeros(BATCH, heads, cache_len, dim // heads), persistent=False
        )

    def forward(
        self, x: torch.Tensor, positions: torch.Tensor, padding: torch.Tensor
    ) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (t.view(b, s, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        keys = self.k_cache.to(x.dtype).index_copy(2, positions, k)
        values = self.v_cache.to(x.dtype).index_copy(2, positions, v)
        kv = torch.arange(keys.shape[2])
        batch = torch.arange(b)[:, None, None, None]
        allowed = padding.bool()[batch, kv[None, None, None, :]] & (
            kv[None, :] <= positions[:, None]
        )
        y = F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed)
        return self.out(y.transpose(1, 2).reshape(b, s, d))


def padded_cached_attention(seed: int = 0) -> nn.Module:
    _seeded(seed)
    return PaddedCachedAttention().eval()


def padded_cached_attention_inputs(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """x, the positions the prompt is written at (8..39 of a 48-slot cache) and a padding
    mask over the cache (row 1: its first 12 slots are padding)."""
    padding = torch.ones(BATCH, 48, dtype=torch.int64)
    padding[1, :12] = 0
    return randn(BATCH, SEQ, DIM, dtype=dtype), torch.arange(8, 8 + SEQ), padding


# ------------------------------------------- tiny causal LMs of seven HF families
FAMILIES = ("llama", "qwen2", "granite", "gpt2", "mistral", "phi3", "gemma")
SLIDING_WINDOW = 6  # Mistral's window: shorter than the prompts, so it masks and rolls


def _family_config(family: str):
    """A 2-layer, hidden-64 config of ``family`` with what sets it apart switched on:
    Qwen2's q/k/v bias, Granite's four multipliers, GPT-2's Conv1D projections, learned
    positions and tanh GELU, Mistral's sliding window, Phi-3's fused qkv and gate_up,
    Gemma's embedding scale, (1 + w) RMSNorm and tanh GELU. No end-of-sequence token, so
    generate() makes every token asked for."""
    import transformers

    common = {"vocab_size": LLAMA_VOCAB, "hidden_size": 64, "intermediate_size": 128,
              "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
              "max_position_embeddings": 512, "tie_word_embeddings": False,
              "bos_token_id": 0, "eos_token_id": None, "pad_token_id": 0}  # fmt: skip
    if family == "gpt2":
        return transformers.GPT2Config(vocab_size=LLAMA_VOCAB, n_embd=64, n_layer=2, n_head=2,
                                       n_positions=512, tie_word_embeddings=False,
                                       bos_token_id=0, eos_token_id=None)  # fmt: skip
    extra: dict = {
        "llama": {},
        "qwen2": {},  # attention bias on q, k and v is Qwen2's default
        "granite": {
            "embedding_multiplier": 4.0,
            "residual_multiplier": 0.5,
            "attention_multiplier": 0.25,
            "logits_scaling": 0.5,
        },
        "mistral": {"sliding_window": SLIDING_WINDOW},
        "phi3": {},
        "gemma": {"head_dim": 32, "hidden_activation": "gelu_pytorch_tanh"},
    }[family]
    name = {"llama": "Llama", "qwen2": "Qwen2", "granite": "Granite", "mistral": "Mistral",
            "phi3": "Phi3", "gemma": "Gemma"}[family]  # fmt: skip
    return getattr(transformers, f"{name}Config")(**common, **extra)


LOGIT_SPREAD = 0.5
"""Log-normal spread of the output embedding's row norms (see tiny_causal_lm)."""

FAMILY_SEEDS = {"llama": 3, "qwen2": 1, "granite": 4, "gpt2": 6, "mistral": 6, "phi3": 0,
                "gemma": 4}  # fmt: skip
"""Weight seeds whose eager greedy choices over 16 tokens from ``llama_inputs(seq=8)``
lead the runner-up by at least 1.5 % of the top logit (several times the card's error;
tests/test_generate_families.py asserts the margin it needs) while making 8 or more
distinct tokens."""


def tiny_causal_lm(family: str, seed: int | None = None,
                   dtype: torch.dtype = torch.float16) -> nn.Module:  # fmt: skip
    """``<Family>ForCausalLM`` of :func:`_family_config` with random weights, in ``dtype``
    (the seed: ``FAMILY_SEEDS`` unless given).

    The output embedding's rows are scaled by ``exp(LOGIT_SPREAD * z)`` (z standard
    normal, one per token): with row norms that differ by token the top two logits lie
    further apart than the near-ties of equally scaled rows, so fewer greedy choices hang
    on the last bits of a 16-bit float; the seeds avoid the rest."""
    from transformers import AutoModelForCausalLM

    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    _seeded(FAMILY_SEEDS[family] if seed is None else seed)
    model = AutoModelForCausalLM.from_config(_family_config(family))
    with torch.no_grad():
        rows = model.get_output_embeddings().weight
        rows.mul_(torch.exp(LOGIT_SPREAD * torch.randn(rows.shape[0], 1)))
    return model.to(dtype).eval()


# ------------------------------------------------------------------ registry
def _x(dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    return (randn(BATCH, SEQ, DIM, dtype=dtype),)


MODELS: dict[str, tuple[Callable[[torch.dtype], nn.Module], Callable[[torch.dtype], tuple]]] = {
    "mlp": (lambda dt: mlp().to(dt), _x),
    "rmsnorm_swiglu": (lambda dt: rmsnorm_swiglu().to(dt), _x),
    "attention_is_causal": (lambda dt: causal_attention("is_causal").to(dt), _x),
    "attention_bool_mask": (lambda dt: causal_attention("bool").to(dt), _x),
    "attention_additive_mask": (lambda dt: causal_attention("additive").to(dt), _x),
    "attention_manual": (lambda dt: causal_attention("manual").to(dt), _x),
    "rotary": (lambda dt: rotary().to(dt), _x),
    "tiny_llama_sdpa": (
        lambda dt: LogitsOnly(tiny_llama("sdpa", dt)),
        lambda dt: (llama_inputs(),),
    ),
    "tiny_llama_eager": (
        lambda dt: LogitsOnly(tiny_llama("eager", dt)),
        lambda dt: (llama_inputs(),),
    ),
    "padded_cached_attention": (
        lambda dt: padded_cached_attention().to(dt),
        padded_cached_attention_inputs,
    ),
}


def build(name: str, dtype: torch.dtype = torch.float32) -> tuple[nn.Module, tuple]:
    """Return ``(model, example_inputs)`` for a name in ``MODELS``."""
    make_model, make_inputs = MODELS[name]
    return make_model(dtype), make_inputs(dtype)
