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
from xdsl.ir import SSAValue

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
