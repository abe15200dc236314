"""The simulated card's event scheduler: units, queues and the LS unit's ports.

Conservative discrete events: the runnable unit with the smallest clock advances until
it blocks on a queue or passes another unit's clock. A unit's stream (a generator, from
`spyre_ir.sim.engine`) yields one event per instruction - (INSTR, cycles, latency,
info, LX regions read, LX regions written), timed by `spyre_ir.sim.timing` - and one
per push or pop. docs/simulator.md ("Timing rules") states the rules.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from spyre_ir.dialects import core
from spyre_ir.interp.tensor import InterpreterError, op_label
from spyre_ir.sim import lpddr

RESOURCES = ("pe", "sfp", "lpddr", "ring", "ls")
PE, SFP, LPDDR, RING, LS = range(len(RESOURCES))

# Step codes of a compiled unit block, and the events a unit stream yields.
PLAIN, INSTR, PUSH, POP, FOR, IF, END = range(7)


class SimulationError(InterpreterError):
    """A program the card cannot run: a deadlock, unmatched pushes and pops, or an L2
    op where L3 is needed."""


class Queue:
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
        self.pusher: Unit | None = None
        self.popper: Unit | None = None


class Unit:
    """One unit's instruction stream and clock (cycles)."""

    __slots__ = ("name", "index", "gen", "op", "path", "clock", "ready", "drained", "busy",
                 "ports", "channels", "shown", "blocked", "done", "events")  # fmt: skip

    def __init__(self, name: str, index: int, gen: Iterator, op: core.UnitOp, path: list):
        self.name, self.index, self.gen, self.op, self.path = name, index, gen, op, path
        self.clock = 0.0  # when the unit is free for its next instruction (LS: to issue)
        self.ready = 0.0  # when its instructions so far are done: results in LX, LX read out
        self.drained = 0.0  # when its stores so far have reached LPDDR5
        self.busy = [0.0] * len(RESOURCES)
        self.ports = [0.0] * len(RESOURCES)  # LS: when the LPDDR5 bus / ring port is free
        self.channels = [0.0, 0.0]  # LS: when its LPDDR5 read / write channel is free
        self.shown = [0.0, 0.0]  # LS: where the last move shown on each channel's track ends
        self.blocked: tuple | None = None  # the (code, queue, op) it waits on
        self.done = False
        self.events: list[tuple] = []  # (info, start, cycles, channel) when tracing


@dataclass
class Info:
    """Static facts about one instruction, for traces."""

    name: str
    resource: int
    args: dict = field(default_factory=dict)


class Scheduler:
    """The timing of one run of a program: its units and queues, advanced by events."""

    def __init__(self, program_op: core.ProgramOp, units: list[Unit], queues: list[Queue],
                 issue_cycles: float, tracing: bool):  # fmt: skip
        self.op = program_op
        self.units = units
        self.queues = queues
        self.issue = float(issue_cycles)
        self.tracing = tracing
        self.cycles = 0.0

    def run(self) -> float:
        """Advance the runnable unit with the smallest clock until all are done or all
        that are left wait (a deadlock)."""
        heap = [(0.0, u.index, u) for u in self.units]
        heapq.heapify(heap)
        tracing = self.tracing
        push, pop = heapq.heappush, heapq.heappop
        issue = self.issue
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
                if code == INSTR:
                    _, cycles, latency, info, reads, writes = event
                    resource = info.resource
                    channel = 0  # an LPDDR5 move's: its core's read or write channel
                    if resource < LPDDR:  # PE, SFP: the unit itself, in order
                        start = unit.clock
                        unit.clock = start + cycles
                    else:
                        if resource == LPDDR:
                            channel = cycles[2]
                        start, cycles = self._ls_instruction(
                            unit, cycles, latency, resource, reads, writes, issue, regions
                        )
                    unit.busy[resource] += cycles
                    if tracing:
                        unit.events.append((info, start, cycles, channel))
                elif code == PUSH:
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
        self._check_queues()
        return self.cycles

    @staticmethod
    def _ls_instruction(
        unit: Unit,
        cycles: float | tuple,
        latency: float,
        resource: int,
        reads: tuple[tuple, ...],
        writes: tuple[tuple, ...],
        issue: float,
        regions: dict[object, dict[tuple[int, int], list[float]]],
    ) -> tuple[float, float]:
        """Issue an LS instruction and time it on its port; returns its start and the
        cycles it runs.

        The unit issues in order, `issue` cycles each. A move (LPDDR5) or collective
        (ring) then waits for its port (each port runs its instructions in order) and for
        its LX operands: data it reads must have landed (read after write), a buffer it
        writes must have landed (write after write) and been read out by earlier LS
        readers (write after read). Ports run concurrently; the unit goes on issuing. A
        rearrangement (LX -> LX) runs on the unit itself, which issues nothing
        meanwhile. An LPDDR5 move's `cycles` are (bus, channel, which channel)
        (spyre_ir/sim/lpddr.py): the bus and its channel are reserved each in its
        order (`lpddr.reserve`), the bus for `bus` cycles and the channel for
        `channel` - so a store can take the bus while a load still streams in. An
        all-reduce's `cycles` may be (transfer, reduction): the ring port runs both,
        and the unit, which adds the partial sums as they arrive, issues nothing until
        the reduction is done; the reduction shares the unit's data path with its
        LPDDR5 moves, so it starts no earlier than the moves issued before it end,
        and holds the LPDDR5 port and both channels until it is done. `reads` / `writes`: (address space, first byte, end byte) of each LX
        operand (`_Program.region`); accesses depend on each other when their bytes overlap."""
        issued = unit.clock + issue
        unit.busy[LS] += issue
        start = issued
        bus = channel = -1
        holds = False
        if resource == LPDDR:
            bus, own, channel = cycles
        elif type(cycles) is tuple:  # an all-reduce whose reduction holds the unit
            transfer, reduction = cycles
            cycles = transfer + reduction
            holds = True
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
        if resource == LPDDR:
            start, end, own_start = lpddr.reserve(start, bus, own, unit.channels[channel])
            cycles = bus if bus > own else own  # busy for this, shown ending at `end`
        else:
            end = start + cycles
        if holds:
            # The reduction uses the LS unit's data path, which LPDDR5 moves use too:
            # it starts once the moves issued before it are done, and the moves
            # issued after it wait for it.
            moves_done = max(unit.ports[LPDDR], unit.channels[0], unit.channels[1])
            if start + transfer < moves_done:
                end = moves_done + reduction
            unit.ports[LPDDR] = end
            unit.channels[0] = unit.channels[1] = end
        if resource == LS:
            unit.clock = end
        elif resource == LPDDR:
            unit.clock = issued
            unit.ports[LPDDR] = start + bus
            unit.channels[channel] = own_start + own
            # Shown (and counted busy) on its channel's track from where the move before
            # it there ends: the bus may start a move before the last one is done.
            start = end - cycles
            if start < unit.shown[channel]:
                start = unit.shown[channel]
                cycles = end - start
            unit.shown[channel] = end
        else:
            unit.clock = end if holds else issued
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
        return start, cycles

    @staticmethod
    def _push(queue: Queue, unit: Unit) -> Unit | None:
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
    def _pop(queue: Queue, unit: Unit) -> Unit | None:
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

    def _deadlock(self, waiting: list[Unit]) -> SimulationError:
        lines = []
        for u in waiting:
            assert u.blocked is not None
            code, queue, op = u.blocked
            what = "push to" if code == PUSH else "pop from"
            state = "full" if code == PUSH else "empty"
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
