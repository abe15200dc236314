"""Tied results (`tied` on dataflow.kernel / core.program, spyre_ir/dialects/dataflow.py):
a program result that is one of its inputs' buffers, written in place, and the simulator
and the L2 interpreter passing that buffer itself on to the ops that read the result."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_engine import TO_UNITS, lower, random_args
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects import core
from spyre_ir.dialects import dataflow as D
from spyre_ir.interp.dataflow import run_module
from spyre_ir.sim.engine import simulate

# exp in one program, then a matmul reading its result: the exp can run in place on %x
CHAIN = """
func.func @main(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %e = spyre.exp %x : tensor<64x64xf16> -> tensor<64x64xf16>
  %y = spyre.matmul %e, %w : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}
"""


def _programs(module, kind=core.ProgramOp):
    return [op for op in module.walk() if isinstance(op, kind)]


def _tie(program, tied) -> None:
    program.properties["tied"] = D.dense(tied)


def test_a_tied_result_is_computed_in_the_inputs_buffer() -> None:
    args = random_args(CHAIN, seed=3)
    want = simulate(lower(CHAIN, TO_UNITS), args)
    module = lower(CHAIN, TO_UNITS)
    exp, matmul = _programs(module)
    assert exp.sym_name.data != matmul.sym_name.data
    _tie(exp, [0])
    module.verify()
    seen: dict[str, list] = {}
    from spyre_ir.sim import engine

    run = engine._Simulation._run_program

    def spy(self, op, operands):
        before = [np.array(a, copy=True) for a in operands]
        results = run(self, op, operands)
        seen[op.sym_name.data] = [list(operands), list(results), before]
        return results

    engine._Simulation._run_program = spy
    try:
        got = simulate(module, args)
    finally:
        engine._Simulation._run_program = run
    np.testing.assert_array_equal(got.outputs[0], want.outputs[0])
    # the same bytes move: tying saves a block, not traffic
    assert got.report["lpddr_bytes"] == want.report["lpddr_bytes"]
    exp_in, exp_out, exp_before = seen[exp.sym_name.data]
    mm_in = seen[matmul.sym_name.data][0]
    assert mm_in[0] is exp_out[0]  # the matmul reads the exp's buffer itself
    # an entry argument is not a program's buffer: copied in once, never written
    assert not np.shares_memory(exp_in[0], exp_out[0])
    np.testing.assert_array_equal(exp_in[0], exp_before[0])


SECOND = """
func.func @main(%x: tensor<64x64xf16>, %w: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %y = spyre.matmul %x, %w : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
  %s = spyre.softmax %y dim = -1 : tensor<64x64xf16> -> tensor<64x64xf16>
  %z = spyre.matmul %s, %w : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
  func.return %z : tensor<64x64xf16>
}
"""


def test_a_program_result_is_updated_in_place_by_the_next_program() -> None:
    """The softmax tied to the first matmul's result: it runs in that very buffer (no
    copy), which the second matmul then reads; a replay does the same."""
    args = random_args(SECOND, seed=4)
    want = simulate(lower(SECOND, TO_UNITS), args).outputs[0]
    module = lower(SECOND, TO_UNITS)
    programs = _programs(module)
    assert len(programs) == 3, [p.sym_name.data for p in programs]
    _tie(programs[1], [0])
    module.verify()
    from spyre_ir.sim import engine

    outs: list = []
    run = engine._Simulation._run_program

    def spy(self, op, operands):
        results = run(self, op, operands)
        outs.append(results[0])
        return results

    engine._Simulation._run_program = spy
    try:
        got = simulate(module, args).outputs[0]
        again = simulate(module, args).outputs[0]  # a replay: the same, in place
    finally:
        engine._Simulation._run_program = run
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(again, want)
    assert outs[1] is outs[0] and outs[4] is outs[3]  # one buffer: matmul's, then softmax's


def test_the_l2_interpreter_runs_a_tied_kernel() -> None:
    module = lower(CHAIN, "spyre-to-dataflow")
    kernels = _programs(module, D.KernelOp)
    args = random_args(CHAIN, seed=5)
    want = run_module(lower(CHAIN, "spyre-to-dataflow"), args)
    _tie(kernels[0], [0])
    module.verify()
    np.testing.assert_array_equal(run_module(module, args)[0], want[0])


@pytest.mark.parametrize(
    ("tied", "message"),
    [
        ([0, 0], "tied names 2 results, the program has 1"),
        ([2], "result 0 is tied to input 2, which does not exist"),
        ([1], None),  # %w has the type of the result too: allowed
    ],
)
def test_the_verifier_checks_the_tie(tied, message) -> None:
    module = lower(CHAIN, TO_UNITS)
    exp, matmul = _programs(module)
    _tie(matmul, tied)
    if message is None:
        module.verify()
        return
    with pytest.raises(VerifyException, match=message):
        module.verify()


def test_a_tied_input_read_afterwards_is_refused() -> None:
    text = CHAIN.replace("spyre.matmul %e, %w", "spyre.matmul %e, %x")
    module = lower(text, TO_UNITS)
    exp, _ = _programs(module)
    _tie(exp, [0])
    with pytest.raises(VerifyException, match="reads its old value afterwards"):
        module.verify()
