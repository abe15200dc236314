"""spyre-lower-scatter: `spyre.scatter` as tensor ops the card's kernels already run.

A scatter along dim d of `dest` [pre.., S, post..] at n runtime positions `indices` of
`source` [pre.., n, post..] becomes

    hit[j, p]   = (indices[j] wrapped) == p            (n x S, spyre.eq on an iota)
    moved       = hit^T @ source                       (a one-hot matmul; n = 1: a broadcast)
    written[p]  = (hit^T @ ones)[p] > 0                (n = 1: hit itself)
    result      = select(written, moved, dest)

A one-hot product is exact (one non-zero term per output, summed in f32). A position
given twice sums its sources; torch leaves that case undefined. The cost: `dest` is read
and the result written whole, once per call; only the n source slices are multiplied.
A scatter into an integer or boolean tensor is a located error (the PE arrays multiply
floats).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import spyre
from spyre_ir.shape_rules import numel

I64 = IntegerType(64)
I1 = IntegerType(1)


def _type(shape: tuple[int, ...], element: Attribute) -> TensorType:
    return TensorType(element, list(shape))


def lower(op: spyre.ScatterOp) -> list[Operation]:
    """The ops replacing `op`; the last one's result is the scatter's."""
    dest, indices, source = op.dest, op.indices, op.source
    shape, dim = spyre.shape_of(dest), op.axis
    size, count = shape[dim], spyre.shape_of(indices)[0]
    element = spyre.element_of(dest)
    pre, post = shape[:dim], shape[dim + 1 :]
    ops: list[Operation] = []

    def emit(new: Operation) -> SSAValue:
        ops.append(new)
        return new.results[0]

    index = (
        indices
        if spyre.element_of(indices) == I64
        else emit(spyre.CastOp(indices, _type((count,), I64)))
    )
    negative = emit(spyre.LtOp(index, emit(spyre.FullOp(0, _type((), I64))), _type((count,), I1)))
    shifted = emit(
        spyre.AddOp(index, emit(spyre.FullOp(size, _type((), I64))), _type((count,), I64))
    )
    index = emit(spyre.SelectOp(negative, shifted, index, _type((count,), I64)))
    column = emit(spyre.ReshapeOp(index, _type((count, 1), I64)))
    positions = emit(spyre.IotaOp(1, 0, 1, _type((1, size), I64)))
    hit = emit(spyre.EqOp(column, positions, _type((count, size), I1)))
    along = tuple(size if d == dim else 1 for d in range(len(shape)))
    if count == 1:
        written = emit(spyre.ReshapeOp(hit, _type(along, I1)))
        moved = emit(spyre.BroadcastToOp(source, _type(shape, element)))
    else:
        one_hot = emit(spyre.CastOp(hit, _type((count, size), element)))
        picks = emit(spyre.TransposeOp(one_hot, [1, 0], _type((size, count), element)))
        # the hits per position as a matmul with ones, tiled over the n positions written
        # (a sum over the n x S matrix's dim 0 would make one row of all of it: too big
        # for LX at a long prompt's n)
        ones = emit(spyre.FullOp(1.0, _type((count, 1), element)))
        hits = emit(spyre.MatmulOp(picks, ones, _type((size, 1), element)))
        zero = emit(spyre.FullOp(0.0, _type((), element)))
        written = emit(spyre.GtOp(hits, zero, _type((size, 1), I1)))
        written = emit(spyre.ReshapeOp(written, _type(along, I1)))
        rows = emit(spyre.ReshapeOp(source, _type((numel(pre), count, numel(post)), element)))
        moved = emit(spyre.MatmulOp(picks, rows, _type((numel(pre), size, numel(post)), element)))
        moved = emit(spyre.ReshapeOp(moved, _type(shape, element)))
    emit(spyre.SelectOp(written, moved, dest, op.result.type))
    return ops


@dataclass(frozen=True)
class SpyreLowerScatter(ModulePass):
    """Rewrite each spyre.scatter as a one-hot select (see the module docstring)."""

    name = "spyre-lower-scatter"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for scatter in [o for o in op.walk() if isinstance(o, spyre.ScatterOp)]:
            if not spyre.is_float(spyre.element_of(scatter.dest)):
                raise located_error(scatter, "spyre-lower-scatter: a scatter into a "
                                             f"{spyre.element_of(scatter.dest)} tensor has no "
                                             "card lowering (floats only)")  # fmt: skip
            ops = lower(scatter)
            Rewriter.insert_op(ops, InsertPoint.before(scatter))
            Rewriter.replace_op(scatter, [], [ops[-1].results[0]])
