"""The simulator with `codes` (what a card launch uses: f16/bf16 tensors taken, held in
DDR and given as the card's 16-bit DLFloat16 codes) computes what it computes on
float32 DLFloat16 values (`card_format` alone), bit for bit, with half the host bytes
per tensor; the same for a second run (a replay)."""

from __future__ import annotations

import numpy as np
import pytest

from spyre_ir import pipelines, registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.interp import dlfloat16 as D
from spyre_ir.sim.engine import simulate
from tests.test_sim_engine import ELEMENTWISE, GATHER, MIXED, SOFTMAX, matmul_bias

BF16_SCALE = """
func.func @main(%x: tensor<3x64xbf16>) -> tensor<3x64xbf16> {
  %two = spyre.full {value = 2.0 : f64} : tensor<3x64xbf16>
  %y = spyre.mul %x, %two : tensor<3x64xbf16>, tensor<3x64xbf16> -> tensor<3x64xbf16>
  func.return %y : tensor<3x64xbf16>
}
"""

# Between kernels, ops that only move elements (op_facts.MOVES_ELEMENTS) move the codes as
# they are: no decode, rounding and encode (bit for bit, NaN and saturated values too).
MOVES = """
func.func @main(%x: tensor<4x6x64xf16>, %y: tensor<4x6x64xf16>) -> (tensor<6x4x64xf16>, tensor<24x64xf16>, tensor<8x6x64xf16>, tensor<4x6x32xf16>) {
  %e = spyre.exp %x : tensor<4x6x64xf16> -> tensor<4x6x64xf16>
  %t = spyre.transpose %e perm = [1, 0, 2] : tensor<4x6x64xf16> -> tensor<6x4x64xf16>
  %r = spyre.reshape %e : tensor<4x6x64xf16> -> tensor<24x64xf16>
  %c = spyre.concat %e, %y dim = 0 : tensor<4x6x64xf16>, tensor<4x6x64xf16> -> tensor<8x6x64xf16>
  %s = spyre.slice %e starts = [0, 0, 16] stops = [4, 6, 48] steps = [1, 1, 1] : tensor<4x6x64xf16> -> tensor<4x6x32xf16>
  func.return %t, %r, %c, %s : tensor<6x4x64xf16>, tensor<24x64xf16>, tensor<8x6x64xf16>, tensor<4x6x32xf16>
}
"""


def _arguments(module, rng: np.random.Generator) -> list[np.ndarray]:
    fn = next(op for op in module.body.block.ops if getattr(op, "sym_name", None)
              and op.sym_name.data == "main")  # fmt: skip
    args = []
    for t in fn.function_type.inputs.data:
        shape = tuple(t.get_shape())
        if "i64" in str(t.element_type):
            args.append(rng.integers(0, shape[0] if len(shape) == 1 else 10, size=shape) % 1000)
        else:  # values past fp16's range and below DLFloat16's too, a NaN
            x = (rng.standard_normal(shape) * 3).astype(np.float32)
            x.reshape(-1)[:3] = [1e10, 1e-12, np.nan][: x.size]
            args.append(D.round_to_dlf16(x))
    return args


# (the matmul's A tiles are shared by the cores of its N split: loaded as one broadcast box)
@pytest.mark.parametrize("text", [ELEMENTWISE, SOFTMAX, GATHER, MIXED, BF16_SCALE, MOVES,
                                  matmul_bias(67, 320, 256)],
                         ids=["elementwise", "softmax", "gather", "mixed", "bf16", "moves",
                              "matmul"])  # fmt: skip
def test_codes_give_the_codes_of_the_float32_run(text: str) -> None:
    module = pipelines.lower_to_units(parse_and_verify(registry.make_context(), text, "t.mlir"))
    args = _arguments(module, np.random.default_rng(7))
    values = simulate(module, args, card_format=True).outputs
    coded = [D.encode(a) if a.dtype == np.float32 else a for a in args]
    for _ in range(2):  # a first run, then its replay
        result = simulate(module, coded, card_format=True, codes=True)
        for got, want in zip(result.outputs, values, strict=True):
            assert got.dtype == np.uint16 and got.shape == want.shape
            np.testing.assert_array_equal(D.decode(got), want)  # NaN equal to NaN
            np.testing.assert_array_equal(got, D.encode(want))


def test_a_scatter_into_a_table_of_codes_writes_codes() -> None:
    """`ls.scatter` (the paged KV write) into a table the simulator holds as codes: the
    rows land encoded, as a store's do (they were written as float32 values cast to
    uint16)."""
    from pathlib import Path

    path = Path(__file__).parent / "filecheck/dialects/dataflow_scatter.mlir"
    text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("//"))
    ctx = registry.make_context()
    module = parse_and_verify(ctx, text, "dataflow_scatter.mlir")
    registry.PASSES["convert-dataflow-to-units"]()().apply(ctx, module)
    rng = np.random.default_rng(0)
    table = D.round_to_dlf16(rng.standard_normal((100, 64)).astype(np.float32))
    ids = rng.permutation(100)[:8].astype(np.int32)
    new = D.round_to_dlf16(rng.standard_normal((8, 64)).astype(np.float32) * 3)
    args = [D.encode(table), ids, D.encode(new)]
    got = simulate(module, args, "update", card_format=True, codes=True, check_races=False)
    np.testing.assert_array_equal(got.outputs[0][ids], D.encode(new))


def test_a_box_the_cores_share_is_decoded_once() -> None:
    """A load's box shared by several cores (stride 0 along them) decodes one copy and
    broadcasts it: the same values as decoding every core's copy."""
    from spyre_ir.interp.machine import decode_distinct

    rng = np.random.default_rng(11)
    one = rng.integers(0, 1 << 16, (1, 3, 8), dtype=np.uint16)
    shared = np.broadcast_to(one, (32, 3, 8))  # every core's box the same
    grouped = np.broadcast_to(rng.integers(0, 1 << 16, (4, 1, 8), dtype=np.uint16), (4, 8, 8))
    for codes in (shared, grouped):
        got = decode_distinct(codes)
        np.testing.assert_array_equal(
            got.view(np.uint32), D.decode(np.array(codes)).view(np.uint32)
        )
        assert 0 in got.strides  # one decoded copy, broadcast
    plain = rng.integers(0, 1 << 16, (4, 8), dtype=np.uint16)
    np.testing.assert_array_equal(
        decode_distinct(plain).view(np.uint32), D.decode(plain).view(np.uint32)
    )
