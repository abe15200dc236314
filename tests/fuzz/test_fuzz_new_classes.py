"""The fuzzer's second campaign (tests/fuzz/fuzz_classes.py: swapped signature types,
region arity, attributes of the wrong kind, bad `-p` options, bad `--inputs` files): a
short run in the default tier, 300 mutants in the slow tier, and what it found."""

from __future__ import annotations

import random
from pathlib import Path

import fuzz_classes
import numpy as np
import pytest
import spyre_fuzz

from spyre_ir.tools import spyre_opt, spyre_run

HERE = Path(__file__).parent / "regressions"
ADD = """\
func.func @main(%a: tensor<4x8xf16>, %b: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = spyre.add %a, %b : tensor<4x8xf16>, tensor<4x8xf16> -> tensor<4x8xf16>
  func.return %0 : tensor<4x8xf16>
}
"""


def test_new_classes_10_mutants():
    campaign = spyre_fuzz.fuzz(10, seed=3, timeout=60, classes="new")
    assert campaign.mutants == 10 and campaign.runs >= 20  # each: plain and a bad -p
    assert not campaign.failures, campaign.report()


@pytest.mark.slow
def test_new_classes_300_mutants():
    campaign = spyre_fuzz.fuzz(300, seed=7, timeout=60, classes="new")
    assert campaign.mutants == 300
    assert not campaign.failures, campaign.report()


def test_each_text_mutation_changes_a_seed():
    # A mutation that never changes its input would test nothing.
    rng = random.Random(0)
    seed = ADD
    for mutation in (fuzz_classes.swap_types, fuzz_classes.region_arity, fuzz_classes.attr_kind):
        assert any(mutation(seed, rng) != seed for _ in range(20)), mutation.__name__


def test_region_arity_mutants_are_rejected_with_a_location(tmp_path, capsys):
    # Generic form with a region added to func.func or dropped from it, and a block
    # argument more: a located error each, exit 1.
    generic = fuzz_classes.generic_form(ADD)
    assert generic is not None
    extra_region = generic.replace("({", "({\n}, {", 1)
    no_region = (
        generic[: generic.index("({")]
        + generic[fuzz_classes._closing(generic, generic.index("({") + 1) + 2 :]
    )
    extra_arg = generic.replace("^bb0(", "^bb0(%extra: index, ", 1)
    for text in (extra_region, no_region, extra_arg):
        path = tmp_path / "m.mlir"
        path.write_text(text)
        with pytest.raises(SystemExit) as done:
            spyre_opt.main([str(path)])
        out, err = capsys.readouterr()
        assert done.value.code == 1
        assert "m.mlir:" in err and ": error:" in err, err
        assert spyre_fuzz.problems(1, out, err) == [], err


def test_function_type_of_the_wrong_kind_is_one_error(capsys):
    # attr_kind put a tensor type where func.func's function_type goes: func.return's
    # verifier then read the parent's outputs (AttributeError, an internal error).
    with pytest.raises(SystemExit) as done:
        spyre_opt.main([str(HERE / "func_type_not_a_function.mlir")])
    out, err = capsys.readouterr()
    assert done.value.code == 1
    assert "func_type_not_a_function.mlir:1:1: error: tensor<2xf16> should be of base" in err
    assert "internal error" not in err
    assert spyre_fuzz.problems(1, out, err) == []


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("spyre-tile{lx-bytes=abc}", "spyre-opt: error:"),
        ("spyre-partition-cores{cores=0}", "cores=0"),
        ("spyre-to-dataflow{no-such-option=1}", "no_such_option"),
        ("spyre-to-dataflow{cores=", "spyre-opt: error:"),
        ("spyre-compile,,spyre-compile", "spyre-opt: error:"),
        ("spyre-double-buffer{enable=3}", "spyre-opt: error:"),
    ],
)  # fmt: skip
def test_bad_pipeline_options_are_usage_errors(tmp_path, capsys, pipeline, message):
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    with pytest.raises(SystemExit) as done:
        spyre_opt.main([str(path), "-p", pipeline])
    out, err = capsys.readouterr()
    assert done.value.code == 1
    assert message in err, err
    assert spyre_fuzz.problems(1, out, err) == []


@pytest.mark.parametrize(
    "array",
    [
        np.zeros((4, 8), np.int64),
        np.zeros((4, 8), ">f2"),
        np.zeros((8, 4), np.float16),
        np.zeros((1, 4, 8), np.float16),
        np.zeros((4, 8), np.complex64),
        np.zeros((4, 8), "<U3"),
        np.array([("a", 1)], dtype=[("s", "U1"), ("i", "i4")]),
    ],
    ids=["int64", "big-endian", "transposed", "extra-dim", "complex", "unicode", "structured"],
)
def test_wrong_npy_inputs_are_clear_errors(tmp_path, capsys, array):
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    good, bad = tmp_path / "good.npy", tmp_path / "bad.npy"
    np.save(good, np.zeros((4, 8), np.float16))
    np.save(bad, array)
    code = spyre_run.main([str(path), "--inputs", f"{good},{bad}", "--check"])
    out, err = capsys.readouterr()
    assert code == 1 and "error:" in err, (code, err)
    assert spyre_fuzz.problems(code, out, err) == [], err
