"""Paged tiles: an indirect access tile over whole pages of a table, streamed page by
page (docs/ktir.md, the lowering).

`%X[ind(%I[%b, %t floordiv 64]), (%h), (%t mod 64), (%d)]` over the variables (b, h,
t, d) is the tile `T[b, h, t, d] = X[I[b, t floordiv 64], h, t mod 64, d]`: dim 0 of
the table is a page, picked by the page table I; the variable t runs over several
pages (its quotient by the page length P picks the page, its remainder the row in
it). Such a tile is typically far larger than a core's LX (a sequence's KV cache),
so it is never materialised: a load of it is kept lazy (`PagedLoad`) and its one
store through a rectangular (possibly permuted) tile becomes a loop over the pages,
each iteration loading one page-table entry, gathering that page into LX with
`dataflow.gather` (a whole row of the table's dim 0), transposing it into the
store's order with one `spyre.transpose` when the two orders differ, and storing it
where its tokens go.

Taken in this form only (each other a located error naming the construct): no
captured variables, the variables' box starting at 0 and ordered as written; each
index-view subscript a variable `(v)` or `(v floordiv P)`; each other subscript a
variable `(v)` covering its whole table dim or `(v mod P)` with P that dim's extent,
the same v as the floordiv, its extent a multiple of P; every variable used once
among the table dims except those only in the index subscripts.

The dual, a store through a paged tile (a KV-cache write, paged-tensor-write), takes
a load of a rectangular tile that only this store reads: that load is kept lazy too
(`BoxLoad`) and the store is the same loop, each iteration loading the page's part of
the box transposed into the page's order (the DMA's perm) and writing it to the table
row the page-table entry names with `dataflow.scatter`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
)

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ktdp
from spyre_ir.lowering.ktir_values import Box, LoweringError, View

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering

# The pages one step moves, at most (or one page): its three buffers (the gathered
# pages, their transpose, the stored chunk), each double buffered by
# spyre-double-buffer, take 768 KiB of a core's 2 MiB LX.
STEP_BYTES = 128 * 1024


@dataclass
class PagedTile:
    """A paged indirect tile. Per tile dim (= variable): `role` is "index" (only in the
    index subscripts), "page" (the paged variable: floordiv in the index, mod in table
    dim `table_dim`) or "direct" (a whole table dim `table_dim`)."""

    table: View
    index_view: View
    index_subscripts: list[tuple[int, int]]
    """Per index-view dim: (variable, divisor): the coordinate is variable // divisor."""
    roles: list[str]
    table_dims: list[int | None]
    shape: tuple[int, ...]
    page: int
    op: Operation


@dataclass
class PagedLoad:
    """A load of a paged tile, not materialised: only a store may read it."""

    tile: PagedTile
    element: object


def _var(expr: AffineExpr, n: int) -> int | None:
    return expr.position if isinstance(expr, AffineDimExpr) and expr.position < n else None


def _div_mod(expr: AffineExpr, kind: AffineBinaryOpKind, n: int) -> tuple[int, int] | None:
    """(variable, constant) of `v floordiv c` / `v mod c`, else None."""
    if not isinstance(expr, AffineBinaryOpExpr) or expr.kind != kind:
        return None
    v = _var(expr.lhs, n)
    if v is None or not isinstance(expr.rhs, AffineConstantExpr) or expr.rhs.value <= 0:
        return None
    return v, expr.rhs.value


def paged_tile(
    lw: KernelLowering, op: ktdp.ConstructIndirectAccessTileOp, space: list[tuple[int, int]]
) -> PagedTile | None:
    """`op` as a paged tile, or None when it has no `floordiv` / `mod` subscript (not
    one); a located error when it has them but not in the form taken (module doc)."""
    maps = [m.data for m in op.per_dim_subscript_maps.data]
    exprs = [r for m in maps for r in m.results]
    divided = [
        e
        for e in exprs
        if isinstance(e, AffineBinaryOpExpr)
        and e.kind in (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.Mod)
    ]
    if not divided:
        return None

    def refuse(why: str) -> LoweringError:
        return LoweringError(
            f"'{op.name}': a paged tile (floordiv / mod subscripts) {why}; only pages "
            "gathered whole (docs/ktir.md, ktir_paged.py) are supported",
            op,
        )

    kinds = op.kinds()
    table, index_view = lw.get(op.base), lw.get(op.indirect_memrefs[0])
    if op.captured_variables:
        raise refuse("with captured variables")
    if not kinds[0] or any(kinds[1:]) or len(op.indirect_memrefs) != 1:
        raise refuse("indirect in another dim than the first")
    if not isinstance(table, View) or not isinstance(index_view, View) or table.padded:
        raise refuse("over a view that is not a plain memory view")
    if any(table.origin) or tuple(table.memory.type.get_shape()) != table.shape:  # type: ignore[attr-defined]
        raise refuse("over a view that is not its pointer's whole tensor")
    n = len(space)
    shape = tuple(hi - lo + 1 for lo, hi in space)
    if any(lo for lo, _ in space) or shape != tuple(op.result.type.get_shape()):
        raise refuse("whose variables do not start at 0 or do not give the tile's shape")
    order = op.variables_space_order.data
    if [_var(r, n) for r in order.results] != list(range(n)):
        raise refuse("with a variables order that is not the identity")
    index_subscripts = []
    for e in maps[0].results:
        v = _var(e, n)
        vd = (v, 1) if v is not None else _div_mod(e, AffineBinaryOpKind.FloorDiv, n)
        if vd is None:
            raise refuse(f"with the index subscript '{e}' (a variable or its floordiv)")
        index_subscripts.append(vd)
    roles: list[str | None] = [None] * n
    table_dims: list[int | None] = [None] * n
    page = None
    for k, m in enumerate(maps[1:], start=1):
        e = m.results[0]
        v = _var(e, n)
        if v is not None:
            if shape[v] != table.shape[k]:
                raise refuse(f"whose variable d{v} covers {shape[v]} of table dim {k}'s "
                             f"{table.shape[k]}")  # fmt: skip
            role = "direct"
        else:
            vm = _div_mod(e, AffineBinaryOpKind.Mod, n)
            if vm is None or vm[1] != table.shape[k]:
                raise refuse(f"with the subscript '{e}' of table dim {k} (a variable or "
                             f"its mod the dim's extent)")  # fmt: skip
            v, page, role = vm[0], vm[1], "page"
            if (v, page) not in index_subscripts or shape[v] % page:
                raise refuse(f"whose d{v} mod {page} has no matching floordiv in the index "
                             "or does not cover whole pages")  # fmt: skip
        if roles[v] is not None:
            raise refuse(f"using d{v} in two table dims")
        roles[v], table_dims[v] = role, k
    for v, d in index_subscripts:
        if d == 1 and roles[v] is not None:
            raise refuse(f"using d{v} in the index and in a table dim")
        if d != 1 and roles[v] != "page":
            raise refuse(f"with d{v} floordiv {d} but no d{v} mod {d}")
        if d == 1 and roles[v] is None:
            roles[v] = "index"
    if page is None or None in roles:
        raise refuse("with a variable in no subscript or no mod subscript")
    return PagedTile(table, index_view, index_subscripts, roles, table_dims, shape,  # type: ignore[arg-type]
                     page, op)  # fmt: skip


def paged_load(tile: PagedTile, op: ktdp.LoadOp, element) -> PagedLoad:
    """A load of a paged tile, kept lazy; a located error at a reader other than a store
    (tile math on it would need the whole tile in LX, which it is not)."""
    for use in op.result.uses:
        reader = use.operation
        if not (isinstance(reader, ktdp.StoreOp) and reader.data_tile is op.result):
            raise LoweringError(
                f"'{reader.name}' of a paged tile (a load through floordiv / mod subscripts) "
                "is not supported: it is streamed page by page, so only a store may take it",
                reader,
            )
    return PagedLoad(tile, element)


@dataclass
class BoxLoad:
    """A load of a rectangular tile whose one reader is a store through a paged tile:
    not materialised, loaded page by page into the scatter's rows."""

    box: Box
    element: object


@dataclass
class _Step:
    """One iteration of the page loops: the loop counters per variable, the first page
    of the step, its page-table entries in LX, and per box dim (in the box's memory
    order) its offset and extent."""

    ivs: dict[int, SSAValue]
    indices: SSAValue
    index_shape: tuple[int, ...]
    offsets: list[SSAValue]
    extents: list[int]


def _check_box(tile: PagedTile, box: Box, op: Operation) -> list[int]:
    """The box's perm (tile dim -> memory dim); a located error for a padded view."""
    if box.view.padded:
        raise LoweringError(
            f"'{op.name}': a paged tile moved to or from a view spread one element per "
            "stick is not supported",
            op,
        )
    return list(box.perm) if box.perm is not None else list(range(len(tile.shape)))


def _page_loops(lw: KernelLowering, tile: PagedTile, box: Box, step: int, body) -> None:
    """Emit the loops over `tile`'s index-only variables and its page steps (`step`
    pages each), calling `body(step)` inside with the step's page-table entries and the
    box's offsets and extents for the step."""
    n = len(tile.shape)
    perm = list(box.perm) if box.perm is not None else list(range(n))
    paged_var = tile.roles.index("page")
    loops = [(v, tile.shape[v]) for v in range(n) if tile.roles[v] == "index"]
    loops.append((paged_var, tile.shape[paged_var] // tile.page // step))
    outer = lw.block
    ivs: dict[int, SSAValue] = {}
    bodies = []
    for v, count in loops:
        block = Block(arg_types=[IndexType()])
        bodies.append((block, count))
        lw.block = block
        ivs[v] = block.args[0]
    first_page = lw.emit(arith.MuliOp(ivs[paged_var], lw.index_constant(step).value)).results[0]
    index_offsets = [first_page if d != 1 else ivs[v] for v, d in tile.index_subscripts]
    for k, at in enumerate(tile.index_view.origin):  # an index view at pointer + offset
        if at:
            shift = lw.index_constant(at).value
            index_offsets[k] = lw.emit(arith.AddiOp(index_offsets[k], shift)).results[0]
    index_shape = tuple(step if d != 1 else 1 for _, d in tile.index_subscripts)
    from spyre_ir.lowering.ktir_elements import index_tile

    indices = index_tile(lw, Box(tile.index_view, index_offsets, index_shape))
    offsets, extents = [], []
    for m in range(n):
        v = perm.index(m)
        base = box.offsets[m]
        if tile.roles[v] == "direct":
            offsets.append(base)
            extents.append(tile.shape[v])
            continue
        if tile.roles[v] == "index":
            at, extent = ivs[v], 1
        else:
            page = lw.index_constant(tile.page).value
            at, extent = lw.emit(arith.MuliOp(first_page, page)).results[0], step * tile.page
        offsets.append(lw.emit(arith.AddiOp(base, at)).results[0])
        extents.append(extent)
    body(_Step(ivs, indices, index_shape, offsets, extents))
    for k in range(len(bodies) - 1, -1, -1):
        block, count = bodies[k]
        block.add_op(scf.YieldOp())
        lw.block = bodies[k - 1][0] if k else outer
        zero, one = lw.index_constant(0).value, lw.index_constant(1).value
        lw.emit(scf.ForOp(zero, lw.index_constant(count).value, one, [], Region(block)))


def _pages_per_step(tile: PagedTile, element) -> int:
    """The most pages (a divisor of the paged variable's) within STEP_BYTES, at least 1."""
    page_bytes = D.LxType((1,), element).element_bytes  # type: ignore[arg-type]
    for e in tile.table.shape[1:]:
        page_bytes *= e
    pages = tile.shape[tile.roles.index("page")] // tile.page
    fits = [c for c in range(1, pages + 1) if pages % c == 0 and c * page_bytes <= STEP_BYTES]
    return max(fits, default=1)


def _gathered_order(tile: PagedTile, perm: list[int]) -> list[int]:
    """The dims of the gathered rows ([index dims..., table dims 1...]) in the box's
    memory order (a page step's pages and its page rows next to each other)."""
    paged = next(j for j, (_, d) in enumerate(tile.index_subscripts) if d != 1)
    first_table_dim = len(tile.index_subscripts) - 1
    order: list[int] = []
    for m in range(len(tile.shape)):
        v = perm.index(m)
        if tile.roles[v] == "index":
            order.append(next(j for j, (u, d) in enumerate(tile.index_subscripts) if u == v))
        elif tile.roles[v] == "page":
            order += [paged, first_table_dim + tile.table_dims[v]]  # type: ignore[operator]
        else:
            order.append(first_table_dim + tile.table_dims[v])  # type: ignore[operator]
    return order + [j for j in range(first_table_dim + len(tile.shape)) if j not in order]


def store_paged(lw: KernelLowering, value: PagedLoad, target: Box, op: ktdp.StoreOp) -> None:
    """Store the paged load `value` through the rectangular tile `target`: per page
    step, gather the pages, transpose them into the box's order, store them."""
    tile, element = value.tile, value.element
    perm = _check_box(tile, target, op)
    step = _pages_per_step(tile, element)

    def body(at: _Step) -> None:
        rows_shape = (*at.index_shape, *tile.table.shape[1:])
        rows = lw.alloc(rows_shape, element)  # type: ignore[arg-type]
        lw.emit(D.GatherOp(tile.table.memory, at.indices, rows))
        order = _gathered_order(tile, perm)
        source = rows
        if order != sorted(order):
            moved = lw.alloc(tuple(rows_shape[j] for j in order), element)  # type: ignore[arg-type]
            lw.emit(D.ComputeOp("spyre.transpose", [rows], [moved], {"perm": D.dense(order)}))
            source = moved
        chunk = lw.alloc(tuple(at.extents), element)  # type: ignore[arg-type]
        lw.emit(D.ComputeOp("spyre.reshape", [source], [chunk]))
        lw.emit(D.StoreOp(chunk, target.view.store_memory, at.offsets))

    _page_loops(lw, tile, target, step, body)


def box_load(lw: KernelLowering, box: Box, op: ktdp.LoadOp, element) -> BoxLoad | None:
    """A load of `box` kept lazy when its only reader is a store through a paged tile
    already lowered (paged-tensor-write's source), else None."""
    uses = list(op.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, ktdp.StoreOp):
        return None
    store = uses[0].operation
    if store.data_tile is not op.result or not isinstance(lw.env.get(store.access_tile), PagedTile):
        return None
    return BoxLoad(box, element)


def scatter_paged(lw: KernelLowering, value: BoxLoad, tile: PagedTile, op: ktdp.StoreOp) -> None:
    """Store the lazy box load `value` through the paged tile: per page, load the
    page's part of the box transposed into the page's order (the DMA's perm), and
    scatter it to the table row its page-table entry names (`dataflow.scatter`)."""
    box, element = value.box, value.element
    perm = _check_box(tile, box, op)
    n = len(tile.shape)
    # The loaded part in LX: the index variables (extent 1), then the variable of each
    # table dim 1... in table order; each LX dim reads box memory dim perm[variable].
    order = [v for v in range(n) if tile.roles[v] == "index"]
    order += sorted((v for v in range(n) if tile.roles[v] != "index"),
                    key=lambda v: tile.table_dims[v])  # fmt: skip

    def body(at: _Step) -> None:
        load_perm = [perm[v] for v in order]
        part = lw.alloc(tuple(at.extents[m] for m in load_perm), element)  # type: ignore[arg-type]
        identity = load_perm == sorted(load_perm)
        lw.emit(D.LoadOp(box.view.memory, at.offsets, part, perm=None if identity else load_perm))
        rows = lw.alloc((*at.index_shape, *tile.table.shape[1:]), element)  # type: ignore[arg-type]
        lw.emit(D.ComputeOp("spyre.reshape", [part], [rows]))
        table = tile.table.store_memory or tile.table.memory
        lw.emit(D.ScatterOp(rows, at.indices, table))

    _page_loops(lw, tile, box, 1, body)


def refuse_paged_store(op: ktdp.StoreOp) -> LoweringError:
    return LoweringError(
        f"'{op.name}' through a paged indirect tile of a tensor other than a load of a "
        "rectangular tile read by this store alone is not supported (the pages are "
        "scattered as that load streams them)",
        op,
    )
