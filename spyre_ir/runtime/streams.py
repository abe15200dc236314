"""Streams and events on simulated time, shaped like torch.cuda's.

Enqueueing is cheap: a step is a callable kept on its stream. Nothing runs until the
host waits (`synchronize`, `query`, `Event.synchronize`, `Event.elapsed_time`); then the
`Timeline` runs every pending step, in simulated-time order:

- each step needs an engine. "compute" is ONE engine for the whole card, so compute
  steps of all streams run one after another; "h2d", "d2h" and "dma" (on-card copies)
  are engines of their own, and so is "host" (host callbacks), so a transfer on one
  stream overlaps compute on another;
- a step starts at max(its issue time on the host clock, the end of the previous step
  on its stream, the time its engine frees up, the events its stream waits on);
- among the stream heads whose waits are satisfied, the step with the earliest
  possible start runs next (ties: the one enqueued first). Its `run()` does the work and
  returns its duration in simulated seconds.

The host clock `now_s` starts at 0 and advances only when the host waits for work, to
the simulated time that work ends.

Events follow CUDA: `record` marks the work enqueued on a stream so far; `wait` makes
later work on a stream wait for the event's most recent record at the time of the
wait (waiting on a never-recorded event waits for nothing).

If a step's `run()` raises, the rest of its stream's pending work, and any work that
waits on an event recorded after the failed step, is cancelled; the remaining work
still runs; the host's wait then raises `StepError` naming the step. The timeline, the
streams and memory stay usable.

Inside `Timeline.recording_steps()` every step that runs is logged as an `ExecutedStep`
(stream, engine, label, start and end in simulated seconds); `trace_events` turns such a
log into Chrome trace events. Outside a recording nothing is kept.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from spyre_ir.runtime.card import Card

ENGINES = ("host", "h2d", "d2h", "dma", "compute")


class StepError(RuntimeError):
    """A step failed while the host waited; `label` names it, `__cause__` is the error,
    `cancelled` counts the steps dropped because they came after it or waited on it."""

    def __init__(self, label: str, stream: Stream, error: Exception, cancelled: int,
                 others: int) -> None:  # fmt: skip
        message = f"step '{label}' on {stream} failed: {type(error).__name__}: {error}"
        if cancelled:
            message += f" ({cancelled} later step(s) cancelled)"
        if others:
            message += f" ({others} other step(s) failed too)"
        super().__init__(message)
        self.label = label
        self.cancelled = cancelled


class ExecutedStep(NamedTuple):
    """A step that ran: on which stream and engine, when (simulated seconds), and for a
    transfer or copy the bytes it moved (0 when the step did not say)."""

    stream: int
    engine: str
    label: str
    start_s: float
    end_s: float
    nbytes: int = 0


class _Record:
    """One record of an event: the time it completes, once its stream reaches it."""

    __slots__ = ("event", "time_s", "cancelled")

    def __init__(self, event: Event) -> None:
        self.event = event
        self.time_s: float | None = None
        self.cancelled = False

    @property
    def settled(self) -> bool:
        return self.time_s is not None or self.cancelled


class _Step:
    """A pending entry of a stream: work on an engine, an event record or a wait."""

    __slots__ = ("kind", "engine", "run", "label", "record", "issue_s", "seq", "nbytes")

    def __init__(self, kind: str, issue_s: float, seq: int, *, engine: str = "",
                 run: Callable[[], float] | None = None, label: str = "",
                 record: _Record | None = None, nbytes: int = 0) -> None:  # fmt: skip
        self.nbytes = nbytes
        self.kind = kind
        self.engine = engine
        self.run = run
        self.label = label
        self.record = record
        self.issue_s = issue_s
        self.seq = seq


class Timeline:
    """The simulated clock of one card: its engines, streams and pending work."""

    def __init__(self) -> None:
        self.now_s = 0.0
        self.engine_free_s = dict.fromkeys(ENGINES, 0.0)
        self.engine_busy_s = dict.fromkeys(ENGINES, 0.0)
        self.engine_bytes = dict.fromkeys(ENGINES, 0)
        """Bytes moved by each engine's steps so far (the steps that said how many)."""
        self.steps_run = 0
        self.latest_end_s = 0.0
        """End of the latest step or event record run so far."""
        self.streams_made = 0
        # Streams with pending work, held here so that work still runs when the
        # caller drops its Stream object (as with CUDA).
        self._active: dict[int, Stream] = {}
        self._seq = 0
        self._cancelled = 0
        self._running = False
        self._step_logs: list[list[ExecutedStep]] = []  # one per active recording_steps()

    @contextmanager
    def recording_steps(self) -> Iterator[list[ExecutedStep]]:
        """Log every step that runs while inside, in the order they run, to the list
        yielded (the caller may read or clear it meanwhile). Recordings may nest."""
        log: list[ExecutedStep] = []
        self._step_logs.append(log)
        try:
            yield log
        finally:
            # by identity: list.remove compares by value, and two logs may be equal
            self._step_logs = [other for other in self._step_logs if other is not log]

    def _add(self, stream: Stream, step: _Step) -> None:
        stream._pending.append(step)
        self._active[stream.id] = stream

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def pending(self) -> int:
        """Work steps enqueued and not yet run."""
        return sum(sum(step.kind == "work" for step in s._pending) for s in self._active.values())

    def run_pending(self) -> None:
        """Run every pending step in simulated-time order (see the module docstring);
        raise StepError for the first step that failed."""
        if self._running:
            raise RuntimeError("a step's run() must not wait for the card's work")
        failures: list[tuple[_Step, Stream, Exception]] = []
        self._cancelled = 0
        self._running = True
        try:
            self._run_all(failures)
        finally:
            self._running = False
        if failures:
            step, stream, error = failures[0]
            failure = StepError(step.label, stream, error, self._cancelled, len(failures) - 1)
            raise failure from error

    def _run_all(self, failures: list[tuple[_Step, Stream, Exception]]) -> None:
        while True:
            best: tuple[float, int, Stream] | None = None
            progressed = False
            for stream in list(self._active.values()):
                while stream._pending and stream._pending[0].kind != "work":
                    if not self._settle_marker(stream):
                        break
                    progressed = True
                if stream._pending and stream._pending[0].kind == "work":
                    step = stream._pending[0]
                    start = max(step.issue_s, stream.ready_s, self.engine_free_s[step.engine])
                    if best is None or (start, step.seq) < best[:2]:
                        best = (start, step.seq, stream)
                if not stream._pending:
                    del self._active[stream.id]
            if best is not None:
                self._run_step(best[2], best[0], failures)
            elif not progressed:
                break

    def wait_until(self, time_s: float) -> None:
        """The host waited for work that ends at `time_s`."""
        self.now_s = max(self.now_s, time_s)

    def synchronize(self) -> None:
        """Run all pending work; the host clock moves to the end of the latest step."""
        try:
            self.run_pending()
        finally:
            self.wait_until(self.latest_end_s)

    def _settle_marker(self, stream: Stream) -> bool:
        """Complete the record or wait at the head of `stream` if it can; False when
        it waits on an event record that has not completed yet."""
        step = stream._pending[0]
        record = step.record
        assert record is not None
        if step.kind == "record":
            stream._pending.popleft()
            record.time_s = max(step.issue_s, stream.ready_s)
            self.latest_end_s = max(self.latest_end_s, record.time_s)
            return True
        if not record.settled:
            return False
        if record.cancelled:
            self._cancel(stream)
            return True
        stream._pending.popleft()
        stream.ready_s = max(stream.ready_s, step.issue_s, record.time_s or 0.0)
        return True

    def _run_step(self, stream: Stream, start: float,
                  failures: list[tuple[_Step, Stream, Exception]]) -> None:  # fmt: skip
        step = stream._pending.popleft()
        assert step.run is not None
        try:
            duration = step.run()
            if not isinstance(duration, (int, float)) or not math.isfinite(duration) \
                    or duration < 0:  # fmt: skip
                raise TypeError(f"run() must return a finite duration >= 0 in seconds, "
                                f"got {duration!r}")  # fmt: skip
        except Exception as error:  # noqa: BLE001 - surfaced at the host's wait
            failures.append((step, stream, error))
            self._cancel(stream)
            return
        end = start + float(duration)
        self.engine_free_s[step.engine] = end
        self.engine_busy_s[step.engine] += float(duration)
        self.engine_bytes[step.engine] += step.nbytes
        stream.ready_s = end
        self.latest_end_s = max(self.latest_end_s, end)
        self.steps_run += 1
        for log in self._step_logs:
            log.append(ExecutedStep(stream.id, step.engine, step.label, start, end, step.nbytes))

    def _cancel(self, stream: Stream) -> None:
        """Drop the pending work of `stream`; its event records become cancelled, so
        work waiting on them is cancelled in turn when its stream reaches the wait."""
        while stream._pending:
            step = stream._pending.popleft()
            if step.kind == "record":
                assert step.record is not None
                step.record.cancelled = True
            elif step.kind == "work":
                self._cancelled += 1


class Stream:
    """An ordered queue of work on one card, like torch.cuda.Stream (and ``torch.spyre.Stream``
    itself, so ``torch.spyre.current_stream()`` is one).

    `device`: the card, or what ``torch.cuda.Stream(device, priority)`` takes (None, an
    index, a string or ``torch.device`` naming spyre:0) for the process-wide card.
    `priority` is accepted for torch's signature; the simulated engines do not order
    streams by priority."""

    def __init__(self, device: Card | Any = None, priority: int = 0) -> None:
        from spyre_ir.runtime.card import Card, get_card

        if isinstance(device, Card):
            card = device
        else:
            _check_spyre_index(device)
            card = get_card()
        self.card = card
        self.priority = priority
        self.timeline: Timeline = card.timeline
        self.ready_s = 0.0
        """Simulated time the last step run on this stream ended."""
        self._pending: deque[_Step] = deque()
        self.id = self.timeline.streams_made
        self.timeline.streams_made += 1

    @property
    def device(self) -> Any:
        """``torch.device("spyre", 0)``, as a torch stream names its device."""
        import torch

        return torch.device("spyre", 0)

    def __repr__(self) -> str:
        return f"<spyre stream {self.id}>"

    def enqueue(self, engine: str, run: Callable[[], float], label: str, nbytes: int = 0) -> None:
        """Queue `run` on `engine`; it runs when the host next waits and returns its
        simulated duration in seconds. `nbytes`: what a transfer or copy moves (telemetry)."""
        if engine not in ENGINES:
            raise ValueError(f"unknown engine '{engine}' (expected one of {', '.join(ENGINES)})")
        t = self.timeline
        t._add(
            self,
            _Step(
                "work",
                t.now_s,
                t._next_seq(),
                engine=engine,
                run=run,
                label=label,
                nbytes=int(nbytes),
            ),
        )

    def record_event(self, event: Event | None = None) -> Event:
        """Record `event` (a new one if None) on this stream and return it."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Later work on this stream waits for `event`'s most recent record."""
        record = event._record
        if record is None:
            return
        t = self.timeline
        t._add(self, _Step("wait", t.now_s, t._next_seq(), record=record))

    def wait_stream(self, stream: Stream) -> None:
        """Later work on this stream waits for the work enqueued on `stream` so far."""
        self.wait_event(stream.record_event())

    def synchronize(self) -> None:
        """Run pending work; the host clock moves to the end of this stream's work."""
        try:
            self.timeline.run_pending()
        finally:
            self.timeline.wait_until(self.ready_s)

    def query(self) -> bool:
        """Run pending work and report completion: always True once it returns, since
        simulated work completes when the host looks (a failed step raises instead)."""
        self.timeline.run_pending()
        return not self._pending


class Event:
    """A marker in a stream's work, like torch.cuda.Event; times are simulated."""

    def __init__(self, enable_timing: bool = True, blocking: bool = False,
                 interprocess: bool = False) -> None:  # fmt: skip
        """torch.cuda.Event's signature; `blocking` and `interprocess` change nothing on
        the simulated card (the host always waits by running the pending work)."""
        self.enable_timing = enable_timing
        self._record: _Record | None = None
        self._timeline: Timeline | None = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the work enqueued on `stream` (the current stream if None) so far."""
        if stream is None:
            from spyre_ir.runtime.card import get_card

            stream = get_card().current_stream()
        self._timeline = stream.timeline
        self._record = _Record(self)
        t = stream.timeline
        t._add(stream, _Step("record", t.now_s, t._next_seq(), record=self._record))

    def wait(self, stream: Stream | None = None) -> None:
        """Make later work on `stream` (the current stream if None) wait for this event."""
        if stream is None:
            from spyre_ir.runtime.card import get_card

            stream = get_card().current_stream()
        stream.wait_event(self)

    def synchronize(self) -> None:
        """Run pending work; the host clock moves to this event's time."""
        if self._timeline is None or self._record is None:
            return
        try:
            self._timeline.run_pending()
        finally:
            if self._record.time_s is not None:
                self._timeline.wait_until(self._record.time_s)

    def query(self) -> bool:
        """Run pending work; True unless the recorded work was cancelled by a failure."""
        if self._timeline is None or self._record is None:
            return True
        self._timeline.run_pending()
        return self._record.time_s is not None

    @property
    def time_s(self) -> float:
        """Simulated time of the most recent record (runs pending work)."""
        if self._timeline is None or self._record is None:
            raise RuntimeError("event has not been recorded")
        self._timeline.run_pending()
        if self._record.time_s is None:
            raise RuntimeError("event's recorded work was cancelled by a failed step")
        return self._record.time_s

    def elapsed_time(self, end_event: Event) -> float:
        """Simulated milliseconds from this event to `end_event`."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("both events must be created with enable_timing=True")
        return (end_event.time_s - self.time_s) * 1e3

    def __repr__(self) -> str:
        state = "unrecorded" if self._record is None else f"recorded at {self._record.time_s}"
        return f"<spyre event {state}>"


def _check_spyre_index(device: Any) -> None:
    """`device` names spyre:0 (None, 0, "spyre", "spyre:0", a torch.device); one card only."""
    if device is None or device == 0:
        return
    import torch

    where = torch.device("spyre", device) if isinstance(device, int) else torch.device(device)
    if where.type != "spyre" or where.index not in (None, 0):
        raise ValueError(f"spyre: no stream on {where} (one card: spyre:0)")


def trace_events(steps: Sequence[ExecutedStep], pid: int, origin_s: float = 0.0) -> list[dict]:
    """Chrome trace events (Perfetto's JSON) for `steps`: process `pid` named "streams",
    one thread per engine in `ENGINES` order (only engines that ran something), and a
    complete slice ("X", category "stream") per step with `ts`/`dur` in microseconds of
    simulated time from `origin_s`; its args name the stream. Slices on one thread never
    overlap, since an engine runs one step at a time."""
    used = [e for e in ENGINES if any(s.engine == e for s in steps)]
    tids = {engine: tid for tid, engine in enumerate(used)}
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "streams"}},
        # above the card's processes (sort index 0 and up)
        {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": -1}},
    ]
    for engine, tid in tids.items():
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": engine}})  # fmt: skip
        events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                       "args": {"sort_index": tid}})  # fmt: skip
    for s in steps:
        events.append({"name": s.label, "cat": "stream", "ph": "X",
                       "ts": (s.start_s - origin_s) * 1e6, "dur": (s.end_s - s.start_s) * 1e6,
                       "pid": pid, "tid": tids[s.engine],
                       "args": {"stream": f"stream {s.stream}", "label": s.label}})  # fmt: skip
    return events
