"""The upstream ops of KTIR kernels for the KTIR interpreter (spyre_ir/interp/ktir.py):
arith and math elementwise on numpy arrays with a leading tile axis, tensor and linalg
ops on tiles. Float ops compute in float32 and round to the result type, as one
rounding per op; matmuls and reductions accumulate in float32."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Operation

from spyre_ir.interp.numerics import storage_dtype

if TYPE_CHECKING:
    from spyre_ir.interp.ktir import Interpreter


def dtype_of(t: Attribute) -> np.dtype:
    """numpy dtype of a scalar or tensor type (index as int64)."""
    element = t.element_type if isinstance(t, TensorType) else t
    if isinstance(element, IndexType):
        return np.dtype(np.int64)
    if isinstance(element, IntegerType) and element.width.data == 1:
        return np.dtype(bool)
    return storage_dtype(element)


_F = np.float32

ELEMENTWISE: dict[str, Callable[..., np.ndarray]] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.negf": np.negative,
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
    "arith.divsi": lambda a, b: np.trunc(a / b).astype(a.dtype),
    "arith.divui": np.floor_divide,
    "arith.floordivsi": np.floor_divide,
    "arith.ceildivsi": lambda a, b: -np.floor_divide(-a, b),
    "arith.ceildivui": lambda a, b: -np.floor_divide(-a, b),
    "arith.remsi": np.fmod,
    "arith.remui": np.mod,
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.maxui": np.maximum,
    "arith.minui": np.minimum,
    "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or,
    "arith.xori": np.bitwise_xor,
    "arith.select": lambda c, a, b: np.where(c, a, b),
    "arith.index_cast": lambda a: a,
    "arith.index_castui": lambda a: a,
    "arith.sitofp": lambda a: a,
    "arith.uitofp": lambda a: a,
    "arith.fptosi": np.trunc,
    "arith.fptoui": np.trunc,
    "arith.extf": lambda a: a,
    "arith.truncf": lambda a: a,
    "arith.extsi": lambda a: a,
    "arith.extui": lambda a: a,
    "arith.trunci": lambda a: a,
    "math.exp": np.exp,
    "math.exp2": np.exp2,
    "math.log": np.log,
    "math.log2": np.log2,
    "math.sqrt": np.sqrt,
    "math.rsqrt": lambda a: 1 / np.sqrt(a),
    "math.tanh": np.tanh,
    "math.absf": np.abs,
    "math.absi": np.abs,
    "math.sin": np.sin,
    "math.cos": np.cos,
    "math.floor": np.floor,
    "math.ceil": np.ceil,
    "math.powf": np.power,
    "math.erf": None,  # filled below (numpy has no erf)
}

_CMP = {
    "eq": np.equal,
    "ne": np.not_equal,
    "slt": np.less,
    "sle": np.less_equal,
    "sgt": np.greater,
    "sge": np.greater_equal,
    "ult": np.less,
    "ule": np.less_equal,
    "ugt": np.greater,
    "uge": np.greater_equal,
    "oeq": np.equal,
    "one": np.not_equal,
    "olt": np.less,
    "ole": np.less_equal,
    "ogt": np.greater,
    "oge": np.greater_equal,
    "ueq": np.equal,
    "une": np.not_equal,
}


def _erf(a: np.ndarray) -> np.ndarray:
    from spyre_ir.interp.numerics import erf

    return erf(a)


ELEMENTWISE["math.erf"] = _erf
ELEMENTWISE["arith.cmpi"] = ELEMENTWISE["arith.cmpf"] = lambda a, b: (a, b)  # see apply


def rounded(value, out: np.dtype, round16: Callable | None) -> np.ndarray:
    """`value` in dtype `out`; f16 through `round16` first when given (the card's
    DLFloat16 rounding, see Interpreter)."""
    if out == np.float16 and round16 is not None:
        return round16(np.asarray(value, np.float32))
    return np.asarray(value).astype(out)


def apply(fn: Callable[..., np.ndarray], op: Operation, args: list, round16=None) -> np.ndarray:
    """`fn` on the operands, computed in float32 for floats, cast to the result type."""
    out = dtype_of(op.results[0].type)
    arrays = [np.asarray(a) for a in args]
    if op.name in ("arith.cmpi", "arith.cmpf"):
        predicate = op.predicate.value.data  # type: ignore[attr-defined]
        names = (
            arith.CMPI_COMPARISON_OPERATIONS
            if op.name == "arith.cmpi"
            else arith.CMPF_COMPARISON_OPERATIONS
        )
        return _CMP[names[predicate]](*(_wide(a) for a in arrays))
    with np.errstate(all="ignore"):
        value = fn(*(_wide(a) for a in arrays))
    return rounded(value, out, round16)


def _wide(a: np.ndarray) -> np.ndarray:
    return a.astype(_F) if a.dtype == np.float16 else a


# ---------------------------------------------------------------- tensors and linalg


def constant(it: Interpreter, op: arith.ConstantOp) -> list:
    value, t = op.value, op.result.type
    if isinstance(value, DenseIntOrFPElementsAttr):
        shape = tuple(t.get_shape())
        data = np.array(value.get_values(), dtype=dtype_of(t))
        return [
            np.broadcast_to(data, shape).copy()[None]
            if data.size == 1
            else data.reshape((1, *shape))
        ]
    if isinstance(value, IntegerAttr):
        v = value.value.data
        if not -(2**63) <= v < 2**64:
            raise _error(op, f"the integer {v} does not fit in 64 bits")
        v -= 2**64 if v >= 2**63 else 0  # an unsigned 64-bit constant: its bits
        return [np.array([v], dtype=np.int64).astype(dtype_of(t))]
    if isinstance(value, FloatAttr):
        return [np.array([value.value.data], dtype=dtype_of(t))]
    raise KeyError(op.name)


def bitcast(it: Interpreter, op: arith.BitcastOp) -> list:
    """The same bits read as the result type (`0xFF800000 : i32` to f32 is -inf)."""
    bits = np.asarray(it.get(op.input)).astype(dtype_of(op.input.type))
    return [bits.view(dtype_of(op.result.type))]


def index(it: Interpreter, op: linalg.IndexOp) -> list:
    """The position along a dim of the enclosing generic's iteration space."""
    shape = it.body_shape
    d = op.dim.value.data
    along = [1, *(n if k == d else 1 for k, n in enumerate(shape))]
    return [np.arange(shape[d], dtype=np.int64).reshape(along)]


def splat(it: Interpreter, op: tensor.SplatOp) -> list:
    v = np.asarray(it.get(op.input))
    shape = tuple(op.result.type.get_shape())
    return [np.broadcast_to(v.reshape(v.shape + (1,) * len(shape)), v.shape + shape).copy()]


def extract(it: Interpreter, op: tensor.ExtractOp) -> list:
    t = np.asarray(it.get(op.tensor))
    idx = [np.asarray(it.get(i), np.int64) for i in op.indices]
    tiles = np.arange(t.shape[0]) if t.shape[0] > 1 else np.zeros(1, np.int64)
    n = max([t.shape[0], *(i.shape[0] for i in idx)])
    return [
        t[
            (
                np.broadcast_to(tiles, n) if t.shape[0] > 1 else 0,
                *(np.broadcast_to(i, n) for i in idx),
            )
        ]
    ]


def empty(it: Interpreter, op: tensor.EmptyOp) -> list:
    return [np.zeros((1, *op.tensor.type.get_shape()), dtype_of(op.tensor.type))]


def reshape(it: Interpreter, op: Operation) -> list:
    v = np.asarray(it.get(op.operands[0]))
    return [v.reshape((v.shape[0], *op.results[0].type.get_shape()))]


def _static_slice(op: Operation) -> tuple[slice, ...]:
    """The slice of a tensor.extract_slice / insert_slice with static offsets, sizes
    and strides (dynamic ones are refused)."""
    if op.offsets or op.sizes or op.strides:  # type: ignore[attr-defined]
        raise _unsupported(op, f"'{op.name}' with dynamic offsets, sizes or strides")
    offsets, sizes, strides = (
        op.static_offsets.get_values(),  # type: ignore[attr-defined]
        op.static_sizes.get_values(),  # type: ignore[attr-defined]
        op.static_strides.get_values(),  # type: ignore[attr-defined]
    )
    return tuple(slice(o, o + n * s, s) for o, n, s in zip(offsets, sizes, strides))


def extract_slice(it: Interpreter, op: Operation) -> list:
    v = np.asarray(it.get(op.operands[0]))
    part = v[(slice(None), *_static_slice(op))]
    result = op.results[0].type
    if part[0].size != math.prod(result.get_shape()):  # type: ignore[attr-defined]
        raise _error(op, f"a slice of shape {list(part.shape[1:])} does not make {result}")
    return [part.reshape((v.shape[0], *op.results[0].type.get_shape())).copy()]


def insert_slice(it: Interpreter, op: Operation) -> list:
    src = np.asarray(it.get(op.operands[0]))
    dest = np.asarray(it.get(op.operands[1]))
    tiles = max(src.shape[0], dest.shape[0])  # either may be one row for all tiles
    dest = np.broadcast_to(dest, (tiles, *dest.shape[1:])).copy()
    at = (slice(None), *_static_slice(op))
    dest[at] = src.reshape(dest[at].shape)
    return [dest]


def matmul(it: Interpreter, op: linalg.MatmulOp) -> list:
    a, b = (np.asarray(it.get(v)).astype(_F) for v in op.inputs)
    c = np.asarray(it.get(op.outputs[0])).astype(_F)
    return [rounded(c + np.matmul(a, b), dtype_of(op.results[0].type), it.round16)]


_REDUCERS = {
    "arith.addf": np.add,
    "arith.addi": np.add,
    "arith.mulf": np.multiply,
    "arith.maxnumf": np.fmax,
    "arith.maximumf": np.maximum,
    "arith.maxsi": np.maximum,
    "arith.minnumf": np.fmin,
    "arith.minimumf": np.minimum,
    "arith.minsi": np.minimum,
}


# Predicate numbers (xDSL's, as MLIR's) of the orderings a compare-and-select max or
# min uses: True for "greater", False for "less".
_ORDERINGS = {
    "arith.cmpf": {2: True, 3: True, 9: True, 10: True, 4: False, 5: False, 11: False, 12: False},
    "arith.cmpi": {4: True, 5: True, 8: True, 9: True, 2: False, 3: False, 6: False, 7: False},
}


def combiner_name(block) -> str | None:
    """The op of a one-op combiner body `(in, acc) -> op(in, acc)`, or None. A
    compare-and-select body, `select(cmpf ogt(a, b), a, b)` (a max written out), is
    named as the max or min it computes."""
    ops = list(block.ops)
    # A combiner of tensors (an inter-tile reduce's) may write a named linalg op into a
    # tensor.empty: `linalg.add ins(%lhs, %rhs) outs(%empty)` is an arith.addf.
    if len(ops) == 3 and ops[0].name == "tensor.empty" and ops[1].name in NAMED_ELEMENTWISE:
        named = ops[1]
        if (
            set(named.inputs) == set(block.args)  # type: ignore[attr-defined]
            and tuple(named.outputs) == tuple(ops[0].results)  # type: ignore[attr-defined]
            and tuple(ops[2].operands) == tuple(named.results)
        ):
            return NAMED_ELEMENTWISE[named.name]
        return None
    if (
        len(ops) == 2
        and set(ops[0].operands) == set(block.args)
        and tuple(ops[1].operands) == tuple(ops[0].results)
    ):
        return ops[0].name
    if len(ops) != 3 or ops[0].name not in _ORDERINGS or ops[1].name != "arith.select":
        return None
    cmp, select, done = ops
    a, b = cmp.operands
    greater = _ORDERINGS[cmp.name].get(cmp.predicate.value.data)
    if (
        greater is None
        or {a, b} != set(block.args)
        or select.operands[0] != cmp.results[0]
        or tuple(done.operands) != tuple(select.results)
    ):
        return None
    if tuple(select.operands[1:]) == (b, a):
        greater = not greater  # picks the other one: the opposite extreme
    elif tuple(select.operands[1:]) != (a, b):
        return None
    return "arith.maximumf" if greater else "arith.minimumf"


def reduce(it: Interpreter, op: linalg.ReduceOp) -> list:
    x = np.asarray(it.get(op.input))
    init = np.asarray(it.get(op.init))
    axes = tuple(int(d) + 1 for d in op.dimensions.get_values())
    out = dtype_of(op.result[0].type)
    name = combiner_name(op.region.block)
    if name in _REDUCERS:
        ufunc = _REDUCERS[name]
        folded = ufunc.reduce(_wide(x), axis=axes)
        return [rounded(ufunc(_wide(init), folded), out, it.round16)]
    acc = init
    moved = np.moveaxis(x, axes, tuple(range(x.ndim - len(axes), x.ndim)))
    flat = moved.reshape(moved.shape[: x.ndim - len(axes)] + (-1,))
    for k in range(flat.shape[-1]):
        acc = np.asarray(it.run_block(op.region.block, [flat[..., k], acc])[0])
    return [acc.astype(out)]


def generic(it: Interpreter, op: linalg.GenericOp) -> list:
    """Parallel generics with projected-permutation maps: the body on whole arrays."""
    kinds = [str(k.data) for k in op.iterator_types.data]
    if any(k != "parallel" for k in kinds):
        raise _unsupported(op, "linalg.generic with reduction iterators")
    out_shape = tuple(op.outputs[0].type.get_shape())
    args = []
    for value, m in zip([*op.inputs, *op.outputs], op.indexing_maps.data):
        arr = np.asarray(it.get(value))
        dims = [r.position for r in m.data.results]  # type: ignore[attr-defined]
        order = np.argsort(dims)
        arr = np.transpose(arr, (0, *(1 + order)))
        expand = [slice(None)] + [slice(None) if d in dims else None for d in range(len(kinds))]
        args.append(arr[tuple(expand)])
    n = max(a.shape[0] for a in args)
    # Per-tile scalars from outside the body meet its elements along the tile dim.
    outer: dict = {}
    for inner in op.body.walk():
        for v in inner.operands:
            x = it.env.get(v)
            if not isinstance(v.type, TensorType) and isinstance(x, np.ndarray) and x.ndim == 1:
                outer.setdefault(v, x)
    for v, x in outer.items():
        it.env[v] = x.reshape((x.shape[0], *(1,) * len(kinds)))
    enclosing, it.body_shape = it.body_shape, out_shape
    try:
        results = it.run_block(op.body.block, args)
    finally:
        it.env.update(outer)
        it.body_shape = enclosing
    # A per-tile scalar of the body (the tile id) makes results per tile even when every
    # operand is one row for all tiles.
    n = max([n, *(np.asarray(r).shape[0] for r in results if np.ndim(r) > len(out_shape))])
    return [
        np.broadcast_to(np.asarray(r), (n, *out_shape)).astype(dtype_of(o.type)).copy()
        for r, o in zip(results, op.outputs)
    ]


def fill(it: Interpreter, op: linalg.FillOp) -> list:
    v = np.asarray(it.get(op.inputs[0]))
    shape = tuple(op.outputs[0].type.get_shape())
    return [
        np.broadcast_to(v.reshape(v.shape + (1,) * len(shape)), v.shape + shape).astype(
            dtype_of(op.outputs[0].type)
        )
    ]


NAMED_ELEMENTWISE = {
    "linalg.add": "arith.addf",
    "linalg.sub": "arith.subf",
    "linalg.mul": "arith.mulf",
    "linalg.max": "arith.maximumf",
    "linalg.min": "arith.minimumf",
    "linalg.exp": "math.exp",
    "linalg.log": "math.log",
    "linalg.sqrt": "math.sqrt",
}
"""linalg's named elementwise ops, as the arith / math op they apply."""


def named_elementwise(it: Interpreter, op: Operation) -> list:
    name = NAMED_ELEMENTWISE[op.name]
    ins = [np.asarray(it.get(v)) for v in op.inputs]  # type: ignore[attr-defined]
    with np.errstate(all="ignore"):
        value = ELEMENTWISE[name](*(_wide(a) for a in ins))
    return [rounded(value, dtype_of(op.results[0].type), it.round16)]


def transpose(it: Interpreter, op: linalg.TransposeOp) -> list:
    v = np.asarray(it.get(op.inputs[0]))
    perm = [int(p) for p in op.permutation.get_values()]
    return [np.transpose(v, (0, *(p + 1 for p in perm)))]


def broadcast(it: Interpreter, op: linalg.BroadcastOp) -> list:
    v = np.asarray(it.get(op.input))
    shape = tuple(op.init.type.get_shape())
    for d in sorted(int(d) for d in op.dimensions.get_values()):
        v = np.expand_dims(v, d + 1)
    return [np.broadcast_to(v, (v.shape[0], *shape)).copy()]


def _error(op: Operation, message: str):
    from spyre_ir.interp.ktir import KtirError

    return KtirError(f"'{op.name}': {message}", op)


def _unsupported(op: Operation, what: str):
    from spyre_ir.interp.ktir import KtirError

    return KtirError(f"{what} is not supported by the KTIR interpreter", op)


TENSOR_HANDLERS: dict[type, Callable] = {
    arith.ConstantOp: constant,
    arith.BitcastOp: bitcast,
    linalg.IndexOp: index,
    tensor.SplatOp: splat,
    tensor.ExtractOp: extract,
    tensor.EmptyOp: empty,
    tensor.ExpandShapeOp: reshape,
    tensor.CollapseShapeOp: reshape,
    tensor.ExtractSliceOp: extract_slice,
    tensor.InsertSliceOp: insert_slice,
    linalg.MatmulOp: matmul,
    linalg.ReduceOp: reduce,
    linalg.GenericOp: generic,
    linalg.FillOp: fill,
    linalg.TransposeOp: transpose,
    linalg.BroadcastOp: broadcast,
    **dict.fromkeys(
        (
            linalg.AddOp,
            linalg.SubOp,
            linalg.MulOp,
            linalg.MaxOp,
            linalg.MinOp,
            linalg.ExpOp,
            linalg.LogOp,
            linalg.SqrtOp,
        ),
        named_elementwise,
    ),
}
