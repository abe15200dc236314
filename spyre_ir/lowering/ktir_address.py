"""The address space of a KTIR kernel whose memory views are built from integer
constants (`%a = arith.constant 1024 : index`, `ktdp.construct_memory_view %a, ...`)
rather than from its pointer arguments, as the specification's own examples write
them (docs/ktir.md, "Views at absolute addresses").

`bind_absolute_addresses(fn)` turns such a kernel into one with pointer arguments, so
the reference interpreter, the lowering and spyre-run's inputs treat it as any other:

* an absolute address counts elements of its view's element type (as `%ptr + N`
  does for a pointer argument); the view covers the elements from its address to the
  farthest one its sizes and strides reach;
* views whose element ranges overlap (in bytes) address one buffer: each buffer of
  the kernel's address space becomes a new `index` argument `%mem<ADDRESS>` (the
  buffer's lowest address), appended after the kernel's own arguments in address
  order, and each of its views sits at `%mem<ADDRESS> + (its address - ADDRESS)`;
  overlapping views of several element types (a memory region they share) are one
  buffer per type, `%mem<ADDRESS>_<type>`, marked with the region: the lowering
  holds them apart, which is the kernel's meaning when no access races (spyre-run
  checks that in the reference interpreter, spyre_ir/interp/ktir_races.py);
* sizes and strides given as SSA values that are constants (`arith.constant`, and
  `addi` / `subi` / `muli` / `divui` / `divsi` of constants) become static first, so
  a view's reach is known.

Views of a tile's own memory that the kernel only reads are per-tile input slabs,
buffers `%local<ADDRESS>` after the `%mem` ones, and views of core N's LX it only
reads input buffers `%core<N>_lx<ADDRESS>` (ktir_local). What stays unsupported is a
located error naming the construct: views of L0 at absolute addresses, stores to
`ct_local` or another core's LX there, and overlapping views of different element
types there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    i64,
)
from xdsl.ir import BlockArgument, SSAValue

from spyre_ir.dialects import ktdp
from spyre_ir.dialects.ktdp_syntax import DYNAMIC, segments
from spyre_ir.dialects.ktdp_types import MemorySpace, SpyreMemoryKind, SpyreMemorySpaceAttr
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.hardware import ELEMENT_BYTES
from spyre_ir.interp.ktir import address_from_argument, is_lx_view
from spyre_ir.lowering.ktir_local import (
    linear_tile_id,
    local_inputs,
    other_core_input,
    place_per_tile,
)
from spyre_ir.lowering.ktir_values import LoweringError

_FOLDABLE = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divui": lambda a, b: a // b if b else None,
    "arith.divsi": lambda a, b: int(a / b) if b else None,
}


def constant_value(value: SSAValue) -> int | None:
    """The integer an index expression of constants evaluates to, else None."""
    if isinstance(value, BlockArgument):
        return None
    op = value.owner
    if isinstance(op, arith.ConstantOp):
        return op.value.value.data if isinstance(op.value, IntegerAttr) else None
    fold = _FOLDABLE.get(op.name)
    if fold is None or len(op.operands) != 2:
        return None
    a, b = (constant_value(v) for v in op.operands)
    return None if a is None or b is None else fold(a, b)


@dataclass
class AddressBuffer:
    """One buffer of a kernel's address space: the views whose elements overlap."""

    start: int
    """Its lowest address, in elements of `element`."""
    end: int
    """One past its highest address, in elements."""
    element: object
    views: list[tuple[ktdp.ConstructMemoryViewOp, int]] = field(default_factory=list)
    """Each view with its address."""
    space: str = "mem"
    """`mem` (HBM), `local` (each tile's own memory, ktir_local: one slab per tile) or
    `core<N>_lx` (core N's LX, read as input data)."""
    region: int | None = None
    """The byte address of the memory region it shares with buffers of other element
    types (views of several types overlap there), else None."""
    suffix: str = ""
    argument: int = -1
    """Its pointer argument's position, once bound."""

    @property
    def name(self) -> str:
        return f"{self.space}{self.start}{self.suffix}"

    @property
    def byte_start(self) -> int:
        return self.start * ELEMENT_BYTES[element_type_name(self.element)]

    @property
    def local(self) -> bool:
        return self.space == "local"


def fold_static_sizes(view: ktdp.ConstructMemoryViewOp) -> ktdp.ConstructMemoryViewOp:
    """`view` with its constant SSA sizes and strides made static (a new op in its
    place), or `view` itself when it has none or one is not constant."""
    if not view.sizes and not view.strides:
        return view
    dynamic = iter([*view.sizes, *view.strides])
    values = []
    for s in [*view.sizes_static(), *view.strides_static()]:
        values.append(constant_value(next(dynamic)) if s == DYNAMIC else s)
    if any(v is None for v in values):
        return view
    rank = len(view.sizes_static())
    props = dict(view.properties)
    props["static_sizes"] = DenseArrayBase.from_list(i64, values[:rank])
    props["static_strides"] = DenseArrayBase.from_list(i64, values[rank:])
    props["operandSegmentSizes"] = segments(1, 0, 0)
    new = ktdp.ConstructMemoryViewOp.create(
        operands=[view.offset],
        result_types=[view.result.type],
        properties=props,
        attributes=dict(view.attributes),
    )
    new.result.name_hint = view.result.name_hint
    new.location = view.location  # its errors point at the source line
    view.parent_block().insert_op_before(new, view)  # type: ignore[union-attr]
    view.result.replace_all_uses_with(new.result)
    view.detach()
    view.erase()
    return new


def _per_core(view: ktdp.ConstructMemoryViewOp) -> bool:
    space = view.memory_space
    kind = getattr(space, "kind", None)
    if kind is not None:
        return kind.data not in (SpyreMemoryKind.HBM, SpyreMemoryKind.unspecified)
    return getattr(space, "data", None) == MemorySpace.ct_local


def _reach(view: ktdp.ConstructMemoryViewOp) -> int:
    """How many elements from its address the view spans."""
    if view.sizes or view.strides:
        raise LoweringError(
            f"'{view.name}' at an absolute address with sizes or strides that are not "
            "constants is not supported (its extent in the address space is unknown)",
            view,
        )
    sizes, strides = view.sizes_static(), view.strides_static()
    if any(n <= 0 for n in sizes):
        return 0
    return sum((n - 1) * abs(st) for n, st in zip(sizes, strides)) + 1


ADDRESS_UNITS = {"element": 0, "byte": 1, "stick": 128}
"""What an absolute address counts (`--address-unit`): elements of its view's type
(0), or that many bytes."""


def element_address(op: ktdp.ConstructMemoryViewOp, address: int, unit: str) -> int:
    """`address`, written in `unit`s, in elements of `op`'s type."""
    if unit not in ADDRESS_UNITS:
        raise ValueError(f"address unit '{unit}' is not one of {', '.join(ADDRESS_UNITS)}")
    width = ELEMENT_BYTES[element_type_name(op.result.type.element_type)]  # type: ignore[attr-defined]
    per = ADDRESS_UNITS[unit]
    if not per:
        return address
    if address * per % width:
        raise LoweringError(
            f"'{op.name}': address {address} ({unit}s, {address * per} bytes) is not a whole "
            f"number of its {width}-byte elements",
            op,
        )
    return address * per // width


def address_buffers(fn: func.FuncOp, unit: str = "element") -> list[AddressBuffer]:
    """The buffers of `fn`'s address space (none when every view is on a pointer
    argument), then those of its tiles' own memory read as input (ktir_local);
    constant SSA sizes of those views are made static on the way."""
    local = {id(v) for v in local_inputs(fn) or []}
    placed: dict[str, list[tuple[int, int, ktdp.ConstructMemoryViewOp, int]]] = {}
    for op in list(fn.walk()):
        if not isinstance(op, ktdp.ConstructMemoryViewOp) or address_from_argument(op.offset):
            continue
        address = constant_value(op.offset)
        if address is None:
            continue  # neither a pointer nor a constant: the lowering reports it, in order
        own = id(op) in local
        space = "local" if own else other_core_input(op)
        if space is None and is_lx_view(op) and op.memory_space.core.data == -1:  # type: ignore[attr-defined]
            continue  # a core's own LX the kernel writes: see ktir_lx
        if space is None and _per_core(op):
            raise LoweringError(
                f"'{op.name}': views of {op.memory_space} memory at absolute addresses are "
                "not supported (only a tile's own memory, read as its input data)",
                op,
            )
        op = fold_static_sizes(op)
        assert isinstance(op.result.type, MemRefType)
        address = element_address(op, address, unit)
        width = ELEMENT_BYTES[element_type_name(op.result.type.element_type)]
        at = (address * width, (address + _reach(op)) * width, op, address)
        placed.setdefault(space or "mem", []).append(at)
    spaces = sorted(placed, key=lambda k: (k != "mem", k != "local", k))
    return [b for k in spaces for b in _group(placed[k], k)]


def _group(
    placed: list[tuple[int, int, ktdp.ConstructMemoryViewOp, int]], space: str
) -> list[AddressBuffer]:
    """Views (byte start, byte end, view, address) grouped into buffers: views whose
    bytes overlap share memory (they alias). A run of overlapping views of one element
    type is one buffer; one of several types (an HBM region) is one buffer per type,
    each marked with the region (`AddressBuffer.region`: the lowering holds them apart,
    spyre-run draws the region's bytes once and the reference interpreter checks that
    no access races, ktir_races)."""
    placed.sort(key=lambda p: (p[0], p[1]))
    regions: list[list[tuple[int, int, ktdp.ConstructMemoryViewOp, int]]] = []
    last_end = None
    for at in placed:
        if regions and last_end is not None and at[0] < last_end:
            regions[-1].append(at)
            last_end = max(last_end, at[1])
        else:
            regions.append([at])
            last_end = at[1]
    buffers: list[AddressBuffer] = []
    for region in regions:
        types: dict[str, list[tuple[int, int, ktdp.ConstructMemoryViewOp, int]]] = {}
        for at in region:
            types.setdefault(element_type_name(at[2].result.type.element_type), []).append(at)  # type: ignore[attr-defined]
        if len(types) > 1 and space != "mem":
            raise _alias_error(region, space)
        for kind, views in types.items():
            element = views[0][2].result.type.element_type  # type: ignore[attr-defined]
            start = min(a for _, _, _, a in views)
            buffer = AddressBuffer(start, start, element, [(v, a) for _, _, v, a in views], space)
            if len(types) > 1:
                buffer.region = region[0][0]
                buffer.suffix = f"_{kind}"
            buffer.end = max(a + _reach(v) for v, a in buffer.views)
            buffers.append(buffer)
    return buffers


def _alias_error(
    region: list[tuple[int, int, ktdp.ConstructMemoryViewOp, int]], space: str
) -> LoweringError:
    """The located error of a view of a tile's own or another core's memory that
    overlaps one of another element type (aliasing there is not modelled)."""
    first = region[0]
    op = next(
        at
        for at in region
        if at[2].result.type.element_type != first[2].result.type.element_type  # type: ignore[attr-defined]
    )
    return LoweringError(
        f"'{op[2].name}': this {op[2].result.type.element_type} view at element {op[3]} "  # type: ignore[attr-defined]
        f"(bytes {op[0]}..{op[1] - 1}) overlaps the {first[2].result.type.element_type} view "  # type: ignore[attr-defined]
        f"at element {first[3]} (bytes {first[0]}..{first[1] - 1}) in {space} memory: "
        "aliasing views of two element types are supported in HBM only",
        op[2],
    )


def bind_absolute_addresses(fn: func.FuncOp, unit: str = "element") -> list[AddressBuffer]:
    """Give each buffer of `fn`'s address space a pointer argument (see the module
    docstring), its addresses counting `unit`s (ADDRESS_UNITS); returns the buffers,
    in the order of their new arguments."""
    buffers = address_buffers(fn, unit)
    if not buffers:
        return []
    block = fn.body.block
    tile = (
        linear_tile_id(fn, ktdp.grid_of(fn, LoweringError))
        if any(b.local for b in buffers)
        else None
    )
    for buffer in buffers:
        buffer.argument = len(block.args)
        pointer = block.insert_arg(IndexType(), len(block.args))
        pointer.name_hint = buffer.name
        if buffer.local:
            assert tile is not None
            for view, address in buffer.views:
                length = buffer.end - buffer.start
                place_per_tile(view, pointer, tile, length, address - buffer.start)
            continue
        for view, _ in buffer.views:
            if buffer.space != "mem":  # another core's LX: an input buffer (ktir_local)
                view.properties["memory_space"] = SpyreMemorySpaceAttr(SpyreMemoryKind.HBM)
        for view, address in buffer.views:
            if address == buffer.start:
                view.operands[0] = pointer
                continue
            step = arith.ConstantOp(IntegerAttr(address - buffer.start, IndexType()))
            at = arith.AddiOp(pointer, step.result)
            view.parent_block().insert_ops_before([step, at], view)  # type: ignore[union-attr]
            view.operands[0] = at.result
    inputs = [a.type for a in block.args]
    fn.function_type = FunctionType.from_lists(inputs, list(fn.function_type.outputs.data))
    return buffers


def parse_grid(text: str) -> tuple[int, ...]:
    """`"32"` or `"2,16"` -> the launch grid; ValueError on anything else."""
    try:
        grid = tuple(int(part) for part in text.replace("x", ",").split(","))
    except ValueError:
        raise ValueError(f"grid '{text}' is not a list of tile counts such as 32 or 2,16") from None
    if not grid or any(n <= 0 for n in grid):
        raise ValueError(f"grid '{text}' must name positive tile counts")
    return grid


def launch_grid(fn: func.FuncOp, grid: tuple[int, ...]) -> None:
    """Launch `fn` over `grid` tiles: the `grid` attribute a kernel written without one
    (the specification's examples) lacks. A kernel's own grid must agree with it."""
    own = fn.attributes.get("grid")
    if own is not None:
        mine = tuple(int(a.value.data) for a in own.data)  # type: ignore[attr-defined]
        if mine != grid:
            raise LoweringError(
                f"@{fn.sym_name.data} declares grid = {list(mine)}, not the launch grid "
                f"{list(grid)}",
                fn,
            )
        return
    fn.attributes["grid"] = ArrayAttr([IntegerAttr(n, i64) for n in grid])
