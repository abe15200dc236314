"""Fixes to xDSL 0.74 that every spyre-ir entry point needs, applied once on import.

* The MLIR lexer's string-literal regex,
  `"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"`, nests `+` inside `*`: on a
  string with no closing quote the regex engine tries every way of splitting the run
  of characters, and time triples every two characters (a 40-character unterminated
  string takes minutes). The same language with one character per repetition has a
  single way to match each prefix, so a failing match is linear in the input.
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


def apply() -> None:
    MLIRLexer._unescaped_characters_regex = STRING_LITERAL  # type: ignore[misc]
