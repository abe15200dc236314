"""KTIR views of a core's own LX (`memory_space = #ktdp.spyre_memory_space<LX>` at a
constant byte address; part of the KTIR -> dataflow lowering): what a kernel stores to
such a view it reads back later (ktir-cpu's softmax_lx_fused_calls.ktir keeps each
stage's tile in LX for the next), so a store is a copy into an LX buffer the lowering
keeps for that address, and a load of the same view is that buffer. The scratchpad
allocator places it with the kernel's other buffers; the kernel's addresses name
where the values live, not where our allocator puts them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Attribute, Operation

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ktdp
from spyre_ir.interp.ktir import constant_address, is_lx_view, set_box
from spyre_ir.lowering.ktir_values import Buf, Index, LoweringError

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering


@dataclass(frozen=True)
class LxView:
    address: int
    shape: tuple[int, ...]
    element: Attribute


@dataclass(frozen=True)
class LxTile:
    view: LxView


def handles(lw: KernelLowering, op: Operation) -> bool:
    if isinstance(op, ktdp.ConstructMemoryViewOp):
        return is_lx_view(op)
    if isinstance(op, ktdp.ConstructAccessTileOp | ktdp.LoadOp | ktdp.StoreOp):
        return any(isinstance(lw.env.get(v), LxView | LxTile) for v in op.operands)
    return False


def lower(lw: KernelLowering, op: Operation) -> object:
    if isinstance(op, ktdp.ConstructMemoryViewOp):
        address = constant_address(op.offset)
        if address is None:
            raise LoweringError(
                f"'{op.name}': views of {op.memory_space} memory are not supported other "
                "than at a constant byte address",
                op,
            )
        memref = op.result.type
        shape = tuple(memref.get_shape())  # type: ignore[attr-defined]
        return LxView(address, shape, memref.element_type)  # type: ignore[attr-defined]
    if isinstance(op, ktdp.ConstructAccessTileOp):
        view = lw.env[op.base]  # type: ignore[attr-defined]
        assert isinstance(view, LxView)
        offsets = [lw.env.get(v) for v in op.indices]  # type: ignore[attr-defined]
        box = set_box(op.access_tile_set, op)  # type: ignore[attr-defined]
        whole = [(0, n - 1) for n in view.shape]
        if any(not (isinstance(o, Index) and o.const == 0) for o in offsets) or box != whole:
            raise LoweringError(
                f"'{op.name}' of part of an LX view is not supported (the whole view only)", op
            )
        return LxTile(view)
    if isinstance(op, ktdp.StoreOp):
        tile = lw.env[op.access_tile]
        assert isinstance(tile, LxTile)
        v = tile.view
        copy = lw.alloc(v.shape, v.element)
        # A copy: the stored tile's buffer may be overwritten in place later.
        lw.math.materialize(lw.get(op.data_tile), v.shape, v.element, op, into=copy)
        lw.lx_contents[v] = Buf(copy, v.shape)
        return None
    assert isinstance(op, ktdp.LoadOp)
    tile = lw.env[op.access_tile]
    assert isinstance(tile, LxTile)
    held = lw.lx_contents.get(tile.view)
    if held is None:
        raise LoweringError(
            f"'{op.name}' of LX at byte {tile.view.address} that no earlier store of the "
            "kernel wrote as this view is not supported",
            op,
        )
    return held


_ = D  # the dataflow ops come through lw.math
