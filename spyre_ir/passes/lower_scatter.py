"""spyre-lower-scatter: `spyre.scatter` and `spyre.scatter_add` as tensor ops the card's
kernels already run.

A scatter along dim d of `dest` [pre.., S, post..] at n runtime positions `indices` of
`source` [pre.., n, post..] becomes

    hit[j, p]   = (indices[j] wrapped) == p            (n x S, spyre.eq on an iota)
    moved       = hit^T @ source                       (a one-hot matmul; n = 1: a broadcast)
    written[p]  = (hit^T @ ones)[p] > 0                (n = 1: hit itself)
    result      = select(written, moved, dest)         (spyre.scatter)
    result      = dest + moved                         (spyre.scatter_add)

A one-hot product is exact (one non-zero term per output, summed in f32), and a position
given twice sums its sources: what scatter_add and index_add ask for (torch leaves a
repeated position of a plain scatter undefined). The cost: `dest` is read and the result
written whole, once per call; only the n source slices are multiplied.

A plain scatter, not along the last dim, into a function argument that nothing else reads (a KV cache input,
`cache.index_copy_(2, pos, k)`, whose written value attention reads) is not lowered:
it is marked `in_place` and stays between the kernels as a store of the source's
slices into the argument's own buffer at the runtime positions (the simulator's and
the runtime's row store), so the cache is neither read nor written whole for it and
the ops after it read the argument's buffer. A scatter whose dest is another op's
result, or an argument read elsewhere too (its old value still needed), keeps the
one-hot form. A row store wraps a negative position itself, so the frontend's wrap of
its positions (`select(i < 0, i + S, i)`, a small kernel of its own) is dropped.

Integer and boolean tensors do not go through the PE array (it multiplies floats): their
`moved` is a select of the sources by `hit^T` and a sum over the n positions (SFP and PE
elementwise work on an [pre, S, post, n] tensor, n x more than the float form's output;
fine at routing sizes, where n is tokens x top-k), and `written` the sum of `hit^T`'s
rows. Booleans are summed as i64 and compared with 0 (a logical or).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import spyre
from spyre_ir.shape_rules import numel

I64 = IntegerType(64)
I1 = IntegerType(1)


def _type(shape: tuple[int, ...], element: Attribute) -> TensorType:
    return TensorType(element, list(shape))


def lower(op: spyre.ScatterOp | spyre.ScatterAddOp) -> list[Operation]:
    """The ops replacing `op`; the last one's result is the scatter's."""
    dest, indices, source = op.dest, op.indices, op.source
    shape, dim = spyre.shape_of(dest), op.axis
    size, count = shape[dim], spyre.shape_of(indices)[0]
    element = spyre.element_of(dest)
    accumulate = isinstance(op, spyre.ScatterAddOp)
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
        if accumulate:  # only the hit slice adds
            zero = emit(spyre.FullOp(False if element == I1 else 0, _type((), element)))
            moved = emit(spyre.SelectOp(written, moved, zero, _type(shape, element)))
    elif spyre.is_float(element):
        written, moved = _one_hot_matmul(emit, hit, source, shape, dim, count)
    else:
        written, moved = _one_hot_select(emit, hit, source, shape, dim, count)
    if accumulate:
        if element == I1:
            emit(spyre.LogicalOrOp(dest, moved, op.result.type))
        else:
            emit(spyre.AddOp(dest, moved, op.result.type))
    else:
        emit(spyre.SelectOp(written, moved, dest, op.result.type))
    return ops


def _one_hot_matmul(emit, hit: SSAValue, source: SSAValue, shape: tuple[int, ...], dim: int,
                    count: int) -> tuple[SSAValue, SSAValue]:  # fmt: skip
    """(written, moved) of a float scatter: one-hot matmuls on the PE array."""
    size, element = shape[dim], spyre.element_of(source)
    pre, post = shape[:dim], shape[dim + 1 :]
    along = tuple(size if d == dim else 1 for d in range(len(shape)))
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
    return written, emit(spyre.ReshapeOp(moved, _type(shape, element)))


def _one_hot_select(emit, hit: SSAValue, source: SSAValue, shape: tuple[int, ...], dim: int,
                    count: int) -> tuple[SSAValue, SSAValue]:  # fmt: skip
    """(written, moved) of an integer or boolean scatter: the sources selected by the
    one-hot matrix and summed over the n positions (the last dim, a row reduction)."""
    size, element = shape[dim], spyre.element_of(source)
    wide = I64 if element == I1 else element
    p, q = numel(shape[:dim]), numel(shape[dim + 1 :])
    along = tuple(size if d == dim else 1 for d in range(len(shape)))
    picks = emit(spyre.TransposeOp(hit, [1, 0], _type((size, count), I1)))
    counts = emit(spyre.SumOp(emit(spyre.CastOp(picks, _type((size, count), I64))), [1], False,
                              _type((size,), I64)))  # fmt: skip
    written = emit(spyre.GtOp(counts, emit(spyre.FullOp(0, _type((), I64))), _type((size,), I1)))
    written = emit(spyre.ReshapeOp(written, _type(along, I1)))
    rows = source if wide == element else emit(spyre.CastOp(source, _type(spyre.shape_of(source),
                                                                          wide)))  # fmt: skip
    rows = emit(spyre.ReshapeOp(rows, _type((p, count, q), wide)))
    rows = emit(spyre.TransposeOp(rows, [0, 2, 1], _type((p, q, count), wide)))
    rows = emit(spyre.ReshapeOp(rows, _type((p, 1, q, count), wide)))
    mask = emit(spyre.ReshapeOp(picks, _type((1, size, 1, count), I1)))
    zero = emit(spyre.FullOp(0, _type((), wide)))
    picked = emit(spyre.SelectOp(mask, rows, zero, _type((p, size, q, count), wide)))
    moved = emit(spyre.SumOp(picked, [3], False, _type((p, size, q), wide)))
    if wide != element:
        moved = emit(spyre.NeOp(moved, zero, _type((p, size, q), element)))
    return written, emit(spyre.ReshapeOp(moved, _type(shape, element)))


def stores_in_place(op: spyre.ScatterOp | spyre.ScatterAddOp) -> bool:
    """Whether `op` can be a row store into its dest's own buffer: a plain scatter, not
    along the last dim (the stick dim: its slices are whole sticks), that keeps the
    in-place rules (`ScatterOp.in_place_refusal`: dest an otherwise unread argument of
    the function, of the result's type)."""
    return (
        isinstance(op, spyre.ScatterOp)
        and op.axis < len(spyre.shape_of(op.dest)) - 1  # whole sticks: not the last dim
        and op.in_place_refusal() is None
    )


def _is_full(value: SSAValue, number: int) -> bool:
    owner = value.owner
    return isinstance(owner, spyre.FullOp) and owner.value.value.data == number


def _drop_wrap(op: spyre.ScatterOp) -> None:
    """Index the row store with the raw positions when its indices are only their wrap
    `select(i < 0, i + S, i)` (S = dest's size along the dim, as the frontend writes
    it): the row store wraps a negative position itself, so the wrap's little kernel
    would only add a launch. The wrap's ops go once nothing else reads them."""
    wrap = op.indices.owner
    if not isinstance(wrap, spyre.SelectOp) or wrap.result.uses.get_length() != 1:
        return
    raw, negative, shifted = wrap.false_value, wrap.cond.owner, wrap.true_value.owner
    size = spyre.shape_of(op.dest)[op.axis]
    if not (
        isinstance(negative, spyre.LtOp)
        and isinstance(shifted, spyre.AddOp)
        and negative.lhs == raw
        and shifted.lhs == raw
        and _is_full(negative.rhs, 0)
        and _is_full(shifted.rhs, size)
    ):
        return
    op.operands[1] = raw
    for dead in (wrap, negative, shifted, negative.rhs.owner, shifted.rhs.owner):
        if not any(result.uses for result in dead.results):
            Rewriter.erase_op(dead)


@dataclass(frozen=True)
class SpyreLowerScatter(ModulePass):
    """Rewrite each spyre.scatter / spyre.scatter_add as one-hot selects and matmuls
    (see the module docstring)."""

    name = "spyre-lower-scatter"

    in_place: bool = True
    """Store a scatter into an otherwise unread function argument in place (module
    docstring); false: every scatter becomes one-hot selects."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        scatters = (spyre.ScatterOp, spyre.ScatterAddOp)
        for scatter in [o for o in op.walk() if isinstance(o, scatters)]:
            if self.in_place and stores_in_place(scatter):
                scatter.properties["in_place"] = UnitAttr()
                _drop_wrap(scatter)
                continue
            ops = lower(scatter)
            Rewriter.insert_op(ops, InsertPoint.before(scatter))
            Rewriter.replace_op(scatter, [], [ops[-1].results[0]])
