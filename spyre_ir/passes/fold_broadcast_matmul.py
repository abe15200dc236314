"""`spyre-fold-broadcast-matmul`: a matmul operand expanded over a batch dim by
`broadcast_to` reads the unexpanded tensor, and the expanded dim joins the other
operand's rows.

Grouped-query attention writes `repeat_kv`: keys [b, kv, t, d] -> [b, kv, 1, t, d] ->
broadcast_to [b, kv, g, t, d] -> reshape [b, kv * g, t, d], then a batched matmul with
the queries [b, kv * g, m, d] (after transposing the keys). Run as written, the broadcast
is a kernel that writes g copies of the keys and the matmul reads them all back. But all
g query heads of one KV head meet the same keys, so with

    A' = reshape(A)           [b, kv, g * m, d]   (the g heads' rows stacked)
    B' = reshape(keys)        [b, kv, t, d]       (then the same transposes as before)
    C  = reshape(A' @ B')     back to the matmul's result shape

the keys are read once per KV head and nothing is copied; each row of C is the same dot
products as before. Pattern, on the matmul's rhs: reshapes that keep the last two dims
and transposes of the last two dims, down to a `broadcast_to` whose only stretched dim
is the last batch dim (size 1 -> g), with the lhs holding as many batch elements.

An L1 -> L1 pass on plain tensors (before `spyre-stickify`): values that already carry a
stick layout are left alone. Once a function had a matmul rewritten, its spyre ops that
nothing reads any more (the expanded chain) are erased. No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, NoneAttr, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import spyre
from spyre_ir.passes.fuse import swaps_last_two
from spyre_ir.shape_rules import numel


def _plain(value: SSAValue) -> bool:
    t = value.type
    return isinstance(t, TensorType) and isinstance(t.encoding, NoneAttr)


def expanded_source(value: SSAValue) -> tuple[SSAValue, int, bool] | None:
    """(unexpanded tensor U [*p, 1, t, d], g, whether the path swaps the last two dims)
    if `value` is U expanded over its last batch dim, as the module docstring says."""
    swapped = False
    while True:
        op = value.owner
        keeps_matrix = isinstance(op, spyre.ReshapeOp) and (
            spyre.shape_of(op.input)[-2:] == spyre.shape_of(value)[-2:]
        )
        if keeps_matrix:
            value = op.input
        elif swaps_last_two(op):
            value, swapped = op.input, not swapped
        else:
            break
    op = value.owner
    if not isinstance(op, spyre.BroadcastToOp) or not _plain(op.input):
        return None
    before, after = spyre.shape_of(op.input), spyre.shape_of(value)
    if len(before) != len(after) or len(after) < 3:
        return None
    stretched = [i for i, (u, e) in enumerate(zip(before, after)) if u != e]
    if stretched != [len(after) - 3]:
        return None
    return op.input, after[-3], swapped


def fold(mm: spyre.MatmulOp) -> bool:
    """Rewrite one matmul if its rhs matches; returns whether it did."""
    lhs, rhs = mm.lhs, mm.rhs
    a_shape, b_shape = spyre.shape_of(lhs), spyre.shape_of(rhs)
    if len(a_shape) < 3 or len(b_shape) < 3 or not all(map(_plain, (lhs, rhs, mm.result))):
        return False
    found = expanded_source(rhs)
    if found is None:
        return False
    source, g, swapped = found
    u_shape = spyre.shape_of(source)
    batch = u_shape[:-3]
    if a_shape[:-2] != b_shape[:-2] or numel(a_shape[:-2]) != numel(batch) * g:
        return False
    m, k = a_shape[-2:]
    if (u_shape[-1] if swapped else u_shape[-2]) != k:
        return False
    new_ops: list[Operation] = []

    def add(op: Operation) -> SSAValue:
        new_ops.append(op)
        return op.results[0]

    def reshaped(value: SSAValue, shape: list[int]) -> SSAValue:
        # From the start of a reshape chain: one reshape, so one byte move at most.
        value = reshape_root(value)
        if list(spyre.shape_of(value)) == shape:
            return value
        return add(spyre.ReshapeOp(value, TensorType(spyre.element_of(value), shape)))

    rows = reshaped(lhs, [*batch, g * m, k])
    keys_shape = [*batch, *u_shape[-2:]]
    keys = reshaped(source, keys_shape)
    if swapped:
        rank = len(keys_shape)
        perm = [*range(rank - 2), rank - 1, rank - 2]
        keys = add(
            spyre.TransposeOp(
                keys,
                perm,
                TensorType(
                    spyre.element_of(source), [*keys_shape[:-2], keys_shape[-1], keys_shape[-2]]
                ),
            )
        )
    n = spyre.shape_of(keys)[-1]
    out_elem = spyre.element_of(mm.result)
    product = add(spyre.MatmulOp(rows, keys, TensorType(out_elem, [*batch, g * m, n])))
    result = add(spyre.ReshapeOp(product, mm.result.type))
    for op in new_ops:
        op.location = mm.location
        Rewriter.insert_op(op, InsertPoint.before(mm))
    mm.results[0].replace_all_uses_with(result)
    Rewriter.erase_op(mm)
    for use in list(result.uses):  # a reshape of the result reshapes the product
        if isinstance(use.operation, spyre.ReshapeOp):
            use.operation.operands[use.index] = product
    return True


def reshape_root(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, spyre.ReshapeOp) and _plain(value.owner.input):
        value = value.owner.input
    return value


def erase_dead(fn: func.FuncOp) -> None:
    """Erase the spyre ops nothing reads any more (the expanded chains)."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(fn.body.block.ops)):
            if isinstance(op, spyre.SpyreOp) and all(not r.uses for r in op.results):
                Rewriter.erase_op(op)
                changed = True


@dataclass(frozen=True)
class SpyreFoldBroadcastMatmul(ModulePass):
    """Matmuls read a batch-broadcast operand unexpanded (grouped-query attention)."""

    name = "spyre-fold-broadcast-matmul"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            matmuls = [o for o in fn.body.block.ops if isinstance(o, spyre.MatmulOp)]
            if any([fold(mm) for mm in matmuls]):  # noqa: C419 - every matmul is folded, not only up to the first
                erase_dead(fn)
