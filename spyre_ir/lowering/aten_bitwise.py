"""Bitwise ops, rounding, NaN tests and `repeat`, as spyre ops.

Bitwise and/or/xor/not on bool tensors are the logical ops (`spyre.logical_*`); on integer
tensors they are `spyre.bitwise_*`, and the shifts `spyre.shift_left` / `shift_right` (torch's
`<<` and `>>`, arithmetic on signed integers). `isnan(x)` is `x != x`, `isinf(x)` is `abs(x) == inf`
(isposinf, isneginf: `x == +-inf`); `round` is
`spyre.round` (ties to even; with `decimals`, scaled at f32 as torch's kernel); `repeat` is a broadcast between two reshapes.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.fx
from xdsl.ir import SSAValue

from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_lowerings import LoweringFn, lowers, meta_shape
from spyre_ir.lowering.fx_importer import Importer, meta_dtype, meta_type, tensor_type

aten = torch.ops.aten


def _bitwise(logical_cls: type[spyre.BinaryOp], bitwise_cls: type[spyre.BinaryOp]) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        dtype = meta_dtype(node)
        a = imp.as_tensor(imp.value(node.args[0]), dtype)
        b = imp.as_tensor(imp.value(node.args[1]), dtype)
        op_cls = logical_cls if dtype == torch.bool else bitwise_cls
        return imp.emit(op_cls(a, b, meta_type(node)))

    return lower


def _overloads(*names: str) -> list:
    found = []
    for name in names:
        packet = getattr(aten, name)
        found += [getattr(packet, o) for o in ("Tensor", "Scalar", "Scalar_Tensor",
                                                "Tensor_Scalar") if o in packet.overloads()]  # fmt: skip
    return found


for _names, _logical_cls, _bitwise_cls in (
    (("bitwise_and",), spyre.LogicalAndOp, spyre.BitwiseAndOp),
    (("bitwise_or",), spyre.LogicalOrOp, spyre.BitwiseOrOp),
    (("bitwise_xor",), spyre.LogicalXorOp, spyre.BitwiseXorOp),
):
    lowers(*_overloads(*_names))(_bitwise(_logical_cls, _bitwise_cls))


def _integer_shift(node: torch.fx.Node) -> str | None:
    if meta_dtype(node) == torch.bool or meta_dtype(node).is_floating_point:
        return f"{node.target} on {meta_dtype(node)} tensors is not supported"
    return None


lowers(*_overloads("bitwise_left_shift", "__lshift__"), check=_integer_shift)(
    _bitwise(spyre.ShiftLeftOp, spyre.ShiftLeftOp)
)
lowers(*_overloads("bitwise_right_shift", "__rshift__"), check=_integer_shift)(
    _bitwise(spyre.ShiftRightOp, spyre.ShiftRightOp)
)


@lowers(aten.bitwise_not.default)
def lower_bitwise_not(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    op_cls = spyre.LogicalNotOp if meta_dtype(node) == torch.bool else spyre.BitwiseNotOp
    return imp.emit(op_cls(x, meta_type(node)))


@lowers(aten.round.default)
def lower_round(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """Ties to even, as torch; on integer tensors torch returns a copy."""
    x = imp.value(node.args[0])
    if not meta_dtype(node).is_floating_point:
        return x
    return imp.emit(spyre.RoundOp(x, meta_type(node)))


def _float_only(node: torch.fx.Node) -> str | None:
    if meta_dtype(node).is_floating_point:
        return None
    return f"{node.target} of an integer tensor (torch raises)"


@lowers(aten.round.decimals, check=_float_only)
def lower_round_decimals(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """round(x, decimals=d) as torch's CPU kernel computes it (round_decimals_kernel in
    aten/src/ATen/native/cpu/UnaryOpsKernel.cpp): at opmath (f32 for f16 and bf16), with
    p = float(10**|d|), nearbyint(x * p) / p for d >= 0 and nearbyint(x / p) * p for d < 0,
    rounded once to the result's type. Inductor's decomposition, round(x * 10**d) * 10**-d,
    is 1 ulp off in f32 (spyre_decompositions drops it)."""
    decimals = int(node.kwargs.get("decimals", node.args[1] if len(node.args) > 1 else 0))
    dtype = meta_dtype(node)
    x = imp.cast(imp.value(node.args[0]), torch.float32)
    ten = imp.full(float(np.float32(10.0 ** min(abs(decimals), 300))), (), torch.float32)
    f32 = x.type
    first, then = (spyre.MulOp, spyre.DivOp) if decimals >= 0 else (spyre.DivOp, spyre.MulOp)
    scaled = imp.emit(spyre.RoundOp(imp.emit(first(x, ten, f32)), f32))
    return imp.cast(imp.emit(then(scaled, ten, f32)), dtype)


@lowers(aten.isnan.default)
def lower_isnan(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.value(node.args[0])
    return imp.emit(spyre.NeOp(x, x, meta_type(node)))


@lowers(aten.isinf.default)
def lower_isinf(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """abs(x) == inf, as torch's kernel (`isinf` in ATen's TensorCompare.cpp); an integer
    is never infinite (x != x). On DLFloat16 a comparison with inf compares with the
    saturation bound (`dlfloat16.infinities_as_bounds`): a value at MAXIMUM reads as inf
    (docs/dlfloat16.md). isfinite comes decomposed (x == x and abs(x) != inf)."""
    x = imp.value(node.args[0])
    dtype = meta_dtype(node.args[0])
    if not dtype.is_floating_point:
        return imp.emit(spyre.NeOp(x, x, meta_type(node)))
    magnitude = imp.emit(spyre.AbsOp(x, x.type))
    inf = imp.compare_operand(math.inf, dtype)
    return imp.emit(spyre.EqOp(magnitude, inf, meta_type(node)))


def _is_infinity(sign: float) -> LoweringFn:
    """isposinf / isneginf: x == +-inf in x's own dtype (Inductor's decomposition
    compares at f32, an exact widening that would warn of f32 work in DLFloat16)."""

    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.value(node.args[0])
        dtype = meta_dtype(node.args[0])
        if not dtype.is_floating_point:
            return imp.emit(spyre.NeOp(x, x, meta_type(node)))
        inf = imp.compare_operand(sign * math.inf, dtype)
        return imp.emit(spyre.EqOp(x, inf, meta_type(node)))

    return lower


lowers(aten.isposinf.default)(_is_infinity(1.0))
lowers(aten.isneginf.default)(_is_infinity(-1.0))


@lowers(aten.repeat.default)
def lower_repeat(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """x.repeat(r): x (padded with leading 1s to len(r) dims) with a new axis of size r_i
    before each dim i where r_i > 1, broadcast there, then each pair merged."""
    x = imp.value(node.args[0])
    repeats = [int(r) for r in node.args[1]]
    dims = [1] * (len(repeats) - len(shape(x))) + list(shape(x))
    staged, target = [], []
    for count, size in zip(repeats, dims, strict=True):
        if count != 1:
            staged.append(1)
            target.append(count)
        staged.append(size)
        target.append(size)
    element = meta_dtype(node)
    value = imp.reshape(x, staged)
    if target != staged:
        value = imp.emit(spyre.BroadcastToOp(value, tensor_type(target, element)))
    return imp.reshape(value, meta_shape(node))
