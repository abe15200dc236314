"""MLIR-style diagnostics: located parsing, verification that reports every error,
and checking of `// expected-error` annotations.

A user's mistake in an .mlir file ends as `FILE:LINE:COL: error: MESSAGE` lines and a
non-zero exit, never as a Python traceback.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError


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

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            before = bisect.bisect_left(self._newlines, span.start)  # newlines before the op
            line_start = self._newlines[before - 1] + 1 if before else 0
            op.location = FileLineColLoc(
                StringAttr(span.input.name),
                IntAttr(before + 1 + span.line_offset + self._line_offset),
                IntAttr(span.start - line_start + 1),
            )
        return op


_LOCATED = re.compile(r"^(\S+?):(\d+):(\d+): (?:error: )?(.*)$", re.DOTALL)


def failure_diagnostics(
    error: Exception, module: Operation | None, name: str
) -> list[Diagnostic]:
    """A pass's failure as located diagnostics, for every tool that runs passes.

    A `DiagnosticError` (`located_error`) keeps its locations (one without a file is
    reported against `name` at 0:0); another `DiagnosticException` is located by the
    `FILE:LINE:COL:` its message starts with, else by re-verifying the module, else at
    `name` 0:0."""
    if isinstance(error, DiagnosticError):
        return [
            d if d.file else Diagnostic(name, 0, 0, d.message, d.severity)
            for d in error.diagnostics
        ]
    message = " ".join(str(error).split())
    stated = _LOCATED.match(message)
    if stated:
        file, line, col, text = stated.groups()
        return [Diagnostic(file, int(line), int(col), text)]
    located = verify_all(module, name) if module is not None else []
    return located or [Diagnostic(name, 0, 0, message)]


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
    `FILE:LINE:COL: error: MESSAGE` (an op without a file location is reported against
    the input file at 0:0), and `str()` of it is that same line for Python callers."""
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


def verify_all(module: Operation, name: str) -> list[Diagnostic]:
    """Verify each op on its own so that every broken op is reported, not the first."""
    found: list[Diagnostic] = []
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (DiagnosticException, ValueError) as error:
            file, line, col = op_location(op, name)
            found.append(Diagnostic(file, line, col, _first_line(str(error))))
    return found


def parse_and_verify(
    ctx: Context, text: str, name: str, line_offset: int = 0
) -> ModuleOp:
    """Parse a module and verify all of it; raises `DiagnosticError` on any problem."""
    try:
        module = LocatedParser(ctx, text, name, line_offset).parse_module()
    except ParseError as error:
        raise DiagnosticError([parse_error_diagnostic(error, name, line_offset)]) from None
    problems = verify_all(module, name)
    if problems:
        raise DiagnosticError(problems)
    return module


def parse_file(ctx: Context, path: str) -> ModuleOp:
    """Read, parse and verify an .mlir file; errors are located DiagnosticErrors."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
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


def expected_errors(text: str, line_offset: int = 0) -> list[Expectation]:
    """The `// expected-error @+N {{text}}` annotations of a chunk, as MLIR writes them."""
    found = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        for match in _EXPECTED.finditer(line):
            if match.group(1) != "error":
                continue
            target = index + 1
            where = match.group(2)
            if where == "@above":
                target -= 1
            elif where == "@below":
                target += 1
            elif where:
                target += int(where[1:])
            found.append(Expectation(target + line_offset, match.group(3).strip()))
    return found


def check_expectations(
    produced: list[Diagnostic], expected: list[Expectation], name: str
) -> list[str]:
    """Mismatches between the diagnostics produced and the annotations, as messages."""
    problems = []
    unmatched = list(produced)
    for want in expected:
        hit = next(
            (d for d in unmatched if d.line == want.line and want.text in d.message), None
        )
        if hit is None:
            problems.append(
                f"{name}:{want.line}: error: expected error \"{want.text}\" was not produced"
            )
        else:
            unmatched.remove(hit)
    for extra in unmatched:
        problems.append(f"{extra} (unexpected error)")
    return problems
