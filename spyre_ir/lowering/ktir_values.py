"""What KTIR values become inside a lowered `dataflow.kernel` (shared by the KTIR ->
dataflow lowering's modules), and the kernel signature KTIR pointers give."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, MemRefType
from xdsl.ir import Attribute, Operation, SSAValue

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ktdp
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering


class LoweringError(Exception):
    """A KTIR construct the lowering does not support, located at `op`."""

    def __init__(self, message: str, op: Operation | None):
        super().__init__(message)
        self.op = op


@dataclass
class Index:
    """An index (or integer) value of the kernel body; `const` when known. `per_core`
    holds its value on every core when it depends on the core id alone, `uniform`
    whether it is the same on every core (loop bounds and branch conditions at L3 must
    be)."""

    value: SSAValue | None
    const: int | None = None
    per_core: object = None
    uniform: bool = True


@dataclass
class Scalar:
    """A compile-time float or integer scalar (constants, `--scalars` values)."""

    value: float
    type: Attribute


@dataclass
class Buf:
    """A KTIR tensor held in an LX buffer. `shape` is the KTIR shape; the buffer's
    shape may keep reduced dims as 1 (the layout a keepdim reduction leaves)."""

    value: SSAValue
    shape: tuple[int, ...]

    @property
    def lx_shape(self) -> tuple[int, ...]:
        return tuple(self.value.type.get_shape())  # type: ignore[attr-defined]

    @property
    def element(self) -> Attribute:
        return self.value.type.element_type  # type: ignore[attr-defined]


@dataclass
class Lazy:
    """A tensor not materialised: a splat of a scalar (`source` a Scalar, or a
    one-element Buf), or a broadcast of a Buf whose LX shape has 1 on the new dims."""

    source: Scalar | Buf
    shape: tuple[int, ...]
    element: Attribute


@dataclass
class View:
    """A memory view: the kernel's DDR argument of its pointer (`store_memory`, the
    result it stores to: another one when the pointer is also loaded from); `padded`
    when its last dim is spread one element per stick (a trailing unit dim in DDR)."""

    memory: SSAValue
    shape: tuple[int, ...]
    padded: bool
    store_memory: SSAValue | None = None
    origin: tuple[int, ...] = ()
    """Where the view's coordinate 0 lies in its pointer's tensor (all 0 when empty)."""


@dataclass
class Box:
    """A rectangular access tile: view, offsets (index values) and extent per view dim,
    `perm` when the tile is a transpose of the box."""

    view: View
    offsets: list[SSAValue]
    shape: tuple[int, ...]
    perm: tuple[int, ...] | None = None
    uniform: bool = False


def box_address(
    lw: KernelLowering, box: Box, shape: tuple[int, ...]
) -> tuple[list[SSAValue], tuple[int, ...]]:
    """Where a tile of `shape` on `box` lies in its view's memory: the offsets and the
    LX shape of its buffer. A padded view holds one element per stick (its memory has a
    trailing unit dim): one more offset, and the tile is `(*shape, 1)` in LX."""
    if not box.view.padded:
        return list(box.offsets), shape
    return [*box.offsets, lw.index_constant(0).value], (*shape, 1)  # type: ignore[list-item]


def load_box(
    lw: KernelLowering,
    box: Box,
    shape: tuple[int, ...],
    element: Attribute,
    plain: bool = False,
    share: Callable[[list[SSAValue], SSAValue], bool] | None = None,
) -> SSAValue:
    """`box` loaded into a new LX buffer, of `box_address`'s LX shape (a transposed box
    through the load's permutation), reshaped to `shape` when `plain` (an index view's
    box read as positions); `share(offsets, dest)` may load it instead, True when it
    did (ktir_memory's ring-shared load). The accesses' and the index views' loads."""
    offsets, lx_shape = box_address(lw, box, shape)
    perm = None
    if box.perm is not None:
        perm = [*box.perm, *([len(shape)] if box.view.padded else [])]
    dest = lw.alloc(lx_shape, element)
    if not (perm is None and share is not None and share(offsets, dest)):
        lw.emit(D.LoadOp(box.view.memory, offsets, dest, perm=perm))
    if plain and lx_shape != shape:
        values = lw.alloc(shape, element)
        lw.emit(D.ComputeOp("spyre.reshape", [dest], [values]))
        return values
    return dest


@dataclass
class IndirectRows:
    """An indirect access tile gathering rows: the index view's box and the table.
    `window`, when the dims after the indirect one are not all whole: per such dim
    (all but the last, which is whole) its first position in the row and its extent."""

    table: View
    index_box: Box
    shape: tuple[int, ...]
    window: tuple[tuple[Index, int], ...] | None = None


@dataclass
class Future:
    """A produced future: its partial buffers (computed on every tile), the size of the
    groups of consecutive tiles, and the producer's position in its group when one
    tile per group produces (None: every tile does)."""

    partials: list[Buf]
    group_size: int
    producer: int | None


@dataclass
class Pointer:
    """A pointer argument: its tensor's shape (the views' shape; or, when views sit at
    constant element offsets from it, the row-major tensor their strides and reach
    give), and whether the kernel reads / writes it. `offsets[i]` is `views[i]`'s."""

    index: int
    name: str
    shape: tuple[int, ...]
    element: Attribute
    read: bool = False
    written: bool = False
    padded: bool = False
    views: list[ktdp.ConstructMemoryViewOp] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)


def stick_elements(element: Attribute) -> int:
    return DEFAULT_CONFIG.stick_bytes // ELEMENT_BYTES[element_type_name(element)]


def _tiles_of(view: Operation) -> list[tuple[Operation, tuple[int, ...]]]:
    """The access tiles on a view, with their extents."""
    found = []
    for use in view.result.uses:
        op = use.operation
        if isinstance(op, ktdp.ConstructAccessTileOp) and use.index == 0:
            found.append((op, op.result.type.get_shape()))
        elif isinstance(op, ktdp.ConstructIndirectAccessTileOp) and use.index == 0:
            found.append((op, ()))  # its base (an index view is read only: below)
        elif isinstance(op, ktdp.ConstructDistributedMemoryViewOp):
            found.extend(_tiles_of(op))  # a partition: the tiles on the whole view
    return found


def constant_index(value: SSAValue) -> int | None:
    """The value of an `arith.constant` integer, else None."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerAttr

    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def pointer_views(arg: SSAValue) -> list[tuple[ktdp.ConstructMemoryViewOp, int]]:
    """The memory views on a pointer, directly or at a constant element offset
    (`arith.addi %ptr, %c2048`), with that offset."""
    found, work = [], [(arg, 0)]
    while work:
        value, offset = work.pop()
        for use in value.uses:
            op = use.operation
            if isinstance(op, ktdp.ConstructMemoryViewOp) and use.index == 0:
                found.append((op, offset))
            elif op.name == "arith.addi":
                step = constant_index(op.operands[1 - use.index])
                if step is not None:
                    work.append((op.results[0], offset + step))
    return found


def column_major_twin(view: ktdp.ConstructMemoryViewOp) -> tuple[int, int] | None:
    """For a 2-D column-major view (strides [1, s], s at least its rows: element (i, j)
    at i + s * j, as an LX partition of ktir-cpu's distributed-view-copy.mlir), the
    shape [columns, s] of the row-major tensor whose transpose it views; else None."""
    if view.sizes or view.strides or len(view.sizes_static()) != 2:
        return None
    (rows, cols), (s0, s1) = view.sizes_static(), view.strides_static()
    if s0 != 1 or s1 < rows or cols < 2:
        return None
    return (cols, s1)


def pointer_shape(
    name: str, views: list[tuple[ktdp.ConstructMemoryViewOp, int]]
) -> tuple[tuple[int, ...], Attribute]:
    """The shape and element type of the tensor a pointer's views address: their own
    shape when they all sit at the pointer with one shape; else the row-major tensor
    whose trailing dims the (shared) strides give and whose rows reach the farthest
    element a view addresses."""
    first = views[0][0].result.type
    assert isinstance(first, MemRefType)
    for v, _ in views:
        if v.sizes or v.strides or any(d < 0 for d in v.result.type.get_shape()):
            raise LoweringError(
                f"'{v.name}' with dynamic sizes or strides is not supported (pointer %{name}): "
                "sizes and strides must be constants or come from scalar arguments given "
                "values (--scalars)",
                v,
            )
    shapes = {tuple(v.result.type.get_shape()) for v, _ in views}
    elements = {v.result.type.element_type for v, _ in views}
    if len(elements) > 1:
        raise LoweringError(
            f"pointer %{name} is viewed with element types {sorted(map(str, elements))}",
            views[0][0],
        )
    if len(shapes) == 1 and all(offset == 0 for _, offset in views):
        twin = column_major_twin(views[0][0])
        if len(views) == 1 and twin is not None:
            return twin, first.element_type  # the row-major tensor it is the transpose of
        return tuple(first.get_shape()), first.element_type
    strides = {tuple(v.strides_static()) for v, _ in views}
    if len(strides) != 1 or any(v.sizes or v.strides for v, _ in views):
        raise LoweringError(
            f"pointer %{name} is viewed with several shapes or offsets and strides "
            f"{sorted(strides)}: one set of static strides is needed",
            views[0][0],
        )
    (stride,) = strides
    rows = [stride[d - 1] // stride[d] for d in range(1, len(stride))]
    if stride[-1] != 1 or any(stride[d - 1] % stride[d] for d in range(1, len(stride))):
        raise LoweringError(
            f"pointer %{name}: strides {list(stride)} are not those of a row-major tensor",
            views[0][0],
        )
    reach = max(
        offset + sum((n - 1) * st for n, st in zip(v.sizes_static(), stride)) + 1
        for v, offset in views
    )
    return (-(-reach // stride[0]), *rows), first.element_type


def kernel_pointers(fn: func.FuncOp) -> dict[int, Pointer]:
    """The pointer arguments of a KTIR kernel (index arguments that address memory
    views) with their shapes, element types, and how the kernel uses them."""
    pointers: dict[int, Pointer] = {}
    for k, arg in enumerate(fn.body.block.args):
        found = pointer_views(arg)
        if not found or not isinstance(arg.type, IndexType):
            continue
        name = arg.name_hint or f"arg{k}"
        shape, element = pointer_shape(name, found)
        p = Pointer(k, name, shape, element)
        p.views = [v for v, _ in found]
        p.offsets = [offset for _, offset in found]
        for view in p.views:
            for tile, extent in _tiles_of(view):
                for use in tile.results[0].uses:
                    if isinstance(use.operation, ktdp.LoadOp):
                        p.read = True
                    elif isinstance(use.operation, ktdp.StoreOp):
                        p.written = True
                if extent and p.shape:
                    last, n = extent[-1], stick_elements(p.element)
                    if last % n and last < p.shape[-1]:
                        p.padded = True
            for use in view.result.uses:
                op = use.operation
                if isinstance(op, ktdp.ConstructIndirectAccessTileOp) and use.index > 0:
                    # An index view: a row gather's few indices are read one stick
                    # each; an element gather's (every subscript indirect) whole.
                    p.read = True
                    p.padded = p.padded or not all(op.kinds())
        pointers[k] = p
    return pointers


def check_in_place(fn: func.FuncOp, pointers: dict[int, Pointer]) -> None:
    """A pointer both loaded and stored (in place) becomes an input and an output of
    the L2 kernel: its loads read the input, its stores write the output. That is the
    kernel's meaning when no load of it follows a store to it, which this checks in
    program order (the elements it does not store are the input's in the reference
    and not in the result: `spyre-run --check` reports them)."""
    in_place = {id(v): p for p in pointers.values() if p.read and p.written for v in p.views}
    if not in_place:
        return
    stored: set[int] = set()
    for op in fn.walk():
        if not isinstance(op, ktdp.LoadOp | ktdp.StoreOp):
            continue
        tile = op.access_tile.owner
        view = getattr(tile, "base", None)
        p = in_place.get(id(getattr(view, "owner", None)))
        if p is None:
            continue
        if isinstance(op, ktdp.StoreOp):
            stored.add(p.index)
        elif p.index in stored:
            raise LoweringError(
                f"pointer %{p.name} is loaded after it is stored: an in-place kernel "
                "reading what it wrote is not supported by the lowering",
                op,
            )
