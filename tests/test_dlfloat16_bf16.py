"""bf16 on the simulated card is DLFloat16 (docs/dlfloat16.md): an h2d of bf16 data
converts it (exact in range, saturating above 2^32 x (1 + 510/512), zero below 2^-31),
the card computes and stores it as DLFloat16, and a d2h rounds it back to bf16 (to
nearest even). The L2 interpreter's default ("ieee") numerics keep bf16 as L1 does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

from spyre_ir import pipelines, registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.interp import dlfloat16 as D
from spyre_ir.interp import tensor as L1
from spyre_ir.interp.dataflow import run_module
from spyre_ir.interp.numerics import round_to_bf16
from spyre_ir.runtime.recipe import Slot
from spyre_ir.sim.engine import simulate

BF16_ONE_PLUS = np.float32(1 + 2.0**-7)  # 1 + bf16's last place


def _bf16(values) -> np.ndarray:
    return round_to_bf16(np.asarray(values, np.float32))


def _slot(shape: tuple[int, ...]) -> Slot:
    from spyre_ir.dialects.recipe import SlotOp

    dims = "x".join(map(str, shape))
    text = f"func.func @f(%a: tensor<{dims}xbf16>) {{\n func.return\n}}"
    fn = parse_and_verify(registry.make_context(), text, "t.mlir").body.block.first_op
    return Slot.from_op(SlotOp("in0", "input", 0, fn.function_type.inputs.data[0]))


def test_bf16_slot_holds_dlfloat16_codes_both_ways() -> None:
    """The card's image of a bf16 slot is DLFloat16 codes; reading it back and
    converting for the host rounds 9 fraction bits to bf16's 7, ties to even."""
    slot = _slot((1, 64))
    values = np.zeros((1, 64), np.float32)
    # in range: exact; 1e12 saturates; 1e-12 (below 2^-31) is zero on the card
    values[0, :4] = [1.5, 1e12, 1e-12, -(2.0**-30)]
    values = _bf16(values)
    codes = slot.to_device_elements(values.reshape(-1))
    assert codes.dtype == np.uint16
    np.testing.assert_array_equal(codes[:4], [0x3F00, 0x7FFE, 0x0000, 0x8200])
    on_card = D.decode(codes).reshape(1, 64)
    assert on_card[0, 0] == 1.5 and on_card[0, 1] == D.MAXIMUM and on_card[0, 2] == 0.0
    back = slot.to_host_values(on_card)
    # MAXIMUM = 2^32 x (1 + 510/512) = 2^32 x 1.99609375 -> bf16 rounds up to 2^33
    np.testing.assert_array_equal(back[0, :4], np.float32([1.5, 2.0**33, 0.0, -(2.0**-30)]))
    # DLFloat16 values between bf16 neighbours: 1 + 1/512 -> 1 (nearest), 1 + 2/512 (a tie
    # between 1 and 1 + 4/512) -> 1 (even), 1 + 6/512 (a tie) -> 1 + 8/512 (even)
    between = np.float32([1 + 1 / 512, 1 + 2 / 512, 1 + 6 / 512, 1 + 3 / 512])
    np.testing.assert_array_equal(
        slot.to_host_values(between), np.float32([1, 1, 1 + 8 / 512, 1 + 4 / 512])
    )
    bits = slot.to_array_elements(between)  # a DeviceArray keeps bf16's raw bits
    np.testing.assert_array_equal(bits, [0x3F80, 0x3F80, 0x3F82, 0x3F81])


def _compiled(fn, *, executor: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    monkeypatch.setenv("SPYRE_EXECUTOR", executor)
    torch._dynamo.reset()
    return torch.compile(fn, backend="spyre", dynamic=False)


@pytest.mark.parametrize("executor", ["card", "simulator"])
def test_a_bf16_model_on_the_card_saturates_and_underflows_as_dlfloat16(
    executor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """x * 1000 / 1000 in bf16 on the card. Eager bf16 keeps 1e7 (bf16's range is
    f32's); the card holds x * 1000 as DLFloat16, which saturates 1.0027e10 to MAXIMUM,
    so the result is MAXIMUM / 1000 rounded to DLFloat16, then to bf16: 8,585,216. A
    value of 1e-12 is below DLFloat16's smallest (4.7e-10) and is zero on the card.
    Ordinary values match eager (DLFloat16's 9 fraction bits hold every bf16 value)."""
    fn = _compiled(lambda x: (x * 1000) / 1000, executor=executor, monkeypatch=monkeypatch)
    x = torch.linspace(-2, 2, 64 * 8, dtype=torch.bfloat16).reshape(8, 64)
    x[3, 5] = 1e7
    x[4, 6] = 1e-12
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fn(x)
    torch._dynamo.reset()
    assert got.dtype == torch.bfloat16
    big = float(torch.tensor(1e7, dtype=torch.bfloat16))  # 10,027,008
    product = min(big * 1000, D.MAXIMUM)  # saturated on the card
    quotient = float(D.round_to_dlf16(np.float32([product / 1000]))[0])
    assert quotient == 8568832.0  # 2^23 x (1 + 11/512)
    assert got[3, 5].item() == float(_bf16([quotient])[0]) == 8585216.0  # 2^23 x (1 + 3/128)
    assert got[4, 6].item() == 0.0
    want = (x * 1000) / 1000
    assert want[3, 5].item() == big and want[4, 6].item() != 0.0
    mask = torch.ones_like(x, dtype=torch.bool)
    mask[3, 5] = mask[4, 6] = False
    torch.testing.assert_close(got[mask], want[mask], rtol=2 * 2.0**-8, atol=1e-2)


SCALE = """
func.func @main(%x: tensor<1x64xbf16>) -> tensor<1x64xbf16> {
  %two = spyre.full {value = 2.0 : f64} : tensor<1x64xbf16>
  %y = spyre.mul %x, %two : tensor<1x64xbf16>, tensor<1x64xbf16> -> tensor<1x64xbf16>
  func.return %y : tensor<1x64xbf16>
}
"""


def _parse(text: str) -> ModuleOp:
    return parse_and_verify(registry.make_context(), text, "test.mlir")


def test_the_interpreters_and_the_simulator_on_bf16() -> None:
    """y = x * 2 in bf16. The L2 interpreter's default numerics are L1's, bit for bit
    (bf16 stays bf16: 1e10 * 2 stays finite, 1e-12 * 2 is not zero); its "dlfloat16"
    numerics and the simulator hold bf16 as DLFloat16: 1e10 saturates to MAXIMUM (and
    comes back as bf16's 2^33), 1e-12 is zero, and the two agree bit for bit."""
    x = np.zeros((1, 64), np.float32)
    x[0, :4] = [1e10, BF16_ONE_PLUS, 1e-12, -3.0]
    x = _bf16(x)
    l1 = L1.run_module(_parse(SCALE), [x])[0]
    l2 = pipelines.lower_to_dataflow(_parse(SCALE))
    np.testing.assert_array_equal(run_module(l2, [x])[0], l1)
    card = run_module(l2, [x], halves="dlfloat16")[0]
    assert card.dtype == np.float32
    np.testing.assert_array_equal(card[0, :4], np.float32([2.0**33, 2 * BF16_ONE_PLUS, 0, -6]))
    assert l1[0, 0] == float(_bf16([2e10])[0]) and l1[0, 2] != 0.0
    sim = simulate(pipelines.lower_to_units(_parse(SCALE)), [x]).outputs[0]
    np.testing.assert_array_equal(sim, card)
    # card_format: the simulator takes and gives DLFloat16 values (the recipe decodes
    # the codes), so the saturated product comes back as MAXIMUM itself
    raw = simulate(pipelines.lower_to_units(_parse(SCALE)), [D.from_user(x)], card_format=True)
    assert raw.outputs[0][0, 0] == D.MAXIMUM
