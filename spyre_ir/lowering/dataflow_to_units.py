"""convert-dataflow-to-units (L2 -> L3): split each `dataflow.kernel` into per-unit
programs. The named pipeline `spyre-to-units` runs it after `spyre-to-dataflow`.

Every instruction of a kernel goes to the unit that runs it: moves and ring transfers
to "ls", PE tile ops alternately to "pe0"/"pe1", SFP tile ops to "sfp0"/"sfp1" (the
two corelets). Each unit keeps the kernel's loop nest and the address arithmetic its
instructions need. Where one unit consumes a buffer another unit produced, queues
make the order explicit:

* data (read after write): the producer pushes once the version is complete - after
  the outermost loop around the write that does not also hold the read (a matmul's K
  loop) - and the consumer pops before the outermost loop around the read that does not
  hold the write (a resident weight is waited for once).
* credits (write after read): a queue back from each consumer unit with one token per
  buffer slot; the next writer pops one before overwriting, the last reader pushes one
  when done. A double-buffered input has two slots, so the loads run one tile ahead.
* branches: the two regions of an `scf.if` never run in the same pass, so a version
  read in both takes a pop in each, and a credit is returned after the last read of
  each (a matmul's last K step, computed apart from the others). A version made every
  pass but read only under a one-way `scf.if` (a store on the last iteration) is
  popped and handed back every pass, outside the if.

* versions: a one-slot buffer written afresh after another unit read it (loaded in
  two sibling loops) has a version per such write, each with its own data queue and
  credits (`version_starts`). Patterns the queues cannot order are located errors
  (`check_versions`, docs/dataflow.md).
* reused bytes: a buffer placed on the bytes of one dead before it in program order
  is first written only after the other units' last uses of the old one
  (`reuse_tokens`): a writer with no operands would fire at once.

Each push and each pop stand in their own unit, so `core.program`'s verifier can count
them and look for wait cycles.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free

from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import core, dataflow, ls, pe, sfp

MOVES = (dataflow.LoadOp, dataflow.StoreOp, dataflow.GatherOp, dataflow.ScatterOp,
         dataflow.RingAllreduceOp, dataflow.RingAllgatherOp)  # fmt: skip
INSTRUCTIONS = (*MOVES, dataflow.ComputeOp)


def root_buffer(value: SSAValue) -> SSAValue:
    """The `alloc_lx` behind a buffer value (through `dataflow.slot` views)."""
    while isinstance(value.owner, dataflow.SlotOp):
        value = value.owner.buffer
    return value


def accesses(op: Operation) -> tuple[list[SSAValue], list[SSAValue]]:
    """(buffers read, buffers written) by an instruction, as root buffers."""
    if isinstance(op, dataflow.LoadOp):
        reads, writes = [], [op.dest]
    elif isinstance(op, dataflow.StoreOp):
        reads, writes = [op.source], []
    elif isinstance(op, dataflow.GatherOp):
        reads, writes = [op.indices], [op.dest]
    elif isinstance(op, dataflow.ScatterOp):
        reads, writes = [op.source, op.indices], []
    elif isinstance(op, dataflow.RingAllreduceOp):
        reads, writes = [op.buffer], [op.buffer]
    elif isinstance(op, dataflow.RingAllgatherOp):
        reads, writes = [op.part], [op.full]
    else:
        assert isinstance(op, dataflow.ComputeOp)
        reads = list(op.inputs) + (list(op.outputs) if op.accumulate is not None else [])
        writes = list(op.outputs)
    return [root_buffer(v) for v in reads], [root_buffer(v) for v in writes]


def slots(buffer: SSAValue) -> int:
    """Copies of a multi-buffer (it is only ever used through `dataflow.slot`)."""
    uses = list(buffer.uses)
    if uses and all(isinstance(u.operation, dataflow.SlotOp) for u in uses):
        t = buffer.type
        assert isinstance(t, dataflow.LxType)
        return t.get_shape()[0]
    return 1


def ancestors(op: Operation, stop: Block) -> list[Operation]:
    """`op` and its enclosing ops up to (not including) the ops of block `stop`'s owner."""
    chain = [op]
    while chain[-1].parent_block() is not stop:
        parent = chain[-1].parent_op()
        assert parent is not None
        chain.append(parent)
    return chain


def branch_path(op: Operation, other: Operation, body: Block) -> tuple:
    """The regions of two-way `scf.if`s that hold `op` but not `other`, outermost
    first, as (if, region index): ops on different paths never run in the same pass."""
    other_chain = set(ancestors(other, body))
    path = []
    for a in ancestors(op, body):
        if a in other_chain:
            break
        parent = a.parent_op()
        if isinstance(parent, scf.IfOp) and parent not in other_chain and \
                parent.false_region.blocks:  # fmt: skip
            path.append((parent, parent.regions.index(a.parent_region())))
    return tuple(reversed(path))


def hoist(op: Operation, other: Operation, body: Block, through_ifs: bool = False) -> Operation:
    """The outermost ancestor of `op` (within the kernel body) that does not contain
    `other`: where a sync op for `op` goes so both sides run equally often. With
    `through_ifs` (a read under a condition of a version `other` makes every pass), the
    sync leaves `scf.if`s without an else region too (a store on the last iteration):
    the version is taken and handed back every pass, read or not. (A version read in
    both regions of an if takes a pop in each, as before.)"""
    other_chain = set(ancestors(other, body))
    best = op
    for a in ancestors(op, body):
        if a in other_chain:
            break
        if not isinstance(a, scf.IfOp) or (through_ifs and one_way(a)):
            # Conditional work keeps its sync ops inside the condition, so a skipped
            # prefetch neither sends nor takes a token.
            best = a
    return best


def one_way(op: scf.IfOp) -> bool:
    """An `scf.if` whose else region does nothing (absent, or only its yield)."""
    blocks = op.false_region.blocks
    return not blocks or all(isinstance(o, scf.YieldOp) for o in blocks[0].ops)


def conditional(op: Operation, other: Operation, body: Block) -> bool:
    """Whether `op` runs under an `scf.if` that does not also hold `other`."""
    other_chain = set(ancestors(other, body))
    for a in ancestors(op, body)[1:]:
        if a in other_chain:
            return False
        if isinstance(a, scf.IfOp):
            return True
    return False


@dataclass
class Queues:
    """Queues of one program, made on demand, one per (source, dest, buffer, kind)."""

    block: Block
    made: dict[tuple, SSAValue] = field(default_factory=dict)

    def get(self, source: str, dest: str, buffer: SSAValue, depth: int, credits: int,
            version: int = 0) -> SSAValue:  # fmt: skip
        """`version`: a data queue per version of a buffer written again after it was
        read (`version_starts`), so the wait-cycle check sees each version apart."""
        key = (source, dest, buffer, credits, version)
        if key not in self.made:
            q = core.QueueOp.create(  # not __init__: a long chain makes thousands (issue 18)
                result_types=[core.QueueType()],
                properties={
                    "source": StringAttr(source), "dest": StringAttr(dest),
                    "depth": IntegerAttr(depth, i64), "credits": IntegerAttr(credits, i64),
                },
            )  # fmt: skip
            self.block.add_op(q)
            self.made[key] = q.queue
        return self.made[key]


SyncKind = type[core.PushOp] | type[core.PopOp]


@dataclass
class SyncPlan:
    """Sync ops to insert into the kernel body, and the unit each belongs to."""

    unit_of: dict[Operation, str] = field(default_factory=dict)
    done: set[tuple] = field(default_factory=set)

    # The sync op is built only when its key is new: most requests repeat one already
    # placed, and building an op costs more than the lookup (issue 18: compile time).
    def before(self, anchor: Operation, kind: SyncKind, q: SSAValue, unit: str, key: tuple) -> None:
        if key in self.done:
            return
        self.done.add(key)
        op = kind.create(operands=[q])  # IRDL's __init__ costs more than the op
        anchor.parent_block().insert_op_before(op, anchor)
        op.location = anchor.location  # a deadlock report names the op it syncs
        self.unit_of[op] = unit

    def after(self, anchor: Operation, kind: SyncKind, q: SSAValue, unit: str, key: tuple) -> None:
        if key in self.done:
            return
        self.done.add(key)
        op = kind.create(operands=[q])  # IRDL's __init__ costs more than the op
        anchor.parent_block().insert_op_after(op, anchor)
        op.location = anchor.location
        self.unit_of[op] = unit


# A tile op's `corelet` attribute (0 or 1), set by a kernel emitter that lays out its
# own pipeline (passes/tile_attention.py: one PE array per stage), names its corelet.
CORELET = "corelet"


def assign_units(kernel: dataflow.KernelOp) -> dict[Operation, str]:
    """LS work to "ls"; a PE or SFP tile op to the corelet its `corelet` attribute names,
    else to the corelet that already writes its output buffer (an accumulator stays
    with its matmul), else to the corelets in turn, so successive ops of a tile
    pipeline across the two corelets."""
    units: dict[Operation, str] = {}
    turn = {"pe": 0, "sfp": 0}
    writer_of: dict[tuple[str, SSAValue], str] = {}
    for op in kernel.walk():
        if isinstance(op, MOVES):
            units[op] = "ls"
        elif isinstance(op, dataflow.ComputeOp):
            kind = op.unit.data
            if kind == "ls":
                units[op] = "ls"
                continue
            outputs = [root_buffer(v) for v in op.outputs]
            known = [writer_of[(kind, b)] for b in outputs if (kind, b) in writer_of]
            corelet = op.attributes.get(CORELET)
            if isinstance(corelet, IntegerAttr):
                units[op] = f"{kind}{corelet.value.data % 2}"
            elif known:
                units[op] = known[0]
            else:
                units[op] = f"{kind}{turn[kind] % 2}"
                turn[kind] += 1
            for b in outputs:
                writer_of[(kind, b)] = units[op]
    return units


def views(op: Operation, buffer: SSAValue) -> set[SSAValue]:
    """The values (the buffer or `dataflow.slot` views of it) through which `op`
    accesses `buffer`."""
    return buffer_views(op).get(buffer, set())


def buffer_views(op: Operation) -> dict[SSAValue, set[SSAValue]]:
    """For each root buffer `op` accesses, the values through which it does."""
    found: dict[SSAValue, set[SSAValue]] = {}
    for v in op.operands:
        if isinstance(v.type, dataflow.LxType):
            found.setdefault(root_buffer(v), set()).add(v)
    return found


def slot_anchor(op: Operation, buffer: SSAValue) -> Operation:
    """Where `op`'s use of a multi-buffer slot is counted: its ancestor in the block
    that picks the slot (`dataflow.slot`), so a slot filled once per outer iteration and
    read in an inner loop is taken and handed back once per outer iteration too."""
    blocks = {
        v.owner.parent_block() for v in views(op, buffer) if isinstance(v.owner, dataflow.SlotOp)
    }
    if len(blocks) != 1:
        return op
    (block,) = blocks
    at = op
    while at is not None and at.parent_block() is not block:
        at = at.parent_op()
    return at if at is not None else op


def plan_sync(kernel: dataflow.KernelOp, units: dict[Operation, str], queues: Queues) -> SyncPlan:
    body = kernel.body.block
    order = [op for op in kernel.walk() if op in units]
    sync = SyncPlan()
    # Each instruction's views, found once (a long kernel asks for them per read).
    view_sets = {op: buffer_views(op) for op in order}

    def views(op: Operation, buffer: SSAValue) -> set[SSAValue]:
        return view_sets[op].get(buffer, set())

    by_buffer: dict[SSAValue, list[tuple[Operation, bool, bool]]] = {}
    for op in order:
        reads, writes = accesses(op)
        for b in dict.fromkeys([*reads, *writes]):
            by_buffer.setdefault(b, []).append((op, b in reads, b in writes))
    for buffer, uses in by_buffer.items():
        copies = slots(buffer)
        writers = [op for op, _, w in uses if w]
        if not writers:
            raise located_error(
                uses[0][0], "convert-dataflow-to-units: a buffer is read but never written"
            )
        starts = [0]
        if copies == 1:
            check_versions(uses, units, body)
            starts = version_starts(uses, units, body)
        position_of = {op: i for i, (op, _, _) in enumerate(uses)}
        for position, (reader, r, _w) in enumerate(uses):
            if not r:
                continue
            # The version this read sees: the nearest write before it through the same
            # view (a multi-buffer slot read, modified and read again within one
            # iteration: an accumulator), else every writer for a multi-buffer (one
            # token per slot fill), else the nearest write before it.
            earlier = [op for op, _, w in uses[:position] if w]
            seen = views(reader, buffer)
            same_view = [op for op in earlier if views(op, buffer) & seen]
            if copies > 1 and not same_view:
                producers = [op for op in writers if units[op] != units[reader]]
            else:
                if not earlier:
                    raise located_error(reader, "convert-dataflow-to-units: a buffer is read before it "
                                                "is written")  # fmt: skip
                latest = same_view[-1] if copies > 1 else earlier[-1]
                producers = [latest] if units[latest] != units[reader] else []
            for w in producers:
                src, dst = units[w], units[reader]
                nth = bisect_right(starts, position_of[w]) - 1  # the version of w
                q = queues.get(src, dst, buffer, copies, 0, nth)
                w_at = hoist(w, reader, body)
                r_at = hoist(reader, w, body, through_ifs=not conditional(w, reader, body))
                if copies > 1 and not same_view:
                    # Every iteration reads a fresh slot: one token each, pushed once
                    # per write (placed for the unit's first read of the buffer).
                    first = next(op for op, r, _ in uses if r and units[op] == dst)
                    w_at, r_at = hoist(w, first, body), slot_anchor(reader, buffer)
                sync.after(w_at, core.PushOp, q, src, ("push", q, w_at))
                # One pop per version and consumer unit: before its first read of it
                # (of a multi-buffer: in each block that reads a slot).
                multi = copies > 1 and not same_view
                version = (q, r_at.parent_block()) if multi else \
                    (q, w, branch_path(r_at, w, body))  # fmt: skip
                sync.before(r_at, core.PopOp, q, dst, ("pop", version))
        # Credits: each pure reader unit returns a token per version to each writer unit.
        pure_readers = [op for op, r, w in uses if r and not w]
        for reader_unit in dict.fromkeys(units[op] for op in pure_readers):
            unit_reads = [op for op in pure_readers if units[op] == reader_unit]
            last_read = unit_reads[-1]
            # A multi-buffer slot is handed back after the last read of each block that
            # reads one (a loop body, and the drain of the last slot after the loop).
            anchors = [slot_anchor(op, buffer) for op in unit_reads]
            handbacks = list({op.parent_block(): op for op in anchors}.values())
            for writer_unit in dict.fromkeys(units[op] for op in writers):
                if writer_unit == reader_unit:
                    continue
                # Versions: room for the extra credit a reader hands back (version_credits).
                depth = copies + (len(starts) > 1)
                # A one-slot buffer that this reader reads (a value another unit wrote)
                # before the writer's first write starts with no credit: the writer waits
                # for that read, not for a free slot (a value carried round a loop).
                first_write = next(i for i, (op, _, w) in enumerate(uses)
                                   if w and units[op] == writer_unit)  # fmt: skip
                read_first = any(r and units[op] == reader_unit for op, r, _ in uses[:first_write])
                q = queues.get(reader_unit, writer_unit, buffer, depth,
                               0 if copies == 1 and read_first else copies)  # fmt: skip
                if len(starts) > 1:  # versions one after another (sibling loops)
                    version_credits(uses, starts, reader_unit, units, body, sync, q)
                    continue
                first_writes = [op for op in writers if units[op] == writer_unit]
                if copies == 1:
                    first_writes = first_writes[:1]
                else:  # a write through the view of an earlier one updates its version
                    first_writes = [
                        op for i, op in enumerate(first_writes)
                        if not any(views(op, buffer) & views(e, buffer) for e in first_writes[:i])
                    ]  # fmt: skip
                for w in first_writes:
                    if copies > 1:  # a slot is taken and handed back every iteration
                        w_at = hoist(w, unit_reads[0], body)
                        for r_at in handbacks:
                            sync.after(r_at, core.PushOp, q, reader_unit, ("push", q, r_at))
                    else:
                        w_at = hoist(w, last_read, body)
                        every_pass = not conditional(w, last_read, body)
                        for read in last_reads(unit_reads, w, body):
                            r_at = hoist(read, w, body, through_ifs=every_pass)
                            sync.after(r_at, core.PushOp, q, reader_unit, ("push", q, r_at))
                    sync.before(w_at, core.PopOp, q, writer_unit, ("pop", q, w_at))
    reuse_tokens(order, by_buffer, units, body, queues, sync)
    return sync


STICK = 128  # alloc_lx offsets are stick-aligned (passes/allocate_scratchpad.py)


def lx_sticks(buffer: SSAValue) -> range | None:
    """The LX sticks an allocated buffer occupies (None before spyre-allocate-scratchpad)."""
    alloc = buffer.owner
    if not isinstance(alloc, dataflow.AllocLxOp) or alloc.offset is None:
        return None
    t = buffer.type
    assert isinstance(t, dataflow.LxType)
    start = alloc.offset_value
    return range(start // STICK, -(-(start + t.nbytes) // STICK))


def outermost(op: Operation, other: Operation, body: Block) -> Operation:
    """The outermost ancestor of `op` that does not hold `other`, through loops and
    ifs alike: a token placed there runs once per pass of the block both share."""
    other_chain = set(ancestors(other, body))
    best = op
    for a in ancestors(op, body):
        if a in other_chain:
            break
        best = a
    return best


def apart(op: Operation, other: Operation, body: Block) -> bool:
    """Whether `op` and `other` lie in the two regions of one `scf.if` (never in the
    same pass: no token between them)."""
    other_chain = ancestors(other, body)
    for a in ancestors(op, body):
        if a in other_chain:
            return False
        parent = a.parent_op()
        if isinstance(parent, scf.IfOp) and parent in other_chain:
            mine = a.parent_region()
            theirs = other_chain[other_chain.index(parent) - 1].parent_region()
            return mine is not theirs
    return False


def reuse_tokens(order: list[Operation], by_buffer: dict[SSAValue, list[Use]],
                 units: dict[Operation, str], body: Block, queues: Queues,
                 sync: SyncPlan) -> None:  # fmt: skip
    """Order the first write of a buffer after the uses of the buffer whose LX bytes it
    reuses (spyre-allocate-scratchpad shares bytes between buffers live one after the
    other in program order). A unit fires an instruction once its operands are there, so
    a writer on another unit with nothing to wait for (an iota, a load) could overwrite
    the bytes while the previous occupant is still read or written: a token goes from
    each other unit's last use of the previous occupant to each writer unit's first
    write of the new buffer. Only the latest earlier occupant of each stick is taken:
    it is itself ordered after the occupants before it."""
    position = {op: i for i, op in enumerate(order)}
    spans = []
    for buffer, uses in by_buffer.items():
        sticks = lx_sticks(buffer)
        if sticks is not None and uses:
            spans.append((position[uses[0][0]], position[uses[-1][0]], buffer, sticks))
    spans.sort(key=lambda s: (s[0], s[1]))
    occupant: dict[int, tuple[int, SSAValue]] = {}
    for first, last, buffer, sticks in spans:
        previous = {occupant[s][1]: None for s in sticks
                    if s in occupant and occupant[s][0] < first}  # fmt: skip
        for s in sticks:
            occupant[s] = (last, buffer)
        first_writes = {}
        for op, _r, w in by_buffer[buffer]:
            if w:
                first_writes.setdefault(units[op], op)
        for earlier in previous:
            last_uses = {units[op]: op for op, _r, _w in by_buffer[earlier]}
            for writer_unit, write in first_writes.items():
                for user_unit, use in last_uses.items():
                    if user_unit == writer_unit or apart(use, write, body):
                        continue  # one unit runs its instructions in program order
                    q = queues.get(user_unit, writer_unit, buffer, 1, 0, ("reuse", earlier))
                    u_at, w_at = outermost(use, write, body), outermost(write, use, body)
                    sync.after(u_at, core.PushOp, q, user_unit, ("push", q, u_at))
                    sync.before(w_at, core.PopOp, q, writer_unit, ("pop", q, w_at))


Use = tuple[Operation, bool, bool]  # (instruction, reads the buffer, writes it)
PREFIX = "convert-dataflow-to-units: "


def check_versions(uses: list[Use], units: dict[Operation, str], body: Block) -> None:
    """Refuse, with a located error, the uses of a one-slot buffer that its queues would
    leave unordered (`check_races` reports an LX race in them): a value carried to the
    next iteration of a loop (its data is pushed from the nearest write before a read in
    program order), and versions in turn written by more than one unit."""
    check_loop_carried(uses, units)
    check_sibling_versions(uses, units, body)


def version_starts(uses: list[Use], units: dict[Operation, str], body: Block) -> list[int]:
    """Positions in `uses` of the writes that begin a version of a one-slot buffer: the
    first write, and each later write afresh (not read by the write) after another
    unit read the version before it from outside the loop the write repeats in (a
    buffer loaded in two sibling loops, `repeats_apart`), unless the two writes lie in
    the two regions of an scf.if (never in the same pass)."""
    first = next(i for i, (_op, _r, w) in enumerate(uses) if w)
    starts = [first]
    fresh = [i for i, (_op, r, w) in enumerate(uses) if w and not r and i > first]
    for n in fresh:
        write = uses[n][0]
        if branch_path(write, uses[starts[-1]][0], body):
            continue
        read = [op for op, r, _ in uses[starts[-1] + 1 : n] if r and units[op] != units[write]]
        if read and repeats_apart(write, read[-1], body):
            starts.append(n)
    return starts


def repeats_apart(write: Operation, read: Operation, body: Block) -> bool:
    """Whether `write` lies in an `scf.for` that does not hold `read` (a sibling loop):
    only then does one credit before the loop fail to order its writes after `read`.
    (Writes in the loop body that holds the read, as spyre-tile emits for temporaries,
    keep one version with the credits above.)"""
    return any(
        isinstance(a, scf.ForOp) for a in ancestors(write, body)[1:] if not a.is_ancestor(read)
    )


def version_credits(uses: list[Use], starts: list[int], reader_unit: str,
                    units: dict[Operation, str], body: Block, sync: SyncPlan, q: SSAValue) -> None:  # fmt: skip
    """Credits of a one-slot buffer with several versions in turn, all written by one
    unit: the write of each version the reader unit reads waits for the reader's credit
    of the previous one, handed back after the reader's last read of each; the first
    version the unit does not read after one it did waits once for its last credit
    (and the reader hands one more back after that read, to keep the queue balanced)."""
    writer_unit = units[uses[starts[0]][0]]
    previous: list[Operation] = []
    for start, end in zip(starts, [*starts[1:], len(uses)]):
        write = uses[start][0]
        reads = [op for op, r, w in uses[start:end] if r and not w and units[op] == reader_unit]
        if reads:
            every_pass = not conditional(write, reads[-1], body)
            for read in last_reads(reads, write, body):
                r_at = hoist(read, write, body, through_ifs=every_pass)
                sync.after(r_at, core.PushOp, q, reader_unit, ("push", q, r_at))
            w_at = hoist(write, reads[-1], body)
        elif previous:
            # The writer takes the token of the reader's last read; the reader sends
            # one more after that read, so the queue ends with the tokens it began with.
            w_at = hoist(write, previous[-1], body)
            r_at = hoist(previous[-1], write, body)
            sync.after(r_at, core.PushOp, q, reader_unit, ("push", q, r_at, "again"))
        else:
            continue
        sync.before(w_at, core.PopOp, q, writer_unit, ("pop", q, w_at))
        previous = reads


def check_sibling_versions(uses: list[Use], units: dict[Operation, str], body: Block) -> None:
    """A buffer with several versions in turn (`version_starts`) written by more than
    one unit: the credit queue to a unit that has not written before starts full, so
    its write would not wait for the readers of the version before."""
    starts = version_starts(uses, units, body)
    writers = [op for op, _, w in uses if w]
    if len(starts) > 1 and len({units[op] for op in writers}) > 1:
        raise located_error(uses[starts[1]][0], PREFIX + "a buffer written by more than "
                            "one unit is written afresh after another unit read its previous "
                            "version (e.g. an LX buffer loaded in two sibling loops); use a "
                            "buffer per version")  # fmt: skip


def check_loop_carried(uses: list[Use], units: dict[Operation, str]) -> None:
    """A buffer read in a loop before another unit writes it later in the same loop body,
    with no write before the read in that body: the value is carried to the next
    iteration (a ring buffer), but the read would wait only for the write before the
    loop."""
    for position, (reader, r, _w) in enumerate(uses):
        if not r:
            continue
        loop = reader.parent_op()
        while loop is not None and not isinstance(loop, dataflow.KernelOp):
            if isinstance(loop, scf.ForOp):
                before = any(w and loop.is_ancestor(op) for op, _, w in uses[:position])
                after = [op for op, _, w in uses[position + 1 :]
                         if w and loop.is_ancestor(op) and units[op] != units[reader]]  # fmt: skip
                if after and not before and not fed_from(loop, reader, units[after[0]], units):
                    raise located_error(reader, PREFIX + "a buffer is read in a loop before "
                                        f"{units[after[0]]} writes it later in the loop body "
                                        "(a loop-carried value used as a ring buffer); use "
                                        "a double buffer (dataflow.slot)")  # fmt: skip
            loop = loop.parent_op()


def fed_from(
    loop: scf.ForOp, reader: Operation, writer_unit: str, units: dict[Operation, str]
) -> bool:
    """Whether `reader`, in each pass of `loop`, waits for data that `writer_unit` makes
    earlier in the same pass: the writer unit runs in program order, so that data comes
    after the writer unit's write at the end of the pass before, and the read is ordered
    after it through that queue (a running max that the next pass's reduction, made on
    the writer's unit, reaches the reader with)."""
    last_writer: dict[SSAValue, Operation] = {}
    for op in loop.body.walk():
        if op not in units:
            continue
        reads, writes = accesses(op)
        if units[op] == units[reader] and any(
            b in last_writer and units[last_writer[b]] == writer_unit for b in reads
        ):
            return True
        if op is reader:
            return False
        for b in writes:
            last_writer[b] = op
    return False


def last_reads(reads: list[Operation], writer: Operation, body: Block) -> list[Operation]:
    """The reads of a version after which its credit goes back: the last one, or, when
    the reads lie in the regions of two-way `scf.if`s, the last of each region of the
    last of them (the reads in earlier ones come first on the reader's unit: a merged
    matmul's row factors, read in each segment's N loop, see passes/tile_matmul.py)."""
    paths = [branch_path(op, writer, body) for op in reads]
    if not paths[-1]:
        return [reads[-1]]
    outer = paths[-1][0][0]
    inside = [(p, op) for p, op in zip(paths, reads) if p and p[0][0] is outer]
    if any(not p for p in paths):
        raise located_error(reads[-1], "convert-dataflow-to-units: a buffer is read both "
                                       "inside and outside the branches of an scf.if")  # fmt: skip
    last = {p[0]: op for p, op in inside}
    return list(last.values())


L3_OF = {
    dataflow.LoadOp: ls.LoadOp, dataflow.StoreOp: ls.StoreOp, dataflow.GatherOp: ls.GatherOp,
    dataflow.ScatterOp: ls.ScatterOp,
    dataflow.RingAllreduceOp: ls.RingAllreduceOp, dataflow.RingAllgatherOp: ls.RingAllgatherOp,
}  # fmt: skip
COMPUTE_OF = {"ls": ls.ComputeOp, "pe": pe.ComputeOp, "sfp": sfp.ComputeOp}


def to_l3(op: Operation, operands: list[SSAValue] | None = None) -> Operation:
    """The unit instruction for an L2 instruction (same properties; its operands, or
    `operands` in their place)."""
    if isinstance(op, dataflow.ComputeOp):
        cls = COMPUTE_OF[op.unit.data]
    else:
        cls = L3_OF[type(op)]
    return cls.create(
        operands=list(op.operands) if operands is None else operands,
        properties=dict(op.properties),
        attributes=dict(op.attributes), result_types=[r.type for r in op.results],
    )  # fmt: skip


def prune(block: Block) -> None:
    """Drop loops and ifs left without work, and address arithmetic nobody uses."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(block.walk())):
            empty = isinstance(op, (scf.ForOp, scf.IfOp)) and all(
                all(isinstance(o, scf.YieldOp) for o in r.block.ops) for r in op.regions if r.blocks
            )
            unused = (
                op.results
                and not op.regions
                and is_side_effect_free(op)
                and not any(r.uses for r in op.results)
            )
            if empty or unused:
                op.detach()
                op.erase()
                changed = True


@dataclass(frozen=True)
class UnitView:
    """Which ops of a kernel body one unit's program keeps."""

    unit: str
    owner: dict[Operation, str]  # instructions and sync ops -> the unit that runs them
    instructions: dict[Operation, str]  # the L2 instructions (those become L3 ones)


def copy_for_unit(ops: list[Operation], dest: Block, view: UnitView, mapping: dict) -> None:
    """Copy `ops` into `dest` for `view.unit`: loops, ifs and address arithmetic as they
    are, the unit's own instructions as L3 ones, other units' work left out. Building
    only what the unit keeps (not the whole body, then erasing most of it) is what
    keeps a long chain's lowering cheap (issue 18: compile time)."""
    for op in ops:
        who = view.owner.get(op)
        if who is not None and who != view.unit:
            assert not op.results, f"{op.name}: an instruction with results"
            continue
        if who == view.unit and op in view.instructions and not op.regions:
            operands = [mapping.get(v, v) for v in op.operands]
            copy = to_l3(op, operands)
            copy.location = op.location  # a unit's error names its L2 instruction
        else:
            copy = op.clone_without_regions(mapping)
            for source, target in zip(op.regions, copy.regions):
                for block in source.blocks:
                    new_block = Block(arg_types=block.arg_types)
                    for arg, new_arg in zip(block.args, new_block.args):
                        new_arg.name_hint = arg.name_hint
                        mapping[arg] = new_arg
                    target.add_block(new_block)
                    copy_for_unit(list(block.ops), new_block, view, mapping)
        mapping.update(zip(op.results, copy.results))
        dest.add_op(copy)


def lower_kernel(kernel: dataflow.KernelOp) -> core.ProgramOp:
    body = kernel.body.block
    units = assign_units(kernel)
    program_block = Block(arg_types=[a.type for a in body.args])
    queues = Queues(program_block)
    # Shared declarations: the core's buffers and constants.
    shared: dict[SSAValue, SSAValue] = dict(zip(body.args, program_block.args))
    for op in list(body.ops):
        if isinstance(op, (dataflow.AllocLxOp, arith.ConstantOp)):
            clone = op.clone()
            program_block.add_op(clone)
            shared.update(zip(op.results, clone.results))
    sync = plan_sync(kernel, units, queues)
    owner = {**units, **sync.unit_of}
    for unit in core.UNITS:
        if unit not in owner.values():
            continue
        unit_block = Block()
        top = [
            op for op in body.ops
            if not isinstance(op, (dataflow.AllocLxOp, arith.ConstantOp, dataflow.EndOp))
        ]  # fmt: skip
        copy_for_unit(top, unit_block, UnitView(unit, owner, units), dict(shared))
        prune(unit_block)
        unit_block.add_op(core.EndOp())
        program_block.add_op(core.UnitOp(unit, Region(unit_block)))
    program_block.add_op(core.EndOp())
    for op in list(sync.unit_of):
        op.detach()
        op.erase()
    props = {k: v for k, v in kernel.properties.items() if k not in ("sym_name", "cores")}
    program = core.ProgramOp(kernel.sym_name.data, kernel.core_count, list(kernel.inputs),
                             [r.type for r in kernel.outputs], Region(program_block), props)  # fmt: skip
    program.location = kernel.location
    return program


@dataclass(frozen=True)
class ConvertDataflowToUnits(ModulePass):
    """Lower every dataflow.kernel to a core.program of per-unit instruction streams."""

    name = "convert-dataflow-to-units"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, dataflow.KernelOp)]:
            Rewriter.replace_op(kernel, lower_kernel(kernel))
