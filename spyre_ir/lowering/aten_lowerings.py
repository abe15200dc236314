"""One lowering per ATen op (family): FX node -> `spyre` ops.

`LOWERINGS` maps an ATen/prims overload to a function of (importer, node). `CHECKS` maps
an overload to a predicate that names what it cannot handle (a tensor bound where only a
scalar is supported, say); the backend runs such nodes on CPU instead.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
import torch.fx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.fx_importer import (
    Importer,
    LoweringFn,
    meta_dtype,
    meta_type,
    rounded_scalar,
    scalar_overflow,
    tensor_type,
)

aten = torch.ops.aten
prims = torch.ops.prims

LOWERINGS: dict[Any, LoweringFn] = {}
CHECKS: dict[Any, Callable[[torch.fx.Node], str | None]] = {}


def lowers(*targets: Any, check: Callable[[torch.fx.Node], str | None] | None = None):
    def register(fn: LoweringFn) -> LoweringFn:
        for target in targets:
            LOWERINGS[target] = fn
            if check is not None:
                CHECKS[target] = check
        return fn

    return register


def arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    """Positional-or-keyword FX argument."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def meta_shape(node: torch.fx.Node) -> tuple[int, ...]:
    return tuple(int(s) for s in node.meta["val"].shape)


def rank_of(node: torch.fx.Node, index: int = 0) -> int:
    return node.args[index].meta["val"].dim()


def scalar_only(*positions: tuple[int, str]) -> Callable[[torch.fx.Node], str | None]:
    """A check that the listed arguments are Python scalars, not tensors."""

    def check(node: torch.fx.Node) -> str | None:
        for index, name in positions:
            if isinstance(arg(node, index, name), torch.fx.Node):
                return f"{node.target} with a tensor '{name}' is not supported"
        return None

    return check


def in_range(*positions: tuple[int, str], also: Callable[[torch.fx.Node], str | None] | None = None
             ) -> Callable[[torch.fx.Node], str | None]:  # fmt: skip
    """A check that the listed scalars fit the result's dtype, as torch checks them
    (`masked_fill`, `clamp`, `alpha`): one that does not leaves the op to torch, whose
    kernel raises its own overflow error. `also`: another check to run first."""

    def check(node: torch.fx.Node) -> str | None:
        reason = also(node) if also is not None else None
        for index, name in positions:
            reason = reason or scalar_overflow(arg(node, index, name), meta_dtype(node))
        return reason

    return check


def promoted_dtype(*args: Any) -> torch.dtype:
    """torch's type promotion of FX arguments (tensors by dtype and rank, scalars by kind)."""
    samples: list[Any] = []
    for a in args:
        if isinstance(a, torch.fx.Node):
            val = a.meta["val"]
            samples.append(torch.empty((1,) * min(val.dim(), 1), dtype=val.dtype))
        else:
            samples.append(a)
    dtype = torch.result_type(samples[0], samples[1]) if len(samples) > 1 else samples[0].dtype
    return dtype


# ---------------------------------------------------------------- elementwise


def _binary(op_cls: type[spyre.BinaryOp], swap: bool = False) -> LoweringFn:
    opmath = op_cls in (spyre.MulOp, spyre.DivOp)  # scalars at f32, as torch's CPU kernels

    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        dtype = meta_dtype(node)
        lhs, rhs = (node.args[1], node.args[0]) if swap else (node.args[0], node.args[1])
        a = imp.scalar_or_tensor(imp.value(lhs), dtype, opmath=opmath)
        b = imp.scalar_or_tensor(imp.value(rhs), dtype, opmath=opmath)
        alpha = node.kwargs.get("alpha", 1)
        if alpha != 1 and dtype in (torch.float16, torch.bfloat16):
            return _with_alpha(imp, node, op_cls, a, b, rounded_scalar(alpha, dtype))
        if alpha != 1:  # torch rounds alpha to the dtype, then multiplies at f32
            alpha = imp.scalar_or_tensor(rounded_scalar(alpha, dtype), dtype, opmath=True)
            b = imp.emit(spyre.MulOp(b, alpha, b.type))
        return imp.emit(op_cls(a, b, meta_type(node)))

    return lower


def _with_alpha(imp: Importer, node: torch.fx.Node, op_cls: type[spyre.BinaryOp],
                a: SSAValue, b: SSAValue, alpha: float) -> SSAValue:  # fmt: skip
    """a + alpha * b (or -) on 16-bit floats as torch's vectorized CPU kernel: at f32
    (the product of two 16-bit floats is exact there), rounded once to the result's type;
    rounding alpha * b to f16 first is 1 ulp off on about a third of the elements."""
    f32 = tensor_type(meta_shape(node), torch.float32)
    a, b = imp.cast(a, torch.float32), imp.cast(b, torch.float32)
    product = imp.emit(spyre.MulOp(b, imp.full(float(alpha), (), torch.float32), b.type))
    return imp.cast(imp.emit(op_cls(a, product, f32)), meta_dtype(node))


@lowers(aten.lerp.Scalar, check=scalar_only((2, "weight")))
def lower_lerp(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """lerp(a, b, w) as torch's CPU kernel (lerp in aten/src/ATen/native/Lerp.h): at
    opmath (f32 for 16-bit floats), a + w * (b - a) for |w| < 0.5, else
    b - (b - a) * (1 - w); rounded once to the result's type."""
    dtype, weight = meta_dtype(node), np.float32(arg(node, 2, "weight"))
    a, b = (imp.cast(imp.value(x), torch.float32) for x in node.args[:2])
    out = tensor_type(meta_shape(node), torch.float32)
    diff = imp.emit(spyre.SubOp(b, a, out))
    small = abs(weight) < 0.5
    scale = imp.full(float(weight if small else np.float32(1) - weight), (), torch.float32)
    step = imp.emit(spyre.MulOp(diff, scale, out))
    near = imp.emit((spyre.AddOp if small else spyre.SubOp)(a if small else b, step, out))
    return imp.cast(near, dtype)


_ALPHA = in_range((99, "alpha"))  # alpha is keyword-only
lowers(aten.add.Tensor, aten.add.Scalar, check=_ALPHA)(_binary(spyre.AddOp))
lowers(aten.sub.Tensor, aten.sub.Scalar, check=_ALPHA)(_binary(spyre.SubOp))
for _targets, _cls in (
    ((aten.mul.Tensor, aten.mul.Scalar), spyre.MulOp),
    ((aten.div.Tensor, aten.div.Scalar), spyre.DivOp),
    ((aten.maximum.default,), spyre.MaxOp),
    ((aten.minimum.default,), spyre.MinOp),
):
    lowers(*_targets)(_binary(_cls))


def _float_result(node: torch.fx.Node) -> str | None:
    if not meta_dtype(node).is_floating_point:
        return f"{node.target} on integer tensors is not supported; spyre.pow is float-only"
    return None


lowers(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar,
       check=_float_result)(_binary(spyre.PowOp))  # fmt: skip
lowers(aten.rsub.Scalar, aten.rsub.Tensor)(_binary(spyre.SubOp, swap=True))


def _compare(op_cls: type[spyre.BinaryOp]) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        dtype = promoted_dtype(node.args[0], node.args[1])
        a = imp.compare_operand(imp.value(node.args[0]), dtype)
        b = imp.compare_operand(imp.value(node.args[1]), dtype)
        return imp.emit(op_cls(a, b, meta_type(node)))

    return lower


for _name, _cls in (
    ("eq", spyre.EqOp), ("ne", spyre.NeOp), ("lt", spyre.LtOp),
    ("le", spyre.LeOp), ("gt", spyre.GtOp), ("ge", spyre.GeOp),
):  # fmt: skip
    _packet = getattr(aten, _name)
    lowers(_packet.Tensor, _packet.Scalar)(_compare(_cls))


def _logical(op_cls: type[spyre.BinaryOp]) -> LoweringFn:
    """and/or/xor on truth values: operands are cast to i1 first (x != 0, as torch's
    logical ops test them), so spyre.logical_* always sees i1 operands."""

    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        a = imp.as_tensor(imp.value(node.args[0]), torch.bool)
        b = imp.as_tensor(imp.value(node.args[1]), torch.bool)
        return imp.emit(op_cls(a, b, meta_type(node)))

    return lower


# (bitwise_and/or/xor: aten_bitwise.py, logical on bool tensors, bitwise on integers)
for _target, _cls in (
    (aten.logical_and.default, spyre.LogicalAndOp),
    (aten.logical_or.default, spyre.LogicalOrOp),
    (aten.logical_xor.default, spyre.LogicalXorOp),
):
    lowers(_target)(_logical(_cls))


@lowers(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def lower_where(imp: Importer, node: torch.fx.Node) -> SSAValue:
    dtype = meta_dtype(node)
    cond = imp.as_tensor(imp.value(node.args[0]), torch.bool)
    a = imp.compare_operand(imp.value(node.args[1]), dtype)
    b = imp.compare_operand(imp.value(node.args[2]), dtype)
    return imp.emit(spyre.SelectOp(cond, a, b, meta_type(node)))


@lowers(aten.masked_fill.Scalar, check=in_range((2, "value"), also=scalar_only((2, "value"))))
def lower_masked_fill(imp: Importer, node: torch.fx.Node) -> SSAValue:
    dtype = meta_dtype(node)
    x = imp.as_tensor(imp.value(node.args[0]), dtype)
    mask = imp.as_tensor(imp.value(node.args[1]), torch.bool)
    fill = imp.compare_operand(node.args[2], dtype)
    return imp.emit(spyre.SelectOp(mask, fill, x, meta_type(node)))


def _unary(op_cls: type[spyre.UnaryOp]) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
        return imp.emit(op_cls(x, meta_type(node)))

    return lower


for _target, _cls in (
    (aten.neg.default, spyre.NegOp), (aten.abs.default, spyre.AbsOp),
    (aten.sign.default, spyre.SignOp), (aten.relu.default, spyre.ReluOp),
    (aten.exp.default, spyre.ExpOp), (aten.log.default, spyre.LogOp),
    (aten.sqrt.default, spyre.SqrtOp), (aten.rsqrt.default, spyre.RsqrtOp),
    (aten.reciprocal.default, spyre.ReciprocalOp), (aten.tanh.default, spyre.TanhOp),
    (aten.sigmoid.default, spyre.SigmoidOp), (aten.erf.default, spyre.ErfOp),
    (aten.log1p.default, spyre.Log1pOp),
    (aten.silu.default, spyre.SiluOp), (aten.sin.default, spyre.SinOp),
    (aten.cos.default, spyre.CosOp), (aten.logical_not.default, spyre.LogicalNotOp),
):  # fmt: skip
    lowers(_target)(_unary(_cls))


def _rounding(op_cls: type[spyre.UnaryOp]) -> LoweringFn:
    """floor/ceil: spyre's ops are float-only; on integer tensors torch returns a copy."""

    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
        if not meta_dtype(node).is_floating_point:
            return x
        return imp.emit(op_cls(x, meta_type(node)))

    return lower


lowers(aten.floor.default)(_rounding(spyre.FloorOp))
lowers(aten.ceil.default)(_rounding(spyre.CeilOp))


@lowers(aten.gelu.default)
def lower_gelu(imp: Importer, node: torch.fx.Node) -> SSAValue:
    from xdsl.dialects.builtin import StringAttr

    x = imp.value(node.args[0])
    mode = node.kwargs.get("approximate", arg(node, 1, "approximate", "none"))
    props = {"approximate": StringAttr(mode)} if mode != "none" else {}
    return imp.emit(spyre.GeluOp(x, meta_type(node), props))


@lowers(
    aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default,
    check=in_range((1, "min"), (2, "max"), also=scalar_only((1, "min"), (2, "max"))),
)  # fmt: skip
def lower_clamp(imp: Importer, node: torch.fx.Node) -> SSAValue:
    from xdsl.dialects.builtin import FloatAttr

    x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
    if node.target == aten.clamp_min.default:
        low, high = node.args[1], None
    elif node.target == aten.clamp_max.default:
        low, high = None, node.args[1]
    else:
        low, high = arg(node, 1, "min"), arg(node, 2, "max")
    dtype = meta_dtype(node)  # torch rounds the bounds to the dtype (clamp(max=2050.5) is 2050)
    props = {k: FloatAttr(float(rounded_scalar(v, dtype)), 64)
             for k, v in (("min", low), ("max", high)) if v is not None}  # fmt: skip
    if not props:
        return x
    return imp.emit(spyre.ClampOp(x, meta_type(node), props))


@lowers(prims.convert_element_type.default, aten._to_copy.default, aten.to.dtype)
def lower_cast(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return imp.cast(imp.value(node.args[0]), meta_dtype(node))


@lowers(
    aten.clone.default, aten.alias.default, aten.detach.default,
    aten.lift_fresh_copy.default, aten.contiguous.default,
)  # fmt: skip
def lower_identity(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return imp.value(node.args[0])


def _eval_dropout(node: torch.fx.Node) -> str | None:
    return "dropout in training mode is not supported" if arg(node, 2, "train") else None


@lowers(aten.dropout.default, check=_eval_dropout)
def lower_dropout(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return imp.value(node.args[0])


# ---------------------------------------------------------------- matmul


@lowers(aten.mm.default, aten.bmm.default, aten.matmul.default)
def lower_matmul(imp: Importer, node: torch.fx.Node) -> SSAValue:
    a, b = imp.value(node.args[0]), imp.value(node.args[1])
    return imp.emit(spyre.MatmulOp(a, b, meta_type(node)))


@lowers(aten.addmm.default, aten.baddbmm.default)
def lower_addmm(imp: Importer, node: torch.fx.Node) -> SSAValue:
    dtype, out = meta_dtype(node), meta_type(node)
    bias, a, b = (imp.value(x) for x in node.args[:3])
    product = imp.emit(spyre.MatmulOp(a, b, out))
    alpha, beta = node.kwargs.get("alpha", 1), node.kwargs.get("beta", 1)
    if alpha != 1:
        product = imp.emit(spyre.MulOp(product, imp.full(alpha, (), dtype), out))
    if beta == 0:
        return product
    if beta != 1:
        bias = imp.emit(spyre.MulOp(bias, imp.full(beta, (), dtype), bias.type))
    return imp.emit(spyre.AddOp(product, bias, out))


# ---------------------------------------------------------------- reductions


def _dims(node: torch.fx.Node, index: int = 1, name: str = "dim") -> list[int]:
    """Reduction dims; None or [] means every dim, as in torch."""
    dims = arg(node, index, name)
    rank = rank_of(node)
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return list(range(max(rank, 1)))
    return [dims] if isinstance(dims, int) else list(dims)


def _reduce(imp: Importer, op_cls: type[spyre.ReductionOp], node: torch.fx.Node,
            x: SSAValue, dims: list[int], keepdim: bool, out: TensorType,
            properties: dict | None = None) -> SSAValue:  # fmt: skip
    if not shape(x):
        x = imp.reshape(x, (1,))
        dims = [0]
    return imp.emit(op_cls(x, dims, keepdim, out, properties))


def _reduction(op_cls: type[spyre.ReductionOp], dims_at: int = 1) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
        keepdim = bool(arg(node, dims_at + 1, "keepdim", False))
        return _reduce(imp, op_cls, node, x, _dims(node, dims_at), keepdim, meta_type(node))

    return lower


lowers(aten.sum.dim_IntList, aten.sum.default)(_reduction(spyre.SumOp))
lowers(aten.mean.dim, aten.mean.default)(_reduction(spyre.MeanOp))
lowers(aten.amax.default)(_reduction(spyre.ReduceMaxOp))
lowers(aten.amin.default)(_reduction(spyre.ReduceMinOp))


def _truth_reduction(op_cls: type[spyre.ReductionOp]) -> LoweringFn:
    """any/all: the max/min of the operand's truth values."""

    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.value(node.args[0])
        if not imp.is_bool(x):
            zero = imp.full(0, (), meta_dtype(node.args[0]))
            x = imp.emit(spyre.NeOp(x, imp.cast(zero, node.args[0].meta["val"].dtype),
                                    tensor_type(shape(x), torch.bool)))  # fmt: skip
        keepdim = bool(arg(node, 2, "keepdim", False))
        return _reduce(imp, op_cls, node, x, _dims(node), keepdim, meta_type(node))

    return lower


lowers(aten.any.dim, aten.any.dims, aten.any.default)(_truth_reduction(spyre.ReduceMaxOp))
lowers(aten.all.dim, aten.all.dims, aten.all.default)(_truth_reduction(spyre.ReduceMinOp))


def _arg_reduction(op_cls: type[spyre.ReductionOp]) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.value(node.args[0])
        keepdim = bool(arg(node, 2, "keepdim", False))
        if arg(node, 1, "dim") is None:
            # torch flattens first; keepdim then keeps every dim as 1.
            flat = imp.reshape(x, (shape_rules.numel(shape(x)),))
            picked = imp.emit(op_cls(flat, [0], False, tensor_type((), torch.int64)))
            return imp.reshape(picked, meta_shape(node))
        return _reduce(imp, op_cls, node, x, _dims(node), keepdim, meta_type(node))

    return lower


lowers(aten.argmax.default)(_arg_reduction(spyre.ArgmaxOp))
lowers(aten.argmin.default)(_arg_reduction(spyre.ArgminOp))


def _value_and_index(value_cls: type, index_cls: type) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
        x = imp.value(node.args[0])
        dims, keepdim = _dims(node), bool(arg(node, 2, "keepdim", False))
        values, indices = node.meta["val"]
        return (
            _reduce(imp, value_cls, node, x, dims, keepdim,
                    tensor_type(values.shape, values.dtype)),
            _reduce(imp, index_cls, node, x, dims, keepdim,
                    tensor_type(indices.shape, indices.dtype)),
        )  # fmt: skip

    return lower


lowers(aten.max.dim)(_value_and_index(spyre.ReduceMaxOp, spyre.ArgmaxOp))
lowers(aten.min.dim)(_value_and_index(spyre.ReduceMinOp, spyre.ArgminOp))


def _reduce_all(op_cls: type[spyre.ReductionOp]) -> LoweringFn:
    """max()/min() without a dim: the extreme over every dim, a rank-0 result."""

    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.value(node.args[0])
        return _reduce(imp, op_cls, node, x, list(range(max(len(shape(x)), 1))),
                       False, meta_type(node))  # fmt: skip

    return lower


lowers(aten.max.default)(_reduce_all(spyre.ReduceMaxOp))
lowers(aten.min.default)(_reduce_all(spyre.ReduceMinOp))


def _variance(imp: Importer, node: torch.fx.Node, out_meta: torch.Tensor) -> SSAValue:
    from xdsl.dialects.builtin import IntegerAttr, i64

    x = imp.value(node.args[0])
    correction = node.kwargs.get("correction")
    correction = 1 if correction is None else correction
    if correction != int(correction):
        raise AssertionError("fractional correction is filtered by the check")
    props = {"correction": IntegerAttr(int(correction), i64)}
    keepdim = bool(node.kwargs.get("keepdim", False))
    out = tensor_type(out_meta.shape, out_meta.dtype)
    return _reduce(imp, spyre.VarOp, node, x, _dims(node), keepdim, out, props)


def _integral_correction(node: torch.fx.Node) -> str | None:
    c = node.kwargs.get("correction")
    return None if c is None or c == int(c) else "fractional var correction is not supported"


@lowers(aten.var.correction, check=_integral_correction)
def lower_var(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return _variance(imp, node, node.meta["val"])


@lowers(aten.var_mean.correction, check=_integral_correction)
def lower_var_mean(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    var_meta, mean_meta = node.meta["val"]
    x = imp.value(node.args[0])
    keepdim = bool(node.kwargs.get("keepdim", False))
    mean = _reduce(imp, spyre.MeanOp, node, x, _dims(node), keepdim,
                   tensor_type(mean_meta.shape, mean_meta.dtype))  # fmt: skip
    return _variance(imp, node, var_meta), mean


@lowers(aten.cumsum.default)
def lower_cumsum(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
    return imp.emit(spyre.CumsumOp(x, node.args[1], meta_type(node)))


@lowers(aten._softmax.default, aten.softmax.int)
def lower_softmax(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
    return imp.emit(spyre.SoftmaxOp(x, node.args[1], meta_type(node)))


# ---------------------------------------------------------------- shapes


@lowers(
    aten.view.default, aten._unsafe_view.default, aten.reshape.default,
    aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.unsqueeze.default,
    prims.squeeze.default, prims.broadcast_in_dim.default,
)  # fmt: skip
def lower_reshape(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    if node.target == prims.broadcast_in_dim.default:
        return _broadcast_in_dim(imp, node, x)
    return imp.reshape(x, meta_shape(node))


def _broadcast_in_dim(imp: Importer, node: torch.fx.Node, x: SSAValue) -> SSAValue:
    target, kept = meta_shape(node), node.args[2]
    staged = [1] * len(target)
    for src_dim, dst_dim in enumerate(kept):
        staged[dst_dim] = shape(x)[src_dim]
    staged_value = imp.reshape(x, staged)
    if tuple(staged) == target:
        return staged_value
    return imp.emit(spyre.BroadcastToOp(staged_value, meta_type(node)))


@lowers(aten.permute.default, aten.t.default, aten.transpose.int, prims.transpose.default)
def lower_transpose(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    rank = len(shape(x))
    if node.target in (aten.permute.default, prims.transpose.default):
        perm = [d % max(rank, 1) for d in node.args[1]]
    else:
        perm = list(range(rank))
        if rank >= 2:
            d0, d1 = (0, 1) if node.target == aten.t.default else node.args[1:3]
            d0, d1 = d0 % rank, d1 % rank
            perm[d0], perm[d1] = perm[d1], perm[d0]
    if perm == list(range(rank)):
        return x
    return imp.emit(spyre.TransposeOp(x, perm, meta_type(node)))


@lowers(aten.expand.default, aten.expand_as.default)
def lower_expand(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    if shape(x) == meta_shape(node):
        return x
    return imp.emit(spyre.BroadcastToOp(x, meta_type(node)))


def _slice(imp: Importer, x: SSAValue, dim: int, start: int | None, end: int | None,
           step: int) -> SSAValue:  # fmt: skip
    """Python slice semantics on one dim: None, negative and out-of-range bounds."""
    sizes = shape(x)
    dim %= len(sizes)
    start, end, step = slice(start, end, step).indices(sizes[dim])
    end = max(end, start)
    starts, stops, steps = [0] * len(sizes), list(sizes), [1] * len(sizes)
    starts[dim], stops[dim], steps[dim] = start, end, step
    if (start, end, step) == (0, sizes[dim], 1):
        return x
    out_shape = shape_rules.slice_shape(sizes, starts, stops, steps)
    assert isinstance(x.type, TensorType)
    out = TensorType(x.type.element_type, list(out_shape))
    return imp.emit(spyre.SliceOp(x, starts, stops, steps, out))


def _positive_step(node: torch.fx.Node) -> str | None:
    return None if arg(node, 4, "step", 1) > 0 else "slice with a non-positive step"


@lowers(aten.slice.Tensor, check=_positive_step)
def lower_slice(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    end = arg(node, 3, "end")
    end = None if end is not None and end >= sys.maxsize else end
    return _slice(imp, x, arg(node, 1, "dim", 0), arg(node, 2, "start"), end,
                  arg(node, 4, "step", 1))  # fmt: skip


@lowers(aten.select.int)
def lower_select(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    dim, index = node.args[1], node.args[2]
    size = shape(x)[dim % len(shape(x))]
    index %= size
    return imp.reshape(_slice(imp, x, dim, index, index + 1, 1), meta_shape(node))


@lowers(aten.split.Tensor, aten.split_with_sizes.default)
def lower_split(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, ...]:
    x = imp.value(node.args[0])
    dim = arg(node, 2, "dim", 0) % len(shape(x))
    pieces: list[SSAValue] = []
    start = 0
    for part in node.meta["val"]:
        length = int(part.shape[dim])
        pieces.append(_slice(imp, x, dim, start, start + length, 1))
        start += length
    return tuple(pieces)


@lowers(aten.unbind.int)
def lower_unbind(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, ...]:
    x = imp.value(node.args[0])
    dim = arg(node, 1, "dim", 0) % len(shape(x))
    return tuple(
        imp.reshape(_slice(imp, x, dim, i, i + 1, 1), tuple(part.shape))
        for i, part in enumerate(node.meta["val"])
    )


@lowers(operator.getitem)
def lower_getitem(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return imp.value(node.args[0])[node.args[1]]


@lowers(aten.cat.default)
def lower_cat(imp: Importer, node: torch.fx.Node) -> SSAValue:
    dtype = meta_dtype(node)
    # torch skips legacy empty 1-D inputs in cat.
    inputs = [imp.cast(imp.value(t), dtype) for t in node.args[0]
              if tuple(t.meta["val"].shape) != (0,)]  # fmt: skip
    if len(inputs) == 1:
        return inputs[0]
    dim = arg(node, 1, "dim", 0) % len(meta_shape(node))
    return imp.emit(spyre.ConcatOp(inputs, dim, meta_type(node)))


def _non_negative_pad(node: torch.fx.Node) -> str | None:
    if any(p < 0 for p in node.args[1]):
        return "negative padding (cropping) is not supported"
    return scalar_only((2, "value"))(node)


@lowers(aten.constant_pad_nd.default, check=_non_negative_pad)
def lower_pad(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    rank, pads = len(shape(x)), list(node.args[1])
    low, high = [0] * rank, [0] * rank
    for i in range(len(pads) // 2):  # pairs run from the last dim backwards
        low[rank - 1 - i], high[rank - 1 - i] = pads[2 * i], pads[2 * i + 1]
    value = float(arg(node, 2, "value", 0.0))
    return imp.emit(spyre.PadOp(x, low, high, value, meta_type(node)))


def _tensor_indices(node: torch.fx.Node) -> str | None:
    indices = list(node.args[1])
    present = [d for d, i in enumerate(indices) if i is not None]
    if not present:
        return "aten.index without an index tensor is not supported"
    if any(indices[d].meta["val"].dtype not in (torch.int32, torch.int64) for d in present):
        return "aten.index with a boolean mask is not supported"
    return None


@lowers(aten.embedding.default)
def lower_embedding(imp: Importer, node: torch.fx.Node) -> SSAValue:
    table, indices = imp.value(node.args[0]), imp.value(node.args[1])
    return imp.emit(spyre.GatherOp(table, indices, meta_type(node)))


@lowers(aten.index.Tensor, check=_tensor_indices)
def lower_index(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """x[..., i, ..., j, ...]: advanced indexing as one gather. The dims up to the last
    indexed one merge into the table's rows; the flat row index sums each dim's
    coordinate times its stride, an index tensor's (negative ones wrapped, as torch) for
    an indexed dim and a position (iota) for a sliced one, laid out as torch places
    the result dims (the broadcast index dims where the first index was when the indexed
    dims are adjacent, in front otherwise)."""
    x = imp.value(node.args[0])
    sizes = shape(x)
    given = list(node.args[1])
    present = [d for d, i in enumerate(given) if i is not None]
    last = present[-1] + 1
    indices = {d: imp.cast(imp.value(given[d]), torch.int64) for d in present}
    index_shape = shape_rules.broadcast_shapes(*(shape(i) for i in indices.values()))
    sliced = [d for d in range(last) if d not in indices]
    adjacent = present == list(range(present[0], last))
    if adjacent:  # result: sizes[:first] + index_shape + sizes[last:]
        first = present[0]
        rows = (*sizes[:first], *index_shape)
        index_at, slice_at = first, {d: d for d in sliced}
    else:  # result: index_shape + the sliced dims + sizes[last:]
        rows = (*index_shape, *(sizes[d] for d in sliced))
        index_at = 0
        slice_at = {d: len(index_shape) + k for k, d in enumerate(sliced)}
    coords: dict[int, SSAValue] = {}
    for d, index in indices.items():
        index = _wrap_negative(imp, index, sizes[d])
        padded = (1,) * (len(index_shape) - len(shape(index))) + shape(index)
        lead, tail = (1,) * index_at, (1,) * (len(rows) - index_at - len(index_shape))
        coords[d] = imp.reshape(index, (*lead, *padded, *tail))
    for d in sliced:
        at = slice_at[d]
        line = imp.emit(spyre.IotaOp(0, 0, 1, tensor_type((sizes[d],), torch.int64)))
        coords[d] = imp.reshape(line, tuple(sizes[d] if k == at else 1 for k in range(len(rows))))
    flat = _flat_index(imp, [(coords[d], sizes[d]) for d in range(last)])
    table = imp.reshape(x, (shape_rules.numel(sizes[:last]), *sizes[last:]))
    return imp.emit(spyre.GatherOp(table, flat, meta_type(node)))


def _flat_index(imp: Importer, coords: Sequence[tuple[SSAValue, int]]) -> SSAValue:
    """Row-major flat index of int64 coordinates [(coordinate, dim size)], outermost
    first; the coordinates broadcast together."""
    flat: SSAValue | None = None
    stride = 1
    for coord, size in reversed(coords):
        term = (
            coord
            if stride == 1
            else imp.emit(spyre.MulOp(coord, imp.full(stride, (), torch.int64), coord.type))
        )
        flat = term if flat is None else imp.emit(spyre.AddOp(
            flat, term, tensor_type(shape_rules.broadcast_shapes(shape(flat), shape(term)),
                                    torch.int64)))  # fmt: skip
        stride *= size
    assert flat is not None
    return flat


@lowers(aten.gather.default)
def lower_gather(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """torch.gather(x, dim, index): out[p] = x[p with p[dim] = index[p]], one element
    gather from x flattened (the other coordinates are positions in `index`)."""
    x, index = imp.value(node.args[0]), imp.cast(imp.value(node.args[2]), torch.int64)
    sizes, rank = shape(x), len(shape(x))
    dim = int(node.args[1]) % max(rank, 1)
    out_shape = shape(index)
    coords = []
    for d in range(rank):
        if d == dim:
            coords.append((index, sizes[d]))  # torch.gather takes no negative index
            continue
        line = imp.emit(spyre.IotaOp(0, 0, 1, tensor_type((out_shape[d],), torch.int64)))
        coords.append((imp.reshape(line, tuple(out_shape[d] if k == d else 1
                                               for k in range(rank))), sizes[d]))  # fmt: skip
    flat = _flat_index(imp, coords)
    if shape(flat) != out_shape:
        flat = imp.emit(spyre.BroadcastToOp(flat, tensor_type(out_shape, torch.int64)))
    table = imp.reshape(x, (shape_rules.numel(sizes),))
    return imp.emit(spyre.GatherOp(table, flat, meta_type(node)))


def _index_put_check(node: torch.fx.Node) -> str | None:
    indices = list(node.args[1])
    present = [d for d, i in enumerate(indices) if i is not None]
    if not present:
        return "index_put without an index tensor is not supported"
    if present != list(range(present[0], present[-1] + 1)):
        return "index_put on dims that are not adjacent is not supported"
    if any(indices[d].meta["val"].dtype not in (torch.int32, torch.int64) for d in present):
        return "index_put with a boolean mask is not supported"
    return None


@lowers(aten.index_put.default, check=_index_put_check)
def lower_index_put(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """x[.., i, j, ..] = v (what StaticCache's `index_copy_` and `cache[:, :, pos] = k`
    become; with accumulate, x[.., i, j, ..] += v, index_add's): one `spyre.scatter` along the indexed dims merged, at the flat position of
    the broadcast indices (negative ones wrapped), with `v` broadcast to the indexed
    shape and flattened to match."""
    x, values = imp.value(node.args[0]), imp.value(node.args[2])
    sizes = shape(x)
    given = list(node.args[1])
    present = [d for d, i in enumerate(given) if i is not None]
    first, last = present[0], present[-1] + 1
    indices = [imp.cast(imp.value(given[d]), torch.int64) for d in present]
    index_shape = shape_rules.broadcast_shapes(*(shape(i) for i in indices))
    coords = []
    for d, index in zip(present, indices):
        index = _wrap_negative(imp, index, sizes[d])
        coords.append((imp.reshape(index, (1,) * (len(index_shape) - len(shape(index))) + shape(index)),
                       sizes[d]))  # fmt: skip
    flat = _flat_index(imp, coords)
    if shape(flat) != index_shape:
        flat = imp.emit(spyre.BroadcastToOp(flat, tensor_type(index_shape, torch.int64)))
    count = shape_rules.numel(index_shape)
    flat = imp.reshape(flat, (count,))
    dtype = meta_dtype(node)
    indexed = (*sizes[:first], *index_shape, *sizes[last:])
    values = imp.cast(values, dtype)
    if shape(values) != indexed:
        values = imp.emit(spyre.BroadcastToOp(values, tensor_type(indexed, dtype)))
    merged = (*sizes[:first], shape_rules.numel(sizes[first:last]), *sizes[last:])
    source = imp.reshape(values, (*sizes[:first], count, *sizes[last:]))
    dest = imp.reshape(x, merged)
    # accumulate=True (index_add's decomposition): the slices add, repeats included
    op_cls = spyre.ScatterAddOp if arg(node, 3, "accumulate", False) else spyre.ScatterOp
    out = imp.emit(op_cls(dest, flat, source, first, tensor_type(merged, dtype)))
    return imp.reshape(out, sizes)


def _scatter_positions(imp: Importer, x: SSAValue, src: SSAValue, dim: int, start: int,
                       step: int) -> SSAValue:  # fmt: skip
    """x with src written at positions start, start + step, .. along dim (static)."""
    count = shape(src)[dim]
    positions = imp.emit(spyre.IotaOp(0, start, step, tensor_type((count,), torch.int64)))
    return imp.emit(spyre.ScatterOp(x, positions, src, dim, x.type))


@lowers(
    aten.slice_scatter.default,
    check=lambda n: None if arg(n, 5, "step", 1) > 0 else "slice_scatter with a non-positive step",
)
def lower_slice_scatter(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x, src = imp.value(node.args[0]), imp.value(node.args[1])
    rank = len(shape(x))
    dim = int(arg(node, 2, "dim", 0)) % rank
    size = shape(x)[dim]
    start = arg(node, 3, "start", None)
    start = 0 if start is None else int(start)
    start = min(max(start + size if start < 0 else start, 0), size)
    step = int(arg(node, 5, "step", 1))
    return _scatter_positions(imp, x, imp.cast(src, meta_dtype(node)), dim, start, step)


@lowers(aten.select_scatter.default)
def lower_select_scatter(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x, src = imp.value(node.args[0]), imp.value(node.args[1])
    rank = len(shape(x))
    dim = int(node.args[2]) % rank
    index = int(node.args[3]) % shape(x)[dim]
    one = tuple(1 if d == dim else n for d, n in enumerate(shape(x)))
    src = imp.reshape(imp.cast(src, meta_dtype(node)), one)
    return _scatter_positions(imp, x, src, dim, index, 1)


def _copy_check(node: torch.fx.Node) -> str | None:
    return None if not arg(node, 2, "non_blocking", False) else "non_blocking copy"


@lowers(aten.copy.default, check=_copy_check)
def lower_copy(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """copy(self, src): src cast to self's dtype and broadcast to its shape (functionalised
    `self.copy_(src)`; self's values are not read)."""
    src = imp.cast(imp.value(node.args[1]), meta_dtype(node))
    if shape(src) != meta_shape(node):
        src = imp.emit(spyre.BroadcastToOp(src, meta_type(node)))
    return src


def _wrap_negative(imp: Importer, index: SSAValue, size: int) -> SSAValue:
    i64 = torch.int64
    negative = imp.emit(
        spyre.LtOp(index, imp.full(0, (), i64), tensor_type(shape(index), torch.bool))
    )
    wrapped = imp.emit(spyre.AddOp(index, imp.full(size, (), i64), index.type))
    return imp.emit(spyre.SelectOp(negative, wrapped, index, index.type))


def _index_select_dim0(node: torch.fx.Node) -> str | None:
    return None if node.args[1] == 0 else "index_select on a dim other than 0"


@lowers(aten.index_select.default, check=_index_select_dim0)
def lower_index_select(imp: Importer, node: torch.fx.Node) -> SSAValue:
    table, indices = imp.value(node.args[0]), imp.value(node.args[2])
    return imp.emit(spyre.GatherOp(table, indices, meta_type(node)))


# ---------------------------------------------------------------- constants


def _fill_value(node: torch.fx.Node) -> Any:
    if node.target in (aten.zeros.default, aten.zeros_like.default):
        return 0
    if node.target in (aten.ones.default, aten.ones_like.default):
        return 1
    if node.target == aten.full_like.default:
        return node.args[1]
    if node.target == aten.scalar_tensor.default:
        return node.args[0]
    return node.args[1]


@lowers(
    aten.full.default, aten.zeros.default, aten.ones.default, aten.scalar_tensor.default,
    aten.full_like.default, aten.zeros_like.default, aten.ones_like.default,
    check=lambda n: scalar_only((1, "fill_value"))(n) if n.target in
    (aten.full.default, aten.full_like.default) else None,
)  # fmt: skip
def lower_full(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return imp.full(_fill_value(node), meta_shape(node), meta_dtype(node))


def _integer_range(node: torch.fx.Node) -> str | None:
    bounds = [a for a in node.args if not isinstance(a, torch.fx.Node)]
    if any(isinstance(b, float) and b != int(b) for b in bounds):
        return "arange with fractional bounds is not supported"
    return None


@lowers(aten.arange.start_step, aten.arange.default, aten.arange.start, check=_integer_range)
def lower_arange(imp: Importer, node: torch.fx.Node) -> SSAValue:
    args = [int(a) for a in node.args]
    start, step = (args + [1])[0:3:2] if len(args) >= 2 else (0, 1)
    if node.target == aten.arange.start_step and len(args) == 3:
        start, step = args[0], args[2]
    return _iota(imp, node, start, step)


@lowers(prims.iota.default)
def lower_iota(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return _iota(imp, node, int(node.kwargs["start"]), int(node.kwargs["step"]))


def _iota(imp: Importer, node: torch.fx.Node, start: int, step: int) -> SSAValue:
    dtype, out_shape = meta_dtype(node), meta_shape(node)
    if dtype.is_floating_point:
        ints = imp.emit(spyre.IotaOp(0, start, step, tensor_type(out_shape, torch.int64)))
        return imp.cast(ints, dtype)
    return imp.emit(spyre.IotaOp(0, start, step, meta_type(node)))


# Families kept in modules of their own register into LOWERINGS when imported.
from spyre_ir.lowering import aten_bitwise, aten_remainder, aten_scatter  # noqa: E402, F401

# isort: split
from spyre_ir.lowering import aten_conv  # noqa: E402, F401  (convolutions, windows)

# isort: off
from spyre_ir.lowering import aten_sort  # noqa: E402, F401  (issue 19: sorting ops)
# isort: on


def supported_targets() -> Sequence[str]:
    """Every ATen/prims overload the importer lowers, for docs and the CLI."""
    return sorted({str(t) for t in LOWERINGS} | set(aten_scatter.LIBRARY_OPS))
