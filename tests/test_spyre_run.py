"""spyre-run: the command line over the tensor interpreter."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from spyre_ir.tools.spyre_run import main

PROGRAM = """\
func.func @main(%x: tensor<4x8xf32>, %table: tensor<5x8xf16>, %idx: tensor<3xi64>) -> (tensor<4xf32>, tensor<3x8xf16>) {
  %0 = spyre.sum %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
  %1 = spyre.gather %table[%idx] : tensor<5x8xf16>, tensor<3xi64> -> tensor<3x8xf16>
  func.return %0, %1 : tensor<4xf32>, tensor<3x8xf16>
}
func.func @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = spyre.add %x, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
"""

MALFORMED = """\
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = spyre.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = spyre.bogus %0 : tensor<4xf32> -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
"""


def spyre_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "spyre_ir.tools.spyre_run", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.mlir"
    path.write_text(PROGRAM)
    return path


def _inputs(tmp_path, *arrays):
    paths = []
    for i, a in enumerate(arrays):
        paths.append(str(tmp_path / f"in{i}.npy"))
        np.save(paths[-1], a)
    return ",".join(paths)


def test_runs_with_random_inputs(program, tmp_path):
    out = tmp_path / "out.npz"
    done = spyre_run(str(program), "--seed", "3", "--output", str(out))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "@main: 2 results"
    assert lines[1].startswith("result 0: tensor<4xf32>  shape (4,)  dtype float32  min ")
    assert lines[2].startswith("result 1: tensor<3x8xf16>  shape (3, 8)  dtype float16")
    saved = np.load(out)
    assert saved["result_0"].shape == (4,) and saved["result_1"].dtype == np.float16
    # The seed decides the inputs: the same seed gives the same results.
    again = spyre_run(str(program), "--seed", "3")
    assert again.stdout.splitlines()[1:3] == lines[1:3]


def test_runs_given_inputs_and_prints_values(program, tmp_path, capsys):
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    table = np.arange(40, dtype=np.float16).reshape(5, 8)
    idx = np.array([4, 0, 4])
    assert main([str(program), "--inputs", _inputs(tmp_path, x, table, idx), "--print"]) == 0
    out = capsys.readouterr().out
    assert "[ 28.,  92., 156., 220.]" in out
    assert "[32., 33., 34., 35., 36., 37., 38., 39.]" in out


def test_other_entry(program, capsys):
    assert main([str(program), "--entry", "twice"]) == 0
    assert capsys.readouterr().out.startswith("@twice: 1 result\nresult 0: tensor<2xf32>")


def test_random_indices_fit_the_gather_table(tmp_path, capsys):
    # Without --inputs, index arguments stay below the table's row count.
    path = tmp_path / "g.mlir"
    path.write_text(PROGRAM.replace("5x8xf16", "2x8xf16"))
    for seed in range(5):
        assert main([str(path), "--seed", str(seed)]) == 0


def test_malformed_file_gives_located_error(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(MALFORMED)
    done = spyre_run(str(path))
    assert done.returncode == 1
    assert f"{path}:3:" in done.stderr and ": error: " in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_verifier_error_is_located(tmp_path):
    path = tmp_path / "bad.mlir"
    path.write_text(MALFORMED.replace("spyre.bogus %0 : tensor<4xf32> -> tensor<4xf32>",
                                      "spyre.exp %0 : tensor<4xf32> -> tensor<2x2xf32>")
                    .replace("%1 : tensor<4xf32>", "%0 : tensor<4xf32>"))  # fmt: skip
    done = spyre_run(str(path))
    assert done.returncode == 1
    assert f"{path}:3:3: error: 'spyre.exp': result shape [2, 2] should be [4]" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_file(tmp_path):
    done = spyre_run(str(tmp_path / "nope.mlir"))
    assert done.returncode == 1
    assert "nope.mlir:0:0: error: cannot read file" in done.stderr
    assert "Traceback" not in done.stderr


def test_wrong_inputs_give_clear_errors(program, tmp_path):
    x, table = np.zeros((4, 8), np.float32), np.zeros((5, 8), np.float16)
    cases = [
        ((x, table), "spyre-run: error: @main takes 3 arguments, but --inputs names 2 files"),
        ((x, table, np.zeros(4, np.int64)),
         "spyre-run: error: input '{}' for argument 2 (%idx): expected tensor<3xi64> "
         "(numpy shape (3,), dtype int64), got shape (4,), dtype int64"),
        ((x, table.astype(np.float32), np.zeros(3, np.int64)),
         "spyre-run: error: input '{}' for argument 1 (%table): expected tensor<5x8xf16> "
         "(numpy shape (5, 8), dtype float16), got shape (5, 8), dtype float32"),
        ((x, table, np.array([0, 7, 1])),
         "spyre-run: error: {}:3:3: 'spyre.gather': index 7 is out of range for a table of 5 rows"),
    ]  # fmt: skip
    for arrays, message in cases:
        spec = _inputs(tmp_path, *arrays)
        done = spyre_run(str(program), "--inputs", spec)
        assert done.returncode == 1
        named = spec.split(",")[-1] if "{}:" not in message else str(program)
        if "argument 1" in message:
            named = spec.split(",")[1]
        assert done.stderr.strip() == message.format(named)
        assert "Traceback" not in done.stderr


def test_unreadable_inputs(program, tmp_path, capsys):
    spec = f"{program},{program},{tmp_path / 'missing.npy'}"
    assert main([str(program), "--inputs", spec]) == 1
    assert "is not a .npy file" in capsys.readouterr().err
    spec = _inputs(tmp_path, np.zeros((4, 8), np.float32), np.zeros((5, 8), np.float16))
    assert main([str(program), "--inputs", spec + f",{tmp_path / 'missing.npy'}"]) == 1
    assert "cannot read input" in capsys.readouterr().err


def test_unknown_entry(program, capsys):
    assert main([str(program), "--entry", "nope"]) == 1
    assert capsys.readouterr().err.strip() == (
        "spyre-run: error: no function @nope with a body (functions: @main, @twice)"
    )
