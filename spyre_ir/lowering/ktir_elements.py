"""Element gathers: an indirect access tile whose every subscript reads an index view
(docs/ktir.md, the lowering).

`%X[ind(%I0[%m, %k]), ind(%I1[%m, %k])]` over the variables (m, k) is the tile
`Y[m, k] = X[I0[m, k], I1[m, k]]` (the specification's indirect-access example,
RFC 0682 C.5): one element of the table per position, each dim's coordinate read
from its own index view at the position. The lowering loads the whole table into LX
(the table must fit there: the allocator's LX check says so otherwise), loads each
index view's box over the variables, forms the row-major flat position
`sum_d I_d * stride_d` with i32 tile ops (each stride a one-element constant
tile, broadcast) and picks the elements with an LX `spyre.gather` from the
table flattened to one dim.

Taken only in that form: no captured variables, every subscript indirect, each index
view an i32 one read at exactly the variables in order (`[%m, %k]`), the table not spread one
element per stick. Other indirect tiles are the row gathers of ktir_memory or a
located error there; a store through an element tile (a scatter) is ktir_scatter's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, SSAValue
from xdsl.ir.affine import AffineDimExpr

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ktdp
from spyre_ir.lowering.ktir_values import Box, Buf, View, load_box

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering


@dataclass
class IndirectElements:
    """An element gather: the table and, per table dim, the box of its index view."""

    table: View
    index_boxes: list[Box]
    shape: tuple[int, ...]


def element_tile(
    lw: KernelLowering, op: ktdp.ConstructIndirectAccessTileOp, space: list[tuple[int, int]]
) -> IndirectElements | None:
    """`op` as an element gather over its variables' box `space`, or None when it is
    not one (module docstring)."""
    kinds = op.kinds()
    table = lw.get(op.base)
    if len(kinds) < 2 or not all(kinds) or op.captured_variables:
        return None
    if not isinstance(table, View) or table.padded:
        return None
    i32 = IntegerType(32)
    extent = tuple(hi - lo + 1 for lo, hi in space)
    if extent != tuple(op.result.type.get_shape()):
        return None
    boxes = []
    for d, m in enumerate(op.per_dim_subscript_maps.data):
        exprs = m.data.results
        if len(exprs) != len(space) or any(
            not isinstance(e, AffineDimExpr) or e.position != j for j, e in enumerate(exprs)
        ):
            return None
        view = lw.get(op.indirect_memrefs[d])
        if not isinstance(view, View) or view.memory.type.element_type != i32:  # type: ignore[attr-defined]
            return None
        origin = view.origin or (0,) * len(space)
        offsets = [lw.index_constant(lo + at).value for (lo, _), at in zip(space, origin)]
        boxes.append(Box(view, offsets, extent))
    return IndirectElements(table, boxes, extent)


def load_elements(lw: KernelLowering, tile: IndirectElements, element: Attribute) -> Buf:
    """The gathered tile in LX (module docstring)."""
    table = tile.table
    origin = table.origin or (0,) * len(table.shape)
    whole = lw.alloc(table.shape, element)
    lw.emit(D.LoadOp(table.memory, [lw.index_constant(o).value for o in origin], whole))
    flat_table = lw.alloc((math.prod(table.shape),), element)
    lw.emit(D.ComputeOp("spyre.reshape", [whole], [flat_table]))
    position = flat_positions(lw, tile, table.shape)
    picked = lw.alloc(tile.shape, element)
    lw.emit(D.ComputeOp("spyre.gather", [flat_table, position], [picked]))
    return Buf(picked, tile.shape)


def flat_positions(
    lw: KernelLowering, tile: IndirectElements, dims: tuple[int, ...], origin=None
) -> SSAValue:
    """The row-major flat positions `sum_d (I_d + origin_d) * stride_d` in a tensor of
    shape `dims`, an i32 tile of the tile's shape (each index view's box loaded, each
    stride and origin a one-element constant tile, broadcast)."""
    i32 = IntegerType(32)
    position: SSAValue | None = None
    stride = 1
    for d in range(len(dims) - 1, -1, -1):
        coordinate = index_tile(lw, tile.index_boxes[d])
        if origin is not None and origin[d]:
            start = lw.math.constant_buffer(origin[d], i32)
            moved = lw.alloc(tile.shape, i32)
            lw.emit(D.ComputeOp("spyre.add", [coordinate, start.value], [moved]))
            coordinate = moved
        if stride != 1:
            scale = lw.math.constant_buffer(stride, i32)  # one element, broadcast
            scaled = lw.alloc(tile.shape, i32)
            lw.emit(D.ComputeOp("spyre.mul", [coordinate, scale.value], [scaled]))
            coordinate = scaled
        if position is None:
            position = coordinate
        else:
            total = lw.alloc(tile.shape, i32)
            lw.emit(D.ComputeOp("spyre.add", [position, coordinate], [total]))
            position = total
        stride *= dims[d]
    assert position is not None
    return position


def index_tile(lw: KernelLowering, box: Box) -> SSAValue:
    """An index view's box loaded into LX as positions of the box's shape: the element
    gathers' and the row gathers' indices."""
    stored = box.view.memory.type.element_type  # type: ignore[attr-defined]
    return load_box(lw, box, box.shape, stored, plain=True)
