"""`spyre-schedule-chains`: order a function's L1 ops so that each value's consumers
follow it, before `spyre-fuse` groups them.

spyre-fuse walks a block in program order and a group closes at the first op that
cannot join it. The order a graph reaches L1 in is torch's: a Llama layer computes the
q, k and v projections and their head-split transposes one after another, and only
then the rotary embeddings, so the transpose of q closes its group before the rotary
of q comes, and each runs as a kernel of its own, writing q to LPDDR5 and reading it
back. This pass reorders the ops (a list schedule, every op after its operands): of the
ops whose operands exist, the next is the one reading the most recently computed value
(ties: program order), so a chain of ops on one value stays together, and ops that
read only arguments and constants come where the chain that needs them is.

Identical `spyre.reshape`s of one value (torch flattens the normalised activation once
per projection), and identical `spyre.restickify`s, become one first, so the
projections read the same A, which spyre-fuse's pairs need.

A broadcast comes right before the first op that reads it, not after the op computing
its operand: spyre-fuse then puts it in its reader's group, which reads the small
operand, instead of a kernel of its own writing the broadcast to LPDDR5 (decode's new K
and V row, broadcast over the cache for the index_put's select).

Rank-0 constants and other ops without tensor operands move to the top; the block's
terminator stays last. Values do not change; only the order of ops does.

An L1 -> L1 pass. Option `schedule-chains` (default true): false leaves the IR as it is.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from spyre_ir.dialects import spyre


def merge_duplicate_reshapes(block: Block) -> int:
    """Make reshapes (and restickifies, spyre-stickify's for a reshape that is no view)
    of one value to one type a single op (the first); how many went."""
    seen: dict[tuple, Operation] = {}
    merged = 0
    for op in list(block.ops):
        if not isinstance(op, (spyre.ReshapeOp, spyre.RestickifyOp)) or op.attributes:
            continue
        key = (type(op), op.operands[0], op.results[0].type)
        first = seen.setdefault(key, op)
        if first is not op:
            op.results[0].replace_all_uses_with(first.results[0])
            op.detach()
            op.erase()
            merged += 1
    return merged


def chain_order(block: Block) -> list[Operation]:
    """The block's ops (terminator excluded) in the list schedule described above.

    A leaf (an op with no operand computed in the block: a cast or restickify of an
    argument, a constant) is no node of the schedule: it comes right before the first
    op that reads it, so that it neither opens the block nor splits a chain. Nor is a
    broadcast (`deferred`): its readers wait for what it reads, and it comes right
    before the first of them."""
    ops = list(block.ops)
    if ops and ops[-1].has_trait(IsTerminator):
        ops.pop()
    index = {op: i for i, op in enumerate(ops)}
    producers = {op: {o.owner for o in op.operands if o.owner in index} for op in ops}
    leaves = {op for op in ops if not producers[op]}
    deferred = {op for op in ops if isinstance(op, spyre.BroadcastToOp) and op not in leaves}
    after: dict[Operation, set[Operation]] = {}

    def waits_for(op: Operation) -> set[Operation]:
        """The scheduled ops `op` waits for: its producers, through deferred ones."""
        if op not in after:
            after[op] = set().union(*({p} if p not in deferred else waits_for(p)
                                      for p in producers[op]))  # fmt: skip
        return after[op]

    waiting = {op: len(waits_for(op) - leaves) for op in ops}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        if op not in deferred:
            for p in waits_for(op):
                users[p].append(op)
    position: dict[Operation, int] = {}
    ready: list[tuple[int, int, Operation]] = []
    order: list[Operation] = []

    def place(op: Operation) -> None:
        position[op] = len(order)
        order.append(op)

    def push(op: Operation) -> None:
        latest = max((position[p] for p in waits_for(op) if p in position), default=-1)
        heapq.heappush(ready, (-latest, index[op], op))

    for op in ops:
        if op not in leaves and op not in deferred and waiting[op] == 0:
            push(op)

    def bring(op: Operation) -> None:
        """The leaves and deferred ops `op` reads, in program order, placed now."""
        for p in sorted((producers[op] & (leaves | deferred)) - position.keys(),
                        key=index.__getitem__):  # fmt: skip
            if p in position:  # placed meanwhile, as a sibling or by a deferred op
                continue
            if p in deferred:
                bring(p)
            place(p)
            if p in leaves:
                pull_siblings(p)

    def run(op: Operation) -> None:
        bring(op)
        place(op)
        for user in users[op]:
            waiting[user] -= 1
            if waiting[user] == 0 and user not in leaves:
                push(user)
        pull_siblings(op)

    def pull_siblings(op: Operation) -> None:
        if not isinstance(op, spyre.MatmulOp):
            return
        unplaced = [o for o in ops if o in leaves and o not in position]
        for sibling in siblings(op, [*(entry[2] for entry in ready), *unplaced]):
            if sibling not in position:
                run(sibling) if sibling not in leaves else place(sibling)

    while ready:
        _, _, op = heapq.heappop(ready)
        if op not in position:  # else taken early as a sibling
            run(op)
    # Leaves and broadcasts nothing reads (a result returned as it is), at the end in
    # program order.
    for op in ops:
        if op not in position:
            place(op)
    assert len(order) == len(ops), "a cycle among a block's ops"
    return order


def siblings(op: Operation, ready: list[Operation]) -> list[Operation]:
    """Ready matmuls reading `op`'s A with a B of the same shape, in program order
    (the K and V projections): placed right after `op`, spyre-fuse can pair them."""
    if not isinstance(op, spyre.MatmulOp):
        return []
    b = spyre.shape_of(op.rhs)
    return [o for o in ready if isinstance(o, spyre.MatmulOp) and o is not op
            and o.lhs is op.lhs and spyre.shape_of(o.rhs) == b]  # fmt: skip


def reorder(block: Block) -> None:
    """Put the block's ops in `chain_order`, the terminator last."""
    order = chain_order(block)
    last = block.last_op
    terminator = last if last is not None and last.has_trait(IsTerminator) else None
    for op in order:
        op.detach()
    for op in order:
        if terminator is not None:
            block.insert_op_before(op, terminator)
        else:
            block.add_op(op)


@dataclass(frozen=True)
class SpyreScheduleChains(ModulePass):
    """Order each function's ops so that a value's consumers follow it."""

    name = "spyre-schedule-chains"

    schedule_chains: bool = True
    """false: leave the IR unchanged."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.schedule_chains:
            return
        for fn in op.walk():
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                merge_duplicate_reshapes(fn.body.block)
                reorder(fn.body.block)
