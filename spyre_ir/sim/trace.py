"""The simulated card's Chrome trace: one process per program, one thread per unit.

`trace_events(launches, config)` turns the events the scheduler recorded for core 0
(every core has the same timing) into the trace event JSON Perfetto and chrome://tracing
load; docs/simulator.md ("Reading a trace") describes it. A KV cache row store is a
program like any other (spyre-row-store-kernels).
"""

from __future__ import annotations

from collections.abc import Sequence

from spyre_ir.dialects import core
from spyre_ir.hardware import SpyreConfig
from spyre_ir.sim.lpddr import WRITE
from spyre_ir.sim.scheduler import LPDDR, RESOURCES, RING

# The LS unit's ports in a trace: a thread each (lane 1, 2) beside the unit's own (lane 0),
# and one more (lane 3) for its LPDDR5 write channel: a store streams out while a load
# streams in (sim/lpddr.py), so the two directions cannot share a thread.
_PORT_LANES = {LPDDR: 1, RING: 2}
_WRITE_LANE = 3


def _trace_tid(index: int, lane: int) -> int:
    """Thread id of a unit (`core.UNITS` index), lane 0, or of one of its ports."""
    return index + 1 if lane == 0 else len(core.UNITS) + lane


def trace_events(launches: Sequence, config: SpyreConfig) -> dict:
    """Chrome trace events: one process per program, one thread per unit (core 0), in
    the order they ran."""
    to_us = 1e6 / config.clock_hz
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "card"}},
        {"name": "process_sort_index", "ph": "M", "pid": 0, "tid": 0, "args": {"sort_index": 0}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "compute queue"}},
    ]  # fmt: skip
    start = 0.0
    for pid, program in enumerate(launches, start=1):
        name = program.op.sym_name.data
        stats = {k: v for k, v in program.stats.items() if not k.startswith("_")}
        events.append({"name": f"@{name}", "cat": "program", "ph": "X", "ts": start,
                       "dur": program.cycles * to_us, "pid": 0, "tid": 0,
                       "args": stats})  # fmt: skip
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"name": f"@{name} ({program.cores} cores)"}})  # fmt: skip
        events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                       "args": {"sort_index": pid}})  # fmt: skip
        for unit in program.units:
            lanes = _PORT_LANES if unit.name == "ls" else {}
            threads = [(unit.name, 0), *((f"{unit.name} {RESOURCES[r]}", k)
                                         for r, k in lanes.items())]  # fmt: skip
            writes = any(e[0].resource == LPDDR and e[3] == WRITE for e in unit.events)
            if lanes and writes:
                threads.append((f"{unit.name} {RESOURCES[LPDDR]} write", _WRITE_LANE))
            for thread, lane in threads:
                tid = _trace_tid(unit.index, lane)
                order = 10 * (unit.index + 1) + lane  # a unit's ports right after it
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": thread}})  # fmt: skip
                events.append({"name": "thread_sort_index", "ph": "M", "pid": pid,
                               "tid": tid, "args": {"sort_index": order}})  # fmt: skip
            for info, begin, cycles, channel in unit.events:
                lane = lanes.get(info.resource, 0)
                if info.resource == LPDDR and channel == WRITE:
                    lane = _WRITE_LANE
                tid = _trace_tid(unit.index, lane)
                events.append({
                    "name": info.name, "cat": RESOURCES[info.resource], "ph": "X",
                    "ts": start + begin * to_us, "dur": cycles * to_us,
                    "pid": pid, "tid": tid, "args": info.args,
                })  # fmt: skip
        start += program.cycles * to_us
    return {"traceEvents": events, "displayTimeUnit": "ns"}
