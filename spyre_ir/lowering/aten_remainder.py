"""Remainders: `aten.fmod` (C's, the sign of the dividend) and `aten.remainder` (Python's,
the sign of the divisor), as elementwise spyre arithmetic.

Where they come from: `torch.roll`'s decomposition indexes with `(arange(n) + shift) fmod n`
(a sliding-window StaticCache rolls its keys left by one every decode step), and position
arithmetic in user code uses `%`. On integers `spyre.div` is floor division (as torch's
`//`), so `remainder = a - b * (a div b)` exactly; `fmod` differs where the two signs
differ and the remainder is not zero, by one `b`. On floats the quotient is rounded with
`spyre.floor` (remainder) or truncated (fmod: floor of the magnitude, the sign put back).
"""

from __future__ import annotations

import torch
import torch.fx
from xdsl.ir import Attribute, SSAValue

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_lowerings import lowers, promoted_dtype
from spyre_ir.lowering.fx_importer import Importer, meta_dtype, meta_type, tensor_type

aten = torch.ops.aten


def _operands(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue, torch.dtype]:
    dtype = promoted_dtype(node.args[0], node.args[1])
    a = imp.as_tensor(imp.value(node.args[0]), dtype)
    b = imp.as_tensor(imp.value(node.args[1]), dtype)
    return a, b, dtype


def _floor_remainder(imp: Importer, node: torch.fx.Node, a: SSAValue, b: SSAValue,
                     dtype: torch.dtype, truncate: bool) -> SSAValue:  # fmt: skip
    """a - b * q, q the quotient floored (or, with ``truncate`` on floats, truncated)."""
    out = meta_type(node)
    quotient = imp.emit(spyre.DivOp(a, b, out))
    if dtype.is_floating_point:
        if truncate:  # trunc(x) = sign(x) * floor(|x|)
            magnitude = imp.emit(spyre.FloorOp(imp.emit(spyre.AbsOp(quotient, out)), out))
            quotient = imp.emit(spyre.MulOp(imp.emit(spyre.SignOp(quotient, out)), magnitude, out))
        else:
            quotient = imp.emit(spyre.FloorOp(quotient, out))
    product = imp.emit(spyre.MulOp(b, quotient, out))
    return imp.emit(spyre.SubOp(a, product, out))


def _not_bool(node: torch.fx.Node) -> str | None:
    if meta_dtype(node) == torch.bool:
        return f"{node.target} on bool tensors is not supported"
    return None


@lowers(aten.remainder.Scalar, aten.remainder.Tensor, check=_not_bool)
def lower_remainder(imp: Importer, node: torch.fx.Node) -> SSAValue:
    a, b, dtype = _operands(imp, node)
    return _floor_remainder(imp, node, a, b, dtype, truncate=False)


@lowers(aten.fmod.Scalar, aten.fmod.Tensor, check=_not_bool)
def lower_fmod(imp: Importer, node: torch.fx.Node) -> SSAValue:
    a, b, dtype = _operands(imp, node)
    if dtype.is_floating_point:
        return _floor_remainder(imp, node, a, b, dtype, truncate=True)
    # integers: the floored remainder r has b's sign; fmod's has a's, so where the signs
    # of a and b differ and r != 0, fmod = r - b
    r = _floor_remainder(imp, node, a, b, dtype, truncate=False)
    zero = imp.full(0, (), dtype)

    def test(op_cls: type[spyre.CompareOp], x: SSAValue) -> SSAValue:
        return imp.emit(op_cls(x, zero, tensor_type(shape(x), torch.bool)))

    out = meta_type(node)
    both = tensor_type(shape_rules.broadcast_shapes(shape(a), shape(b)), torch.bool)
    signs_differ = imp.emit(spyre.LogicalXorOp(test(spyre.LtOp, a), test(spyre.LtOp, b), both))
    fix = imp.emit(spyre.LogicalAndOp(signs_differ, test(spyre.NeOp, r),
                                      tensor_type(shape(r), torch.bool)))  # fmt: skip
    return imp.emit(spyre.SelectOp(fix, imp.emit(spyre.SubOp(r, b, out)), r, out))


# ---------------------------------------------------------------- floor division of floats


def div_floor(imp: Importer, a: SSAValue, b: SSAValue, dtype: torch.dtype,
              compute: torch.dtype) -> SSAValue:  # fmt: skip
    """a // b of floats as torch's CPU kernel (div_floor_floating_vec, BinaryOpsKernel.cpp;
    Python's rule, NOTE [Floor Division in Python]): mod = fmod(a, b); div = (a - mod) / b,
    less one where mod and b differ in sign; floordiv = floor(div), plus one where div
    is more than half above it; a signed zero where div is 0, a / b where b is 0. Each
    step is an op of `compute` (the 16-bit dtype itself when torch's vector body
    computes in 16 bits, rounding every step; f32 for a Python divisor), the result
    in `dtype`.

    fmod is a - b * n at f32, n = trunc(a / b) of the f32 quotient, with b * n split
    exactly into a rounded product and its error (Dekker's product: no FMA): the exact
    fmod where n is right, minus b where the quotient rounded up to the next integer,
    which the sign correction then takes back (div is computed from a - mod either way).
    n loses integers past 2**24 (|a / b| that large: approximate). (torch's scalar tail,
    the last numel % 64 elements of a 16-bit tensor, computes in f32; we follow its
    vector body.)"""
    a, b = imp.cast(a, compute), imp.cast(b, compute)
    out = tensor_type(shape_rules.broadcast_shapes(shape(a), shape(b)), compute)
    wide = tensor_type(shape(out), torch.float32)
    a32, b32 = imp.cast(a, torch.float32), imp.cast(b, torch.float32)
    quotient = imp.emit(spyre.DivOp(a32, b32, wide))
    whole = imp.emit(spyre.FloorOp(imp.emit(spyre.AbsOp(quotient, wide)), wide))
    whole = imp.emit(spyre.MulOp(imp.emit(spyre.SignOp(quotient, wide)), whole, wide))
    product, error = _two_product(imp, b32, whole, wide)  # b * whole = product + error
    mod = imp.emit(spyre.SubOp(imp.emit(spyre.SubOp(a32, product, wide)), error, wide))
    mod = imp.cast(mod, compute)
    zero, one = imp.full(0.0, (), compute), imp.full(1.0, (), compute)
    flags = tensor_type(shape(out), torch.bool)

    def test(op_cls: type[spyre.CompareOp], x: SSAValue, y: SSAValue = zero) -> SSAValue:
        return imp.emit(op_cls(x, y, tensor_type(shape_rules.broadcast_shapes(
            shape(x), shape(y)), torch.bool)))  # fmt: skip

    div = imp.emit(spyre.DivOp(imp.emit(spyre.SubOp(a, mod, out)), b, out))
    signs = imp.emit(spyre.LogicalXorOp(test(spyre.LtOp, b), test(spyre.LtOp, mod), flags))
    fix = imp.emit(spyre.LogicalAndOp(test(spyre.NeOp, mod), signs, flags))
    div = imp.emit(spyre.SelectOp(fix, imp.emit(spyre.SubOp(div, one, out)), div, out))
    floored = imp.emit(spyre.FloorOp(div, out))
    above = test(spyre.GtOp, imp.emit(spyre.SubOp(div, floored, out)), imp.full(0.5, (), compute))
    floored = imp.emit(spyre.SelectOp(above, imp.emit(spyre.AddOp(floored, one, out)), floored,
                                      out))  # fmt: skip
    basic = imp.emit(spyre.DivOp(a, b, out))
    signed_zero = imp.emit(spyre.MulOp(basic, zero, out))  # 0 with a / b's sign (finite)
    floored = imp.emit(spyre.SelectOp(test(spyre.EqOp, div), signed_zero, floored, out))
    floored = imp.emit(spyre.SelectOp(test(spyre.EqOp, b), basic, floored, out))
    return imp.cast(floored, dtype)


def _two_product(
    imp: Importer, x: SSAValue, y: SSAValue, out: Attribute
) -> tuple[SSAValue, SSAValue]:
    """x * y = p + e exactly in f32 (Dekker's TwoProduct with Veltkamp's split at 2**12 + 1:
    each half holds 12 bits, so every partial product is exact)."""

    def split(v: SSAValue) -> tuple[SSAValue, SSAValue]:
        scaled = imp.emit(spyre.MulOp(v, imp.full(4097.0, (), torch.float32), v.type))
        high = imp.emit(spyre.SubOp(scaled, imp.emit(spyre.SubOp(scaled, v, v.type)), v.type))
        return high, imp.emit(spyre.SubOp(v, high, v.type))

    def mul(u: SSAValue, v: SSAValue) -> SSAValue:
        return imp.emit(spyre.MulOp(u, v, out))

    p = mul(x, y)
    (xh, xl), (yh, yl) = split(x), split(y)
    e = imp.emit(spyre.SubOp(mul(xh, yh), p, out))
    e = imp.emit(spyre.AddOp(imp.emit(spyre.AddOp(e, mul(xh, yl), out)), mul(xl, yh), out))
    return p, imp.emit(spyre.AddOp(e, mul(xl, yl), out))
