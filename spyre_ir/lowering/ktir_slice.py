"""`tensor.extract_slice` of a KTIR tile: static offsets, sizes and strides.

The slice of a tile in LX is one `spyre.slice` compute (the tile op of L1's slicing);
a rank-reducing result drops unit dims of the slice by a reshape. Dynamic offsets,
sizes or strides (SSA operands) are a located error naming them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.ir import Operation

from spyre_ir.dialects import dataflow as D
from spyre_ir.lowering.ktir_compute import element_of, shape_of
from spyre_ir.lowering.ktir_values import Buf, LoweringError

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering


def static_slice(op: Operation) -> tuple[list[int], list[int], list[int]]:
    """The (offsets, sizes, strides) of an extract_slice; a LoweringError if dynamic."""
    dynamic = [what for what in ("offsets", "sizes", "strides") if len(getattr(op, what))]
    if dynamic:
        raise LoweringError(
            f"'{op.name}' with dynamic {' and '.join(dynamic)} is not supported", op
        )
    return tuple(  # type: ignore[return-value]
        [int(v) for v in getattr(op, f"static_{what}").get_values()]
        for what in ("offsets", "sizes", "strides")
    )


def extract_slice(lw: KernelLowering, op: Operation) -> Buf:
    offsets, sizes, strides = static_slice(op)
    source_shape = shape_of(op.operands[0].type)
    shape, element = shape_of(op.results[0].type), element_of(op.results[0].type)
    x = lw.math.materialize(lw.get(op.operands[0]), source_shape, element, op)
    stops = [o + (n - 1) * s + 1 for o, n, s in zip(offsets, sizes, strides)]
    sliced = lw.alloc(tuple(sizes), element)
    attrs = {"starts": D.dense(offsets), "stops": D.dense(stops), "steps": D.dense(strides)}
    lw.emit(D.ComputeOp("spyre.slice", [x.value], [sliced], attrs))
    if tuple(sizes) == tuple(shape):
        return Buf(sliced, shape)
    return lw.math.materialize(Buf(sliced, tuple(sizes)), shape, element, op)
