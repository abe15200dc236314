"""The mutation fuzzer of spyre-opt and spyre-run (tests/fuzz/spyre_fuzz.py): a short
run in the default tier, 2,000 mutants in the slow tier; any traceback, internal
error, hang or `FILE:0:0` location fails. And the fuzzer's own judge can fail."""

from __future__ import annotations

import random

import pytest
import spyre_fuzz


def test_fuzz_100_mutants():
    campaign = spyre_fuzz.fuzz(100, seed=0, timeout=60)
    assert campaign.mutants == 100 and campaign.runs > 100
    assert not campaign.failures, campaign.report()


@pytest.mark.slow
def test_fuzz_2000_mutants():
    campaign = spyre_fuzz.fuzz(2000, seed=1, timeout=60)
    assert campaign.mutants == 2000
    assert not campaign.failures, campaign.report()


@pytest.mark.parametrize(
    "code, out, err, kinds",
    [
        (0, "module {}", "", []),
        (1, "", "f.mlir:3:5: error: bad\n", []),
        (1, "", "Traceback (most recent call last):\n  ...\nKeyError: 'x'\n", ["traceback"]),
        (1, "", "f.mlir:0:0: error: somewhere\n", ["0:0 location"]),
        (1, "", "f.mlir:2:3: error: internal error: IndexError: x (please report this bug)\n",
         ["internal error"]),
        ("escaped", "", "", ["exit status escaped"]),
        (1, "", "", ["exit 1 without a message"]),
    ],
)  # fmt: skip
def test_judge(code, out, err, kinds):
    assert spyre_fuzz.problems(code, out, err) == kinds


def test_a_mismatch_on_the_l2_interpreter_is_a_wrong_answer():
    line = "check: MISMATCH in result 0: 3 of 64 elements differ (the L1 interpreter)\n"
    assert spyre_fuzz.wrong_answer(["f.mlir", "--check", "--level", "dataflow"], line, "")
    assert spyre_fuzz.wrong_answer(["f.mlir", "--check", "--level", "dataflow"], "", line)
    # On the simulator DLFloat16 may miss an ill-conditioned program's tolerance: not counted.
    assert not spyre_fuzz.wrong_answer(["f.mlir", "--check"], line, "")
    assert not spyre_fuzz.wrong_answer(
        ["f.mlir", "--check", "--level", "dataflow"], "check: ok\n", ""
    )


def test_a_run_past_its_timeout_is_a_hang(tmp_path):
    path = tmp_path / "f.mlir"
    path.write_text(spyre_fuzz.seeds()[0])
    worker = spyre_fuzz.Worker()
    try:
        code, _, err = worker.run("opt", [str(path), "-p", "spyre-compile"], timeout=0.001)
        assert code == "hang" and "no answer" in err
        code, _, _ = worker.run("opt", [str(path)], timeout=120)  # restarted
        assert code in (0, 1)
    finally:
        worker.stop()


def test_mutants_are_reproducible():
    texts = spyre_fuzz.seeds()
    first = [spyre_fuzz.mutant(texts, random.Random(5)) for _ in range(3)]
    again = [spyre_fuzz.mutant(texts, random.Random(5)) for _ in range(3)]
    assert first == again and len(texts) > 50
