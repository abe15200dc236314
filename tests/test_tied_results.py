"""Tied results (`tied` on dataflow.kernel / core.program, spyre_ir/dialects/dataflow.py):
a program result that is one of its inputs' buffers, written in place, and the simulator
and the L2 interpreter passing that buffer itself on to the ops that read the result."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_engine import TO_UNITS, lower, random_args
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects import core, spyre
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


DECODE = """
func.func @main(%cache: tensor<1x2x64x64xf16>, %pos: tensor<2xi64>, %x: tensor<1x2x2x64xf16>, %q: tensor<1x2x2x64xf16>) -> tensor<1x2x2x64xf16> {
  %w = spyre.scatter %cache[%pos], %x dim = 2 : tensor<1x2x64x64xf16>, tensor<2xi64>, tensor<1x2x2x64xf16> -> tensor<1x2x64x64xf16>
  %t = spyre.transpose %w perm = [0, 1, 3, 2] : tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
  %s = spyre.matmul %q, %t : tensor<1x2x2x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x2x64xf16>
  %p = spyre.softmax %s dim = -1 : tensor<1x2x2x64xf16> -> tensor<1x2x2x64xf16>
  %o = spyre.matmul %p, %w : tensor<1x2x2x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x2x64xf16>
  func.return %o : tensor<1x2x2x64xf16>
}
"""


def _row_store_programs(module) -> list:
    return [p for p in _programs(module) if p.sym_name.data.startswith("store_rows")]


def test_an_in_place_scatter_gives_the_one_hot_results_for_fewer_bytes() -> None:
    """spyre-lower-scatter's row store (a scatter into an unread argument, a kernel of
    its own tied to the cache, spyre_ir/passes/row_store_kernel.py) against its one-hot
    lowering: the same bits, and the bytes of the written rows instead of the cache's
    images; a negative position counts from the end, as in the one-hot form. The L2
    interpreter gives the simulator's bits."""
    args = random_args(DECODE, seed=6, index_bound=64)
    args[1] = np.array([5, -3], dtype=args[1].dtype)
    one_hot = lower(DECODE, "spyre-lower-scatter{in-place=false}," + TO_UNITS)
    in_place = lower(DECODE, TO_UNITS)
    (store,) = _row_store_programs(in_place)
    assert store.tied_inputs() == {0: 0}  # its result is the cache argument's buffer
    assert any(isinstance(op, D.PositionOp) for op in store.walk())
    assert not any(isinstance(op, spyre.ScatterOp) for op in in_place.walk())
    want, got = simulate(one_hot, args), simulate(in_place, args)
    np.testing.assert_array_equal(got.outputs[0], want.outputs[0])
    l2 = run_module(lower(DECODE, "spyre-to-dataflow"), args, halves="dlfloat16")
    np.testing.assert_array_equal(l2[0], got.outputs[0])
    stores = [k for k in got.report["kernels"] if k["name"].startswith("store_rows")]
    # hand-computed: the 2 x 2 new rows, one 128-byte stick each, read and written once
    assert [k["lpddr_bytes"] for k in stores] == [2 * 4 * 128]
    cache_image = 2 * 64 * 128
    assert want.report["lpddr_bytes"] - got.report["lpddr_bytes"] > 2 * cache_image
    assert got.report["simulated_us"] < want.report["simulated_us"]


def test_a_row_store_is_in_the_trace_where_it_ran() -> None:
    """The row store is a program of the card's track, in the order the report lists
    them, whose LS unit loads the rows and writes them to LPDDR5 (a store per row)."""
    args = random_args(DECODE, seed=6, index_bound=64)
    result = simulate(lower(DECODE, TO_UNITS), args, trace=True)
    events = result.trace["traceEvents"]
    card = [e for e in events if e["ph"] == "X" and e["pid"] == 0]
    kernels = result.report["kernels"]
    assert [e["args"]["name"] for e in card] == [k["name"] for k in kernels]
    (store,) = [e for e in card if e["name"] == "@store_rows_0"]
    # the rows are an input: stored first, then the attention program reads the cache
    assert store["cat"] == "program" and card.index(store) == 0 and len(card) > 1
    for before, after in zip(card, card[1:]):
        assert after["ts"] == pytest.approx(before["ts"] + before["dur"])
    (kernel,) = [k for k in kernels if k["name"] == "store_rows_0"]
    assert store["dur"] == pytest.approx(kernel["simulated_us"])
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    pid = next(p for p, n in names.items() if n.startswith("@store_rows_0"))
    threads = {e["tid"]: e["args"]["name"] for e in events
               if e["name"] == "thread_name" and e["pid"] == pid}  # fmt: skip
    work = [e for e in events if e["ph"] == "X" and e["pid"] == pid]
    # the 2 positions on 2 cores: core 0 (the trace's) loads and stores one row
    assert names[pid] == "@store_rows_0 (2 cores)"
    writes = [e for e in work if threads[e["tid"]] == "ls lpddr write"]
    assert [e["name"] for e in writes] == ["ls.store"]
    assert sum(e["name"] == "ls.load" for e in work) == 1
    assert kernel["lpddr_bytes"] == 2 * 4 * 128


@pytest.mark.parametrize("position", [64, -65])
def test_a_row_store_position_out_of_range_is_a_located_error(position) -> None:
    """A position past dest's size along the dim (either end) stops the row store with
    the scatter's location and the L1 interpreter's message, as the one-hot form would."""
    from spyre_ir.interp.tensor import InterpreterError

    args = random_args(DECODE, seed=6, index_bound=64)
    args[1] = np.array([5, position], dtype=args[1].dtype)
    in_place = lower(DECODE, TO_UNITS)
    with pytest.raises(InterpreterError, match=rf"test.mlir:3:3: 'dataflow.position' \(program "
                       rf"@store_rows_0\): index {position} is out of range for dim 2"):  # fmt: skip
        simulate(in_place, args)


def test_a_no_wrap_row_store_refuses_a_negative_position() -> None:
    """index_copy's scatter (`no_wrap`): a negative position is out of range for the
    row-store kernel's `dataflow.position` (no `wrap`), as for the L1 interpreter."""
    from spyre_ir.interp import tensor as l1
    from spyre_ir.interp.tensor import InterpreterError

    text = DECODE.replace("%x dim = 2 :", "%x dim = 2 {no_wrap} :")
    args = random_args(text, seed=6, index_bound=64)
    args[1] = np.array([5, -3], dtype=args[1].dtype)
    module = lower(text, TO_UNITS)
    (store,) = _row_store_programs(module)
    (position,) = [op for op in store.walk() if isinstance(op, D.PositionOp)]
    assert position.wrap is None
    with pytest.raises(InterpreterError, match="index -3 is out of range for dim 2 of size 64"):
        simulate(module, args)
    with pytest.raises(InterpreterError, match="index -3 is out of range for dim 2 of size 64"):
        l1.run_module(lower(text, "canonicalize"), args)
    args[1] = np.array([5, 61], dtype=args[1].dtype)  # the same rows, counted from 0
    want = simulate(lower(DECODE, TO_UNITS), [*args[:1], np.array([5, -3]), *args[2:]])
    np.testing.assert_array_equal(simulate(module, args).outputs[0], want.outputs[0])


def _store_rows_runs(monkeypatch, module, args_list) -> tuple[list, list[str]]:
    """Each run's outputs, and the programs that replayed."""
    from spyre_ir.sim import engine

    replays: list[str] = []
    real = engine._Program._replay

    def counted(self, recording, memories):
        replays.append(self.op.sym_name.data)
        return real(self, recording, memories)

    monkeypatch.setattr(engine._Program, "_replay", counted)
    outs = [[np.array(o) for o in simulate(module, args).outputs] for args in args_list]
    return outs, replays


def test_a_row_store_replays_at_new_positions_and_checks_them(monkeypatch) -> None:
    """Its second run replays the first's recording (spyre_ir/sim/replay.py
    `replayable`) at the new positions: the same results as a first run there; a bad
    position on a replay is the first run's located error."""
    from spyre_ir.interp.tensor import InterpreterError

    first = random_args(DECODE, seed=8, index_bound=64)
    second = [a.copy() for a in first]
    second[1] = np.array([40, 7], dtype=first[1].dtype)
    module = lower(DECODE, TO_UNITS)
    (_, got), replays = _store_rows_runs(monkeypatch, module, [first, second])
    assert "store_rows_0" in replays
    (want,) = _store_rows_runs(monkeypatch, lower(DECODE, TO_UNITS), [second])[0]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    second[1] = np.array([5, 64], dtype=first[1].dtype)
    with pytest.raises(InterpreterError, match=r"test.mlir:3:3: 'dataflow.position' \(program "
                       r"@store_rows_0\): index 64 is out of range for dim 2"):  # fmt: skip
        simulate(module, second)


def test_a_position_used_but_as_a_row_stores_offset_keeps_the_program_off_replay(
    monkeypatch,
) -> None:
    from xdsl.dialects import arith
    from xdsl.rewriter import InsertPoint, Rewriter

    module = lower(DECODE, TO_UNITS)
    position = next(op for op in module.walk() if isinstance(op, D.PositionOp))
    twice = arith.AddiOp(position.result, position.result)  # a use that is no store offset
    Rewriter.insert_op(twice, InsertPoint.after(position))
    args = random_args(DECODE, seed=9, index_bound=64)
    _, replays = _store_rows_runs(monkeypatch, module, [args, args])
    assert "store_rows_0" not in replays and replays  # the other programs do replay
