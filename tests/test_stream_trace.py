"""The timeline's log of executed steps (`Timeline.recording_steps`) and its Chrome trace
(`streams.trace_events`): times worked out by hand for a transfer on one stream overlapping
compute on another."""

from __future__ import annotations

import pytest

from spyre_ir.runtime.card import Card
from spyre_ir.runtime.streams import ExecutedStep, Stream, trace_events
from spyre_ir.tools.demo_trace import TraceError, validate_trace, with_streams

MS = 1e-3


def _overlap(card: Card) -> tuple[Stream, Stream]:
    """Stream A: a 3 ms kernel, then a 1 ms download. Stream B: a 2 ms upload, then a
    1 ms kernel, which waits for A's kernel to free the compute engine."""
    a, b = Stream(card), Stream(card)
    a.enqueue("compute", lambda: 3 * MS, "kernel a")
    b.enqueue("h2d", lambda: 2 * MS, "upload b")
    b.enqueue("compute", lambda: 1 * MS, "kernel b")
    a.enqueue("d2h", lambda: 1 * MS, "download a")
    return a, b


def test_recorded_steps_have_the_hand_computed_times() -> None:
    card = Card()
    with card.timeline.recording_steps() as log:
        a, b = _overlap(card)
        card.synchronize()
    # in the order they ran: earliest possible start first, ties by enqueue order
    assert [tuple(s)[:5] for s in log] == [  # (stream, engine, label, start, end)
        (a.id, "compute", "kernel a", 0.0, pytest.approx(3 * MS)),
        (b.id, "h2d", "upload b", 0.0, pytest.approx(2 * MS)),  # overlaps kernel a
        (b.id, "compute", "kernel b", pytest.approx(3 * MS), pytest.approx(4 * MS)),
        (a.id, "d2h", "download a", pytest.approx(3 * MS), pytest.approx(4 * MS)),
    ]
    assert all(isinstance(s, ExecutedStep) for s in log)
    assert card.now_s == pytest.approx(4 * MS)


def test_nothing_is_kept_outside_a_recording_and_recordings_nest() -> None:
    card = Card()
    card.default_stream.enqueue("compute", lambda: MS, "before")
    card.synchronize()
    with card.timeline.recording_steps() as outer:
        card.default_stream.enqueue("compute", lambda: MS, "outer only")
        card.synchronize()
        with card.timeline.recording_steps() as inner:
            card.default_stream.enqueue("h2d", lambda: MS, "both")
            card.synchronize()
        card.default_stream.enqueue("compute", lambda: MS, "after inner")
        card.synchronize()
        outer_labels = [s.label for s in outer]
        outer.clear()  # the caller may empty the log while recording
        card.default_stream.enqueue("compute", lambda: MS, "after clear")
        card.synchronize()
    card.default_stream.enqueue("compute", lambda: MS, "after")
    card.synchronize()
    assert outer_labels == ["outer only", "both", "after inner"]
    assert [s.label for s in inner] == ["both"]
    assert [s.label for s in outer] == ["after clear"]
    assert card.timeline._step_logs == []


def test_an_inner_recording_that_ends_equal_to_the_outer_leaves_the_outer_recording() -> None:
    card = Card()
    with card.timeline.recording_steps() as outer:
        with card.timeline.recording_steps():
            pass  # both logs are empty, so equal, when the inner one ends
        card.default_stream.enqueue("compute", lambda: MS, "k")
        card.synchronize()
    assert [s.label for s in outer] == ["k"]


def test_a_failed_step_is_not_logged() -> None:
    card = Card()

    def fail() -> float:
        raise ValueError("boom")

    with card.timeline.recording_steps() as log:
        card.default_stream.enqueue("h2d", lambda: MS, "ok")
        card.default_stream.enqueue("compute", fail, "bad")
        with pytest.raises(RuntimeError, match="step 'bad'"):
            card.synchronize()
    assert [s.label for s in log] == ["ok"]


def test_recording_does_not_change_the_schedule() -> None:
    plain, recorded = Card(), Card()
    _overlap(plain)
    plain.synchronize()
    with recorded.timeline.recording_steps():
        _overlap(recorded)
        recorded.synchronize()
    assert recorded.now_s == plain.now_s
    assert recorded.timeline.engine_busy_s == plain.timeline.engine_busy_s


def test_trace_events_one_thread_per_engine_in_microseconds() -> None:
    card = Card()
    with card.timeline.recording_steps() as log:
        a, b = _overlap(card)
        card.synchronize()
    events = trace_events(log, pid=7, origin_s=-1 * MS)
    trace = {"traceEvents": events}
    validate_trace(trace)
    threads = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert sorted(threads.values()) == ["compute", "d2h", "h2d"]  # only engines that ran
    assert {e["args"]["name"] for e in events if e["name"] == "process_name"} == {"streams"}
    slices = {e["name"]: e for e in events if e["ph"] == "X"}
    assert all(e["pid"] == 7 and e["cat"] == "stream" for e in slices.values())
    upload = slices["upload b"]
    assert threads[upload["tid"]] == "h2d"
    assert (upload["ts"], upload["dur"]) == (pytest.approx(1000.0), pytest.approx(2000.0))
    assert upload["args"] == {"stream": f"stream {b.id}", "label": "upload b"}
    kernel = slices["kernel b"]
    assert threads[kernel["tid"]] == "compute" and kernel["args"]["stream"] == f"stream {b.id}"
    assert (kernel["ts"], kernel["dur"]) == (pytest.approx(4000.0), pytest.approx(1000.0))
    assert slices["kernel a"]["tid"] == kernel["tid"]  # one compute engine for both streams


# ------------------------------------------------- the demo's merge of launches and streams
def _launch(dur_us: float) -> dict:
    return {"traceEvents": [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "card"}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "compute queue"}},
        {"name": "@k", "cat": "program", "ph": "X", "ts": 0.0, "dur": dur_us, "pid": 0, "tid": 0},
    ]}  # fmt: skip


def _steps() -> list[ExecutedStep]:
    """Two launches of g on one stream, from t = 1 ms: upload 2 ms, compute 3 ms, twice."""
    return [ExecutedStep(0, "h2d", "g: h2d @in0", 1 * MS, 3 * MS),
            ExecutedStep(0, "compute", "g: compute @main", 3 * MS, 6 * MS),
            ExecutedStep(0, "h2d", "g: h2d @in0", 6 * MS, 8 * MS),
            ExecutedStep(0, "compute", "g: compute @main", 8 * MS, 11 * MS)]  # fmt: skip


def test_with_streams_puts_each_launch_at_its_compute_step() -> None:
    trace = with_streams(
        [("g", _launch(3000.0)), ("g", _launch(3000.0))], _steps(), origin_s=1 * MS
    )
    validate_trace(trace)
    kernels = [e["ts"] for e in trace["traceEvents"] if e.get("cat") == "program"]
    assert kernels == [pytest.approx(2000.0), pytest.approx(7000.0)]  # not end to end at 0, 3000
    streams = [(e["name"], e["ts"]) for e in trace["traceEvents"] if e.get("cat") == "stream"]
    assert streams[0] == ("g: h2d @in0", 0.0) and streams[3] == (
        "g: compute @main",
        pytest.approx(7000.0),
    )
    processes = [
        (e["args"]["name"], e["pid"]) for e in trace["traceEvents"] if e["name"] == "process_name"
    ]
    assert sorted(name for name, _ in processes) == ["g: card", "g: card", "streams"]
    assert len({pid for _, pid in processes}) == 3


@pytest.mark.parametrize(
    ("launches", "message"),
    [
        ([("g", _launch(3000.0))], "1 launches traced but 2 compute steps ran"),
        ([("g", _launch(3000.0)), ("h", _launch(3000.0))], "launch of h paired with compute step"),
    ],
)
def test_with_streams_refuses_launches_that_do_not_match_the_steps(launches, message) -> None:
    with pytest.raises(TraceError, match=message):
        with_streams(launches, _steps(), origin_s=0.0)
