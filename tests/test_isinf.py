"""torch.isinf, isposinf, isneginf and isfinite on spyre (lowering/aten_bitwise.py):
they run on the card, through torch.compile and on the eager device, with no CPU
fallback, and agree with torch eager on f16 inputs holding inf, -inf, NaN, fp16's
largest values and ordinary ones. On DLFloat16 a comparison with an infinity compares
with the saturation bound, so a value the card holds at MAXIMUM reads as inf
(docs/dlfloat16.md)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from spyre_ir.interp import dlfloat16
from spyre_ir.runtime import device, fallbacks

device.setup()

TESTS = {"isinf": torch.isinf, "isposinf": torch.isposinf, "isneginf": torch.isneginf,
         "isfinite": torch.isfinite}  # fmt: skip


def special_values() -> torch.Tensor:
    """[4, 16] f16: infinities and NaN of both signs, fp16's largest finite values (65504
    rounds up to DLFloat16's 65536, still finite), tiny and ordinary ones."""
    special = [math.inf, -math.inf, math.nan, -math.nan, 65504.0, -65504.0, 65472.0,
               60000.0, -1e-7, 6e-8, 0.0, -0.0, 1.0, -2.5]  # fmt: skip
    ordinary = torch.randn(64 - len(special), generator=torch.Generator().manual_seed(0))
    values = torch.cat([torch.tensor(special), ordinary * 100]).to(torch.float16)
    return values[torch.randperm(64, generator=torch.Generator().manual_seed(1))].reshape(4, 16)


def no_fallback(run):
    """run()'s result, failing if any op of it ran on CPU or anything warned."""
    fallbacks.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    assert fallbacks.records() == [], fallbacks.records()
    assert not caught, [str(w.message) for w in caught]
    return result


@pytest.mark.parametrize("name", list(TESTS))
@pytest.mark.parametrize("executor", ["card", "reference"])
def test_compiled_infinity_tests_run_on_spyre_as_in_eager(name: str, executor: str) -> None:
    fn, x = TESTS[name], special_values()
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="spyre", options={"executor": executor})
    got = no_fallback(lambda: compiled(x))
    assert got.dtype == torch.bool
    torch.testing.assert_close(got, fn(x))


@pytest.mark.parametrize("name", list(TESTS))
def test_eager_device_infinity_tests_run_on_the_card_as_in_eager(name: str) -> None:
    """One kernel each: isinf and isfinite are kernels of their own on the device, so
    |65504| stays DLFloat16's finite 65536 between the steps rather than becoming fp16's
    inf in a resident tensor."""
    fn, x = TESTS[name], special_values()
    on_card = x.to("spyre")
    got = no_fallback(lambda: fn(on_card))
    assert got.device.type == "spyre" and got.dtype == torch.bool
    torch.testing.assert_close(got.cpu(), fn(x))


def test_a_value_held_at_the_saturation_bound_reads_as_inf() -> None:
    """Inside one compiled graph x * s is held in DLFloat16: beyond MAXIMUM it saturates
    to the bound and isinf is True (eager fp16 overflows to inf there too); between
    fp16's 65504 and MAXIMUM it is finite on the card, where eager fp16 has inf: the
    card's range, not a different test."""
    x = torch.tensor([1.0, -1.0, 0.6, 2.0, 100.0, -1e-3, 0.0], dtype=torch.float16)
    scale = 5e9

    def fn(t):
        return torch.isinf(t * scale), torch.isfinite(t * scale)

    torch._dynamo.reset()
    inf, finite = no_fallback(lambda: torch.compile(fn, backend="spyre")(x))
    product = np.abs(x.double().numpy() * np.float32(scale))
    held = dlfloat16.round_to_dlf16(product.astype(np.float32))
    want = torch.from_numpy(held >= dlfloat16.MAXIMUM)
    assert bool(want.any()) and bool((~want).any())
    assert torch.equal(inf, want) and torch.equal(finite, ~want)
    assert torch.equal(torch.isinf(x * scale), torch.tensor(product > 65504))
