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
  `ls.gather`: the card's shared bus, and the core's own read or write channel - a
  store takes the bus while a load still streams in, `spyre_ir.sim.lpddr`) and the ring
  port (`ls.ring_allreduce`, `ls.ring_allgather`: the ring's own links). Each port (and
  channel) runs its instructions one at a time in issue order; an LX rearrangement (`ls.compute`) runs on the unit itself,
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
  `lpddr_bytes`: what LPDDR5 itself serves (reads and writes at the DRAM, whole sticks
  inside the tensors): a box several cores load at once is read once when the card
  multicasts (`SpyreConfig.lpddr_multicast`); stores and gathers count per core.
  `delivered_bytes`: whole sticks moved between LPDDR5 and the cores' LX as the cores
  see them: every core's copy of a multicast box counted (>= `lpddr_bytes`).
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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation

from spyre_ir import cost_model as cm
from spyre_ir.dialects import core, spyre
from spyre_ir.dialects import dataflow as D
from spyre_ir.hardware import SpyreConfig, card_of
from spyre_ir.interp.dataflow import DataflowInterpreter
from spyre_ir.interp.lx_races import LxRaces
from spyre_ir.interp.machine import KernelMachine, LocatedError, LxBuffer, index_width, signed
from spyre_ir.interp.tensor import InterpreterError, op_label, run_entry
from spyre_ir.sim import replay
from spyre_ir.sim.report import program_stats, run_report
from spyre_ir.sim.scheduler import (
    END,
    FOR,
    IF,
    INSTR,
    PLAIN,
    POP,
    PUSH,
    Queue,
    Scheduler,
    SimulationError,
    Unit,
)
from spyre_ir.sim.timing import timer_for
from spyre_ir.sim.trace import trace_events

__all__ = ["SimResult", "SimulationError", "simulate"]

_L2INSTRUCTIONS = (D.LoadBase, D.StoreBase, D.GatherBase, D.ScatterBase, D.ComputeBase,
                    D.RingAllreduceBase, D.RingAllgatherBase)  # fmt: skip

_RELEASED = np.zeros(0, np.float32)
"""What a recorded program's LX buffers hold between runs."""


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
    config: SpyreConfig | None = None,
    *,
    trace: bool = False,
    check_races: bool = False,
    blas_threads: int | None = None,
    card_format: bool = False,
    numerics: bool = True,
    output_contents: dict[str, Sequence[np.ndarray]] | None = None,
    codes: bool = False,
) -> SimResult:
    """Run `func.func @entry` of an L3 `module` on the simulated card.

    `config`: the card to run on; by default the one the module is compiled for (its
    `spyre.card`, `hardware.card_of`). Arguments are checked as by the interpreters
    (shapes, storage dtypes); f16 tensors are DLFloat16 on the card, converted from and to
    float16 at the boundary, or given and returned as float32 arrays of DLFloat16 values
    with `card_format` (as `spyre_ir.interp.dataflow.run_module` takes them). `trace`
    also returns a Chrome trace of core 0's instructions; `check_races` turns on the
    L2 interpreter's store checks (two cores writing different values to one element,
    outputs left unwritten). `blas_threads`: run numpy's OpenBLAS with that many
    threads meanwhile (1 makes the many small per-tile matmuls robust on a busy
    machine: multithreaded OpenBLAS slows down ~10x when another process holds a
    core); OpenBLAS rounds float32 sums differently with another thread count, so
    results then match an L2/L1 run only if it used the same count. Raises
    `SimulationError` (deadlock, unmatched queues, L2 ops) or `InterpreterError` (an
    op that cannot run), naming the op. `numerics=False` times the program without
    computing its tiles or moving its data (timing never depends on tensor values):
    the report and trace are those of a full run, the outputs are not meaningful.
    `codes` (with `card_format`): f16/bf16 tensors are taken, held between kernels and
    given as the card's DLFloat16 codes (uint16), not float32 values (half the host
    memory; see `spyre_ir.interp.dataflow.DataflowInterpreter`).
    `output_contents`: the contents a program's outputs start with (program name -> one
    array per output; see `spyre_ir.interp.dataflow.run_module`)."""
    if config is None:
        config = card_of(module)
    sim = _Simulation(module, config, check_races, trace, card_format, numerics, codes)
    sim.interp.output_contents = dict(output_contents or {})
    with _blas_threads(blas_threads):
        # the card's launch reads the results once, into its images: no copies of them
        outputs = run_entry(sim.interp, args, entry, copy_results=not card_format)
    report = run_report([program.stats for program in sim.programs], config)
    report["tied_copy_bytes"] = sim.interp.tied_copy_bytes
    events = trace_events(sim.programs, config) if trace else None
    return SimResult(outputs, report, events)


class _Simulation:
    """One `simulate` call: the L2 interpreter's function level (a `DataflowInterpreter`
    with the card's numerics), which hands each `core.program` to a `_Program`."""

    def __init__(self, module: ModuleOp, config: SpyreConfig, check_races: bool, trace: bool,
                 card_format: bool, numerics: bool, codes: bool = False) -> None:  # fmt: skip
        refuse = self._refuse_l2
        self.interp = DataflowInterpreter(
            module, check_races, "dlfloat16", card_format,
            runners={core.ProgramOp: self._run_program, D.KernelOp: refuse, D.GroupOp: refuse,
                     spyre.ScatterOp: self._scatter}, codes=codes,
        )  # fmt: skip
        shared = replay.shared_caches(module)
        if shared is not None:  # facts of ops that never change: kept between runs
            self.interp.share_caches(shared)
        self.config = config
        self.tracing = trace
        self.numerics = numerics
        self.programs: list[_Program] = []  # in the order they ran

    def _run_program(self, op: Operation, operands: list) -> list:
        assert isinstance(op, core.ProgramOp)
        program = _Program(self, op)
        results = program.run(operands)
        self.programs.append(program)
        for value, result in zip(results, op.results):
            self.interp.check_result(value, op, result, "simulator")
        return results

    def _scatter(self, op: Operation, operands: list) -> list:
        assert isinstance(op, spyre.ScatterOp)
        if op.in_place is None:  # a one-hot scatter left at L1: as the interpreter runs it
            return self.interp.run_tensor_op(op, operands)
        raise SimulationError(
            f"{op_label(op)}: an in-place scatter is still an L1 op; the simulator runs "
            "it as a row-store kernel (spyre-opt -p spyre-row-store-kernels, part of "
            "spyre-to-dataflow)"
        )

    @staticmethod
    def _refuse_l2(op: Operation, operands: list) -> list:
        assert isinstance(op, (D.KernelOp, D.GroupOp))
        raise SimulationError(
            f"{op_label(op)}: @{op.sym_name.data} is still an L2 {op.name}; the "
            "simulator runs L3 programs - lower it to units first (spyre-opt -p "
            "convert-dataflow-to-units on L2, -p spyre-to-units on L1; or "
            "spyre_ir.pipelines.lower_to_units)"
        )


# ---------------------------------------------------------------- programs


class _Program:
    """One run of a `core.program`: the L2 kernel machine (`KernelMachine`: handlers for
    index ops, buffers, moves and tile ops, all vectorised over cores), whose body is
    driven by a discrete-event scheduler of the program's units instead of one walk."""

    def __init__(self, sim: _Simulation, op: core.ProgramOp):
        self.machine = KernelMachine(sim.interp, op, body=self._run_body, kind="program")
        self.sim, self.op, self.cores = sim, op, self.machine.cores
        self.config = sim.config
        self.tracing = sim.tracing
        self.compiled: dict[Block, list[tuple]] = {}
        self.units: list[Unit] = []
        self.queues: list[Queue] = []
        self.flops = 0  # per core
        self.lpddr_bytes = 0  # what LPDDR5 serves: a multicast box once
        self.delivered_bytes = 0  # all cores' copies
        self.ring_bytes = 0.0  # all cores
        # LX buffer root -> (address space, first byte, bytes per view after k slot indices)
        self.places: dict[object, tuple[object, int, tuple[int, ...]]] = {}
        self.cycles = 0.0
        self.stats: dict = {}
        self.recorder: replay.Recorder | None = None
        check = self.machine.check  # LX races between units (spyre_ir/interp/lx_races.py)
        self.races = LxRaces(self.region, self.machine.error) if check else None

    def run(self, operands: list) -> list:
        return self.machine.run(operands)

    # -------------------------------------------------------- driver

    def _run_body(self, block: Block, args: list) -> None:
        """The program body (called by `KernelMachine.run` with the core id and the
        memories): declare buffers, constants and queues, then schedule the units."""
        machine = self.machine
        if not machine.check and self.sim.numerics and replay.replayable(self.op, self.config):
            recording = replay.lookup(self.op, self.config, self.tracing)
            if recording is not None:
                self._replay(recording, args)
                return
            self.recorder = replay.Recorder(self.op, self.config, args)
        values = machine.values
        values.update(zip(block.args, args))
        for op in block.ops:
            if isinstance(op, core.QueueOp):
                queue = Queue(op, len(self.queues))
                self.queues.append(queue)
                values[op.queue] = queue
            elif isinstance(op, core.UnitOp):
                name = op.unit.data
                path: list = []
                stream = self._stream(op.body.block, [], path)
                self.units.append(Unit(name, core.UNITS.index(name), stream, op, path))
            elif isinstance(op, core.EndOp):
                break
            else:  # dataflow.alloc_lx, arith.constant, dataflow.position
                operands = [values[v] for v in op.operands]
                values.update(zip(op.results, machine.execute(op, operands)))
                if self.recorder is not None and isinstance(op, D.PositionOp):
                    self.recorder.position(op, operands, values[op.result])
                if isinstance(op, D.AllocLxOp):
                    self._place(op, values[op.buffer])
        scheduler = Scheduler(self.op, self.units, self.queues,
                              cm.ls_issue_cycles(self.config), self.tracing)  # fmt: skip
        self.cycles = scheduler.run()
        self.stats = program_stats(self)
        if self.recorder is not None:
            self._keep_recording(self.recorder)

    _TIMING = ("units", "queues", "flops", "lpddr_bytes", "delivered_bytes", "ring_bytes",
               "cycles", "stats")  # fmt: skip

    def _keep_recording(self, recorder: replay.Recorder) -> None:
        recording = recorder.recording
        recording.buffers = [(root, root.array.shape, root.array.dtype) for root in self.places]
        ops = {step.op for step in recording.steps}
        recording.tiles = {op: t for op, t in self.sim.interp.tiles.items() if op in ops}
        recording.timing = {name: getattr(self, name) for name in self._TIMING}
        recording.traced = self.tracing
        recorder.keep(self.op)
        self._release(recording)

    def _replay(self, recording: replay.Recording, memories: Sequence[object]) -> None:
        """The recorded numerics on this run's memories (see `spyre_ir.sim.replay`)."""
        recording.zero_buffers()
        self.sim.interp.tiles.update(recording.tiles)
        machine = self.machine
        machine.tile_cache = replay.cached_tile
        replay.begin_replay()
        try:
            positions = recording.positions_now(machine, memories)
            for step in recording.steps:
                operands = step.operands
                if step.memory_slots:
                    operands = list(operands)
                    for i, j in step.memory_slots:
                        operands[i] = memories[j]
                machine.box_feed = iter(step.boxes_at(positions) if step.positions else step.boxes)
                try:
                    step.function(machine, step.op, operands)
                except LocatedError:
                    raise
                except (InterpreterError, ValueError, TypeError, IndexError) as error:
                    raise machine.error(step.op, str(error)) from None
        finally:
            machine.box_feed = machine.tile_cache = None
            self._release(recording)
        for name, value in recording.timing.items():
            setattr(self, name, value)

    @staticmethod
    def _release(recording: replay.Recording) -> None:
        """Drop the LX arrays: a recording keeps no tensor data between runs."""
        for root, _, _ in recording.buffers:
            root.reset(_RELEASED)

    def _place(self, op: D.AllocLxOp, buffer: LxBuffer) -> None:
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

    def region(self, buffer: LxBuffer) -> tuple[object, int, int]:
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
                steps.append((END, op, operands, results, None, None))
            elif isinstance(op, core.PushOp):
                steps.append((PUSH, op, operands, results, None, None))
            elif isinstance(op, core.PopOp):
                steps.append((POP, op, operands, results, None, None))
            elif isinstance(op, scf.ForOp):
                steps.append((FOR, op, operands, results, None, None))
            elif isinstance(op, scf.IfOp):
                steps.append((IF, op, operands, results, None, None))
            else:
                handler = self.machine.handler(op)
                timer = timer_for(self, op)
                if timer is not None and not self.sim.numerics:
                    handler = _no_numerics
                if timer is None and isinstance(op, _L2INSTRUCTIONS):
                    raise SimulationError(
                        f"{op_label(op)}: an L2 instruction in unit program of "
                        f"@{self.op.sym_name.data}; units run ls.*, pe.* and sfp.* ops"
                    )
                steps.append((PLAIN if timer is None else INSTR, op, operands, results,
                              handler, timer))  # fmt: skip
        self.compiled[block] = steps
        return steps

    def _stream(self, block: Block, args: Sequence[object], path: list) -> Iterator[tuple]:
        """Run a unit block, yielding an event per instruction (after running its
        numerics) and per push/pop; returns the terminator's operands. `path` holds the
        iteration of every enclosing loop (for messages)."""
        machine = self.machine
        values = machine.values
        values.update(zip(block.args, args))
        recorder, races = self.recorder, self.races
        for code, op, ins, outs, handler, timer in self._compile(block):
            operands = [values[v] for v in ins]
            if races is not None and code == INSTR:
                races.access(op, operands)
            if code == PLAIN or code == INSTR:
                try:
                    if recorder is not None and code == INSTR:
                        machine.box_log = []
                        results = handler(op, operands)
                        recorder.add(handler, op, operands, machine.box_log)
                        machine.box_log = None
                    else:
                        results = handler(op, operands)
                        if recorder is not None and isinstance(op, D.PositionOp):
                            recorder.position(op, operands, results[0])
                    event = timer(op, operands) if code == INSTR else None
                except LocatedError:
                    raise
                except (InterpreterError, ValueError, TypeError, IndexError) as error:
                    raise machine.error(op, str(error)) from None
                if outs:
                    values.update(zip(outs, results))
                if event is not None:
                    yield event
            elif code == PUSH or code == POP:
                if races is not None and code == PUSH:
                    races.push(op, operands[0])
                yield (code, operands[0], op)
                if races is not None and code == POP:  # resumed: the token is taken
                    races.pop(op, operands[0])
            elif code == FOR:
                try:
                    lb, ub, step = (
                        machine.uniform(v, what)
                        for v, what in zip(operands[:3], ("lower bound", "upper bound", "step"))
                    )
                    if step <= 0:
                        raise InterpreterError(f"the step must be positive, got {step}")
                except InterpreterError as error:
                    raise machine.error(op, str(error)) from None
                carried = operands[3:]
                width = index_width(op.lb.type)
                body = op.body.block
                path.append(None)
                for i in range(lb, ub, step):
                    path[-1] = (i, lb, ub, step)
                    carried = yield from self._stream(body, [signed(i, width), *carried], path)
                path.pop()
                values.update(zip(outs, carried))
            elif code == IF:
                try:
                    taken = machine.uniform(operands[0], "scf.if condition")
                except InterpreterError as error:
                    raise machine.error(op, str(error)) from None
                region = op.true_region if taken else op.false_region
                if region.blocks:
                    results = yield from self._stream(region.block, [], path)
                    values.update(zip(outs, results))
            else:
                return operands
        return []


def _no_numerics(op: Operation, operands: list) -> list:
    """A timed instruction's numerics when only timing is asked for (its results are
    LX contents, not SSA values)."""
    return []


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
