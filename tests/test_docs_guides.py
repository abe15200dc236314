"""README.md and the guides in docs/: links resolve, the quick start is the two commands,
and docs/simulator.md lists every machine-model parameter with its source."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

import pytest

from spyre_ir.hardware import SpyreConfig

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)  # no code blocks
    return {slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("doc", [README, *DOCS], ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path) -> None:
    text = re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.M | re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        assert path.exists(), f"{doc.name}: link to {target}: no such file"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{doc.name}: link to {target}: no such heading"


def test_quick_start_is_make_demo_and_make_test() -> None:
    section = README.read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def test_readme_links_every_guide_and_the_op_table() -> None:
    text = README.read_text()
    for doc in DOCS:
        assert f"(docs/{doc.name}" in text, f"README.md does not link docs/{doc.name}"
    assert "docs/frontend.md#supported-aten-ops" in text


def _field_docs() -> dict[str, str]:
    """SpyreConfig field -> its docstring, read from hardware.py's source."""
    tree = ast.parse((ROOT / "spyre_ir" / "hardware.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SpyreConfig")
    docs = {}
    for node, after in zip(cls.body, cls.body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(after, ast.Expr):
            docs[node.target.id] = after.value.value
    return docs


def test_simulator_md_lists_every_parameter_with_its_source() -> None:
    # the "Parameters" section (the report, further down, has fields of the same names)
    text = (
        (ROOT / "docs" / "simulator.md")
        .read_text()
        .split("## Parameters", 1)[1]
        .split("\n## ", 1)[0]
    )
    docs = _field_docs()
    for f in fields(SpyreConfig):
        rows = [line for line in text.splitlines() if line.startswith(f"| `{f.name}` |")]
        assert len(rows) == 1, f"docs/simulator.md needs one table row for SpyreConfig.{f.name}"
        assumed = "MODEL ASSUMPTION" in docs[f.name]
        says_assumed = "model assumption" in rows[0].lower()
        assert assumed == says_assumed, (
            f"SpyreConfig.{f.name}: hardware.py {'marks' if assumed else 'does not mark'} it a "
            f"model assumption, docs/simulator.md {'does' if says_assumed else 'does not'}"
        )


def test_architecture_levels_show_the_pipelines_in_order() -> None:
    from spyre_ir.pipelines import PIPELINES

    text = (ROOT / "docs" / "architecture.md").read_text()
    diagram = text.split("## The levels", 1)[1].split("```", 2)[1]
    for pipeline in ("spyre-to-dataflow", "spyre-to-units", "spyre-compile"):
        assert pipeline in diagram, pipeline
    at = diagram.index("pipeline spyre-to-dataflow:")
    for name in PIPELINES["spyre-to-dataflow"]:
        found = diagram.find(name, at)
        assert found > 0, f"docs/architecture.md: the levels diagram misses {name} (or its order)"
        at = found + len(name)
