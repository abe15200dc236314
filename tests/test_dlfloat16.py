"""DLFloat16, the card's 16-bit float (spyre_ir/interp/dlfloat16.py): every code, the
rounding (to nearest, ties away from zero), saturation, underflow, NaN, the host
conversions from and to fp16 / bf16 / f32, and an f16 model on the card keeping a value
IEEE fp16 cannot hold."""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from spyre_ir.interp import dlfloat16 as D
from spyre_ir.interp.numerics import round_to_bf16

sys.path.insert(0, str(Path(__file__).parent))

CODES = np.arange(1 << 16, dtype=np.uint16)


def value_of(code: int) -> float:
    """A code's value from the format's definition, in float64."""
    s, e, m = code >> 15, (code >> 9) & 63, code & 511
    if e == 0 and m == 0:
        return -0.0 if s else 0.0
    if e == 63 and m == 511:
        return math.nan
    return (-1) ** s * 2.0 ** (e - 31) * (1 + m / 512)


def reference_round(x: float) -> float:
    """DLFloat16 rounding of one value, written from the definition in float64."""
    if math.isnan(x):
        return math.nan
    sign = -1.0 if math.copysign(1, x) < 0 else 1.0
    a = abs(x)
    if a == math.inf:
        return sign * D.MAXIMUM
    if a == 0:
        return sign * 0.0
    e = math.floor(math.log2(a))
    if 2.0**e > a:  # log2 rounding at the edges
        e -= 1
    q = math.floor((a / 2.0**e - 1) * 512 + 0.5)  # nearest; a tie goes up in magnitude
    if q == 512:
        e, q = e + 1, 0
    if e < -31 or (e == -31 and q == 0):  # below the smallest code, or its zero code
        return sign * 0.0
    if e > 32 or (e == 32 and q == 511):
        return sign * D.MAXIMUM
    return sign * 2.0**e * (1 + q / 512)


def same(got: np.ndarray, want: np.ndarray) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    ok = (got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))
    assert ok.all(), (got[~ok][:5], want[~ok][:5])


def test_every_code_decodes_to_its_definition_and_encodes_back() -> None:
    values = D.decode(CODES)
    assert values.dtype == np.float32
    same(values, [value_of(int(c)) for c in CODES])
    back = D.encode(values)
    # The one NaN code keeps no sign: -NINF (0xFFFF) comes back as 0x7FFF.
    np.testing.assert_array_equal(back[:-1], CODES[:-1])
    assert back[-1] == D.NINF
    same(D.round_to_dlf16(values), values)  # DLFloat16 values are fixed points


def test_the_edges_of_the_range() -> None:
    assert D.MAXIMUM == 2.0**32 * (1 + 510 / 512) == D.decode(np.uint16(0x7FFE))
    assert D.SMALLEST == 2.0**-31 * (1 + 1 / 512) == D.decode(np.uint16(0x0001))
    assert D.encode(np.float32(1.0)) == 31 << 9  # e = 31, m = 0
    assert D.encode(np.float32(-2.5)) == 0x8000 | 32 << 9 | 128  # -2^1 x (1 + 128/512)


def test_ties_round_away_from_zero_and_others_to_nearest() -> None:
    one = np.float32(1.0)
    place = 2.0**-9
    x = np.float32([1 + place / 2, 1 + 3 * place / 2, -(1 + place / 2), 1 + place / 2 - 2**-20,
                    1 + place / 2 + 2**-20, 2 - place / 2])  # fmt: skip
    want = [1 + place, 1 + 2 * place, -(1 + place), 1.0, 1 + place, 2.0]
    same(D.round_to_dlf16(x), want)
    assert D.round_to_dlf16(one) == one


def test_overflow_saturates_to_the_largest_value() -> None:
    half_place_at_max = 2.0**32 / 1024
    x = np.float32([D.MAXIMUM, D.MAXIMUM + half_place_at_max * 0.99, D.MAXIMUM * 1.001, 1e10,
                    3e38, np.inf, -1e10, -np.inf])  # fmt: skip
    same(D.round_to_dlf16(x), [D.MAXIMUM] * 6 + [-D.MAXIMUM] * 2)
    codes = D.encode(x)
    np.testing.assert_array_equal(codes, [0x7FFE] * 6 + [0xFFFE] * 2)


def test_underflow_goes_to_zero_keeping_the_sign() -> None:
    x = np.float32([2.0**-31, 2.0**-32, -(2.0**-33), 1e-45, -1e-40, 2.0**-31 * (1 + 0.6 / 512),
                    D.SMALLEST, -D.SMALLEST])  # fmt: skip
    got = D.round_to_dlf16(x)
    same(got, [0.0, 0.0, -0.0, 0.0, -0.0, D.SMALLEST, D.SMALLEST, -D.SMALLEST])
    # zeros of either sign, alone or among values the special path fixes
    same(D.round_to_dlf16(np.float32([0.0, -0.0, 1.0])), [0.0, -0.0, 1.0])
    same(D.round_to_dlf16(np.float32([-0.0, 1e-40, 0.0, -np.inf])), [-0.0, 0.0, 0.0, -D.MAXIMUM])
    np.testing.assert_array_equal(D.encode(x)[:5], [0, 0, 0x8000, 0, 0x8000])


def test_nan_is_the_ninf_code() -> None:
    x = np.float32([np.nan, -np.nan])
    assert np.isnan(D.round_to_dlf16(x)).all()
    np.testing.assert_array_equal(D.encode(x), [D.NINF, D.NINF])
    assert np.isnan(D.decode(np.uint16([D.NINF, 0x8000 | D.NINF]))).all()


def test_rounding_of_many_float32_values_matches_the_definition() -> None:
    rng = np.random.default_rng(0)
    exponents = rng.uniform(-36, 36, 20_000)
    x = (np.sign(rng.standard_normal(20_000)) * 2.0**exponents).astype(np.float32)
    grid = D.decode(CODES[:0x7FFF]).astype(np.float64)[1:]  # neighbours and their midpoints
    mids = ((grid[1:] + grid[:-1]) / 2).astype(np.float32)
    x = np.concatenate([x, mids, np.nextafter(mids, np.float32(0)), -mids])
    same(D.round_to_dlf16(x), [reference_round(float(v)) for v in x])
    inplace = x.copy()
    assert D.round_to_dlf16(inplace, overwrite=True) is inplace
    same(inplace, D.round_to_dlf16(x))


def test_from_fp16_every_value() -> None:
    halves = CODES.view(np.float16)
    got = D.from_user(halves)
    assert got.dtype == np.float32
    with np.errstate(invalid="ignore"):
        same(got, [reference_round(float(h)) for h in halves])
    finite = halves[np.isfinite(halves)]  # the path for data without inf or NaN
    same(D.from_user(finite), [reference_round(float(h)) for h in finite])
    # inf saturates; fp16 subnormals are normal DLFloat16 numbers (exact: <= 10 bits)
    assert D.from_user(np.float16([np.inf]))[0] == D.MAXIMUM
    assert D.from_user(np.float16([2.0**-24]))[0] == 2.0**-24


def test_to_fp16_is_exact_in_its_range_and_overflows_to_infinity() -> None:
    values = D.decode(CODES)
    finite = np.isfinite(values)
    inside = finite & (np.abs(values) <= 65504) & ((np.abs(values) >= 2.0**-14) | (values == 0))
    halves = D.to_user(values, np.float16)
    assert halves.dtype == np.float16
    same(halves[inside], values[inside])  # every DLFloat16 value in fp16's normal range
    beyond = finite & (np.abs(values) >= 65536)
    assert np.isinf(halves[beyond]).all()
    assert (np.sign(halves[beyond]) == np.sign(values[beyond])).all()


def test_bf16_and_f32_both_ways() -> None:
    bf16 = (CODES.astype(np.uint32) << 16).view(np.float32)  # every bf16 value
    with np.errstate(invalid="ignore"):
        same(D.from_user(bf16), [reference_round(float(b)) for b in bf16])
    values = D.decode(CODES)
    same(D.to_user(values, np.float32), values)  # DLFloat16 -> f32 is exact
    same(D.to_user(values, "bf16"), round_to_bf16(values))
    wide = np.float64([1 + 2.0**-10, 1e12, -3.0])  # float64 host data: via float32
    same(D.from_user(wide), [1 + 2.0**-9, D.MAXIMUM, -3.0])


def test_an_f16_model_keeps_a_value_fp16_cannot_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """x * 1000 / 1000 on the card: 100 * 1000 is past fp16's 65504 (eager gives inf)
    but well inside DLFloat16's range, so the card returns 100; ordinary values match
    eager within DLFloat16's rounding."""
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()
    fn = torch.compile(lambda x: (x * 1000) / 1000, backend="spyre", dynamic=False)
    x = torch.linspace(-2, 2, 64 * 8, dtype=torch.float16).reshape(8, 64)
    x[3, 5] = 100.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fn(x)
    want = (x * 1000) / 1000
    assert torch.isinf(want[3, 5]) and got[3, 5].item() == 100.0
    mask = torch.ones_like(x, dtype=torch.bool)
    mask[3, 5] = False
    torch.testing.assert_close(got[mask], want[mask], rtol=2 * 2.0**-9, atol=1e-3)
    torch._dynamo.reset()


def test_from_fp16_of_any_layout_is_the_float32_rounding() -> None:
    # fp16 is rounded by a lookup of its bits: strided, 0-d and n-d arrays too
    halves = CODES.view(np.float16).reshape(256, 256)
    for x in (halves, halves[::3, 1::2], halves.T, np.asarray(halves[7, 9]), halves[:0]):
        got = D.round_to_dlf16(x)
        assert got.shape == x.shape and got.dtype == np.float32
        same(got, D.round_to_dlf16(np.asarray(x, dtype=np.float32)))


def test_from_fp16_into_a_strided_output_leaves_the_rest() -> None:
    halves = CODES.view(np.float16).reshape(512, 128)
    padded = np.full((513, 129), 7.0, np.float32)  # a kernel output's padded memory
    assert D.from_user(halves, out=padded[:512, :128]) is not None
    same(padded[:512, :128], D.round_to_dlf16(halves.astype(np.float32)))
    assert (padded[512] == 7).all() and (padded[:, 128] == 7).all()
    wide = np.float64([[1 + 2.0**-10, 1e20]])
    out = np.zeros((1, 2), np.float32)
    same(D.from_user(wide, out=out), [[1 + 2.0**-9, D.MAXIMUM]])
    same(out, [[1 + 2.0**-9, D.MAXIMUM]])


def test_encoding_any_float32_gives_the_code_of_its_rounding() -> None:
    """`encode` looks the code of a rounded value up by its top bits: for any float32
    bits (NaN, infinities and subnormals among them) it is the code whose value is the
    rounding, with the sign kept (on zeros too) and NaN as NINF (the rounding's NaN)."""
    bits = np.random.default_rng(1).integers(0, 2**32, 300_000, dtype=np.uint64)
    x = bits.astype(np.uint32).view(np.float32)
    codes = D.encode(x)
    rounded = D.round_to_dlf16(x)
    nan = np.isnan(x)
    same(D.decode(codes[~nan]), rounded[~nan])
    assert ((codes[nan] & 0x7FFF) == D.NINF).all()
    np.testing.assert_array_equal(codes[~nan] >> 15, np.signbit(x[~nan]))


def test_a_comparison_with_an_infinity_compares_with_the_saturation_bound() -> None:
    """The card holds a 16-bit infinity as +-MAXIMUM, so a comparison with an infinite
    operand compares with that bound, the other operand as the card holds it: values
    beyond the bound (f32 sums) or within half a place of it count as at it;
    comparisons without an infinity are left alone."""
    big = np.float32(D.MAXIMUM)
    x = np.array([-np.inf, -big, -1e10, -1.0, big, 1e10, np.nan], np.float32)
    a, b = D.infinities_as_bounds(x, np.float32(-np.inf))
    assert list(a == b) == [True, True, True, False, False, False, False]
    a, b = D.infinities_as_bounds(np.float32(np.inf), x)
    assert list(a > b) == [True, True, True, True, False, False, False]
    half = 2.0**22  # half of DLFloat16's place at MAXIMUM
    near = np.array([-big + 512, -big + half, -big + half + 1024, D.MAXIMUM - half - 1024],
                    np.float32)  # fmt: skip
    a, b = D.infinities_as_bounds(near, np.float32(-np.inf))
    assert list(a == b) == [True, True, False, False]
    a, b = D.infinities_as_bounds(np.abs(near), np.float32(np.inf))
    assert list(a == b) == [True, True, False, False]
    finite = np.array([1e10, 9e9], np.float32)
    a, b = D.infinities_as_bounds(finite, np.float32(9e9))
    assert a is finite and list(a > b) == [True, False]


@pytest.mark.parametrize("fused", [True, False])
def test_a_masked_row_of_a_boolean_sdpa_mask_is_zero_as_in_eager(fused: bool) -> None:
    """torch's SDPA of a boolean mask adds where(mask, 0, -inf) and zeroes rows whose
    every key is masked. On the card a 16-bit -inf is stored as -MAXIMUM: the fused
    kernel reads the boolean mask itself (spyre-fuse-attention), and unfused, torch's
    guard (scores == -inf) compares with the saturation bound (`infinities_as_bounds`);
    either way those rows come back as eager's zeros, the others within f16 tolerance.
    The simulator runs in DLFloat16."""
    import capture
    import torch.nn.functional as F

    from spyre_ir.pipelines import lower_to_units
    from spyre_ir.sim.engine import simulate

    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 64, dtype=torch.float16) for _ in range(3))
    keep = torch.rand(16, 16) > 0.3
    keep[3] = False  # query row 3 sees no key
    keep[:, 0] |= torch.arange(16) != 3  # every other row sees one at least

    def sdpa(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

    ((module, arrays),) = capture.capture(sdpa, [q, k, v, keep])
    lower_to_units(module, fuse_attention=fused)
    kernels = [op.sym_name.data for op in module.walk() if op.name == "core.program"]
    assert any(name.startswith("attention") for name in kernels) == fused, kernels
    got = torch.from_numpy(simulate(module, arrays).outputs[0])
    want = sdpa(q, k, v, keep)
    assert bool((want[:, :, 3] == 0).all()) and bool((got[:, :, 3] == 0).all())
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("plan", ["fused", "fused-split-kv", "unfused"])
def test_a_fully_masked_row_of_a_float_sdpa_mask_is_zero_as_in_eager(monkeypatch, plan) -> None:
    """A float mask the user made (-inf where a key is masked, other values added to the
    scores): eager SDPA (torch's math kernel, f16 and f32 alike) returns zeros for a row
    whose every key is -inf. On the card the mask's -inf is -MAXIMUM and -MAXIMUM + s is
    finite in f32: the fused kernel's running max starts just above -MAXIMUM
    (tile_attention.MASKED_BELOW), so such keys weigh 0 and the row's sum is 0 (with a
    split over cores too, whose ring combine adds the sums); unfused, torch's guard
    compares with the bound. The row is zeros either way, even with large scores, the
    others within f16 tolerance. The simulator runs in DLFloat16."""
    import capture
    import torch.nn.functional as F

    from spyre_ir.passes import attention_plan, tile_attention
    from spyre_ir.pipelines import lower_to_units
    from spyre_ir.sim.engine import simulate

    if plan == "fused-split-kv":  # 2 cores of 2 key tiles of 64 each, the last overhanging
        monkeypatch.setattr(tile_attention, "choose_plan",
                            lambda op, cores, config: attention_plan.split(op, cores, 1, 16, 64, 2))  # fmt: skip
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 64, dtype=torch.float16) for n in (16, 200, 200))
    q[:, :, 3] *= 100  # scores in the hundreds on the masked row
    mask = torch.randn(16, 200, dtype=torch.float16)
    mask[torch.rand(16, 200) < 0.3] = -math.inf
    mask[3] = -math.inf  # query row 3 sees no key
    mask[torch.arange(16) != 3, 0] = 0.0  # every other row sees one at least

    def sdpa(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

    ((module, arrays),) = capture.capture(sdpa, [q, k, v, mask])
    lower_to_units(module, fuse_attention=plan != "unfused")
    programs = [op for op in module.walk() if op.name == "core.program"]
    fused = [p for p in programs if p.sym_name.data.startswith("attention")]
    assert len(fused) == (plan != "unfused"), [p.sym_name.data for p in programs]
    if plan == "fused-split-kv":
        assert fused[0].plan.split_kv.data == 2
    got = torch.from_numpy(simulate(module, arrays).outputs[0])
    want = sdpa(q, k, v, mask)
    assert bool((want[:, :, 3] == 0).all()) and bool((got[:, :, 3] == 0).all())
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
