"""Streams and events on simulated time: deferred execution, order within a stream,
one compute engine for the card, transfers overlapping compute, event waits, elapsed
times worked out by hand, and failures that name their step and leave the card usable."""

from __future__ import annotations

import pytest

from spyre_ir.runtime.card import Card
from spyre_ir.runtime.streams import Event, StepError, Stream

MS = 1e-3


@pytest.fixture
def card() -> Card:
    return Card()


def step(log: list[str], name: str, seconds: float):
    """A step that logs its name when it runs and takes `seconds`."""

    def run() -> float:
        log.append(name)
        return seconds

    return run


def test_enqueue_defers_work_until_the_host_waits(card: Card) -> None:
    log: list[str] = []
    card.default_stream.enqueue("compute", step(log, "a", MS), "a")
    assert log == [] and card.timeline.pending() == 1
    card.synchronize()
    assert log == ["a"] and card.timeline.pending() == 0
    assert card.now_s == pytest.approx(MS)


def test_order_within_a_stream_across_engines(card: Card) -> None:
    log: list[str] = []
    s = card.default_stream
    start = s.record_event()
    s.enqueue("h2d", step(log, "upload", 2 * MS), "upload")
    s.enqueue("compute", step(log, "kernel", 3 * MS), "kernel")
    s.enqueue("d2h", step(log, "download", 1 * MS), "download")
    end = s.record_event()
    s.synchronize()
    assert log == ["upload", "kernel", "download"]
    assert start.elapsed_time(end) == pytest.approx(6.0)  # 2 + 3 + 1 ms, in a row


def test_compute_is_serialised_across_streams(card: Card) -> None:
    a, b = Stream(card), Stream(card)
    start = a.record_event()
    a.enqueue("compute", lambda: 2 * MS, "ka")
    b.enqueue("compute", lambda: 3 * MS, "kb")
    end_a, end_b = a.record_event(), b.record_event()
    card.synchronize()
    # ka was enqueued first and starts at 0; kb waits for the compute engine.
    assert start.elapsed_time(end_a) == pytest.approx(2.0)
    assert start.elapsed_time(end_b) == pytest.approx(5.0)
    assert card.now_s == pytest.approx(5 * MS)
    assert card.timeline.engine_busy_s["compute"] == pytest.approx(5 * MS)


def test_upload_on_another_stream_overlaps_compute(card: Card) -> None:
    a, b = Stream(card), Stream(card)
    start = a.record_event()
    a.enqueue("compute", lambda: 4 * MS, "kernel")
    b.enqueue("h2d", lambda: 3 * MS, "upload")
    b.enqueue("h2d", lambda: 3 * MS, "upload 2")
    end_b = b.record_event()
    card.synchronize()
    # Both run from t=0 on separate engines: the card finishes at 6 ms, not 10.
    assert start.elapsed_time(end_b) == pytest.approx(6.0)
    assert card.now_s == pytest.approx(6 * MS)


def test_transfers_on_one_engine_share_it(card: Card) -> None:
    a, b = Stream(card), Stream(card)
    start = a.record_event()
    a.enqueue("h2d", lambda: 1 * MS, "x")
    b.enqueue("h2d", lambda: 1 * MS, "y")
    end = b.record_event()
    card.synchronize()
    assert start.elapsed_time(end) == pytest.approx(2.0)


def test_wait_event_orders_work_across_streams(card: Card) -> None:
    log: list[str] = []
    a, b = Stream(card), Stream(card)
    start = a.record_event()
    a.enqueue("compute", step(log, "producer", 2 * MS), "producer")
    done = a.record_event()
    b.wait_event(done)
    b.enqueue("d2h", step(log, "consumer", 1 * MS), "consumer")
    end = b.record_event()
    card.synchronize()
    assert log == ["producer", "consumer"]
    assert start.elapsed_time(end) == pytest.approx(3.0)  # d2h starts when the kernel ends


def test_wait_uses_the_record_current_at_wait_time(card: Card) -> None:
    a, b = Stream(card), Stream(card)
    start = a.record_event()
    event = Event()
    event.record(a)  # at t=0
    b.wait_event(event)
    b.enqueue("h2d", lambda: 1 * MS, "copy")
    end_b = b.record_event()
    a.enqueue("compute", lambda: 5 * MS, "kernel")
    event.record(a)  # re-recorded after the kernel: b's wait is unaffected
    card.synchronize()
    assert start.elapsed_time(end_b) == pytest.approx(1.0)
    assert start.elapsed_time(event) == pytest.approx(5.0)


def test_waiting_on_an_unrecorded_event_waits_for_nothing(card: Card) -> None:
    s = card.default_stream
    s.wait_event(Event())
    s.enqueue("compute", lambda: MS, "k")
    s.synchronize()
    assert card.now_s == pytest.approx(MS)


def test_wait_stream(card: Card) -> None:
    a, b = Stream(card), Stream(card)
    start = a.record_event()
    a.enqueue("dma", lambda: 2 * MS, "copy")
    b.wait_stream(a)
    b.enqueue("h2d", lambda: 1 * MS, "upload")
    end = b.record_event()
    card.synchronize()
    assert start.elapsed_time(end) == pytest.approx(3.0)


def test_host_clock_advances_only_when_the_host_waits(card: Card) -> None:
    a, b = Stream(card), Stream(card)
    a.enqueue("compute", lambda: 2 * MS, "k1")
    a.synchronize()
    assert card.now_s == pytest.approx(2 * MS)
    # Issued after the host waited: starts at 2 ms although the h2d engine was idle.
    b.enqueue("h2d", lambda: 1 * MS, "late upload")
    a.enqueue("compute", lambda: 4 * MS, "k2")
    mark = b.record_event()
    mark.synchronize()  # waits for b only
    assert card.now_s == pytest.approx(3 * MS)
    card.synchronize()
    assert card.now_s == pytest.approx(6 * MS)


def test_events_and_current_stream(card: Card) -> None:
    s = Stream(card)
    with card.stream(s) as current:
        assert current is s and card.current_stream() is s
    assert card.current_stream() is card.default_stream
    other = Card()
    with pytest.raises(ValueError, match="belongs to another card"):
        with card.stream(Stream(other)):
            pass


def test_event_errors(card: Card) -> None:
    s = card.default_stream
    with pytest.raises(RuntimeError, match="not been recorded"):
        Event().elapsed_time(s.record_event())
    untimed = Event(enable_timing=False)
    untimed.record(s)
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        untimed.elapsed_time(s.record_event())
    with pytest.raises(ValueError, match="unknown engine 'gpu'"):
        s.enqueue("gpu", lambda: 0.0, "x")


def test_query_runs_pending_work(card: Card) -> None:
    log: list[str] = []
    s = Stream(card)
    s.enqueue("compute", step(log, "k", MS), "k")
    event = s.record_event()
    assert event.query() and log == ["k"]
    assert s.query() and Event().query()


def test_a_failing_step_surfaces_at_synchronize_with_its_label(card: Card) -> None:
    log: list[str] = []
    a, b, c = Stream(card), Stream(card), Stream(card)

    def broken() -> float:
        raise ValueError("bad tile")

    a.enqueue("compute", step(log, "before", MS), "before")
    a.enqueue("compute", broken, "kernel matmul_0")
    a.enqueue("compute", step(log, "after", MS), "after")  # same stream: cancelled
    c.wait_event(a.record_event())  # waits for the failed work: cancelled too
    c.enqueue("d2h", step(log, "download", MS), "download")
    b.enqueue("h2d", step(log, "independent", MS), "independent")  # still runs
    with pytest.raises(
        StepError,
        match=r"step 'kernel matmul_0' on <spyre stream \d+> failed: "
        r"ValueError: bad tile \(2 later step\(s\) cancelled\)",
    ):
        card.synchronize()
    assert sorted(log) == ["before", "independent"]
    assert card.timeline.pending() == 0
    # The card is usable: new work on the same streams runs.
    a.enqueue("compute", step(log, "retry", MS), "retry")
    c.wait_event(a.record_event())
    c.enqueue("d2h", step(log, "download", MS), "download")
    card.synchronize()
    assert log[-2:] == ["retry", "download"]


def test_a_bad_duration_is_a_step_error(card: Card) -> None:
    no_duration = lambda: None  # noqa: E731 - a run() that forgets its duration
    card.default_stream.enqueue("compute", no_duration, "no duration")  # type: ignore[arg-type]
    with pytest.raises(StepError, match="'no duration'.*finite duration"):
        card.synchronize()
    card.default_stream.enqueue("compute", lambda: -1.0, "negative")
    with pytest.raises(StepError, match="'negative'"):
        card.synchronize()


def test_a_step_may_not_wait_for_the_card(card: Card) -> None:
    def waits() -> float:
        card.synchronize()
        return 0.0

    card.default_stream.enqueue("host", waits, "host callback")
    with pytest.raises(StepError, match="'host callback'.*must not wait for the card's work"):
        card.synchronize()


def test_work_on_a_dropped_stream_still_runs(card: Card) -> None:
    log: list[str] = []
    Stream(card).enqueue("dma", step(log, "copy", MS), "copy")  # the Stream object is dropped
    card.synchronize()
    assert log == ["copy"] and card.now_s == pytest.approx(MS)
