"""Canonicalization patterns of the `spyre` dialect, run by xDSL's `canonicalize` pass.

Every spyre op carries the `SpyreCanonicalization` trait, which hands the whole of
`PATTERNS` to the canonicalizer for every op; each pattern therefore matches on its own
op type first. A pattern only fires when the rewrite keeps the value bit-for-bit equal
to what torch eager would compute, including the result type (shape, element type and
any `#spyre.stick` encoding): folding away an op whose result type differs from its
replacement would change the IR's types, so those cases are left alone.

Patterns:

- `FoldReshapeOfReshape`, `FoldNoOpReshape`
- `FoldTransposeOfTranspose`, `FoldIdentityTranspose`
- `FoldNoOpCast`, `FoldCastOfExactCast`
- `FoldMulByOne`, `FoldDivByOne`, `FoldAddZero`, `FoldSubZero`
- `FoldNoOpBroadcastTo`, `FoldBroadcastToOfBroadcastTo`
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from spyre_ir.dialects.spyre import (
    AddOp,
    BroadcastToOp,
    CastOp,
    ConstantOp,
    DivOp,
    FullOp,
    MulOp,
    ReshapeOp,
    SubOp,
    TransposeOp,
    element_type_name,
    ints,
    is_float,
)

# ------------------------------------------------------------------ helpers


def _splat_values(value: SSAValue) -> Sequence[float | int] | None:
    """The element values of a splat constant (`spyre.full`, or a `spyre.constant`
    whose elements are all the same), or None when `value` is not one.

    For a `spyre.constant` every element is returned, so a caller can check signs of
    zeros element by element (Python's `0.0 == -0.0` would call `[0.0, -0.0]` a splat).
    """
    owner = value.owner
    if isinstance(owner, FullOp):
        attr = owner.value
        if isinstance(attr, FloatAttr | IntegerAttr):
            return (attr.value.data,)
        return None
    if isinstance(owner, ConstantOp):
        dense = owner.value
        if not isinstance(dense, DenseIntOrFPElementsAttr):
            return None
        values = dense.get_values()
        if not values or any(isinstance(v, tuple) for v in values):
            return None
        return values  # type: ignore[return-value]
    return None


def _is_one(value: SSAValue) -> bool:
    """Whether `value` is a splat of the multiplicative identity of its element type.

    For i1 tensors any non-zero stored value means `true` (an i1 `true` may be stored
    as 1 or -1), and `true` is the identity of mul (logical and) and div.
    """
    values = _splat_values(value)
    if not values:
        return False
    assert isinstance(value.type, TensorType)
    if element_type_name(value.type.element_type) == "i1":
        return all(v != 0 for v in values)
    return all(v == 1 for v in values)


def _is_zero(value: SSAValue, sign: int | None) -> bool:
    """Whether `value` is a splat of zero. For float tensors `sign` picks the zero that
    is needed: +1 for +0.0, -1 for -0.0 (integer tensors have only one zero).

    An integer-valued `spyre.full` (`value = 0 : i64`) on a float tensor is +0.0.
    """
    values = _splat_values(value)
    if not values:
        return False
    assert isinstance(value.type, TensorType)
    if not is_float(value.type.element_type):
        return all(v == 0 for v in values)
    assert sign is not None
    return all(
        v == 0 and math.copysign(1.0, float(v) if isinstance(v, float) else 0.0) == sign
        for v in values
    )


def _same_type(a: SSAValue | Attribute, b: SSAValue | Attribute) -> bool:
    ta = a.type if isinstance(a, SSAValue) else a
    tb = b.type if isinstance(b, SSAValue) else b
    return ta == tb


def _replace_with_value(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replace every use of the op's single result by `value` and erase the op."""
    rewriter.replace(op, [], [value])


# ------------------------------------------------------------------ reshape


class FoldNoOpReshape(RewritePattern):
    """reshape(x) -> x when the result type is x's type.

    Sound: a reshape is a row-major reinterpretation of the same elements; reshaping to
    the shape a tensor already has keeps every element where it was, and the result type
    (including its encoding) is unchanged, so every user sees the same value and type.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter, /) -> None:
        if _same_type(op.input, op.result):
            _replace_with_value(rewriter, op, op.input)


class FoldReshapeOfReshape(RewritePattern):
    """reshape(reshape(x)) -> reshape(x).

    Sound: both reshapes keep the row-major order of the elements, so their composition
    is the row-major reshape of x to the outer result shape. The element type is the same
    throughout (the verifier demands it) and the new reshape gets the outer op's exact
    result type. The inner reshape stays if it has other users, else it is dead.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp):
            return
        source = inner.input
        if _same_type(source, op.result):
            _replace_with_value(rewriter, op, source)
            return
        rewriter.replace(op, _located(ReshapeOp(source, op.result.type), op))


# ------------------------------------------------------------------ transpose


class FoldIdentityTranspose(RewritePattern):
    """transpose(x, perm = [0, 1, ..., n-1]) -> x when the result type is x's type.

    Sound: result dim i is input dim perm[i] = i, so every element stays in place.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter, /) -> None:
        perm = ints(op.perm)
        if perm == tuple(range(len(perm))) and _same_type(op.input, op.result):
            _replace_with_value(rewriter, op, op.input)


class FoldTransposeOfTranspose(RewritePattern):
    """transpose(transpose(x, p1), p2) -> transpose(x, p) with p[j] = p1[p2[j]];
    -> x when p is the identity and the result type is x's type.

    Sound: the inner result's dim i is x's dim p1[i]; the outer result's dim j is the
    inner's dim p2[j], i.e. x's dim p1[p2[j]]. Transposes only move elements, so one
    transpose by the composed permutation moves every element to the same place.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if not isinstance(inner, TransposeOp):
            return
        p1, p2 = ints(inner.perm), ints(op.perm)
        if len(p1) != len(p2):
            return  # not valid IR; leave it to the verifier
        composed = [p1[j] for j in p2]
        source = inner.input
        if composed == list(range(len(composed))) and _same_type(source, op.result):
            _replace_with_value(rewriter, op, source)
            return
        rewriter.replace(op, _located(TransposeOp(source, composed, op.result.type), op))


# ------------------------------------------------------------------ cast

# Element type conversions that keep every value exactly (and map it back exactly
# with the reverse cast): (from, to) by short name.
_EXACT_CASTS = frozenset(
    {
        ("f16", "f32"),  # every f16 is an f32 (11-bit significand, 5-bit exponent)
        ("bf16", "f32"),  # bf16 is the top half of an f32
        ("i32", "i64"),
        ("i1", "i32"),
        ("i1", "i64"),
        ("i1", "f16"),  # false/true -> 0.0/1.0, and back by `!= 0`
        ("i1", "bf16"),
        ("i1", "f32"),
    }
)


def _is_exact_cast(source: Attribute, target: Attribute) -> bool:
    a, b = element_type_name(source), element_type_name(target)
    return a == b or (a, b) in _EXACT_CASTS


class FoldNoOpCast(RewritePattern):
    """cast(x) -> x when the result type is x's type.

    Sound: converting a value to the type it already has is the identity (torch's
    `x.to(x.dtype)` returns x itself).
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter, /) -> None:
        if _same_type(op.input, op.result):
            _replace_with_value(rewriter, op, op.input)


class FoldCastOfExactCast(RewritePattern):
    """cast(cast(x: A -> B) -> C) -> cast(x: A -> C), or x when C is x's type, but only
    when the inner cast A -> B is exact (f16/bf16 -> f32, i32 -> i64, i1 -> anything).

    Sound: an exact inner cast preserves the value of every element (signed zeros, infs
    and NaNs included), and a cast's result depends only on the value it converts, so
    converting the preserved value to C equals converting x to C directly. So
    f16 -> f32 -> f16 folds to x. A lossy inner cast is never folded:
    f32 -> f16 -> f32 rounds to f16 precision (and overflows to inf), which is the
    whole point of that pair, and f32 -> bf16 -> f16 double-rounds.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if not isinstance(inner, CastOp):
            return
        source = inner.input
        assert isinstance(source.type, TensorType) and isinstance(inner.result.type, TensorType)
        if not _is_exact_cast(source.type.element_type, inner.result.type.element_type):
            return
        if _same_type(source, op.result):
            _replace_with_value(rewriter, op, source)
            return
        rewriter.replace(op, _located(CastOp(source, op.result.type), op))


# ------------------------------------------------------------------ arithmetic identities


def _fold_identity(
    op: Operation, rewriter: PatternRewriter, keep: SSAValue, neutral: SSAValue, ok: bool
) -> bool:
    """Replace `op` by `keep` if `ok` (the other operand is a neutral splat) and the
    result type is keep's type (so no broadcasting by the constant is lost)."""
    if ok and _same_type(keep, op.results[0]):
        _replace_with_value(rewriter, op, keep)
        return True
    return False


class FoldMulByOne(RewritePattern):
    """x * 1 -> x and 1 * x -> x, where 1 is a splat `spyre.full`/`spyre.constant`
    and the result type equals x's type.

    Sound: multiplying by exactly 1 is exact in IEEE arithmetic for every x (signed zeros,
    infs and NaNs included) and in integer arithmetic; for i1, mul is logical and with
    `true`. Requiring the result type to be x's type guarantees the constant did not
    broadcast x to a bigger shape (nor change its encoding).
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter, /) -> None:
        if not _fold_identity(op, rewriter, op.lhs, op.rhs, _is_one(op.rhs)):
            _fold_identity(op, rewriter, op.rhs, op.lhs, _is_one(op.lhs))


class FoldDivByOne(RewritePattern):
    """x / 1 -> x, where 1 is a splat constant and the result type equals x's type.

    Sound: dividing by exactly 1 is exact for every float x (IEEE: x / 1 = x, signs of
    zero kept) and for every integer x whatever the rounding mode. `1 / x` is not an
    identity and is left alone.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DivOp, rewriter: PatternRewriter, /) -> None:
        _fold_identity(op, rewriter, op.lhs, op.rhs, _is_one(op.rhs))


class FoldAddZero(RewritePattern):
    """x + 0 -> x and 0 + x -> x, where 0 is a splat constant and the result type equals
    x's type.

    Sound for integers (and i1, where add is logical or with `false`). For floats only
    adding -0.0 is an identity: IEEE gives (-0.0) + (+0.0) = +0.0, so `x + 0.0` turns a
    -0.0 element into +0.0, which `1 / x` (-inf vs +inf) and `sign` can observe. So for
    float tensors the fold needs the constant to be -0.0 (as LLVM/MLIR's arith folds
    do); `x + 0.0` stays.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter, /) -> None:
        if not _fold_identity(op, rewriter, op.lhs, op.rhs, _is_zero(op.rhs, -1)):
            _fold_identity(op, rewriter, op.rhs, op.lhs, _is_zero(op.lhs, -1))


class FoldSubZero(RewritePattern):
    """x - 0 -> x, where 0 is a splat constant and the result type equals x's type.

    Sound for integers, and for floats when the constant is +0.0: IEEE gives
    x - (+0.0) = x for every x, -0.0 included ((-0.0) - (+0.0) = -0.0). Subtracting
    -0.0 is adding +0.0, which maps -0.0 to +0.0, so that is not folded. `0 - x` is a
    negation and is left alone.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SubOp, rewriter: PatternRewriter, /) -> None:
        _fold_identity(op, rewriter, op.lhs, op.rhs, _is_zero(op.rhs, +1))


# ------------------------------------------------------------------ broadcast_to


class FoldNoOpBroadcastTo(RewritePattern):
    """broadcast_to(x) -> x when the result type is x's type.

    Sound: broadcasting to the shape x already has stretches no dim (every source dim
    equals its target dim), so each element stays in place.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastToOp, rewriter: PatternRewriter, /) -> None:
        if _same_type(op.input, op.result):
            _replace_with_value(rewriter, op, op.input)


class FoldBroadcastToOfBroadcastTo(RewritePattern):
    """broadcast_to(broadcast_to(x, S1), S2) -> broadcast_to(x, S2).

    Sound: broadcasting is transitive: right-aligned, each dim of x is 1 or the S1 dim,
    and each S1 dim is 1 or the S2 dim, so each dim of x is 1 or the S2 dim (x can
    broadcast to S2 directly). Every element of either result is the element of x at
    the same position with stretched dims read at index 0, so the values agree.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastToOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if not isinstance(inner, BroadcastToOp):
            return
        source = inner.input
        if _same_type(source, op.result):
            _replace_with_value(rewriter, op, source)
            return
        rewriter.replace(op, _located(BroadcastToOp(source, op.result.type), op))


def _located(new: Operation, old: Operation) -> Operation:
    """`new`, carrying `old`'s source location so diagnostics still point at the source."""
    new.location = old.location
    return new


PATTERNS: tuple[RewritePattern, ...] = (
    FoldNoOpReshape(),
    FoldReshapeOfReshape(),
    FoldIdentityTranspose(),
    FoldTransposeOfTranspose(),
    FoldNoOpCast(),
    FoldCastOfExactCast(),
    FoldMulByOne(),
    FoldDivByOne(),
    FoldAddZero(),
    FoldSubZero(),
    FoldNoOpBroadcastTo(),
    FoldBroadcastToOfBroadcastTo(),
)
