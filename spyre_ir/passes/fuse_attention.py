"""`spyre-fuse-attention`: recognise attention in L1 and make it one `spyre.attention`.

Attention reaches L1 as Inductor's decomposition of scaled_dot_product_attention (or
as a model writes it by hand):

    scores = (q * c1) @ (k^T * c2)        batched matmul, operands maybe cast to f32
    scores = scores * c3 [+ mask | where(mask, scores, -inf)]
    p      = softmax(scores, -1)          or reduce_max / sub / exp / sum / div
    p      = where(row fully masked, 0, p)   (optional: torch's guard)
    out    = p @ v                        maybe cast back to f16

Grouped-query attention repeats the key and value heads first: [b, kvh, t, d] ->
reshape [b, kvh, 1, t, d] -> broadcast_to [b, kvh, g, t, d] -> reshape [b, kvh * g,
t, d]. The pass matches the pattern from the `p @ v` matmul backwards, through
reshapes that keep the last two dims and float casts, and replaces it with

    %o = spyre.attention %q, %k, %v mask(%m : ...) scale = c1 * c2 * c3 : ...

on the unrepeated q [b, h, s, d], k and v [b, kvh, t, d] (reshaped to rank 4 where
needed), so no repeated K/V and no score tensor ever exists; `spyre-tile` lowers it to
one flash-attention kernel (passes/tile_attention.py). A mask applied before a scale,
two masks, or an intermediate used outside the pattern leave the IR as it is.

torch's SDPA decomposition ends with two permutes of the output that compose to the
identity (to the query's memory format and back); transposes of a fused result are
folded (spyre_canonicalization's transpose patterns), so no copy kernel follows the
attention kernel.

Option `fuse-attention` (default true): false leaves the IR unchanged, which is how
`spyre-to-dataflow{fuse-attention=false}` runs the unfused kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from spyre_ir.dialects import spyre
from spyre_ir.passes.fuse import swaps_last_two
from spyre_ir.passes.spyre_canonicalization import FoldIdentityTranspose, FoldTransposeOfTranspose
from spyre_ir.shape_rules import numel

shape = spyre.shape_of


class NoMatch(Exception):
    """The ops are not the attention pattern."""


def scalar_constant(value: SSAValue) -> float | None:
    """The value of a one-element float `spyre.full`, else None."""
    op = value.owner
    if isinstance(op, spyre.FullOp) and numel(shape(value)) == 1 and spyre.is_float(
            spyre.element_of(value)):  # fmt: skip
        return float(op.scalar)
    return None


def keeps_matrix(op: Operation) -> bool:
    """A reshape that only regroups batch dims, or a cast between float types."""
    if isinstance(op, spyre.ReshapeOp):
        return shape(op.input)[-2:] == shape(op.result)[-2:] and len(shape(op.result)) >= 2
    return isinstance(op, spyre.CastOp) and all(
        spyre.is_float(spyre.element_of(v)) for v in (op.input, op.result))  # fmt: skip


@dataclass
class Match:
    """What the matcher found, and every op it consumed."""

    ops: list[Operation] = field(default_factory=list)
    scale: float = 1.0
    mask: SSAValue | None = None
    mask_keep: bool = True  # an i1 mask: True where it keeps (select(m, s, -inf))
    mask_view: tuple[int, ...] = ()
    zero_rows: bool = False

    def take(self, op: Operation) -> None:
        if op not in self.ops:
            self.ops.append(op)

    def peel(self, value: SSAValue, scales: bool = False) -> SSAValue:
        """Walk back through batch reshapes and float casts (and scalar multiplies
        with `scales`), consuming them."""
        while True:
            op = value.owner
            if isinstance(op, Operation) and keeps_matrix(op):
                self.take(op)
                value = op.operands[0]
                continue
            if scales and isinstance(op, spyre.MulOp) and any(
                    scalar_constant(x) is not None for x in op.operands):  # fmt: skip
                value, c = self.scalar_factor(op)
                self.scale *= c
                self.take(op)
                continue
            return value

    def softmax_input(self, p: SSAValue) -> SSAValue:
        op = p.owner
        if isinstance(op, spyre.SoftmaxOp):
            if op.dim.value.data not in (-1, len(shape(p)) - 1):
                raise NoMatch("softmax not over the keys")
            self.take(op)
            return op.input
        if not isinstance(op, spyre.DivOp):
            raise NoMatch("no softmax")
        exp, total = op.lhs.owner, op.rhs.owner
        if not (isinstance(exp, spyre.ExpOp) and isinstance(total, spyre.SumOp)
                and total.input == exp.result and last_dim_keep(total)):  # fmt: skip
            raise NoMatch("no softmax division")
        sub = exp.input.owner
        if not isinstance(sub, spyre.SubOp):
            raise NoMatch("no max subtraction")
        top = sub.rhs.owner
        if not (isinstance(top, spyre.ReduceMaxOp) and top.input == sub.lhs
                and last_dim_keep(top)):  # fmt: skip
            raise NoMatch("no row max")
        for o in (op, total, exp, sub, top):
            self.take(o)
        return sub.lhs

    def guard(self, p: SSAValue) -> SSAValue:
        """torch's where(every key masked, 0, p): consumed, and noted."""
        op = p.owner
        if not isinstance(op, spyre.SelectOp):
            return p
        zeros = op.true_value.owner
        if not (isinstance(zeros, spyre.FullOp) and zeros.scalar == 0):
            return p
        chain, cond = [], op.cond
        for kind in (spyre.LogicalNotOp, spyre.ReduceMaxOp, spyre.LogicalNotOp, spyre.EqOp):
            owner = cond.owner
            if not isinstance(owner, kind):
                return p
            chain.append(owner)
            cond = owner.operands[0]
        if scalar_constant(chain[-1].operands[1]) != -math.inf:
            return p
        for o in (op, *chain, *(o.owner for o in (op.true_value, chain[-1].operands[1]))):
            self.take(o)
        self.zero_rows = True
        return op.false_value

    def scores(self, x: SSAValue) -> spyre.MatmulOp:
        """From the softmax input back to the q k^T matmul: masks, scales, views."""
        scaled = False
        while True:
            x = self.peel(x)
            op = x.owner
            if isinstance(op, spyre.MatmulOp):
                return op
            if isinstance(op, (spyre.MulOp, spyre.DivOp)):
                x, c = self.scalar_factor(op)
                self.scale *= c
                self.take(op)
                scaled = True
                continue
            if isinstance(op, (spyre.AddOp, spyre.SelectOp)):
                if scaled:
                    raise NoMatch("a mask before the scale")
                if self.mask is not None:
                    raise NoMatch("two masks")
                x = self.take_mask(op)
                continue
            raise NoMatch(f"{op.name if isinstance(op, Operation) else 'an argument'} "
                          "in the scores")  # fmt: skip

    def scalar_factor(self, op: spyre.MulOp | spyre.DivOp) -> tuple[SSAValue, float]:
        """(the other operand, the factor) of a multiply or divide by a scalar."""
        if isinstance(op, spyre.DivOp):
            c = scalar_constant(op.rhs)
            if not c:
                raise NoMatch("a division by no scalar")
            self.take(op.rhs.owner)
            return op.lhs, 1.0 / c
        for this, other in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            c = scalar_constant(other)
            if c is not None:
                self.take(other.owner)
                return this, c
        raise NoMatch("a multiply by no scalar")

    def take_mask(self, op: Operation) -> SSAValue:
        self.mask_view = shape(op.results[0])
        if isinstance(op, spyre.AddOp):
            a, b = op.lhs, op.rhs
            if not leads_to_matmul(a):
                a, b = b, a
            mask = b
            cast = mask.owner
            if isinstance(cast, spyre.CastOp) and spyre.is_float(spyre.element_of(cast.input)):
                mask = cast.input  # a widening cast of the mask: read the narrow one
            self.mask = mask
            self.boolean_mask()
            self.take(op)
            return a
        assert isinstance(op, spyre.SelectOp)
        if scalar_constant(op.false_value) == -math.inf:
            self.mask, self.mask_keep, scores = op.cond, True, op.true_value
        elif scalar_constant(op.true_value) == -math.inf:
            self.mask, self.mask_keep, scores = op.cond, False, op.false_value
        else:
            raise NoMatch("a select that is no mask")
        self.read_through_not(take=True)
        self.take(op)
        return scores

    def read_through_not(self, take: bool) -> None:
        """A mask that drops where it is true, made as logical_not of one that keeps,
        is read as the one that keeps; `take` consumes the not when nothing else reads
        it."""
        inverted = self.mask.owner
        if not self.mask_keep and isinstance(inverted, spyre.LogicalNotOp):
            self.mask, self.mask_keep = inverted.input, True
            if take and inverted.result.has_one_use():
                self.take(inverted)

    def boolean_mask(self) -> None:
        """An additive mask made as where(c, 0, -inf) (torch's SDPA of a boolean mask)
        is the boolean mask c: s + 0 is s and s + -inf is -inf, so the kernel selects
        with c instead. The -inf then stays an f32 infinity in LX, where the 16-bit
        mask tensor would hold DLFloat16's -MAXIMUM (it has no infinity): a row with
        every key masked would sum to its key count, not to 0, and escape torch's
        zero-row guard. The mask also moves as 1-bit values, not 16-bit ones."""
        op = self.mask.owner
        if not isinstance(op, spyre.SelectOp):
            return
        true, false = scalar_constant(op.true_value), scalar_constant(op.false_value)
        if (true, false) == (0.0, -math.inf):
            self.mask, self.mask_keep = op.cond, True
        elif (true, false) == (-math.inf, 0.0):
            self.mask, self.mask_keep = op.cond, False
            self.read_through_not(take=False)  # the where, not taken, still reads it

    def heads(self, value: SSAValue) -> tuple[SSAValue, int, bool]:
        """(unrepeated base, repeat factor g, transposed) of a K or V operand."""
        g, swapped = 1, False
        while True:
            value = self.peel(value, scales=True)
            op = value.owner
            if swaps_last_two(op):
                self.take(op)
                value, swapped = op.input, not swapped
                continue
            if isinstance(op, spyre.BroadcastToOp):
                src, dst = shape(op.input), shape(op.result)
                stretched = [i for i, (a, b) in enumerate(zip(src, dst)) if a != b]
                if len(src) != len(dst) or len(src) < 3 or stretched != [len(src) - 3]:
                    raise NoMatch("a broadcast that is no head repeat")
                g *= dst[-3]
                self.take(op)
                value = op.input
                continue
            return value, g, swapped


def last_dim_keep(op: spyre.ReductionOp) -> bool:
    rank = len(shape(op.input))
    return op.keepdim is not None and op.reduced_dims == (rank - 1,)


def leads_to_matmul(value: SSAValue, depth: int = 16) -> bool:
    """Whether the scores' matmul is behind `value` (through views and score ops)."""
    for _ in range(depth):
        op = value.owner
        if isinstance(op, spyre.MatmulOp):
            return True
        if not isinstance(op, (spyre.ReshapeOp, spyre.CastOp, spyre.MulOp, spyre.DivOp,
                               spyre.AddOp, spyre.SelectOp)):  # fmt: skip
            return False
        value = op.operands[1] if isinstance(op, spyre.SelectOp) else op.operands[0]
    return False


def reshaped(rewriter: PatternRewriter, where: InsertPoint, value: SSAValue,
             want: tuple[int, ...]) -> SSAValue:  # fmt: skip
    """`value` reshaped to `want` (a new spyre.reshape unless it has that shape)."""
    if shape(value) == want:
        return value
    op = spyre.ReshapeOp(value, TensorType(spyre.element_of(value), want))
    rewriter.insert(op, where)
    return op.result


def mask_shape(mask: tuple[int, ...], view: tuple[int, ...], bh: tuple[int, int]) -> tuple:
    """The mask as a rank-4 shape broadcasting to [b, h, s, t], from the view of the
    scores it was applied to ([b, h, s, t] or [b * h, s, t])."""
    mask = (1,) * (len(view) - len(mask)) + mask
    if len(view) == 4:
        return mask
    if len(view) == 3:
        lead = mask[0]
        if lead == 1:
            return (1, 1, *mask[1:])
        if lead == bh[0] * bh[1]:
            return (*bh, *mask[1:])
    raise NoMatch("a mask in a view of other than 3 or 4 dims")


class FuseAttention(RewritePattern):
    """Rewrite the `p @ v` matmul of an attention pattern into spyre.attention."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: spyre.MatmulOp, rewriter: PatternRewriter) -> None:
        try:
            self.rewrite(op, rewriter)
        except NoMatch:
            return

    def rewrite(self, pv: spyre.MatmulOp, rewriter: PatternRewriter) -> None:
        if len(shape(pv.lhs)) < 3 or len(shape(pv.rhs)) < 3:
            raise NoMatch("not batched")
        m = Match()
        m.take(pv)
        p = m.guard(m.peel(pv.lhs))
        qk = m.scores(m.softmax_input(m.peel(p)))
        m.take(qk)
        q = m.peel(qk.lhs, scales=True)
        k, gk, swapped = m.heads(qk.rhs)
        v, gv, v_swapped = m.heads(pv.rhs)
        if not swapped or v_swapped or gk != gv:
            raise NoMatch("k is not transposed, or k and v repeat differently")
        elt = spyre.element_of(q)
        if spyre.element_of(k) != elt or spyre.element_of(v) != elt:
            raise NoMatch("q, k and v of different types")
        out = pv.result
        while out.has_one_use() and keeps_matrix(user := next(iter(out.uses)).operation):
            m.take(user)
            out = user.results[0]
        s, d = shape(q)[-2:]
        t, e = shape(v)[-2:]
        n = numel(shape(q)[:-2])
        view = next((x for x in (m.mask_view, shape(q), shape(out)) if len(x) == 4), (1, n))
        b, h = view[0], view[1]
        if b * h != n or h % gk or numel(shape(k)[:-2]) * gk != n or shape(k)[-2:] != (t, d):
            raise NoMatch("head counts do not agree")
        inside = set(m.ops)
        for o in m.ops:
            if isinstance(o, spyre.FullOp):
                continue  # a constant may be shared; it goes once unused
            for r in o.results:
                if r is not out and any(u.operation not in inside for u in r.uses):
                    raise NoMatch("an intermediate is used outside the pattern")
        self.replace(m, rewriter, (q, k, v), (b, h, gk), out)

    def replace(self, m: Match, rewriter: PatternRewriter, qkv: tuple, heads: tuple,
                out: SSAValue) -> None:  # fmt: skip
        q, k, v = qkv
        b, h, g = heads
        (s, d), (t, e) = shape(q)[-2:], shape(v)[-2:]
        where = InsertPoint.before(out.owner)
        q4 = reshaped(rewriter, where, q, (b, h, s, d))
        k4 = reshaped(rewriter, where, k, (b, h // g, t, d))
        v4 = reshaped(rewriter, where, v, (b, h // g, t, e))
        mask = None
        if m.mask is not None:
            mask = m.mask
            if not m.mask_keep:
                inverted = spyre.LogicalNotOp(mask, mask.type)
                rewriter.insert(inverted, where)
                mask = inverted.result
            mask = reshaped(rewriter, where, mask, mask_shape(shape(mask), m.mask_view, (b, h)))
        result = TensorType(spyre.element_of(out), (b, h, s, e))
        fused = spyre.AttentionOp(q4, k4, v4, mask, m.scale, result,
                                  zero_masked_rows=m.zero_rows)  # fmt: skip
        fused.location = out.owner.location
        rewriter.insert(fused, where)
        rewriter.replace_all_uses_with(out, reshaped(rewriter, where, fused.result, shape(out)))
        erase_dead(rewriter, m.ops)


def erase_dead(rewriter: PatternRewriter, ops: list[Operation]) -> None:
    """Erase the matched ops nothing reads any more, then the spyre ops that only they
    read (a mask's cast, its constants), last user first."""
    pending = list(ops)
    while pending:
        op = pending.pop()
        if op.parent is None or any(r.uses for r in op.results):
            continue
        feeders = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
        rewriter.erase(op)
        pending.extend(f for f in feeders if isinstance(f, spyre.SpyreOp) and f not in pending)
        pending.extend(o for o in ops if o.parent is not None and o not in pending
                       and not any(r.uses for r in o.results))  # fmt: skip


class FoldOutputTransposes(RewritePattern):
    """Fold a transpose of a fused attention result into the one before it, or away
    when it is the identity (SDPA's output permute pair)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: spyre.TransposeOp, rewriter: PatternRewriter) -> None:
        inner = source = op.input.owner
        if isinstance(inner, spyre.TransposeOp):
            source = inner.input.owner
            if isinstance(source, spyre.AttentionOp):
                FoldTransposeOfTranspose().match_and_rewrite(op, rewriter)
                if not inner.result.uses:
                    rewriter.erase(inner)
        elif isinstance(source, spyre.AttentionOp):
            FoldIdentityTranspose().match_and_rewrite(op, rewriter)


@dataclass(frozen=True)
class SpyreFuseAttention(ModulePass):
    """Replace each attention pattern (q k^T, scale, mask, softmax, p v) with one
    spyre.attention; `fuse-attention=false` leaves the IR unchanged."""

    name = "spyre-fuse-attention"

    fuse_attention: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.fuse_attention:
            return
        PatternRewriteWalker(FuseAttention(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(FoldOutputTransposes()).rewrite_module(op)
