"""`spyre-double-buffer`: prefetch streamed tile loads into 2-slot LX buffers.

A tile loop of a kernel typically starts by loading this iteration's tile from LPDDR5
into an LX buffer, then computes on it:

    %a = dataflow.alloc_lx : !dataflow.lx<16x1024xf16>
    scf.for %i = %lb to %ub step %s {
      %row = arith.muli %i, %c16 : index
      dataflow.load %in[%row, %c0] into %a : ...
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : ...
      ...
    }

The pass gives such a buffer two slots, loads iteration lb's tile before the loop and,
in each iteration, prefetches iteration i+step's tile into the other slot before
computing on this iteration's slot, so the load of the next tile can overlap the
compute on this one:

    %a = dataflow.alloc_lx : !dataflow.lx<2x16x1024xf16>
    %a_first = dataflow.slot %a[%c0]                    // prologue: iteration lb
    dataflow.load %in[row(lb), %c0] into %a_first       //  (under scf.if lb < ub unless
    scf.for %i = %lb to %ub step %s {                   //   the trip count is known)
      %k = arith.remui ((%i - %lb) / %s), %c2           // this iteration's slot
      %a_slot = dataflow.slot %a[%k]
      %next = arith.addi %i, %s
      %more = arith.cmpi slt, %next, %ub
      scf.if %more {                                    // prefetch iteration i + step
        %row_1 = arith.muli %next, %c16                 //  (address ops cloned, iv -> next)
        %a_next = dataflow.slot %a[1 - %k]
        dataflow.load %in[%row_1, %c0] into %a_next
      }
      dataflow.compute "spyre.exp" on "sfp" (%a_slot) -> (%b) : ...
    }

The prefetch is guarded by `scf.if` rather than left to overhang: an unguarded load of
one tile past the end would read padding (harmless by the load's semantics), but its
offsets come from arbitrary index arithmetic on the iv and need not stay in range (a
reversed loop's `ub - 1 - i` goes negative), and it would cost a tile of LPDDR5
bandwidth per loop per core in the simulator. The guard makes the rewrite exact: every
iteration reads exactly the tile it read before, so the numerics do not change.

A load is rewritten when all of these hold (otherwise it is skipped silently: this is
an optimisation):

* it is a `dataflow.load` among the loop body's leading ops (only side-effect-free
  address arithmetic and other loads may come before it); several leading loads of
  one loop (a matmul's A and B tiles) share one slot index and one prefetch `scf.if`;
* its destination is a `dataflow.alloc_lx` without an `offset`, outside the loop;
* every other use of that buffer is inside the loop and only reads it (an input of a
  `dataflow.compute`, the source of a `dataflow.store`, the indices of a
  `dataflow.gather`): the load writes the whole buffer each iteration, so nothing is
  carried across iterations or out of the loop;
* its offsets are computed from the iv, values defined outside the loop, and
  side-effect-free, region-free ops of the loop body (cloned for iteration i+step);
* nothing in the loop stores into the memory it loads from (the prefetch moves the
  read of tile i+step before iteration i's stores);
* the loop counts over `index` and may run more than once (a constant trip count of 0
  or 1 is skipped).

Option `enable` (default true): `spyre-double-buffer{enable=false}` leaves the IR as it
is, so a pipeline can switch double buffering off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, LocationAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from spyre_ir.dialects.dataflow import (
    AllocLxOp,
    ComputeOp,
    GatherOp,
    KernelOp,
    LoadOp,
    LxType,
    RingAllgatherBase,
    ScatterOp,
    SlotOp,
    StoreOp,
)


def constant_index(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _reads_only(op: Operation, buffer: SSAValue) -> bool:
    """`op` reads `buffer` and does not write it."""
    if isinstance(op, ComputeOp):
        return buffer in op.inputs and buffer not in op.outputs
    if isinstance(op, StoreOp):
        return op.source == buffer
    if isinstance(op, GatherOp):
        return op.indices == buffer and op.dest != buffer
    if isinstance(op, ScatterOp):
        return buffer in (op.source, op.indices)
    if isinstance(op, RingAllgatherBase):
        return op.part == buffer and op.full != buffer
    return False


def transfer_dest(op: Operation) -> SSAValue:
    """The LX buffer a prefetchable transfer fills."""
    return op.full if isinstance(op, RingAllgatherBase) else op.dest


@dataclass
class _Candidate:
    load: Operation
    """A `dataflow.load`, or a ring all-gather of a prefetched load's buffer."""
    alloc: AllocLxOp
    address: list[Operation]
    """The loop-body ops the load's offsets are computed by, in program order."""


def _address_slice(loop: scf.ForOp, load: LoadOp) -> list[Operation] | None:
    """The body ops that compute `load`'s offsets, or None when they cannot be cloned."""
    body = loop.body.block
    found: set[Operation] = set()
    work: list[SSAValue] = list(load.offsets)
    while work:
        value = work.pop()
        if value is body.args[0]:
            continue
        if isinstance(value, BlockArgument):
            if loop.is_ancestor(value.block):
                return None  # an iter_arg or an inner block's argument
            continue
        owner = value.owner
        assert isinstance(owner, Operation)
        if not loop.is_ancestor(owner) or owner in found:
            continue
        if owner.parent is not body or owner.regions or not is_side_effect_free(owner):
            return None
        found.add(owner)
        work.extend(owner.operands)
    return [op for op in body.ops if op in found]


def _candidate(loop: scf.ForOp, load: Operation) -> _Candidate | None:
    alloc = transfer_dest(load).owner
    if not isinstance(alloc, AllocLxOp) or alloc.offset is not None:
        return None
    if loop.is_ancestor(alloc):
        return None
    for use in alloc.buffer.uses:
        user = use.operation
        if user is load:
            continue
        if not loop.is_ancestor(user) or not _reads_only(user, alloc.buffer):
            return None
    if isinstance(load, RingAllgatherBase):
        return _Candidate(load, alloc, [])
    source = load.source
    if isinstance(source, BlockArgument):
        if loop.is_ancestor(source.block):
            return None
    elif loop.is_ancestor(source.owner):
        return None
    for op in loop.walk():
        if isinstance(op, StoreOp | ScatterOp) and op.dest == source:
            return None
    address = _address_slice(loop, load)
    if address is None:
        return None
    return _Candidate(load, alloc, address)


def leading_loads(loop: scf.ForOp) -> list[Operation]:
    """The loads that open the loop body, then the all-gathers of their buffers (an A
    tile shared over the ring is prefetched with the slice it is gathered from)."""
    loads: list[Operation] = []
    for op in loop.body.block.ops:
        if isinstance(op, LoadOp):
            loads.append(op)
        elif isinstance(op, RingAllgatherBase) and any(
            isinstance(load, LoadOp) and load.dest == op.part for load in loads
        ):
            loads.append(op)
        elif op.regions or not is_side_effect_free(op):
            break
    return loads


def _trip_count(loop: scf.ForOp) -> int | None:
    lb, ub, step = (constant_index(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is None or ub is None or step is None or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


class _Emit:
    """Collects new ops, located at one place; calling it returns the op's result."""

    def __init__(self, location: LocationAttr):
        self.ops: list[Operation] = []
        self.location = location

    def __call__(self, op: Operation, name: str | None = None) -> SSAValue:
        self.op(op)
        if name is not None:
            op.results[0].name_hint = name
        return op.results[0]

    def op(self, op: Operation) -> None:
        op.location = self.location
        self.ops.append(op)

    def index(self, value: int, at: Operation) -> SSAValue:
        """The index constant `value`: one already visible at `at`, or a new one."""
        op: Operation | None = at
        while op is not None and not isinstance(op, KernelOp):
            before = op.prev_op
            while before is not None:
                if (
                    isinstance(before, arith.ConstantOp)
                    and isinstance(before.result.type, IndexType)
                    and constant_index(before.result) == value
                ):
                    return before.result
                before = before.prev_op
            op = op.parent_op()
        return self(arith.ConstantOp.from_int_and_width(value, IndexType()), f"c{value}")


def _clone_loads(
    emit: _Emit,
    candidates: Sequence[_Candidate],
    iv: SSAValue,
    iv_value: SSAValue,
    buffers: dict[AllocLxOp, SSAValue],
    slot: SSAValue,
    suffix: str,
) -> None:
    """The candidates' address ops with iv -> `iv_value` (each op once, however many
    loads share it), and each candidate's load into `slot` of its buffer."""
    mapping: dict[SSAValue, SSAValue] = {iv: iv_value}
    for c in candidates:
        for op in c.address:
            if op.results and op.results[0] in mapping:
                continue
            clone = op.clone(value_mapper=mapping)
            emit.ops.append(clone)
            for old, new in zip(op.results, clone.results):
                mapping[old] = new
                if old.name_hint:
                    new.name_hint = f"{old.name_hint}_{suffix}"
        name = c.alloc.buffer.name_hint
        view = emit(SlotOp(buffers[c.alloc], slot), f"{name}_{suffix}" if name else None)
        mapping[transfer_dest(c.load)] = view
        load = c.load.clone(value_mapper=mapping)
        load.location = c.load.location
        emit.ops.append(load)


def _rewrite(loop: scf.ForOp, candidates: Sequence[_Candidate]) -> None:
    body = loop.body.block
    iv = body.args[0]
    trips = _trip_count(loop)

    # Two-slot buffers, where the single ones were.
    buffers: dict[AllocLxOp, SSAValue] = {}
    for c in candidates:
        t = c.alloc.buffer.type
        assert isinstance(t, LxType)
        double = AllocLxOp(LxType((2, *t.get_shape()), t.element_type))
        double.location = c.alloc.location
        double.buffer.name_hint = c.alloc.buffer.name_hint
        Rewriter.insert_op(double, InsertPoint.before(c.alloc))
        buffers[c.alloc] = double.buffer

    # Prologue: iteration lb into slot 0.
    before = _Emit(loop.location)
    c0, c1, c2 = (before.index(n, loop) for n in (0, 1, 2))
    first = _Emit(candidates[0].load.location)
    _clone_loads(first, candidates, iv, loop.lb, buffers, c0, "first")
    if trips is not None:
        before.ops.extend(first.ops)
    else:
        runs = before(arith.CmpiOp(loop.lb, loop.ub, "slt"), "runs")
        before.op(scf.IfOp(runs, [], _then(first.ops)))
    Rewriter.insert_op(before.ops, InsertPoint.before(loop))

    # This iteration's slot: ((i - lb) / step) mod 2.
    head = _Emit(loop.location)
    count = iv
    if constant_index(loop.lb) != 0:
        count = head(arith.SubiOp(iv, loop.lb), "from_lb")
    if constant_index(loop.step) != 1:
        count = head(arith.DivUIOp(count, loop.step), "iteration")
    slot = head(arith.RemUIOp(count, c2), "slot")
    views: dict[AllocLxOp, SSAValue] = {}
    for c in candidates:
        name = c.alloc.buffer.name_hint
        views[c.alloc] = head(SlotOp(buffers[c.alloc], slot), f"{name}_slot" if name else None)

    # Prefetch of iteration i + step into the other slot, when there is one.
    following = head(arith.AddiOp(iv, loop.step), "next")
    more = head(arith.CmpiOp(following, loop.ub, "slt"), "more")
    prefetch = _Emit(candidates[0].load.location)
    other = prefetch(arith.SubiOp(c1, slot), "next_slot")
    _clone_loads(prefetch, candidates, iv, following, buffers, other, "next")
    head.op(scf.IfOp(more, [], _then(prefetch.ops)))
    Rewriter.insert_op(head.ops, InsertPoint.at_start(body))

    # The body now reads this iteration's slot; the old loads and buffers go.
    for c in candidates:
        Rewriter.erase_op(c.load)
        c.alloc.buffer.replace_all_uses_with(views[c.alloc])
        Rewriter.erase_op(c.alloc)
    for c in candidates:
        for op in reversed(c.address):
            if op.parent is not None and not any(r.uses for r in op.results):
                Rewriter.erase_op(op)


def _then(ops: list[Operation]) -> Region:
    """The `then` region of an `scf.if` running `ops`."""
    return Region(Block([*ops, scf.YieldOp()]))


def _rewritten_each_iteration(
    loop: scf.ForOp, alloc: AllocLxOp, index: dict[Operation, int]
) -> bool:
    """The buffer is only used in the loop body, and each iteration starts by overwriting
    it whole with a tile op (no accumulate), so no value crosses iterations. `index`
    holds the position of each op of the body (looked up, not searched for: issue 18)."""
    body = loop.body.block
    uses = [u.operation for u in alloc.buffer.uses]
    if not uses or any(u.parent is not body for u in uses):
        return False
    first = min(uses, key=index.__getitem__)
    return (
        isinstance(first, ComputeOp)
        and first.accumulate is None
        and alloc.buffer in first.outputs
        and alloc.buffer not in first.inputs
    )


def _alternate_slots(loop: scf.ForOp) -> None:
    """Give every buffer the loop rewrites each iteration two slots, used alternately, so
    the unit writing tile i+1 need not wait for the unit still reading tile i (an
    output tile is being stored while the next one is computed)."""
    body = loop.body.block
    index = {op: i for i, op in enumerate(body.ops)}
    allocs: dict[AllocLxOp, None] = {}
    for op in loop.body.ops:
        for operand in op.operands:
            owner = operand.owner
            if (
                isinstance(owner, AllocLxOp)
                and owner.offset is None
                and owner not in allocs
                and not loop.is_ancestor(owner)
                and _rewritten_each_iteration(loop, owner, index)
            ):
                allocs[owner] = None
    if not allocs:
        return
    head = _Emit(loop.location)
    c2 = head.index(2, loop)
    count = body.args[0]
    if constant_index(loop.lb) != 0:
        count = head(arith.SubiOp(count, loop.lb), "from_lb")
    if constant_index(loop.step) != 1:
        count = head(arith.DivUIOp(count, loop.step), "iteration")
    parity = head(arith.RemUIOp(count, c2), "parity")
    views = []
    for alloc in allocs:
        t = alloc.buffer.type
        assert isinstance(t, LxType)
        double = AllocLxOp(LxType((2, *t.get_shape()), t.element_type))
        double.location = alloc.location
        Rewriter.insert_op(double, InsertPoint.before(alloc))
        views.append((alloc, head(SlotOp(double.buffer, parity))))
    Rewriter.insert_op(head.ops, InsertPoint.at_start(body))
    for alloc, view in views:
        alloc.buffer.replace_all_uses_with(view)
        Rewriter.erase_op(alloc)


@dataclass(frozen=True)
class SpyreDoubleBuffer(ModulePass):
    """Prefetch each tile loop's streamed loads into 2-slot LX buffers."""

    name = "spyre-double-buffer"

    enable: bool = True
    """false: leave the IR unchanged (pipelines switch double buffering off with it)."""

    alternate: bool = True
    """Also give two alternating slots to the buffers a loop rewrites every iteration
    (tiles being computed and stored), not only to the loads it prefetches."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.enable:
            return
        for kernel in [k for k in op.walk() if isinstance(k, KernelOp)]:
            for loop in [o for o in kernel.walk() if isinstance(o, scf.ForOp)]:
                trips = _trip_count(loop)
                if not isinstance(loop.lb.type, IndexType) or (trips is not None and trips < 2):
                    continue
                candidates = [
                    c for load in leading_loads(loop) if (c := _candidate(loop, load)) is not None
                ]
                # An all-gather is prefetched only with the slice it gathers.
                prefetched = {transfer_dest(c.load) for c in candidates}
                candidates = [
                    c
                    for c in candidates
                    if not isinstance(c.load, RingAllgatherBase) or c.load.part in prefetched
                ]
                if candidates:
                    _rewrite(loop, candidates)
                if self.alternate:
                    _alternate_slots(loop)
