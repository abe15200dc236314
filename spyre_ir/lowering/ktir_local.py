"""Views of a tile's own memory at absolute addresses that the kernel only reads
(docs/ktir.md, "Views at absolute addresses").

The specification's inter-tile examples (ktir-mlir-frontend docs/inter-tile-examples,
kt07a / kt07b) read their input from the executing tile's local memory:
`ktdp.construct_memory_view %c0 ... {memory_space = #ktdp.memory_space<ct_local>}`,
which "with no ct_id is the executing tile's local memory" (their comment), filled
by the harness before the kernel, a different slab on every tile. KTDP.td names
`ct_local` a memory space and gives the view's offset as "the start address in the
memory space", so such a view is per-tile data at the same address on every tile.

`bind_local_inputs(fn, grid)` gives each buffer of that per-tile address space (the
views whose elements overlap, as for HBM views in ktir_address) a pointer argument
`%local<ADDRESS>` holding every tile's slab one after the other (tile t's at t times
the buffer's length, tiles numbered as the reference interpreter numbers them) and
places each view at `%local<ADDRESS> + t * length + (its address - ADDRESS)` in HBM:
ktir_tile_offset then makes that a view of one tensor. spyre-run fills it like any
input. On the simulated card each tile loads its slab from LPDDR5 at the start of
the kernel: the card's LX contents before a kernel are not modelled, so the
simulated time includes that load.

Only views no store of the kernel writes qualify (`ct_local`, and `LX` without a
core when the kernel stores to no LX view: ktir_lx keeps LX a kernel writes); a
`ct_local` view a kernel also stores to stays a located error, as do views of L0.

A view of another core's LX (`<LX, core = N>`, the LX partitions of ktir-cpu's
distributed-view-copy.mlir) that no store writes is data core N holds before the
kernel, the same whichever tile reads it: `other_core_input` names its buffer
`core<N>_lx`, an input in HBM like the `%mem` ones (the card would read it over the
ring from core N; the simulator reads it from LPDDR5). A store to one is a located
error.
"""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import SSAValue

from spyre_ir.dialects import ktdp
from spyre_ir.dialects.ktdp_types import MemorySpace, SpyreMemoryKind, SpyreMemorySpaceAttr
from spyre_ir.interp.ktir import is_lx_view
from spyre_ir.lowering.ktir_values import LoweringError


def is_own_memory(view: ktdp.ConstructMemoryViewOp) -> bool:
    """A view of the executing tile's local memory: `ct_local`, or LX of no core."""
    if getattr(view.memory_space, "data", None) == MemorySpace.ct_local:
        return True
    return is_lx_view(view) and view.memory_space.core.data == -1  # type: ignore[attr-defined]


def _stored(view: ktdp.ConstructMemoryViewOp) -> bool:
    """Whether a store of the kernel writes through an access tile of `view`."""
    for use in view.result.uses:
        tile = use.operation
        if any(isinstance(u.operation, ktdp.StoreOp) for u in tile.results[0].uses):
            return True
    return False


def local_inputs(fn: func.FuncOp) -> list[ktdp.ConstructMemoryViewOp] | None:
    """The views of own memory that become per-tile inputs, or None when the kernel
    writes LX (its LX views are then ktir_lx's); a stored `ct_local` view is an
    error."""
    views = [op for op in fn.walk() if isinstance(op, ktdp.ConstructMemoryViewOp)]
    own = [v for v in views if is_own_memory(v)]
    for v in own:
        if not is_lx_view(v) and _stored(v):
            raise LoweringError(
                f"'{v.name}': a store to {v.memory_space} memory at an absolute address is "
                "not supported (its views are read as each tile's input data)",
                v,
            )
    if any(is_lx_view(v) and _stored(v) for v in own):
        return [v for v in own if not is_lx_view(v)]
    return own


def linear_tile_id(fn: func.FuncOp, grid: tuple[int, ...]) -> SSAValue:
    """A linear tile id computed at the top of `fn` (the first grid dim fastest, as
    interp.ktir numbers tiles)."""
    block = fn.body.block
    ids = ktdp.GetComputeTileIdOp(len(grid))
    ops: list = [ids]
    linear: SSAValue = ids.results[-1]
    for d in range(len(grid) - 2, -1, -1):
        size = arith.ConstantOp(IntegerAttr(grid[d], IndexType()))
        scaled = arith.MuliOp(linear, size.result)
        linear_op = arith.AddiOp(scaled.result, ids.results[d])
        ops += [size, scaled, linear_op]
        linear = linear_op.result
    first = block.first_op
    assert first is not None
    block.insert_ops_before(ops, first)
    return linear


def place_per_tile(
    view: ktdp.ConstructMemoryViewOp, pointer: SSAValue, tile: SSAValue, length: int, delta: int
) -> None:
    """`view` at `pointer + tile * length + delta`, in HBM."""
    size = arith.ConstantOp(IntegerAttr(length, IndexType()))
    scaled = arith.MuliOp(tile, size.result)
    ops: list = [size, scaled]
    offset = scaled.result
    if delta:
        shift = arith.ConstantOp(IntegerAttr(delta, IndexType()))
        moved = arith.AddiOp(offset, shift.result)
        ops += [shift, moved]
        offset = moved.result
    at = arith.AddiOp(pointer, offset)
    view.parent_block().insert_ops_before([*ops, at], view)  # type: ignore[union-attr]
    view.operands[0] = at.result
    view.properties["memory_space"] = SpyreMemorySpaceAttr(SpyreMemoryKind.HBM)
    assert isinstance(view.result.type, MemRefType)


def other_core_input(view: ktdp.ConstructMemoryViewOp) -> str | None:
    """`core<N>_lx` for a view of core N's LX (`<LX, core = N>`) that no store of the
    kernel writes: data that core holds before the kernel, read by any tile (as the
    LX partitions of ktir-cpu's distributed-view-copy.mlir); None for other views. A
    store to one is a located error."""
    if not is_lx_view(view) or view.memory_space.core.data < 0:  # type: ignore[attr-defined]
        return None
    if _stored(view):
        raise LoweringError(
            f"'{view.name}': a store to {view.memory_space} memory at an absolute address "
            "is not supported (another core's LX is read as that core's input data)",
            view,
        )
    return f"core{view.memory_space.core.data}_lx"  # type: ignore[attr-defined]
