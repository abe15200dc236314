"""Python scalars at torch's precision (issue 19): a tensor-scalar op on 16-bit floats
computes with the scalar in f32 (torch's "opmath") and rounds only its result, eager on
spyre tensors and through torch.compile, on the card (DLFloat16 storage) and on the
executors that compute IEEE fp16 (reference, dataflow).

Each case compares with torch eager on CPU: exactly against the one rounding the card
makes (f32 product -> DLFloat16 -> the user's dtype) where that is computable, else
within the storage format's tolerance (a DLFloat16 place, plus the user's dtype's).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spyre_ir.interp import dlfloat16
from spyre_ir.runtime import device

device.setup()

F32_WARNINGS = "ignore:spyre. float32"
pytestmark = pytest.mark.filterwarnings(F32_WARNINGS)


def randn(*shape: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def once_rounded(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """f32 `values` as the card stores them (DLFloat16) and returns them in `dtype`."""
    held = dlfloat16.round_to_dlf16(values.float().numpy().astype(np.float32))
    return torch.from_numpy(np.ascontiguousarray(held)).to(dtype)


def eager(fn, *args: torch.Tensor) -> torch.Tensor:
    return fn(*(a.to("spyre") for a in args)).cpu()


def compiled(fn, *args: torch.Tensor, executor: str = "card") -> torch.Tensor:
    torch._dynamo.reset()
    return torch.compile(fn, backend="spyre", options={"executor": executor})(*args)


def storage_close(got: torch.Tensor, ref: torch.Tensor, atol: float = 0.0) -> None:
    """Within a place of DLFloat16 and a place of `ref`'s dtype of torch's value (the
    card's rounding of the f32 result to DLFloat16 and then to the dtype can end a place
    of the dtype from torch's one rounding), where torch's value is in DLFloat16's range
    (beyond it the card saturates)."""
    ulp = {torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10, torch.float32: 0.0}[ref.dtype]
    size = ref.float().abs()
    held = (size <= dlfloat16.MAXIMUM) & ((size >= dlfloat16.SMALLEST) | (size == 0))
    assert bool(held.any())
    torch.testing.assert_close(got.float()[held], ref.float()[held], rtol=2.0**-9 + ulp,
                               atol=atol)  # fmt: skip


# (op, scalar, scale of x): results within DLFloat16's range
CASES = [
    ("mul", 1e5, 1.0), ("mul", 1e-3, 1.0), ("mul", -7.1e-4, 1.0), ("mul", 1e-12, 1e3),
    ("mul", 1e12, 1e-5), ("div", 3.3, 1.0), ("div", 1e-12, 1e-4), ("div", 1e12, 1e4),
    ("add", 3.3, 1.0), ("add", 1e-3, 1.0), ("sub", 0.7, 1.0), ("rsub", 3.3, 1.0),
    ("pow", 2.3, 1.0),
]  # fmt: skip
FNS = {
    "mul": lambda t, s: t * s, "div": lambda t, s: t / s, "add": lambda t, s: t + s,
    "sub": lambda t, s: t - s, "rsub": lambda t, s: s - t, "pow": lambda t, s: t.abs() ** s,
}  # fmt: skip
OPMATH = {"mul", "div"}
"""torch's CPU kernels take a Python scalar at f32 for mul and div of 16-bit floats, and
round it to the tensor's dtype first for add, sub, rsub and pow."""


def as_torch_takes(op: str, scalar: float, dtype: torch.dtype) -> float:
    return scalar if op in OPMATH else float(torch.tensor(scalar).to(dtype))


@pytest.mark.parametrize(("op", "scalar", "scale"), CASES)
def test_bf16_tensor_scalar_ops_round_once_eager(op: str, scalar: float, scale: float) -> None:
    # bf16 values are exact in DLFloat16 from 2**-31 to 2**32, so the card's result is
    # exactly torch's f32 result rounded to DLFloat16, then to bf16. (x * 1e5 was 0.77 %
    # off: the scalar was rounded first; 1e-12 became 0 and 1e12 saturated at 8.6e9.)
    x = randn(8, 64, dtype=torch.bfloat16) * scale
    if op == "pow":
        x = x.abs()

    def fn(t: torch.Tensor) -> torch.Tensor:
        return FNS[op](t, scalar)

    want = once_rounded(FNS[op](x.float(), as_torch_takes(op, scalar, x.dtype)), x.dtype)
    got = eager(fn, x)
    assert torch.equal(got, want)
    storage_close(got, fn(x))


@pytest.mark.parametrize("op", ["mul", "add"])
def test_fp16_tensor_scalar_ops_follow_torch_eager(op: str) -> None:
    # fp16 inputs are rounded to DLFloat16 on the way in (a fraction bit fewer), so the
    # result is within the storage tolerance of torch's
    x = randn(8, 64, dtype=torch.float16, seed=6)
    scalar = 3.3

    def fn(t: torch.Tensor) -> torch.Tensor:
        return FNS[op](t, scalar)

    held = once_rounded(x.float(), torch.float32)
    want = once_rounded(FNS[op](held, as_torch_takes(op, scalar, x.dtype)), x.dtype)
    assert torch.equal(eager(fn, x), want)
    # the input's rounding to DLFloat16 (half a place of x) counts absolutely
    storage_close(eager(fn, x), fn(x), atol=2.0**-10 * float(x.abs().max()))


def test_bf16_scalar_ops_round_once_compiled() -> None:
    x = randn(8, 64, dtype=torch.bfloat16, seed=1)

    def fn(t: torch.Tensor) -> torch.Tensor:
        return t * 1e5

    assert torch.equal(compiled(fn, x), once_rounded(x.float() * 1e5, torch.bfloat16))
    storage_close(compiled(fn, x), fn(x))


def test_a_scalar_below_dlfloat16s_range_still_scales_eager_and_compiled() -> None:
    # 1e-12 is below DLFloat16's smallest magnitude (4.7e-10); x * 1e-12 is not
    x = randn(4, 64, dtype=torch.bfloat16, seed=2).abs() * 1e3 + 2e3

    def fn(t: torch.Tensor) -> torch.Tensor:
        return t * 1e-12

    for got in (eager(fn, x), compiled(fn, x)):
        assert bool((got != 0).all())
        storage_close(got, fn(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("executor", ["card", "reference", "dataflow"])
def test_additive_mask_with_minus_1e9_is_never_nan(dtype: torch.dtype, executor: str) -> None:
    # (1 - m) * -1e9 where m == 1 is 0 * -1e9 = -0 in f32; an fp16 -1e9 is -inf and
    # 0 * -inf is NaN
    s = randn(4, 64, dtype=dtype, seed=3)
    m = (randn(4, 64, dtype=torch.float32, seed=4) > 0).to(dtype)

    def fn(s: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return s * m + (1 - m) * -1e9

    ref = fn(s, m)
    got = compiled(fn, s, m, executor=executor)
    assert not bool(got.isnan().any())
    kept = m.bool()
    torch.testing.assert_close(got[kept].float(), ref[kept].float(), rtol=2e-3, atol=0.0)
    masked = got[~kept].float()  # -1e9 (DLFloat16: -1e9 to 3 places; fp16: -inf)
    if dtype == torch.float16:
        assert bool((masked == -torch.inf).all())
    else:
        torch.testing.assert_close(masked, ref[~kept].float(), rtol=2.0**-9, atol=0.0)
    if executor == "card":
        eager_got = eager(fn, s, m)
        assert not bool(eager_got.isnan().any())
        torch.testing.assert_close(eager_got, got, rtol=0.0, atol=0.0)


@pytest.mark.parametrize("executor", ["card", "reference", "dataflow"])
def test_x_times_1e30_is_zero_where_x_is_zero_in_fp16(executor: str) -> None:
    # torch: 0 * 1e30 = 0 and 1 * 1e30 = inf (fp16); an fp16 1e30 is inf, 0 * inf NaN
    x = torch.tensor([[0.0, 1.0, -2.0, 0.0] * 16] * 4, dtype=torch.float16)

    def fn(t: torch.Tensor) -> torch.Tensor:
        return t * 1e30

    ref = fn(x)
    got = compiled(fn, x, executor=executor)
    assert not bool(got.isnan().any())
    assert torch.equal(got == 0, ref == 0)
    if executor != "card":  # IEEE fp16: torch's infinities exactly
        assert torch.equal(got, ref)
    else:  # DLFloat16 saturates at 8.6e9, and the fp16 cast back gives inf
        assert torch.equal(got, ref)
        assert torch.equal(eager(fn, x), ref)


@pytest.mark.parametrize("executor", ["card", "reference"])
@pytest.mark.parametrize("fn_name", ["ceil", "floor"])
def test_ceil_and_floor_of_scaled_large_values(fn_name: str, executor: str) -> None:
    # ceil(x * 1e5) of bf16 x: the scalar in f32, the product rounded once, then ceil
    rounding = getattr(torch, fn_name)
    x = randn(4, 64, dtype=torch.bfloat16, seed=5)

    def fn(t: torch.Tensor) -> torch.Tensor:
        return rounding(t * 1e5)

    ref = fn(x)
    got = compiled(fn, x, executor=executor)
    storage_close(got, ref)
    if executor == "card":  # eager rounds t * 1e5 to bf16 before ceil: still close
        storage_close(eager(fn, x), ref)


@pytest.mark.parametrize("fn_name", ["ceil", "floor"])
def test_ceil_and_floor_of_large_f32_values(fn_name: str) -> None:
    # f32 values past fp16's 65,504 (up to 1e9): the card holds them as DLFloat16 and
    # returns f32 (no fp16 on the way: that gave inf)
    rounding = getattr(torch, fn_name)
    x = randn(4, 64, dtype=torch.float32, seed=7) * 1e9 + 0.5
    ref = rounding(x)
    for got in (eager(rounding, x), compiled(rounding, x)):
        assert got.dtype == torch.float32 and bool(got.isfinite().all())
        torch.testing.assert_close(got, ref, rtol=2.0**-9, atol=1.0)
    small = randn(4, 64, dtype=torch.float32, seed=8) * 100  # exact in DLFloat16 after
    torch.testing.assert_close(eager(rounding, small), rounding(small), rtol=2.0**-9, atol=1.0)


# --------------------------------------- comparisons, where, masked_fill, clamp, alpha
# torch 2.13's CPU kernels round these scalars to the tensor's dtype first (checked by the
# torch results below): `bf16(258) == 258.9` is True (258.9 rounds to bf16's 258) and
# `fp16(inf) == 1e9` is True (1e9 rounds to fp16's inf). The card held the scalar as
# DLFloat16 straight from f64 (258.9 -> 259.0, 1e9 finite), so both were False.
@pytest.mark.parametrize(
    ("dtype", "values", "scalar"),
    [(torch.bfloat16, [258.0, 256.0, 260.0], 258.9),
     (torch.float16, [float("inf"), 60000.0, -float("inf")], 1e9)],
)  # fmt: skip
def test_comparisons_with_a_scalar_round_it_to_the_dtype_first(dtype, values, scalar) -> None:
    x = torch.tensor(values, dtype=dtype)
    for fn in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge):
        expected = fn(x, scalar)
        assert torch.equal(eager(lambda t, fn=fn: fn(t, scalar), x), expected), fn.__name__
        got = compiled(lambda t, fn=fn: fn(t, scalar), x)
        assert torch.equal(got, expected), fn.__name__
    assert torch.equal(torch.eq(x, scalar), torch.tensor([True, False, False]))


def test_where_with_a_scalar_takes_it_rounded_to_the_dtype() -> None:
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)
    m = torch.tensor([True, False, True])
    expected = torch.where(m, x, 258.9)  # bf16's 258 (a guard: DLFloat16's 259 rounds there too)
    assert expected[1].item() == 258.0
    got = torch.where(m.to("spyre"), x.to("spyre"), 258.9).cpu()
    assert torch.equal(got, expected)


@pytest.mark.parametrize(
    "fn",
    [lambda t, m: t.masked_fill(m, -1e9), lambda t, m: t.clamp(max=1e9),
     lambda t, m: t.clamp(min=-70000.0), lambda t, m: torch.clamp_min(t, 1e5),
     lambda t, m: torch.add(t, t, alpha=1e5), lambda t, m: torch.sub(t, 1.0, alpha=-1e6)],
)  # fmt: skip
def test_scalars_outside_fp16s_range_raise_torchs_error(fn) -> None:
    """masked_fill's value, clamp's bounds and alpha are range-checked by torch's CPU
    kernels; on spyre tensors the decomposed graph (a `where`, an f32 clamp) computed -inf
    or a bound past fp16's range instead of raising."""
    x, m = torch.zeros(4, dtype=torch.float16), torch.tensor([True, False, True, False])
    with pytest.raises(
        RuntimeError, match="cannot be converted to type c10::Half without overflow"
    ):
        fn(x, m)
    with pytest.raises(
        RuntimeError, match="cannot be converted to type c10::Half without overflow"
    ):
        fn(x.to("spyre"), m.to("spyre"))


def test_the_same_scalars_in_range_run_on_the_card_as_torch() -> None:
    x = torch.tensor([1.0, -3.0, 2056.0, 7.0], dtype=torch.float16)
    m = torch.tensor([True, False, True, False])
    for fn in (lambda t, k: t.masked_fill(k, -6e4), lambda t, k: t.clamp(max=2051.0),
               lambda t, k: torch.add(t, t, alpha=0.5)):  # fmt: skip
        expected = fn(x, m)
        got = fn(x.to("spyre"), m.to("spyre")).cpu()  # -W error: no CPU fallback
        torch.testing.assert_close(got, once_rounded(expected.float(), torch.float16))
