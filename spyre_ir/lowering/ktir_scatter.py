"""Scatters: a `ktdp.store` through an indirect access tile (docs/ktir.md, the lowering).

The gathers' duals, written straight to LPDDR5 with `dataflow.scatter`, so the
table may be far larger than LX and the elements the store does not name keep the
memory's contents:

* a **row scatter** (`%Y[ind(%I[%m]), (%k)]`: `Y[I[m], k] = X[m, k]`, the tile
  ktir_memory's `indirect_tile` takes as a row gather, its other dims whole): the
  index view's box loaded (one index per stick, as a gather's), the rows of the
  stored tile written to the table rows it names;
* an **element scatter** (`%Y[ind(%I[%m, %k]), ind(%J[%m, %k])]`: `Y[I[m, k], J[m,
  k]] = X[m, k]`, ktir-cpu's `indirect-scatter.mlir`, the tile ktir_elements takes
  as an element gather): the flat position `sum_d I_d * stride_d` in the pointer's
  tensor formed with i32 tile ops (ktir_elements.flat_positions) and each element
  written to it by one `dataflow.scatter {dims = rank}`: a row of one element, part
  of a stick, so the scatter is masked (it writes its own element of the stick).

An index named twice with different values is the reference interpreter's located
error (ktir_races.repeated_writes), before the lowering runs; the same value twice
is one write's meaning. Refused, each a located error: a scatter through a window
of the rows, a table spread one element per stick, a scatter in a branch taken on
some tiles only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ktdp
from spyre_ir.lowering.ktir_compute import element_of
from spyre_ir.lowering.ktir_elements import IndirectElements, flat_positions, index_tile
from spyre_ir.lowering.ktir_values import IndirectRows, LoweringError

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering


def scatter(lw: KernelLowering, tile: IndirectRows | IndirectElements, op: ktdp.StoreOp) -> None:
    """Lower the store `op` through the indirect tile `tile` (module docstring)."""
    table = tile.table
    if lw.store_guard is not None:
        raise LoweringError(
            f"'{op.name}' through an indirect tile in a branch taken on some tiles only "
            "is not supported",
            op,
        )
    if table.padded:
        raise LoweringError(
            f"'{op.name}' through an indirect tile into a view spread one element per "
            "stick is not supported",
            op,
        )
    if isinstance(tile, IndirectRows) and tile.window is not None:
        raise LoweringError(
            f"'{op.name}' through a window of the rows (an indirect tile whose other dims "
            "are not whole) is not supported: only whole rows are scattered",
            op,
        )
    memory = table.store_memory or table.memory
    element = element_of(op.data_tile.type)
    value = lw.math.materialize(lw.get(op.data_tile), tile.shape, element, op)
    if isinstance(tile, IndirectElements):
        dims = tuple(memory.type.get_shape())  # type: ignore[attr-defined]
        origin = table.origin or (0,) * len(dims)
        positions = flat_positions(lw, tile, dims, origin)
        lw.emit(D.ScatterOp(value.value, positions, memory, dims=len(dims)))
        return
    from spyre_ir.lowering.ktir_memory import table_rows

    box = tile.index_box
    index_element = box.view.memory.type.element_type  # type: ignore[attr-defined]
    indices = table_rows(lw, index_tile(lw, box), box.shape, index_element, table)
    rows_shape = (*box.shape, *table.shape[1:])
    rows = value.value
    if rows_shape != value.lx_shape:
        rows = lw.alloc(rows_shape, element)
        lw.emit(D.ComputeOp("spyre.reshape", [value.value], [rows]))
    lw.emit(D.ScatterOp(rows, indices, memory))
