"""The `core` dialect (level L3): one core's unit programs and their synchronisation.

A `core.program` is what one Spyre core runs for a kernel, SPMD over `cores` (the
block's first argument is the core id). Its body declares the core's LX buffers
(`dataflow.alloc_lx` with offsets) and the queues between units, then holds one
`core.unit` per unit: "ls" (load/store), "pe0"/"pe1" (the PE arrays of the two
corelets) and "sfp0"/"sfp1" (their special-function pipelines). Each unit runs its own
instruction stream (`ls.*`, `pe.*`, `sfp.*` ops inside `scf.for` loops); a unit waits
only at `core.pop`, until the producer's `core.push` put a token in the queue.

A queue carries `credits` tokens at the start: a data queue starts empty (the consumer
waits for the producer), a credit queue starts with as many tokens as the buffer has
slots (the producer may fill that many before the consumer must have read one).
Checks (`verify_program`): pushes only from the queue's source unit, pops only in its
destination, no unit waiting on itself, credits within the depth, as many pushes as
pops over the whole run, and no cycle of waits within one iteration (a deadlock).
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import scf
from xdsl.dialects.builtin import I64, IntegerAttr, StringAttr, i64
from xdsl.ir import Dialect, Operation, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects.dataflow import AllocLxOp, DeviceProgramBase, verify_plan
from spyre_ir.hardware import card_of

UNITS = ("ls", "pe0", "pe1", "sfp0", "sfp1")


@irdl_attr_definition
class QueueType(ParametrizedAttribute, TypeAttribute):
    """A token queue between two units of a core: `!core.queue`."""

    name = "core.queue"


@irdl_op_definition
class ProgramOp(DeviceProgramBase):
    """One kernel as per-unit programs of a core, SPMD over `cores`."""

    name = "core.program"

    def units(self) -> dict[str, UnitOp]:
        return {u.unit.data: u for u in self.body.block.ops if isinstance(u, UnitOp)}

    def verify_(self) -> None:
        where = f"'{self.name}' @{self.sym_name.data}"
        want = self.block_arg_types([v.type for v in self.inputs], [r.type for r in self.outputs])
        if [a.type for a in self.body.block.args] != want:
            raise VerifyException(
                f"{where}: block arguments must be (index, ddr per input and result)"
            )
        verify_plan(self, self.plan)
        if self.core_count < 1:
            raise VerifyException(f"{where}: needs at least one core")
        card_cores = card_of(self).cores
        if self.core_count > card_cores:
            raise VerifyException(
                f"{where}: runs on {self.core_count} cores; the card has {card_cores}"
            )
        for op in self.body.block.ops:
            if (
                not isinstance(op, (AllocLxOp, QueueOp, UnitOp, EndOp))
                and op.name != "arith.constant"
            ):
                raise VerifyException(f"{where}: {op.name} may not stand outside a unit")
        verify_program(self, where)
        self.verify_tied(where)
        self.verify_scratchpad(where)


@irdl_op_definition
class QueueOp(IRDLOperation):
    """A queue of tokens from unit `source` to unit `dest`, holding at most `depth`."""

    name = "core.queue"
    source = prop_def(StringAttr)
    dest = prop_def(StringAttr)
    depth = prop_def(IntegerAttr[I64])
    credits = prop_def(IntegerAttr[I64])
    queue = result_def(QueueType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$source `->` $dest attr-dict"

    def __init__(self, source: str, dest: str, depth: int, credits: int = 0):
        super().__init__(
            result_types=[QueueType()],
            properties={
                "source": StringAttr(source), "dest": StringAttr(dest),
                "depth": IntegerAttr(depth, i64), "credits": IntegerAttr(credits, i64),
            },
        )  # fmt: skip

    def verify_(self) -> None:
        for unit in (self.source.data, self.dest.data):
            if unit not in UNITS:
                raise VerifyException(f"'{self.name}': unknown unit '{unit}'")
        if self.source.data == self.dest.data:
            raise VerifyException(f"'{self.name}': unit {self.source.data} would wait on itself")
        depth, credits = self.depth.value.data, self.credits.value.data
        if depth < 1 or not 0 <= credits <= depth:
            raise VerifyException(
                f"'{self.name}': {credits} initial tokens do not fit a queue of depth {depth}"
            )


@irdl_op_definition
class UnitOp(IRDLOperation):
    """The instruction stream of one unit of the core."""

    name = "core.unit"
    unit = prop_def(StringAttr)
    body = region_def("single_block")
    assembly_format = "$unit attr-dict-with-keyword $body"

    def __init__(self, unit: str, body: Region):
        super().__init__(properties={"unit": StringAttr(unit)}, regions=[body])

    def verify_(self) -> None:
        if self.unit.data not in UNITS:
            raise VerifyException(f"'{self.name}': unknown unit '{self.unit.data}'")


@irdl_op_definition
class PushOp(IRDLOperation):
    """Put one token in the queue (waits while the queue is full)."""

    name = "core.push"
    queue = operand_def(QueueType)
    assembly_format = "$queue attr-dict"

    def __init__(self, queue: SSAValue):
        super().__init__(operands=[queue])


@irdl_op_definition
class PopOp(IRDLOperation):
    """Take one token from the queue (waits while it is empty)."""

    name = "core.pop"
    queue = operand_def(QueueType)
    assembly_format = "$queue attr-dict"

    def __init__(self, queue: SSAValue):
        super().__init__(operands=[queue])


@irdl_op_definition
class EndOp(IRDLOperation):
    name = "core.end"
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict"


# ---------------------------------------------------------------- checks


def enclosing_unit(op: Operation) -> str | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, UnitOp):
        parent = parent.parent_op()
    return None if parent is None else parent.unit.data


def trip_count(loop: scf.ForOp) -> int | None:
    """Iterations of a loop with constant bounds (None when they are not constant)."""
    bounds = []
    for v in (loop.lb, loop.ub, loop.step):
        owner = v.owner
        value = getattr(owner, "value", None)
        if not isinstance(value, IntegerAttr):
            return None
        bounds.append(value.value.data)
    lb, ub, step = bounds
    return max(0, -(-(ub - lb) // step)) if step > 0 else None


def executions(op: Operation) -> int | None:
    """How often `op` runs: the product of the trip counts of its enclosing loops."""
    count = 1
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, UnitOp):
        if isinstance(parent, scf.ForOp):
            trips = trip_count(parent)
            if trips is None:
                return None
            count *= trips
        elif isinstance(parent, scf.IfOp):
            return None
        parent = parent.parent_op()
    return count


def sync_ops(program: ProgramOp) -> Iterator[PushOp | PopOp]:
    for op in program.walk():
        if isinstance(op, (PushOp, PopOp)):
            yield op


def verify_program(program: ProgramOp, where: str) -> None:
    queues = {op.queue: op for op in program.body.block.ops if isinstance(op, QueueOp)}
    pushes: dict[SSAValue, int] = dict.fromkeys(queues, 0)
    pops: dict[SSAValue, int] = dict.fromkeys(queues, 0)
    counted = True
    for op in sync_ops(program):
        queue = queues.get(op.queue)
        if queue is None:
            raise VerifyException(f"{where}: {op.name} uses a queue not declared in the program")
        unit = enclosing_unit(op)
        want = queue.source.data if isinstance(op, PushOp) else queue.dest.data
        if unit != want:
            raise VerifyException(
                f"{where}: {op.name} on a queue {queue.source.data} -> {queue.dest.data} "
                f"stands in unit {unit}, not {want}"
            )
        n = executions(op)
        if n is None:
            counted = False
            continue
        (pushes if isinstance(op, PushOp) else pops)[op.queue] += n
    if counted:
        for q, queue in queues.items():
            if pushes[q] != pops[q]:
                raise VerifyException(
                    f"{where}: queue {queue.source.data} -> {queue.dest.data} gets "
                    f"{pushes[q]} pushes but {pops[q]} pops"
                )
    cycle = wait_cycle(program, queues)
    if cycle:
        raise VerifyException(f"{where}: deadlock: {' -> '.join(cycle)} wait on each other")


def wait_cycle(program: ProgramOp, queues: dict[SSAValue, QueueOp]) -> list[str]:
    """A cycle in the graph of one iteration: each unit's sync ops in program order, and
    an edge from a push to the pops of an initially empty queue. Such a cycle means
    every unit on it waits for a token another unit on it has not sent yet."""
    order: dict[str, list[Operation]] = {}
    pushes: dict[SSAValue, list[Operation]] = {}  # per queue, in program order (one walk)
    pops: dict[SSAValue, list[Operation]] = {}
    for op in sync_ops(program):
        order.setdefault(enclosing_unit(op) or "?", []).append(op)
        (pushes if isinstance(op, PushOp) else pops).setdefault(op.queue, []).append(op)
    edges: dict[Operation, list[Operation]] = {}
    for ops in order.values():
        for a, b in zip(ops, ops[1:]):
            edges.setdefault(a, []).append(b)
    # Every push of an initially empty queue comes before every pop of it: through the
    # queue op as a node, P + C edges instead of P x C (a long chain has thousands).
    for q, queue in queues.items():
        if queue.credits.value.data:
            continue
        for p in pushes.get(q, []):
            edges.setdefault(p, []).append(queue)
        edges.setdefault(queue, []).extend(pops.get(q, []))
    found = _first_cycle(edges)
    units: list[str] = []
    for op in found:
        if isinstance(op, QueueOp):
            continue
        u = enclosing_unit(op) or "?"
        if not units or units[-1] != u:
            units.append(u)
    return units


def _first_cycle(edges: dict[Operation, list[Operation]]) -> list[Operation]:
    """The nodes of a cycle of the graph (empty: none), by an iterative depth-first
    search: a graph of any size, no recursion limit."""
    state: dict[Operation, int] = {}  # 1 on the path, 2 done
    for root in list(edges):
        if root in state:
            continue
        path: list[Operation] = [root]
        todo: list[Iterator[Operation]] = [iter(edges.get(root, ()))]
        state[root] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt) :]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(edges.get(nxt, ())))
    return []


CORE_OPS = (ProgramOp, QueueOp, UnitOp, PushOp, PopOp, EndOp)

Core = Dialect("core", list(CORE_OPS), [QueueType])
