"""`spyre-fuse-norm-prologue`: an RMSNorm whose only readers are matmuls' A operands runs
inside their kernels, as a prologue on the A tiles.

Llama's RMSNorm before the q, k and v projections (and before gate and up) is

    %x32 = spyre.cast %x                  : [.., d] f16 -> f32
    %sq  = spyre.pow %x32, %two           (or spyre.mul %x32, %x32)
    %ms  = spyre.mean %sq dims = [-1] keepdim
    %v   = spyre.add %ms, %eps
    %r   = spyre.rsqrt %v
    %n   = spyre.mul %x32, %r
    %n16 = spyre.cast %n                  : f32 -> f16
    %y   = spyre.mul %w, %n16             (the weight, [d]; optional)

and each projection reads `reshape(%y)` as its A. Run as a kernel of its own, it writes
the normalised activation to LPDDR5 and every projection reads it back. This pass
rewrites the chain onto the matmuls' 2-D rows (`reshape(%x)`), one copy per A value,
and marks its ops `spyre.prologue`: spyre-fuse then puts them in the matmul's group
(a second group reading the same A gets a copy of its own), and spyre-tile computes
them there: the row statistics (a K loop over the A rows), each A tile times the
weight as it is loaded, and the row factors applied to the f32 accumulator
(passes/tile_prologue.py). No normalised activation is written. A norm of fewer than
`MIN_ROWS` rows (decode) is left alone.

An L1 -> L1 pass on plain tensors (before spyre-stickify). Option `fuse-norm-prologue`
(default true; spyre-fuse's option of the same name): false leaves the IR unchanged, and
the norm in a kernel of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, Float32Type, ModuleOp, TensorType, UnitAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import spyre

MIN_ROWS = 64
"""Rows a norm needs for the prologue: with fewer (decode: one row per sequence) its own
kernel costs less than the weight's product on every A tile of every N tile and the
statistics on cores that cannot share them (bench/layer.py --fusion: decode b1 and b4
against a 512-token cache ran 1.0 % and 1.5 % slower with the prologue)."""

PROLOGUE = "spyre.prologue"
"""Unit attribute on the ops of a norm chain that a matmul's kernel computes."""


@dataclass(frozen=True)
class RmsNorm:
    """A matched RMSNorm chain (see the module docstring)."""

    x: SSAValue
    """The normalised input (f16 or f32)."""
    weight: SSAValue | None
    eps: SSAValue
    """The scalar constant added to the mean square."""
    two: SSAValue | None
    """pow's exponent, None when the square is a mul."""
    ops: tuple[Operation, ...]
    """The chain's ops in program order (scalar constants excluded)."""

    @property
    def result(self) -> SSAValue:
        return self.ops[-1].results[0]

    @property
    def rows(self) -> int:
        """The rows the norm normalises (x's dims but the last, flattened)."""
        return math.prod(spyre.shape_of(self.x)[:-1])


def _scalar(value: SSAValue, want: float | None = None) -> bool:
    owner = value.owner
    if not isinstance(owner, spyre.FullOp) or spyre.shape_of(value) != ():
        return False
    return want is None or float(owner.value.value.data) == want


def _other(op: Operation, value: SSAValue) -> SSAValue | None:
    """The other operand of binary `op`, one of whose operands is `value`."""
    lhs, rhs = op.operands
    return rhs if lhs is value else lhs if rhs is value else None


def _owner(value: SSAValue, kind: type) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, kind) else None


def _match_stats(
    n: spyre.MulOp,
) -> tuple[SSAValue, list[Operation], SSAValue, SSAValue | None] | None:
    """n = x32 * rsqrt(mean(x32^2) + eps): (x32, the ops, eps, two)."""
    for r in n.operands:
        rsqrt = _owner(r, spyre.RsqrtOp)
        x32 = _other(n, r)
        if rsqrt is None or x32 is None:
            continue
        add = _owner(rsqrt.input, spyre.AddOp)
        if add is None:
            continue
        ms = next((o for o in add.operands if isinstance(o.owner, spyre.MeanOp)), None)
        eps = _other(add, ms) if ms is not None else None
        if ms is None or eps is None or not _scalar(eps):
            continue
        mean = ms.owner
        rank = len(spyre.shape_of(mean.input))
        if mean.keepdim is None or [d % rank for d in spyre.ints(mean.dims)] != [rank - 1]:
            continue
        sq = mean.input.owner
        if isinstance(sq, spyre.PowOp) and sq.lhs is x32 and _scalar(sq.rhs, 2.0):
            two: SSAValue | None = sq.rhs
        elif isinstance(sq, spyre.MulOp) and sq.lhs is x32 and sq.rhs is x32:
            two = None
        else:
            continue
        return x32, [sq, mean, add, rsqrt, n], eps, two
    return None


def match_rms_norm(y: SSAValue) -> RmsNorm | None:
    """The RMSNorm chain ending in `y`, or None. Its intermediate values have no other
    readers; its square and statistics are f32."""
    ops: list[Operation] = []
    weight = None
    end = y.owner
    if isinstance(end, spyre.MulOp):
        c16 = next((o for o in end.operands if isinstance(o.owner, spyre.CastOp)), None)
        weight = _other(end, c16) if c16 is not None else None
        if weight is None or spyre.shape_of(weight) != spyre.shape_of(y)[-1:]:
            return None
        ops.append(end)
        end = c16.owner
    if not isinstance(end, spyre.CastOp) or not isinstance(end.input.owner, spyre.MulOp):
        return None
    found = _match_stats(end.input.owner)
    if found is None:
        return None
    x32, stats, eps, two = found
    if not isinstance(spyre.element_of(x32), Float32Type):
        return None
    chain = [*stats, end, *ops]
    x = x32
    if isinstance(x32.owner, spyre.CastOp):
        chain.insert(0, x32.owner)
        x = x32.owner.input
    if spyre.shape_of(x) != spyre.shape_of(y):
        return None
    members = set(chain)
    for op in chain[:-1]:
        if any(u.operation not in members for u in op.results[0].uses):
            return None  # an intermediate read elsewhere: the norm must stay a kernel
    return RmsNorm(x, weight, eps, two, tuple(chain))


def matmul_readers(y: SSAValue) -> list[tuple[spyre.MatmulOp, spyre.ReshapeOp | None]] | None:
    """Every reader of `y`, as (matmul, the flattening reshape between them): None unless
    each is a 2-D matmul's A, directly or through a reshape to [rows, d]."""
    found: list[tuple[spyre.MatmulOp, spyre.ReshapeOp | None]] = []
    d = spyre.shape_of(y)[-1]
    for use in y.uses:
        user = use.operation
        if isinstance(user, spyre.MatmulOp) and use.index == 0:
            found.append((user, None))
            continue
        if not isinstance(user, spyre.ReshapeOp) or spyre.shape_of(user.result)[-1:] != (d,) \
                or len(spyre.shape_of(user.result)) != 2 or not user.result.uses:  # fmt: skip
            return None
        for inner in user.result.uses:
            if not isinstance(inner.operation, spyre.MatmulOp) or inner.index != 0:
                return None
            found.append((inner.operation, user))
    if not found or any(len(spyre.shape_of(mm.rhs)) != 2 for mm, _ in found):
        return None
    return found


def _rows_type(value: SSAValue, rows: int) -> TensorType:
    shape = spyre.shape_of(value)
    last = shape[-1] if shape else 1
    return TensorType(spyre.element_of(value), [rows, last])


def rebuild_on_rows(norm: RmsNorm, at: Operation) -> SSAValue:
    """The chain on the 2-D rows of its input, inserted before `at`, its ops marked
    `spyre.prologue`; returns its result."""
    shape, rows = spyre.shape_of(norm.x), norm.rows
    new: list[Operation] = []
    x = norm.x
    if len(shape) != 2:
        flat = spyre.ReshapeOp(x, TensorType(spyre.element_of(x), [rows, shape[-1]]))
        flat.location = at.location
        new.append(flat)
        x = flat.result
    remap: dict[SSAValue, SSAValue] = {norm.x: x}
    for op in norm.ops:
        properties = dict(op.properties)
        if isinstance(op, spyre.MeanOp):
            properties["dims"] = DenseArrayBase.from_list(i64, [-1])
        clone = type(op).create(
            operands=[remap.get(o, o) for o in op.operands],
            result_types=[_rows_type(r, rows) for r in op.results],
            properties=properties,
            attributes={**op.attributes, PROLOGUE: UnitAttr()},
        )
        clone.location = op.location
        remap[op.results[0]] = clone.results[0]
        new.append(clone)
    Rewriter.insert_op(new, InsertPoint.before(at))
    return remap[norm.result]


def fold_norm(norm: RmsNorm) -> bool:
    """Rewrite the readers of `norm` onto one chain on the rows; whether it was done."""
    readers = matmul_readers(norm.result)
    if readers is None or norm.rows < MIN_ROWS:
        return False
    # Before the chain's last op, which every input of the chain precedes.
    rows_result = rebuild_on_rows(norm, norm.ops[-1])
    for mm, _ in readers:
        mm.operands[0] = rows_result
    for _, reshape in readers:
        if reshape is not None and reshape.parent is not None and not reshape.result.uses:
            Rewriter.erase_op(reshape)
    for op in reversed(norm.ops):
        if not op.results[0].uses:
            Rewriter.erase_op(op)
    return True


@dataclass(frozen=True)
class SpyreFuseNormPrologue(ModulePass):
    """Put each RMSNorm feeding only matmuls' A on their rows, marked as their prologue."""

    name = "spyre-fuse-norm-prologue"

    fuse_norm_prologue: bool = True
    """false: leave the IR unchanged (the norm runs as a kernel of its own)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.fuse_norm_prologue:
            return
        for end in [o for o in op.walk() if isinstance(o, (spyre.MulOp, spyre.CastOp))]:
            if end.parent is None or PROLOGUE in end.attributes:
                continue
            norm = match_rms_norm(end.results[0])
            if norm is not None and norm.ops[-1] is end:
                fold_norm(norm)


# --- for spyre-fuse: the marked chain a matmul group takes in ----------------------


def is_prologue(op: Operation) -> bool:
    return PROLOGUE in op.attributes


def mark_layout_changes(ops: list[Operation]) -> set[Operation]:
    """The marked ops among `ops`, with the restickifies they read (x's layout changed
    for the rows, which the kernel's loads do: marked too, or a copy if others read
    it). The block's op order may change: read it again after."""
    marked = {op for op in ops if is_prologue(op)}
    for op in ops:
        if not isinstance(op, spyre.RestickifyOp):
            continue
        readers = [u for u in op.result.uses if u.operation in marked]
        if not readers:
            continue
        if len(readers) < len(list(op.result.uses)):
            # Read by others too (a residual add of the same rows; spyre-stickify made
            # one restickify for both): the chain reads a copy of its own.
            copy = op.clone()
            Rewriter.insert_op(copy, InsertPoint.after(op))
            for use in readers:
                use.operation.operands[use.index] = copy.result
            # The original moves to its first other reader, where a group may take it
            # in as it did before the chain read it (the residual add's epilogue).
            block = op.parent
            assert block is not None
            first = min((u.operation for u in op.result.uses), key=block.get_operation_index)
            op.detach()
            Rewriter.insert_op(op, InsertPoint.before(first))
            op = copy
        op.attributes[PROLOGUE] = UnitAttr()
        marked.add(op)
    return marked


def prologue_chain(value: SSAValue) -> list[Operation]:
    """The marked ops computing `value` (a matmul's A), in program order; [] if none."""
    found: list[Operation] = []
    work = [value]
    while work:
        owner = work.pop().owner
        if isinstance(owner, Operation) and is_prologue(owner) and owner not in found:
            found.append(owner)
            work.extend(owner.operands)
    block = found[0].parent if found else None
    return sorted(found, key=lambda o: block.get_operation_index(o)) if block else []
