"""Fused attention (spyre-fuse-attention + its flash-attention kernel) against the L1
interpreter of the unfused graph and torch eager: prefill and decode at key lengths 1,
17, 64, 129, 512 and 4097, grouped-query heads, causal, additive and padding masks, and
the split-KV decode kernel on the simulated card."""

from __future__ import annotations

import capture
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from spyre_ir.dialects import dataflow
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.pipelines import lower_to_dataflow, lower_to_units
from spyre_ir.sim.engine import simulate

HEADS, KV_HEADS, DIM = 4, 2, 64
TOL = 1e-2  # f16 results; the fused kernel keeps scores in f32 and p in f16 for p @ v


def gqa_attention(mask_kind: str):
    """SDPA on repeat_kv'd keys and values, as Llama writes it."""

    def fn(q, k, v, *mask):
        b, kvh, t, d = k.shape
        g = q.shape[1] // kvh
        k = k[:, :, None].expand(b, kvh, g, t, d).reshape(b, kvh * g, t, d)
        v = v[:, :, None].expand(b, kvh, g, t, d).reshape(b, kvh * g, t, d)
        if mask_kind == "causal":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None)

    return fn


def inputs(batch: int, s: int, t: int, mask_kind: str, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, HEADS, s, DIM, generator=g).half()
    k = torch.randn(batch, KV_HEADS, t, DIM, generator=g).half()
    v = torch.randn(batch, KV_HEADS, t, DIM, generator=g).half()
    args = [q, k, v]
    # Padding: batch element i keeps its first t - 3 * i keys (at least one).
    valid = (
        torch.arange(t)[None, :] < torch.tensor([max(1, t - 3 * i) for i in range(batch)])[:, None]
    )
    if mask_kind == "padding":
        args.append(valid[:, None, None, :])
    elif mask_kind == "additive":
        args.append(
            torch.where(valid, 0.0, float("-inf"))[:, None, None, :]
            .expand(batch, 1, s, t)
            .half()
            .contiguous()
        )
    return args


def fused_matches(fn, args: list[torch.Tensor], **options) -> list[dataflow.KernelOp]:
    """Lower with fusion, run on L2; compare with L1 of the unfused graph and eager."""
    ((module, arrays),) = capture.capture(fn, args)
    want = l1.run_module(module, arrays)
    with torch.no_grad():
        eager = fn(*(a if a.dtype == torch.bool else a.float() for a in args)).numpy()
    lower_to_dataflow(module, **options)
    got = l2.run_module(module, arrays, check_races=True)
    np.testing.assert_allclose(got[0].astype(np.float64), want[0].astype(np.float64),
                               rtol=TOL, atol=TOL)  # fmt: skip
    np.testing.assert_allclose(got[0].astype(np.float64), eager, rtol=TOL, atol=TOL)
    return [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]


def attention_kernels(kernels: list[dataflow.KernelOp]) -> list[dataflow.KernelOp]:
    return [k for k in kernels if k.plan is not None and k.plan.kind == "attention"]


def attention_module(args: list[torch.Tensor], causal: bool):
    """spyre.attention written directly: at one key, Inductor turns the matmuls into
    multiplies and sums, so no graph of the frontend has the pattern to fuse."""
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.registry import make_context

    q, k, v, *mask = args
    ty = lambda x: (
        "tensor<" + "x".join(map(str, x.shape)) + ("xi1>" if x.dtype == torch.bool else "xf16>")
    )  # noqa: E731
    names = ["%q", "%k", "%v", "%m"][: len(args)]
    params = ", ".join(f"{n}: {ty(a)}" for n, a in zip(names, args))
    masked = f" mask(%m : {ty(mask[0])})" if mask else ""
    props = " {causal_offset = 0 : i64}" if causal else ""
    text = (f"func.func @main({params}) -> {ty(q)} {{\n"
            f"  %o = spyre.attention %q, %k, %v{masked} scale = {DIM ** -0.5}{props} : "
            f"{ty(q)}, {ty(k)}, {ty(v)} -> {ty(q)}\n  func.return %o : {ty(q)}\n}}")  # fmt: skip
    return parse_and_verify(make_context(), text, "attention.mlir")


@pytest.mark.parametrize("s", [1, 5])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_one_key(s: int, mask_kind: str) -> None:
    args = inputs(2, s, 1, mask_kind)
    module = attention_module(args, mask_kind == "causal")
    arrays = [capture.to_numpy(a) for a in args]
    want = l1.run_module(module, arrays)
    with torch.no_grad():
        eager = gqa_attention(mask_kind)(*(a if a.dtype == torch.bool else a.float()
                                           for a in args)).numpy()  # fmt: skip
    np.testing.assert_allclose(want[0].astype(np.float64), eager, rtol=TOL, atol=TOL)
    lower_to_dataflow(module)
    got = l2.run_module(module, arrays, check_races=True)
    np.testing.assert_allclose(got[0].astype(np.float64), want[0], rtol=TOL, atol=TOL)


@pytest.mark.parametrize("t", [17, 64, 129, 512])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding", "additive"])
def test_prefill_lengths(t: int, mask_kind: str) -> None:
    kernels = fused_matches(gqa_attention(mask_kind), inputs(2, t, t, mask_kind))
    (kernel,) = attention_kernels(kernels)
    assert not [k for k in kernels if k.plan.kind == "matmul"]
    if mask_kind in ("none", "additive"):
        # SDPA's output permute pair (the identity) folds: no copy kernel follows.
        assert kernels == [kernel]


@pytest.mark.parametrize("t", [17, 64, 129, 512, 4097])
@pytest.mark.parametrize("mask_kind", ["none", "padding"])
def test_decode_lengths(t: int, mask_kind: str) -> None:
    """One query row against t keys (the cost model picks whether the keys split over
    the cores; tests below run every kind of plan)."""
    kernels = fused_matches(gqa_attention(mask_kind), inputs(2, 1, t, mask_kind))
    (kernel,) = attention_kernels(kernels)
    assert kernels[-1] is kernel  # nothing after it (SDPA's output permutes fold)


@pytest.mark.slow
def test_prefill_4097_keys() -> None:
    fused_matches(gqa_attention("causal"), inputs(1, 4097, 4097, "causal"))


def test_17_queries_against_4097_keys_with_padding() -> None:
    fused_matches(gqa_attention("padding"), inputs(2, 17, 4097, "padding"))


def test_off_switch_keeps_the_unfused_kernels() -> None:
    kernels = fused_matches(gqa_attention("causal"), inputs(1, 64, 64, "causal"),
                            fuse_attention=False)  # fmt: skip
    assert not attention_kernels(kernels)
    assert len([k for k in kernels if k.plan.kind == "matmul"]) == 2


DECODE = """
func.func @main(%q: tensor<1x8x1x64xf16>, %k: tensor<1x2x1000x64xf16>, %v: tensor<1x2x1000x64xf16>, %m: tensor<1x1x1x1000xi1>) -> tensor<1x8x1x64xf16> {
  %o = spyre.attention %q, %k, %v mask(%m : tensor<1x1x1x1000xi1>) scale = 0.125 {zero_masked_rows} : tensor<1x8x1x64xf16>, tensor<1x2x1000x64xf16>, tensor<1x2x1000x64xf16> -> tensor<1x8x1x64xf16>
  func.return %o : tensor<1x8x1x64xf16>
}
"""


def test_split_kv_decode_on_the_simulator() -> None:
    """The ring combine of the split-KV kernel: the simulator gives L2's numbers and
    L1's to f16 rounding; with every key masked the rows are 0 (zero_masked_rows)."""
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.registry import make_context

    rng = np.random.default_rng(0)
    module = parse_and_verify(make_context(), DECODE, "decode.mlir")
    args = [rng.standard_normal(a.type.get_shape()).astype(np.float16)
            for a in module.body.block.first_op.args[:3]]  # fmt: skip
    keep = rng.random((1, 1, 1, 1000)) < 0.7
    want = l1.run_module(module, [*args, keep])
    masked = l1.run_module(module, [*args, np.zeros_like(keep)])
    assert (masked[0] == 0).all()
    lower_to_units(module)
    (program,) = [op for op in module.walk() if op.name == "core.program"]
    assert program.plan.split_kv.data > 1
    got = simulate(module, [*args, keep])
    np.testing.assert_allclose(got.outputs[0].astype(np.float64), want[0], rtol=TOL, atol=TOL)
    assert (simulate(module, [*args, np.zeros_like(keep)]).outputs[0] == 0).all()


def test_fully_masked_rows_follow_softmax() -> None:
    """Without torch's guard a row with every key masked is NaN, as softmax gives."""
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.registry import make_context

    text = DECODE.replace(" {zero_masked_rows}", "")
    module = parse_and_verify(make_context(), text, "decode.mlir")
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(a.type.get_shape()).astype(np.float16)
            for a in module.body.block.first_op.args[:3]]  # fmt: skip
    none = np.zeros((1, 1, 1, 1000), dtype=bool)
    assert np.isnan(l1.run_module(module, [*args, none])[0]).all()
    lower_to_dataflow(module)
    assert np.isnan(l2.run_module(module, [*args, none])[0]).all()


@pytest.mark.parametrize(
    ("heads", "rows", "keys", "split_kv"),
    [(2, 32, 128, 2), (1, 64, 256, 2), (1, 16, 128, 1), (2, 8, 512, 1)],
)
@pytest.mark.parametrize("mask_kind", ["causal", "padding", "additive"])
def test_every_kind_of_plan(monkeypatch, heads, rows, keys, split_kv, mask_kind) -> None:
    """The kernel under plans the cost model may not pick for this shape: a key tile
    of 2, 4 or 8 chunks, key tiles overhanging the end, keys split over cores that walk
    several tiles each and combine on the ring, query tiles smaller than the
    sequence, heads of a group together or apart."""
    from spyre_ir.passes import attention_plan, tile_attention

    def forced(op, cores, config):
        return attention_plan.split(op, cores, heads, rows, keys, split_kv)

    monkeypatch.setattr(tile_attention, "choose_plan", forced)
    kernels = fused_matches(gqa_attention(mask_kind), inputs(2, 40, 300, mask_kind))
    (kernel,) = attention_kernels(kernels)
    assert kernel.plan.split_kv.data == split_kv
    assert [t.data for t in kernel.plan.tile.data] == [heads, rows, keys]


PREFILL = """
func.func @main(%q: tensor<1x4x128x128xf16>, %k: tensor<1x2x512x128xf16>, %v: tensor<1x2x512x128xf16>) -> tensor<1x4x128x128xf16> {
  %o = spyre.attention %q, %k, %v scale = 0.125 {causal_offset = 384 : i64} : tensor<1x4x128x128xf16>, tensor<1x2x512x128xf16>, tensor<1x2x512x128xf16> -> tensor<1x4x128x128xf16>
  func.return %o : tensor<1x4x128x128xf16>
}
"""


def test_key_tile_stages_on_their_corelets() -> None:
    """Q K^T runs on one PE array and p V on the other (the `corelet` attribute the
    kernel sets, honoured by convert-dataflow-to-units), so the scores of the next key
    tile overlap the softmax and p V of this one; the small prefill uses every core."""
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.passes.attention_plan import CHUNK
    from spyre_ir.registry import make_context

    module = parse_and_verify(make_context(), PREFILL, "prefill.mlir")
    lower_to_units(module)
    (program,) = [op for op in module.walk() if op.name == "core.program"]
    assert program.core_count == 32
    units = program.units()

    def matmul_widths(unit: str) -> set[int]:
        return {op.outputs[0].type.get_shape()[-1] for op in units[unit].walk()
                if getattr(op, "kind", None) is not None and op.kind.data == "spyre.matmul"}  # fmt: skip

    assert matmul_widths("pe0") == {CHUNK}  # Q K^T: a chunk of keys
    assert matmul_widths("pe1") == {128}  # p V: the head dim


@pytest.mark.parametrize("split_kv", [1, 2])
@pytest.mark.parametrize("mask_kind", ["causal", "padding"])
def test_resident_kv_reads_each_key_once_per_core(monkeypatch, split_kv, mask_kind) -> None:
    """K and V resident in LX across a core's units (all on one key/value head): the
    levels agree (L2 with its race check), the simulator gives the streaming plan's
    numbers bit for bit, and LPDDR5 serves fewer bytes, as served_bytes predicts."""
    from dataclasses import replace

    from spyre_ir.passes import attention_plan, tile_attention

    cores = 4 * split_kv  # 24 units of 1 head x 16 rows: 6 per core group, 6 per kv head
    fn, args = gqa_attention(mask_kind), inputs(2, 40, 300, mask_kind)
    runs = {}
    for resident in (False, True):

        def forced(op, _cores, config, resident=resident):
            plan = attention_plan.split(op, cores, 1, 16, 128, split_kv)
            assert attention_plan.resident_possible(op, plan) and plan.units_per_group == 6
            runs.setdefault("served", {})[resident] = attention_plan.served_bytes(
                op, replace(plan, resident_kv=resident)
            )
            runs["walked"] = plan.split_kv * plan.key_tiles * plan.keys
            return replace(plan, resident_kv=resident)

        monkeypatch.setattr(tile_attention, "choose_plan", forced)
        fused_matches(fn, args)
        ((module, arrays),) = capture.capture(fn, args)
        lower_to_units(module)
        runs[resident] = simulate(module, arrays)
    np.testing.assert_array_equal(runs[True].outputs[0], runs[False].outputs[0])
    saved = sum(runs["served"][False]) - sum(runs["served"][True])
    assert saved > 0
    got = runs[False].report["lpddr_bytes"] - runs[True].report["lpddr_bytes"]
    # served_bytes counts whole key tiles (the keys the cores walk, 384 or 512); the
    # simulator the 300 keys inside the tensor that the tiles read.
    assert got * runs["walked"] == saved * 300


LAYER_PREFILL = """
func.func @main(%q: tensor<1x32x512x128xf16>, %k: tensor<1x8x512x128xf16>, %v: tensor<1x8x512x128xf16>) -> tensor<1x32x512x128xf16> {
  %o = spyre.attention %q, %k, %v scale = 0.088 {causal_offset = 0 : i64} : tensor<1x32x512x128xf16>, tensor<1x8x512x128xf16>, tensor<1x8x512x128xf16> -> tensor<1x32x512x128xf16>
  func.return %o : tensor<1x32x512x128xf16>
}
"""


def test_layer_prefill_keeps_keys_resident() -> None:
    """The 8B layer's prefill attention: each core's 4 units share one kv head, whose
    K and V (256 KiB) stay in LX, so the keys are served once (Q, K, V and the output
    once each), not once per unit."""
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.hardware import DEFAULT_CONFIG
    from spyre_ir.passes import attention_plan
    from spyre_ir.registry import make_context

    module = parse_and_verify(make_context(), LAYER_PREFILL, "layer.mlir")
    op = next(o for o in module.walk() if o.name == "spyre.attention")
    plan = attention_plan.choose_plan(op, 32, DEFAULT_CONFIG)
    assert plan.resident_kv and plan.units_per_group > 1
    q = kv = 32 * 512 * 128 * 2
    kv //= 4  # 8 kv heads
    assert attention_plan.served_bytes(op, plan) == (q + 2 * kv, q)
