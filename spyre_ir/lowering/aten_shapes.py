"""ATen lowerings of shape and indexing ops: views, permutes, expand, slices, split,
cat, pad, embedding, index, gather, index_put, the scatters, copy, index_select.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Sequence

import torch
import torch.fx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_base import arg, aten, lowers, meta_shape, prims, scalar_only
from spyre_ir.lowering.fx_importer import (
    Importer,
    meta_dtype,
    meta_type,
    tensor_type,
)

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
