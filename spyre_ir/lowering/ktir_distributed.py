"""Copies out of a distributed view over several pointers (part of the KTIR -> dataflow
lowering; docs/ktir.md).

`ktdp.construct_distributed_memory_view` composes partition views into one logical
view, each partition holding the global coordinates of its coordinate set (KTDP.td:
"Lowering is expected to resolve global indexing into selection of the appropriate
underlying memref and a local coordinate computation"). ktir-cpu's
`distributed-view-copy-dynamic*.mlir` compose views of two pointer arguments and copy
the global view tile by tile; one tile may straddle both partitions.

`split_distributed_copies(fn, scalars)` does that selection before the lowering, for
the tiles it can place statically: a loop whose body reads such a view and whose
bounds the scalars fix is unrolled (at most `MAX_TRIPS` iterations), so each access
tile on the view has a constant base; a load through it then becomes one load per
partition its box meets (the intersection, in that partition's coordinates), and each
store of the loaded tensor (through a rectangular tile of the same shape, identity
order) one store per piece at the matching place. On the card that is one DMA per
piece. The reference interpreter runs the kernel as written (each element from the
partition holding it), so `--check` compares the two.

What stays a located error: a tile on such a view whose base is not constant after
unrolling (a loop whose bounds the scalars do not fix, or one with more trips), a
load whose tensor is used other than by such stores (compute on the gathered tile),
stores through such a view, non-rectangular sets or permuted orders.
"""

from __future__ import annotations

import math

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    AffineMapAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap

from spyre_ir.dialects import ktdp
from spyre_ir.dialects import ktdp_syntax as syntax
from spyre_ir.dialects.ktdp_types import AccessTileType
from spyre_ir.interp.ktir import eval_affine
from spyre_ir.lowering.ktir_memory import access_box, rectangle
from spyre_ir.lowering.ktir_specialize import fold_index
from spyre_ir.lowering.ktir_tile_offset import _box
from spyre_ir.lowering.ktir_values import LoweringError, column_major_twin

MAX_TRIPS = 64
"""The most iterations a loop over a distributed view is unrolled to."""


def _pointer_root(value: SSAValue) -> SSAValue:
    """The pointer argument a view's address adds offsets to (itself if none)."""
    op = value.owner
    if not isinstance(op, arith.AddiOp):
        return value
    for operand in (op.lhs, op.rhs):
        root = _pointer_root(operand)
        if isinstance(root, BlockArgument):
            return root
    return value


def _several_pointers(op: ktdp.ConstructDistributedMemoryViewOp) -> bool:
    roots = set()
    for part in op.memrefs:
        view = part.owner
        if not isinstance(view, ktdp.ConstructMemoryViewOp):
            return False
        roots.add(_pointer_root(view.offset))
    return len(roots) > 1


def split_distributed_copies(fn: func.FuncOp, scalars: dict[str, float]) -> None:
    """Rewrite the copies out of `fn`'s distributed views over several pointers."""
    views = [
        op
        for op in fn.walk()
        if isinstance(op, ktdp.ConstructDistributedMemoryViewOp) and _several_pointers(op)
    ]
    for view in views:
        _check_disjoint(view)
        while True:  # unroll the loops around its tiles, innermost first
            loops = [u.operation.parent_op() for u in view.result.uses]
            loop = next((lp for lp in loops if isinstance(lp, scf.ForOp)), None)
            if loop is None:
                break
            _unroll(loop, fn, scalars, view)
        for use in list(view.result.uses):
            tile = use.operation
            if isinstance(tile, ktdp.ConstructAccessTileOp):
                _split_tile(tile, view, fn, scalars)
        if not view.result.uses:
            parts = [v.owner for v in view.memrefs]
            view.detach()
            view.erase()
            for part in parts:  # now read only through the pieces' views
                if isinstance(part, Operation) and not part.results[0].uses:
                    part.detach()
                    part.erase()


def _check_disjoint(view: ktdp.ConstructDistributedMemoryViewOp) -> None:
    boxes = [rectangle(p.owner.coordinate_set, p.owner) for p in view.memrefs]  # type: ignore[attr-defined]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            if all(max(x[0], y[0]) <= min(x[1], y[1]) for x, y in zip(a, b)):
                raise LoweringError(
                    f"'{view.name}': partitions whose coordinate sets {a} and {b} overlap "
                    "are not supported (KTDP.td leaves such a view's reads unspecified)",
                    view,
                )


def _unroll(loop: scf.ForOp, fn: func.FuncOp, scalars, view: Operation) -> None:
    """Replace `loop` by its body once per iteration, the counter a constant."""
    bounds = [fold_index(v, fn, scalars) for v in (loop.lb, loop.ub, loop.step)]
    what = f"a loop over the distributed view '{view.name}' of several pointers"
    if any(b is None for b in bounds) or loop.iter_args:
        raise LoweringError(
            f"{what}: its bounds must be fixed by the scalars and it must carry no values",
            loop,
        )
    lb, ub, step = bounds
    trips = range(lb, ub, step) if step > 0 else range(0)  # type: ignore[arg-type]
    if len(trips) > MAX_TRIPS:
        raise LoweringError(f"{what}: {len(trips)} iterations (at most {MAX_TRIPS})", loop)
    block = loop.parent_block()
    assert block is not None
    body: Block = loop.body.block
    for i in trips:
        counter = arith.ConstantOp(IntegerAttr(i, IndexType()))
        block.insert_op_before(counter, loop)
        mapping = {body.args[0]: counter.result}
        for op in body.ops:
            if isinstance(op, scf.YieldOp):
                continue
            block.insert_op_before(op.clone(mapping), loop)  # type: ignore[arg-type]
    loop.detach()
    loop.erase()


def _base(tile: ktdp.ConstructAccessTileOp, fn, scalars) -> list[int] | None:
    values = [fold_index(v, fn, scalars) for v in tile.indices]
    if any(v is None for v in values) or tile.symbol_operands:
        return None
    return [int(eval_affine(e, values)) for e in tile.base_map.data.results]


def _identity(tile: ktdp.ConstructAccessTileOp) -> bool:
    order = tile.access_tile_order.data
    return order == AffineMap.identity(order.num_dims)


def _new_tile(
    base: SSAValue, at: list[int], sizes: list[int], before: Operation, transposed: bool = False
) -> SSAValue:
    """An access tile of `sizes` at constant `at` on `base`, built before `before`;
    `transposed`: a 2-D tile in the transposed order (of shape sizes reversed)."""
    consts = [arith.ConstantOp(IntegerAttr(a, IndexType())) for a in at]
    rank = len(sizes)
    order = (
        AffineMap(2, 0, (AffineDimExpr(1), AffineDimExpr(0)))
        if transposed
        else AffineMap.identity(rank)
    )
    tile = ktdp.ConstructAccessTileOp.create(
        operands=[base, *(c.result for c in consts)],
        result_types=[AccessTileType(sizes[::-1] if transposed else sizes)],
        properties={
            "base_map": AffineMapAttr(AffineMap.identity(rank)),
            "access_tile_set": _box(sizes),
            "access_tile_order": AffineMapAttr(order),
            "operandSegmentSizes": syntax.segments(1, rank, 0),
        },
    )
    tile.location = before.location
    before.parent_block().insert_ops_before([*consts, tile], before)  # type: ignore[union-attr]
    return tile.result


def _split_tile(tile: ktdp.ConstructAccessTileOp, view, fn, scalars) -> None:
    where = f"'{tile.name}' on the distributed view of several pointers"
    base = _base(tile, fn, scalars)
    if base is None or not _identity(tile):
        raise LoweringError(
            f"{where}: its base must be constant (a loop the scalars fix is unrolled) and "
            "its order the identity",
            tile,
        )
    box = [(lo + b, hi + b) for (lo, hi), b in zip(access_box(tile), base)]
    for use in list(tile.result.uses):
        load = use.operation
        if not isinstance(load, ktdp.LoadOp):
            raise LoweringError(f"{where}: its use by '{load.name}' is not supported", load)
        stores = _copy_stores(load, box, fn, scalars, where)
        covered = 0
        for part in view.memrefs:
            part_box = rectangle(part.owner.coordinate_set, part.owner)  # type: ignore[attr-defined]
            lo = [max(a, p) for (a, _), (p, _) in zip(box, part_box)]
            hi = [min(b, q) for (_, b), (_, q) in zip(box, part_box)]
            if any(h < low for low, h in zip(lo, hi)):
                continue  # this partition holds none of the tile
            sizes = [h - low + 1 for low, h in zip(lo, hi)]
            covered += math.prod(sizes)
            local = [low - p for low, (p, _) in zip(lo, part_box)]
            twin = _row_major_twin(part.owner)  # type: ignore[arg-type]
            if twin is None:
                piece_tile = _new_tile(part, local, sizes, load)
            else:  # a column-major partition: a transposed tile of its row-major twin
                piece_tile = _new_tile(twin, local[::-1], sizes[::-1], load, transposed=True)
            element = load.result.type.element_type  # type: ignore[attr-defined]
            piece = ktdp.LoadOp.create(
                operands=[piece_tile], result_types=[TensorType(element, sizes)]
            )
            piece.location = load.location
            load.parent_block().insert_op_before(piece, load)  # type: ignore[union-attr]
            for store, dest, at in stores:
                shift = [a + low - b for a, low, (b, _) in zip(at, lo, box)]
                dest_tile = _new_tile(dest, shift, sizes, store)
                new = ktdp.StoreOp.create(operands=[piece.result, dest_tile])
                new.location = store.location
                store.parent_block().insert_op_before(new, store)  # type: ignore[union-attr]
        if covered != math.prod(hi - lo + 1 for lo, hi in box):
            raise LoweringError(f"{where}: coordinates {box} that no partition holds", tile)
        for store, _, _ in stores:
            old_tile = store.access_tile.owner
            store.detach()
            store.erase()
            if isinstance(old_tile, Operation) and not old_tile.results[0].uses:
                old_tile.detach()
                old_tile.erase()
        load.detach()
        load.erase()
    tile.detach()
    tile.erase()


def _row_major_twin(part: ktdp.ConstructMemoryViewOp) -> SSAValue | None:
    """The row-major view (at the same address) whose transpose a column-major
    partition is (ktir_values.column_major_twin), made once after it; None for a
    row-major partition."""
    twin = column_major_twin(part)
    if twin is None:
        return None
    after = part.next_op  # made already: the op right after it
    if isinstance(after, ktdp.ConstructMemoryViewOp) and after.attributes.get("twin"):
        return after.result
    memref = part.result.type
    assert isinstance(memref, MemRefType)
    props = dict(part.properties)
    props["static_sizes"] = DenseArrayBase.from_list(i64, list(twin))
    props["static_strides"] = DenseArrayBase.from_list(i64, [twin[1], 1])
    props["coordinate_set"] = _box(list(twin))
    view = ktdp.ConstructMemoryViewOp.create(
        operands=[part.offset],
        result_types=[MemRefType(memref.element_type, list(twin))],
        properties=props,
        attributes={"twin": UnitAttr()},
    )
    view.location = part.location
    part.parent_block().insert_op_after(view, part)  # type: ignore[union-attr]
    return view.result


def _copy_stores(load: ktdp.LoadOp, box, fn, scalars, where: str):
    """(store, destination view, destination base) of each use of `load`'s tensor:
    stores through same-shaped rectangular identity tiles with constant bases."""
    extent = [hi - lo + 1 for lo, hi in box]
    stores = []
    for use in load.result.uses:
        store = use.operation
        dest = store.access_tile.owner if isinstance(store, ktdp.StoreOp) else None  # type: ignore[attr-defined]
        ok = isinstance(dest, ktdp.ConstructAccessTileOp) and use.index == 0
        at = _base(dest, fn, scalars) if ok else None  # type: ignore[arg-type]
        if ok and at is not None and _identity(dest):  # type: ignore[arg-type]
            dbox = access_box(dest)  # type: ignore[arg-type]
            if [hi - lo + 1 for lo, hi in dbox] == extent:
                stores.append((store, dest.base, [a + lo for a, (lo, _) in zip(at, dbox)]))  # type: ignore[union-attr]
                continue
        raise LoweringError(
            f"{where}: the loaded tile's use by '{store.name}' is not supported (only "
            "stores of the whole tile through a rectangular tile of its shape, a copy)",
            store,
        )
    return stores
