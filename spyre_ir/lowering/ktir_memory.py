"""Memory and tensor-structure ops of the KTIR -> dataflow lowering: memory views,
access tiles (boxes, indirect row gathers), loads and stores, and the tensor and
linalg ops that build, reshape or reduce tiles (spyre_ir/lowering/ktir_to_dataflow.py
holds the pass)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineExpr

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ktdp
from spyre_ir.dialects.ktdp_types import MemorySpace, SpyreMemoryKind
from spyre_ir.interp.ktir_sets import KtirError, linear_form, order_perm, set_box, tile_box
from spyre_ir.lowering import ktir_paged, ktir_scatter
from spyre_ir.lowering.ktir_compute import element_of, same_layout, shape_of
from spyre_ir.lowering.ktir_elements import (
    IndirectElements,
    element_tile,
    index_tile,
    load_elements,
)
from spyre_ir.lowering.ktir_values import (
    Box,
    Buf,
    Index,
    IndirectRows,
    Lazy,
    LoweringError,
    Scalar,
    View,
    box_address,
    load_box,
    stick_elements,
)

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering

HANDLED = {
    "ktdp.construct_memory_view", "ktdp.construct_access_tile",
    "ktdp.construct_indirect_access_tile", "ktdp.load", "ktdp.store",
    "ktdp.construct_distributed_memory_view", "ktdp.runtime_arg_extract",
    "tensor.splat", "tensor.extract", "tensor.empty", "tensor.expand_shape",
    "tensor.collapse_shape", "linalg.fill", "linalg.broadcast", "linalg.reduce",
    "linalg.matmul", "linalg.transpose", "linalg.generic", "tensor.extract_slice",
    "tensor.insert_slice",
}  # fmt: skip


def lower(lw: KernelLowering, op: Operation) -> object:
    name = op.name
    if name == "ktdp.construct_memory_view":
        return memory_view(lw, op)  # type: ignore[arg-type]
    if name == "ktdp.construct_access_tile":
        return access_tile(lw, op)  # type: ignore[arg-type]
    if name == "ktdp.construct_indirect_access_tile":
        return indirect_tile(lw, op)  # type: ignore[arg-type]
    if name == "ktdp.load":
        return load(lw, op)  # type: ignore[arg-type]
    if name == "ktdp.store":
        store(lw, op)  # type: ignore[arg-type]
        return None
    if name == "ktdp.construct_distributed_memory_view":
        return distributed_view(lw, op)  # type: ignore[arg-type]
    if name == "ktdp.runtime_arg_extract":
        raise LoweringError(f"'{name}' is not supported by the KTIR -> dataflow lowering", op)
    return tensor_op(lw, op)


# ---------------------------------------------------------------- memory


def memory_view(lw: KernelLowering, op: ktdp.ConstructMemoryViewOp) -> View:
    pointer = lw.env.get(op.offset)
    if not (isinstance(pointer, tuple) and pointer[0] == "pointer"):
        raise LoweringError(
            f"'{op.name}': the address must be a pointer argument of the kernel", op
        )
    space = op.memory_space
    kind = getattr(space, "kind", None)
    if (
        kind is not None and kind.data not in (SpyreMemoryKind.HBM, SpyreMemoryKind.unspecified)
    ) or (getattr(space, "data", None) == MemorySpace.ct_local):
        raise LoweringError(f"'{op.name}': views of {space} memory are not supported", op)
    if op.sizes or op.strides:
        raise LoweringError(f"'{op.name}' with dynamic sizes or strides is not supported", op)
    sizes, strides = op.sizes_static(), op.strides_static()
    p, (load_memory, store_memory), offset = pointer[1], pointer[2], pointer[3]
    whole = p.shape if len(p.shape) == len(sizes) else sizes
    want = [1] * len(sizes)
    for d in range(len(sizes) - 2, -1, -1):
        want[d] = want[d + 1] * whole[d + 1]
    if list(strides) != want:
        raise LoweringError(
            f"'{op.name}': strides {list(strides)} are not the row-major strides {want} of "
            f"its pointer's tensor {list(whole)} (strided views are not supported)",
            op,
        )
    origin, rest = [], offset
    for stride in want:
        origin.append(rest // stride)
        rest %= stride
    if offset < 0:  # before its pointer (origin -1 and on; it wrote outside it before)
        raise LoweringError(
            f"'{op.name}': the view at offset {offset} starts before its pointer's tensor "
            f"{list(whole)}",
            op,
        )
    if any(o + n > w for o, n, w in zip(origin, sizes, whole)):
        raise LoweringError(
            f"'{op.name}': the view at offset {offset} does not fit its pointer's tensor "
            f"{list(whole)}",
            op,
        )
    return View(load_memory or store_memory, tuple(sizes), p.padded, store_memory, tuple(origin))


def distributed_view(lw: KernelLowering, op: ktdp.ConstructDistributedMemoryViewOp) -> View:
    """A distributed view whose partitions are views of one pointer's tensor, each at
    the place its coordinate set names (the partitions of a row-major tensor, as
    ktir-cpu's examples shard one): the view of that tensor its coordinates address."""
    parts = [lw.get(v) for v in op.memrefs]
    first = parts[0] if parts else None
    for part, value in zip(parts, op.memrefs):
        view_op = value.owner
        if (
            not isinstance(part, View)
            or not isinstance(view_op, ktdp.ConstructMemoryViewOp)
            or part.memory is not first.memory  # type: ignore[union-attr]
        ):
            raise LoweringError(
                f"'{op.name}': partitions that are not views of one pointer are not supported",
                op,
            )
        box = rectangle(view_op.coordinate_set, view_op)
        lows = tuple(lo for lo, _ in box)
        extent = tuple(hi - lo + 1 for lo, hi in box)
        if (part.origin or (0,) * len(lows)) != lows or extent != part.shape:
            raise LoweringError(
                f"'{op.name}': a partition whose coordinate set {list(box)} is not where it "
                f"lies in its pointer's tensor (origin {list(part.origin)}, sizes "
                f"{list(part.shape)}) is not supported",
                op,
            )
    shape = tuple(op.result.type.get_shape())
    assert isinstance(first, View)
    return View(first.memory, shape, first.padded, first.store_memory, (0,) * len(shape))


def rectangle(set_attr, op: Operation) -> list[tuple[int, int]]:
    """The box of a set that is exactly a box (each constraint bounds one dim)."""
    s = set_attr.data
    if s.num_symbols:
        raise LoweringError(f"'{op.name}': sets with symbols (dynamic tiles) are not supported", op)
    for c in s.constraints:
        cd, _, _ = linear_form(c.lhs - c.rhs, s.num_dims, 0)
        if sum(1 for a in cd if a) != 1 or max(abs(a) for a in cd) != 1:
            raise LoweringError(f"'{op.name}': a non-rectangular set ({c}) is not supported", op)
    try:
        return set_box(set_attr, op)
    except KtirError as error:
        raise LoweringError(str(error), op) from None


def affine_value(
    lw: KernelLowering, expr: AffineExpr, operands: list[Index], op: Operation
) -> SSAValue:
    """Emit `expr` over index operands (add, mul and constants; floordiv/mod too)."""
    from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineConstantExpr

    if isinstance(expr, AffineDimExpr):
        return operands[expr.position].value  # type: ignore[return-value]
    if isinstance(expr, AffineConstantExpr):
        return lw.index_constant(expr.value).value  # type: ignore[return-value]
    assert isinstance(expr, AffineBinaryOpExpr)
    a = affine_value(lw, expr.lhs, operands, op)
    b = affine_value(lw, expr.rhs, operands, op)
    make = {
        AffineBinaryOpKind.Add: arith.AddiOp,
        AffineBinaryOpKind.Mul: arith.MuliOp,
        AffineBinaryOpKind.FloorDiv: arith.FloorDivSIOp,
        AffineBinaryOpKind.CeilDiv: arith.CeilDivSIOp,
        AffineBinaryOpKind.Mod: arith.RemSIOp,
    }[expr.kind]
    return lw.emit(make(a, b)).results[0]


def access_box(op: ktdp.ConstructAccessTileOp) -> list[tuple[int, int]]:
    """Per base dim, the [lo, hi] of a rectangular access tile's coordinates relative to
    its base: its set's box, clipped to its type as ktir-cpu reads a set holding more
    (interp.ktir_sets.tile_box; the op warns)."""
    rectangle(op.access_tile_set, op)
    shape = tuple(op.result.type.get_shape())
    return tile_box(op.access_tile_set, op.access_tile_order, shape, op, LoweringError)


def access_tile(lw: KernelLowering, op: ktdp.ConstructAccessTileOp) -> Box:
    view = lw.get(op.base)
    if not isinstance(view, View):
        raise LoweringError(f"'{op.name}' on a tensor is not supported", op)
    if op.symbol_operands:
        raise LoweringError(f"'{op.name}' with symbols (dynamic tiles) is not supported", op)
    box = access_box(op)
    try:
        perm = order_perm(op.access_tile_order, op)
    except KtirError as error:
        raise LoweringError(str(error), op) from None
    indices = [lw.index(v, op) for v in op.indices]
    offsets = []
    origin = view.origin or (0,) * len(box)
    for expr, (lo, _), at in zip(op.base_map.data.results, box, origin):
        base = affine_value(lw, expr, indices, op)
        if lo + at:
            base = lw.emit(arith.AddiOp(base, lw.index_constant(lo + at).value)).results[0]
        offsets.append(base)
    extent = tuple(hi - lo + 1 for lo, hi in box)
    uniform = all(i.uniform for i in indices)
    return Box(view, offsets, extent, None if perm == sorted(perm) else tuple(perm), uniform)


def indirect_tile(lw: KernelLowering, op: ktdp.ConstructIndirectAccessTileOp) -> IndirectRows:
    """Rows of the base picked by an index view: dim 0 indirect through a box of the
    index view over the first variables, each other dim one remaining variable plus an
    offset of the captured values. Dims after the indirect one that are not whole make
    a window of the rows (the last dim must be whole: the window is whole sticks)."""
    kinds = op.kinds()
    maps = [m.data for m in op.per_dim_subscript_maps.data]
    table = lw.get(op.base)
    space = rectangle(op.variables_space_set, op)
    elements = element_tile(lw, op, space)  # every subscript indirect: ktir_elements
    if elements is not None:
        return elements  # type: ignore[return-value]
    paged = ktir_paged.paged_tile(lw, op, space)  # floordiv / mod subscripts: pages
    if paged is not None:
        return paged  # type: ignore[return-value]
    n_captured = len(op.captured_variables)
    unsupported = LoweringError(
        f"'{op.name}': only row gathers (an indirect first subscript over leading "
        "variables, each other dim one variable plus captured values, the last dim "
        "whole) and element gathers (every subscript an index view read at the "
        "variables) are supported",
        op,
    )
    if not kinds[0] or any(kinds[1:]) or not isinstance(table, View):
        raise unsupported
    if not all(affine_linear(r) for m in maps for r in m.results):
        raise unsupported
    variables = list(range(n_captured, n_captured + len(space)))
    captured = [lw.index(v, op) for v in op.captured_variables]
    at_lo = [*captured, *(lw.index_constant(lo) for lo, _ in space)]
    n_dims = n_captured + len(space)
    # Each index-view subscript uses at most one variable (a leading one, once).
    index_vars, box_shape = [], []
    for expr in maps[0].results:
        cd, _, _ = linear_form(expr, n_dims, 0)
        used = [v for v in variables if cd[v]]
        if len(used) > 1 or (used and cd[used[0]] != 1):
            raise unsupported
        index_vars += used
        lo, hi = space[used[0] - n_captured] if used else (0, 0)
        box_shape.append(hi - lo + 1)
    if index_vars != variables[: len(index_vars)]:
        raise unsupported
    rest = variables[len(index_vars) :]
    if len(rest) != len(maps) - 1:
        raise unsupported
    window, whole = [], True
    for k, (m, d) in enumerate(zip(maps[1:], rest), start=1):
        r = m.results[0]
        cd, _, _ = linear_form(r, n_dims, 0)
        if cd[d] != 1 or any(cd[v] for v in variables if v != d):
            raise unsupported
        lo, hi = space[d - n_captured]
        start = Index(affine_value(lw, r, at_lo, op), uniform=all(c.uniform for c in captured))
        if not isinstance(r, AffineDimExpr) or (lo, hi) != (0, table.shape[k] - 1):
            whole = False
        window.append((start, hi - lo + 1))
    if not whole and (window[-1][1] != table.shape[-1] or table.padded):
        raise unsupported
    index_view = lw.get(op.indirect_memrefs[0])
    rows_of = tuple(table.memory.type.get_shape())[1 : len(table.shape)]  # type: ignore[attr-defined]
    if any(table.origin[1:]) or rows_of != table.shape[1:]:
        raise LoweringError(
            f"'{op.name}': a row gather from a view (origin {list(table.origin)}, sizes "
            f"{list(table.shape)}) that is not whole rows of its pointer's tensor is not "
            "supported",
            op,
        )
    offsets = [
        shifted(lw, affine_value(lw, expr, at_lo, op), at)
        for expr, at in zip(maps[0].results, index_view.origin or (0,) * len(maps[0].results))
    ]
    index_box = Box(index_view, offsets, tuple(box_shape))
    shape = tuple(op.result.type.get_shape())
    return IndirectRows(table, index_box, shape, None if whole else tuple(window[:-1]))


def shifted(lw: KernelLowering, value: SSAValue, by: int) -> SSAValue:
    """`value + by` (the value itself when `by` is 0)."""
    if not by:
        return value
    return lw.emit(arith.AddiOp(value, lw.index_constant(by).value)).results[0]


def affine_linear(expr: AffineExpr) -> bool:
    """Whether `expr` is made of additions and multiplications only."""
    from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind

    if not isinstance(expr, AffineBinaryOpExpr):
        return True
    if expr.kind not in (AffineBinaryOpKind.Add, AffineBinaryOpKind.Mul):
        return False
    return affine_linear(expr.lhs) and affine_linear(expr.rhs)


def row_window(lw: KernelLowering, tile: IndirectRows, rows: Buf) -> Buf:
    """The window of gathered whole rows: the rows flattened to sticks, the window's
    sticks picked by an LX gather whose positions are a sum of iotas (one per dim,
    started at the window's position in it)."""
    table_shape = tile.table.shape
    n = 1
    for e in tile.index_box.shape:
        n *= e
    inner = table_shape[1:-1]
    sticks = n
    for e in inner:
        sticks *= e
    flat = lw.alloc((sticks, table_shape[-1]), rows.element)
    lw.emit(D.ComputeOp("spyre.reshape", [rows.value], [flat]))
    assert tile.window is not None
    pick_shape = (n, *(e for _, e in tile.window))
    strides = [1] * len(pick_shape)
    for d in range(len(pick_shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * (inner[d] if d < len(inner) else 1)
    zero = lw.index_constant(0).value
    position = None
    for d, stride in enumerate(strides):
        part = lw.alloc(pick_shape, IntegerType(32))
        at = [zero] * len(pick_shape)
        if d:
            at[d] = tile.window[d - 1][0].value
        attrs = {
            "dim": IntegerAttr(d, 64),
            "start": IntegerAttr(0, 64),
            "step": IntegerAttr(stride, 64),
        }
        lw.emit(D.ComputeOp("spyre.iota", [], [part], attrs, offsets=at))
        if position is not None:
            total = lw.alloc(pick_shape, IntegerType(32))
            lw.emit(D.ComputeOp("spyre.add", [position, part], [total]))
            part = total
        position = part
    picked = lw.alloc((*pick_shape, table_shape[-1]), rows.element)
    lw.emit(D.ComputeOp("spyre.gather", [flat, position], [picked]))
    if (*pick_shape, table_shape[-1]) == tile.shape:
        return Buf(picked, tile.shape)
    dest = lw.alloc(tile.shape, rows.element)
    lw.emit(D.ComputeOp("spyre.reshape", [picked], [dest]))
    return Buf(dest, tile.shape)


def table_rows(
    lw: KernelLowering, indices: SSAValue, shape: tuple[int, ...], element, table: View
) -> SSAValue:
    """Row indices of a table view made rows of its pointer's tensor: the view's first
    origin coordinate added when the view does not start at
    row 0 (a `spyre.full` of it)."""
    start = table.origin[0] if table.origin else 0
    if not start:
        return indices
    base = lw.alloc(shape, element)
    lw.emit(D.ComputeOp("spyre.full", [], [base], {"value": IntegerAttr(start, 64)}))
    total = lw.alloc(shape, element)
    lw.emit(D.ComputeOp("spyre.add", [indices, base], [total]))
    return total


def load(lw: KernelLowering, op: ktdp.LoadOp) -> Buf:
    tile = lw.get(op.access_tile)
    element = element_of(op.result.type)
    if isinstance(tile, IndirectElements):
        return load_elements(lw, tile, element)
    if isinstance(tile, ktir_paged.PagedTile):
        return ktir_paged.paged_load(tile, op, element)  # type: ignore[return-value]
    if isinstance(tile, IndirectRows):
        ib = tile.index_box
        index_element = ib.view.memory.type.element_type  # type: ignore[attr-defined]
        indices = table_rows(lw, index_tile(lw, ib), ib.shape, index_element, tile.table)
        rows_shape = (*ib.shape, *tile.table.shape[1:])
        rows = lw.alloc(rows_shape, element)
        lw.emit(D.GatherOp(tile.table.memory, indices, rows))
        if tile.window:
            return row_window(lw, tile, Buf(rows, rows_shape))
        if rows_shape == tile.shape:
            return Buf(rows, tile.shape)
        dest = lw.alloc(tile.shape, element)
        lw.emit(D.ComputeOp("spyre.reshape", [rows], [dest]))
        return Buf(dest, tile.shape)
    if not isinstance(tile, Box):
        raise LoweringError(f"'{op.name}': not an access tile", op)
    lazy = ktir_paged.box_load(lw, tile, op, element)  # streamed into a paged store
    if lazy is not None:
        return lazy  # type: ignore[return-value]
    shape = tuple(op.result.type.get_shape())

    def share(offsets: list[SSAValue], dest: SSAValue) -> bool:
        return shared_load(lw, tile, offsets, dest)

    return Buf(load_box(lw, tile, shape, element, share=share if tile.uniform else None), shape)


def shared_load(lw: KernelLowering, tile: Box, offsets: list[SSAValue], dest: SSAValue) -> bool:
    """A tile every core loads alike (its address does not depend on the core): each
    core loads 1/T of its rows and the cores all-gather them over the ring, so LPDDR5
    carries it once (as our L1 compiler shares a matmul's A tile). False when its
    rows do not split into whole parts."""
    shape = tuple(dest.type.get_shape())  # type: ignore[attr-defined]
    cores = lw.tiles
    if cores == 1 or not shape or shape[0] % cores:
        return False
    part_shape = (shape[0] // cores, *shape[1:])
    if len(shape) == 1 and part_shape[0] % stick_elements(dest.type.element_type):  # type: ignore[attr-defined]
        return False
    step = lw.index_constant(part_shape[0]).value
    first = lw.emit(arith.AddiOp(offsets[0], lw.emit(arith.MuliOp(lw.core, step)).results[0]))
    part = lw.alloc(part_shape, dest.type.element_type)  # type: ignore[attr-defined]
    lw.emit(D.LoadOp(tile.view.memory, [first.results[0], *offsets[1:]], part))
    lw.emit(D.RingAllgatherOp(part, dest, cores))
    return True


def store(lw: KernelLowering, op: ktdp.StoreOp) -> None:
    tile = lw.get(op.access_tile)
    data = lw.get(op.data_tile)
    if isinstance(tile, ktir_paged.PagedTile):
        if not isinstance(data, ktir_paged.BoxLoad):
            raise ktir_paged.refuse_paged_store(op)
        ktir_paged.scatter_paged(lw, data, tile, op)
        return
    if isinstance(data, ktir_paged.PagedLoad) and isinstance(tile, Box):
        ktir_paged.store_paged(lw, data, tile, op)
        return
    if isinstance(tile, IndirectRows | IndirectElements):
        ktir_scatter.scatter(lw, tile, op)
        return
    if not isinstance(tile, Box) or tile.perm is not None:
        raise LoweringError(f"'{op.name}' through a transposed tile is not supported", op)
    shape = tuple(op.data_tile.type.get_shape())
    offsets, lx_shape = box_address(lw, tile, shape)
    value = lw.math.materialize(lw.get(op.data_tile), lx_shape, element_of(op.data_tile.type), op)
    if lw.store_guard is not None:
        # Only where the guard holds: elsewhere the store starts past the tensor's end.
        end = lw.index_constant(tile.view.memory.type.get_shape()[0]).value  # type: ignore[attr-defined]
        zero = lw.index_constant(0).value
        guard = lw.store_guard.value
        shift = lw.emit(arith.SelectOp(guard, zero, end)).results[0]
        offsets[0] = lw.emit(arith.AddiOp(offsets[0], shift)).results[0]
    lw.emit(D.StoreOp(value.value, tile.view.store_memory, offsets))


def generic(lw: KernelLowering, op: Operation) -> object:
    """A parallel linalg.generic whose maps project dims: its body's scalar ops run on
    whole tiles (an input missing a dim broadcasts along it)."""
    kinds = [str(k.data) for k in op.iterator_types.data]  # type: ignore[attr-defined]
    outputs = list(op.outputs)  # type: ignore[attr-defined]
    if any(k != "parallel" for k in kinds) or len(outputs) != 1:
        raise LoweringError(
            "'linalg.generic' with reduction iterators or several outputs is not supported", op
        )
    shape = shape_of(outputs[0].type)
    args = []
    for value, m in zip([*op.inputs, *outputs], op.indexing_maps.data):  # type: ignore[attr-defined]
        dims = [r.position if isinstance(r, AffineDimExpr) else None for r in m.data.results]
        if None in dims or dims != sorted(dims):  # type: ignore[type-var]
            raise LoweringError(f"'linalg.generic' with indexing map {m} is not supported", op)
        x = lw.get(value)
        if len(dims) < len(shape) and isinstance(x, Buf):
            want = tuple(shape[d] if d in dims else 1 for d in range(len(shape)))
            x = Lazy(lw.math.materialize(x, want, x.element, op), shape, x.element)
        args.append(x)
    block = op.body.block  # type: ignore[attr-defined]
    for arg, value, operand in zip(block.args, args, [*op.inputs, *outputs]):  # type: ignore[attr-defined]
        lw.env[arg] = value
        lw.body_operands[arg] = operand
    outer, lw.body_shape = lw.body_shape, shape
    try:
        results = lw.lower_block(block)
    finally:
        lw.body_shape = outer
    return results[0]


# ---------------------------------------------------------------- tensor structure


def tensor_op(lw: KernelLowering, op: Operation) -> object:
    name = op.name
    t = op.results[0].type
    shape, element = shape_of(t), element_of(t)
    if name == "tensor.splat":
        x = lw.get(op.operands[0])
        return Lazy(x, shape, element)  # type: ignore[arg-type]
    if name == "tensor.extract":
        x = lw.get(op.operands[0])
        if isinstance(x, Lazy):
            return x.source
        if isinstance(x, Buf) and len(x.lx_shape) and all(d == 1 for d in x.lx_shape):
            return Buf(x.value, ())
        raise LoweringError(f"'{name}' of one element of a larger tile is not supported", op)
    if name == "tensor.empty":
        return Lazy(Scalar(0.0, element), shape, element)
    if name == "linalg.fill":
        return Lazy(lw.get(op.operands[0]), shape, element)  # type: ignore[arg-type]
    if name == "linalg.broadcast":
        x = lw.math.operand(lw.get(op.operands[0]), op)
        dims = {int(d) for d in op.dimensions.get_values()}  # type: ignore[attr-defined]
        want = tuple(1 if i in dims else d for i, d in enumerate(shape))
        if x.lx_shape != want and x.shape:
            x = lw.math.materialize(x, want, x.element, op)
        return Lazy(x, shape, element)
    if name == "linalg.reduce":
        return lw.math.reduce(op, lw.get(op.operands[0]), lw.get(op.operands[1]))
    if name == "linalg.matmul":
        a, b, c = (lw.get(v) for v in op.operands)
        return lw.math.matmul(op, a, b, c)
    if name == "linalg.generic":
        return generic(lw, op)
    if name == "linalg.transpose":
        x = lw.math.materialize(lw.get(op.operands[0]), shape_of(op.operands[0].type), element, op)
        out = lw.alloc(shape, element)
        perm = [int(p) for p in op.permutation.get_values()]  # type: ignore[attr-defined]
        lw.emit(D.ComputeOp("spyre.transpose", [x.value], [out], {"perm": D.dense(perm)}))
        return Buf(out, shape)
    if name == "tensor.extract_slice" and not is_whole_slice(op):
        from spyre_ir.lowering.ktir_slice import extract_slice

        return extract_slice(lw, op)  # part of a tile: a slice compute
    if name == "tensor.insert_slice":
        whole_slice(op)
    # expand_shape / collapse_shape / whole slices: the same elements in a new shape
    x = lw.get(op.operands[0])
    if isinstance(x, Lazy):
        return Lazy(x.source, shape, element)
    if unit_dims_alias(op, x, shape, element):
        return Buf(x.value, shape)  # type: ignore[union-attr]
    return lw.math.materialize(x, shape, element, op)


def unit_dims_alias(op: Operation, x: object, shape: tuple[int, ...], element) -> bool:
    """Whether a reshape `op` of `x` to `shape` may be `x`'s own buffer: unit dims added
    or dropped (`same_layout`: a 1024 weight tile read as 1x1024 moves nothing), the
    same element type, and `x` read by `op` alone and made by an op, so no other value
    names the buffer when an op overwrites it in place (`reusable`, `plan_in_place`
    follow the uses of one value)."""
    source = op.operands[0]
    return (
        isinstance(x, Buf)
        and x.element == element
        and same_layout(x.lx_shape, shape)
        and isinstance(source.owner, Operation)
        and len(list(source.uses)) == 1
    )


def is_whole_slice(op: Operation) -> bool:
    """Whether a slice takes all of its tensor (the rank-reducing
    `extract_slice %x[0, 0, 0] [1, 256, 64] [1, 1, 1]` ktir-cpu's fused softmax writes):
    the lowering takes it as a reshape."""
    whole = op.operands[1].type if op.name == "tensor.insert_slice" else op.operands[0].type
    sizes = list(op.static_sizes.get_values())  # type: ignore[attr-defined]
    return not (
        op.offsets  # type: ignore[attr-defined]
        or op.sizes  # type: ignore[attr-defined]
        or any(o != 0 for o in op.static_offsets.get_values())  # type: ignore[attr-defined]
        or any(s != 1 for s in op.static_strides.get_values())  # type: ignore[attr-defined]
        or sizes != list(whole.get_shape())  # type: ignore[attr-defined]
    )


def whole_slice(op: Operation) -> None:
    """A located error for a slice of part of a tile where only whole ones lower."""
    if not is_whole_slice(op):
        raise LoweringError(f"'{op.name}' of part of a tile is not supported", op)
