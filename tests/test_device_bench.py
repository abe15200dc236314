"""bench/eager.py runs, writes its JSON, and rejects bad options with a clear message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bench_module  # tests/, on sys.path under pytest
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench" / "eager.py"


def run_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                          timeout=600)  # fmt: skip


def test_bench_measures_one_op_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "eager.json"
    result = run_bench("--only", "add 64x64", "--repeat", "3", "--json", str(out))
    assert result.returncode == 0, result.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["op"] for r in rows] == ["add 64x64"]
    row = rows[0]
    assert row["simulated_us"] > 0 and row["cached_host_us"] > 0 and row["first_call_cold_ms"] > 0
    assert "add 64x64" in result.stdout


def load_bench():
    return bench_module.load_bench("eager")


@pytest.mark.parametrize(("args", "message"), [
    (["--repeat", "0"], "--repeat must be at least 1"),
    (["--only", "fft"], "invalid choice: 'fft'"),
])  # fmt: skip
def test_bench_rejects_bad_options(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        load_bench().main(args)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_bench_reports_an_unwritable_json_path_before_measuring(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert load_bench().main(["--json", str(tmp_path / "missing" / "x.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bench/eager.py: error: cannot write") and "No such file" in err
