"""spyre-fuse-rotary: rotary embedding on a projection's heads before their transpose,
so that it runs as the projection's matmul epilogue.

Llama applies rotary embeddings after the head split: `q = (x @ wq.T).view(1, s, H, D)
.transpose(1, 2)`, then `q * cos + rotate_half(q) * sin` with `cos` and `sin` of shape
[s, D], and `rotate_half` a slice, neg and concat along D. Those ops are elementwise
over (s, D), the same for every head, and rotate_half stays inside one head's D. So the
same ops can run on the matmul's [s, H * D] result viewed as [s, H, D] (cos and sin
viewed as [s, 1, D]), with the head split transpose after them:

    m = matmul(x, wq.T) : [s, H * D]
    y = reshape(m) : [s, H, D]               (spyre-fuse: the matmul's head view)
    r = rotary(y, reshape(cos), reshape(sin)) : [s, H, D]
    q = transpose(reshape(r) : [1, s, H, D], [0, 2, 1, 3]) : [1, H, s, D]

spyre-fuse then takes the head view and the rotary ops into the matmul's group as an
epilogue on its output tiles (each tile holds whole heads), and spyre-fold-layouts makes
the matmul store them head by head, so the transpose is a view: no kernel reads the
projection back to rotate it.

The pattern: a transpose [0, 2, 1, 3] of a row-major [1, s, H, D] reshape of a 2-D
matmul result [s, H * D] (through reshapes only, each read once), D whole sticks (the
head view's tiles are then whole sticks of the matmul's), read only by ops that
are elementwise (mul, add, sub, neg) or slice / concat along D, whose other operands are
[s, D] tensors or scalars, closing in one value. Anything else is left as it is.

Option `fuse-rotary` (default true; false: the rotary ops stay after the transpose).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import spyre
from spyre_ir.hardware import ELEMENT_BYTES, card_of

ELEMENTWISE = (spyre.MulOp, spyre.AddOp, spyre.SubOp, spyre.NegOp)
HEAD_PERM = [0, 2, 1, 3]


def _tensor(shape: Sequence[int], like: SSAValue) -> TensorType:
    return TensorType(spyre.element_of(like), list(shape))


def matmul_behind(value: SSAValue) -> SSAValue | None:
    """The 2-D matmul result that `value` reshapes (through reshapes read once), or None."""
    while isinstance(value.owner, spyre.ReshapeOp):
        if not value.has_one_use():
            return None
        value = value.owner.input
    owner = value.owner
    if isinstance(owner, spyre.MatmulOp) and len(spyre.shape_of(value)) == 2:
        return value if value.has_one_use() else None
    return None


def rotary_ops(head: SSAValue) -> list[Operation] | None:
    """The ops reading the transposed heads (and what they compute), in program order,
    when they form a rotary pattern closing in one value; else None."""
    seen: list[Operation] = []
    frontier = [u.operation for u in head.uses]
    inside = {head}
    while frontier:
        op = frontier.pop()
        if op in seen or not _allowed(op):
            continue  # not rotary: what it reads escapes the pattern
        seen.append(op)
        inside.update(op.results)
        frontier.extend(u.operation for r in op.results for u in r.uses)
    block = head.owner.parent
    ordered = sorted(seen, key=block.get_operation_index)
    # Operands from outside: [s, D] tensors or scalars, defined before the first op.
    for op in ordered:
        for operand in op.operands:
            if operand not in inside and not _side_input(operand, head):
                return None
    escaping = [r for op in ordered for r in op.results
                if any(u.operation not in ordered for u in r.uses)]  # fmt: skip
    if len(escaping) != 1 or escaping[0] is not ordered[-1].results[0]:
        return None
    return ordered


def _allowed(op: Operation) -> bool:
    if len(op.results) != 1:
        return False
    rank = len(spyre.shape_of(op.results[0]))
    if rank != 4:
        return False
    if isinstance(op, ELEMENTWISE):
        return True
    if isinstance(op, spyre.SliceOp):
        before, after = spyre.shape_of(op.input), spyre.shape_of(op.result)
        return before[:3] == after[:3] and list(spyre.ints(op.steps)) == [1, 1, 1, 1]
    if isinstance(op, spyre.ConcatOp):
        return op.dim.value.data % 4 == 3
    return False


def _side_input(value: SSAValue, head: SSAValue) -> bool:
    """A scalar, or an [s, D] tensor (cos, sin) of the heads' positions and width."""
    shape = spyre.shape_of(value)
    _, _, s, d = spyre.shape_of(head)
    return shape == () or tuple(shape) == (s, d)


def _head_view(shape: Sequence[int]) -> list[int]:
    """[1, H, s, d] (after the transpose) -> [s, H, d] (the matmul's head view)."""
    return [shape[2], shape[1], shape[3]]


@dataclass
class _Rewrite:
    transpose: spyre.TransposeOp
    matmul: SSAValue
    ops: list[Operation]

    def apply(self) -> None:
        first = self.ops[0]
        _, heads, s, d = spyre.shape_of(self.transpose.result)
        view = spyre.ReshapeOp(self.matmul, _tensor([s, heads, d], self.matmul))
        inserted: list[Operation] = [view]
        remap: dict[SSAValue, SSAValue] = {self.transpose.result: view.result}
        side: dict[SSAValue, SSAValue] = {}
        for op in self.ops:
            operands = []
            for operand in op.operands:
                if operand in remap:
                    operands.append(remap[operand])
                elif spyre.shape_of(operand) == ():
                    operands.append(operand)
                else:  # an [s, D] side input, viewed as [s, 1, D]
                    if operand not in side:
                        flat = spyre.ReshapeOp(operand, _tensor([s, 1, d], operand))
                        inserted.append(flat)
                        side[operand] = flat.result
                    operands.append(side[operand])
            new = self._on_heads(op, operands)
            inserted.append(new)
            remap[op.results[0]] = new.results[0]
        result = self.ops[-1].results[0]
        rows = spyre.ReshapeOp(remap[result], _tensor([1, s, heads, d], result))
        back = spyre.TransposeOp(rows.result, HEAD_PERM, result.type)
        inserted += [rows, back]
        for op in inserted:
            op.location = first.location
        # Right after the matmul: its group meets its epilogue before any other op.
        Rewriter.insert_op(inserted, InsertPoint.after(self.matmul.owner))
        result.replace_all_uses_with(back.result)
        for op in reversed(self.ops):
            Rewriter.erase_op(op)
        dead: Operation | None = self.transpose
        while isinstance(dead, (spyre.TransposeOp, spyre.ReshapeOp)) and not dead.results[0].uses:
            below = dead.operands[0].owner
            Rewriter.erase_op(dead)
            dead = below if isinstance(below, spyre.ReshapeOp) else None

    @staticmethod
    def _on_heads(op: Operation, operands: list[SSAValue]) -> Operation:
        shape = _head_view(spyre.shape_of(op.results[0]))
        result_type = _tensor(shape, op.results[0])
        if isinstance(op, spyre.ConcatOp):
            return spyre.ConcatOp(operands, 2, result_type)
        properties = dict(op.properties)
        if isinstance(op, spyre.SliceOp):
            for name in ("starts", "stops", "steps"):
                values = _head_view(list(spyre.ints(getattr(op, name))))
                if name == "stops":
                    values[0] = shape[0]
                properties[name] = DenseArrayBase.from_list(i64, values)
        return type(op).create(operands=operands, result_types=[result_type],
                               properties=properties, attributes=dict(op.attributes))  # fmt: skip


def find(transpose: Operation, stick_bytes: int) -> _Rewrite | None:
    """The rewrite of a head split `transpose` and the rotary ops reading it, for heads
    of whole sticks (a head view of part-sticks is no view of the matmul's tiles)."""
    if not isinstance(transpose, spyre.TransposeOp):
        return None
    shape = spyre.shape_of(transpose.input)
    if list(spyre.ints(transpose.perm)) != HEAD_PERM or len(shape) != 4 or shape[0] != 1:
        return None
    element = spyre.element_type_name(spyre.element_of(transpose.input))
    if shape[3] * ELEMENT_BYTES[element] % stick_bytes:
        return None
    matmul = matmul_behind(transpose.input)
    if matmul is None or tuple(spyre.shape_of(matmul)) != (shape[1], shape[2] * shape[3]):
        return None
    ops = rotary_ops(transpose.result)
    if not ops or not any(isinstance(op, spyre.ConcatOp) for op in ops):
        return None
    return _Rewrite(transpose, matmul, ops)


@dataclass(frozen=True)
class SpyreFuseRotary(ModulePass):
    """Rotary embedding on a projection's [s, H, D] head view, before the head split
    transpose (see the module docstring)."""

    name = "spyre-fuse-rotary"

    fuse_rotary: bool = True
    """false: the rotary ops stay after the head split transpose (a kernel of their own)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.fuse_rotary:
            return
        for fn in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            for transpose in [o for o in fn.body.block.ops if isinstance(o, spyre.TransposeOp)]:
                found = find(transpose, card_of(op).stick_bytes)
                if found is not None:
                    found.apply()
