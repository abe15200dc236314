"""spyre-opt and spyre-run never lose data, never print a traceback and never hang:
outputs written atomically and only after success, the catch-all at the tool boundary
(located, exit 1), option values range-checked, only regular files read, and no error
at `FILE:0:0`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spyre_ir.tools import spyre_opt, spyre_run

ADD = """\
func.func @main(%a: tensor<64x128xf16>, %b: tensor<64x128xf16>) -> tensor<64x128xf16> {
  %0 = spyre.add %a, %b : tensor<64x128xf16>, tensor<64x128xf16> -> tensor<64x128xf16>
  func.return %0 : tensor<64x128xf16>
}
"""
BROKEN = ADD.replace("spyre.add", "spyre.bogus")


def tool(name: str, *args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-m", f"spyre_ir.tools.{name}", *args],
        text=True,
        timeout=timeout,
        **kwargs,
    )


def opt_in_process(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        spyre_opt.main(list(argv))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


@pytest.fixture
def add_file(tmp_path: Path) -> Path:
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    return path


# ---------------------------------------------------------------- data loss


def test_output_may_be_the_input(add_file, capsys):
    code, _, err = opt_in_process(capsys, str(add_file), "-o", str(add_file))
    assert code == 0, err
    text = add_file.read_text()
    assert text.startswith("builtin.module {") and "spyre.add" in text


def test_failed_run_leaves_existing_output_untouched(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text(BROKEN)
    out = tmp_path / "out.mlir"
    out.write_text("precious\n")
    code, _, err = opt_in_process(capsys, str(bad), "-o", str(out))
    assert code == 1 and "bad.mlir:2:" in err
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mlir", "out.mlir"]  # no temp


def test_output_keeps_its_permissions(add_file, tmp_path, capsys):
    out = tmp_path / "out.mlir"
    out.write_text("")
    out.chmod(0o640)
    assert opt_in_process(capsys, str(add_file), "-o", str(out))[0] == 0
    assert (out.stat().st_mode & 0o777) == 0o640 and "spyre.add" in out.read_text()


def test_output_directory_is_an_error(add_file, tmp_path, capsys):
    code, _, err = opt_in_process(capsys, str(add_file), "-o", str(tmp_path))
    assert code == 1
    assert err == f"spyre-opt: error: cannot write '{tmp_path}': it is a directory\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("name", ["spyre_opt", "spyre_run"])
def test_full_disk_on_stdout(name, add_file):
    with open("/dev/full", "w") as full:
        done = tool(name, str(add_file), stdout=full, stderr=subprocess.PIPE)
    assert done.returncode == 1
    tool_name = name.replace("_", "-")
    assert done.stderr == f"{tool_name}: error: cannot write <stdout>: No space left on device\n"


def test_spyre_run_failed_run_keeps_output(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(BROKEN)
    out = tmp_path / "out.npz"
    out.write_bytes(b"precious")
    assert spyre_run.main([str(bad), "--output", str(out)]) == 1
    assert out.read_bytes() == b"precious"
    assert spyre_run.main([str(bad), "--trace", str(tmp_path)]) == 1


# ---------------------------------------------------------------- the catch-all


def _explode(self, ctx, module):
    for op in module.walk():
        if op.name == "spyre.add":
            raise KeyError("a bug in a pass")


def test_catch_all_in_spyre_opt_is_located(add_file, capsys, monkeypatch):
    from spyre_ir.passes.stickify import SpyreStickify

    monkeypatch.setattr(SpyreStickify, "apply", _explode)
    code, out, err = opt_in_process(capsys, str(add_file), "-p", "spyre-to-dataflow")
    assert code == 1 and out == ""
    # At the op the failing code held, not at 0:0, and no traceback.
    assert err == (
        f"{add_file}:2:3: error: internal error: KeyError: 'a bug in a pass' "
        "(please report this bug)\n"
    )


def test_catch_all_in_spyre_run_is_located(add_file, capsys, monkeypatch):
    from spyre_ir.passes.stickify import SpyreStickify

    monkeypatch.setattr(SpyreStickify, "apply", _explode)
    assert spyre_run.main([str(add_file)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{add_file}:2:3: error: internal error: KeyError")
    assert "Traceback" not in err


def test_catch_all_without_op_points_at_the_chunk(tmp_path, capsys, monkeypatch):
    path = tmp_path / "two.mlir"
    path.write_text(ADD + "// -----\n" + ADD)

    def fail(self, module):
        raise RuntimeError("boom")

    monkeypatch.setattr(spyre_opt.SpyreOptMain, "apply_passes", fail)
    code, out, err = opt_in_process(capsys, str(path), "--split-input-file")
    assert code == 1
    lines = err.splitlines()
    assert lines == [
        f"{path}:1:1: error: internal error: RuntimeError: boom (please report this bug)",
        f"{path}:5:1: error: internal error: RuntimeError: boom (please report this bug)",
    ]


# ---------------------------------------------------------------- never at 0:0


def test_module_without_main_is_located(tmp_path, capsys):
    path = tmp_path / "nomain.mlir"
    path.write_text(ADD.replace("@main", "@other"))
    code, _, err = opt_in_process(capsys, str(path), "-p", "spyre-compile")
    assert code == 1
    assert err == f"{path}:1:1: error: convert-units-to-recipe: no func.func @main to plan\n"


def test_property_of_the_wrong_type_in_custom_syntax(tmp_path, capsys):
    path = tmp_path / "eps.mlir"
    path.write_text(
        "func.func @main(%b: tensor<4x64xf16>) -> tensor<4x64xf16> {\n"
        "  %0 = spyre.rms_norm %b {eps = 0} : tensor<4x64xf16> -> tensor<4x64xf16>\n"
        "  func.return %0 : tensor<4x64xf16>\n}\n"
    )
    code, _, err = opt_in_process(capsys, str(path))
    assert code == 1 and err == f"{path}:2:3: error: 0 : i64 should be of base attribute float\n"
    assert spyre_run.main([str(path)]) == 1
    assert capsys.readouterr().err == err


def test_runtime_errors_keep_the_location_first(tmp_path, capsys):
    path = tmp_path / "gather.mlir"
    path.write_text(
        "func.func @main(%t: tensor<4x64xf16>, %i: tensor<2xi64>) -> tensor<2x64xf16> {\n"
        "  %0 = spyre.gather %t[%i] : tensor<4x64xf16>, tensor<2xi64> -> tensor<2x64xf16>\n"
        "  func.return %0 : tensor<2x64xf16>\n}\n"
    )
    table, index = tmp_path / "t.npy", tmp_path / "i.npy"
    np.save(table, np.zeros((4, 64), np.float16))
    np.save(index, np.array([1, 9], np.int64))
    assert spyre_run.main([str(path), "--level", "tensor", "--inputs", f"{table},{index}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:3: error: 'spyre.gather': index 9 is out of range"), err


# ---------------------------------------------------------------- option values


@pytest.mark.parametrize(
    "pipeline, message",
    [
        (
            "spyre-to-dataflow{cores=99999999999999999999}",
            "spyre-to-dataflow: cores=99999999999999999999 is out of range [1, 32] "
            "(the card has 32 cores)",
        ),
        ("spyre-partition-cores{cores=1000}", "spyre-partition-cores: cores=1000 is out of range"),
        ("spyre-partition-cores{cores=0}", "spyre-partition-cores: cores=0 is out of range"),
        ("spyre-tile{lx-bytes=0}", "spyre-tile: lx-bytes=0 is out of range [128, 2097152]"),
        ("spyre-compile{lx-bytes=4194304}", "spyre-compile: lx-bytes=4194304 is out of range"),
    ],
)
def test_pipeline_options_are_range_checked(add_file, capsys, pipeline, message):
    code, out, err = opt_in_process(capsys, str(add_file), "-p", pipeline)
    assert code == 1 and out == ""
    assert err.startswith(f"spyre-opt: error: {message}"), err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--cores", "99999999999999999999"], "spyre-run: error: --cores 99999999999999999999 is out of range [1, 32]"),
        (["--cores", "33"], "spyre-run: error: --cores 33 is out of range [1, 32]"),
        (["--lx-bytes", "1"], "spyre-run: error: --lx-bytes 1 is out of range [128, 2097152]"),
    ],
)  # fmt: skip
def test_spyre_run_options_are_range_checked(add_file, capsys, argv, message):
    assert spyre_run.main([str(add_file), *argv]) == 1
    assert capsys.readouterr().err.startswith(message)


def test_negative_seed_is_a_usage_error(add_file, capsys):
    with pytest.raises(SystemExit) as done:
        spyre_run.main([str(add_file), "--seed", "-1"])
    assert done.value.code == 2
    assert "argument --seed: expected a seed in [0, 2**64), got -1" in capsys.readouterr().err


# ---------------------------------------------------------------- inputs


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_inputs_are_refused_without_blocking(add_file, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # A reader of a FIFO blocks until a writer comes: the timeout catches a hang.
    done = tool("spyre_run", str(add_file), "--inputs", f"{fifo},{fifo}", timeout=60)
    assert done.returncode == 1
    assert done.stderr == (
        f"spyre-run: error: cannot read input '{fifo}': not a regular file "
        "(a FIFO, device or directory is never read)\n"
    )
    done = tool("spyre_run", str(fifo), timeout=60)
    assert done.returncode == 1 and done.stderr.startswith(f"{fifo}: error: cannot read file")


def test_npy_header_declaring_a_huge_shape(add_file, tmp_path, capsys):
    good = tmp_path / "a.npy"
    np.save(good, np.zeros((64, 128), np.float16))
    huge = tmp_path / "huge.npy"
    huge.write_bytes(good.read_bytes().replace(b"(64, 128)", b"(64000000, 128000)"))
    assert spyre_run.main([str(add_file), "--inputs", f"{huge},{good}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"spyre-run: error: input '{huge}': its header declares shape (64000000, 128000) "
        "of float16 (16384000000000 bytes), but the file holds"
    )


def test_npy_header_too_long(add_file, tmp_path, capsys):
    good = tmp_path / "a.npy"
    np.save(good, np.zeros((64, 128), np.float16))
    long = tmp_path / "long.npy"
    long.write_bytes(good.read_bytes()[:8] + b"\xff\xff" + b" " * 65535)
    assert spyre_run.main([str(add_file), "--inputs", f"{long},{good}"]) == 1
    assert capsys.readouterr().err.startswith(f"spyre-run: error: cannot load input '{long}'")


def test_huge_argument_shapes_are_refused_before_allocating(tmp_path, capsys):
    path = tmp_path / "big.mlir"
    path.write_text(ADD.replace("64x128", "6400000x1280000"))
    assert spyre_run.main([str(path), "--level", "tensor"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("spyre-run: error: the arguments of @main take 32768000000000 bytes")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_as_input_is_refused():
    # /dev/zero never ends: the timeout catches a read that does not stop.
    done = tool("spyre_opt", "/dev/zero", timeout=60)
    assert done.returncode == 1
    assert done.stderr == "/dev/zero: error: cannot read input: a device\n"
    done = tool("spyre_run", "/dev/zero", timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("/dev/zero: error: cannot read file")
