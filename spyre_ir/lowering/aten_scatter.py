"""Scatters and grouped matmuls, what mixture-of-experts layers need (issue 19).

* `aten.scatter` (src and value), `aten.scatter_add`, `aten.scatter_reduce.two` (sum and
  mean): torch's elementwise scatter along a dim, flattened to one `spyre.scatter` /
  `spyre.scatter_add` into the destination seen as 1-D, at the flat positions of the
  index tensor's elements (the coordinates of `index`, its values along `dim`), as
  `aten.gather` is one flat gather. `index_add` is a `spyre.scatter_add` along its dim
  (its decomposition, `index_put(accumulate=True)`, is in aten_lowerings.py);
  `index_copy` a `no_wrap` `spyre.scatter` along its dim (negative positions refused).
  spyre-lower-scatter turns both into one-hot selects and matmuls.
* `transformers.grouped_mm_fallback` (transformers' grouped_mm experts under
  torch.compile with f16/f32 weights) and `aten._grouped_mm` (2-D input, 3-D weights,
  offsets: its bf16 path): rows sorted by expert, `offs` the cumulative row counts. Each
  row's group is the number of offsets at or below it (a compare and a row sum); the
  rows gather their expert's weights and multiply them in one batched matmul on the PE
  array, the form transformers' batched_mm experts use (docs/frontend.md: the experts).
  Rows past the last offset are zero, as the fallback leaves them.
* `aten.empty.memory_format` (an inverse permutation's buffer, empty_like decomposed): zeros.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import SSAValue

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_lowerings import (
    CHECKS,
    LOWERINGS,
    _flat_index,
    _slice,
    arg,
    lowers,
    meta_shape,
)
from spyre_ir.lowering.fx_importer import Importer, meta_dtype, meta_type, tensor_type

aten = torch.ops.aten
I64 = torch.int64


# ---------------------------------------------------------------- elementwise scatters
def _flat_positions(imp: Importer, index: SSAValue, sizes: tuple[int, ...], dim: int) -> SSAValue:
    """Flat positions in a tensor of `sizes` of each element of `index` (1-D, numel
    long): coordinate d is the element's own for d != dim, its value (negative ones
    wrapped) for d == dim."""
    index = imp.cast(index, I64)
    where, rank = shape(index), len(sizes)
    coords = []
    for d in range(rank):
        if d == dim:
            coords.append((_wrapped(imp, index, sizes[d]), sizes[d]))
            continue
        line = imp.emit(spyre.IotaOp(0, 0, 1, tensor_type((where[d],), I64)))
        coords.append((imp.reshape(line, tuple(where[d] if k == d else 1 for k in range(rank))),
                       sizes[d]))  # fmt: skip
    flat = _flat_index(imp, coords)
    if shape(flat) != where:
        flat = imp.emit(spyre.BroadcastToOp(flat, tensor_type(where, I64)))
    return imp.reshape(flat, (shape_rules.numel(where),))


def _wrapped(imp: Importer, index: SSAValue, size: int) -> SSAValue:
    negative = imp.emit(
        spyre.LtOp(index, imp.full(0, (), I64), tensor_type(shape(index), torch.bool))
    )
    shifted = imp.emit(spyre.AddOp(index, imp.full(size, (), I64), index.type))
    return imp.emit(spyre.SelectOp(negative, shifted, index, index.type))


def _source(imp: Importer, src: Any, index_shape: tuple[int, ...], dtype: torch.dtype) -> SSAValue:
    """The scattered values, flat: a tensor cut to the index's shape, or a scalar filled."""
    if not isinstance(src, SSAValue):
        return imp.full(src, (shape_rules.numel(index_shape),), dtype)
    src = imp.cast(src, dtype)
    for d, n in enumerate(index_shape):
        src = _slice(imp, src, d, 0, n, 1)
    return imp.reshape(src, (shape_rules.numel(index_shape),))


def _scatter_flat(imp: Importer, op_cls: type, x: SSAValue, dim: int, index: SSAValue,
                  src: Any, dtype: torch.dtype) -> SSAValue:  # fmt: skip
    """x (of `dtype`) with src's values scattered (op_cls: spyre.ScatterOp or
    ScatterAddOp) at the positions `index` names along `dim`, through x flattened."""
    sizes = shape(x)
    if not sizes:  # a 0-d tensor: one position
        sizes, x = (1,), imp.reshape(x, (1,))
        index = imp.reshape(index, (1,)) if shape(index) == () else index
    flat = _flat_positions(imp, index, sizes, dim)
    values = _source(imp, src, shape(index), dtype)
    dest = imp.reshape(x, (shape_rules.numel(sizes),))
    out = imp.emit(op_cls(dest, flat, values, 0, dest.type))
    return imp.reshape(out, shape(x))


def _dim(node: torch.fx.Node) -> int:
    return int(node.args[1]) % max(len(meta_shape(node)), 1)


@lowers(aten.scatter.src, aten.scatter.value)
def lower_scatter(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """torch.scatter: out[p with p[dim] = index[p]] = src[p] (a repeated position gets
    the sum of its sources; torch leaves which one wins undefined)."""
    x, index = imp.value(node.args[0]), imp.value(node.args[2])
    src = imp.value(node.args[3])
    return _scatter_flat(imp, spyre.ScatterOp, x, _dim(node), index, src, meta_dtype(node))


@lowers(aten.scatter_add.default)
def lower_scatter_add(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x, index, src = (imp.value(node.args[i]) for i in (0, 2, 3))
    return _scatter_flat(imp, spyre.ScatterAddOp, x, _dim(node), index, src, meta_dtype(node))


def _reduce_check(node: torch.fx.Node) -> str | None:
    reduce = node.args[4]
    if reduce not in ("sum", "mean"):
        return f"scatter_reduce with reduce={reduce!r} is not supported (sum and mean are)"
    if reduce == "mean" and not meta_dtype(node).is_floating_point:
        return f"scatter_reduce mean on {meta_dtype(node)} tensors is not supported (floats only)"
    return None


@lowers(aten.scatter_reduce.two, check=_reduce_check)
def lower_scatter_reduce(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """sum: x (or x with the written positions zeroed, include_self=False) plus the
    sources; mean: that sum over the count of terms (x counts as one with include_self),
    x where nothing was written."""
    x, index, src = (imp.value(node.args[i]) for i in (0, 2, 3))
    dim, reduce, dtype = _dim(node), node.args[4], meta_dtype(node)
    include_self = bool(arg(node, 5, "include_self", True))
    base = x if include_self else _scatter_flat(imp, spyre.ScatterOp, x, dim, index, 0, dtype)
    total = _scatter_flat(imp, spyre.ScatterAddOp, base, dim, index, src, dtype)
    if reduce == "sum":
        return total
    out = meta_type(node)
    start = imp.full(1 if include_self else 0, meta_shape(node), dtype)
    counts = _scatter_flat(imp, spyre.ScatterAddOp, start, dim, index, 1, dtype)
    zero = imp.full(0, (), dtype)
    empty = imp.emit(spyre.EqOp(counts, zero, tensor_type(meta_shape(node), torch.bool)))
    safe = imp.emit(spyre.SelectOp(empty, imp.full(1, (), dtype), counts, out))
    mean = imp.emit(spyre.DivOp(total, safe, out))
    return imp.emit(spyre.SelectOp(empty, x, mean, out))


@lowers(aten.index_add.default)
def lower_index_add(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """x.index_add(dim, index, source, alpha): source's slices (times alpha) added at
    positions index along dim, repeats summed."""
    x, index, source = imp.value(node.args[0]), imp.value(node.args[2]), imp.value(node.args[3])
    dim, dtype = _dim(node), meta_dtype(node)
    source = imp.cast(source, dtype)
    alpha = arg(node, 4, "alpha", 1)
    if alpha != 1:
        source = imp.emit(spyre.MulOp(source, imp.full(alpha, (), dtype), source.type))
    if not shape(x):  # 0-d: index and source are one element
        x1 = imp.reshape(x, (1,))
        out = imp.emit(spyre.ScatterAddOp(x1, imp.reshape(index, (1,)), imp.reshape(source, (1,)),
                                          0, x1.type))  # fmt: skip
        return imp.reshape(out, ())
    return imp.emit(spyre.ScatterAddOp(x, imp.reshape(index, (shape_rules.numel(shape(index)),)),
                                       source, dim, meta_type(node)))  # fmt: skip


@lowers(aten.index_copy.default)
def lower_index_copy(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """x.index_copy(dim, index, source) (StaticCache's `index_copy_`, kept from
    Inductor's decomposition to index_put, runtime/backend.py): source's slices at
    positions `index` along dim, a `no_wrap` spyre.scatter, since torch refuses a
    negative position here where index_put counts it from the end."""
    x, index, source = imp.value(node.args[0]), imp.value(node.args[2]), imp.value(node.args[3])
    dim, dtype = _dim(node), meta_dtype(node)
    source = imp.cast(source, dtype)
    if not shape(x):  # 0-d: index and source are one element
        x1 = imp.reshape(x, (1,))
        out = imp.emit(spyre.ScatterOp(x1, imp.reshape(index, (1,)), imp.reshape(source, (1,)),
                                       0, x1.type))  # fmt: skip
        out.owner.properties["no_wrap"] = UnitAttr()
        return imp.reshape(out, ())
    count = shape_rules.numel(shape(index))
    source = imp.reshape(source, tuple(count if d == dim else n for d, n in enumerate(shape(x))))
    out = imp.emit(spyre.ScatterOp(x, imp.reshape(index, (count,)), source, dim, meta_type(node)))
    out.owner.properties["no_wrap"] = UnitAttr()
    return out


@lowers(aten.empty.memory_format)
def lower_empty(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """Uninitialised memory: zeros are one of its values."""
    return imp.full(0, meta_shape(node), meta_dtype(node))


# ---------------------------------------------------------------- grouped matmuls
def _grouped_check(node: torch.fx.Node) -> str | None:
    x, w = node.args[0].meta["val"], node.args[1].meta["val"]
    offs = node.args[2] if len(node.args) > 2 else node.kwargs.get("offs")
    if x.dim() != 2 or w.dim() != 3 or offs is None:
        return (f"{node.target} is supported for a 2-D input, 3-D weights and offsets, got "
                f"{x.dim()}-D and {w.dim()}-D{'' if offs is not None else ' without offsets'}")  # fmt: skip
    if node.target is not aten._grouped_mm.default:
        return None
    bias = arg(node, 3, "bias", None)
    out_dtype = arg(node, 4, "out_dtype", None)
    if bias is not None:
        return "aten._grouped_mm with a bias is not supported"
    if out_dtype not in (None, x.dtype):
        return "aten._grouped_mm with an out_dtype is not supported"
    return None


def lower_grouped_mm(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """input [S, K], weights [E, K, N], offs [E]: row s uses expert
    g(s) = #{e : offs[e] <= s}; out[s] = input[s] @ weights[g(s)] (0 past offs[-1])."""
    x, w = imp.value(node.args[0]), imp.value(node.args[1])
    offs = imp.value(node.args[2] if len(node.args) > 2 else node.kwargs["offs"])
    (s, k), (e, _, n) = shape(x), shape(w)
    dtype = meta_dtype(node)
    rows = imp.emit(spyre.IotaOp(0, 0, 1, tensor_type((s, 1), I64)))
    ends = imp.reshape(imp.cast(offs, I64), (1, e))
    passed = imp.emit(spyre.LeOp(ends, rows, tensor_type((s, e), torch.bool)))
    group = imp.emit(spyre.SumOp(imp.cast(passed, I64), [1], False, tensor_type((s,), I64)))
    valid = imp.emit(spyre.LtOp(group, imp.full(e, (), I64), tensor_type((s,), torch.bool)))
    expert = imp.emit(spyre.SelectOp(valid, group, imp.full(e - 1, (), I64), group.type))
    x = imp.cast(x, dtype)
    owner = w.owner
    if isinstance(owner, spyre.TransposeOp) and list(spyre.ints(owner.perm)) == [0, 2, 1]:
        # weights read as [E, N, K]^T (an nn.Linear layout): gather [S, N, K] rows and
        # multiply them by the input as columns, with no transpose of the weights
        picked = imp.emit(spyre.GatherOp(owner.input, expert, tensor_type((s, n, k), dtype)))
        column = imp.reshape(x, (s, k, 1))
        product = imp.emit(spyre.MatmulOp(picked, column, tensor_type((s, n, 1), dtype)))
    else:
        picked = imp.emit(spyre.GatherOp(w, expert, tensor_type((s, k, n), dtype)))
        row = imp.reshape(x, (s, 1, k))
        product = imp.emit(spyre.MatmulOp(row, picked, tensor_type((s, 1, n), dtype)))
    out = imp.reshape(product, (s, n))
    keep = imp.reshape(valid, (s, 1))
    return imp.emit(spyre.SelectOp(keep, out, imp.full(0, (), dtype), meta_type(node)))


lowers(aten._grouped_mm.default, check=_grouped_check)(lower_grouped_mm)

LIBRARY_OPS = {
    "transformers.grouped_mm_fallback.default": (
        "transformers.integrations.moe",
        lower_grouped_mm,
        _grouped_check,
    ),
}
"""Custom ops of other libraries, by name: (the module that defines the op, lowering,
check), registered once that module is imported (transformers' moe integration comes with
the model), see `register_library_ops`."""


def register_library_ops() -> None:
    """Register the LIBRARY_OPS whose module is imported by now (cheap: two set lookups
    per op once registered or while the module is not imported)."""
    for name, (module, fn, check) in LIBRARY_OPS.items():
        if name in _REGISTERED or module not in sys.modules:
            continue
        namespace, op, overload = name.split(".")
        try:
            target = getattr(getattr(getattr(torch.ops, namespace), op), overload)
        except (AttributeError, RuntimeError):
            continue
        LOWERINGS[target] = fn
        CHECKS[target] = check
        _REGISTERED.add(name)


_REGISTERED: set[str] = set()
