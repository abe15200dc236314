"""The simulated card's execution engine: runs L3 programs with numerics and timing.

    result = simulate(module, [x, w], entry="main", trace=True)
    result.outputs          # numpy arrays, as the interpreters return them
    result.report           # simulated_us, roofline_us, roofline_fraction, flops, ...
    result.trace            # Chrome trace event JSON (Perfetto), when asked for

`@entry` holds `core.program` ops (level L3, from `convert-dataflow-to-units`) with L1 ops between
them (`spyre.reshape` views and the like), which the L1 interpreter runs and which take
no simulated time. A `dataflow.kernel` or `dataflow.group` (L2) is refused: lower it to
units first (`spyre-opt -p spyre-to-units` from L1, `-p convert-dataflow-to-units` from L2).

Each `core.program` runs on the card alone (compute operations share one queue and run
one after another), so `simulated_us` is the sum over programs. Within a program:

* Numerics: every core at once, vectorised, with the L2 interpreter's machinery
  (`spyre_ir.interp.dataflow`): an LX buffer is an array [cores, ...], index values are
  per-core arrays, tile ops apply the L1 op they name - so the numbers are those of the
  L2 interpreter, bit for bit, when the program is correctly synchronised.
* Timing: discrete events. Each unit ("ls", "pe0", "pe1", "sfp0", "sfp1") runs its own
  instruction stream in order; a PE or SFP instruction starts when its unit is free and
  keeps it busy for a duration from `spyre_ir.cost_model` (instruction timing).
  `core.pop` takes the oldest token of its queue - a token carries the time it was
  pushed, and the unit's clock becomes max(clock, token time) - and blocks while the
  queue is empty; `core.push` blocks while the queue is full, until a pop frees a place
  (the pusher's clock becomes the time of that pop). The scheduler always advances the
  runnable unit with the smallest clock (conservative discrete events) and runs each
  instruction's numerics when the unit reaches it, so the queues alone order the data:
  a mis-synchronised program computes wrong numbers, which the differential tests
  catch. When every unfinished unit is blocked, `SimulationError` names each one and
  the queue it waits on. A queue must end as it started (its initial credits); leftover
  tokens mean pushes and pops do not match, also an error.
* The load/store unit issues its instructions in order, `ls_issue_cycles` each, to one
  of two ports that work concurrently: the LPDDR5 port (`ls.load`, `ls.store`,
  `ls.gather`: the card's shared bandwidth) and the ring port (`ls.ring_allreduce`,
  `ls.ring_allgather`: the ring's own links). Each port runs its instructions one at a
  time in issue order; an LX rearrangement (`ls.compute`) runs on the unit itself,
  which issues nothing meanwhile. An instruction starts once it is issued, its port is
  free, and the earlier LS instructions touching the same LX bytes allow it: it reads
  bytes only after an earlier write of them has landed (the all-gather of an A slice
  waits for the load that brought it), and writes bytes only after an earlier write of
  them has landed and earlier readers are done with them. Slots of one buffer, and
  buffers at disjoint LX offsets, are independent; buffers sharing LX bytes are not.
  LPDDR5 latency: the port is busy for a move's transfer only (it keeps several
  requests in flight); data loaded into LX lands `lpddr_latency_s` after the transfer,
  a store frees its LX buffer at the end of its transfer, and the program ends once
  its stores have reached LPDDR5. A push of the LS unit carries the time when every
  instruction issued before it is done (its data landed, its LX operands read out), so
  a token pushed after a load carries the load's landing time.
* Cores: SPMD cores run the same control flow (loop bounds and branch conditions are
  uniform, as the L2 interpreter requires), so the cores of a program form ONE timing
  equivalence class: timing is simulated once and holds for every core. A move is timed
  by the largest box any core moves (never less than the box clipped to the tensor), so
  a core whose edge tile overhangs the tensor, or lies past its end, still spends the
  time of a full tile. LPDDR5 bandwidth is shared by all the program's cores
  (processor sharing: each streams at bandwidth / cores), which is the contention.

A program run again (same op, unchanged, same config) replays the numerics recorded
on its first run and reuses that run's timing (`spyre_ir.sim.replay`): the results are
the same, bit for bit, without the scheduler.

Report (`SimResult.report`; every program also has the same fields in `kernels`):

* `simulated_us`: the sum over programs of the time the last unit or LS port finishes
  (and the last store has reached LPDDR5).
* `roofline_us`: per program max(flops / fp16 peak of the card, minimal LPDDR5 bytes /
  bandwidth), summed; minimal bytes = the program's inputs and outputs in whole sticks
  (or the bytes actually moved, if fewer: an input read only in part).
* `roofline_fraction` = roofline_us / simulated_us (<= 1 by construction, asserted).
* `flops`: executed by all cores - matmul 2 m n k, any other tile op one per element of
  its largest operand, fills (full, iota) none; edge-tile padding included.
  `lpddr_bytes`: whole sticks moved by all cores (inside the tensors).
  `ring_bytes`: bytes sent on the ring by all cores.
* `lx_peak_bytes`: the largest per-core scratchpad peak of any program.
* `bottleneck`: the resource with the highest busy time - "pe" / "sfp" (the busier of
  the two corelets), "lpddr" (the LS unit's LPDDR5 port), "ring" (its ring port), "ls"
  (the LS unit itself: issuing, LX rearrangements); overall: that of the longest
  program.
* `utilization`: busy time / program time per unit ("ls", "pe0", ...), per unit kind
  ("pe", "sfp": the mean of the two corelets) and per LS port ("lpddr", "ring"). The
  LS unit's ports and the unit itself work concurrently, so `utilization["ls"]` is the
  share of the busiest of them (normally a port), not their sum.
* `busy_us`: busy time per resource, of the busiest unit using it.

Trace (`trace=True`): `{"traceEvents": [...]}`, one process per program (pid 1, 2 ...),
one thread per unit (tid) and one per LS port ("ls lpddr", "ls ring"), a complete event
(ph "X", ts and dur in microseconds) per instruction of core 0 (all cores have the same
timing; an LS instruction on the thread of its port, from when the port starts it), and
metadata events naming programs and threads; process 0 ("card") shows the programs one
after another, each with its report in `args`. Load it in https://ui.perfetto.dev or
chrome://tracing. docs/simulator.md describes the model, its parameters and the report.
"""

from __future__ import annotations

import ctypes
import functools
import heapq
import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp, NoneAttr
from xdsl.ir import Block, Operation

from spyre_ir import cost_model as cm
from spyre_ir.dialects import core, ls, pe, sfp
from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES, SpyreConfig
from spyre_ir.interp.dataflow import (
    _DataflowInterpreter,
    _Kernel,
    _Located,
    _Lx,
    _signed,
    _width,
)
from spyre_ir.interp.tensor import InterpreterError, op_label, run_entry
from spyre_ir.sim import replay

__all__ = ["SimResult", "SimulationError", "simulate"]

RESOURCES = ("pe", "sfp", "lpddr", "ring", "ls")
PE, SFP, LPDDR, RING, LS = range(len(RESOURCES))

_L2_INSTRUCTIONS = (D.LoadBase, D.StoreBase, D.GatherBase, D.ComputeBase,
                    D.RingAllreduceBase, D.RingAllgatherBase)  # fmt: skip

_RELEASED = np.zeros(0, np.float32)
"""What a recorded program's LX buffers hold between runs."""

# Step codes of a compiled unit block, and the events a unit stream yields.
_PLAIN, _INSTR, _PUSH, _POP, _FOR, _IF, _END = range(7)


class SimulationError(InterpreterError):
    """A program the card cannot run: a deadlock, unmatched pushes and pops, or an L2
    op where L3 is needed."""


@dataclass
class SimResult:
    """What `simulate` returns: the entry's results, the report, and the trace (a dict
    ready for `json.dump`) when one was asked for."""

    outputs: list[np.ndarray]
    report: dict
    trace: dict | None = None


def simulate(
    module: ModuleOp,
    args: Sequence[np.ndarray],
    entry: str = "main",
    config: SpyreConfig = DEFAULT_CONFIG,
    *,
    trace: bool = False,
    check_races: bool = False,
    blas_threads: int | None = None,
    card_format: bool = False,
) -> SimResult:
    """Run `func.func @entry` of an L3 `module` on the simulated card.

    Arguments are checked as by the interpreters (shapes, storage dtypes); f16 tensors
    are DLFloat16 on the card, converted from and to float16 at the boundary, or given
    and returned as float32 arrays of DLFloat16 values with `card_format` (as
    `spyre_ir.interp.dataflow.run_module` takes them). `trace`
    also returns a Chrome trace of core 0's instructions; `check_races` turns on the
    L2 interpreter's store checks (two cores writing different values to one element,
    outputs left unwritten). `blas_threads`: run numpy's OpenBLAS with that many
    threads meanwhile (1 makes the many small per-tile matmuls robust on a busy
    machine: multithreaded OpenBLAS slows down ~10x when another process holds a
    core); OpenBLAS rounds float32 sums differently with another thread count, so
    results then match an L2/L1 run only if it used the same count. Raises
    `SimulationError` (deadlock, unmatched queues, L2 ops) or `InterpreterError` (an
    op that cannot run), naming the op."""
    interp = _SimInterpreter(module, config, check_races, trace, card_format)
    with _blas_threads(blas_threads):
        outputs = run_entry(interp, args, entry)
    report = _report([p.stats for p in interp.programs], config)
    events = _trace_events(interp.programs, config) if trace else None
    return SimResult(outputs, report, events)


class _SimInterpreter(_DataflowInterpreter):
    """The L2 interpreter's function level, running `core.program`s on the card."""

    def __init__(self, module: ModuleOp, config: SpyreConfig, check_races: bool, trace: bool,
                 card_format: bool) -> None:  # fmt: skip
        super().__init__(module, check_races, "dlfloat16", card_format)
        self.config = config
        self.tracing = trace
        self.programs: list[_Program] = []

    def run_op(self, op: Operation, operands: list) -> list:
        if isinstance(op, core.ProgramOp):
            program = _Program(self, op)
            results = program.run(operands)
            self.programs.append(program)
            for value, result in zip(results, op.results):
                self.check_result(value, op, result, "simulator")
            return results
        if isinstance(op, (D.KernelOp, D.GroupOp)):
            raise SimulationError(
                f"{op_label(op)}: @{op.sym_name.data} is still an L2 {op.name}; the "
                "simulator runs L3 programs - lower it to units first (spyre-opt -p "
                "convert-dataflow-to-units on L2, -p spyre-to-units on L1; or "
                "spyre_ir.pipelines.lower_to_units)"
            )
        return super().run_op(op, operands)


# ---------------------------------------------------------------- units and queues


class _Queue:
    """A token queue: each token is the time (cycles) it became available."""

    __slots__ = ("op", "label", "depth", "credits", "tokens", "pusher", "popper")

    def __init__(self, op: core.QueueOp, index: int):
        self.op = op
        self.depth = op.depth.value.data
        self.credits = op.credits.value.data
        name = f"%{op.queue.name_hint}" if op.queue.name_hint else f"#{index}"
        self.label = (
            f"queue {name} ({op.source.data} -> {op.dest.data}, depth {self.depth}, "
            f"{self.credits} initial tokens)"
        )
        self.tokens: deque[float] = deque([0.0] * self.credits)
        self.pusher: _Unit | None = None
        self.popper: _Unit | None = None


class _Unit:
    """One unit's instruction stream and clock (cycles)."""

    __slots__ = ("name", "index", "gen", "op", "path", "clock", "ready", "drained", "busy",
                 "ports", "blocked", "done", "events")  # fmt: skip

    def __init__(self, name: str, index: int, gen: Iterator, op: core.UnitOp, path: list):
        self.name, self.index, self.gen, self.op, self.path = name, index, gen, op, path
        self.clock = 0.0  # when the unit is free for its next instruction (LS: to issue)
        self.ready = 0.0  # when its instructions so far are done: results in LX, LX read out
        self.drained = 0.0  # when its stores so far have reached LPDDR5
        self.busy = [0.0] * len(RESOURCES)
        self.ports = [0.0] * len(RESOURCES)  # LS: when the LPDDR5 / ring port is free
        self.blocked: tuple | None = None  # the (code, queue, op) it waits on
        self.done = False
        self.events: list[tuple] = []  # (info, start, cycles) when tracing


@dataclass
class _Info:
    """Static facts about one instruction, for traces."""

    name: str
    resource: int
    args: dict = field(default_factory=dict)


# ---------------------------------------------------------------- programs


class _Program(_Kernel):
    """One run of a `core.program`: the L2 kernel machinery (handlers for index ops,
    buffers, moves and tile ops, all vectorised over cores) driven by a discrete-event
    scheduler of the program's units instead of one walk of a kernel body."""

    def __init__(self, interp: _SimInterpreter, op: core.ProgramOp):
        super().__init__(interp, op)  # type: ignore[arg-type]
        self.config = interp.config
        self.tracing = interp.tracing
        self.compiled: dict[Block, list[tuple]] = {}
        self.units: list[_Unit] = []
        self.queues: list[_Queue] = []
        self.flops = 0  # per core
        self.lpddr_bytes = 0  # all cores
        self.ring_bytes = 0.0  # all cores
        # LX buffer root -> (address space, first byte, bytes per view after k slot indices)
        self.places: dict[object, tuple[object, int, tuple[int, ...]]] = {}
        self.cycles = 0.0
        self.stats: dict = {}
        self.recorder: replay.Recorder | None = None

    # -------------------------------------------------------- driver

    def run_block(self, block: Block, args: Sequence[object]) -> list:
        """The program body (called by `_Kernel.run` with the core id and the memories):
        declare buffers, constants and queues, then schedule the units."""
        if block is not self.op.body.block:
            return super().run_block(block, args)
        if not self.check:
            recording = replay.lookup(self.op, self.config, self.tracing)
            if recording is not None:
                self._replay(recording, args)
                return []
            self.recorder = replay.Recorder(self.op, self.config, args)
        values = self.values
        values.update(zip(block.args, args))
        for op in block.ops:
            if isinstance(op, core.QueueOp):
                queue = _Queue(op, len(self.queues))
                self.queues.append(queue)
                values[op.queue] = queue
            elif isinstance(op, core.UnitOp):
                name = op.unit.data
                path: list = []
                stream = self._stream(op.body.block, [], path)
                self.units.append(_Unit(name, core.UNITS.index(name), stream, op, path))
            elif isinstance(op, core.EndOp):
                break
            else:  # dataflow.alloc_lx, arith.constant
                values.update(zip(op.results, self._call(op, [values[v] for v in op.operands])))
                if isinstance(op, D.AllocLxOp):
                    self._place(op, values[op.buffer])
        self._schedule()
        self._check_queues()
        self.stats = self._stats()
        if self.recorder is not None:
            self._keep_recording(self.recorder)
        return []

    _TIMING = ("units", "queues", "flops", "lpddr_bytes", "ring_bytes", "cycles", "stats")

    def _keep_recording(self, recorder: replay.Recorder) -> None:
        recording = recorder.recording
        recording.buffers = [(root, root.array.shape, root.array.dtype) for root in self.places]
        ops = {step.op for step in recording.steps}
        recording.tiles = {op: t for op, t in self.interp.tiles.items() if op in ops}
        recording.timing = {name: getattr(self, name) for name in self._TIMING}
        recording.traced = self.tracing
        recorder.keep(self.op)
        self._release(recording)

    def _replay(self, recording: replay.Recording, memories: Sequence[object]) -> None:
        """The recorded numerics on this run's memories (see `spyre_ir.sim.replay`)."""
        for root, shape, dtype in recording.buffers:
            root.array = np.zeros(shape, dtype)
        self.interp.tiles.update(recording.tiles)
        try:
            for step in recording.steps:
                operands = step.operands
                if step.memory_slots:
                    operands = list(operands)
                    for i, j in step.memory_slots:
                        operands[i] = memories[j]
                self.box_feed = iter(step.boxes)
                try:
                    step.function(self, step.op, operands)
                except _Located:
                    raise
                except (InterpreterError, ValueError, TypeError, IndexError) as error:
                    raise self.error(step.op, str(error)) from None
        finally:
            self.box_feed = None
            self._release(recording)
        for name, value in recording.timing.items():
            setattr(self, name, value)

    @staticmethod
    def _release(recording: replay.Recording) -> None:
        """Drop the LX arrays: a recording keeps no tensor data between runs."""
        for root, _, _ in recording.buffers:
            root.array = _RELEASED

    def _call(self, op: Operation, operands: list) -> list:
        try:
            return self.handler(op)(op, operands)
        except _Located:
            raise
        except (InterpreterError, ValueError, TypeError, IndexError) as error:
            raise self.error(op, str(error)) from None

    def error(self, op: Operation, message: str) -> InterpreterError:
        return _Located(f"{op_label(op)} (program @{self.op.sym_name.data}): {message}")

    def _place(self, op: D.AllocLxOp, buffer: _Lx) -> None:
        """Where an LX buffer lies, for the LS unit's dependencies: allocated buffers
        share one address space (buffers whose lifetimes do not overlap may share
        bytes); an unallocated one is a space of its own."""
        t = op.buffer.type
        sizes, size = [], t.nbytes
        for d in (1, *t.get_shape()):
            size = size // d if d else 0
            sizes.append(size)
        space = "lx" if op.offset is not None else buffer.root
        base = op.offset_value if op.offset is not None else 0
        self.places[buffer.root] = (space, base, tuple(sizes))

    def _region(self, buffer: _Lx) -> tuple[object, int, int]:
        """(address space, first byte, end byte) of an LX buffer or slot of one; a slot
        index that differs between cores stands for all the slots (conservative)."""
        place = self.places.get(buffer.root)
        if place is None:
            return buffer.root, 0, 1 << 62
        space, lo, sizes = place
        depth = 0
        for i in buffer.index:
            if not isinstance(i, int):
                break
            depth += 1
            lo += i * sizes[depth]
        return space, lo, lo + sizes[depth]

    # -------------------------------------------------------- unit streams

    def _compile(self, block: Block) -> list[tuple]:
        """(code, op, operand values, result values, handler, timer) per op of a unit
        block: what `_stream` needs without asking the op again every iteration."""
        steps = self.compiled.get(block)
        if steps is not None:
            return steps
        steps = []
        for op in block.ops:
            operands, results = tuple(op.operands), tuple(op.results)
            if isinstance(op, (scf.YieldOp, core.EndOp)):
                steps.append((_END, op, operands, results, None, None))
            elif isinstance(op, core.PushOp):
                steps.append((_PUSH, op, operands, results, None, None))
            elif isinstance(op, core.PopOp):
                steps.append((_POP, op, operands, results, None, None))
            elif isinstance(op, scf.ForOp):
                steps.append((_FOR, op, operands, results, None, None))
            elif isinstance(op, scf.IfOp):
                steps.append((_IF, op, operands, results, None, None))
            else:
                handler = self.handler(op)
                timer = self._timer(op)
                if timer is None and isinstance(op, _L2_INSTRUCTIONS):
                    raise SimulationError(
                        f"{op_label(op)}: an L2 instruction in unit program of "
                        f"@{self.op.sym_name.data}; units run ls.*, pe.* and sfp.* ops"
                    )
                steps.append((_PLAIN if timer is None else _INSTR, op, operands, results,
                              handler, timer))  # fmt: skip
        self.compiled[block] = steps
        return steps

    def _stream(self, block: Block, args: Sequence[object], path: list) -> Iterator[tuple]:
        """Run a unit block, yielding an event per instruction (after running its
        numerics) and per push/pop; returns the terminator's operands. `path` holds the
        iteration of every enclosing loop (for messages)."""
        values = self.values
        values.update(zip(block.args, args))
        recorder = self.recorder
        for code, op, ins, outs, handler, timer in self._compile(block):
            operands = [values[v] for v in ins]
            if code == _PLAIN or code == _INSTR:
                try:
                    if recorder is not None and code == _INSTR:
                        self.box_log = []
                        results = handler(op, operands)
                        recorder.add(handler, op, operands, self.box_log)
                        self.box_log = None
                    else:
                        results = handler(op, operands)
                    event = timer(op, operands) if code == _INSTR else None
                except _Located:
                    raise
                except (InterpreterError, ValueError, TypeError, IndexError) as error:
                    raise self.error(op, str(error)) from None
                if outs:
                    values.update(zip(outs, results))
                if event is not None:
                    yield event
            elif code == _PUSH or code == _POP:
                yield (code, operands[0], op)
            elif code == _FOR:
                try:
                    lb, ub, step = (
                        self._uniform_operand(v, what)
                        for v, what in zip(operands[:3], ("lower bound", "upper bound", "step"))
                    )
                    if step <= 0:
                        raise InterpreterError(f"the step must be positive, got {step}")
                except InterpreterError as error:
                    raise self.error(op, str(error)) from None
                carried = operands[3:]
                width = _width(op.lb.type)
                body = op.body.block
                path.append(None)
                for i in range(lb, ub, step):
                    path[-1] = (i, lb, ub, step)
                    carried = yield from self._stream(body, [_signed(i, width), *carried], path)
                path.pop()
                values.update(zip(outs, carried))
            elif code == _IF:
                try:
                    taken = self._uniform_operand(operands[0], "scf.if condition")
                except InterpreterError as error:
                    raise self.error(op, str(error)) from None
                region = op.true_region if taken else op.false_region
                if region.blocks:
                    results = yield from self._stream(region.block, [], path)
                    values.update(zip(outs, results))
            else:
                return operands
        return []

    # -------------------------------------------------------- scheduling

    def _schedule(self) -> None:
        """Advance the runnable unit with the smallest clock until all are done or all
        that are left wait (a deadlock)."""
        heap = [(0.0, u.index, u) for u in self.units]
        heapq.heapify(heap)
        tracing = self.tracing
        push, pop = heapq.heappush, heapq.heappop
        issue = float(cm.ls_issue_cycles(self.config))
        # LX accesses of the LS unit: address space -> {(first, end byte): [when the
        # data last written there lands, when its last reader is done with it]}
        regions: dict[object, dict[tuple[int, int], list[float]]] = {}
        while heap:
            _, _, unit = pop(heap)
            gen = unit.gen
            while True:
                try:
                    event = next(gen)
                except StopIteration:
                    unit.done = True
                    break
                code = event[0]
                if code == _INSTR:
                    _, cycles, latency, info, reads, writes = event
                    resource = info.resource
                    if resource < LPDDR:  # PE, SFP: the unit itself, in order
                        start = unit.clock
                        unit.clock = start + cycles
                    else:
                        start = self._ls_instruction(
                            unit, cycles, latency, resource, reads, writes, issue, regions
                        )
                    unit.busy[resource] += cycles
                    if tracing:
                        unit.events.append((info, start, cycles))
                elif code == _PUSH:
                    queue = event[1]
                    if len(queue.tokens) >= queue.depth:
                        unit.blocked = event
                        queue.pusher = unit
                        break
                    woken = self._push(queue, unit)
                    if woken is not None:
                        push(heap, (woken.clock, woken.index, woken))
                else:
                    queue = event[1]
                    if not queue.tokens:
                        unit.blocked = event
                        queue.popper = unit
                        break
                    woken = self._pop(queue, unit)
                    if woken is not None:
                        push(heap, (woken.clock, woken.index, woken))
                if heap and heap[0][0] < unit.clock:
                    push(heap, (unit.clock, unit.index, unit))
                    break
        waiting = [u for u in self.units if not u.done]
        if waiting:
            raise self._deadlock(waiting)
        self.cycles = max((max(u.clock, u.ready, u.drained) for u in self.units), default=0.0)

    @staticmethod
    def _ls_instruction(
        unit: _Unit,
        cycles: float,
        latency: float,
        resource: int,
        reads: tuple[tuple, ...],
        writes: tuple[tuple, ...],
        issue: float,
        regions: dict[object, dict[tuple[int, int], list[float]]],
    ) -> float:
        """Issue an LS instruction and time it on its port; returns its start.

        The unit issues in order, `issue` cycles each. A move (LPDDR5) or collective
        (ring) then waits for its port (each port runs its instructions in order) and for
        its LX operands: data it reads must have landed (read after write), a buffer it
        writes must have landed (write after write) and been read out by earlier LS
        readers (write after read). Ports run concurrently; the unit goes on issuing. A
        rearrangement (LX -> LX) runs on the unit itself, which issues nothing
        meanwhile. `reads` / `writes`: (address space, first byte, end byte) of each LX
        operand (`_region`); accesses depend on each other when their bytes overlap."""
        issued = unit.clock + issue
        unit.busy[LS] += issue
        start = issued
        if resource != LS:
            free = unit.ports[resource]
            if free > start:
                start = free
        for accesses, writing in ((reads, False), (writes, True)):
            for space, lo, hi in accesses:
                entries = regions.get(space)
                if entries is None:
                    continue
                for (other_lo, other_hi), (landed, read) in entries.items():
                    if other_lo >= hi or lo >= other_hi:
                        continue
                    if landed > start:
                        start = landed
                    if writing and read > start:
                        start = read
        end = start + cycles
        if resource == LS:
            unit.clock = end
        else:
            unit.clock = issued
            unit.ports[resource] = end
        landed = end + latency
        for space, lo, hi in reads:
            entry = regions.setdefault(space, {}).setdefault((lo, hi), [0.0, 0.0])
            if end > entry[1]:
                entry[1] = end
        for space, lo, hi in writes:
            regions.setdefault(space, {}).setdefault((lo, hi), [0.0, 0.0])[0] = landed
        if writes:  # the data lands in LX `latency` after the transfer
            if landed > unit.ready:
                unit.ready = landed
        else:  # a store: its LX buffer is free at `end`, LPDDR5 has the data at `landed`
            if end > unit.ready:
                unit.ready = end
            if landed > unit.drained:
                unit.drained = landed
        return start

    @staticmethod
    def _push(queue: _Queue, unit: _Unit) -> _Unit | None:
        """A token from `unit` (available once its results are); hands it straight to
        a unit waiting to pop, which is returned to be scheduled again."""
        token = unit.clock if unit.clock > unit.ready else unit.ready
        popper = queue.popper
        if popper is None:
            queue.tokens.append(token)
            return None
        queue.popper = popper.blocked = None
        if token > popper.clock:
            popper.clock = token
        return popper

    @staticmethod
    def _pop(queue: _Queue, unit: _Unit) -> _Unit | None:
        """Take the oldest token; a unit waiting to push gets the freed place at this
        time, pushes, and is returned to be scheduled again."""
        token = queue.tokens.popleft()
        if token > unit.clock:
            unit.clock = token
        pusher = queue.pusher
        if pusher is None:
            return None
        queue.pusher = pusher.blocked = None
        if unit.clock > pusher.clock:
            pusher.clock = unit.clock
        queue.tokens.append(pusher.clock if pusher.clock > pusher.ready else pusher.ready)
        return pusher

    def _deadlock(self, waiting: list[_Unit]) -> SimulationError:
        lines = []
        for u in waiting:
            assert u.blocked is not None
            code, queue, op = u.blocked
            what = "push to" if code == _PUSH else "pop from"
            state = "full" if code == _PUSH else "empty"
            syncs = [s for s in u.op.walk() if isinstance(s, (core.PushOp, core.PopOp))]
            where = f"sync op #{syncs.index(op) + 1} of the unit"
            for i, lb, ub, step in u.path:
                where += f", iteration {(i - lb) // step + 1} of {len(range(lb, ub, step))}"
            lines.append(
                f"  unit {u.name} (at cycle {u.clock:.0f}) waits to {what} {queue.label}, "
                f"which stays {state}: {op_label(op)} ({where})"
            )
        done = [u.name for u in self.units if u.done]
        tail = f"\n  finished: {', '.join(done)}" if done else ""
        return SimulationError(
            f"{op_label(self.op)}: deadlock in program @{self.op.sym_name.data}: every "
            f"unfinished unit waits on a queue\n" + "\n".join(lines) + tail
        )

    def _check_queues(self) -> None:
        bad = [q for q in self.queues if len(q.tokens) != q.credits]
        if bad:
            lines = [
                f"  {q.label} ends with {len(q.tokens)} tokens: "
                f"{len(q.tokens) - q.credits} more pushes than pops"
                for q in bad
            ]
            raise SimulationError(
                f"{op_label(self.op)}: program @{self.op.sym_name.data} finished with "
                "unmatched pushes and pops\n" + "\n".join(lines)
            )

    # -------------------------------------------------------- timing of instructions

    def _timer(self, op: Operation) -> Callable[[Operation, list], tuple] | None:
        """How an instruction is timed: a function of the op and its operands that
        counts flops and bytes and returns the event (code, cycles, latency, info,
        LX regions read, LX regions written) - the regions (`_region`) only for the LS
        unit, whose moves complete `latency` after their port is done with them; None
        for ops that take no time (index arithmetic, slots)."""
        config, cores = self.config, self.cores
        latency = config.lpddr_latency_cycles
        if isinstance(op, (ls.LoadOp, ls.StoreOp)):
            load = isinstance(op, ls.LoadOp)
            memory = (op.source if load else op.dest).type
            tile = (op.dest if load else op.source).type
            assert isinstance(memory, D.DdrType) and isinstance(tile, D.LxType)
            extents = D._box_shape(tile.get_shape(), D.ints(op.perm) if load else ())
            shape = memory.get_shape()
            stick_dim, per_stick = _stick_geometry(memory, config)
            nominal = cm.box_sticks(extents, shape, stick_dim, per_stick)
            info = _Info(op.name, LPDDR, {"sticks": nominal})
            offsets = slice(1, -1) if load else slice(2, None)
            stick = config.stick_bytes

            def move(op: Operation, operands: list) -> tuple:
                largest, total = _box_sticks_per_core(
                    operands[offsets], extents, shape, stick_dim, per_stick, cores
                )
                most = max(nominal, largest)
                self.lpddr_bytes += total * stick
                cycles = cm.lpddr_transfer_cycles(most * stick, cores, config)
                if load:
                    return (_INSTR, cycles, latency, info, (), (self._region(operands[-1]),))
                return (_INSTR, cycles, latency, info, (self._region(operands[0]),), ())

            return move
        if isinstance(op, ls.GatherOp):
            table, indices = op.table.type, op.indices.type
            assert isinstance(table, D.DdrType) and isinstance(indices, D.LxType)
            shape = table.get_shape()
            stick_dim, per_stick = _stick_geometry(table, config)
            row = cm.box_sticks((1, *shape[1:]), shape, stick_dim, per_stick)
            nbytes = math.prod(indices.get_shape()) * row * config.stick_bytes
            info = _Info(op.name, LPDDR, {"bytes": nbytes})
            cycles = cm.lpddr_transfer_cycles(nbytes, cores, config)
            return self._static(cycles, latency, info, (1,), (2,), lpddr=nbytes * cores)
        if isinstance(op, ls.RingAllreduceOp):
            t = op.buffer.type
            assert isinstance(t, D.LxType)
            g, stride = op.group_size.value.data, op.stride_value
            cycles = cm.ring_allreduce_cycles(t.nbytes, g, config, stride)
            info = _Info(op.name, RING, {"bytes": t.nbytes, "group": g})
            sent = cm.ring_bytes_sent(t.nbytes, g, True) * cores
            return self._static(cycles, 0.0, info, (0,), (0,), ring=sent)
        if isinstance(op, ls.RingAllgatherOp):
            t = op.full.type
            assert isinstance(t, D.LxType)
            g, stride = op.group_size.value.data, op.stride_value
            cycles = cm.ring_allgather_cycles(t.nbytes, g, config, stride)
            info = _Info(op.name, RING, {"bytes": t.nbytes, "group": g})
            sent = cm.ring_bytes_sent(t.nbytes, g, False) * cores
            return self._static(cycles, 0.0, info, (0,), (1,), ring=sent)
        if isinstance(op, (ls.ComputeOp, pe.ComputeOp, sfp.ComputeOp)):
            kind = op.kind.data
            types = [v.type for v in (*op.inputs, *op.outputs)]
            shapes = [t.get_shape() for t in types if isinstance(t, D.LxType)]
            elements = max((math.prod(s) for s in shapes), default=1)
            if isinstance(op, ls.ComputeOp):
                out = op.outputs[0].type
                assert isinstance(out, D.LxType)
                n = len(op.inputs)
                info = _Info(kind, LS, {"op": op.name, "bytes": out.nbytes})
                cycles = cm.ls_rearrange_cycles(out.nbytes, config)
                return self._static(cycles, 0.0, info, tuple(range(n)), (n,))
            flops = elements if op.inputs else 0  # a fill (full, iota) computes nothing
            if isinstance(op, sfp.ComputeOp):
                cycles, resource = cm.sfp_cycles(kind, elements, config), SFP
            elif kind == "spyre.matmul" and len(op.inputs) == 2:
                batch, m, n, k = _matmul_dims(shapes[0], shapes[1], shapes[2])
                cycles, resource = cm.pe_matmul_cycles(m, n, k, config, batch), PE
                flops = 2 * batch * m * n * k
            else:
                cycles, resource = cm.pe_elementwise_cycles(elements, config), PE
            info = _Info(kind, resource, {"op": op.name, "flops": flops})
            return self._static(cycles, 0.0, info, flops=flops)
        return None

    def _static(
        self,
        cycles: float,
        latency: float,
        info: _Info,
        reads: tuple[int, ...] = (),
        writes: tuple[int, ...] = (),
        flops: int = 0,
        lpddr: int = 0,
        ring: float = 0.0,
    ) -> Callable[[Operation, list], tuple]:
        """A timer whose duration and counts do not depend on the operands; `reads`
        and `writes` index the operands that are LX buffers an LS instruction reads and
        writes."""
        cycles = float(cycles)
        if not reads and not writes:
            event = (_INSTR, cycles, latency, info, (), ())

            def timer(op: Operation, operands: list) -> tuple:
                self.flops += flops
                return event

            return timer

        def ls_timer(op: Operation, operands: list) -> tuple:
            self.lpddr_bytes += lpddr
            self.ring_bytes += ring
            return (_INSTR, cycles, latency, info,
                    tuple(self._region(operands[i]) for i in reads),
                    tuple(self._region(operands[i]) for i in writes))  # fmt: skip

        return ls_timer

    # -------------------------------------------------------- results

    def _stats(self) -> dict:
        config, op = self.config, self.op
        cycles = self.cycles
        us = cm.cycles_to_us(cycles, config)
        flops = self.flops * self.cores
        io_bytes = sum(
            _tensor_bytes(arg.type, config)
            for arg in (*op.input_memories, *op.output_memories)
        )
        minimal_bytes = min(io_bytes, self.lpddr_bytes)
        roofline_s = max(flops / config.fp16_peak_flops, minimal_bytes / config.lpddr_bandwidth)
        roofline_us = roofline_s * 1e6
        units = {u.name: u for u in self.units}

        def busy(name: str, resource: int | None = None) -> float:
            """Busy cycles of a unit's resource; of the unit: its busiest resource (the
            LS unit's ports and its own time work concurrently)."""
            u = units.get(name)
            if u is None:
                return 0.0
            return max(u.busy) if resource is None else u.busy[resource]

        busy_cycles = {
            "pe": max(busy("pe0", PE), busy("pe1", PE)),
            "sfp": max(busy("sfp0", SFP), busy("sfp1", SFP)),
            "lpddr": busy("ls", LPDDR),
            "ring": busy("ls", RING),
            "ls": busy("ls", LS),
        }
        bottleneck = max(busy_cycles, key=lambda r: busy_cycles[r]) if cycles else None
        unit_busy = {name: busy(name) for name in core.UNITS}
        unit_busy.update({
            "pe": (unit_busy["pe0"] + unit_busy["pe1"]) / 2,
            "sfp": (unit_busy["sfp0"] + unit_busy["sfp1"]) / 2,
            "lpddr": busy_cycles["lpddr"],
            "ring": busy_cycles["ring"],
        })  # fmt: skip
        fraction = roofline_us / us if us else 1.0
        assert fraction <= 1 + 1e-9, f"@{op.sym_name.data}: faster than the roofline"
        peak = op.lx_peak_bytes.value.data if op.lx_peak_bytes is not None else _lx_peak(op)
        return {
            "name": op.sym_name.data,
            "cores": self.cores,
            "simulated_us": us,
            "roofline_us": roofline_us,
            "roofline_fraction": fraction,
            "flops": flops,
            "lpddr_bytes": self.lpddr_bytes,
            "ring_bytes": int(round(self.ring_bytes)),
            "lx_peak_bytes": peak,
            "bottleneck": bottleneck,
            "utilization": {k: (v / cycles if cycles else 0.0) for k, v in unit_busy.items()},
            "busy_us": {k: cm.cycles_to_us(v, config) for k, v in busy_cycles.items()},
            # for the overall report
            "_busy_cycles": busy_cycles,
            "_unit_busy": unit_busy,
            "_cycles": cycles,
        }


# ---------------------------------------------------------------- helpers




def _stick_geometry(memory: D.DdrType, config: SpyreConfig) -> tuple[int, int]:
    """(stick dim, elements per stick) of a tensor in LPDDR5: from its stick layout,
    else the default layout (the last dim, 128 bytes of elements)."""
    layout = memory.layout
    if not isinstance(layout, NoneAttr):
        return layout.stick_dim.data, layout.device_sizes.data[-1].data
    elem = ELEMENT_BYTES[element_type_name(memory.element_type)]
    return len(memory.get_shape()) - 1, config.stick_bytes // elem


def _box_sticks_per_core(
    offsets: Sequence[object],
    extents: Sequence[int],
    shape: Sequence[int],
    stick_dim: int,
    per_stick: int,
    cores: int,
) -> tuple[int, int]:
    """(the most any core moves, the sum over cores): the sticks inside the tensor that
    each core's box touches. Offsets the same on every core (0-d) are counted in Python,
    the others as [cores] arrays."""
    uniform, varying = 1, []
    for d, (o, e, n) in enumerate(zip(offsets, extents, shape)):
        if isinstance(o, np.ndarray) and o.ndim:
            varying.append((d, o, e, n))
            continue
        o = int(o)
        lo, hi = min(max(o, 0), n), min(max(o + e, 0), n)
        if d == stick_dim:
            uniform *= -(-hi // per_stick) - lo // per_stick if hi > lo else 0
        else:
            uniform *= hi - lo
    if not varying:
        return uniform, uniform * cores
    count: object = uniform
    for d, o, e, n in varying:
        first, last = int(o.min()), int(o.max())
        if first >= 0 and last + e <= n and (d != stick_dim or not (o % per_stick).any()):
            # Every core's box lies inside (stick-aligned): all move the same.
            count = count * (-(-e // per_stick) if d == stick_dim else e)
            continue
        lo, hi = np.minimum(np.maximum(o, 0), n), np.minimum(np.maximum(o + e, 0), n)
        if d == stick_dim:
            inside = np.where(hi > lo, -(-hi // per_stick) - lo // per_stick, 0)
        else:
            inside = hi - lo
        count = count * inside
    counts = np.broadcast_to(np.asarray(count, dtype=np.int64), (cores,))
    return int(counts.max()), int(counts.sum())


def _tensor_bytes(memory: object, config: SpyreConfig) -> int:
    """Bytes of a whole tensor in LPDDR5, in whole sticks."""
    assert isinstance(memory, D.DdrType)
    shape = memory.get_shape()
    stick_dim, per_stick = _stick_geometry(memory, config)
    return cm.box_sticks(shape, shape, stick_dim, per_stick) * config.stick_bytes


def _matmul_dims(
    a: Sequence[int], b: Sequence[int], out: Sequence[int]
) -> tuple[int, int, int, int]:
    """(batch, m, n, k) of a matmul tile from its operand and result shapes."""
    k = a[-1]
    m = out[-2] if len(out) >= 2 and len(a) >= 2 else 1
    n = out[-1] if len(b) >= 2 else 1
    batch = math.prod(out[:-2]) if len(out) > 2 else 1
    return batch, m, n, k


def _lx_peak(op: core.ProgramOp) -> int:
    ends = [
        (a.offset_value if a.offset is not None else 0) + a.buffer.type.nbytes
        for a in op.body.block.ops
        if isinstance(a, D.AllocLxOp)
    ]
    return max(ends, default=0)


def _report(kernels: list[dict], config: SpyreConfig) -> dict:
    """The whole run: sums over programs (they run one after another)."""
    cycles = sum(k["_cycles"] for k in kernels)
    simulated = sum(k["simulated_us"] for k in kernels)
    roofline = sum(k["roofline_us"] for k in kernels)
    fraction = roofline / simulated if simulated else 1.0
    assert fraction <= 1 + 1e-9, "faster than the roofline"
    longest = max(kernels, key=lambda k: k["_cycles"], default=None)
    keys = kernels[0]["_unit_busy"] if kernels else {}
    utilization = {
        key: (sum(k["_unit_busy"][key] for k in kernels) / cycles if cycles else 0.0)
        for key in keys
    }
    busy = {
        r: cm.cycles_to_us(sum(k["_busy_cycles"][r] for k in kernels), config)
        for r in RESOURCES
    }
    public = [{k: v for k, v in kern.items() if not k.startswith("_")} for kern in kernels]
    return {
        "simulated_us": simulated,
        "roofline_us": roofline,
        "roofline_fraction": fraction,
        "flops": sum(k["flops"] for k in kernels),
        "lpddr_bytes": sum(k["lpddr_bytes"] for k in kernels),
        "ring_bytes": sum(k["ring_bytes"] for k in kernels),
        "lx_peak_bytes": max((k["lx_peak_bytes"] for k in kernels), default=0),
        "bottleneck": None if longest is None else longest["bottleneck"],
        "utilization": utilization,
        "busy_us": busy,
        "kernels": public,
    }


# The LS unit's ports in a trace: a thread each (lane 1, 2) beside the unit's own (lane 0).
_PORT_LANES = {LPDDR: 1, RING: 2}


def _trace_tid(index: int, lane: int) -> int:
    """Thread id of a unit (`core.UNITS` index), lane 0, or of one of its ports."""
    return index + 1 if lane == 0 else len(core.UNITS) + lane


def _trace_events(programs: list[_Program], config: SpyreConfig) -> dict:
    """Chrome trace events: one process per program, one thread per unit (core 0)."""
    to_us = 1e6 / config.clock_hz
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "card"}},
        {"name": "process_sort_index", "ph": "M", "pid": 0, "tid": 0, "args": {"sort_index": 0}},
        {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "compute queue"}},
    ]  # fmt: skip
    start = 0.0
    for pid, program in enumerate(programs, start=1):
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
            for thread, lane in threads:
                tid = _trace_tid(unit.index, lane)
                order = 10 * (unit.index + 1) + lane  # a unit's ports right after it
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": thread}})  # fmt: skip
                events.append({"name": "thread_sort_index", "ph": "M", "pid": pid,
                               "tid": tid, "args": {"sort_index": order}})  # fmt: skip
            for info, begin, cycles in unit.events:
                tid = _trace_tid(unit.index, lanes.get(info.resource, 0))
                events.append({
                    "name": info.name, "cat": RESOURCES[info.resource], "ph": "X",
                    "ts": start + begin * to_us, "dur": cycles * to_us,
                    "pid": pid, "tid": tid, "args": info.args,
                })  # fmt: skip
        start += program.cycles * to_us
    return {"traceEvents": events, "displayTimeUnit": "ns"}


# ---------------------------------------------------------------- BLAS threads


@functools.cache
def _blas_controls() -> tuple[tuple[Callable[[], int], Callable[[int], None]], ...]:
    """(get, set) thread-count functions of the OpenBLAS libraries loaded in this
    process (numpy's scipy-openblas), found through /proc/self/maps; none elsewhere."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()})
    except OSError:
        return ()
    controls = []
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("scipy_", ""), ("", "")):
            get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
            set_ = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if get is not None and set_ is not None:
                get.restype, set_.argtypes = ctypes.c_int, [ctypes.c_int]
                controls.append((get, set_))
                break
    return tuple(controls)


@contextmanager
def _blas_threads(count: int | None) -> Iterator[None]:
    """OpenBLAS limited to `count` threads inside the block (None: unchanged)."""
    controls = _blas_controls() if count is not None else ()
    previous = [get() for get, _ in controls]
    for _, set_ in controls:
        set_(count)
    try:
        yield
    finally:
        for (_, set_), n in zip(controls, previous):
            set_(n)
