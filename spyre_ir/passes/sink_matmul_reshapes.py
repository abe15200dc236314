"""`spyre-sink-matmul-reshapes`: the elementwise ops after a linear layer run on the
matmul's 2-D rows, so that spyre-fuse can take them into the matmul's kernel.

torch's nn.Linear on [b, s, d] flattens its input to [b * s, d], multiplies, and
reshapes the result back to [b, s, n]; its bias add, a residual add, an activation or a
cast then apply to the 3-D view. A reshape ends a spyre-fuse group, so each of those
ops would be a kernel of its own, writing the [b, s, n] intermediate to LPDDR5 and
reading it back. An elementwise op commutes with a reshape that only regroups the rows
(the last dim unchanged), so this pass rewrites

    %r = spyre.reshape %mm : [b*s, n] -> [b, s, n]
    %y = spyre.add %r, %x  : [b, s, n], [b, s, n]

to the op on the rows and the reshape after it:

    %x2 = spyre.reshape %x  : [b, s, n] -> [b*s, n]
    %y2 = spyre.add %mm, %x2 : [b*s, n]
    %y  = spyre.reshape %y2 : [b*s, n] -> [b, s, n]

and goes on down the chain from the new reshape. The other operand may be a scalar, a
row vector broadcast over the rows ([n], or [1, .., 1, n], which becomes [n]), a tensor
of the view's leading dims (reshaped to the rows; a reshape of rows is read through:
another linear layer's, or a row statistic's [b*s, 1]). Anything else (a per-batch
[b, 1, n] operand) stops the sinking there: the value is the same either way. A
reduction over the last dim with keepdim (RMSNorm's mean) sinks too, to [b*s, 1], so a
norm after a residual add also runs on the rows.

An L1 -> L1 pass on plain tensors (before spyre-stickify). Option `enable` (default
Option `sink-reshapes` (default true): false leaves the IR as it is, and with it the
epilogues of linear layers on 3-D activations in kernels of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, NoneAttr, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import spyre

SINKS_THROUGH = (spyre.BinaryOp, spyre.UnaryOp, spyre.CastOp)


def _plain(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, TensorType) and isinstance(t.encoding, NoneAttr)


def _regroups_rows(reshape: spyre.ReshapeOp) -> bool:
    """A reshape of a 2-D value that keeps its last dim: only the rows are regrouped."""
    src, dst = spyre.shape_of(reshape.input), spyre.shape_of(reshape.result)
    return len(src) == 2 and len(dst) >= 2 and src[-1] == dst[-1] and _plain(reshape.input)


def _from_matmul(value: SSAValue, depth: int = 8) -> bool:
    """`value` is a matmul's result, or an elementwise op's on such rows (torch's addmm
    is a matmul and its bias add): the reshape after it ends a linear layer."""
    owner = value.owner
    if isinstance(owner, spyre.MatmulOp):
        return True
    if depth == 0 or not isinstance(owner, SINKS_THROUGH):
        return False
    shape = spyre.shape_of(value)
    return any(spyre.shape_of(o) == shape and _from_matmul(o, depth - 1) for o in owner.operands)


def _tensor(shape: tuple[int, ...] | list[int], like: SSAValue) -> TensorType:
    return TensorType(spyre.element_of(like), list(shape))


def _on_rows(operand: SSAValue, reshape: spyre.ReshapeOp, leading: tuple[int, ...],
             rows: int) -> SSAValue | list[int] | None:  # fmt: skip
    """`operand` of an op on views with leading dims `leading` (the view of
    `reshape`), as an operand of the same op on `rows` rows: the value, or the shape to
    reshape it to; None when it does not broadcast so."""
    if operand is reshape.result:
        return reshape.input
    shape = spyre.shape_of(operand)
    if len(shape) <= 1:
        return operand  # a scalar or a row vector: it broadcasts over the rows as well
    if not _plain(operand):
        return None
    if all(d == 1 for d in shape[:-1]):
        return [shape[-1]]
    if tuple(shape[:-1]) != leading:
        return None
    owner = operand.owner
    if isinstance(owner, spyre.ReshapeOp) and spyre.shape_of(owner.input) == (rows, shape[-1]):
        return owner.input  # already computed on the rows (another linear layer's)
    return [rows, shape[-1]]


def _reduces_last_dim(op: Operation) -> bool:
    if not isinstance(op, spyre.ReductionOp) or op.keepdim is None:
        return False
    rank = len(spyre.shape_of(op.input))
    return [d % rank for d in spyre.ints(op.dims)] == [rank - 1]


def _sink_into(op: Operation, reshape: spyre.ReshapeOp) -> spyre.ReshapeOp | None:
    """Rewrite `op` (a user of `reshape`) onto the rows; returns the reshape now after it."""
    reduces = _reduces_last_dim(op)
    if not (isinstance(op, SINKS_THROUGH) or reduces) or len(op.results) != 1:
        return None
    view = spyre.shape_of(reshape.result)
    rows = spyre.shape_of(reshape.input)[0]
    result = op.results[0]
    if tuple(spyre.shape_of(result)[:-1]) != tuple(view[:-1]):
        return None  # the op broadcasts the view over more leading dims
    found = [_on_rows(o, reshape, tuple(view[:-1]), rows) for o in op.operands]
    if any(o is None for o in found):
        return None
    operands: list[SSAValue] = []
    for operand, on_rows in zip(op.operands, found):
        if isinstance(on_rows, list):
            flat = spyre.ReshapeOp(operand, _tensor(on_rows, operand))
            flat.location = op.location
            Rewriter.insert_op(flat, InsertPoint.before(op))
            on_rows = flat.result
        operands.append(on_rows)
    properties = dict(op.properties)
    if reduces:  # over the last dim of the rows, still kept as size 1
        properties["dims"] = DenseArrayBase.from_list(i64, [-1])
    on_rows_op = type(op).create(
        operands=operands,
        result_types=[_tensor([rows, spyre.shape_of(result)[-1]], result)],
        properties=properties,
        attributes=dict(op.attributes),
    )
    on_rows_op.location = op.location
    back = spyre.ReshapeOp(on_rows_op.results[0], result.type)
    back.location = op.location
    Rewriter.insert_op([on_rows_op, back], InsertPoint.before(op))
    result.replace_all_uses_with(back.result)
    Rewriter.erase_op(op)
    return back


@dataclass(frozen=True)
class SpyreSinkMatmulReshapes(ModulePass):
    """Run the elementwise ops after a matmul's row-regrouping reshape on its rows."""

    name = "spyre-sink-matmul-reshapes"

    sink_reshapes: bool = True
    """false: leave the IR unchanged."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.sink_reshapes:
            return
        work = [
            r
            for r in op.walk()
            if isinstance(r, spyre.ReshapeOp) and _regroups_rows(r) and _from_matmul(r.input)
        ]
        while work:
            reshape = work.pop()
            for user in list(dict.fromkeys(u.operation for u in reshape.result.uses)):
                sunk = _sink_into(user, reshape)
                if sunk is not None:
                    work.append(sunk)
            if reshape.parent is not None and not reshape.result.uses:
                Rewriter.erase_op(reshape)
        for reshape in [r for r in op.walk() if isinstance(r, spyre.ReshapeOp)]:
            _fold_into_producer(reshape)


def _fold_into_producer(reshape: spyre.ReshapeOp) -> None:
    """A reshape of a reshape reads the first one's input (the sunk reshapes meet the
    flattening reshapes of the next layer's input: [n, d] -> [b, s, d] -> [n, d])."""
    inner = reshape.input.owner
    if not isinstance(inner, spyre.ReshapeOp):
        return
    if inner.input.type == reshape.result.type:
        reshape.result.replace_all_uses_with(inner.input)
        Rewriter.erase_op(reshape)
    else:
        reshape.operands[0] = inner.input
    if not inner.result.uses:
        Rewriter.erase_op(inner)
