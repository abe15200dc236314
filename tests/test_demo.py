"""`make demo` (spyre_ir.tools.demo), on a small Llama: the report agrees with the files it
writes and with itself, the trace is valid, the chart exists, and user mistakes give a clear
error and a non-zero exit."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import sys
from pathlib import Path

import pytest

from spyre_ir import cost_model
from spyre_ir.tools import demo
from spyre_ir.tools.demo_trace import (
    TraceError,
    binned_busy,
    merge_traces,
    unit_busy,
    validate_trace,
)

SMALL = ["--layers", "1", "--seq", "32", "--hidden", "128", "--heads", "4", "--kv-heads", "2",
         "--ffn", "256", "--vocab", "256", "--new-tokens", "4"]  # fmt: skip


@pytest.fixture(scope="module")
def small_demo(tmp_path_factory):
    """One run of the demo on a small model: (exit code, stdout, out dir, the Run)."""
    out = tmp_path_factory.mktemp("demo-out")
    runs = []
    original = demo.run_llama

    def keep(*args):
        runs.append(original(*args))
        return runs[-1]

    demo.run_llama = keep
    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            code = demo.main([*SMALL, "--out", str(out)])
    finally:
        demo.run_llama = original
    return code, stdout.getvalue(), out, runs[0]


def _number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in the report:\n{text}"
    return float(match.group(1).replace(",", ""))


def test_small_demo_matches_eager_and_reports_every_section(small_demo) -> None:
    code, out, _, _ = small_demo
    assert code == 0, out
    assert _number(r"max \|error\| ([0-9.e+-]+)", out) < demo.ATOL
    assert len(re.findall(r"^logits \(1, 1, 256\) vs eager: .* OK$", out, re.M)) == 1, out
    levels = re.search(r"IR size \(ops\) per level:(.*)", out).group(1)
    counts = dict(
        re.findall(r"(FX/ATen|L1 spyre|L2 dataflow|L3 units|L4 recipe) ([0-9,]+)", levels)
    )
    assert {"FX/ATen", "L1 spyre", "L2 dataflow", "L3 units"} <= set(counts), levels
    assert all(int(n.replace(",", "")) > 0 for n in counts.values())
    stages = re.search(r"compile time per stage \([0-9.]+ s in all\):\n((?:  .*\n)+)", out).group(1)
    assert {"import", "dataflow", "units", "recipe"} <= set(
        re.findall(r"^  (\w+) ", stages, re.M)
    ), stages
    for heading in ("the simulated card", "the model", "compile:", "the prefill on the simulated card",
                    "generate(): 4 new tokens", "kernels of the prefill (", "slowest"):  # fmt: skip
        assert f"== {heading}" in out or heading in out, heading


def test_latency_tokens_and_kernels_agree(small_demo) -> None:
    _, out, out_dir, run = small_demo
    end_to_end = _number(r"prefill: ([0-9,.]+) us end to end", out)
    latency = _number(r"= ([0-9,.]+) us compute on the card", out)
    transfers = _number(r"\+ ([0-9,.]+) us host <-> card transfers", out)
    assert transfers > 0 and end_to_end == pytest.approx(latency + transfers, abs=0.11)
    assert _number(r"tokens/s: ([0-9,]+) end to end", out) == pytest.approx(
        32 / (end_to_end * 1e-6), rel=1e-3
    )
    assert _number(r"([0-9,]+) compute only", out) == pytest.approx(32 / (latency * 1e-6), rel=1e-3)
    with (out_dir / "kernels.csv").open() as f:
        rows = list(csv.DictReader(f))
    kernels = int(_number(r"kernels: (\d+)", out))
    assert len(rows) == kernels == int(_number(r"== kernels of the prefill \((\d+)\)", out))
    assert sum(float(r["simulated_us"]) for r in rows) == pytest.approx(latency, rel=1e-3)
    kind_table = re.search(r"\nkind .*\n((?:.+\n)+)", out).group(1)
    kinds = re.findall(r"^(\w+)\s+(\d+)\s+[0-9.]+\s+\d+%", kind_table, re.M)
    assert sum(int(n) for _, n in kinds) == kernels
    for r in rows:
        assert 0 < float(r["roofline_fraction"]) <= 1 + 1e-9
        assert r["bottleneck"] in {"pe", "sfp", "lpddr", "ring", "ls"}
    roofline = _number(r"roofline [0-9,.]+ us: (\d+) % of the roofline", out)
    expected = sum(float(r["roofline_us"]) for r in rows) / sum(
        float(r["simulated_us"]) for r in rows
    )
    assert roofline == pytest.approx(100 * expected, abs=0.5)
    # the slowest kernel listed is the slowest in the file
    slowest = max(rows, key=lambda r: float(r["simulated_us"]))
    first = re.search(r"slowest \d+ .*\n.*\n(\S+)", out).group(1)
    assert float(next(r for r in rows if r["name"] == first)["simulated_us"]) == float(
        slowest["simulated_us"]
    )


def test_generation_matches_eager_and_keeps_the_weights_on_the_card(small_demo) -> None:
    _, out, _, run = small_demo
    gen = run.generation
    assert "tokens vs eager generate(): 4/4 identical OK" in out
    assert gen.tokens == gen.eager_tokens and len(gen.tokens) == 4
    assert len(gen.steps) == 4  # one prefill, three decode steps (the 4th token needs none)
    # time to first token: the prefill, end to end
    assert _number(r"time to first token ([0-9,.]+) us", out) == pytest.approx(
        _number(r"prefill: ([0-9,.]+) us end to end", out), abs=0.11
    )
    itl = _number(r"inter-token latency ([0-9,.]+) us", out)
    assert itl == pytest.approx(sum(s.sim_us for s in gen.decode) / 3, abs=0.06)
    assert _number(r"decode tokens/s: ([0-9,]+)", out) == pytest.approx(1e6 / itl, rel=2e-3)
    # the prompt's graph and the decode graph: compiled once each, whatever the token count
    assert _number(r"backend compiles: (\d+) graphs for 4 forward calls", out) == gen.graphs == 2
    # a decode step moves far less than the weights, which crossed once, in the prefill
    step_in = _number(r"per decode step: ([0-9,]+) in", out)
    assert gen.steps[0].h2d_bytes >= gen.weights_bytes > 10 * step_in > 0
    assert all(s.h2d_bytes < gen.weights_bytes / 10 for s in gen.decode)
    # a decode step's card clock is its compute plus one transfer each way (token and
    # positions in, logits and the new cache rows out), nothing else
    config = demo.DEFAULT_CONFIG
    for s in gen.steady:
        link = cost_model.host_transfer_s(s.h2d_bytes, config)
        link += cost_model.host_transfer_s(s.d2h_bytes, config)
        assert s.sim_us - s.compute_us == pytest.approx(1e6 * link, abs=0.01), s
    wall = _number(r"host wall time per token: ([0-9,.]+) ms", out)
    eager = _number(r"eager CPU ([0-9,.]+) ms", out)
    assert wall > 0 and eager > 0
    # each figure is printed to 0.1 ms and the ratio to 0.1: the printed ratio is the true
    # one rounded, and the true one lies between the printed figures' extremes (an eager
    # step printed as 0.1 ms may be 0.05 ms: exact bounds, not a first-order slack)
    low = (wall - 0.05) / (eager + 0.05)
    high = (wall + 0.05) / (eager - 0.05) if eager > 0.05 else float("inf")
    printed = _number(r"eager CPU [0-9,.]+ ms \(([0-9.]+)x\)", out)
    assert low - 0.05 - 1e-9 <= printed <= high + 0.05 + 1e-9, (printed, wall, eager)


def test_tokens_that_differ_from_eager_fail_the_demo(
    small_demo, tmp_path, monkeypatch, capsys
) -> None:
    run = small_demo[3]
    gen = run.generation
    other = demo.Generation(**{**gen.__dict__, "tokens": [t + 1 for t in gen.tokens]})
    monkeypatch.setattr(
        demo, "run_llama", lambda *a: demo.Run(**{**run.__dict__, "generation": other})
    )
    assert demo.main([*SMALL, "--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "0/4 identical MISMATCH" in captured.out
    assert "differ from eager generate()" in captured.err and "Traceback" not in captured.err


def test_trace_is_valid_and_covers_every_kernel(small_demo) -> None:
    _, out, out_dir, _ = small_demo
    trace = json.loads((out_dir / "trace.json").read_text())
    validate_trace(trace)
    programs = [e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") == "program"]
    assert len(programs) == int(_number(r"kernels: (\d+)", out))
    compute = _number(r"= ([0-9,.]+) us compute on the card", out)
    assert sum(e["dur"] for e in programs) == pytest.approx(compute, rel=1e-3)
    busy = unit_busy(trace)
    assert {"pe0", "ls lpddr"} <= set(busy), set(busy)


def test_trace_shows_the_streams_on_the_kernels_time_axis(small_demo) -> None:
    _, out, out_dir, _ = small_demo
    events = json.loads((out_dir / "trace.json").read_text())["traceEvents"]
    pid = next(
        e["pid"] for e in events if e["name"] == "process_name" and e["args"]["name"] == "streams"
    )
    engines = {
        e["tid"]: e["args"]["name"]
        for e in events
        if e["name"] == "thread_name" and e["pid"] == pid
    }
    steps: dict[str, list[dict]] = {}
    for e in events:
        if e["ph"] == "X" and e["pid"] == pid:
            assert e["cat"] == "stream" and e["args"]["stream"].startswith("stream ")
            steps.setdefault(engines[e["tid"]], []).append(e)
    assert {"h2d", "compute", "d2h"} <= set(steps), set(steps)
    # one stream, no idle time: its transfers are what the report calls transfer time
    transfers = _number(r"\+ ([0-9,.]+) us host <-> card transfers", out)
    moved = sum(e["dur"] for engine in ("h2d", "d2h", "dma") for e in steps.get(engine, []))
    assert min(e["dur"] for e in steps["h2d"] + steps["d2h"]) > 0
    assert moved == pytest.approx(transfers, abs=0.11)
    end_to_end = _number(r"prefill: ([0-9,.]+) us end to end", out)
    assert max(e["ts"] + e["dur"] for s in steps.values() for e in s) == pytest.approx(
        end_to_end, abs=0.06
    )
    # each compute step spans exactly its launch's kernels, after that launch's uploads
    programs = sorted((e for e in events if e["ph"] == "X" and e.get("cat") == "program"),
                      key=lambda e: e["ts"])  # fmt: skip
    covered = 0
    for step in steps["compute"]:
        begin, end = step["ts"], step["ts"] + step["dur"]
        inside = [
            e for e in programs if begin - 1e-6 <= e["ts"] and e["ts"] + e["dur"] <= end + 1e-6
        ]
        assert inside, step
        assert inside[0]["ts"] == pytest.approx(begin, abs=1e-6)
        assert inside[-1]["ts"] + inside[-1]["dur"] == pytest.approx(end, abs=1e-6)
        covered += len(inside)
        assert any(e["ts"] + e["dur"] <= begin + 1e-6 for e in steps["h2d"])
    assert covered == len(programs)


def test_chart_is_a_png(small_demo) -> None:
    _, _, out_dir, _ = small_demo
    png = (out_dir / "utilization.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_a_mismatch_with_eager_fails_the_demo(small_demo, tmp_path, monkeypatch, capsys) -> None:
    run = small_demo[3]
    wrong = demo.Run(**{**run.__dict__, "logits": run.logits + 1.0})
    monkeypatch.setattr(demo, "run_llama", lambda *a: wrong)
    assert demo.main([*SMALL, "--out", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "MISMATCH" in captured.out and "do not match eager" in captured.err


def test_launches_without_their_compute_steps_fail_the_demo(small_demo, tmp_path, monkeypatch,
                                                           capsys) -> None:  # fmt: skip
    run = small_demo[3]
    unpaired = demo.Run(
        **{**run.__dict__, "steps": [s for s in run.steps if s.engine != "compute"]}
    )
    monkeypatch.setattr(demo, "run_llama", lambda *a: unpaired)
    assert demo.main([*SMALL, "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert (
        f"stream steps disagree: {len(run.launches)} launches traced but 0 compute steps ran" in err
    )
    assert "Traceback" not in err and not (tmp_path / "trace.json").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--layers", "0"], "argument --layers: 0 is not positive"),
        (["--seq", "many"], "argument --seq: 'many' is not an integer"),
        (["--hidden", "100", "--heads", "8"], "--hidden 100 is not a multiple of --heads 8"),
        (["--heads", "8", "--kv-heads", "3"], "--heads 8 is not a multiple of --kv-heads 3"),
        (["--hidden", "24", "--heads", "8"], "head size 3 must be even"),
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    ],
)
def test_bad_options_exit_with_a_message(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        demo.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_out_that_cannot_be_created_is_refused(tmp_path, capsys) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit) as exit_:
        demo.main(["--out", str(tmp_path / "file" / "sub")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "cannot create the directory (Not a directory)" in err and "Traceback" not in err


def test_out_that_is_not_writable_is_refused(tmp_path, monkeypatch, capsys) -> None:
    # (as root every directory is writable, so the permission answer is simulated)
    monkeypatch.setattr(demo.os, "access", lambda path, mode: False)
    with pytest.raises(SystemExit) as exit_:
        demo.main(["--out", str(tmp_path)])
    assert exit_.value.code == 2
    assert f"--out {tmp_path}: the directory is not writable" in capsys.readouterr().err


def test_without_transformers_the_demo_says_how_to_get_it(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # makes `import transformers` fail
    assert demo.main(["--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "transformers, which is not installed" in captured.err and "make demo" in captured.err
    assert "Traceback" not in captured.err and captured.out == ""


def test_out_that_is_a_file_is_refused(tmp_path, capsys) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(SystemExit) as exit_:
        demo.main(["--out", str(target)])
    assert exit_.value.code == 2
    assert f"--out {target}: exists and is not a directory" in capsys.readouterr().err


# ------------------------------------------------------------------ trace helpers
def _thread(pid: int, tid: int, name: str) -> dict:
    return {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def _slice(ts: float, dur: float, pid: int = 1, tid: int = 1, cat: str = "pe") -> dict:
    return {
        "name": "pe.compute",
        "cat": cat,
        "ph": "X",
        "ts": ts,
        "dur": dur,
        "pid": pid,
        "tid": tid,
    }


def test_validate_accepts_nested_and_touching_slices() -> None:
    validate_trace({"traceEvents": [_thread(1, 1, "pe0"), _slice(0, 10), _slice(2, 3),
                                    _slice(10, 1), _slice(5, 5)]})  # fmt: skip


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([_thread(1, 1, "pe0"), _slice(0, 10), _slice(5, 10)], "overlaps event 1"),
        ([_slice(0, 1)], "has slices but no thread_name"),
        ([_thread(1, 1, "pe0"), _slice(0, -1)], "negative time"),
        ([_thread(1, 1, "pe0"), _slice(float("nan"), 1)], "not JSON"),
        ([{**_slice(0, 1), "ph": "B"}], "phase 'B'"),
        ([{**_slice(0, 1), "pid": "card"}], "must be integers"),
    ],
)
def test_validate_rejects_what_perfetto_would_not_show_right(events, message) -> None:
    with pytest.raises(TraceError, match=re.escape(message)):
        validate_trace({"traceEvents": events})


def test_merge_runs_launches_one_after_another() -> None:
    def launch() -> dict:
        return {"traceEvents": [
            {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "@k"}},
            _thread(1, 1, "pe0"), _slice(0, 4), _slice(1, 2),
        ]}  # fmt: skip

    merged = merge_traces([("g0", launch()), ("g1", launch())])
    validate_trace(merged)
    slices = [e for e in merged["traceEvents"] if e["ph"] == "X"]
    assert [(e["pid"], e["ts"]) for e in slices] == [(1, 0), (1, 1), (3, 4), (3, 5)]
    names = [e["args"]["name"] for e in merged["traceEvents"] if e["name"] == "process_name"]
    assert names == ["g0: @k", "g1: @k"]
    assert unit_busy(merged) == {"pe0": [(0, 4), (1, 3), (4, 8), (5, 7)]}


def test_binned_busy_merges_nesting_and_splits_across_bins() -> None:
    # [0, 4) and its nested [1, 3), then [6, 7): bins of width 2 over [0, 8)
    assert binned_busy([(1, 3), (0, 4), (6, 7)], [0, 2, 4, 6, 8]) == [1.0, 1.0, 0.0, 0.5]


# -------------------------------------------------------------- docs/reading-a-trace.md
READING = Path(__file__).resolve().parent.parent / "docs" / "reading-a-trace.md"


def test_reading_a_trace_snippet_agrees_with_the_demo(small_demo) -> None:
    _, out, out_dir, _ = small_demo
    snippet = READING.read_text().split("```python\n")[1].split("```")[0]
    assert "demo-out/trace.json" in snippet
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(snippet.replace("demo-out/trace.json", str(out_dir / "trace.json")), {})  # noqa: S102
    rows = re.findall(r"^(\S+(?: \S+)*?)\s+([0-9.]+) us busy: +([0-9.]+) % of ([0-9.]+) us$",
                      printed.getvalue(), re.M)  # fmt: skip
    assert rows, printed.getvalue()
    trace = json.loads((out_dir / "trace.json").read_text())
    busy = unit_busy(trace)
    assert {unit for unit, *_ in rows} == set(busy)
    for unit, us, _, _ in rows:  # no slice nests in another, so summing durations is exact
        assert float(us) == pytest.approx(sum(e - b for b, e in busy[unit]), abs=0.051)
    # the report's utilisation line: the same shares, for the units it names
    reported = dict(re.findall(r"(\w+) (\d+) %", re.search(r"unit utilisation.*", out).group(0)))
    shares = {unit.replace("ls ", ""): float(share) for unit, _, share, _ in rows}
    # the report's lpddr is the LS unit's LPDDR5 port, both channels: loads and stores
    shares["lpddr"] = shares.get("lpddr", 0.0) + shares.pop("lpddr write", 0.0)
    for unit, share in reported.items():
        assert float(share) == pytest.approx(shares.get(unit, 0.0), abs=0.6), (unit, share, shares)


def test_reading_a_trace_names_every_thread_of_a_real_trace(small_demo) -> None:
    trace = json.loads((small_demo[2] / "trace.json").read_text())
    text = READING.read_text()
    threads = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    for name in threads:
        assert f"`{name}`" in text, name
    for category in {e.get("cat") for e in trace["traceEvents"] if e["ph"] == "X"}:
        assert f"`{category}`" in text, category
