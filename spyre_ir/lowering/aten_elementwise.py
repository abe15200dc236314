"""ATen lowerings of elementwise ops (arithmetic, comparisons, logical ops, where,
masked_fill, unary functions, gelu, clamp, casts, identities, dropout) and matmuls.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.fx
from xdsl.ir import SSAValue

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_base import (
    arg,
    aten,
    in_range,
    lowers,
    meta_shape,
    prims,
    promoted_dtype,
    scalar_only,
)
from spyre_ir.lowering.fx_importer import (
    Importer,
    LoweringFn,
    meta_dtype,
    meta_type,
    rounded_scalar,
    tensor_type,
)

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


def _pointwise_ternary(node: torch.fx.Node) -> str | None:
    if isinstance(node.kwargs.get("value", 1), torch.fx.Node):
        return f"{node.target} with a tensor 'value' is not supported"
    dtype = meta_dtype(node)
    if dtype == torch.bool or (node.target == aten.addcdiv.default and not dtype.is_floating_point):
        return f"{node.target} on {dtype} tensors is not supported"
    return None


@lowers(aten.addcmul.default, aten.addcdiv.default, check=_pointwise_ternary)
def lower_addcmul_addcdiv(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """self + value * t1 * t2 (addcmul) and self + value * t1 / t2 (addcdiv) as torch's
    CPU kernels (PointwiseOpsKernel.cpp): left to right, (value * t1) first, with value
    unrounded at f32 and 16-bit floats computed at f32, rounded once to the result's
    type. torch's compiler contracts addcmul's last multiply and add into an FMA, which
    we do not have (no fused multiply-add of the card's units is sourced): f32 addcmul
    is 1 ulp off on about 13 % of the elements (41 of 320 with value 1, by experiment),
    16-bit results rarely (1 of 320 bf16 ones); addcdiv is exact."""
    dtype = meta_dtype(node)
    compute = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    base, t1, t2 = (imp.cast(imp.as_tensor(imp.value(x), dtype), compute) for x in node.args[:3])
    out = tensor_type(meta_shape(node), compute)
    value = node.kwargs.get("value", 1)
    scaled = t1
    if value != 1:
        scaled = imp.emit(spyre.MulOp(t1, imp.full(value, (), compute), t1.type))
    step = spyre.MulOp if node.target == aten.addcmul.default else spyre.DivOp
    term = imp.emit(step(scaled, t2, tensor_type(shape_rules.broadcast_shapes(
        shape(scaled), shape(t2)), compute)))  # fmt: skip
    return imp.cast(imp.emit(spyre.AddOp(base, term, out)), dtype)


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


lowers(aten.pow.Tensor_Tensor, aten.pow.Scalar, check=_float_result)(_binary(spyre.PowOp))
_pow = _binary(spyre.PowOp)


@lowers(aten.pow.Tensor_Scalar, check=_float_result)
def lower_pow_scalar(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """x ** e as torch's CPU kernel (pow_tensor_scalar_kernel, PowKernel.cpp): the
    exponents 2, 3, -1, -2, 0.5 and -0.5 are products, reciprocals and roots (x * x * x,
    1 / (x * x)), each step rounded: at f32 for f32 and f16 (one rounding to f16 at the
    end), in bf16 for bf16 (torch 2.13 on CPU, by experiment: x ** 3 in f32 once rounded
    was off on 67 of 320 bf16 elements, (x * x) * x in f16 on 86 of 320 f16 ones).
    Other exponents: spyre.pow."""
    exponent, dtype = node.args[1], meta_dtype(node)
    steps = _POW_STEPS.get(float(exponent)) if isinstance(exponent, (int, float)) else None
    if steps is None or isinstance(exponent, bool):
        return _pow(imp, node)
    compute = torch.bfloat16 if dtype == torch.bfloat16 else torch.float32
    x = imp.cast(imp.as_tensor(imp.value(node.args[0]), dtype), compute)
    y = x
    for step in steps:
        y = (
            imp.emit(spyre.MulOp(y, x, y.type))
            if step is spyre.MulOp
            else imp.emit(step(y, y.type))
        )
    return imp.cast(y, dtype)


_POW_STEPS: dict[float, tuple[type, ...]] = {
    2.0: (spyre.MulOp,), 3.0: (spyre.MulOp, spyre.MulOp), -1.0: (spyre.ReciprocalOp,),
    -2.0: (spyre.MulOp, spyre.ReciprocalOp), 0.5: (spyre.SqrtOp,), -0.5: (spyre.RsqrtOp,),
}  # fmt: skip
"""torch's special exponents: the steps after x (spyre.mul: times x, else of the last)."""
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
