"""The sorting ops of issue 19 (spyre.sort / spyre.argsort; aten.sort, topk, argsort,
histc, div with a rounding mode) at every level: L1 against torch eager, L2 against L1,
torch.compile on the reference executor and on the simulated card against eager, the
spyre device's eager ops, the cost model, and topk over rows longer than LX.

Ties: spyre orders equal values by index (a stable sort), which torch.sort(stable=True)
gives too; torch's unstable sort and topk order ties their own way, so indices are
compared with the stable order, and values always exactly. On the card, f16 inputs are
stored as DLFloat16 (`as_on_the_card`), which makes ties of its own: the reference
sorts the values the card holds.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from card_tolerance import as_on_the_card

from spyre_ir import cost_model, registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects import dataflow
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.pipelines import lower_to_dataflow
from spyre_ir.runtime import fallbacks

ELT = {torch.float16: "f16", torch.float32: "f32", torch.bfloat16: "bf16",
       torch.int64: "i64", torch.int32: "i32", torch.bool: "i1"}  # fmt: skip
NP = {"f16": np.float16, "f32": np.float32, "bf16": np.float32, "i64": np.int64,
      "i32": np.int32, "i1": np.bool_}  # fmt: skip


def tied(shape: tuple[int, ...], dtype: torch.dtype, seed: int, spread: int = 9) -> torch.Tensor:
    """Few distinct values (many ties), exact in every dtype and in DLFloat16."""
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-spread, spread + 1, shape, generator=g) * 0.5).to(dtype)


def distinct(shape: tuple[int, ...], dtype: torch.dtype, seed: int) -> torch.Tensor:
    """A random permutation of small integers per row: no ties, exact everywhere."""
    g = torch.Generator().manual_seed(seed)
    rows = torch.argsort(torch.rand(shape, generator=g), dim=-1)
    return (rows - shape[-1] // 2).to(dtype)


def stable(x: torch.Tensor, dim: int = -1, descending: bool = False, k: int | None = None):
    values, indices = torch.sort(x, dim=dim, descending=descending, stable=True)
    if k is not None:
        values, indices = values.narrow(dim, 0, k), indices.narrow(dim, 0, k)
    return values, indices


def module_of(text: str):
    return parse_and_verify(registry.make_context(), text, "sort.mlir")


def sorting_ir(shape: tuple[int, ...], elt: str, dim: int, k: int | None, down: bool) -> str:
    t = f"tensor<{'x'.join(map(str, shape))}x{elt}>"
    kept = list(shape)
    kept[dim] = shape[dim] if k is None else k
    v = f"tensor<{'x'.join(map(str, kept))}x{elt}>"
    i = f"tensor<{'x'.join(map(str, kept))}xi64>"
    attrs = f"dim = {dim}" + ("" if k is None else f" k = {k}") + (" descending" if down else "")
    return f"""
func.func @main(%x: {t}) -> ({v}, {i}) {{
  %v = spyre.sort %x {attrs} : {t} -> {v}
  %i = spyre.argsort %x {attrs} : {t} -> {i}
  func.return %v, %i : {v}, {i}
}}"""


# ----------------------------------------------------------------------------- L1
L1_CASES = [
    ((5, 8), -1, None, False), ((5, 8), -1, 2, True), ((3, 130), 1, 7, True),
    ((4, 7, 9), 0, None, True), ((4, 7, 9), 1, 3, False), ((2, 32000), -1, 50, True),
    ((70,), 0, None, False),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.bfloat16, torch.int64,
                                   torch.int32, torch.bool])  # fmt: skip
@pytest.mark.parametrize("shape,dim,k,down", L1_CASES)
def test_l1_matches_torch_stable_sort(shape, dim, k, down, dtype) -> None:
    x = tied(shape, torch.float32, 0).to(dtype)
    if dtype.is_floating_point:
        x.view(-1)[::11] = float("nan")
    elt = ELT[dtype]
    data = x.to(torch.float32).numpy().astype(NP[elt]) if dtype == torch.bfloat16 else x.numpy()
    got_v, got_i = l1.run_module(module_of(sorting_ir(shape, elt, dim, k, down)), [data])
    want_v, want_i = stable(x, dim, down, k)
    assert got_i.dtype == np.int64
    np.testing.assert_array_equal(got_i, want_i.numpy())
    np.testing.assert_array_equal(got_v, want_v.to(torch.float32 if dtype == torch.bfloat16
                                                   else dtype).numpy())  # fmt: skip


def test_l1_nan_is_the_largest_value() -> None:
    x = torch.tensor([1.0, float("nan"), 3.0, float("-inf"), float("nan"), 2.0, float("inf")])
    for down in (False, True):
        got_v, got_i = l1.run_module(module_of(sorting_ir((7,), "f32", 0, None, down)), [x.numpy()])
        want = torch.sort(x, descending=down, stable=True)
        np.testing.assert_array_equal(got_i, want.indices.numpy())
        np.testing.assert_array_equal(got_v, want.values.numpy())
    top = torch.topk(x, 3)  # torch: NaN first, in index order here
    got_v, got_i = l1.run_module(module_of(sorting_ir((7,), "f32", 0, 3, True)), [x.numpy()])
    np.testing.assert_array_equal(got_i, top.indices.numpy())


# ----------------------------------------------------------------------------- L2
@pytest.mark.parametrize("shape,dim,k,down", [((33, 64), -1, 2, True), ((3, 130), -1, None, False),
                                              ((6, 5, 70), 1, 3, True)])  # fmt: skip
def test_l2_matches_l1(shape, dim, k, down) -> None:
    module = module_of(sorting_ir(shape, "f16", dim, k, down))
    x = tied(shape, torch.float16, 1).numpy()
    want = l1.run_module(module, [x])
    lower_to_dataflow(module)
    assert [op for op in module.walk() if isinstance(op, dataflow.KernelOp)]
    got = l2.run_module(module, [x], check_races=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_topk_over_rows_longer_than_lx_runs_in_two_rounds() -> None:
    """A 64 KiB scratchpad: a row of 20000 f16 does not fit half of it; chunks do."""
    module = module_of(sorting_ir((3, 20000), "f16", -1, 5, True))
    x = tied((3, 20000), torch.float16, 2, spread=2000).numpy()
    want = l1.run_module(module, [x])
    lower_to_dataflow(module, lx_bytes=64 * 1024)
    sorts = [op for op in module.walk() if op.name == "dataflow.compute"
             and op.kind.data in ("spyre.sort", "spyre.argsort")]  # fmt: skip
    assert len(sorts) >= 4  # chunks and candidates, values and indices
    got = l2.run_module(module, [x], check_races=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# ----------------------------------------------------------------------------- cost
def test_sort_cost_picks_the_cheaper_formulation() -> None:
    c = DEFAULT_CONFIG
    extract = c.sfp_cost_reduction + c.sfp_cost_simple
    # MoE routing: top-2 of 64 experts, two extractions beat a 21-stage network
    assert cost_model.sort_passes(64, 2, c) == 2 * extract
    # a full sort of 64: the network, 6 * 7 / 2 stages of two simple passes
    assert cost_model.sort_passes(64, 64, c) == 21 * 2 * c.sfp_cost_simple
    # sampling: top-50 of 32000: the network (15 * 16 / 2 stages) is cheaper
    assert cost_model.sort_passes(32000, 50, c) == 120 * 2 * c.sfp_cost_simple
    assert cost_model.sort_cycles(64, 2, 8 * 64, c) == 8 * 2 * extract  # 8 rows, 64 lanes


# ----------------------------------------------------------------------- torch.compile
def _routing(logits):
    weights, experts = torch.topk(torch.softmax(logits.float(), dim=-1), 2, dim=-1)
    return weights, experts


def _sampling(logits):
    return torch.topk(logits, 50)


def _sorts(x):
    s = torch.sort(x, dim=-1, descending=True, stable=True)
    a = torch.argsort(x, dim=0, stable=True)
    v, i = torch.topk(x, 3, dim=-1, largest=False)
    return s.values, s.indices, a, v, i


def _stable_reference(x):
    s = stable(x, -1, True)
    return s[0], s[1], stable(x, 0)[1], *stable(x, -1, False, 3)


def _histc(x):
    return torch.histc(x, bins=8, min=0, max=7), torch.histc(x, 5), torch.histc(x, 4, -1.5, 1.5)


def _div_modes(a, b):
    return (torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"),
            a // 3, torch.div(a, -3, rounding_mode="trunc"))  # fmt: skip


def compiled(fn, *args):
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "spyre. float32")  # f32 runs in DLFloat16 there
        out = torch.compile(fn, backend="spyre", dynamic=False)(*args)
    assert not fallbacks.records(), fallbacks.records()
    return out


def assert_equal(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)


@pytest.fixture
def reference(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    monkeypatch.setenv("SPYRE_EXECUTOR", "reference")
    monkeypatch.delenv("SPYRE_IR_DUMP", raising=False)
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("shape", [(5, 8), (33, 64), (3, 130), (2, 2, 71)])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int64])
def test_compiled_sorts_match_stable_eager(reference, shape, dtype) -> None:
    for x in (tied(shape, dtype, 3), distinct(shape, dtype, 4)):
        assert_equal(compiled(_sorts, x), _stable_reference(x))
    x = distinct(shape, dtype, 5)  # no ties: torch's own topk and sort agree exactly
    assert_equal(compiled(_sorts, x), _sorts(x))


def test_compiled_routing_and_sampling(reference) -> None:
    logits = distinct((37, 64), torch.float16, 6) / 8
    (weights, experts), (want_w, want_e) = compiled(_routing, logits), _routing(logits)
    assert torch.equal(experts, want_e)  # the softmax before it rounds its own way
    torch.testing.assert_close(weights, want_w, rtol=1e-6, atol=1e-7)
    vocab = distinct((3, 32000), torch.float32, 7)
    assert_equal(compiled(_sampling, vocab), _sampling(vocab))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_compiled_histc(reference, dtype) -> None:
    x = tied((37, 11), dtype, 8) + 3
    assert_equal(compiled(_histc, x), _histc(x))
    y = torch.randn(7, 130, generator=torch.Generator().manual_seed(9)).to(dtype)
    assert_equal(compiled(_histc, y), _histc(y))  # data-dependent edges, f16 rounding
    x.view(-1)[::7] = float("nan")  # NaN falls in no bin (with a given range)
    hist = lambda t: torch.histc(t, 8, 0, 7)  # noqa: E731
    assert_equal([compiled(hist, x)], [hist(x)])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_compiled_div_rounding_modes(reference, dtype) -> None:
    g = torch.Generator().manual_seed(10)
    a = torch.randint(-50, 51, (9, 70), generator=g).to(dtype)
    b = (torch.randint(1, 7, (9, 70), generator=g) * (torch.randint(0, 2, (9, 70), generator=g)
                                                      * 2 - 1)).to(dtype)  # fmt: skip
    assert_equal(compiled(_div_modes, a, b), _div_modes(a, b))


# --------------------------------------------------------------------- the simulated card
@pytest.mark.parametrize("shape", [(5, 8), (33, 64), (3, 130)])
def test_card_sorts_match_eager(card, shape) -> None:
    x = torch.randn(shape, generator=torch.Generator().manual_seed(11)).half()
    held = torch.from_numpy(as_on_the_card(x.numpy()))
    assert_equal(compiled(_sorts, x), _stable_reference(held))


def test_card_routing_sampling_histc(card) -> None:
    logits = distinct((37, 64), torch.float16, 12) / 8
    assert_equal(compiled(lambda t: torch.topk(t, 2), logits), torch.topk(logits, 2))
    vocab = tied((2, 32000), torch.float16, 13, spread=1000)
    assert_equal(compiled(_sampling, vocab), stable(vocab, -1, True, 50))
    experts = tied((40, 2), torch.float32, 14).abs() * 2  # expert ids 0..9 as floats
    count = lambda t: torch.histc(t, bins=10, min=0, max=9)  # noqa: E731
    assert_equal([compiled(count, experts)], [count(experts)])


def test_card_topk_over_a_row_longer_than_lx(card) -> None:
    x = tied((2, 1_100_000), torch.float16, 15, spread=1000)
    assert_equal(compiled(lambda t: torch.topk(t, 8), x), stable(x, -1, True, 8))


# --------------------------------------------------------------------- the spyre device
def test_eager_device_sorting_ops_run_on_the_card() -> None:
    from spyre_ir.runtime import device

    device.setup()
    x = tied((5, 70), torch.float16, 16)
    d = x.to("spyre")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v, i = torch.topk(d, 3)
        s = torch.sort(d, dim=0, stable=True)
        a = torch.argsort(d, descending=True, stable=True)
        h = torch.histc(d, bins=6, min=-3, max=3)
        q = torch.div(d, 0.75, rounding_mode="floor")
    assert v.device.type == "spyre" and not fallbacks.records()
    want_v, want_i = stable(x, -1, True, 3)
    assert torch.equal(v.cpu(), want_v) and torch.equal(i.cpu(), want_i)
    assert torch.equal(s.indices.cpu(), stable(x, 0)[1])
    assert torch.equal(a.cpu(), stable(x, -1, True)[1])
    assert torch.equal(h.cpu(), torch.histc(x, bins=6, min=-3, max=3))
    assert torch.equal(q.cpu(), torch.div(x, 0.75, rounding_mode="floor"))
