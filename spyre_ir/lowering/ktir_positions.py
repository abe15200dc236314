"""Element positions in `linalg.generic` bodies (part of the KTIR -> dataflow lowering,
spyre_ir/lowering/ktir_to_dataflow.py): `linalg.index d` is an iota tile along d of
the body's shape, and the index arithmetic a body does on it (a causal mask:
`row / 4 + pid * 2 >= j * 16 + col`) runs as integer tile ops, the run-time index
scalars it mixes in (tile ids, loop counters, scalar arguments) each a one-element
tile that broadcasts."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, i1
from xdsl.ir import Operation

from spyre_ir.dialects import dataflow as D
from spyre_ir.lowering.ktir_compute import COMPARE, broadcast
from spyre_ir.lowering.ktir_values import Buf, Index, LoweringError, Scalar

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering

POSITION = IntegerType(32)
"""Positions and index arithmetic on tiles are 32-bit integers (a tile holds at most a
few million elements)."""

KINDS = {
    "arith.addi": "spyre.add", "arith.subi": "spyre.sub", "arith.muli": "spyre.mul",
    "arith.divui": "spyre.div", "arith.maxui": "spyre.max", "arith.minui": "spyre.min",
    "arith.maxsi": "spyre.max", "arith.minsi": "spyre.min",
}  # fmt: skip
"""Index ops whose tile form is exact on non-negative positions (divui floors)."""


def is_position_op(lw: KernelLowering, op: Operation) -> bool:
    """An index op of a generic body with a position tile among its operands."""
    if lw.body_shape is None:
        return False
    if not op.name.startswith("arith.") or not op.results:
        return False
    if not isinstance(op.results[0].type, IndexType | IntegerType):
        return False
    return any(isinstance(lw.env.get(v), Buf) for v in op.operands)


def linalg_index(lw: KernelLowering, op: Operation) -> Buf:
    if lw.body_shape is None:
        raise LoweringError("'linalg.index' outside a linalg.generic body", op)
    shape = lw.body_shape
    dim = op.dim.value.data  # type: ignore[attr-defined]
    out = lw.alloc(shape, POSITION)
    attrs = {"dim": IntegerAttr(dim, 64), "start": IntegerAttr(0, 64), "step": IntegerAttr(1, 64)}
    lw.emit(D.ComputeOp("spyre.iota", [], [out], attrs))
    return Buf(out, shape)


def index_tile(lw: KernelLowering, x: Index) -> Buf | Scalar:
    """A run-time index as a one-element tile: an iota of one element started at it
    (a constant stays a scalar, filled once)."""
    if x.const is not None:
        return Scalar(float(x.const), POSITION)
    assert x.value is not None
    out = lw.alloc((1,), POSITION)
    attrs = {"dim": IntegerAttr(0, 64), "start": IntegerAttr(0, 64), "step": IntegerAttr(1, 64)}
    lw.emit(D.ComputeOp("spyre.iota", [], [out], attrs, offsets=[x.value]))
    return Buf(out, ())


def position_op(lw: KernelLowering, op: Operation) -> Buf:
    """The index op on whole tiles of the body's shape."""
    shape = lw.body_shape
    assert shape is not None
    args = []
    for v in op.operands:
        x = lw.env.get(v)
        if isinstance(x, Index):
            x = index_tile(lw, x)
        args.append(x)
    if op.name == "arith.index_cast":  # index <-> integer: the same 32-bit positions
        (x,) = args
        assert isinstance(x, Buf)
        return x
    if op.name not in KINDS and op.name != "arith.cmpi":
        raise LoweringError(f"'{op.name}' on element positions is not supported", op)
    if op.name == "arith.cmpi":
        predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]  # type: ignore[attr-defined]
        kind, element = COMPARE[predicate], i1
    else:
        kind, element = KINDS[op.name], POSITION
    bufs = lw.math.aligned([lw.math.operand(a, op) for a in args], shape, op)
    lx = broadcast([b.lx_shape for b in bufs])
    if math.prod(lx) != math.prod(shape):
        lx = shape
    out = lw.alloc(lx, element)
    lw.emit(D.ComputeOp(kind, [b.value for b in bufs], [out]))
    return Buf(out, shape)
