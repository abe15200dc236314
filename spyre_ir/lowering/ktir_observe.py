"""Observing what a kernel that stores nothing delivers (docs/ktir.md, "Kernels that
store nothing").

The specification's inter-tile examples kt07a and kt07b (ktir-mlir-frontend
docs/inter-tile-examples) end with the value their `ktdp.inter_tile_reduce` or
`ktdp.inter_tile_consume` delivers to every tile left unstored ("a fold may travel a
different ring and need not land in LX per tile", kt07a's comment), and their
expected result is that value on each tile ("15.0 ... on all four cores"). Such a
kernel writes no memory, so spyre-run's `--check` has nothing to compare.

`observe_deliveries(fn, grid)` makes those values observable: in a kernel with no
`ktdp.store`, each result of a top-level `inter_tile_reduce` / `inter_tile_consume`
gets a pointer argument `%delivered<K>` (K counting them in program order) and,
before the kernel's return, a store of the tile's value to its own slab of it: tile t's at rows t * R .. (t + 1) * R - 1 of a tensor of T * R
rows (R the result's leading dim, tiles numbered as the reference interpreter numbers
them; `ktir_tile_offset` makes the per-tile pointer offset a view of that tensor).
Both the reference interpreter and the lowering then see an ordinary kernel storing
per-tile results, so the card's ring transfer is compared with the specification's
semantics element by element. The stores are part of the simulated time (one
DMA per tile of its result: a few sticks).

A kernel that stores anything is left alone, as is one with no inter-tile result to
observe.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    TensorType,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineMap

from spyre_ir.dialects import ktdp
from spyre_ir.dialects import ktdp_intertile as kt
from spyre_ir.dialects import ktdp_syntax as syntax
from spyre_ir.dialects.ktdp_types import AccessTileType, SpyreMemoryKind, SpyreMemorySpaceAttr
from spyre_ir.layout import contiguous_strides
from spyre_ir.lowering.ktir_local import linear_tile_id

PREFIX = "delivered"
"""The name of the pointer argument holding the K-th observed result: `%delivered<K>`."""


def observed_values(fn: func.FuncOp) -> list[SSAValue]:
    """The top-level inter-tile results of `fn` to observe; none when it stores."""
    if any(isinstance(op, ktdp.StoreOp) for op in fn.walk()):
        return []
    found = []
    for op in fn.body.block.ops:
        if isinstance(op, kt.InterTileReduceOp | kt.InterTileConsumeOp):
            found += [
                r
                for r in op.results
                if isinstance(r.type, TensorType)
                and r.type.get_shape()
                and all(d > 0 for d in r.type.get_shape())
            ]
    return found


def observe_deliveries(fn: func.FuncOp, grid: tuple[int, ...]) -> list[str]:
    """Store each observed value of `fn` (see the module docstring) to a pointer
    argument of its own; returns the new arguments' names, in argument order."""
    values = observed_values(fn)
    if not values:
        return []
    block = fn.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    tile = linear_tile_id(fn, grid)
    names = []
    for k, value in enumerate(values):
        pointer = block.insert_arg(IndexType(), len(block.args))
        pointer.name_hint = f"{PREFIX}{k}"
        names.append(pointer.name_hint)
        _store_slab(value, pointer, tile, ret)
    fn.update_function_type()
    return names


def _store_slab(value: SSAValue, pointer: SSAValue, tile: SSAValue, before: func.ReturnOp) -> None:
    """`value` stored to `pointer + tile * numel(value)`: a row-major view of the
    value's shape, stored whole."""
    assert isinstance(value.type, TensorType)
    shape = list(value.type.get_shape())
    strides = list(contiguous_strides(shape))
    length = arith.ConstantOp(IntegerAttr(math.prod(shape), IndexType()))
    scaled = arith.MuliOp(tile, length.result)
    at = arith.AddiOp(pointer, scaled.result)
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    view = ktdp.ConstructMemoryViewOp.create(
        operands=[at.result],
        result_types=[MemRefType(value.type.element_type, shape)],
        properties={
            "static_sizes": DenseArrayBase.from_list(i64, shape),
            "static_strides": DenseArrayBase.from_list(i64, strides),
            "memory_space": SpyreMemorySpaceAttr(SpyreMemoryKind.HBM),
            "coordinate_set": syntax.box_set(shape),
            "operandSegmentSizes": syntax.segments(1, 0, 0),
        },
    )
    rank = len(shape)
    access = ktdp.ConstructAccessTileOp.create(
        operands=[view.result, *([zero.result] * rank)],
        result_types=[AccessTileType(shape)],
        properties={
            "base_map": AffineMapAttr(AffineMap.identity(rank)),
            "access_tile_set": syntax.box_set(shape),
            "access_tile_order": AffineMapAttr(AffineMap.identity(rank)),
            "operandSegmentSizes": syntax.segments(1, rank, 0),
        },
    )
    store = ktdp.StoreOp.create(operands=[value, access.result])
    ops = [length, scaled, at, zero, view, access, store]
    for op in ops:
        op.location = value.owner.location  # type: ignore[union-attr]
    before.parent_block().insert_ops_before(ops, before)  # type: ignore[union-attr]
