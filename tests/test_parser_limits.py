"""The parser's work is bounded on any input: xDSL's string lexer is linear (an
unterminated string used to take exponential time) and bracket nesting has a limit
with a located error instead of a RecursionError."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from spyre_ir.diagnostics import MAX_NESTING, DiagnosticError, parse_and_verify
from spyre_ir.registry import make_context
from spyre_ir.xdsl_fixes import STRING_LITERAL

# xDSL 0.74's regex, kept here to check that the fix accepts the same strings.
XDSL_STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


@pytest.mark.parametrize(
    "text",
    ['""', '"abc"', r'"a\"b"', r'"\n\t\\"', r'"\ff\00x"', r'"\q"', '"a\nb"', '"abc', r'"a\"',
     '"x" tail', r'"\1"', '"\u00e9t\u00e9"'],
)  # fmt: skip
def test_string_regex_accepts_what_xdsl_accepts(text):
    ours, theirs = STRING_LITERAL.match(text), XDSL_STRING_LITERAL.match(text)
    assert (ours and ours.group()) == (theirs and theirs.group())


def test_patch_is_applied_on_import():
    from xdsl.utils.mlir_lexer import MLIRLexer

    import spyre_ir  # noqa: F401

    assert MLIRLexer._unescaped_characters_regex is STRING_LITERAL


UNTERMINATED = 'func.func @main() {\n  "func.return"() {note = "' + "a" * 10_000 + "\n}\n"


def test_unterminated_string_of_10k_characters_is_a_located_error(tmp_path):
    path = tmp_path / "unterminated.mlir"
    path.write_text(UNTERMINATED)
    # Before the fix this ran for longer than the age of the universe; the timeout
    # bounds it (a hang fails the test), it does not measure speed.
    done = subprocess.run(
        [sys.executable, "-m", "spyre_ir.tools.spyre_opt", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"{path}:2:27: error: End of file reached before closing string literal.\n"
    )


def _nested(depth: int) -> str:
    return (
        'func.func @main() {\n  "func.return"() {a = ' + "[" * depth + "]" * depth
        + "} : () -> ()\n}\n"
    )  # fmt: skip


def test_200_nested_brackets_are_a_located_error():
    with pytest.raises(DiagnosticError) as error:
        parse_and_verify(make_context(), _nested(200), "nested.mlir")
    # Two braces enclose the brackets (the function body's, the attribute dict's): the
    # error is at bracket MAX_NESTING - 1.
    column = len('  "func.return"() {a = ') + MAX_NESTING - 1
    assert str(error.value) == (
        f"nested.mlir:2:{column}: error: brackets nested deeper than {MAX_NESTING} levels"
    )


def test_nesting_up_to_the_limit_parses():
    module = parse_and_verify(make_context(), _nested(MAX_NESTING - 2), "nested.mlir")
    assert len(list(module.walk())) == 3


def test_brackets_in_strings_comments_and_arrows_do_not_count():
    text = (
        "// " + "[" * 100 + "\n"
        'func.func @main() {\n  "func.return"() {a = "' + "(" * 100 + '"} : () -> ()\n}\n'
    )
    module = parse_and_verify(make_context(), text, "strings.mlir")
    assert len(list(module.walk())) == 3
