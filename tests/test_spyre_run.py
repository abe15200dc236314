"""spyre-run: the command line over the interpreters and the simulated card - level
detection and lowering, the simulator's report and trace, --check, and errors that
never end in a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

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
    assert "nope.mlir: error: cannot read file" in done.stderr  # no position: not 0:0
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
         "{}:3:3: error: 'spyre.gather': index 7 is out of range for a table of 5 rows"),
    ]  # fmt: skip
    for arrays, message in cases:
        spec = _inputs(tmp_path, *arrays)
        done = spyre_run(str(program), "--inputs", spec, "--level", "tensor")
        assert done.returncode == 1
        named = spec.split(",")[-1] if "{}:" not in message else str(program)
        if "argument 1" in message:
            named = spec.split(",")[1]
        assert done.stderr.strip() == message.format(named)
        assert "Traceback" not in done.stderr


def test_bad_index_on_the_simulator_is_located(program, tmp_path, capsys):
    x, table = np.zeros((4, 8), np.float32), np.zeros((5, 8), np.float16)
    spec = _inputs(tmp_path, x, table, np.array([0, 7, 1]))
    assert main([str(program), "--inputs", spec]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{program}:3:3: error: 'ls.gather' (program @")
    assert err.endswith("index 7 is out of range for a table of 5 rows")


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


# ---------------------------------------------------------------- levels and the simulator

EXP = """\
func.func @main(%x: tensor<64x256xf16>, %w: tensor<256xf16>) -> tensor<64x256xf16> {
  %e = spyre.exp %x : tensor<64x256xf16> -> tensor<64x256xf16>
  %m = spyre.mul %e, %w : tensor<64x256xf16>, tensor<256xf16> -> tensor<64x256xf16>
  func.return %m : tensor<64x256xf16>
}
"""

MATMUL = """\
func.func @main(%a: tensor<96x128xf16>, %b: tensor<128x160xf16>) -> tensor<96x160xf16> {
  %p = spyre.matmul %a, %b : tensor<96x128xf16>, tensor<128x160xf16> -> tensor<96x160xf16>
  %s = spyre.softmax %p dim = -1 : tensor<96x160xf16> -> tensor<96x160xf16>
  func.return %s : tensor<96x160xf16>
}
"""

REPORT_KEYS = ("simulated_us", "roofline_us", "roofline_fraction", "flops", "lpddr_bytes",
               "delivered_bytes", "ring_bytes", "lx_peak_bytes", "bottleneck", "utilization", "kernels")  # fmt: skip


def _lowered_text(text: str, pipeline: str) -> str:
    """`text` (L1) lowered with a named pipeline, printed as MLIR."""
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.pipelines import build_passes
    from spyre_ir.registry import make_context
    from spyre_ir.runtime.backend import print_ir

    module = parse_and_verify(make_context(), text, "l1.mlir")
    for p in build_passes(pipeline):
        p.apply(make_context(), module)
    return print_ir(module)


@pytest.fixture(scope="module")
def levels(tmp_path_factory):
    """The EXP program at L1, L2 and L3, as files."""
    root = tmp_path_factory.mktemp("levels")
    texts = {
        "l1": EXP,
        "l2": _lowered_text(EXP, "spyre-to-dataflow"),
        "l3": _lowered_text(EXP, "spyre-to-units"),
    }
    paths = {}
    for name, text in texts.items():
        paths[name] = root / f"exp.{name}.mlir"
        paths[name].write_text(text)
    return paths


def _result_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(("@main", "result "))]


def test_every_level_is_accepted_and_simulated(levels, capsys):
    outputs = {}
    for name, path in levels.items():
        assert main([str(path), "--seed", "1"]) == 0, name
        out = capsys.readouterr().out
        assert "simulated " in out and " us on the card, 1 kernel (roofline " in out
        outputs[name] = _result_lines(out)
    # Same program, same inputs: the same results from every level's file.
    assert outputs["l1"] == outputs["l2"] == outputs["l3"]
    assert len(outputs["l1"]) == 2
    # --level units is the simulator too; the interpreters agree with each other (IEEE
    # fp16), not with the card (DLFloat16).
    summaries = {}
    for level in ("units", "dataflow", "tensor"):
        assert main([str(levels["l1"]), "--seed", "1", "--level", level]) == 0
        summaries[level] = _result_lines(capsys.readouterr().out)
    assert summaries["units"] == outputs["l1"]
    assert summaries["dataflow"] == summaries["tensor"] != outputs["l1"]


def test_levels_that_cannot_run_the_input(levels, capsys):
    assert main([str(levels["l2"]), "--level", "tensor"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"spyre-run: error: --level tensor runs L1 IR, but {levels['l2']} "
                          f"is at L2 (dataflow.kernel @")  # fmt: skip
    assert "use --level dataflow or --level units or --level sim" in err
    assert main([str(levels["l3"]), "--level", "dataflow"]) == 1
    assert "is at L3 (core.program @" in capsys.readouterr().err
    # Simulator-only and lowering-only options elsewhere.
    assert main([str(levels["l1"]), "--level", "tensor", "--report", "json"]) == 1
    assert capsys.readouterr().err.strip() == (
        "spyre-run: error: --report needs the simulator (--level sim), not --level tensor"
    )
    assert main([str(levels["l2"]), "--cores", "4"]) == 1
    assert "--cores is an option of the L1 -> L2 lowering" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([str(levels["l1"]), "--cores", "0"])
    assert exit_.value.code == 2
    assert "expected a positive integer, got 0" in capsys.readouterr().err


def test_cores_option_reaches_the_pipeline(levels, capsys):
    assert main([str(levels["l1"]), "--cores", "4", "--report", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [k["cores"] for k in report["kernels"]] == [4]


def test_report_json_is_all_of_stdout(tmp_path, capsys):
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL)
    assert main([str(path), "--report", "json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)  # nothing but the JSON on stdout
    for key in REPORT_KEYS:
        assert key in report, key
    assert 0 < report["roofline_fraction"] <= 1
    assert report["simulated_us"] >= report["roofline_us"] > 0
    assert report["flops"] >= 2 * 96 * 160 * 128
    assert report["bottleneck"] in ("pe", "sfp", "lpddr", "ring", "ls")
    assert {"ls", "pe0", "pe1", "sfp0", "sfp1"} <= set(report["utilization"])
    assert all(0 <= u <= 1 + 1e-9 for u in report["utilization"].values())
    assert len(report["kernels"]) >= 1
    for kernel in report["kernels"]:
        assert 0 < kernel["roofline_fraction"] <= 1
    # The results went to stderr.
    assert captured.err.startswith("@main: 1 result\nresult 0: tensor<96x160xf16>")


def test_report_text(tmp_path, capsys):
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL)
    assert main([str(path), "--report", "text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("@main: 1 result\nresult 0: ")
    for label in ("simulated time", "roofline time", "roofline fraction", "flops",
                  "LPDDR5 bytes", "ring bytes", "LX peak", "bottleneck", "utilization"):  # fmt: skip
        assert f"  {label}" in out, label
    assert "pe0 " in out and "sfp0 " in out and "lpddr " in out
    table = out[out.index("kernels (") :].splitlines()
    assert table[1].split() == ["name", "cores", "us", "roofline", "bottleneck"]
    rows = [line.split() for line in table[2:]]
    assert rows and all(len(r) == 5 and r[3].endswith("%") for r in rows)
    assert {r[0].rsplit("_", 1)[0] for r in rows} <= {"matmul", "rows"}


def test_trace_file(levels, tmp_path, capsys):
    trace = tmp_path / "trace.json"
    assert main([str(levels["l1"]), "--trace", str(trace)]) == 0
    assert f"to {trace}" in capsys.readouterr().out
    data = json.loads(trace.read_text())
    complete = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    assert complete
    for event in complete:
        for key in ("ph", "ts", "dur", "pid", "tid"):
            assert key in event, (key, event)
        assert event["dur"] >= 0 and event["ts"] >= 0
    assert {e["pid"] for e in complete} >= {0, 1}  # the card, and one program


# ---------------------------------------------------------------- --check


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """The captured L1 graphs of every tests/models.MODELS entry (f16), as .mlir files
    with their inputs as .npy files."""
    sys.path.insert(0, str(Path(__file__).parent))
    import torch
    from capture import capture
    from models import MODELS, build

    from spyre_ir.runtime.backend import print_ir

    root = tmp_path_factory.mktemp("models")
    files = []
    for name in MODELS:
        model, example = build(name, torch.float16)
        for index, (module, arrays) in enumerate(capture(model, example)):
            path = root / f"{name}_{index}.mlir"
            path.write_text(print_ir(module))
            inputs = []
            for k, array in enumerate(arrays):
                inputs.append(str(root / f"{name}_{index}_{k}.npy"))
                np.save(inputs[-1], array)
            files.append((path, ",".join(inputs)))
    return files


def test_check_passes_on_every_frontend_model(model_files, capsys):
    from models import MODELS

    assert {p.name.rsplit("_", 1)[0] for p, _ in model_files} == set(MODELS)
    for path, inputs in model_files:
        assert main([str(path), "--inputs", inputs, "--check"]) == 0, path
        out = capsys.readouterr().out
        assert "check: ok (max abs error " in out, (path, out)
        assert "against the L1 interpreter" in out


def test_check_on_l1_and_l2_inputs(levels, capsys):
    for name, reference in (
        ("l1", "the L1 interpreter"),
        ("l2", "the L2 interpreter in DLFloat16"),
    ):
        assert main([str(levels[name]), "--check"]) == 0
        last = capsys.readouterr().out.splitlines()[-1]
        assert last.startswith("check: ok (max abs error ")
        assert last.endswith(f"against {reference}, 1 result)")
    # The L2 interpreter against the L1 one.
    assert main([str(levels["l1"]), "--level", "dataflow", "--check"]) == 0
    assert "check: ok" in capsys.readouterr().out


def test_check_that_cannot_apply_exits_2(levels, capsys):
    assert main([str(levels["l3"]), "--check"]) == 2
    err = capsys.readouterr().err
    assert "--check needs an L1 or L2 input" in err and "--reference" in err
    assert main([str(levels["l2"]), "--check", "--level", "dataflow"]) == 2
    assert "runs the L2 interpreter itself" in capsys.readouterr().err


def test_check_catches_a_corrupted_l2_program(levels, tmp_path, capsys):
    text = levels["l2"].read_text()
    assert text.count('dataflow.compute "spyre.exp"') == 1
    corrupted = tmp_path / "corrupted.l2.mlir"
    corrupted.write_text(text.replace('"spyre.exp"', '"spyre.sigmoid"'))
    # Against its own level the corruption is in the reference too: the L2 -> L3
    # lowering and the simulator are right about the wrong program.
    assert main([str(corrupted), "--check"]) == 0
    capsys.readouterr()
    # Against the L1 source it came from, it is caught.
    assert main([str(corrupted), "--reference", str(levels["l1"])]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1].startswith("check: MISMATCH in result 0: ")
    assert "elements differ (expected within rtol = atol = 0.02); max abs error " in lines[-1]
    assert lines[-1].endswith(f"(the L1 interpreter on {levels['l1']})")


def test_check_catches_a_missing_sync_in_l3(levels, tmp_path, capsys):
    # Drop the queue by which the compute unit tells LS that a result tile is ready
    # (the pop before the store): LS then stores the result buffer before it is
    # computed. The program still verifies; the run's LX race check names the store
    # and the write it is not ordered after, before any numbers are compared.
    text = levels["l3"].read_text()
    (ready,) = re.findall(r"core\.pop (%\w+)\n\s*ls\.store ", text)
    kept = [line for line in text.splitlines()
            if line.strip() not in (f"core.pop {ready}", f"core.push {ready}")]  # fmt: skip
    assert len(kept) == len(text.splitlines()) - 2
    racy = tmp_path / "racy.l3.mlir"
    racy.write_text("\n".join(kept) + "\n")
    assert main([str(racy), "--reference", str(levels["l1"])]) == 1
    err = capsys.readouterr().err
    assert "racy.l3.mlir:" in err and "LX race" in err, err
    assert "'ls.store' on ls reads, with no queue ordering the two" in err, err
    assert main([str(levels["l3"]), "--reference", str(levels["l1"])]) == 0
    assert "check: ok" in capsys.readouterr().out


def test_reference_must_match_the_signature(levels, tmp_path, capsys):
    other = tmp_path / "other.mlir"
    other.write_text(MATMUL)
    assert main([str(levels["l3"]), "--reference", str(other)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"spyre-run: error: --reference {other}: @main is (tensor<96x128xf16>")
    assert main([str(levels["l1"]), "--reference", str(levels["l3"])]) == 2
    assert "the reference runs on an interpreter" in capsys.readouterr().err


def test_compare_tolerances():
    from xdsl.dialects.builtin import Float32Type, IntegerType, TensorType

    from spyre_ir.tools.spyre_run import compare

    f32 = TensorType(Float32Type(), [3])
    i64 = TensorType(IntegerType(64), [3])
    want = np.array([1.0, np.nan, np.inf], np.float32)
    assert compare(want + np.float32(5e-5), want, f32) == (pytest.approx(5e-5, rel=0.1), None)
    err, problem = compare(np.array([1.001, np.nan, np.inf], np.float32), want, f32)
    assert problem is not None and problem.startswith("1 of 3 elements differ")
    assert "at [0]: got 1.001, want 1" in problem
    assert compare(np.array([1, 2, 3]), np.array([1, 2, 3]), i64) == (0.0, None)
    _, problem = compare(np.array([1, 2, 4]), np.array([1, 2, 3]), i64)
    assert problem is not None and "(expected exactly)" in problem


# ---------------------------------------------------------------- errors


def test_lowering_failure_is_a_located_error(tmp_path, capsys):
    path = tmp_path / "mm.mlir"
    path.write_text(MATMUL)
    assert main([str(path), "--lx-bytes", "4096"]) == 1
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(rf"{re.escape(str(path))}:2:3: error: group @matmul_\d+: no matmul "
                        r"tiling of .* fits 4096 bytes of LX", err), err  # fmt: skip


DEADLOCK = """\
func.func @main(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {
  %0 = core.program @exp cores(2) (%x) : (tensor<32x64xf16>) -> tensor<32x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<32x64xf16>, %out: !dataflow.ddr<32x64xf16>):
    %a = dataflow.alloc_lx {offset = 0 : i64} : !dataflow.lx<8x64xf16>
    %b = dataflow.alloc_lx {offset = 1024 : i64} : !dataflow.lx<8x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %full = core.queue "ls" -> "sfp0" {depth = 1 : i64, credits = 0 : i64}
    %free = core.queue "sfp0" -> "ls" {depth = 1 : i64, credits = 1 : i64}
    core.unit "ls" {
      %base = arith.muli %core, %c2 : index
      scf.for %i = %c0 to %c2 step %c1 {
        %t = arith.addi %base, %i : index
        %row = arith.muli %t, %c8 : index
        core.pop %free
        ls.load %in[%row, %c0] into %a : !dataflow.ddr<32x64xf16>, !dataflow.lx<8x64xf16>
        core.push %full
      }
      core.end
    }
    core.unit "sfp0" {
      core.pop %full
      sfp.compute "spyre.exp" on "sfp"(%a) -> (%b) : (!dataflow.lx<8x64xf16>) -> !dataflow.lx<8x64xf16>
      core.pop %full
      sfp.compute "spyre.exp" on "sfp"(%a) -> (%b) : (!dataflow.lx<8x64xf16>) -> !dataflow.lx<8x64xf16>
      core.push %free
      core.push %free
      core.end
    }
    core.end
  }
  func.return %0 : tensor<32x64xf16>
}
"""


def test_deadlocked_program_fails_without_traceback(tmp_path):
    # Verifies (pushes and pops match), but LS needs a second credit before SFP
    # returns the first, and SFP waits for a second tile before it returns any.
    path = tmp_path / "deadlock.mlir"
    path.write_text(DEADLOCK)
    done = spyre_run(str(path), "--report", "json")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.startswith(f"{path}:2:3: error: 'core.program': deadlock "
                                  "in program @exp")  # fmt: skip
    assert "unit ls" in done.stderr and "unit sfp0" in done.stderr
    assert "Traceback" not in done.stderr


def test_bad_files_and_options_never_show_a_traceback(levels, tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(MALFORMED)
    runs = [
        ((str(bad), "--check", "--report", "text"), 1, f"{bad}:3:"),
        ((str(levels["l2"]), "--level", "tensor"), 1, "spyre-run: error: --level tensor"),
        ((str(levels["l3"]), "--check"), 2, "spyre-run: error: --check needs an L1 or L2"),
        ((str(levels["l1"]), "--inputs", str(bad)), 1, "spyre-run: error: @main takes 2"),
    ]
    for argv, code, message in runs:
        done = spyre_run(*argv)
        assert done.returncode == code, (argv, done.stderr)
        assert done.stderr.startswith(message), (argv, done.stderr)
        assert "Traceback" not in done.stderr + done.stdout


ADD = """
func.func @main(%x: tensor<4096x1024xf16>, %y: tensor<4096x1024xf16>) -> tensor<4096x1024xf16> {
  %s = spyre.add %x, %y : tensor<4096x1024xf16>, tensor<4096x1024xf16> -> tensor<4096x1024xf16>
  func.return %s : tensor<4096x1024xf16>
}
"""


def test_card_changes_plans_and_timing_together(tmp_path, capsys):
    # A bandwidth-bound add (16 MiB read, 8 MiB written) on a card with half the LPDDR5
    # bandwidth: the same plan takes twice as long (the bus is the bound, and the core
    # limit, 44.8 GB/s per core and direction, is far from it on 32 cores).
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    card = tmp_path / "half.json"
    card.write_text(json.dumps({"lpddr_bandwidth": 83.2e9}))
    assert main([str(path), "--report", "json"]) == 0
    base = json.loads(capsys.readouterr().out)
    assert main([str(path), "--report", "json", "--card", str(card)]) == 0
    half = json.loads(capsys.readouterr().out)
    assert half["simulated_us"] == pytest.approx(2 * base["simulated_us"], rel=0.02)
    # The card's LX: a smaller one gives smaller row tiles (more, shorter moves).
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"lx_bytes": 65536}))
    assert main([str(path), "--report", "json", "--card", str(small)]) == 0
    assert json.loads(capsys.readouterr().out)["lx_peak_bytes"] <= 65536 < base["lx_peak_bytes"]


def test_a_bad_card_is_a_clear_error(tmp_path):
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    card = tmp_path / "bad.json"
    card.write_text(json.dumps({"lx_bytes": 100, "no_such_field": 1}))
    proc = spyre_run(str(path), "--card", str(card))
    assert proc.returncode == 1
    assert "--card" in proc.stderr and "unknown hardware field(s): no_such_field" in proc.stderr
    assert "Traceback" not in proc.stderr
