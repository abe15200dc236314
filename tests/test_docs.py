"""The docs cannot go stale: the op table of docs/frontend.md lists every lowered ATen
target and only real spyre ops, and the example of docs/ir-dumps.md runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from spyre_ir.dialects.spyre import SPYRE_OPS
from spyre_ir.lowering.aten_lowerings import supported_targets

DOCS = Path(__file__).resolve().parent.parent / "docs"
FRONTEND = DOCS / "frontend.md"
IR_DUMPS = DOCS / "ir-dumps.md"


def _table_rows(text: str) -> dict[str, str]:
    """First-column target -> the whole row, for every op table row."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"\|\s*`([^`]+)`( †)?\s*\|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_every_supported_target_is_in_the_op_table() -> None:
    rows = _table_rows(FRONTEND.read_text())
    missing = [t for t in supported_targets() if t not in rows]
    assert not missing, f"add these to the op table of docs/frontend.md: {missing}"
    extra = sorted(set(rows) - set(supported_targets()))
    assert not extra, f"docs/frontend.md lists targets without a lowering: {extra}"


def test_op_table_names_only_real_spyre_ops() -> None:
    known = {op.name for op in SPYRE_OPS}
    named = set(re.findall(r"`(spyre\.[a-z_]+)`", FRONTEND.read_text()))
    assert named, "no spyre ops named"
    assert not named - known, f"not in the spyre dialect: {sorted(named - known)}"


def test_dagger_marks_the_targets_torch_compile_never_reaches() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from test_frontend_ops import UNREACHABLE

    daggered = {t for t, row in _table_rows(FRONTEND.read_text()).items() if f"`{t}` †" in row}
    assert daggered == set(UNREACHABLE)


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def test_ir_dump_example_runs(tmp_path: Path) -> None:
    text = IR_DUMPS.read_text()
    (python,), (shell,), (ir,) = _blocks(text, "python"), _blocks(text, "sh"), _blocks(text, "mlir")
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPYRE_")}
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")

    run = subprocess.run([sys.executable, "-c", python], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == (
        "['graph0_0.dataflow.mlir', 'graph0_0.recipe.mlir', 'graph0_0.tensor.mlir', 'graph0_0.units.mlir']"
    )
    dumped = (tmp_path / "spyre-dump" / "graph0_0.tensor.mlir").read_text()
    assert dumped == ir, "the IR shown in docs/ir-dumps.md changed: paste the new dump"

    assert (Path(bindir) / "spyre-opt").exists(), "spyre-opt must be installed next to python"
    commands = subprocess.run(["bash", "-e", "-c", shell], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
    assert commands.returncode == 0, commands.stderr[-3000:]
    assert commands.stdout.splitlines()[-1] == "0.0"
