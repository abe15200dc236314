"""spyre-opt: xdsl-opt with every spyre dialect and pass, and MLIR-style diagnostics.

    spyre-opt FILE [-p PIPELINE] [--split-input-file] [--verify-diagnostics]

Parse and verify errors print `FILE:LINE:COL: error: MESSAGE` on stderr (all of them)
and exit 1. With `--verify-diagnostics` the diagnostics go to stdout instead (as
xdsl-opt does) and, where a chunk carries `// expected-error {{...}}` annotations, they
are checked as mlir-opt checks them: a missing or unexpected error exits 1. Without
annotations anywhere in the file, `--verify-diagnostics` exits 0 and FileCheck reads
the printed diagnostics.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import ArgSpecParseError
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from spyre_ir import registry
from spyre_ir.diagnostics import (
    Diagnostic,
    DiagnosticError,
    LocatedParser,
    check_expectations,
    expected_errors,
    failure_diagnostics,
    parse_error_diagnostic,
    verify_all,
)

_SPLIT = re.compile(rb"^// -----.*$", re.MULTILINE)


class SpyreOptMain(xDSLOptMain):
    version_format = "spyre-opt (spyre-ir) on xdsl {xdsl_version}"

    def register_all_dialects(self) -> None:
        from xdsl.dialects import get_all_dialects

        # Ours last: they replace xDSL's of the same name (linalg, for KTIR's syntax).
        for name, factory in {**get_all_dialects(), **registry.DIALECTS}.items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in registry.PASSES.items():
            self.register_pass(name, factory)

    def read_chunks(self) -> list[tuple[str, int]]:
        """The input, split at `// -----` lines when asked, with each chunk's line offset."""
        name = self.get_input_name()
        try:
            stream, _ = self.get_input_stream()
            with stream:
                data = stream.read()
        except OSError as error:
            raise DiagnosticError([Diagnostic(name, 0, 0, f"cannot read input: {error.strerror}")])
        if not self.args.split_input_file:
            return [(data.decode("utf-8", "replace"), 0)]
        chunks, offset, start = [], 0, 0
        for match in _SPLIT.finditer(data):
            piece = data[start : match.start()]
            chunks.append((piece.decode("utf-8", "replace"), offset))
            offset += piece.count(b"\n")
            start = match.end()
        chunks.append((data[start:].decode("utf-8", "replace"), offset))
        return chunks

    def process_chunk(self, text: str, offset: int, out: IO[str], annotated: bool) -> bool:
        """Parse, verify, transform and print one chunk; False when it failed."""
        name = self.get_input_name()
        diagnostics: list[Diagnostic]
        module: ModuleOp | None = None
        try:
            module = LocatedParser(self.ctx, text, name, offset).parse_module(
                not self.args.no_implicit_module
            )
            diagnostics = verify_all(module, name)
            if not diagnostics:
                self.apply_passes(module)
                diagnostics = verify_all(module, name)
        except ParseError as error:
            diagnostics = [parse_error_diagnostic(error, name, offset)]
        except (DiagnosticError, DiagnosticException) as error:
            # Located errors from passes (`diagnostics.located_error`) and other failures.
            diagnostics = failure_diagnostics(error, module, name)

        if self.args.verify_diagnostics:
            for d in diagnostics:
                print(d, file=out)
            if not annotated:
                return True
            problems = check_expectations(diagnostics, expected_errors(text, offset), name)
            for problem in problems:
                print(problem, file=sys.stderr)
            return not problems
        if diagnostics:
            for d in diagnostics:
                print(d, file=sys.stderr)
            return False
        assert module is not None
        out.write(self.output_resulting_program(module))
        return True

    def run(self) -> None:
        out = self.prepare_output()
        ok = True
        try:
            chunks = self.read_chunks()
            # Annotations anywhere make every chunk's diagnostics checked, as in
            # mlir-opt; without any, diagnostics are only printed, as in xdsl-opt.
            annotated = any(expected_errors(text) for text, _ in chunks)
            for index, (text, offset) in enumerate(chunks):
                if index:
                    out.write("// -----\n")
                ok = self.process_chunk(text, offset, out, annotated) and ok
                out.flush()
        finally:
            if out is not sys.stdout:
                out.close()
        if not ok:
            sys.exit(1)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        SpyreOptMain(args=argv).run()
    except BrokenPipeError:
        # The reader went away (`spyre-opt f.mlir | head`): nothing left to report.
        sys.stderr.close()
        sys.exit(0)
    except ArgSpecParseError as error:
        print(f"spyre-opt: error: bad pass pipeline: {error}", file=sys.stderr)
        sys.exit(1)
    except DiagnosticError as error:
        for d in error.diagnostics:
            print(d, file=sys.stderr)
        sys.exit(1)
    except ValueError as error:
        # Pipeline specs that name unknown passes or give bad options land here.
        print(f"spyre-opt: error: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
