"""`spyre-decompose`: rewrite the composite spyre ops into primitive spyre ops,
computing what torch eager computes.

    softmax(x, d)  = e / sum(e, d, keepdim)       with e = exp(x - reduce_max(x, d, keepdim))
    layer_norm(x)  = (x - mean) * rsqrt(var + eps) [* weight] [+ bias]
                     mean, var over the last `normalized_ndim` dims; var with correction 0,
                     as the mean of the squared centred values
    rms_norm(x)    = x * rsqrt(mean(x * x, -1, keepdim) + eps) [* weight]

Half inputs (f16, bf16) are computed as torch's CPU kernels compute them: upcast to
f32 with `spyre.cast`, do all the arithmetic (weight and bias included) in f32 and round
once to the input type at the end. (Checked against torch 2.13 eager on CPU: this order
matches softmax/layer_norm/rms_norm bit for bit but for a few last-place roundings;
rounding before the weight multiply, as aten's older composite rms_norm did, differs in
~25% of the elements.)

`eps` is a rank-0 `spyre.full`, which broadcasts against the keepdim statistics.

Option `ops`: which composites to rewrite, a comma-separated list of op names with or
without the `spyre.` prefix (the prefixed form must be quoted, since `.` ends a pipeline
identifier). Default: all three.

    spyre-opt in.mlir -p spyre-decompose                          # all of them
    spyre-opt in.mlir -p 'spyre-decompose{ops=softmax}'
    spyre-opt in.mlir -p 'spyre-decompose{ops=softmax,rms_norm}'
    spyre-opt in.mlir -p 'spyre-decompose{ops="spyre.layer_norm"}'

xDSL 0.74 parses `key=a,b,c` into a tuple of values (an option value list ends at the
next space or `}`), and a field typed `tuple[str, ...]` takes that tuple; a single value
(`ops=softmax`) arrives as a one-element tuple. `spyre-decompose{ops}` (no value)
selects nothing. An unknown name is an error at pipeline construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from spyre_ir import shape_rules
from spyre_ir.dialects.spyre import (
    AddOp,
    CastOp,
    DivOp,
    ExpOp,
    FullOp,
    LayerNormOp,
    MeanOp,
    MulOp,
    ReduceMaxOp,
    RmsNormOp,
    RsqrtOp,
    SoftmaxOp,
    SubOp,
    SumOp,
    element_type_name,
    shape_of,
)

F32 = Float32Type()
HALF_TYPES = ("f16", "bf16")


class _Emitter:
    """Builds the replacement ops of one composite: each new op is located at the
    composite's source location and collected in order."""

    def __init__(self, op: Operation):
        self.op = op
        self.ops: list[Operation] = []

    def add(self, new: Operation) -> SSAValue:
        new.location = self.op.location
        self.ops.append(new)
        return new.results[0]

    @staticmethod
    def tensor(shape: Sequence[int], element: Attribute) -> TensorType:
        # Intermediates carry no encoding: a stick layout belongs to the composite's
        # operands and result, and an f32 intermediate could not use an f16 one anyway.
        return TensorType(element, list(shape))

    def cast(self, value: SSAValue, element: Attribute) -> SSAValue:
        assert isinstance(value.type, TensorType)
        if value.type.element_type == element:
            return value
        return self.add(CastOp(value, self.tensor(shape_of(value), element)))

    def binary(self, cls: type, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        assert isinstance(lhs.type, TensorType)
        shape = shape_rules.broadcast_shapes(shape_of(lhs), shape_of(rhs))
        return self.add(cls(lhs, rhs, self.tensor(shape, lhs.type.element_type)))

    def unary(self, cls: type, value: SSAValue) -> SSAValue:
        assert isinstance(value.type, TensorType)
        return self.add(cls(value, self.tensor(shape_of(value), value.type.element_type)))

    def reduce(self, cls: type, value: SSAValue, dims: Sequence[int]) -> SSAValue:
        assert isinstance(value.type, TensorType)
        shape = shape_rules.reduce_shape(shape_of(value), dims, True)
        return self.add(cls(value, list(dims), True, self.tensor(shape, value.type.element_type)))

    def scalar(self, value: float, element: Attribute) -> SSAValue:
        return self.add(FullOp(float(value), self.tensor((), element)))

    def finish(self, rewriter: PatternRewriter, value: SSAValue) -> None:
        """Make `value` the composite's result, with exactly the composite's result type
        (element type and encoding), and replace the composite."""
        result_type = self.op.results[0].type
        assert isinstance(result_type, TensorType) and isinstance(value.type, TensorType)
        if value.type.element_type != result_type.element_type:
            value = self.add(CastOp(value, result_type))
        elif value.type != result_type:
            # Same element type, another encoding: rebuild the last op with the
            # composite's result type (the value is always the last op's result).
            last = self.ops.pop()
            assert last.results[0] is value
            value = self.add(
                type(last).create(
                    operands=list(last.operands),
                    result_types=[result_type],
                    properties=dict(last.properties),
                    attributes=dict(last.attributes),
                )
            )
        rewriter.replace(self.op, self.ops, [value])


def _compute_type(value: SSAValue) -> Attribute:
    """f32 for half inputs (torch's CPU kernels accumulate halves in f32), else the
    input's own element type."""
    assert isinstance(value.type, TensorType)
    element = value.type.element_type
    return F32 if element_type_name(element) in HALF_TYPES else element


class DecomposeSoftmax(RewritePattern):
    """softmax(x, d) -> exp(x - max) / sum(exp(x - max)), max and sum along d with
    keepdim; in f32 for half inputs, rounded once at the end."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SoftmaxOp, rewriter: PatternRewriter, /) -> None:
        e = _Emitter(op)
        (dim,) = shape_rules.normalize_dims([op.dim.value.data], len(shape_of(op.input)))
        x = e.cast(op.input, _compute_type(op.input))
        peak = e.reduce(ReduceMaxOp, x, [dim])
        shifted = e.binary(SubOp, x, peak)
        exps = e.unary(ExpOp, shifted)
        total = e.reduce(SumOp, exps, [dim])
        e.finish(rewriter, e.binary(DivOp, exps, total))


class DecomposeLayerNorm(RewritePattern):
    """layer_norm -> (x - mean) * rsqrt(mean((x - mean)^2) + eps) * weight + bias over
    the last `normalized_ndim` dims (biased variance, as torch); in f32 for half inputs,
    weight and bias included, rounded once at the end."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LayerNormOp, rewriter: PatternRewriter, /) -> None:
        e = _Emitter(op)
        rank = len(shape_of(op.input))
        dims = list(range(rank - op.axes_count, rank))
        compute = _compute_type(op.input)
        x = e.cast(op.input, compute)
        mean = e.reduce(MeanOp, x, dims)
        centred = e.binary(SubOp, x, mean)
        squares = e.binary(MulOp, centred, centred)
        var = e.reduce(MeanOp, squares, dims)
        shifted = e.binary(AddOp, var, e.scalar(op.eps.value.data, compute))
        rstd = e.unary(RsqrtOp, shifted)
        y = e.binary(MulOp, centred, rstd)
        if op.weight is not None:
            y = e.binary(MulOp, y, e.cast(op.weight, compute))
        if op.bias is not None:
            y = e.binary(AddOp, y, e.cast(op.bias, compute))
        e.finish(rewriter, y)


class DecomposeRmsNorm(RewritePattern):
    """rms_norm -> x * rsqrt(mean(x * x, -1, keepdim) + eps) * weight; in f32 for half
    inputs, weight included, rounded once at the end (torch 2.13's fused CPU kernel)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: RmsNormOp, rewriter: PatternRewriter, /) -> None:
        e = _Emitter(op)
        rank = len(shape_of(op.input))
        dims = list(range(rank - op.axes_count, rank))
        compute = _compute_type(op.input)
        x = e.cast(op.input, compute)
        squares = e.binary(MulOp, x, x)
        mean = e.reduce(MeanOp, squares, dims)
        shifted = e.binary(AddOp, mean, e.scalar(op.eps.value.data, compute))
        y = e.binary(MulOp, x, e.unary(RsqrtOp, shifted))
        if op.weight is not None:
            y = e.binary(MulOp, y, e.cast(op.weight, compute))
        e.finish(rewriter, y)


_PATTERNS: dict[str, type[RewritePattern]] = {
    "softmax": DecomposeSoftmax,
    "layer_norm": DecomposeLayerNorm,
    "rms_norm": DecomposeRmsNorm,
}


@dataclass(frozen=True)
class SpyreDecompose(ModulePass):
    """Rewrite spyre.softmax / spyre.layer_norm / spyre.rms_norm into primitive ops.

    `ops` names the composites to rewrite (default: all); see the module docstring for
    the pipeline syntax.
    """

    name = "spyre-decompose"

    ops: tuple[str, ...] = tuple(_PATTERNS)

    def __post_init__(self) -> None:
        unknown = [n for n in self.selected_names if n not in _PATTERNS]
        if unknown:
            raise ValueError(
                f"spyre-decompose: unknown op(s) {', '.join(unknown)} in ops=; "
                f"expected some of {', '.join(_PATTERNS)}"
            )

    @property
    def selected_names(self) -> tuple[str, ...]:
        """The `ops` option, names normalised (`spyre.` prefix dropped)."""
        ops = (self.ops,) if isinstance(self.ops, str) else self.ops
        return tuple(str(n).strip().removeprefix("spyre.") for n in ops)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        selected = set(self.selected_names)
        patterns = [cls() for name, cls in _PATTERNS.items() if name in selected]
        if not patterns:
            return
        PatternRewriteWalker(
            # dce off: this pass rewrites composites and leaves dead code to canonicalize.
            GreedyRewritePatternApplier(patterns, dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)
