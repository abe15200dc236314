"""docs/passes.md cannot go stale: every example runs, its shown output is real, and
every registered pass and pipeline has a section with its options and an example.

Conventions of docs/passes.md (also stated at its top):

* An input is an ```mlir block. The ```sh block after it holds ONE command,
  `spyre-opt example.mlir ...`; it runs on the most recent input block, written to a
  temporary `example.mlir`, with the spyre-opt installed next to this Python.
* An ```mlir block right after a ```sh block and preceded by `<!-- checked -->` (or
  `<!-- checked exit=N -->`) is that command's output: the command must exit 0 (or N),
  and every line of the block but the `...` lines must appear in the output (stdout and
  stderr together), in order, each on a line of its own. Inside a line, `...` stands for
  any text: the pieces around it must appear on one output line, in order.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from spyre_ir.pipelines import PIPELINES
from spyre_ir.registry import PASSES

PASSES_MD = Path(__file__).resolve().parent.parent / "docs" / "passes.md"
SPYRE_OPT = Path(sys.executable).parent / "spyre-opt"
CHECKED = re.compile(r"^<!--\s*checked(?:\s+exit=(\d+))?\s*-->$")


@dataclass
class Block:
    language: str
    text: str
    line: int  # 1-based line of the opening fence
    marker: str  # the last non-blank line before the fence


@dataclass
class Example:
    line: int
    input: str
    command: str
    output: str | None = None
    exit_code: int = 0


def blocks(text: str) -> list[Block]:
    found: list[Block] = []
    lines = text.splitlines()
    i, last = 0, ""
    while i < len(lines):
        fence = re.match(r"^```(\w*)\s*$", lines[i])
        if not fence:
            if lines[i].strip():
                last = lines[i].strip()
            i += 1
            continue
        start = i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        found.append(Block(fence.group(1), "\n".join(body) + "\n", start + 1, last))
        last = ""
        i += 1
    return found


def examples() -> list[Example]:
    found: list[Example] = []
    current_input: str | None = None
    previous: Block | None = None
    for block in blocks(PASSES_MD.read_text()):
        checked = CHECKED.match(block.marker)
        if block.language == "mlir" and checked:
            assert previous is not None and previous.language == "sh" and found, (
                f"docs/passes.md:{block.line}: a checked output must follow a ```sh command"
            )
            found[-1].output = block.text
            found[-1].exit_code = int(checked.group(1) or 0)
        elif block.language == "mlir":
            current_input = block.text
        elif block.language == "sh" and "example.mlir" in block.text:
            commands = [c for c in block.text.splitlines() if c.strip() and not c.startswith("#")]
            assert len(commands) == 1, f"docs/passes.md:{block.line}: one command per ```sh block"
            assert current_input is not None, f"docs/passes.md:{block.line}: no input before it"
            found.append(Example(block.line, current_input, commands[0]))
        previous = block
    return found


EXAMPLES = examples()


def check_output(expected: str, output: str, where: str) -> None:
    lines = output.splitlines()
    at = 0
    for want in expected.splitlines():
        want = want.strip()
        if not want or want == "...":
            continue
        pieces = [p.strip() for p in want.split("...") if p.strip()]
        for index in range(at, len(lines)):
            if contains_in_order(lines[index], pieces):
                at = index + 1
                break
        else:
            raise AssertionError(
                f"{where}: documented output line not found (in order) in the real output:\n"
                f"  {want}\nreal output:\n{output}"
            )


def contains_in_order(line: str, pieces: list[str]) -> bool:
    pos = 0
    for piece in pieces:
        found = line.find(piece, pos)
        if found < 0:
            return False
        pos = found + len(piece)
    return True


def test_examples_were_found() -> None:
    assert len(EXAMPLES) >= len(PASSES), "docs/passes.md should have an example per pass"
    assert all(e.output is not None for e in EXAMPLES), [
        f"docs/passes.md:{e.line}" for e in EXAMPLES if e.output is None
    ]


# Fixed-width ids, so that `-k line00123` selects one example, not every line123*.
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"line{e.line:05d}")
def test_example_runs_and_shows_real_output(example: Example, tmp_path: Path) -> None:
    assert SPYRE_OPT.exists(), "spyre-opt is installed with the package, next to python"
    source = tmp_path / "example.mlir"
    source.write_text(example.input)
    argv = shlex.split(example.command)
    assert argv[0] == "spyre-opt", f"docs/passes.md:{example.line}: commands start with spyre-opt"
    argv = [str(SPYRE_OPT), *(str(source) if a == "example.mlir" else a for a in argv[1:])]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    output = run.stdout + run.stderr
    where = f"docs/passes.md:{example.line}: `{example.command}`"
    assert "Traceback" not in output, f"{where}:\n{output}"
    assert run.returncode == example.exit_code, f"{where} exited {run.returncode}:\n{output}"
    if example.output is not None:
        check_output(example.output, output, where)


def sections() -> dict[str, str]:
    """`## \\`name\\`` heading -> the text of its section."""
    text = PASSES_MD.read_text()
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    found = {}
    for part in parts:
        heading, _, body = part.partition("\n")
        for name in re.findall(r"`([^`]+)`", heading):
            found[name] = body
    return found


@pytest.mark.parametrize("name", sorted({*PASSES, *PIPELINES, "canonicalize"}))
def test_every_pass_and_pipeline_is_documented(name: str) -> None:
    section = sections().get(name)
    assert section is not None, f"docs/passes.md needs a section headed ## `{name}`"
    commands = [e.command for e in EXAMPLES if f"## `{name}`" in _section_of(e.line)]
    assert any(name in c for c in commands), f"the section of {name} needs an example running it"
    if name in PASSES:
        cls = PASSES[name]()
        for field in dataclasses.fields(cls):
            option = field.name.replace("_", "-")
            assert f"{option}=" in section, (
                f"docs/passes.md: option {option} of {name} is not shown"
            )


def _section_of(line: int) -> str:
    """The `## ` heading line above line `line` of docs/passes.md."""
    lines = PASSES_MD.read_text().splitlines()[:line]
    for text in reversed(lines):
        if text.startswith("## "):
            return text
    return ""


def test_documented_names_are_real() -> None:
    unknown = set(sections()) - {*PASSES, *PIPELINES, "canonicalize"}
    assert not unknown, f"docs/passes.md documents passes that are not registered: {unknown}"
