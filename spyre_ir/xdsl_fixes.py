"""Fixes to xDSL 0.74 that every spyre-ir entry point needs, applied once on import.

* The MLIR lexer's string-literal regex,
  `"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"`, nests `+` inside `*`: on a
  string with no closing quote the regex engine tries every way of splitting the run
  of characters, and time triples every two characters (a 40-character unterminated
  string takes minutes). The same language with one character per repetition has a
  single way to match each prefix, so a failing match is linear in the input.
* An op's declarative assembly format is parsed when the op is used to parse or
  print, not when its class is defined: `irdl_op_definition` parses the format of
  each of the ~400 ops of the dialects spyre-run loads (about a tenth of its start-up),
  though a run parses and prints a few dozen of them. A malformed format raises the
  same `PyRDLOpDefinitionError` on the op's first parse or print; `lazy_formats()`
  lists the programs so that a test parses every one (tests/test_xdsl_fixes.py).
* IR objects (ops, blocks, regions, SSA values, uses) hash and compare by identity in
  Python methods (`return id(self)`, `return self is other`), so every dict or set
  lookup keyed by one calls into the interpreter twice; the simulator's environment
  (values by SSA value, facts by op) does ~100 K such lookups on a layernorm kernel.
  object's own `__hash__` and `__eq__` are the same identity, in C.
* `arith.remui` and `arith.extsi` have no traits (every other arith op has `Pure` or
  `NoMemoryEffect`), so `is_side_effect_free` says False for them: spyre-double-buffer
  stopped at the first `remui` of a tile's address arithmetic (a rows kernel with outer
  row dims, its tile's place split over them by `remui`, was never double-buffered),
  and an unused `extsi` of a KTIR kernel was never removed. Both read and write
  nothing, as MLIR's (`NoMemoryEffect`).
"""

from __future__ import annotations

import re

from xdsl.dialects import arith as _arith
from xdsl.ir import core as _core
from xdsl.irdl import declarative_assembly_format as _daf
from xdsl.irdl.operations import IRDLOperation
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import ParseError, PyRDLOpDefinitionError
from xdsl.utils.mlir_lexer import MLIRLexer

STRING_LITERAL = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')

_EAGER_FROM_STR = _daf.FormatProgram.from_str
_LAZY: list[LazyFormatProgram] = []


class LazyFormatProgram:
    """An op's `FormatProgram`, parsed from its text on the first parse or print (what
    `irdl_op_definition` uses of it: `parse` and `print`)."""

    __slots__ = ("text", "op_def", "_program")

    def __init__(self, text: str, op_def: object):
        self.text, self.op_def = text, op_def
        self._program: _daf.FormatProgram | None = None

    def program(self) -> _daf.FormatProgram:
        if self._program is None:
            try:
                self._program = _EAGER_FROM_STR(self.text, self.op_def)
            except ParseError as e:  # as irdl_op_definition reports it
                raise PyRDLOpDefinitionError(
                    "Error during the parsing of the assembly format: ", e.args
                ) from e
        return self._program

    def parse(self, parser, op_type):
        return self.program().parse(parser, op_type)

    def print(self, printer, op) -> None:
        return self.program().print(printer, op)


def _lazy_from_str(text: str, op_def: object) -> LazyFormatProgram:
    program = LazyFormatProgram(text, op_def)
    _LAZY.append(program)
    return program


def lazy_formats() -> list[LazyFormatProgram]:
    """Every format program defined since `apply` (parsed or not)."""
    return list(_LAZY)


# The classes whose Python `__hash__` / `__eq__` are identity (xDSL 0.74; arith's binary
# ops repeat it too, left alone: their module is not loaded by every entry point).
IDENTITY_CLASSES = (_core.SSAValue, _core.Use, _core._IRNode, IRDLOperation)


def apply() -> None:
    for cls in IDENTITY_CLASSES:
        for name in ("__hash__", "__eq__"):
            if name in vars(cls):
                setattr(cls, name, getattr(object, name))
    MLIRLexer._unescaped_characters_regex = STRING_LITERAL  # type: ignore[misc]
    _daf.FormatProgram.from_str = staticmethod(_lazy_from_str)  # type: ignore[method-assign]
    for op in (_arith.RemUIOp, _arith.ExtSIOp):
        if not op.has_trait(NoMemoryEffect):
            op.traits.add_trait(NoMemoryEffect())
