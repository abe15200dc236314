"""Tile math of KTIR kernels as `dataflow.compute` ops: arith and math elementwise ops,
linalg named ops, reductions, matmuls and broadcasts on LX buffers (part of the KTIR
-> dataflow lowering, spyre_ir/lowering/ktir_to_dataflow.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation

from spyre_ir.dialects import dataflow as D
from spyre_ir.lowering.ktir_values import Buf, Lazy, LoweringError, Scalar

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering

BINARY = {
    "arith.addf": "spyre.add", "arith.subf": "spyre.sub", "arith.mulf": "spyre.mul",
    "arith.divf": "spyre.div", "arith.maxnumf": "spyre.max", "arith.maximumf": "spyre.max",
    "arith.minnumf": "spyre.min", "arith.minimumf": "spyre.min", "arith.addi": "spyre.add",
    "arith.subi": "spyre.sub", "arith.muli": "spyre.mul", "arith.maxsi": "spyre.max",
    "arith.minsi": "spyre.min", "math.powf": "spyre.pow",
    "linalg.add": "spyre.add", "linalg.sub": "spyre.sub", "linalg.mul": "spyre.mul",
    "linalg.max": "spyre.max", "linalg.min": "spyre.min",
}  # fmt: skip
UNARY = {
    "math.exp": "spyre.exp", "math.log": "spyre.log", "math.sqrt": "spyre.sqrt",
    "math.rsqrt": "spyre.rsqrt", "math.tanh": "spyre.tanh", "math.absf": "spyre.abs",
    "math.erf": "spyre.erf", "math.sin": "spyre.sin", "math.cos": "spyre.cos",
    "math.floor": "spyre.floor", "math.ceil": "spyre.ceil", "arith.negf": "spyre.neg",
    "linalg.exp": "spyre.exp", "linalg.log": "spyre.log", "linalg.sqrt": "spyre.sqrt",
    "arith.truncf": "spyre.cast", "arith.extf": "spyre.cast",
}  # fmt: skip
COMPARE = {
    "oeq": "spyre.eq", "one": "spyre.ne", "olt": "spyre.lt", "ole": "spyre.le",
    "ogt": "spyre.gt", "oge": "spyre.ge", "ueq": "spyre.eq", "une": "spyre.ne",
    "ult": "spyre.lt", "ule": "spyre.le", "ugt": "spyre.gt", "uge": "spyre.ge",
    "eq": "spyre.eq", "ne": "spyre.ne", "slt": "spyre.lt", "sle": "spyre.le",
    "sgt": "spyre.gt", "sge": "spyre.ge",
}  # fmt: skip
REDUCTIONS = {
    "arith.addf": ("spyre.sum", 0.0),
    "arith.addi": ("spyre.sum", 0.0),
    "arith.maxnumf": ("spyre.reduce_max", -math.inf),
    "arith.maximumf": ("spyre.reduce_max", -math.inf),
    "arith.minnumf": ("spyre.reduce_min", math.inf),
    "arith.minimumf": ("spyre.reduce_min", math.inf),
}
"""linalg.reduce combiners: the tile reduction and its identity."""


def element_of(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, TensorType) else t


def shape_of(t: Attribute) -> tuple[int, ...]:
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate((1,) * (rank - len(s)) + tuple(s)):
            if d != 1:
                out[i] = d
    return tuple(out)


def same_layout(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether two LX shapes hold their elements alike: equal but for leading unit dims
    (`1024` and `1x1024`: the same sticks in the same order), so a tile op may take
    one where the other is written, and a reshape between them moves nothing."""

    def strip(s: tuple[int, ...]) -> tuple[int, ...]:
        i = 0
        while i < len(s) - 1 and s[i] == 1:
            i += 1
        return s[i:]

    return strip(a) == strip(b)


def scalar_attr(value: float, element: Attribute) -> Attribute:
    if isinstance(element, AnyFloat):
        return FloatAttr(float(value), f64)
    return IntegerAttr(int(value), i64)


class TileMath:
    """Tile compute for one kernel; `lw` allocates buffers and emits ops."""

    def __init__(self, lw: KernelLowering):
        self.lw = lw
        self.constants: dict[tuple[float, Attribute], Buf] = {}

    # ------------------------------------------------------------ operands

    def constant_buffer(self, value: float, element: Attribute) -> Buf:
        """A one-element buffer holding `value`, filled once at the kernel's top."""
        key = (value if not math.isnan(value) else "nan", element)
        if key not in self.constants:
            buf = self.lw.alloc((1,), element, at_top=True)
            self.lw.emit_at_top(
                D.ComputeOp("spyre.full", [], [buf], {"value": scalar_attr(value, element)})
            )
            self.constants[key] = Buf(buf, ())
        return self.constants[key]

    def operand(self, x: object, op: Operation) -> Buf:
        """An LX buffer standing for `x` in an elementwise op (broadcasting)."""
        if isinstance(x, Buf):
            return x
        if isinstance(x, Lazy):
            if isinstance(x.source, Scalar):
                return self.constant_buffer(x.source.value, x.element)
            return x.source
        if isinstance(x, Scalar):
            return self.constant_buffer(x.value, x.type)
        raise LoweringError(f"'{op.name}': operand is not a tensor or scalar", op)

    def materialize(
        self, x: object, shape: tuple[int, ...], element: Attribute, op: Operation, into=None
    ) -> Buf:
        """`x` as a full buffer of `shape` (into `into` when given)."""
        if isinstance(x, Buf) and into is None and x.lx_shape == shape:
            return x
        out = into if into is not None else self.lw.alloc(shape, element)
        lx_shape = tuple(out.type.get_shape())
        if isinstance(x, Lazy | Scalar) and isinstance(getattr(x, "source", x), Scalar):
            value = (x.source if isinstance(x, Lazy) else x).value
            self.lw.emit(
                D.ComputeOp("spyre.full", [], [out], {"value": scalar_attr(value, element)})
            )
            return Buf(out, shape)
        src = self.operand(x, op)
        if src.lx_shape == lx_shape:
            kind, attrs = ("spyre.cast", {}) if src.element != element else ("spyre.reshape", {})
        elif math.prod(src.lx_shape) == math.prod(lx_shape):
            kind, attrs = "spyre.reshape", {}
        else:
            kind, attrs = "spyre.broadcast_to", {}
        self.lw.emit(D.ComputeOp(kind, [src.value], [out], attrs))
        return Buf(out, shape)

    def aligned(self, bufs: list[Buf], shape: tuple[int, ...], op: Operation) -> list[Buf]:
        """Buffers whose LX shapes broadcast like their KTIR shapes: a full-size buffer
        in another layout is reshaped to the layout of the others."""
        full = [b for b in bufs if math.prod(b.lx_shape) == math.prod(shape) and b.shape]
        if not full:
            return bufs
        target = full[0].lx_shape
        out = []
        for b in bufs:
            if b in full and not same_layout(b.lx_shape, target):
                out.append(self.materialize(b, target, b.element, op))
            else:
                out.append(b)
        return out

    # ------------------------------------------------------------ ops

    def elementwise(self, op: Operation, kind: str, args: list[object], dest=None) -> Buf | Scalar:
        result_type = op.results[0].type
        shape, element = shape_of(result_type), element_of(result_type)
        if all(isinstance(a, Scalar) for a in args):
            return self.fold(op, args)
        if self.lw.body_shape is not None:  # an op of a linalg.generic body, on whole tiles
            shape = self.lw.body_shape
        bufs = self.aligned([self.operand(a, op) for a in args], shape, op)
        lx = broadcast([b.lx_shape for b in bufs])
        if math.prod(lx) != math.prod(shape):
            lx = shape
        fits = (
            dest is not None
            and tuple(dest.type.get_shape()) == lx
            and dest.type.element_type == element
        )
        out = dest if fits else self.lw.alloc(lx, element)
        self.lw.emit(D.ComputeOp(kind, [b.value for b in bufs], [out]))
        return Buf(out, shape)

    def fold(self, op: Operation, args: list[object]) -> Scalar:
        import numpy as np

        from spyre_ir.interp import ktir_ops

        fn = ktir_ops.ELEMENTWISE.get(op.name)
        if fn is None:
            raise LoweringError(f"'{op.name}' on scalars is not supported", op)
        values = [np.array([a.value], dtype=ktir_ops.dtype_of(a.type)) for a in args]  # type: ignore[union-attr]
        out = ktir_ops.apply(fn, op, values)
        return Scalar(out.item(), op.results[0].type)

    def reduce(self, op: Operation, x: object, init: object) -> Buf:
        from spyre_ir.interp.ktir_ops import combiner_name

        name = combiner_name(op.region.block)  # type: ignore[attr-defined]
        if name not in REDUCTIONS:
            raise LoweringError(
                f"'{op.name}' with a combiner other than one add/max/min is not supported", op
            )
        kind, identity = REDUCTIONS[name]
        src = self.operand(x, op)
        dims = [int(d) for d in op.dimensions.get_values()]  # type: ignore[attr-defined]
        if src.lx_shape != src.shape:
            src = self.materialize(src, src.shape, src.element, op)
        lx = tuple(1 if i in dims else d for i, d in enumerate(src.shape))
        out_shape = shape_of(op.results[0].type)
        out = self.lw.alloc(lx, src.element)
        self.lw.emit(
            D.ComputeOp(kind, [src.value], [out], {"dims": D.dense(dims), "keepdim": _unit()})
        )
        result = Buf(out, out_shape)
        if self.is_identity(init, identity, name):
            return result
        combine = {"spyre.sum": "spyre.add", "spyre.reduce_max": "spyre.max"}.get(kind, "spyre.min")
        both = [self.operand(init, op), result]
        out2 = self.lw.alloc(lx, src.element)
        self.lw.emit(D.ComputeOp(combine, [b.value for b in both], [out2]))
        return Buf(out2, out_shape)

    @staticmethod
    def is_identity(init: object, identity: float, combiner: str) -> bool:
        source = init.source if isinstance(init, Lazy) else init
        if not isinstance(source, Scalar):
            return False
        value = source.value
        if math.isnan(value):  # maxnumf/minnumf ignore NaN: it acts as the identity
            return combiner in ("arith.maxnumf", "arith.minnumf")
        return value == identity

    def matmul(self, op: Operation, a: object, b: object, init: object) -> Buf:
        shape = shape_of(op.results[0].type)
        element = element_of(op.results[0].type)
        bufs = [
            self.materialize(v, shape_of(t.type), element_of(t.type), op)
            for v, t in ((a, op.operands[0]), (b, op.operands[1]))
        ]
        out = self.lw.alloc(shape, element)
        self.lw.emit(D.ComputeOp("spyre.matmul", [x.value for x in bufs], [out]))
        result = Buf(out, shape)
        source = init.source if isinstance(init, Lazy) else init
        if init is None or (isinstance(source, Scalar) and source.value == 0):
            return result
        total = self.lw.alloc(shape, element)
        self.lw.emit(D.ComputeOp("spyre.add", [self.operand(init, op).value, out], [total]))
        return Buf(total, shape)


def _unit() -> Attribute:
    from xdsl.dialects.builtin import UnitAttr

    return UnitAttr()


def is_integer(t: Attribute) -> bool:
    return isinstance(element_of(t), IntegerType)
