"""A numpy interpreter for the `spyre` dialect (level L1) with torch eager semantics.

    results = run_module(module, [x, w], entry="main")

Runs `func.func @entry` of a verified module; `func.call`, `func.return` and
`arith.constant` are understood too. Each op has one vectorised numpy function in the
dispatch table `IMPLS` (op class -> function). Stick layouts on tensor types are ignored:
this level computes values only.

Tensors are numpy arrays: f16 -> float16, f32 -> float32, bf16 -> float32 holding
values rounded to bf16 (see `numerics.round_to_bf16`), i1 -> bool, i32/i64 ->
int32/int64. Numerics follow torch eager on CPU:
  * f16/bf16 elementwise ops compute in float32 and round the result once;
  * matmul, sum, mean, cumsum and softmax accumulate half inputs in float32 (cumsum
    of f32 in float64, as torch's CPU kernel does); var, layer_norm and rms_norm
    compute their statistics in float64 (in float32 for half inputs, torch's opmath);
    all round once at the end;
  * erf (and exact gelu) use Cody's rational approximations in float64
    (`numerics.erf`, ~1e-16 relative), not a per-element Python call.
Integer semantics where torch would promote to another type (our verifier keeps the
operand element type) are "compute as torch, then cast to the result type":
  * `div` is true division on floats and *floor* division on integers (torch's
    `rounding_mode="floor"`); an integer division by zero is an `InterpreterError`;
  * integer `sum`/`cumsum` accumulate in int64 and wrap to the result type;
  * i1 arithmetic (add, sub, mul, div, matmul, sum) computes in int64 and maps
    non-zero to true: add = or, sub = xor, mul = and, div = and (by false: error),
    sum = any; neg/abs/sign/relu of i1 are the identity;
  * `clamp` of an integer tensor clamps to [ceil(min), floor(max)];
  * argmax/argmin over several dims return the row-major index into those dims
    taken in ascending dim order; ties pick the first, NaN counts as the extreme.
Integer overflow wraps and float exceptions give inf/NaN silently, as in torch.
Known difference: gelu(+inf) is +inf here, NaN in torch's CPU kernel.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from spyre_ir.diagnostics import op_location
from spyre_ir.dialects import spyre as S
from spyre_ir.interp.halves import converted
from spyre_ir.interp.numerics import (
    FLOATS,
    dense_to_array,
    describe_type,
    erf,
    round_to_bf16,
    storage_dtype,
    to_storage,
)


class InterpreterError(Exception):
    """Bad arguments for a function, or an op that cannot be run (message says which)."""


Impl = Callable[..., np.ndarray]
IMPLS: dict[type[Operation], Impl] = {}


def implements(*ops: type[Operation]) -> Callable[[Impl], Impl]:
    def register(fn: Impl) -> Impl:
        for op in ops:
            IMPLS[op] = fn
        return fn

    return register


def _elt(value: SSAValue) -> str:
    return S.element_type_name(S.element_of(value))


def _compute(x: np.ndarray, name: str) -> np.ndarray:
    """Operand widened to the type torch computes in: half -> float32, i1 -> int64."""
    if name in ("f16", "bf16"):
        return converted(x, np.float32)
    if name == "i1":
        return x.astype(np.int64)
    return x


# ---------------------------------------------------------------- elementwise


def _arith(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Impl:
    def impl(op: Operation, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        name = _elt(op.results[0])
        return to_storage(fn(_compute(a, name), _compute(b, name)), name)

    return impl


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return np.true_divide(a, b)
    if np.any(b == 0):
        raise InterpreterError("integer division by zero")
    return np.floor_divide(a, b)


IMPLS.update({S.AddOp: _arith(np.add), S.SubOp: _arith(np.subtract),
              S.MulOp: _arith(np.multiply), S.DivOp: _arith(_divide),
              S.PowOp: _arith(np.power)})  # fmt: skip


def _exact(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Impl:
    """Ops exact in the storage type (bf16 values stay bf16): no widening."""
    return lambda op, a, b: fn(a, b)


IMPLS.update({S.MaxOp: _exact(np.maximum), S.MinOp: _exact(np.minimum),
              S.EqOp: _exact(np.equal), S.NeOp: _exact(np.not_equal),
              S.LtOp: _exact(np.less), S.LeOp: _exact(np.less_equal),
              S.GtOp: _exact(np.greater), S.GeOp: _exact(np.greater_equal),
              S.LogicalAndOp: _exact(np.logical_and), S.LogicalOrOp: _exact(np.logical_or),
              S.LogicalXorOp: _exact(np.logical_xor)})  # fmt: skip


def _shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch's `<<`: in two's complement (wrapping); a count < 0 or >= the width gives 0."""
    bits = a.dtype.itemsize * 8
    unsigned = np.dtype(f"u{a.dtype.itemsize}")
    shifted = np.left_shift(a.astype(unsigned), np.clip(b, 0, bits - 1).astype(unsigned))
    return np.where((b < 0) | (b >= bits), 0, shifted.astype(a.dtype)).astype(a.dtype)


def _shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """torch's `>>`: arithmetic; a count < 0 or >= the width shifts in only the sign."""
    bits = a.dtype.itemsize * 8
    count = np.where((b < 0) | (b >= bits), bits - 1, b)
    return np.right_shift(a, count.astype(a.dtype)).astype(a.dtype)


IMPLS.update({S.BitwiseAndOp: _exact(np.bitwise_and), S.BitwiseOrOp: _exact(np.bitwise_or),
              S.BitwiseXorOp: _exact(np.bitwise_xor), S.ShiftLeftOp: _exact(_shift_left),
              S.ShiftRightOp: _exact(_shift_right),
              S.BitwiseNotOp: lambda op, x: np.invert(x)})  # fmt: skip


@implements(S.SelectOp)
def _select(op: S.SelectOp, cond: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(cond, a, b)


def _exact_unary(fn: Callable[[np.ndarray], np.ndarray]) -> Impl:
    """Unary ops exact in the storage type; on i1 they are the identity."""
    return lambda op, x: x.copy() if x.dtype == np.bool_ else fn(x)


def _sign(x: np.ndarray) -> np.ndarray:
    # torch: (0 < x) - (x < 0), so sign(NaN) == 0.
    return ((x > 0).astype(np.int8) - (x < 0)).astype(x.dtype)


IMPLS.update({S.NegOp: _exact_unary(np.negative), S.AbsOp: _exact_unary(np.abs),
              S.SignOp: _exact_unary(_sign), S.FloorOp: _exact_unary(np.floor),
              S.ReluOp: _exact_unary(lambda x: np.maximum(x, x.dtype.type(0))),
              S.CeilOp: _exact_unary(np.ceil), S.RoundOp: _exact_unary(np.rint),
              S.LogicalNotOp: lambda op, x: np.logical_not(x)})  # fmt: skip


def _float_unary(fn: Callable[[np.ndarray], np.ndarray]) -> Impl:
    def impl(op: Operation, x: np.ndarray) -> np.ndarray:
        name = _elt(op.results[0])
        return to_storage(fn(_compute(x, name)), name)

    return impl


IMPLS.update({
    S.ExpOp: _float_unary(np.exp), S.LogOp: _float_unary(np.log),
    S.SqrtOp: _float_unary(np.sqrt), S.RsqrtOp: _float_unary(lambda x: 1 / np.sqrt(x)),
    S.ReciprocalOp: _float_unary(lambda x: 1 / x), S.TanhOp: _float_unary(np.tanh),
    S.SigmoidOp: _float_unary(lambda x: 1 / (1 + np.exp(-x))), S.ErfOp: _float_unary(erf),
    S.Log1pOp: _float_unary(np.log1p),
    S.SiluOp: _float_unary(lambda x: x / (1 + np.exp(-x))),
    S.SinOp: _float_unary(np.sin), S.CosOp: _float_unary(np.cos),
})  # fmt: skip


@implements(S.GeluOp)
def _gelu(op: S.GeluOp, x: np.ndarray) -> np.ndarray:
    name = _elt(op.result)
    xc = _compute(x, name)
    if op.approximate_mode == "tanh":  # as torch: inner = sqrt(2/pi) * (x + 0.044715 x^3)
        inner = np.float32(math.sqrt(2 / math.pi)) * (xc + np.float32(0.044715) * xc**3)
        return to_storage(0.5 * xc * (1 + np.tanh(inner)), name)
    x64 = xc.astype(np.float64)
    return to_storage(0.5 * x64 * (1.0 + erf(x64 * math.sqrt(0.5))), name)


@implements(S.ClampOp)
def _clamp(op: S.ClampOp, x: np.ndarray) -> np.ndarray:
    name = _elt(op.result)
    lo = None if op.min is None else op.min.value.data
    hi = None if op.max is None else op.max.value.data
    xc = _compute(x, name)
    if xc.dtype.kind == "i":
        info = np.iinfo(xc.dtype)
        lo = None if lo is None else int(np.clip(math.ceil(lo), info.min, info.max))
        hi = None if hi is None else int(np.clip(math.floor(hi), info.min, info.max))
    return to_storage(np.clip(xc, lo, hi), name)


@implements(S.CastOp)
def _cast(op: S.CastOp, x: np.ndarray) -> np.ndarray:
    # astype rounds to nearest even (floats) and truncates toward zero (float -> int).
    return to_storage(x, _elt(op.result))


# ---------------------------------------------------------------- matmul


@implements(S.MatmulOp)
def _matmul(op: S.MatmulOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # np.matmul has torch.matmul's 1-D promotion and batch broadcasting.
    name = _elt(op.result)
    return to_storage(np.matmul(_compute(a, name), _compute(b, name)), name)


# ---------------------------------------------------------------- reductions


def _axes(op: S.ReductionOp) -> tuple[int, ...]:
    return tuple(sorted(op.reduced_dims))


@implements(S.SumOp)
def _sum(op: S.SumOp, x: np.ndarray) -> np.ndarray:
    name = _elt(op.result)
    acc = np.float32 if name in FLOATS else np.int64
    return to_storage(
        np.sum(_compute(x, name), axis=_axes(op), dtype=acc, keepdims=op.keepdim is not None),
        name,
    )


@implements(S.MeanOp)
def _mean(op: S.MeanOp, x: np.ndarray) -> np.ndarray:
    name = _elt(op.result)
    return to_storage(
        np.mean(
            _compute(x, name), axis=_axes(op), dtype=np.float32, keepdims=op.keepdim is not None
        ),
        name,
    )


def _extreme(fn: Callable[..., np.ndarray]) -> Impl:
    def impl(op: S.ReductionOp, x: np.ndarray) -> np.ndarray:
        if x.size == 0:
            raise InterpreterError("cannot reduce an empty tensor")
        return fn(x, axis=_axes(op), keepdims=op.keepdim is not None)

    return impl


IMPLS[S.ReduceMaxOp] = _extreme(np.max)
IMPLS[S.ReduceMinOp] = _extreme(np.min)


def _arg_extreme(fn: Callable[..., np.ndarray]) -> Impl:
    def impl(op: S.ReductionOp, x: np.ndarray) -> np.ndarray:
        axes = _axes(op)
        if any(x.shape[a] == 0 for a in axes):
            raise InterpreterError("cannot take the arg-extreme of an empty dim")
        moved = np.moveaxis(x, axes, range(x.ndim - len(axes), x.ndim))
        kept = moved.shape[: x.ndim - len(axes)]
        index = fn(moved.reshape(*kept, -1), axis=-1).astype(np.int64)
        if op.keepdim is not None:
            index = index.reshape([1 if i in axes else s for i, s in enumerate(x.shape)])
        return index

    return impl


IMPLS[S.ArgmaxOp] = _arg_extreme(np.argmax)
IMPLS[S.ArgminOp] = _arg_extreme(np.argmin)


@implements(S.VarOp)
def _var(op: S.VarOp, x: np.ndarray) -> np.ndarray:
    axes = _axes(op)
    x64 = x.astype(np.float64)
    count = math.prod(x.shape[a] for a in axes)
    centered = x64 - np.mean(x64, axis=axes, keepdims=True)
    squares = np.sum(centered * centered, axis=axes, keepdims=op.keepdim is not None)
    return to_storage(squares / max(count - op.correction_value, 0), _elt(op.result))


@implements(S.CumsumOp)
def _cumsum(op: S.CumsumOp, x: np.ndarray) -> np.ndarray:
    # torch's CPU accumulate types: double for f32, float for f16/bf16, int64 for ints.
    name = _elt(op.result)
    acc = np.float64 if name == "f32" else np.float32 if name in FLOATS else np.int64
    return to_storage(np.cumsum(x, axis=op.dim.value.data, dtype=acc), name)


# ---------------------------------------------------------------- sorting (issue 19)


def sort_order(x: np.ndarray, axis: int, descending: bool, k: int) -> np.ndarray:
    """The first `k` positions along `axis` of `x` in sorted order, stable (equal values
    in index order), NaN the largest value, as torch.sort(stable=True) orders them."""
    moved = np.moveaxis(x, axis, -1)
    if moved.dtype.kind == "f":
        nan = np.isnan(moved)
        key = np.where(nan, 0.0, moved.astype(np.float64))
        # np.lexsort sorts by its last key first: the NaN flag, then the value.
        order = np.lexsort((-key, ~nan) if descending else (key, nan), axis=-1)
    else:
        key = moved.astype(np.int64)
        order = np.argsort(~key if descending else key, axis=-1, kind="stable")
    return np.moveaxis(order[..., :k].astype(np.int64), -1, axis)


@implements(S.SortOp, S.ArgsortOp)
def _sorting(op: S.SortingOp, x: np.ndarray) -> np.ndarray:
    order = sort_order(x, op.axis, op.descending is not None, op.kept)
    return order if op.INDEX_RESULT else np.take_along_axis(x, order, axis=op.axis)


# ---------------------------------------------------------------- shape ops


@implements(S.ReshapeOp)
def _reshape(op: S.ReshapeOp, x: np.ndarray) -> np.ndarray:
    return x.reshape(S.shape_of(op.result))


@implements(S.TransposeOp)
def _transpose(op: S.TransposeOp, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, S.ints(op.perm)).copy()


@implements(S.BroadcastToOp)
def _broadcast_to(op: S.BroadcastToOp, x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x, S.shape_of(op.result)).copy()


@implements(S.SliceOp)
def _slice(op: S.SliceOp, x: np.ndarray) -> np.ndarray:
    index = tuple(map(slice, S.ints(op.starts), S.ints(op.stops), S.ints(op.steps)))
    return x[index].copy()


@implements(S.ConcatOp)
def _concat(op: S.ConcatOp, *xs: np.ndarray) -> np.ndarray:
    return np.concatenate(xs, axis=op.dim.value.data)


@implements(S.PadOp)
def _pad(op: S.PadOp, x: np.ndarray) -> np.ndarray:
    low, high = S.ints(op.low), S.ints(op.high)
    # Negative amounts crop, as torch.nn.functional.pad does.
    crop = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, lo, hi in zip(x.shape, low, high))
    value = to_storage(np.asarray(op.value.value.data), _elt(op.result))
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)]
    return np.pad(x[crop], widths, mode="constant", constant_values=value)


@implements(S.RestickifyOp)
def _restickify(op: S.RestickifyOp, x: np.ndarray) -> np.ndarray:
    # A layout change moves bytes on the device; the host values stay as they are.
    return x.copy()


@implements(S.GatherOp)
def _gather(op: S.GatherOp, table: np.ndarray, indices: np.ndarray) -> np.ndarray:
    rows = table.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        bad = indices[(indices < 0) | (indices >= rows)].flat[0]
        raise InterpreterError(f"index {bad} is out of range for a table of {rows} rows")
    return table[indices]


@implements(S.ScatterOp)
def _scatter(op: S.ScatterOp, dest: np.ndarray, indices: np.ndarray,
             source: np.ndarray) -> np.ndarray:  # fmt: skip
    out = dest.copy()
    out[scatter_positions(op.axis, dest, indices, op.no_wrap is None)] = source
    return out


def scatter_positions(dim: int, dest: np.ndarray, indices: np.ndarray, wrap: bool = True) -> tuple:
    """The index tuple that puts a scatter's sources at `indices` along `dim` (negative
    indices counted from the end if `wrap`, else out of range), checked against the
    size of `dim`."""
    size = dest.shape[dim]
    low = -size if wrap else 0
    if indices.size and (indices.min() < low or indices.max() >= size):
        bad = indices[(indices < low) | (indices >= size)].flat[0]
        raise InterpreterError(f"index {bad} is out of range for dim {dim} of size {size}")
    where: list = [slice(None)] * dest.ndim
    where[dim] = np.where(indices < 0, indices + size, indices)
    return tuple(where)


@implements(S.ScatterAddOp)
def _scatter_add(op: S.ScatterAddOp, dest: np.ndarray, indices: np.ndarray,
                 source: np.ndarray) -> np.ndarray:  # fmt: skip
    """Sums in f32 for 16-bit floats, rounded once (as the card's one-hot matmul)."""
    where = scatter_positions(op.axis, dest, indices)
    name = _elt(op.result)
    out = _compute(dest, name).copy()
    np.add.at(out, where, _compute(source, name))
    return to_storage(out, name)


# ---------------------------------------------------------------- constants


@implements(S.FullOp)
def _full(op: S.FullOp) -> np.ndarray:
    value = to_storage(np.asarray(op.scalar), _elt(op.result))
    return np.full(S.shape_of(op.result), value)


@implements(S.ConstantOp)
def _constant(op: S.ConstantOp) -> np.ndarray:
    return dense_to_array(op.value)


@implements(S.IotaOp)
def _iota(op: S.IotaOp) -> np.ndarray:
    shape = S.shape_of(op.result)
    (dim,) = S.shape_rules.normalize_dims([op.dim.value.data], len(shape))
    return iota_values(shape, dim, op.start.value.data, op.step.value.data, _elt(op.result))


def iota_values(
    shape: Sequence[int], dim: int, start: int | np.ndarray, step: int, name: str
) -> np.ndarray:
    """`start + step * index along dim` in the storage of element type `name`. `start`
    may be an int64 array broadcasting against `shape` (a per-core first value)."""
    along = [1] * len(shape)
    along[dim] = shape[dim]
    line = step * np.arange(shape[dim], dtype=np.int64).reshape(along)
    values = np.broadcast_to(np.asarray(start, dtype=np.int64) + line, shape)
    return to_storage(values, name).copy()


# ---------------------------------------------------------------- composites


@implements(S.SoftmaxOp)
def _softmax(op: S.SoftmaxOp, x: np.ndarray) -> np.ndarray:
    name = _elt(op.result)
    axis = op.dim.value.data
    xc = _compute(x, name)
    e = np.exp(xc - np.max(xc, axis=axis, keepdims=True))
    return to_storage(e / np.sum(e, axis=axis, keepdims=True), name)


@implements(S.AttentionOp)
def _attention(op: S.AttentionOp, q: np.ndarray, k: np.ndarray, v: np.ndarray,
               mask: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Scores, softmax and the sum over keys in float32 (what the CPU decomposition of
    scaled_dot_product_attention computes); key/value head i // group for query head i."""
    wide = np.float32
    g = op.group_size
    qc = q.astype(wide)
    kc, vc = (np.repeat(x.astype(wide), g, axis=1) for x in (k, v))
    scores = np.matmul(qc, np.swapaxes(kc, -1, -2)) * wide(op.scale.value.data)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    if op.causal_offset is not None:
        s, t = scores.shape[-2:]
        keep = np.arange(t)[None, :] <= np.arange(s)[:, None] + op.causal_offset.value.data
        scores = np.where(keep, scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - top)
        p = e / np.sum(e, axis=-1, keepdims=True)
    if op.zero_masked_rows is not None:
        p = np.where(np.isneginf(top), 0.0, p)
    return to_storage(np.matmul(p, vc), _elt(op.result))


def _norm_dtype(name: str) -> type:
    # torch's "opmath": half inputs (and the card, which accumulates in fp32) compute
    # norms in float32; float32 inputs get float64 statistics, as torch's CPU kernels.
    return np.float32 if name in ("f16", "bf16") else np.float64


def _affine(y: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None) -> np.ndarray:
    if weight is not None:
        y = y * weight.astype(y.dtype)
    if bias is not None:
        y = y + bias.astype(y.dtype)
    return y


@implements(S.LayerNormOp)
def _layer_norm(op: S.LayerNormOp, *operands: np.ndarray) -> np.ndarray:
    x, weight, bias = _norm_operands(op, operands)
    axes = tuple(range(x.ndim - op.axes_count, x.ndim))
    xc = x.astype(_norm_dtype(_elt(op.result)))
    centered = xc - np.mean(xc, axis=axes, keepdims=True)
    var = np.mean(centered * centered, axis=axes, keepdims=True)
    y = centered / np.sqrt(var + op.eps.value.data)
    return to_storage(_affine(y, weight, bias), _elt(op.result))


@implements(S.RmsNormOp)
def _rms_norm(op: S.RmsNormOp, *operands: np.ndarray) -> np.ndarray:
    x, weight, _ = _norm_operands(op, operands)
    xc = x.astype(_norm_dtype(_elt(op.result)))
    ms = np.mean(xc * xc, axis=-1, keepdims=True)
    y = xc / np.sqrt(ms + op.eps.value.data, dtype=xc.dtype)
    return to_storage(_affine(y, weight, None), _elt(op.result))


def _norm_operands(
    op: S.NormOp, operands: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Input, weight and bias picked by SSA value (robust to operand order)."""
    by_value = dict(zip(op.operands, operands))
    pick = lambda v: None if v is None else by_value[v]  # noqa: E731
    return by_value[op.input], pick(op.weight), pick(getattr(op, "bias", None))


# ---------------------------------------------------------------- upstream ops


@implements(arith.ConstantOp)
def _arith_constant(op: arith.ConstantOp) -> np.ndarray:
    value = op.value
    if isinstance(value, DenseIntOrFPElementsAttr):
        return dense_to_array(value)
    if isinstance(value, (IntegerAttr, FloatAttr)):
        return np.asarray(value.value.data)
    raise InterpreterError(f"unsupported constant {value}")


# ---------------------------------------------------------------- driver


def op_label(op: Operation) -> str:
    """`file:line:col: 'op.name'` (or just `'op.name'` when unlocated), for messages."""
    file, line, col = op_location(op, "<unknown>")
    return f"{file}:{line}:{col}: '{op.name}'" if line else f"'{op.name}'"


def make_op(
    op_class: type[Operation],
    operand_types: Sequence[Attribute],
    result_types: Sequence[Attribute],
    properties: dict[str, Attribute],
) -> Operation:
    """A detached instance of an L1 op class, its operands block arguments of the given
    types: what `apply_op` needs to run the op's implementation outside a module (the
    L2 interpreter applies tile ops this way). Not verified."""
    block = Block(arg_types=list(operand_types))
    return op_class.create(
        operands=list(block.args), result_types=list(result_types), properties=properties
    )


def apply_op(op: Operation, operands: Sequence[np.ndarray]) -> np.ndarray:
    """Run `op`'s implementation from `IMPLS` on arrays; errors become located
    `InterpreterError`s. The op may be detached (see `make_op`)."""
    impl = IMPLS.get(type(op))
    if impl is None:
        raise InterpreterError(f"{op_label(op)}: the tensor interpreter cannot run this op")
    try:
        return np.asarray(impl(op, *operands))
    except InterpreterError as error:
        raise InterpreterError(f"{op_label(op)}: {error}") from None
    except (ValueError, TypeError, IndexError, MemoryError) as error:
        raise InterpreterError(f"{op_label(op)}: {error}") from None


def _functions(op: Operation) -> Iterator[func.FuncOp]:
    """The functions under `op`, without walking their bodies (a function holds no
    function; an L3 body holds thousands of ops, and a launch looks this up each time)."""
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                if isinstance(child, func.FuncOp):
                    yield child
                else:
                    yield from _functions(child)


class _Interpreter:
    """Runs functions op by op; subclasses (the L2 interpreter) extend `run_op` and
    `TERMINATORS`."""

    TERMINATORS: tuple[type[Operation], ...] = (func.ReturnOp,)

    def __init__(self, module: ModuleOp):
        self.funcs = {f.sym_name.data: f for f in _functions(module)}
        self.active: list[str] = []

    def lookup(self, name: str) -> func.FuncOp:
        fn = self.funcs.get(name)
        if fn is None:
            known = ", ".join(f"@{n}" for n in self.funcs) or "none"
            raise InterpreterError(f"no function @{name} in the module (functions: {known})")
        if not fn.body.blocks:
            raise InterpreterError(f"@{name} is a declaration without a body")
        return fn

    def call(self, name: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        fn = self.lookup(name)
        if name in self.active:
            raise InterpreterError(f"@{name} calls itself; recursion cannot terminate here")
        self.active.append(name)
        try:
            return self.run_block(fn.body.block, args, f"@{name} has no func.return")
        finally:
            self.active.pop()

    def run_block(self, block: Block, args: Sequence[object], missing: str) -> list:
        """Run the ops of `block` with its arguments bound to `args`; returns the operands
        of its terminator (`missing` is the error when there is none)."""
        values: dict[SSAValue, object] = dict(zip(block.args, args))
        for op in block.ops:
            operands = [values[v] for v in op.operands]
            if isinstance(op, self.TERMINATORS):
                return operands
            results = self.run_op(op, operands)
            values.update(zip(op.results, results))
        raise InterpreterError(missing)

    def run_op(self, op: Operation, operands: list) -> list:
        if isinstance(op, func.CallOp):
            return self.call(op.callee.root_reference.data, operands)
        result = apply_op(op, operands)
        check_value(result, op.results[0].type, f"{op_label(op)}: result (interpreter bug)")
        return [result]

    def take_argument(self, value: object, t: Attribute, what: str) -> np.ndarray:
        """An argument of the entry, checked against its type `t` (`what` names it in
        errors) and as this interpreter holds it: bf16 values rounded to bf16."""
        value = check_value(value, t, what)
        if isinstance(t, TensorType) and S.element_type_name(t.element_type) == "bf16":
            value = round_to_bf16(value)
        return value

    def give_result(self, value: np.ndarray, t: Attribute) -> np.ndarray:
        """A result of the entry as the caller receives it (type `t`)."""
        return value


def check_value(
    value: object,
    t: object,
    what: str | Callable[[], str],
    storage: Callable[[Attribute], np.dtype] = storage_dtype,
) -> np.ndarray:
    """`value` as the array for type `t` (its dtype `storage(element type)`), or an
    InterpreterError naming `what` (a string, or a function making it: only a failed
    check pays for the message)."""
    if not isinstance(t, TensorType):
        return np.asarray(value)
    if isinstance(value, np.generic):  # a numpy scalar is a 0-d array
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        what = what() if callable(what) else what
        raise InterpreterError(f"{what}: expected a numpy array, got {type(value).__name__}")
    shape, dtype = tuple(t.get_shape()), storage(t.element_type)
    if value.shape != shape or value.dtype != dtype:
        what = what() if callable(what) else what
        raise InterpreterError(
            f"{what}: expected {describe_type(t)} (numpy shape {shape}, dtype {dtype}), "
            f"got shape {value.shape}, dtype {value.dtype}"
        )
    return value


def run_entry(interp: _Interpreter, args: Sequence[np.ndarray], entry: str, *,
              copy_results: bool = True) -> list[np.ndarray]:  # fmt: skip
    """Check `args` against `@entry`'s signature and run it with `interp` (the shared
    driver of the L1 and L2 interpreters). Results are new C-ordered arrays, or with
    `copy_results=False` possibly views (of a kernel's padded output, or of `args`)."""
    fn = interp.lookup(entry)
    types = fn.function_type.inputs.data
    if len(args) != len(types):
        raise InterpreterError(f"@{entry} takes {len(types)} arguments, got {len(args)}")
    checked = []
    for index, (value, t) in enumerate(zip(args, types)):
        hint = fn.body.block.args[index].name_hint
        label = f"argument {index}" + (f" (%{hint})" if hint else "") + f" of @{entry}"
        checked.append(interp.take_argument(value, t, label))
    # torch gives inf/NaN silently (e.g. 1/0, the mean of an empty dim); so do we.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        results = interp.call(entry, checked)
        outputs = fn.function_type.outputs.data
        given = [interp.give_result(r, t) for r, t in zip(results, outputs)]
        if not copy_results:
            return given
        # A result give_result made anew (the d2h conversion of halves) is not copied again
        return [g if g is not r and _new_array(g) else np.array(g, order="C")
                for g, r in zip(given, results)]  # fmt: skip


def _new_array(a: np.ndarray) -> bool:
    """Whether `a` is a C-ordered array owning its memory (no view of another)."""
    return isinstance(a, np.ndarray) and a.flags.owndata and a.flags.c_contiguous


def run_module(
    module: ModuleOp, args: Sequence[np.ndarray], entry: str = "main"
) -> list[np.ndarray]:
    """Run `func.func @entry` of `module` on `args`; returns its results.

    Each argument must have the signature's shape and storage dtype (bf16 -> float32;
    its values are rounded to bf16 on entry). Raises `InterpreterError` otherwise, or
    when an op cannot run (e.g. a gather index out of range).
    """
    return run_entry(_Interpreter(module), args, entry)
