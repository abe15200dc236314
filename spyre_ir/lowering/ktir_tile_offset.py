"""Views at a per-tile offset from a pointer (`%in_ptr + %pid * 128`).

A kernel may address its tile's part of a tensor by pointer arithmetic instead of
access-tile coordinates: `construct_memory_view (arith.addi %ptr, %off)` where `%off`
is an index computed from the tile id (constants, muli, addi, subi of
`ktdp.get_compute_tile_id`; divui, remui, divsi, remsi for a tile's group and lane,
as ktir-cpu's ring_reduce_multi_group.mlir writes them). `rebase_tile_offsets(fn)`
evaluates `%off` on every tile of the grid; when each value is a non-negative multiple of the view's leading stride
(a row-major view), the view becomes one at `%ptr` itself, its leading dim long enough
for every tile's rows, and each access tile on it adds `%off / stride` to its first
coordinate: the same elements, now coordinates of one tensor the pointer addresses.
Offsets of any other form (a loop counter, a scalar argument, not a multiple of the
leading stride, a view read by an indirect access tile) are a located error naming
the construct. Offsets are counted in elements, as for views at constant offsets.
"""

from __future__ import annotations

import itertools

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    i64,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr, AffineMap, AffineSet
from xdsl.ir.affine.affine_set import AffineConstraintExpr, AffineConstraintKind
from xdsl.rewriter import Rewriter

from spyre_ir.dialects import ktdp
from spyre_ir.dialects import ktdp_syntax as syntax
from spyre_ir.lowering.ktir_values import LoweringError


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# Index arithmetic of a tile's offset; division and remainder as arith defines them
# (signed ones round toward zero), by zero undefined (None).
_ARITH = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
          "arith.muli": lambda a, b: a * b,
          "arith.divui": lambda a, b: a // b if a >= 0 and b > 0 else None,
          "arith.remui": lambda a, b: a % b if a >= 0 and b > 0 else None,
          "arith.divsi": lambda a, b: _trunc_div(a, b) if b else None,
          "arith.remsi": lambda a, b: a - b * _trunc_div(a, b) if b else None}  # fmt: skip


def _value(v: SSAValue, tile: dict[int, int], grid: tuple[int, ...]) -> int | None:
    """`v` on the tile at grid position `tile` (dim -> coordinate); None if `v` is not
    a function of the tile id and constants."""
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return int(op.value.value.data)
    if isinstance(op, ktdp.GetComputeTileIdOp):
        dims = op.grid_dims(grid)
        return None if dims is None else tile[dims[op.results.index(v)]]
    if isinstance(op, Operation) and op.name in _ARITH:
        a, b = (_value(x, tile, grid) for x in op.operands)
        return None if a is None or b is None else _ARITH[op.name](a, b)
    return None


def _box(sizes: list[int]) -> AffineSetAttr:
    constraints = []
    for d, n in enumerate(sizes):
        x = AffineDimExpr(d)
        constraints.append(AffineConstraintExpr(AffineConstraintKind.ge, x, AffineExpr.constant(0)))
        constraints.append(
            AffineConstraintExpr(AffineConstraintKind.ge, AffineExpr.constant(n - 1), x)
        )
    return AffineSetAttr(AffineSet(len(sizes), 0, tuple(constraints)))


def _per_tile_offset(view: ktdp.ConstructMemoryViewOp) -> tuple[BlockArgument, SSAValue] | None:
    at = view.offset.owner
    if not isinstance(at, arith.AddiOp):
        return None
    for pointer, off in ((at.lhs, at.rhs), (at.rhs, at.lhs)):
        if isinstance(pointer, BlockArgument) and not isinstance(off.owner, arith.ConstantOp):
            return pointer, off
    return None


def rebase_tile_offsets(fn: func.FuncOp, grid: tuple[int, ...]) -> None:
    """Rewrite the views of `fn` at a per-tile offset from a pointer (module docstring)."""
    for view in [op for op in fn.walk() if isinstance(op, ktdp.ConstructMemoryViewOp)]:
        found = _per_tile_offset(view)
        if found is not None:
            _rebase(view, *found, grid)


def _rebase(
    view: ktdp.ConstructMemoryViewOp, pointer: BlockArgument, off: SSAValue, grid: tuple[int, ...]
) -> None:
    what = f"a view at %{pointer.name_hint or 'pointer'} plus a per-tile offset"
    tiles = [dict(enumerate(t)) for t in itertools.product(*(range(n) for n in grid))]
    values = [_value(off, t, grid) for t in tiles]
    if any(v is None for v in values):
        raise LoweringError(
            f"{what}: the offset is not a function of the tile id and constants", view
        )
    t = view.result.type
    assert isinstance(t, MemRefType)
    sizes, strides = list(view.sizes_static()), list(view.strides_static())
    if view.sizes or view.strides or not sizes:
        raise LoweringError(f"{what}: the view needs static sizes and strides", view)
    lead = strides[0]
    if lead <= 0:
        raise LoweringError(f"{what}: its leading stride {lead} is not positive", view)
    if any(v < 0 or v % lead for v in values):  # type: ignore[operator]
        raise LoweringError(
            f"{what}: offsets {sorted(set(values))} are not non-negative multiples of the "  # type: ignore[type-var]
            f"leading stride {lead}",
            view,
        )
    uses = list(view.result.uses)
    for use in uses:
        if not isinstance(use.operation, ktdp.ConstructAccessTileOp):
            raise LoweringError(f"{what}: its use by '{use.operation.name}' is not supported", view)
    rows = max(values) // lead + sizes[0]  # type: ignore[operator]
    new_sizes = [rows, *sizes[1:]]
    at = view.offset.owner
    view.operands[0] = pointer
    if isinstance(at, Operation) and not at.results[0].uses:
        at.detach()
        at.erase()  # the pointer arithmetic: now the access tiles' coordinates
    view.properties["static_sizes"] = DenseArrayBase.from_list(i64, new_sizes)
    view.properties["coordinate_set"] = _box(new_sizes)
    Rewriter.replace_value_with_new_type(view.result, MemRefType(t.element_type, new_sizes))
    for use in uses:
        _shift_first_coordinate(use.operation, off, lead)  # type: ignore[arg-type]


def _shift_first_coordinate(tile: ktdp.ConstructAccessTileOp, off: SSAValue, lead: int) -> None:
    """`tile`'s base coordinate plus (off / lead, 0, ...): a new index operand."""
    step = arith.ConstantOp(IntegerAttr(lead, IndexType()))
    row = arith.DivUIOp(off, step.result)
    tile.parent_block().insert_ops_before([step, row], tile)  # type: ignore[union-attr]
    old = tile.base_map.data
    shift = AffineDimExpr(old.num_dims)
    results = (old.results[0] + shift, *old.results[1:])
    tile.properties["base_map"] = AffineMapAttr(
        AffineMap(old.num_dims + 1, old.num_symbols, results)
    )
    indices = [*tile.indices, row.result]
    symbols = list(tile.symbol_operands)
    tile.operands = [tile.base, *indices, *symbols]
    tile.properties["operandSegmentSizes"] = syntax.segments(1, len(indices), len(symbols))
