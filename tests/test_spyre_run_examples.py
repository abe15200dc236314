"""spyre-run --check on the repository's own examples and documented commands, the random
inputs that keep them well conditioned, and a check that still catches a wrong lowering."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from spyre_ir.tools.spyre_run import build_parser, main, random_inputs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))
ATTENTION = ROOT / "examples" / "attention_block.mlir"
# Example name -> why its --check is expected to mismatch (none is, today).
EXPECTED_MISMATCH: dict[str, str] = {}
# Files named by documented `spyre-run ... --check` commands that stand for the reader's own.
PLACEHOLDERS = {"kernel.mlir": "docs/ktir.md's stand-in for a user's KTIR kernel"}


def test_examples_exist():
    assert EXAMPLES, "no examples/*.mlir found"
    assert set(EXPECTED_MISMATCH) <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_passes_check(path, capsys):
    status = main([str(path), "--check"])
    out = capsys.readouterr().out
    if path.name in EXPECTED_MISMATCH:
        assert status == 1 and "check: MISMATCH" in out, EXPECTED_MISMATCH[path.name]
    else:
        assert status == 0, out
        assert "check: ok (max abs error " in out


def _documented_checks() -> list[tuple[str, list[str]]]:
    """(where, argv) of every `spyre-run FILE ... --check` command in README.md and docs/."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            for command in re.findall(r"spyre-run\s+(\S+\.mlir\b[^`#|]*)", line):
                argv = command.split()
                if "--check" in argv or "--reference" in argv:
                    found.append((f"{doc.name}:{number}", argv))
    return found


def test_documented_check_commands_pass(capsys):
    commands = _documented_checks()
    ran = 0
    for where, argv in commands:
        if argv[0] in PLACEHOLDERS:
            continue
        assert (ROOT / argv[0]).is_file(), f"{where}: {argv[0]} is neither a file nor listed"
        status = main([str(ROOT / argv[0]), *argv[1:]])
        out = capsys.readouterr().out
        assert status == 0 and "check: ok" in out, f"{where}: {out}"
        ran += 1
    assert ran >= 1, commands  # README's attention_block --check at least


MATMULS = """\
func.func @main(%x: tensor<64x256xf32>, %w: tensor<256x32xf32>, %wt: tensor<16x32xf32>,
                %b: tensor<16xf32>) -> tensor<64x16xf32> {
  %h = spyre.matmul %x, %w : tensor<64x256xf32>, tensor<256x32xf32> -> tensor<64x32xf32>
  %t = spyre.transpose %wt perm = [1, 0] : tensor<16x32xf32> -> tensor<32x16xf32>
  %y = spyre.matmul %h, %t : tensor<64x32xf32>, tensor<32x16xf32> -> tensor<64x16xf32>
  %z = spyre.add %y, %b : tensor<64x16xf32>, tensor<16xf32> -> tensor<64x16xf32>
  func.return %z : tensor<64x16xf32>
}
"""


def test_weights_are_drawn_at_one_over_sqrt_k():
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.registry import make_context
    from spyre_ir.tools.spyre_run import find_entry

    fn = find_entry(parse_and_verify(make_context(), MATMULS, "m.mlir"), "main")
    x, w, wt, b = random_inputs(fn, 0)
    # Activations and the bias stay standard normal; a matmul's right operand, directly
    # or through a transpose, has std 1/sqrt(K), so the products keep unit scale.
    assert abs(x.std() - 1) < 0.05 and abs(b.std() - 1) < 0.4
    assert abs(w.std() * math.sqrt(256) - 1) < 0.05
    assert abs(wt.std() * math.sqrt(32) - 1) < 0.1
    assert abs(float((x @ w).std()) - 1) < 0.1
    assert "N(0, 1/K)" in " ".join(build_parser().format_help().split())


def _lowered(text: str, pipeline: str) -> str:
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.pipelines import build_passes
    from spyre_ir.registry import make_context
    from spyre_ir.runtime.backend import print_ir

    module = parse_and_verify(make_context(), text, str(ATTENTION))
    for p in build_passes(pipeline):
        p.apply(make_context(), module)
    return print_ir(module)


@pytest.fixture(scope="module")
def attention_l2() -> str:
    return _lowered(ATTENTION.read_text(), "spyre-to-dataflow")


# A lowering bug, as a change to one op of the lowered program: the causal mask off by
# one (the diagonal masked too), and the 1/sqrt(d) score scale 4% off.
PERTURBATIONS = {
    "mask-off-by-one": ('"spyre.gt"', '"spyre.ge"'),
    "scale-4-percent": ("value = 1.250000e-01", "value = 1.300000e-01"),
}


@pytest.mark.parametrize("bug", [None, *PERTURBATIONS])
def test_a_perturbed_lowered_op_fails_check(bug, attention_l2, tmp_path, capsys):
    text = attention_l2
    if bug is not None:
        old, new = PERTURBATIONS[bug]
        assert text.count(old) == 1
        text = text.replace(old, new)
    path = tmp_path / "attention.l2.mlir"
    path.write_text(text)
    status = main([str(path), "--reference", str(ATTENTION)])
    out = capsys.readouterr().out
    if bug is None:  # the lowered program itself, on the card, matches its L1 source
        assert status == 0 and "check: ok" in out, out
    else:
        assert status == 1, out
        assert "check: MISMATCH in result 0: " in out


def test_attention_block_weights_are_scaled():
    """The example's projections are drawn at 1/sqrt(K), its activation and norm weight
    standard normal (what keeps its softmax scores of order 1)."""
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.registry import make_context
    from spyre_ir.tools.spyre_run import find_entry

    fn = find_entry(parse_and_verify(make_context(), ATTENTION.read_text(), "a.mlir"), "main")
    x, norm_w, wq, wk, wv, wo = random_inputs(fn, 0)
    assert x.dtype == np.float16
    assert abs(float(x.astype(np.float32).std()) - 1) < 0.05
    assert abs(float(norm_w.astype(np.float32).std()) - 1) < 0.15
    for weight, k in ((wq, 256), (wk, 256), (wv, 256), (wo, 64)):
        assert abs(float(weight.astype(np.float32).std()) * math.sqrt(k) - 1) < 0.1


@pytest.fixture(scope="module")
def attention_l3() -> str:
    return _lowered(ATTENTION.read_text(), "spyre-to-units")


def test_an_l2_check_rounds_the_reference_as_the_card(attention_l2, tmp_path, capsys):
    """An L2 file's --check on the card runs the L2 interpreter in DLFloat16: the
    simulator matches it bit for bit, even with standard normal weights (scores in the
    hundreds), where IEEE fp16 against DLFloat16 differs by tens."""
    path = tmp_path / "attention.l2.mlir"
    path.write_text(attention_l2)
    for seed in ("0", "1"):
        assert main([str(path), "--check", "--seed", seed]) == 0
        out = capsys.readouterr().out
        assert "check: ok (max abs error 0 against the L2 interpreter in DLFloat16" in out
    # --level dataflow of the L1 source compares IEEE fp16 with IEEE fp16.
    assert main([str(ATTENTION), "--check", "--level", "dataflow"]) == 0
    assert "against the L1 interpreter, 1 result" in capsys.readouterr().out


@pytest.mark.parametrize("bug", [None, *PERTURBATIONS])
def test_a_perturbed_l3_op_fails_check_against_l2(bug, attention_l2, attention_l3, tmp_path,
                                                  capsys):  # fmt: skip
    text = attention_l3
    if bug is not None:
        old, new = PERTURBATIONS[bug]
        assert text.count(old) == 1
        text = text.replace(old, new)
    (tmp_path / "a.l2.mlir").write_text(attention_l2)
    (tmp_path / "a.l3.mlir").write_text(text)
    status = main([str(tmp_path / "a.l3.mlir"), "--reference", str(tmp_path / "a.l2.mlir")])
    out = capsys.readouterr().out
    if bug is None:
        assert status == 0 and "check: ok (max abs error 0 " in out, out
    else:
        assert status == 1 and "check: MISMATCH in result 0: " in out, out
