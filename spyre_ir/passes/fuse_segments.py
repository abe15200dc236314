"""spyre-fuse's projection segments: matmul groups whose A is one norm prologue's
result become one group, which computes the prologue once (option
`fuse-projection-segments`).

Llama's q projection and its k/v pair read the same normalised x. Apart, each group
computes the prologue from x (the later one from a copy of the chain,
`Fuser.unplaced_prologue`), so x crosses LPDDR5 twice. Merged, the later group's
matmuls are a segment of the earlier group (attribute `dataflow.segment` on each of its
matmuls): spyre-tile fills the A block once per M tile and runs one N loop per
segment over it, each with its own B operands, epilogue and outputs
(passes/tile_matmul.py). The copy of the chain goes.

A group merges into the one that placed its prologue when both are 2-D matmul groups
of one element type with no forced split, and every value it reads, but the copy's
result, exists where the earlier group stands (the group moves there; so do the free
reshapes it reads, unless the earlier group reads the same view: k's view of cos is
q's). spyre-tile splits a merged group whose plan keeps no A block resident into its
segments again (`split_segments`)."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import dataflow, spyre
from spyre_ir.passes.fuse import Candidate, is_scalar_constant, reads_before
from spyre_ir.passes.split_head_view import group_of

SEGMENT = "dataflow.segment"
"""On a matmul of a merged group: the index of its segment (none: segment 0)."""

PrologueCopies = dict[Operation, tuple[Operation, list[Operation]]]
"""A copied prologue chain's last op -> (the original chain's last op, the copy)."""


def segment_of(mm: spyre.MatmulOp) -> int:
    attr = mm.attributes.get(SEGMENT)
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def matmuls(candidate: Candidate) -> list[spyre.MatmulOp]:
    return [op for op in candidate.ops if isinstance(op, spyre.MatmulOp)]


def merge_segments(groups: list[Candidate], copies: PrologueCopies) -> list[Candidate]:
    """`groups` with each group whose prologue is a copy merged, as a segment, into the
    group holding the original chain (when `mergeable`)."""
    kept: list[Candidate] = []
    grouped = {op for g in groups for op in g.ops}
    for later in groups:
        last = next((op for op in later.ops if op in copies), None)
        original, chain = copies.get(last, (None, []))
        earlier = next((g for g in kept if original in g.ops), None)
        views = mergeable(earlier, later, chain, grouped) if earlier is not None else None
        if views is None:
            kept.append(later)
            continue
        earlier.hoisted.extend(unshared(earlier, later, views, grouped))
        segment = 1 + max(segment_of(mm) for mm in matmuls(earlier))
        for mm in matmuls(later):
            mm.attributes[SEGMENT] = IntegerAttr(segment, i64)
        chain[-1].results[0].replace_all_uses_with(original.results[0])
        for op in reversed(chain):
            op.detach()
            op.erase()
        earlier.ops.extend(op for op in later.ops if op not in chain)
        earlier.hoisted.extend(later.hoisted)
        earlier.deferred.extend(later.deferred)
    return kept


def unshared(earlier: Candidate, later: Candidate, views: list[Operation],
             grouped: set[Operation]) -> list[Operation]:  # fmt: skip
    """`views` but those the same as a view `earlier` reads (k's view of cos and q's):
    their readers read that one instead, so the kernel reads the bytes as one input."""
    theirs = [v.owner for op in earlier.ops for v in op.operands
              if isinstance(v.owner, spyre.ReshapeOp) and v.owner not in grouped]  # fmt: skip
    kept = []
    for view in views:
        twin = next((t for t in [*earlier.hoisted, *theirs] if isinstance(t, spyre.ReshapeOp)
                     and t.input is view.input and t.result.type == view.result.type), None)  # fmt: skip
        if twin is None or any(u.operation not in later.ops for u in view.result.uses):
            kept.append(view)
            continue
        view.result.replace_all_uses_with(twin.result)
        view.detach()
        view.erase()
    return kept


def mergeable(earlier: Candidate, later: Candidate, chain: list[Operation],
              grouped: set[Operation]) -> list[Operation] | None:  # fmt: skip
    """Whether `later`, whose A is `chain`'s result (a copy of a prologue `earlier`
    computes), may run as a segment of `earlier` (see the module's doc): None if not,
    else the free reshapes between the groups it reads, which move before `earlier`
    (k's view of cos and sin)."""
    if earlier.kind != "matmul" or later.kind != "matmul" or not chain:
        return None
    ours, theirs = matmuls(earlier), matmuls(later)
    both = [*ours, *theirs]
    if any("spyre.split" in mm.attributes for mm in both):
        return None
    if any(len(spyre.shape_of(v)) != 2 for mm in both for v in (mm.lhs, mm.result)):
        return None
    if len({spyre.element_of(mm.result) for mm in both}) != 1:
        return None
    a = chain[-1].results[0]
    if any(mm.lhs is not a for mm in theirs) or any(
            u.operation not in theirs for u in a.uses):  # fmt: skip
        return None  # only the later matmuls read the copy
    inside = set(chain)
    if any(u.operation not in inside for op in chain[:-1] for r in op.results for u in r.uses):
        return None
    views: list[Operation] = []
    for v in (v for op in later.ops if op not in inside for v in op.operands if v is not a):
        owner = v.owner
        if isinstance(owner, spyre.ReshapeOp) and owner not in grouped and \
                reads_before(earlier, owner.input):  # fmt: skip
            views += [owner] if owner not in views else []
        elif not exists_there(earlier, later, v):
            return None
    return views


def exists_there(earlier: Candidate, later: Candidate, value: SSAValue) -> bool:
    """`value`, which an op of `later` reads, exists where `earlier` stands: computed in
    either group, a scalar constant, from before `earlier`, or a reshape `later` hoists
    of such a value."""
    owner = value.owner
    if isinstance(owner, Operation):
        if owner in later.ops or owner in earlier.ops or is_scalar_constant(owner):
            return True
        if owner in later.hoisted:
            return reads_before(earlier, owner.operands[0])
    return reads_before(earlier, value)


def split_segments(group: dataflow.GroupOp) -> list[dataflow.GroupOp]:
    """Replace merged matmul `group` by one group per segment, each computing the
    prologue from x again (spyre-tile's way out when its plan keeps no A block
    resident, see passes/tile_matmul.py)."""
    from spyre_ir.passes.matmul_group import MatmulGroup

    body = group.body.block
    yielded = body.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    ops = [op for op in body.ops if op is not yielded]
    constants = {op.results[0]: op for op in ops if is_scalar_constant(op)}
    outer: dict[SSAValue, SSAValue] = dict(zip(body.args, group.inputs))
    first = MatmulGroup.of(group)
    made = []
    for i, seg in enumerate([first, *first.segments]):
        mms = [seg.mm, *([seg.second] if seg.second else [])]
        read = [v for mm in mms for v in (mm.lhs, mm.rhs)]
        own = {*first.prologue, *mms, *seg.epilogue,
               *(seg.folded[v] for v in read if v in seg.folded),
               *(v.owner for v in read if v in seg.resticked)}  # fmt: skip
        part = group_of([op for op in ops if op in own and op not in constants.values()],
                         seg.outputs, outer, constants, f"{group.sym_name.data}_{i}")  # fmt: skip
        for op in part.body.ops:
            op.attributes.pop(SEGMENT, None)
        part.attributes.update({k: v for k, v in group.attributes.items()
                                if k in ("dataflow.kind", "dataflow.row_dims")})  # fmt: skip
        part.location = group.location
        Rewriter.insert_op(part, InsertPoint.before(group))
        outer.update(zip(seg.outputs, part.outputs))
        made.append(part)
    for result, inner in zip(group.outputs, yielded.values):
        result.replace_all_uses_with(outer[inner])
    Rewriter.erase_op(group)
    return made
