"""spyre_ir.runtime.telemetry: records reach active recordings only, stages are timed, and
progress is drawn on a terminal only."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import threading
import time

import pytest

from spyre_ir.runtime import telemetry as T


def _launch(graph: str = "g") -> T.LaunchRecord:
    return T.LaunchRecord(graph, {"simulated_us": 1.0}, None, 0.01)


def test_records_reach_only_active_recordings() -> None:
    T.record_compile(T.CompileRecord("before"))  # nobody listening: dropped
    with T.recording() as outer:
        T.record_compile(T.CompileRecord("g0", {"import": 0.1}, {"tensor": 5}, 2))
        with T.recording() as inner:
            T.record_launch(_launch("g0"))
        T.record_launch(_launch("g1"))
    T.record_launch(_launch("after"))
    assert [c.graph for c in outer.compiles] == ["g0"]
    assert outer.compiles[0].ir_ops == {"tensor": 5} and outer.compiles[0].kernels == 2
    assert [x.graph for x in outer.launches] == ["g0", "g1"]
    assert [x.graph for x in inner.launches] == ["g0"] and inner.compiles == []


def test_wants_trace_follows_the_active_recordings() -> None:
    assert not T.wants_trace()
    with T.recording():
        assert not T.wants_trace()
        with T.recording(trace=True):
            assert T.wants_trace()
        assert not T.wants_trace()
    assert not T.wants_trace()


def test_recording_ends_on_error() -> None:
    with pytest.raises(KeyError), T.recording(trace=True):
        raise KeyError("x")
    assert not T.wants_trace()
    with T.recording() as rec:
        pass
    T.record_launch(_launch())
    assert rec.launches == []


def test_stage_times_the_block_and_reports_it() -> None:
    with T.recording() as rec:
        with T.stage("graph0", "dataflow") as t:
            time.sleep(0.05)
        with pytest.raises(ValueError), T.stage("graph0", "units") as failed:
            raise ValueError("lowering failed")
    assert 0.05 <= t.seconds < 5
    assert failed.seconds >= 0
    assert [(s.graph, s.name) for s in rec.stages] == [("graph0", "dataflow"), ("graph0", "units")]
    assert rec.stages[0].seconds == t.seconds


def test_records_from_other_threads_all_arrive() -> None:
    def work(i: int) -> None:
        for j in range(100):
            T.record_launch(_launch(f"t{i}-{j}"))

    with T.recording() as rec:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    assert len({x.graph for x in rec.launches}) == 400


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_drawn_on_a_terminal_and_erased(monkeypatch) -> None:
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setattr(T, "PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(T, "PROGRESS_REFRESH_S", 0.01)
    with T.stage("graph3", "units"):
        time.sleep(0.1)
    text = tty.getvalue()
    assert "spyre: graph3: units ... " in text and " s" in text
    assert re.search(r"\r {20,}\r$", text), repr(text)  # the line is blanked at the end


def test_nested_progress_shows_only_the_innermost(monkeypatch) -> None:
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setattr(T, "PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(T, "PROGRESS_REFRESH_S", 0.01)
    with T.progress("outer"):
        time.sleep(0.05)
        with T.progress("inner"):
            before = tty.getvalue().count("outer")
            time.sleep(0.1)
            during = tty.getvalue().count("outer")
    assert "spyre: inner ... " in tty.getvalue()
    assert during - before <= 1  # at most one redraw raced with the inner block's start


def test_short_stages_draw_nothing(monkeypatch) -> None:
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    with T.stage("g", "import"):
        pass
    assert tty.getvalue() == ""


def test_no_progress_when_stderr_is_not_a_terminal(monkeypatch) -> None:
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    monkeypatch.setattr(T, "PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(T, "PROGRESS_REFRESH_S", 0.01)
    with T.stage("g", "units"):
        time.sleep(0.05)
    assert log.getvalue() == ""


def test_telemetry_does_not_import_torch() -> None:
    code = "import sys, spyre_ir.runtime.telemetry; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
