"""Replay (spyre_ir/sim/replay.py): a program's later runs reuse its recorded timing and
replay its numerics, and give exactly what a first run on the same data gives."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_engine import (
    GATHER,
    LAYER_NORM,
    MIXED,
    SOFTMAX,
    TO_UNITS,
    lower,
    matmul_bias,
    random_args,
)
from xdsl.dialects.builtin import IntegerAttr, i64

from spyre_ir.dialects import core
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.interp.tensor import InterpreterError
from spyre_ir.sim import replay, scheduler
from spyre_ir.sim.engine import SimulationError, simulate

SPLIT_K = matmul_bias(16, 128, 8192)  # few rows, long K: split-K with a ring all-reduce

CASES = {"softmax": SOFTMAX, "layer_norm": LAYER_NORM, "gather": GATHER, "mixed": MIXED,
         "split_k": SPLIT_K, "matmul": matmul_bias(67, 320, 256)}  # fmt: skip


def recording_of(module) -> replay.Recording:
    program = next(op for op in module.walk() if isinstance(op, core.ProgramOp))
    found = replay.lookup(program, DEFAULT_CONFIG, tracing=False)
    assert found is not None, "the program was not recorded"
    return found


@pytest.mark.parametrize("case", CASES)
def test_replay_equals_a_first_run(case: str) -> None:
    text = CASES[case]
    module = lower(text, TO_UNITS)
    first = simulate(module, random_args(text, seed=1, index_bound=1000))
    args = random_args(text, seed=2, index_bound=1000)  # new data: nothing is cached
    again = simulate(module, args)
    fresh = simulate(lower(text, TO_UNITS), args)
    for got, want in zip(again.outputs, fresh.outputs):
        np.testing.assert_array_equal(got, want)
    assert again.report == fresh.report == first.report
    assert any(not np.array_equal(a, b) for a, b in zip(again.outputs, first.outputs))


def test_a_replay_skips_the_scheduler(monkeypatch: pytest.MonkeyPatch) -> None:
    module = lower(SOFTMAX, TO_UNITS)
    simulate(module, random_args(SOFTMAX))

    def unexpected(self) -> float:
        raise AssertionError("the scheduler ran on a replay")

    monkeypatch.setattr(scheduler.Scheduler, "run", unexpected)
    simulate(module, random_args(SOFTMAX, seed=3))


def test_a_recording_holds_no_tensor_data() -> None:
    module = lower(MIXED, TO_UNITS)
    simulate(module, random_args(MIXED))
    recording = recording_of(module)
    assert recording.buffers and recording.steps
    assert all(root.array.size == 0 for root, _, _ in recording.buffers)


def test_a_rewritten_program_is_recorded_anew() -> None:
    """Dropping a push after the first run: the second run must see the rewritten
    program (unmatched queues), not replay the old one."""
    module = lower(SOFTMAX, TO_UNITS)
    simulate(module, random_args(SOFTMAX))
    push = next(op for op in module.walk() if isinstance(op, core.PushOp))
    push.detach()
    push.erase()
    with pytest.raises(SimulationError):
        simulate(module, random_args(SOFTMAX))


def test_a_changed_attribute_is_recorded_anew() -> None:
    module = lower(SOFTMAX, TO_UNITS)
    base = simulate(module, random_args(SOFTMAX)).report["simulated_us"]
    program = next(op for op in module.walk() if isinstance(op, core.ProgramOp))
    program.attributes["note"] = IntegerAttr(1, i64)  # any rewrite counts
    assert replay.lookup(program, DEFAULT_CONFIG, tracing=False) is None
    assert simulate(module, random_args(SOFTMAX)).report["simulated_us"] == base


def test_a_frozen_module_is_replayed_without_walking_its_programs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = lower(SOFTMAX, TO_UNITS)
    simulate(module, random_args(SOFTMAX))
    replay.freeze(module)

    def unexpected(program) -> tuple:
        raise AssertionError("a frozen module's program was fingerprinted")

    monkeypatch.setattr(replay, "_fingerprint", unexpected)
    args = random_args(SOFTMAX, seed=4)
    again = simulate(module, args)
    assert replay.shared_caches(module)["loads"]  # the loads' facts, kept for the next run
    monkeypatch.undo()
    other = lower(SOFTMAX, TO_UNITS)
    fresh = simulate(other, args)  # not frozen: recorded and checked, nothing shared
    assert replay.shared_caches(other) is None
    for got, want in zip(again.outputs, fresh.outputs):
        np.testing.assert_array_equal(got, want)


def test_another_config_and_a_trace_are_recorded_anew() -> None:
    module = lower(SOFTMAX, TO_UNITS)
    args = random_args(SOFTMAX)
    base = simulate(module, args).report["simulated_us"]
    faster = DEFAULT_CONFIG.with_options(lpddr_bandwidth=2 * DEFAULT_CONFIG.lpddr_bandwidth)
    assert simulate(module, args, config=faster).report["simulated_us"] < base
    traced = simulate(module, args, trace=True)
    assert traced.trace is not None and traced.trace["traceEvents"]
    assert traced.report["simulated_us"] == base
    # A traced recording serves later runs with or without a trace.
    assert simulate(module, args, trace=True).trace == traced.trace
    assert simulate(module, args).report == traced.report


def test_race_checks_always_run_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    module = lower(SOFTMAX, TO_UNITS)
    simulate(module, random_args(SOFTMAX))
    calls = []
    original = scheduler.Scheduler.run

    def counting(self) -> float:
        calls.append(1)
        return original(self)

    monkeypatch.setattr(scheduler.Scheduler, "run", counting)
    simulate(module, random_args(SOFTMAX), check_races=True)
    assert calls == [1]


def test_data_dependent_errors_are_raised_on_a_replay() -> None:
    module = lower(GATHER, TO_UNITS)
    simulate(module, random_args(GATHER, index_bound=1000))
    bad = random_args(GATHER, index_bound=1000)
    bad[1][5] = 5000
    with pytest.raises(InterpreterError, match="5000 is out of range"):
        simulate(module, bad)
