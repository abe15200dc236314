"""A mutation fuzzer of spyre-opt and spyre-run: bad input must end in a located error
and exit 1, never a traceback, an internal error, a hang or a `FILE:0:0` location.

    python tests/fuzz/spyre_fuzz.py [--mutants N] [--seed S] [--timeout SECONDS] [-v]

The seeds are the lit inputs (tests/filecheck, split at `// -----`) and examples/.
Each mutant is one seed with one to three mutations (`MUTATIONS`: token edits, numbers
at the edges of their types, shapes and element types, truncation, deep nesting, raw
bytes), drawn from a `random.Random(seed)`: a run is reproducible. Every mutant goes
through plain `spyre-opt`; one that parses then goes through `spyre-opt -p
spyre-to-dataflow`, `-p spyre-to-units`, `-p spyre-compile`, `spyre-run --check` and
`spyre-run --check --level dataflow`. That last run catches silent wrong answers: the L2
interpreter computes in IEEE fp16 as the L1 one does, so a mismatch there is a lowering
bug (on the simulator, DLFloat16 against IEEE fp16 can miss an ill-conditioned program's
tolerance - examples/attention_block.mlir does - so a mismatch there is not counted).

The tools run in a worker process (in-process calls of their `main`, so a mutant costs
no interpreter start-up); the parent gives each call `--timeout` seconds and counts a
call that takes longer as a hang (the worker is killed and restarted). Exit status 1
when any mutant fails; the failures are printed with the mutant that caused them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_classes  # noqa: E402 - next to this file, found when run as a script too

ROOT = Path(__file__).resolve().parents[2]
SPLIT = re.compile(r"^// -----.*$", re.MULTILINE)
PIPELINES = ("spyre-to-dataflow", "spyre-to-units", "spyre-compile")
MODES = (*PIPELINES, "run")

# ---------------------------------------------------------------- seeds and mutations


def seeds() -> list[str]:
    """Every chunk of every lit input and example, RUN lines and all."""
    files = sorted((ROOT / "tests" / "filecheck").rglob("*.mlir"))
    files += sorted((ROOT / "examples").glob("*.mlir"))
    chunks = []
    for path in files:
        for chunk in SPLIT.split(path.read_text()):
            if "func.func" in chunk or "dataflow." in chunk or "core." in chunk:
                chunks.append(chunk)
    return chunks


TOKEN = re.compile(r'"[^"\n]*"|[%@#^!]?[\w.$-]+|->|\S')
NUMBER = re.compile(r"(?<![\w.%@#^!])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
SHAPE = re.compile(r"(?<=<)(?:\d+x)*(?=[a-z])")
DTYPE = re.compile(r"\b(?:f16|bf16|f32|f64|i1|i8|i32|i64|index)\b")
EDGE_NUMBERS = (
    "0", "-1", "1", "2", "3", "127", "128", "255", "256", "65535", "65536", "2147483647",
    "2147483648", "-2147483649", "4294967296", "9223372036854775807",
    "9223372036854775808", "-9223372036854775809", "18446744073709551616",
    "99999999999999999999", "1.0e+38", "-1.0e+38", "65504.0", "65520.0", "1.0e+309",
    "1.0e-320", "0.0", "-0.0", "1.5", "nan", "inf", "0x7FC00000", "0xFFFFFFFFFFFFFFFFFF",
)  # fmt: skip
EDGE_DIMS = ("0", "1", "2", "3", "63", "64", "65", "127", "129", "4097", "1048576",
             "4294967296", "9223372036854775808", "?")  # fmt: skip
DTYPES = ("f16", "bf16", "f32", "f64", "i1", "i8", "i32", "i64", "index", "f8E4M3FN")
JUNK = (b"\x00", b"\xff", b"\xc3\x28", b"\xe2\x82", b"\x1b[2J", b"\r", b"\t", b"\\", b'"')


def _tokens(text: str) -> list[re.Match[str]]:
    return list(TOKEN.finditer(text))


def token_edit(text: str, rng: random.Random) -> str:
    """Delete, duplicate, swap or replace one token."""
    tokens = _tokens(text)
    if not tokens:
        return text
    t = rng.choice(tokens)
    other = rng.choice(tokens).group()
    action = rng.randrange(4)
    if action == 0:
        return text[: t.start()] + text[t.end() :]
    if action == 1:
        return text[: t.end()] + " " + t.group() + text[t.end() :]
    if action == 2:
        return text[: t.start()] + other + text[t.end() :]
    return text[: t.start()] + rng.choice(("{", "}", "(", ")", "<", ">", "[", "]", ",", ":",
                                           "=", '"', "%x", "@main", "->")) + text[t.end() :]  # fmt: skip


def edge_number(text: str, rng: random.Random) -> str:
    """One number literal replaced by a value at the edge of its type."""
    numbers = list(NUMBER.finditer(text))
    if not numbers:
        return text
    n = rng.choice(numbers)
    value = rng.choice(EDGE_NUMBERS) if rng.random() < 0.6 else str(rng.randint(-3, 9))
    return text[: n.start()] + value + text[n.end() :]


def shape_edit(text: str, rng: random.Random) -> str:
    """One dim of one tensor type changed (or one added or dropped), everywhere that
    type appears, so that a mutant often still type-checks."""
    shapes = [m for m in SHAPE.finditer(text) if m.group()]
    if not shapes:
        return text
    old = rng.choice(shapes).group()
    dims = old[:-1].split("x")
    action = rng.randrange(3)
    if action == 0:
        dims[rng.randrange(len(dims))] = rng.choice(EDGE_DIMS)
    elif action == 1:
        dims.insert(rng.randrange(len(dims) + 1), rng.choice(EDGE_DIMS))
    elif len(dims) > 1:
        del dims[rng.randrange(len(dims))]
    new = "x".join(dims) + "x"
    if rng.random() < 0.5:
        return text.replace("<" + old, "<" + new)
    i = text.index("<" + old)
    return text[:i] + "<" + new + text[i + 1 + len(old) :]


def dtype_edit(text: str, rng: random.Random) -> str:
    """One element type replaced, everywhere or once."""
    found = list(DTYPE.finditer(text))
    if not found:
        return text
    old = rng.choice(found)
    new = rng.choice(DTYPES)
    if rng.random() < 0.5:
        return re.sub(rf"\b{old.group()}\b", new, text)
    return text[: old.start()] + new + text[old.end() :]


def truncate(text: str, rng: random.Random) -> str:
    return text[: rng.randrange(len(text) + 1)]


def nesting(text: str, rng: random.Random) -> str:
    """Brackets nested deeply at a random token."""
    tokens = _tokens(text)
    if not tokens:
        return text
    t = rng.choice(tokens)
    opening, closing = rng.choice((("[", "]"), ("(", ")"), ("{", "}"), ("<", ">")))
    depth = rng.choice((10, 63, 65, 200, 1000, 5000))
    inner = opening * depth + (closing * depth if rng.random() < 0.7 else "")
    return text[: t.start()] + inner + text[t.start() :]


def raw_bytes(text: str, rng: random.Random) -> str:
    """Bytes that are not text, or control characters, at a random place (the mutant
    is written as bytes: `surrogateescape` keeps invalid UTF-8 as it is)."""
    data = text.encode("utf-8", "surrogateescape")
    at = rng.randrange(len(data) + 1)
    junk = rng.choice(JUNK) * rng.choice((1, 1, 3, 100))
    return (data[:at] + junk + data[at:]).decode("utf-8", "surrogateescape")


def long_string(text: str, rng: random.Random) -> str:
    """An unterminated string or a long identifier at a random token."""
    tokens = _tokens(text)
    if not tokens:
        return text
    t = rng.choice(tokens)
    piece = rng.choice(('"' + "a" * 3000, "%" + "v" * 3000, "@" + "f" * 3000, "9" * 3000))
    return text[: t.start()] + piece + text[t.start() :]


# Edits that keep a file parseable more often come more often: they reach the passes.
MUTATIONS = (token_edit, token_edit, edge_number, edge_number, edge_number, edge_number,
             shape_edit, shape_edit, shape_edit, shape_edit, dtype_edit, dtype_edit,
             truncate, nesting, raw_bytes, long_string)  # fmt: skip


def mutant(seed_texts: list[str], rng: random.Random) -> tuple[str, list[str]]:
    text = rng.choice(seed_texts)
    if "expected-error" in text and rng.random() < 0.7:
        text = rng.choice(seed_texts)  # valid seeds twice as often: mutants go deeper
    applied = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        mutation = rng.choice(MUTATIONS)
        text = mutation(text, rng)
        applied.append(mutation.__name__)
    return text, applied


# ---------------------------------------------------------------- judging a run

ZERO_ZERO = re.compile(r":0:0:")
TRACEBACK = "Traceback (most recent call last)"
MISMATCH = "check: MISMATCH"


def problems(code: object, out: str, err: str) -> list[str]:
    """What is wrong with one tool run's exit status and output (empty: fine)."""
    found = []
    both = out + err
    if TRACEBACK in both:
        found.append("traceback")
    if "internal error:" in both:
        found.append("internal error")
    if ZERO_ZERO.search(both):
        found.append("0:0 location")
    if code not in (0, 1, 2):
        found.append(f"exit status {code}")
    if code == 1 and not err.strip() and "expected" not in out:
        found.append("exit 1 without a message")
    return found


def wrong_answer(argv: list[str], out: str, err: str) -> list[str]:
    """A silent wrong answer: `--check --level dataflow` (IEEE fp16 at both levels) that
    found the lowered program's results differ from the L1 interpreter's."""
    at_l2 = "--check" in argv and argv[-2:] == ["--level", "dataflow"]
    return ["wrong answer"] if at_l2 and MISMATCH in out + err else []


# ---------------------------------------------------------------- the worker


def _call(tool: str, argv: list[str]) -> tuple[object, str, str]:
    from spyre_ir.tools import spyre_opt, spyre_run

    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = (spyre_opt.main if tool == "opt" else spyre_run.main)(argv) or 0
        except SystemExit as done:
            code = done.code if done.code is not None else 0
        except BaseException as error:  # noqa: BLE001 - escaping main is the bug we count
            import traceback

            err.write("".join(traceback.format_exception(error)))
            code = "escaped"
    return code, out.getvalue(), err.getvalue()


def worker() -> None:
    """Read jobs (JSON lines: path, tool, argv) on stdin; answer with one JSON line
    each (code, out, err) on the original stdout."""
    import warnings

    warnings.simplefilter("ignore")  # a warning is not a failure here
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    for line in sys.stdin:
        job = json.loads(line)
        code, out, err = _call(job["tool"], job["argv"])
        channel.write(json.dumps({"code": code, "out": out[-4000:], "err": err[-4000:]}) + "\n")
        channel.flush()


class Worker:
    """A worker process, restarted after a hang or a crash."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        return self.proc

    def run(self, tool: str, argv: list[str], timeout: float) -> tuple[object, str, str]:
        proc = self.proc if self.proc and self.proc.poll() is None else self.start()
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps({"tool": tool, "argv": argv}) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            self.stop()
            return "hang", "", f"no answer within {timeout} s"
        line = proc.stdout.readline()
        if not line:
            self.stop()
            return "crashed", "", "the worker died"
        answer = json.loads(line)
        return answer["code"], answer["out"], answer["err"]

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()
            self.proc = None


# ---------------------------------------------------------------- the campaign


@dataclass
class Failure:
    index: int
    mutations: list[str]
    command: str
    kinds: list[str]
    text: str
    output: str


@dataclass
class Campaign:
    mutants: int = 0
    runs: int = 0
    failures: list[Failure] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())) or "none"
        return (
            f"{self.mutants} mutants, {self.runs} tool runs in {self.seconds:.0f} s: "
            f"{len(self.failures)} failing runs ({kinds}); tracebacks "
            f"{self.counts.get('traceback', 0)}, hangs {self.counts.get('hang', 0)}, "
            f"0:0 locations {self.counts.get('0:0 location', 0)}, internal errors "
            f"{self.counts.get('internal error', 0)}"
        )

    def report(self) -> str:
        """The summary and the first failures, for a test's assertion message."""
        lines = [self.summary()]
        for f in self.failures[:10]:
            lines.append(f"mutant {f.index} ({'+'.join(f.mutations)}): {f.command}: "
                         f"{', '.join(f.kinds)}\n{f.output[-600:]}")  # fmt: skip
        return "\n".join(lines)


def _commands(path: str) -> list[tuple[str, list[str]]]:
    """The runs of a mutant that parses: the three pipelines, spyre-run --check on the
    simulator and on the L2 interpreter."""
    return [("opt", [path, "-p", p]) for p in PIPELINES] + [
        ("run", [path, "--check"]),
        ("run", [path, "--check", "--level", "dataflow"]),
    ]


def new_class_mutant(seed_texts: list[str], rng: random.Random) -> tuple[str, list[str]]:
    """A seed with none, one or two of the second campaign's text mutations."""
    text = rng.choice([t for t in seed_texts if "expected-error" not in t] or seed_texts)
    applied = []
    for _ in range(rng.choice((0, 1, 1, 1, 2))):
        mutation = rng.choice(fuzz_classes.TEXT_MUTATIONS)
        text = mutation(text, rng)
        applied.append(mutation.__name__)
    return text, applied or ["none"]


def _new_class_commands(path: str, text: str, rng: random.Random, tmp: str,
                        index: int) -> list[tuple[str, list[str]]]:  # fmt: skip
    """The second campaign's runs of a mutant that parses: spyre-compile, spyre-run
    --check on random inputs and on --inputs files with something wrong."""
    files = fuzz_classes.npy_inputs(text, rng, tmp, index)
    return [("opt", [path, "-p", "spyre-compile"]), ("run", [path, "--check"]),
            ("run", [path, "--inputs", ",".join(files), "--check"])]  # fmt: skip


def fuzz(count: int, seed: int = 0, timeout: float = 30.0, verbose: bool = False,
         classes: str = "first") -> Campaign:  # fmt: skip
    """`count` mutants; `classes` "first" (MUTATIONS) or "new" (fuzz_classes: swapped
    types, region arity, attributes of the wrong kind, bad `-p` options, bad --inputs)."""
    rng = random.Random(seed)
    texts = seeds()
    campaign = Campaign()
    start = time.monotonic()
    worker_ = Worker()
    with tempfile.TemporaryDirectory(prefix="spyre-fuzz-") as tmp:
        os.environ["SPYRE_CACHE_DIR"] = os.path.join(tmp, "cache")
        try:
            for index in range(count):
                if classes == "new":
                    text, applied = new_class_mutant(texts, rng)
                else:
                    text, applied = mutant(texts, rng)
                path = os.path.join(tmp, f"mutant{index}.mlir")
                with open(path, "wb") as f:
                    f.write(text.encode("utf-8", "surrogateescape"))
                campaign.mutants += 1
                if verbose and index and index % 100 == 0:
                    campaign.seconds = time.monotonic() - start
                    print(f"progress: {campaign.summary()}", flush=True)
                commands = [("opt", [path])]
                if classes == "new":
                    commands.append(("opt", [path, "-p", fuzz_classes.bad_pipeline(rng)]))
                while commands:
                    tool, argv = commands.pop(0)
                    campaign.runs += 1
                    code, out, err = worker_.run(tool, argv, timeout)
                    if code == 0 and argv == [path]:  # it parses: lower it and run it
                        if classes == "new":
                            commands += _new_class_commands(path, text, rng, tmp, index)
                        else:
                            commands += _commands(path)
                    kinds = ["hang"] if code == "hang" else problems(code, out, err)
                    kinds += wrong_answer(argv, out, err)
                    for kind in kinds:
                        campaign.counts[kind] = campaign.counts.get(kind, 0) + 1
                    if kinds:
                        command = f"spyre-{tool} {' '.join(argv)}"
                        campaign.failures.append(
                            Failure(index, applied, command, kinds, text, (out + err)[-2000:])
                        )
                        if verbose:
                            print(f"mutant {index} ({'+'.join(applied)}): {command}: "
                                  f"{', '.join(kinds)}\n{(out + err)[-1500:]}", flush=True)  # fmt: skip
        finally:
            worker_.stop()
    campaign.seconds = time.monotonic() - start
    return campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mutants", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per tool run")
    parser.add_argument("--save", metavar="DIR", help="write each failing mutant there")
    parser.add_argument("--classes", choices=("first", "new"), default="first",
                        help="the mutation classes: the first campaign's or fuzz_classes'")  # fmt: skip
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return 0
    campaign = fuzz(args.mutants, args.seed, args.timeout, args.verbose, args.classes)
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        for f in campaign.failures:
            Path(args.save, f"mutant{f.index}.mlir").write_bytes(
                f.text.encode("utf-8", "surrogateescape")
            )
    print(campaign.summary())
    return 1 if campaign.failures else 0


if __name__ == "__main__":
    sys.exit(main())
