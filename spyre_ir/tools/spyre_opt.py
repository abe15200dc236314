"""spyre-opt: xdsl-opt with every spyre dialect and pass, and MLIR-style diagnostics.

    spyre-opt FILE [-p PIPELINE] [--split-input-file] [--verify-diagnostics]

Parse and verify errors print `FILE:LINE:COL: error: MESSAGE` on stderr (all of them)
and exit 1. With `--verify-diagnostics` the diagnostics go to stdout instead (as
xdsl-opt does) and, where a chunk carries `// expected-error {{...}}` annotations, they
are checked as mlir-opt checks them: a missing or unexpected error exits 1. Without
annotations anywhere in the file, `--verify-diagnostics` exits 0 and FileCheck reads
the printed diagnostics.

`-o OUT` is written atomically once every chunk has succeeded (so `-o` may name the
input, and a failed run leaves an existing OUT as it was); pass options are
range-checked (`cores` within the card, `lx-bytes` within a core's LX, every integer
within 64 bits); any other exception is caught here and printed as one located
`internal error` line, exit 1, never a traceback (SPYRE_IR_TRACEBACK=1 prints it too).
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import ArgSpecParseError
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from spyre_ir import registry
from spyre_ir.diagnostics import (
    Diagnostic,
    DiagnosticError,
    LocatedParser,
    check_expectations,
    compat_warnings,
    expected_errors,
    failure_diagnostics,
    internal_error,
    parse_error_diagnostic,
    verify_all,
)
from spyre_ir.hardware import read_card, set_card
from spyre_ir.runtime.artifact import gc_paused
from spyre_ir.tools.output import (
    OutputError,
    check_writable,
    discard,
    write_atomically,
    write_stream,
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

    def register_all_arguments(self, arg_parser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--card", metavar="FILE.json", default=None,
            help="compile for this card: a JSON object of SpyreConfig fields that differ "
            "from the default card (recorded on the module as spyre.card)",
        )  # fmt: skip

    def card(self):
        """The card of `--card` (read once), or None."""
        if self.args.card is None:
            return None
        if not hasattr(self, "_card"):
            self._card = read_card(self.args.card)
        return self._card

    def setup_pipeline(self) -> None:
        try:
            super().setup_pipeline()
        except ValueError as error:
            raise ValueError(
                option_type_error(self.available_passes, self.args.passes, error)
            ) from None
        for p in self.pipeline.passes:
            registry.check_pass_options(p)
        # xDSL's callback verifies the whole module before the first pass and after the
        # last as well as between passes; process_chunk verifies it at both ends anyway
        # (verify_all, with located diagnostics), so the ends are skipped: a long graph
        # is not verified twice over (issue 18: compile time).
        between = self.pipeline.callback
        if between is not None and not self.args.time_passes:
            self.pipeline = PassPipeline(
                self.pipeline.passes,
                lambda prev, module, nxt: between(prev, module, nxt) if prev and nxt else None,
            )

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The module's text; after a pipeline that ends by sealing an artifact, printed
        with the default options, the text the sealing printed (the same text, and
        printing a long artifact costs a fifth of its compile: issue 18)."""
        sealed = self.sealed_output(prog)
        return super().output_resulting_program(prog) if sealed is None else sealed

    def sealed_output(self, prog: ModuleOp) -> str | None:
        from spyre_ir.lowering.units_to_recipe import ConvertUnitsToRecipe, sealed_text
        from spyre_ir.pipelines import SpyreCompile

        args = self.args
        plain = args.target == "mlir" and not (
            args.print_op_generic or args.print_no_properties or args.print_debuginfo
            or args.syntax_highlight
        )  # fmt: skip
        passes = self.pipeline.passes
        if (
            not plain
            or not passes
            or not isinstance(passes[-1], SpyreCompile | ConvertUnitsToRecipe)
        ):
            return None
        text = sealed_text(prog)
        if text is None:
            return None
        metadata = io.StringIO()
        Printer(stream=metadata).print_metadata(self.ctx.loaded_dialects)
        # As xDSL's MLIR target ends it: the module, its dialects' metadata, a blank line.
        return text.rstrip("\n") + metadata.getvalue() + "\n\n"

    def read_chunks(self) -> list[tuple[str, int]]:
        """The input, split at `// -----` lines when asked, with each chunk's line offset."""
        name = self.get_input_name()
        try:
            if self.args.input_file is not None:
                mode = os.stat(self.args.input_file).st_mode
                if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero would never end
                    raise DiagnosticError([Diagnostic(name, 0, 0, "cannot read input: a device")])
            stream, _ = self.get_input_stream()
            with stream:
                data = stream.read()
        except OSError as error:
            why = error.strerror or str(error)
            raise DiagnosticError([Diagnostic(name, 0, 0, f"cannot read input: {why}")]) from None
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
        warnings: list[Diagnostic] = []
        module: ModuleOp | None = None
        try:
            module = LocatedParser(self.ctx, text, name, offset).parse_module(
                not self.args.no_implicit_module
            )
            diagnostics = verify_all(module, name)
            if not diagnostics:
                warnings = compat_warnings(module, name)
                if self.card() is not None:
                    set_card(module, self.card())
                self.apply_passes(module)
                diagnostics = verify_all(module, name)
        except ParseError as error:
            diagnostics = [parse_error_diagnostic(error, name, offset)]
        except (DiagnosticError, DiagnosticException) as error:
            # Located errors from passes (`diagnostics.located_error`) and other failures.
            diagnostics = failure_diagnostics(error, module, name)

        if self.args.verify_diagnostics:
            diagnostics = warnings + diagnostics
            for d in diagnostics:
                print(d, file=out)
            if not annotated:
                return True
            problems = check_expectations(diagnostics, expected_errors(text, offset), name)
            for problem in problems:
                print(problem, file=sys.stderr)
            return not problems
        for d in warnings:  # the input's, before its errors or its output
            print(d, file=sys.stderr)
        if diagnostics:
            for d in diagnostics:
                print(d, file=sys.stderr)
            return False
        assert module is not None
        out.write(self.output_resulting_program(module))
        return True

    def run(self) -> None:
        """Process every chunk; stdout gets each chunk's output as it is made, a file
        named by `-o` gets all of it at once, only if every chunk succeeded."""
        to_file = self.args.output_file is not None
        if to_file:
            check_writable(self.args.output_file)
        out: IO[str] = io.StringIO() if to_file else sys.stdout
        chunks = self.read_chunks()
        # Annotations anywhere make every chunk's diagnostics checked, as in
        # mlir-opt; without any, diagnostics are only printed, as in xdsl-opt.
        annotated = any(expected_errors(text) for text, _ in chunks)
        ok = True
        for index, (text, offset) in enumerate(chunks):
            chunk_out = io.StringIO()
            if index:
                chunk_out.write("// -----\n")
            try:
                ok = self.process_chunk(text, offset, chunk_out, annotated) and ok
            except DIAGNOSED:
                raise
            except Exception as error:  # the catch-all: located, never a traceback
                print(internal_error(error, self.get_input_name(), offset + 1), file=sys.stderr)
                ok = False
            write_stream(out, chunk_out.getvalue())
        if to_file and ok:
            assert isinstance(out, io.StringIO)
            write_atomically(self.args.output_file, out.getvalue())
        if not ok:
            sys.exit(1)


def option_type_error(available: dict, spec_text: str, error: ValueError) -> str:
    """xDSL's message for a pass option of the wrong type ("Incompatible types: given
    ('abc',), expected <class 'int'>") as one naming the pass, the option and the kind
    of value it takes; any other message as it is."""
    from typing import get_type_hints

    from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

    if not str(error).startswith("Incompatible types"):
        return str(error)
    for spec in parse_pipeline(spec_text):
        if spec.name not in available:
            continue
        cls = available[spec.name]()
        hints = get_type_hints(cls)
        for option, values in spec.normalize_parameter_names().parameters.items():
            try:
                cls.from_pass_spec(ArgSpec(spec.name, {option: values}))
            except ValueError as single:
                if str(single).startswith("Incompatible types") and option in hints:
                    given = ",".join(str(v) for v in values)
                    kind = _KINDS.get(str(hints[option]), str(hints[option]))
                    return f"{spec.name}: option {option.replace('_', '-')}={given} is not {kind}"
    return str(error)


_KINDS = {
    "<class 'int'>": "an integer",
    "int | None": "an integer",
    "<class 'bool'>": "true or false",
    "bool | None": "true or false",
    "<class 'float'>": "a number",
    "float | None": "a number",
    "<class 'str'>": "a string",
    "str | None": "a string",
    "tuple[int, ...]": "a list of integers",
    "tuple[int, ...] | None": "a list of integers",
}


# Failures main() reports itself, each in its own words.
DIAGNOSED = (BrokenPipeError, ArgSpecParseError, DiagnosticError, OutputError, ValueError)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        # Pause the cyclic collector (runtime.artifact.gc_paused): IR is a web of cycles,
        # so each full collection walks every op built so far - a 4,000-op chain would
        # cost a fifth more per op than a 1,000-op one (bench/compile_chain.py).
        with gc_paused():
            SpyreOptMain(args=argv).run()
    except BrokenPipeError:
        # The reader went away (`spyre-opt f.mlir | head`): nothing left to report.
        discard(sys.stdout)
        sys.stderr.close()
        sys.exit(0)
    except ArgSpecParseError as error:
        print(f"spyre-opt: error: bad pass pipeline: {error}", file=sys.stderr)
        sys.exit(1)
    except DiagnosticError as error:
        for d in error.diagnostics:
            print(d, file=sys.stderr)
        sys.exit(1)
    except OutputError as error:
        print(f"spyre-opt: error: {error}", file=sys.stderr)
        sys.exit(1)
    except ValueError as error:
        # Pipeline specs that name unknown passes or give bad options land here.
        print(f"spyre-opt: error: {error}", file=sys.stderr)
        sys.exit(1)
    except Exception as error:  # the catch-all, outside any chunk (options, input)
        print(f"spyre-opt: {internal_error(error, '')}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
