"""spyre-fuse's matmul groups on a head view: a rotary embedding's ops on the [m, H, D]
view of a matmul's result (spyre-fuse-rotary) join the matmul's group, and layout views
of the group's results (spyre-fold-layouts) stand after it without closing it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from spyre_ir.dialects import spyre
from spyre_ir.passes import row_model
from spyre_ir.passes.fold_layouts import is_view_transpose

if TYPE_CHECKING:
    from spyre_ir.passes.fuse import Candidate


def layout_view_of(candidate: Candidate, op: Operation) -> bool:
    """`op` is a view of a value the group computes that spyre-fold-layouts made: a
    transpose moving no byte, or a reshape read only by such transposes (v's head split
    between k's matmul and k's rotary epilogue). It stands after the group without
    closing it; no op reading it may join the group."""
    owner = op.operands[0].owner
    if owner not in candidate.ops and owner not in candidate.deferred:
        return False
    if is_view_transpose(op):
        return True
    uses = [u.operation for u in op.results[0].uses]
    return isinstance(op, spyre.ReshapeOp) and bool(uses) and all(map(is_view_transpose, uses))


def head_split(op: Operation) -> int | None:
    """The head width D of a reshape [m, H * D] -> [m, H, D] (a matmul result's head
    view, spyre-fuse-rotary), else None."""
    if not isinstance(op, spyre.ReshapeOp):
        return None
    before, after = row_model.shape(op.input), row_model.shape(op.result)
    if len(before) != 2 or len(after) != 3 or tuple(after[:1]) != tuple(before[:1]):
        return None
    return after[2] if after[1] * after[2] == before[1] else None


def head_view_op(candidate: Candidate, anchor: spyre.MatmulOp, op: Operation) -> bool:
    """`op` runs on the head view [m, H, D] of one of the group's matmul results: the
    view itself (a reshape of the result, read only inside the group) or an elementwise
    op, or a slice or concat along D, on head-view values of the group. Each output tile
    of the matmul holds whole heads, so the epilogue computes these on its tiles."""
    matmuls = [o for o in candidate.ops if isinstance(o, spyre.MatmulOp)]
    results = [mm.result for mm in matmuls]
    if head_split(op) is not None:
        return op.operands[0] in results
    views = [o.results[0] for o in candidate.ops if head_split(o) is not None]
    if not views:
        return False
    m, n = row_model.shape(anchor.result)
    inside = {r for o in candidate.ops for r in o.results}
    heads = [row_model.shape(v) for v in views]

    def on_heads(value: SSAValue) -> bool:
        shape = row_model.shape(value)
        return len(shape) == 3 and any(tuple(shape[:2]) == tuple(h[:2]) for h in heads)

    if not all(on_heads(r) for r in op.results):
        return False
    if isinstance(op, (spyre.SliceOp, spyre.ConcatOp)):
        return all(o in inside and on_heads(o) for o in op.operands) and (
            isinstance(op, spyre.ConcatOp) and op.dim.value.data % 3 == 2
            or isinstance(op, spyre.SliceOp) and row_model.shape(op.input)[:2]
            == row_model.shape(op.result)[:2] and list(spyre.ints(op.steps)) == [1, 1, 1])  # fmt: skip
    if not isinstance(op, (spyre.BinaryOp, spyre.UnaryOp)):
        return False
    # Other operands: of the head view, a scalar, or [m, 1, D] (cos, sin per position).
    return all(o in inside and on_heads(o) or row_model.shape(o) == () or
               len(row_model.shape(o)) == 3 and row_model.shape(o)[0] == m
               and row_model.shape(o)[1] == 1 for o in op.operands)  # fmt: skip
