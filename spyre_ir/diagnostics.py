"""MLIR-style diagnostics: located parsing, verification that reports every error,
and checking of `// expected-error` annotations.

A user's mistake in an .mlir file ends as `FILE:LINE:COL: error: MESSAGE` lines and a
non-zero exit, never as a Python traceback.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import stat
import struct
import sys
import traceback
from dataclasses import dataclass
from typing import BinaryIO

from xdsl.context import Context
from xdsl.dialects.builtin import (
    FileLineColLoc,
    FunctionType,
    IntAttr,
    ModuleOp,
    ShapedType,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue, TypeAttribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.lexer import Input, Span
from xdsl.utils.mlir_lexer import MLIRTokenKind


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    column: int
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        if not self.file:
            # No location known (an op built in Python, not parsed): say so by omission.
            return f"{self.severity}: {self.message}"
        if self.line <= 0:
            # A file but no position in it (it cannot be read, say): never `FILE:0:0`.
            return f"{self.file}: {self.severity}: {self.message}"
        return f"{self.file}:{self.line}:{self.column}: {self.severity}: {self.message}"


class DiagnosticError(Exception):
    """One or more located errors in user input."""

    def __init__(self, diagnostics: list[Diagnostic]):
        super().__init__("\n".join(map(str, diagnostics)))
        self.diagnostics = diagnostics


class LocatedParser(Parser):
    """A parser that stamps `file:line:col` on every op it reads, so verifier errors
    point back into the source."""

    def __init__(self, ctx: Context, text: str, name: str, line_offset: int = 0):
        super().__init__(ctx, text, name)
        self._line_offset = line_offset
        # Offsets of the newlines: Span.get_location counts them from the start of the
        # text for every op, quadratic in the size of a large artifact.
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self._types: dict[str, TypeAttribute] = {}

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        check_nesting(self.lexer.input.content, self.lexer.input)
        module = super().parse_module(allow_implicit_module)
        if not isinstance(module.location, FileLineColLoc):
            # An implicit module starts where the text does: errors about the module as
            # a whole (no @main, say) point at its first line, not at 0:0.
            module.location = FileLineColLoc(
                StringAttr(self.lexer.input.name), IntAttr(1 + self._line_offset), IntAttr(1)
            )
        return module

    def parse_optional_type(self) -> TypeAttribute | None:
        """A type; the text of a parametrized type (`tensor<64x128xf16>`) seen before
        gives the type parsed then. Types are immutable values and a long graph spells
        the same few thousands of times: parsing them was most of reading it (issue 18:
        compile time)."""
        token = self._current_token
        kind = token.kind
        if kind is not MLIRTokenKind.EXCLAMATION_IDENT and not (
            kind is MLIRTokenKind.BARE_IDENT and token.text in _SHAPED
        ):
            return super().parse_optional_type()
        content = self.lexer.input.content
        end = _angle_end(content, token.span.end)
        if end is None:
            return super().parse_optional_type()
        key = content[token.span.start : end]
        known = self._types.get(key)
        if known is not None:
            self.lexer.pos = end
            self._parser_state.current_token = self.lexer.lex()
            return known
        parsed = super().parse_optional_type()
        # Kept only when the type was exactly that text (nothing but blanks after it).
        if parsed is not None and not content[end : self.pos].strip():
            self._types[key] = parsed
        return parsed

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        try:
            op = super().parse_operation()
        except ParseError:
            raise
        except DiagnosticException as error:
            # A constraint checked while parsing (a property of the wrong type in custom
            # syntax): a parse error at the op, not an unlocated exception.
            raise ParseError(span, _first_line(str(error))) from None
        except (ArithmeticError, ValueError, struct.error) as error:
            # A literal its type cannot hold (`1.0e+38 : f16`, an array element past 64
            # bits), found while packing it.
            raise ParseError(span, f"a value out of range for its type: {error}") from None
        if not isinstance(op.location, FileLineColLoc):
            before = bisect.bisect_left(self._newlines, span.start)  # newlines before the op
            line_start = self._newlines[before - 1] + 1 if before else 0
            op.location = FileLineColLoc(
                StringAttr(span.input.name),
                IntAttr(before + 1 + span.line_offset + self._line_offset),
                IntAttr(span.start - line_start + 1),
            )
        return op


_SHAPED = frozenset(("tensor", "memref", "vector"))


def _angle_end(text: str, start: int, longest: int = 4096) -> int | None:
    """The end of the `<...>` that opens at `start`, if it is plain (no string, no `->`,
    not longer than `longest`); None otherwise."""
    if text[start : start + 1] != "<":
        return None
    depth = 0
    for i in range(start, min(len(text), start + longest)):
        c = text[i]
        if c == "<":
            depth += 1
        elif c == ">":
            if text[i - 1] == "-":
                return None
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == '"':
            return None
    return None


# Brackets nested deeper than this are refused before parsing: xDSL's parser recurses
# once or more per level and would end in a RecursionError. Real IR nests a few levels
# (regions in regions, `dense<[[...]]>` of a tensor's rank).
MAX_NESTING = 64
_OPENING = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSING = set(_OPENING.values())


def check_nesting(text: str, source: Input) -> None:
    """A ParseError at the first bracket nested deeper than MAX_NESTING.

    One linear scan: strings (to their closing quote or the end of their line) and
    `//` comments are skipped, `->` is an arrow, and a closing bracket pops the stack
    only when it matches its top."""
    stack: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            end = _STRING_END.search(text, i + 1)
            i = end.end() if end else n
            continue
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if c == "-" and text.startswith("->", i):
            i += 2
            continue
        if c in _OPENING:
            stack.append(_OPENING[c])
            if len(stack) > MAX_NESTING:
                raise ParseError(
                    Span(i, i + 1, source),
                    f"brackets nested deeper than {MAX_NESTING} levels",
                )
        elif c in _CLOSING and stack and stack[-1] == c:
            stack.pop()
        i += 1


# The end of a string literal: an unescaped quote, or the end of the line.
_STRING_END = re.compile(r'(?:[^"\\\n]|\\.)*(?:"|\n|$)')


_LOCATED = re.compile(r"^(\S+?):(\d+):(\d+): (?:error: )?(.*)$", re.DOTALL)


def failure_diagnostics(error: Exception, module: Operation | None, name: str) -> list[Diagnostic]:
    """A pass's failure as located diagnostics, for every tool that runs passes.

    A `DiagnosticError` (`located_error`) keeps its locations (one without a file is
    reported at the module, or against `name` without a position); another
    `DiagnosticException` is located by the `FILE:LINE:COL:` its message starts with,
    else by re-verifying the module, else at the module."""
    where = op_location(module, name) if module is not None else (name, 0, 0)
    if isinstance(error, DiagnosticError):
        return [
            d if d.file else Diagnostic(*where, d.message, d.severity) for d in error.diagnostics
        ]
    message = " ".join(str(error).split())
    stated = _LOCATED.match(message)
    if stated:
        file, line, col, text = stated.groups()
        return [Diagnostic(file, int(line), int(col), text)]
    located = verify_all(module, name) if module is not None else []
    return located or [Diagnostic(*where, message)]


def parse_error_diagnostic(error: ParseError, name: str, line_offset: int = 0) -> Diagnostic:
    where = error.span.get_location()
    return Diagnostic(name, where.line + line_offset, where.col, " ".join(error.msg.split()))


def op_location(op: Operation, fallback: str) -> tuple[str, int, int]:
    """Where `op` came from; ops a pass created report their nearest located ancestor."""
    current: Operation | None = op
    while current is not None:
        loc = current.location
        if isinstance(loc, FileLineColLoc):
            return loc.filename.data, loc.line.data, loc.column.data
        current = current.parent_op()
    return fallback, 0, 0


def located_error(op: Operation, message: str) -> DiagnosticError:
    """A pass failure about `op`, located at `op`'s source position when it has one.

    Passes raise it (`raise located_error(kernel, "...")`); spyre-opt prints it as
    `FILE:LINE:COL: error: MESSAGE` (an op without a file location is reported at the
    module), and `str()` of it is that same line for Python callers."""
    file, line, col = op_location(op, "")
    return DiagnosticError([Diagnostic(file, line, col, message)])


def _first_line(message: str) -> str:
    lines = message.strip().splitlines()
    if not lines:
        return message
    first = lines[0]
    # IRDL constraint errors put their cause on the next line ("operand 'x' at position
    # 0 does not verify:\nf32 should be of base attribute tensor"): keep it.
    if first.rstrip().endswith(":") and len(lines) > 1:
        first = f"{first} {lines[1]}"
    return " ".join(first.split())


INT64_MAX = 2**63 - 1


def type_problem(t: Attribute) -> str | None:
    """Why a shaped type cannot describe data (a dim past 64 bits, more than 2**63
    bytes), or None. Dynamic dims (negative) are the dialects' to judge."""
    if not isinstance(t, ShapedType):
        return None
    shape = t.get_shape()
    for d in shape:
        if d > INT64_MAX:
            return f"dimension {d} of {t} does not fit in a signed 64-bit size"
    if min(shape, default=0) >= 0 and math.prod(shape) * 8 > INT64_MAX:
        return f"{t} holds {math.prod(shape)} elements: more than 2**63 bytes"
    return None


def _types_of(op: Operation) -> list[Attribute]:
    types = [r.type for r in op.results]
    for region in op.regions:
        for block in region.blocks:
            types.extend(a.type for a in block.args)
    signature = op.properties.get("function_type")
    if isinstance(signature, FunctionType):
        types.extend([*signature.inputs.data, *signature.outputs.data])
    return types


def verify_all(module: Operation, name: str) -> list[Diagnostic]:
    """Verify each op on its own so that every broken op is reported, not the first;
    the types it defines must also describe data that can exist (`type_problem`)."""
    found: list[Diagnostic] = []
    broken: set[Operation] = set()
    for op in module.walk():
        problem = next(filter(None, map(type_problem, _types_of(op))), None)
        problem = problem or _card_problem(op)
        if problem:
            file, line, col = op_location(op, name)
            found.append(Diagnostic(file, line, col, f"'{op.name}': {problem}"))
            broken.add(op)
            continue
        try:
            op.verify(verify_nested_ops=False)
        except (DiagnosticException, ValueError) as error:
            file, line, col = op_location(op, name)
            found.append(Diagnostic(file, line, col, _first_line(str(error))))
            broken.add(op)
        except Exception as error:  # a verifier's bug, provoked by this op
            broken.add(op)
            if _inside(op, broken):
                # A verifier reading a parent already reported as broken (func.return
                # and a function_type that is no function type): that error says it.
                continue
            file, line, col = op_location(op, name)
            found.append(
                Diagnostic(file, line, col, f"'{op.name}': {internal_error(error, name).message}")
            )
    return found


def _card_problem(op: Operation) -> str | None:
    """What is wrong with `op`'s `spyre.card` attribute (the card a module targets:
    fields of the right kinds and values a card can have), or None."""
    from spyre_ir.hardware import CARD_ATTR, card_from_attr

    attr = op.attributes.get(CARD_ATTR)
    if attr is None:
        return None
    try:
        card_from_attr(attr)
    except ValueError as error:
        return str(error)
    return None


def compat_warnings(module: Operation, name: str) -> list[Diagnostic]:
    """Located warnings for input the specification rejects and we run as IBM's own
    interpreter does (an op's `compat_warnings()` messages, e.g. ktdp_intertile's)."""
    found = []
    for op in module.walk():
        notes = getattr(op, "compat_warnings", None)
        for message in notes() if notes is not None else ():
            file, line, col = op_location(op, name)
            found.append(Diagnostic(file, line, col, message, "warning"))
    return found


def print_warnings(module: Operation, name: str) -> None:
    for warning in compat_warnings(module, name):
        print(warning, file=sys.stderr)


def _inside(op: Operation, ops: set[Operation]) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent in ops:
            return True
        parent = parent.parent_op()
    return False


def parse_and_verify(ctx: Context, text: str, name: str, line_offset: int = 0) -> ModuleOp:
    """Parse a module and verify all of it; raises `DiagnosticError` on any problem."""
    try:
        module = LocatedParser(ctx, text, name, line_offset).parse_module()
    except ParseError as error:
        raise DiagnosticError([parse_error_diagnostic(error, name, line_offset)]) from None
    problems = verify_all(module, name)
    if problems:
        raise DiagnosticError(problems)
    print_warnings(module, name)
    return module


class NotRegularFile(OSError):
    """A path that names a FIFO, a device or a directory where a file is read."""


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`path` opened for reading in binary, only if it is a regular file (after
    symlinks): a FIFO would block forever and /dev/zero never ends. The check is made
    on the opened descriptor (O_NONBLOCK, so opening a FIFO does not wait either)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise NotRegularFile(f"{kind} (a FIFO, device or directory is never read)")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def parse_file(ctx: Context, path: str) -> ModuleOp:
    """Read, parse and verify an .mlir file; errors are located DiagnosticErrors."""
    try:
        with open_regular(path) as f:
            text = f.read().decode("utf-8")
    except NotRegularFile as error:
        raise DiagnosticError([Diagnostic(path, 0, 0, f"cannot read file: {error}")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise DiagnosticError([Diagnostic(path, 0, 0, f"cannot read file: {error}")]) from None
    return parse_and_verify(ctx, text, path)


# ------------------------------------------------------------ expected-error checking

_EXPECTED = re.compile(
    r"//\s*expected-(error|warning|note)\s*(@(?:[+-]\d+|above|below))?\s*\{\{(.*?)\}\}"
)


@dataclass(frozen=True)
class Expectation:
    line: int
    text: str
    severity: str = "error"


def expected_errors(text: str, line_offset: int = 0) -> list[Expectation]:
    """The `// expected-error @+N {{text}}` (and `expected-warning`) annotations of a
    chunk, as MLIR writes them."""
    found = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        for match in _EXPECTED.finditer(line):
            if match.group(1) == "note":
                continue
            target = index + 1
            where = match.group(2)
            if where == "@above":
                target -= 1
            elif where == "@below":
                target += 1
            elif where:
                target += int(where[1:])
            found.append(Expectation(target + line_offset, match.group(3).strip(), match.group(1)))
    return found


def check_expectations(
    produced: list[Diagnostic], expected: list[Expectation], name: str
) -> list[str]:
    """Mismatches between the diagnostics produced and the annotations, as messages."""
    problems = []
    unmatched = list(produced)
    for want in expected:
        hit = next(
            (
                d
                for d in unmatched
                if d.line == want.line and d.severity == want.severity and want.text in d.message
            ),
            None,
        )
        if hit is None:
            problems.append(
                f'{name}:{want.line}: error: expected {want.severity} "{want.text}" was not '
                "produced"
            )
        else:
            unmatched.remove(hit)
    for extra in unmatched:
        problems.append(f"{extra} (unexpected {extra.severity})")
    return problems


# ------------------------------------------------------------ the tools' catch-all


def _located_op_in(frame_locals: dict[str, object], modules: bool) -> tuple[str, int, int] | None:
    """The location of an op (or a value's owner) among a frame's locals; a module
    only with `modules` (an op inside it says more)."""
    for value in frame_locals.values():
        if isinstance(value, SSAValue):
            value = value.owner
        if isinstance(value, Operation) and (modules or not isinstance(value, ModuleOp)):
            file, line, col = op_location(value, "")
            if file and line > 0:
                return file, line, col
    return None


def internal_error(error: BaseException, name: str, line: int = 1) -> Diagnostic:
    """An exception no check caught, as one located diagnostic, never a traceback.

    It is located at the op the innermost failing code was working on (the first
    located op among the locals of the traceback's frames, innermost first), else at
    `name`:`line`. The message says it is an internal error: a bug to report, though
    the input is usually what provoked it. SPYRE_IR_TRACEBACK=1 also prints the
    traceback on stderr, for whoever fixes the bug."""
    if os.environ.get("SPYRE_IR_TRACEBACK"):
        traceback.print_exception(error)
    where: tuple[str, int, int] | None = None
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for modules in (False, True):
        for frame in reversed(frames):
            where = _located_op_in(frame.f_locals, modules)
            if where is not None:
                break
        if where is not None:
            break
    file, line, col = where or (name, line, 1)
    if isinstance(error, RecursionError):
        text = "the input is nested too deeply to process"
    elif isinstance(error, MemoryError):
        text = "out of memory (a tensor too large for this machine?)"
    else:
        detail = " ".join(str(error).split())[:500]
        text = f"{type(error).__name__}{': ' + detail if detail else ''}"
    return Diagnostic(file, line, col, f"internal error: {text} (please report this bug)")
