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
among the table dims except those only in the index subscripts. A store through a
paged tile (a scatter of pages, paged-tensor-write) needs a DDR scatter, which the
L2 level does not have: a located error.
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

# The LX one page step may take: its gathered pages and their transpose, each double
# buffered (spyre-double-buffer), within a quarter of a core's 2 MiB LX.
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


def store_paged(lw: KernelLowering, value: PagedLoad, target: Box, op: ktdp.StoreOp) -> None:
    """Store the paged load `value` through the rectangular tile `target`: a loop over
    the index-only variables and the page steps (module docstring)."""
    tile = value.tile
    n = len(tile.shape)
    perm = list(target.perm) if target.perm is not None else list(range(n))
    if target.view.padded or tuple(op.data_tile.type.get_shape()) != tile.shape:
        raise LoweringError(
            f"'{op.name}' of a paged tile through a tile spread one element per stick or of "
            "another shape is not supported",
            op,
        )
    element = value.element
    table_shape = tile.table.shape
    page_bytes = 1
    for e in table_shape[1:]:
        page_bytes *= e
    page_bytes *= D.LxType((1,), element).element_bytes  # type: ignore[arg-type]
    paged_var = tile.roles.index("page")
    pages = tile.shape[paged_var] // tile.page
    step = max(c for c in range(1, pages + 1) if pages % c == 0 and c * page_bytes <= max(
        STEP_BYTES, page_bytes))  # fmt: skip
    loops = [(v, tile.shape[v]) for v in range(n) if tile.roles[v] == "index"]
    loops.append((paged_var, pages // step))
    outer = lw.block
    ivs: dict[int, SSAValue] = {}
    bodies = []
    for v, count in loops:
        body = Block(arg_types=[IndexType()])
        bodies.append((body, count))
        lw.block = body
        ivs[v] = body.args[0]
    # Page step s covers pages s*step .. s*step+step-1 of the paged variable.
    first_page = lw.emit(arith.MuliOp(ivs[paged_var], lw.index_constant(step).value)).results[0]
    index_offsets = []
    for v, d in tile.index_subscripts:
        index_offsets.append(first_page if d != 1 else ivs[v])
    index_shape = tuple(step if d != 1 else 1 for _, d in tile.index_subscripts)
    from spyre_ir.lowering.ktir_elements import index_tile

    indices = index_tile(lw, Box(tile.index_view, index_offsets, index_shape))
    rows_shape = (*index_shape, *table_shape[1:])
    rows = lw.alloc(rows_shape, element)  # type: ignore[arg-type]
    lw.emit(D.GatherOp(tile.table.memory, indices, rows))
    # The gathered dims: the index dims (one of them the page step), then table dims
    # 1... Each store-memory dim m takes tile dim i = perm^-1(m)'s variable.
    paged_index_dim = next(j for j, (v, d) in enumerate(tile.index_subscripts) if d != 1)
    src_dims: list[int] = []  # per store dim, the gathered dim(s) it comes from
    order: list[int] = []
    chunk: list[int] = []
    inverse = [perm.index(m) for m in range(n)]
    for m in range(n):
        v = inverse[m]
        if tile.roles[v] == "index":
            chunk.append(1)
            j = next(j for j, (u, d) in enumerate(tile.index_subscripts) if u == v and d == 1)
            order.append(j)
        elif tile.roles[v] == "page":
            chunk.append(step * tile.page)
            order += [paged_index_dim, len(index_shape) + tile.table_dims[v] - 1]  # type: ignore[operator]
        else:
            chunk.append(tile.shape[v])
            order.append(len(index_shape) + tile.table_dims[v] - 1)  # type: ignore[operator]
        src_dims.append(v)
    order += [j for j in range(len(rows_shape)) if j not in order]  # unused unit index dims
    source = rows
    if order != sorted(order):
        moved_shape = tuple(rows_shape[j] for j in order)
        moved = lw.alloc(moved_shape, element)  # type: ignore[arg-type]
        lw.emit(D.ComputeOp("spyre.transpose", [rows], [moved], {"perm": D.dense(order)}))
        source = moved
    final = lw.alloc(tuple(chunk), element)  # type: ignore[arg-type]
    lw.emit(D.ComputeOp("spyre.reshape", [source], [final]))
    offsets = []
    for m in range(n):
        v = src_dims[m]
        base = target.offsets[m]
        if tile.roles[v] == "index":
            at = ivs[v]
        elif tile.roles[v] == "page":
            at = lw.emit(arith.MuliOp(first_page, lw.index_constant(tile.page).value)).results[0]
        else:
            offsets.append(base)
            continue
        offsets.append(lw.emit(arith.AddiOp(base, at)).results[0])
    lw.emit(D.StoreOp(final, target.view.store_memory, offsets))
    # Close the loops, innermost first.
    for k in range(len(bodies) - 1, -1, -1):
        body, count = bodies[k]
        body.add_op(scf.YieldOp())
        lw.block = bodies[k - 1][0] if k else outer
        zero, one = lw.index_constant(0).value, lw.index_constant(1).value
        bound = lw.index_constant(count).value
        lw.emit(scf.ForOp(zero, bound, one, [], Region(body)))


def refuse_paged_store(op: ktdp.StoreOp) -> LoweringError:
    return LoweringError(
        f"'{op.name}' through a paged indirect tile (a scatter of pages to HBM, "
        "paged-tensor-write) is not supported: the L2 level has no DDR scatter, only "
        "dataflow.gather (docs/ktir.md)",
        op,
    )
