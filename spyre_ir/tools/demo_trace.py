"""The demo's trace files: merge the card's Chrome trace event JSON of several launches, check
it is something Perfetto loads as we mean it, and chart unit utilisation over time.

The card's stream steps (transfers, on-card copies, compute, host callbacks; see
``spyre_ir.runtime.streams``) join the kernels' traces on one simulated time axis.

Trace format: the Chrome trace event format (Perfetto's legacy JSON importer), events with
``ph`` "X" (a complete slice: ``ts``, ``dur`` in microseconds) and "M" (metadata:
``process_name``, ``thread_name``, sort indices). docs/reading-a-trace.md explains the tracks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from spyre_ir.runtime.streams import ExecutedStep, trace_events

# Slices on one thread closer than this (us) count as touching, not overlapping: event times
# are cycle counts scaled to microseconds in floating point.
_EPS_US = 1e-6

_METADATA = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"}


class TraceError(ValueError):
    """A trace Perfetto would reject or show wrongly; the message names the event."""


def merge_traces(
    traces: Sequence[tuple[str, dict]], starts_us: Sequence[float] | None = None
) -> dict:
    """One trace of launches run one after another: ``(graph, trace)`` pairs, in launch order.
    Launch i's times start at ``starts_us[i]`` (its compute step's start on the card's
    timeline), or, without ``starts_us``, where the previous launch ended. With several
    launches, each launch's processes get their own pids and names prefixed by the graph."""
    if starts_us is not None and len(starts_us) != len(traces):
        raise ValueError(f"{len(traces)} launches but {len(starts_us)} start times")
    if len(traces) == 1 and not starts_us:
        return traces[0][1]
    events: list[dict] = []
    pid_base, start = 0, 0.0
    for i, (graph, trace) in enumerate(traces):
        own = trace["traceEvents"]
        if starts_us is not None:
            start = starts_us[i]
        for e in own:
            e = {**e, "pid": e["pid"] + pid_base}
            if e["ph"] == "X":
                e["ts"] = e["ts"] + start
            elif e["name"] == "process_name" and len(traces) > 1:
                e["args"] = {"name": f"{graph}: {e['args']['name']}"}
            elif e["name"] == "process_sort_index":
                e["args"] = {"sort_index": e["args"]["sort_index"] + pid_base}
            events.append(e)
        pid_base += 1 + max((e["pid"] for e in own), default=0)
        start += trace_end_us(trace)
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def with_streams(launches: Sequence[tuple[str, dict]], steps: Sequence[ExecutedStep],
                 origin_s: float) -> dict:  # fmt: skip
    """The launches' traces and the card's stream steps (process ``streams``) on one time
    axis, simulated microseconds from ``origin_s``: each launch's slices start where its
    compute step (the i-th "compute" step, labelled ``<graph>: compute ...``) starts."""
    computes = [s for s in steps if s.engine == "compute"]
    if len(computes) != len(launches):
        raise TraceError(f"{len(launches)} launches traced but {len(computes)} compute steps ran")
    for (graph, _), step in zip(launches, computes):
        if not step.label.startswith(f"{graph}: "):
            raise TraceError(f"launch of {graph} paired with compute step {step.label!r}")
    merged = merge_traces(launches, [(s.start_s - origin_s) * 1e6 for s in computes])
    pid = 1 + max((e["pid"] for e in merged["traceEvents"]), default=-1)
    return {
        "traceEvents": trace_events(steps, pid, origin_s) + merged["traceEvents"],
        "displayTimeUnit": "ns",
    }


def trace_end_us(trace: dict) -> float:
    return max((e["ts"] + e["dur"] for e in trace["traceEvents"] if e["ph"] == "X"), default=0.0)


def validate_trace(trace: dict) -> None:
    """Raise TraceError unless the trace is well-formed Chrome trace JSON whose slices nest
    properly on each thread (Perfetto drops or misplaces partially overlapping slices)."""
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise TraceError("a trace is an object with a 'traceEvents' list")
    try:
        json.dumps(trace, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TraceError(f"not JSON: {e}") from None
    named: set[tuple[int, int]] = set()
    slices: dict[tuple[int, int], list[tuple[float, float, int]]] = {}
    for i, e in enumerate(trace["traceEvents"]):
        where = f"event {i} ({e.get('name')!r})" if isinstance(e, dict) else f"event {i}"
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            raise TraceError(f"{where}: an event is an object with a string 'name'")
        if not all(isinstance(e.get(k), int) for k in ("pid", "tid")):
            raise TraceError(f"{where}: 'pid' and 'tid' must be integers")
        if e.get("ph") == "M":
            if e["name"] not in _METADATA or not isinstance(e.get("args"), dict):
                raise TraceError(f"{where}: unknown metadata event or no 'args'")
            if e["name"] == "thread_name":
                named.add((e["pid"], e["tid"]))
        elif e.get("ph") == "X":
            ts, dur = e.get("ts"), e.get("dur")
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (ts, dur)):
                raise TraceError(f"{where}: 'ts' and 'dur' must be finite numbers")
            if ts < 0 or dur < 0:
                raise TraceError(f"{where}: negative time (ts {ts}, dur {dur})")
            slices.setdefault((e["pid"], e["tid"]), []).append((ts, ts + dur, i))
        else:
            raise TraceError(f"{where}: phase {e.get('ph')!r}; the card's traces use 'X' and 'M'")
    for thread, spans in slices.items():
        if thread not in named:
            raise TraceError(f"thread {thread} (pid, tid) has slices but no thread_name")
        _check_nesting(thread, spans)


def _check_nesting(thread: tuple[int, int], spans: list[tuple[float, float, int]]) -> None:
    open_: list[tuple[float, float, int]] = []  # enclosing slices, innermost last
    for begin, end, i in sorted(spans, key=lambda s: (s[0], -s[1])):
        while open_ and open_[-1][1] <= begin + _EPS_US:
            open_.pop()
        if open_ and end > open_[-1][1] + _EPS_US:
            raise TraceError(f"thread {thread}: event {i} [{begin:.4f}, {end:.4f}] us overlaps "
                             f"event {open_[-1][2]} [{open_[-1][0]:.4f}, {open_[-1][1]:.4f}] us "
                             "without nesting in it")  # fmt: skip
        open_.append((begin, end, i))


def write_json(trace: dict, path: Path) -> None:
    path.write_text(json.dumps(trace, separators=(",", ":")))


# ---------------------------------------------------------------------------- the chart
def unit_busy(trace: dict) -> dict[str, list[tuple[float, float]]]:
    """Busy intervals (us) per thread name of the kernels' units, over all processes, in
    thread sort order; whole kernels (category ``program``, thread ``compute queue``) and
    the card's stream steps (category ``stream``) are left out."""
    names: dict[tuple[int, int], str] = {}
    order: dict[str, int] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_sort_index":
            order.setdefault(names.get((e["pid"], e["tid"]), ""), e["args"]["sort_index"])
    busy: dict[str, list[tuple[float, float]]] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and e.get("cat") not in ("program", "stream"):
            busy.setdefault(names[(e["pid"], e["tid"])], []).append((e["ts"], e["ts"] + e["dur"]))
    return dict(sorted(busy.items(), key=lambda kv: (order.get(kv[0], 1 << 30), kv[0])))


def binned_busy(intervals: list[tuple[float, float]], edges: Sequence[float]) -> list[float]:
    """Busy share of each bin [edges[j], edges[j+1]) (intervals on one unit do not overlap
    except by nesting, so nested ones are merged first)."""
    merged: list[list[float]] = []
    for begin, end in sorted(intervals):
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([begin, end])
    shares = []
    k = 0
    for lo, hi in zip(edges, edges[1:]):
        while k < len(merged) and merged[k][1] <= lo:
            k += 1
        covered, j = 0.0, k
        while j < len(merged) and merged[j][0] < hi:
            covered += min(hi, merged[j][1]) - max(lo, merged[j][0])
            j += 1
        shares.append(covered / (hi - lo))
    return shares


def kernel_spans(trace: dict) -> list[tuple[str, float, float, int]]:
    """(kernel name, start, end, cores) of each whole-kernel slice (category ``program``)."""
    return [(e["name"].lstrip("@"), e["ts"], e["ts"] + e["dur"], int(e["args"]["cores"]))
            for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") == "program"]  # fmt: skip


_UNIT_COLORS = {"ls": "tab:purple", "pe": "tab:blue", "sf": "tab:red"}  # by unit name prefix


def plot_utilization(trace: dict, path: Path, title: str, cores: int, bins: int = 300) -> None:
    """PNG: a top row of the kernels (coloured by kind; the longest ones named), a row of
    the cores each kernel runs on (of the card's ``cores``), then one row per unit with its
    busy share over simulated time."""
    import re

    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    busy = unit_busy(trace)
    end = trace_end_us(trace)
    edges = [end * j / bins for j in range(bins + 1)]
    mids = [(a + b) / 2 for a, b in zip(edges, edges[1:])]
    fig, axes = plt.subplots(len(busy) + 2, 1, sharex=True, figsize=(12, 1.0 + 0.75 * (len(busy) + 2)),
                             gridspec_kw={"height_ratios": [1.3] + [1] * (len(busy) + 1)})  # fmt: skip
    top, used, rows = axes[0], axes[1], axes[2:]
    kinds: dict[str, str] = {}
    palette = plt.get_cmap("Set2").colors  # kernels: muted, distinct from the unit colours
    spans = kernel_spans(trace)
    for name, begin, finish, _ in spans:
        kind = re.sub(r"_\d+$", "", name)
        color = kinds.setdefault(kind, palette[len(kinds) % len(palette)])
        top.axvspan(begin, finish, facecolor=color, edgecolor="white", lw=0.4)
    for name, begin, finish, _ in sorted(spans, key=lambda s: s[1] - s[2])[:6]:
        if finish - begin > end / 40:
            top.text(
                (begin + finish) / 2, 0.5, name, ha="center", va="center", fontsize=7, rotation=90
            )
    top.set_yticks([])
    top.set_ylabel("kernels", rotation=0, ha="right", va="center")
    top.legend(handles=[Patch(color=c, label=k) for k, c in kinds.items()], ncol=len(kinds),
               loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)  # fmt: skip
    top.set_title(title, loc="left", fontsize=10)
    for _, begin, finish, n in spans:
        used.fill_between([begin, finish], [n, n], color="tab:gray", alpha=0.8, lw=0)
    used.set_ylim(0, cores * 1.05)
    used.set_yticks([0, cores], ["0", str(cores)], fontsize=7)
    used.set_ylabel("cores\nin use", rotation=0, ha="right", va="center", fontsize=9)
    used.grid(axis="x", alpha=0.3)
    for ax, (unit, intervals) in zip(rows, busy.items()):
        shares = binned_busy(intervals, edges)
        mean = sum(shares) / len(shares)
        color = _UNIT_COLORS.get(unit.split()[0][:2], "tab:gray")
        ax.fill_between(mids, shares, step="mid", color=color, alpha=0.8, lw=0)
        ax.set_ylim(0, 1.05)
        ax.set_yticks([0, 1], ["0", "100%"], fontsize=7)
        ax.set_ylabel(f"{unit}\n{100 * mean:.0f}%", rotation=0, ha="right", va="center", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    rows[-1].set_xlabel(
        "simulated time (us); unit rows: busy share of core 0's units "
        "(the cores of a kernel all run the same program)"
    )
    rows[-1].set_xlim(0, end)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
