"""Races inside LX between the units of a core, for the simulator's `check_races`.

Each unit keeps a vector clock: it ticks at every instruction and every push, a token
carries the pusher's clock and a pop merges it in. Two accesses of overlapping LX bytes
by different units, at least one a write, are ordered only when the earlier one's tick
is in the later one's clock (a chain of queues leads from one to the other). Otherwise
the program's result depends on timing: a read before the write it needs (or a write
over data another unit has not read yet), reported as a located error naming both
instructions, whether or not this run's timing happened to order them.
"""

from __future__ import annotations

from collections import deque

from xdsl.ir import Operation

from spyre_ir.dialects import core, dataflow
from spyre_ir.interp.tensor import op_label


def operand_accesses(op: Operation) -> tuple[list, list]:
    """(LX operands read, LX operands written) of a unit instruction."""
    if isinstance(op, dataflow.LoadBase):
        return [], [op.dest]
    if isinstance(op, dataflow.StoreBase):
        return [op.source], []
    if isinstance(op, dataflow.GatherBase):
        return [op.indices], [op.dest]
    if isinstance(op, dataflow.ScatterBase):
        return [op.source, op.indices], []
    if isinstance(op, dataflow.RingAllreduceBase):
        return [op.buffer], [op.buffer]
    if isinstance(op, dataflow.RingAllgatherBase):
        return [op.part], [op.full]
    if isinstance(op, dataflow.ComputeBase):
        outputs = list(op.outputs)
        return list(op.inputs) + (outputs if op.accumulate is not None else []), outputs
    return [], []


class LxRaces:
    """The race check of one program run; `region(buffer)` gives (space, first, end)."""

    def __init__(self, region, error):
        self.region, self.error = region, error
        self.clocks: dict[str, dict[str, int]] = {}
        self.tokens: dict[object, deque] = {}
        self.units: dict[Operation, str] = {}
        # (space, first, end) -> [last write (unit, tick, op) or None, {unit: (tick, op)}]
        self.seen: dict[tuple, list] = {}

    def unit(self, op: Operation) -> str:
        name = self.units.get(op)
        if name is None:
            name = self.units[op] = core.enclosing_unit(op) or "?"
        return name

    def tick(self, unit: str) -> tuple[dict[str, int], int]:
        clock = self.clocks.setdefault(unit, {})
        clock[unit] = clock.get(unit, 0) + 1
        return clock, clock[unit]

    def queue(self, queue) -> deque:
        tokens = self.tokens.get(queue)
        if tokens is None:
            tokens = self.tokens[queue] = deque({} for _ in range(queue.credits))
        return tokens

    def push(self, op: Operation, queue) -> None:
        clock, _ = self.tick(self.unit(op))
        self.queue(queue).append(dict(clock))

    def pop(self, op: Operation, queue) -> None:
        tokens = self.queue(queue)
        stamp = tokens.popleft() if tokens else {}
        clock = self.clocks.setdefault(self.unit(op), {})
        for unit, t in stamp.items():
            if t > clock.get(unit, 0):
                clock[unit] = t

    def access(self, op: Operation, operands: list) -> None:
        """Check and record the LX accesses of instruction `op` (its operand values)."""
        reads, writes = operand_accesses(op)
        if not reads and not writes:
            return
        me = self.unit(op)
        clock, now = self.tick(me)
        value_of = dict(zip(op.operands, operands))
        for values, writing in ((reads, False), (writes, True)):
            for v in values:
                key = self.region(value_of[v])
                for other, (write, readers) in self.seen.items():
                    if other[0] != key[0] or other[1] >= key[2] or key[1] >= other[2]:
                        continue
                    self.check(
                        op, me, clock, write, "writes", "reads" if not writing else "overwrites"
                    )
                    if writing:
                        for unit, (t, reader) in readers.items():
                            self.check(op, me, clock, (unit, t, reader), "reads", "overwrites")
        for v in reads:
            self.seen.setdefault(self.region(value_of[v]), [None, {}])[1][me] = (now, op)
        for v in writes:
            self.seen[self.region(value_of[v])] = [(me, now, op), {}]

    def check(self, op, me, clock, earlier, did, does) -> None:
        if earlier is None:
            return
        unit, t, other = earlier
        if unit != me and clock.get(unit, 0) < t:
            raise self.error(op, f"LX race: on {me}, {op.name} {does} LX bytes that "
                             f"{op_label(other)} on {unit} {did}, with no queue "
                             "ordering the two")  # fmt: skip
