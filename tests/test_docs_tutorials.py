"""The tutorials (docs/tutorial-*.md) stay true to the code.

Conventions of the tutorials: a line `<!-- edit: PATH -->` right before a ```diff block is
an edit of PATH (lines starting with " " are context, "-" removed, "+" added; the context
and removed lines must occur exactly once in the file, as whole lines); `<!-- file: PATH -->`
before any code block is a new file with that block as its content.

The fast tests check that every edit applies to today's code and every new file is new.
The end-to-end ones (about 20 s) apply a whole tutorial to a copy of the repository and run what it says
should then work: the tests it adds, its FileCheck test, its pipeline, its example.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ADD_AN_OP = ROOT / "docs" / "tutorial-add-an-op.md"
WRITE_A_PASS = ROOT / "docs" / "tutorial-write-a-pass.md"
TUTORIALS = [ADD_AN_OP, WRITE_A_PASS]
MARKER = re.compile(r"^<!--\s*(edit|file):\s*(\S+)\s*-->$")
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Step:
    kind: str  # "edit" or "file"
    path: str
    text: str
    where: str  # tutorial:line, for messages


def steps(doc: Path) -> list[Step]:
    lines = doc.read_text().splitlines()
    found = []
    for i, line in enumerate(lines):
        marker = MARKER.match(line.strip())
        if not marker:
            continue
        where = f"{doc.name}:{i + 1}"
        fence = re.match(r"^(`{3,})(\w*)\s*$", lines[i + 1]) if i + 1 < len(lines) else None
        assert fence, f"{where}: a code block must follow the marker on the next line"
        if marker.group(1) == "edit":
            assert fence.group(2) == "diff", f"{where}: an edit is a ```diff block"
        end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == fence.group(1))
        found.append(
            Step(marker.group(1), marker.group(2), "\n".join(lines[i + 2 : end]) + "\n", where)
        )
    return found


def apply_edit(text: str, step: Step) -> str:
    old, new = [], []
    for line in step.text.splitlines():
        tag, rest = (line[:1], line[1:]) if line else (" ", "")
        if tag not in " +-":
            raise AssertionError(f"{step.where}: a diff line starts with ' ', '+' or '-': {line!r}")
        if tag != "+":
            old.append(rest)
        if tag != "-":
            new.append(rest)
    before, after = "\n" + "\n".join(old) + "\n", "\n" + "\n".join(new) + "\n"
    count = ("\n" + text).count(before)
    assert count == 1, (f"{step.where}: the lines it changes occur {count} times in {step.path} "
                        f"(they must occur once):\n{before}")  # fmt: skip
    return ("\n" + text).replace(before, after)[1:]


def apply_tutorial(doc: Path, root: Path) -> None:
    for step in steps(doc):
        target = root / step.path
        if step.kind == "file":
            assert not target.exists(), f"{step.where}: {step.path} exists already"
            target.write_text(step.text)
        else:
            assert target.exists(), f"{step.where}: {step.path} does not exist"
            target.write_text(apply_edit(target.read_text(), step))


@pytest.mark.parametrize("doc", TUTORIALS, ids=lambda d: d.name)
def test_every_step_applies_to_todays_code(doc: Path, tmp_path: Path) -> None:
    found = steps(doc)
    assert len(found) >= 5
    for path in {s.path for s in found}:
        if (ROOT / path).exists():
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / path, tmp_path / path)
        else:
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    apply_tutorial(doc, tmp_path)


@pytest.mark.parametrize("doc", TUTORIALS, ids=lambda d: d.name)
def test_named_files_and_functions_exist(doc: Path) -> None:
    """Every `path/to/file.py` the text names exists (or is one the tutorial creates)."""
    created = {s.path for s in steps(doc) if s.kind == "file"}
    text = doc.read_text()
    for name in set(
        re.findall(
            r"`((?:spyre_ir|tests|docs|passes|interp|lowering)/[\w/.-]+\.(?:py|md|mlir))`", text
        )
    ):
        candidates = [name, f"spyre_ir/{name}"]
        assert any((ROOT / c).exists() or c in created for c in candidates), f"{doc.name}: {name}"


# ------------------------------------------------------------- whole tutorials
def _copy_repo(dest: Path) -> Path:
    for part in ("spyre_ir", "tests", "docs", "examples"):
        shutil.copytree(
            ROOT / part, dest / part, ignore=shutil.ignore_patterns("__pycache__", "Output")
        )
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    # spyre-opt and python of the copy: our venv, importing the copied package
    bin_dir = dest / "bin"
    bin_dir.mkdir()
    for tool, module in (("spyre-opt", "spyre_ir.tools.spyre_opt"), ("python", None)):
        run = f"-m {module} " if module else ""
        (bin_dir / tool).write_text(
            f'#!/bin/sh\nPYTHONPATH="{dest}" exec "{sys.executable}" {run}"$@"\n'
        )
        (bin_dir / tool).chmod(0o755)
    return dest


def _run(root: Path, argv: list[str], timeout: int = 300, **settings: str) -> str:
    """Run argv in the copy `root`, with no SPYRE_* setting but `settings`; return its output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPYRE_")}
    env.update(settings, PYTHONPATH=str(root), PATH=f"{root / 'bin'}:{BIN}:{os.environ['PATH']}")
    run = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    output = run.stdout + run.stderr
    assert run.returncode == 0, f"{' '.join(argv)} exited {run.returncode}:\n{output}"
    return output


def _lit(root: Path, test: str) -> None:
    _run(root, [str(BIN / "lit"), "-v", str(root / test)])


def test_add_an_op_end_to_end(tmp_path: Path) -> None:
    root = _copy_repo(tmp_path)
    apply_tutorial(ADD_AN_OP, root)
    _lit(root, "tests/filecheck/dialects/spyre_roundtrip.mlir")
    # the tutorial's own example, on the card, with CPU fallback forbidden
    snippet = ADD_AN_OP.read_text().split("```python\n")[-1].split("```")[0]
    script = root / "snippet.py"
    script.write_text(snippet)
    out = _run(root, [str(root / "bin" / "python"), str(script)], SPYRE_STRICT="1")
    assert out.strip() == "True", out
    pytest_ = [str(root / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider"]
    out = _run(root, [*pytest_, "tests/test_interp_tensor.py", "tests/test_interp_dataflow.py",
                      "tests/test_cost_model.py", "-k", "expm1"])  # fmt: skip
    assert re.search(r"\b\d+ passed", out) and "failed" not in out, out
    out = _run(root, [*pytest_, "tests/test_frontend_ops.py", "tests/test_docs.py",
                      "-k", "exp_log_sqrt or every_lowered or supported"])  # fmt: skip
    assert re.search(r"\b\d+ passed", out) and "failed" not in out, out


def test_write_a_pass_end_to_end(tmp_path: Path) -> None:
    root = _copy_repo(tmp_path)
    apply_tutorial(WRITE_A_PASS, root)
    _lit(root, "tests/filecheck/passes/fold_double_negation.mlir")
    example = root / "twice.mlir"
    example.write_text(
        "func.func @twice(%x: tensor<4x64xf16>) -> tensor<4x64xf16> {\n"
        "  %a = spyre.neg %x : tensor<4x64xf16> -> tensor<4x64xf16>\n"
        "  %b = spyre.neg %a : tensor<4x64xf16> -> tensor<4x64xf16>\n"
        "  func.return %b : tensor<4x64xf16>\n}\n"
    )
    out = _run(root, ["spyre-opt", str(example), "-p", "spyre-to-dataflow"])
    assert "spyre.neg" not in out and "dataflow.kernel" not in out and "func.return %x" in out, out
    # the passes.md section: documented, and its example runs and shows real output
    passes_md = (root / "docs" / "passes.md").read_text().splitlines()
    command = passes_md.index("spyre-opt example.mlir -p spyre-fold-double-negation")
    out = _run(root, [str(root / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider",
                      "tests/test_docs_passes.py", "-k",
                      f"spyre-fold-double-negation or documented_names or line{command:05d}"])  # fmt: skip
    assert re.search(r"\b3 passed", out), out
