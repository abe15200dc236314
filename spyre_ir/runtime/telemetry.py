"""What the compiler and the simulated card did, for whoever is listening (the demo, tests).

The torch.compile backend reports each compiled graph (time per stage, ops per IR level,
kernels) with :func:`record_compile` and each launch on the card (the simulator's report and,
when asked for, its Perfetto trace) with :func:`record_launch`. Nothing is kept unless a
:func:`recording` is active, so the hot path costs one lock and an empty loop::

    with telemetry.recording(trace=True) as rec:
        compiled(x)
    rec.compiles[0].stage_seconds   # {"import": 0.02, "dataflow": 0.8, ...}
    rec.launches[0].report["simulated_us"]

Compile stages are timed with :func:`stage`; a stage that runs for more than
``PROGRESS_DELAY_S`` shows a live line on stderr when stderr is a terminal (never in logs or
captured output). This module must not import torch: the simulator and tools use it too.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = [
    "CompileRecord",
    "GraphRecord",
    "LaunchRecord",
    "Recorder",
    "StageTime",
    "progress",
    "record_compile",
    "record_graph",
    "record_launch",
    "recording",
    "stage",
    "wants_trace",
]

# IR levels a CompileRecord counts ops for, in lowering order.
LEVELS = ("fx", "tensor", "dataflow", "units", "recipe")

# A task shorter than this shows no progress line (flicker is worse than nothing).
PROGRESS_DELAY_S = 0.5
# How often a shown progress line is redrawn.
PROGRESS_REFRESH_S = 0.2


@dataclass
class CompileRecord:
    """One graph compiled: seconds per stage, ops per IR level (keys from ``LEVELS``), kernels."""

    graph: str
    stage_seconds: dict[str, float] = field(default_factory=dict)
    ir_ops: dict[str, int] = field(default_factory=dict)
    kernels: int = 0


@dataclass(frozen=True)
class GraphRecord:
    """One graph compiled by the backend (its partitions each give a CompileRecord): a
    static graph from dynamo, or one bucket of a dynamic-shape graph (``bucket`` names its
    capacities; docs/dynamic-shapes.md). ``len(recorder.graphs)`` is the compile count."""

    graph: str
    bucket: str | None = None


@dataclass
class LaunchRecord:
    """One graph run on the card: the simulator's report, its trace (Chrome trace event JSON)
    when a ``recording(trace=True)`` asked for one, and the host wall time of the launch."""

    graph: str
    report: dict
    trace: dict | None = None
    wall_seconds: float = 0.0


@dataclass(frozen=True)
class StageTime:
    """One timed :func:`stage`, in the order stages finished."""

    graph: str
    name: str
    seconds: float


@dataclass
class Recorder:
    """What happened while a :func:`recording` was active."""

    trace: bool = False
    compiles: list[CompileRecord] = field(default_factory=list)
    graphs: list[GraphRecord] = field(default_factory=list)
    launches: list[LaunchRecord] = field(default_factory=list)
    stages: list[StageTime] = field(default_factory=list)


_lock = threading.Lock()
_active: list[Recorder] = []  # process-wide: compiles may run on another thread than the caller


@contextmanager
def recording(trace: bool = False) -> Iterator[Recorder]:
    """Collect every record made until the block exits. Recordings nest; each active one gets
    every record. ``trace=True`` makes :func:`wants_trace` true, so launches ask the
    simulator for a trace (which costs time)."""
    rec = Recorder(trace=trace)
    with _lock:
        _active.append(rec)
    try:
        yield rec
    finally:
        with _lock:
            _active.remove(rec)


def wants_trace() -> bool:
    """True while some active recording asked for traces."""
    with _lock:
        return any(r.trace for r in _active)


def record_compile(rec: CompileRecord) -> None:
    with _lock:
        for r in _active:
            r.compiles.append(rec)


def record_graph(rec: GraphRecord) -> None:
    with _lock:
        for r in _active:
            r.graphs.append(rec)


def record_launch(rec: LaunchRecord) -> None:
    with _lock:
        for r in _active:
            r.launches.append(rec)


class _Timer:
    """Yielded by :func:`stage`: ``seconds`` is set when the stage ends."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


@contextmanager
def stage(graph: str, name: str) -> Iterator[_Timer]:
    """Time one compile stage of ``graph``; the yielded timer's ``seconds`` holds the time
    once the block exits (also on error), and active recordings get a :class:`StageTime`::

        with telemetry.stage(graph, "dataflow") as t:
            module = lower_to_dataflow(module)
        record.stage_seconds["dataflow"] = t.seconds
    """
    timer = _Timer()
    start = time.perf_counter()
    try:
        with progress(f"{graph}: {name}"):
            yield timer
    finally:
        timer.seconds = time.perf_counter() - start
        done = StageTime(graph, name, timer.seconds)
        with _lock:
            for r in _active:
                r.stages.append(done)


# One token per progress block now open, innermost last: only the innermost is shown.
_progress_stack: list[object] = []


@contextmanager
def progress(label: str) -> Iterator[None]:
    """Show ``spyre: <label> ... 3.2 s`` on stderr while the block runs, if stderr is a
    terminal and the block lasts longer than ``PROGRESS_DELAY_S``; the line is erased after."""
    stream = sys.stderr
    if not _is_terminal(stream):
        yield
        return
    start = time.perf_counter()
    stop = threading.Event()
    token = object()  # identity, not the label: nested blocks may share a label
    with _lock:
        _progress_stack.append(token)

    def draw() -> None:
        shown = 0
        if stop.wait(PROGRESS_DELAY_S):
            return
        while True:
            with _lock:
                innermost = bool(_progress_stack) and _progress_stack[-1] is token
            if innermost:
                line = f"spyre: {label} ... {time.perf_counter() - start:.1f} s"
                stream.write("\r" + line.ljust(shown))
                stream.flush()
                shown = max(shown, len(line))
            if stop.wait(PROGRESS_REFRESH_S):
                break
        if shown:
            stream.write("\r" + " " * shown + "\r")
            stream.flush()

    ticker = threading.Thread(target=draw, name=f"spyre-progress {label}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        with _lock:
            _progress_stack.remove(token)


def _is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False
