"""spyre-tile's streamed reduction: a lone sum, mean, reduce_max or reduce_min whose row
does not fit half of LX. Each core walks its row tiles as a rows kernel does; for each
tile it fills an f32 accumulator with the reduction's identity, then streams the first
body dim of the input - a reduced dim - in chunks of `c` (whole sticks along the stick
dim), reducing every chunk into the accumulator (`accumulate`); a mean scales the sum
by 1 / N at the end. Loads past the end of the input read the identity, so a ragged
last chunk adds nothing. The kernel reduces rows of any length, over any dims that
leave the first body dim among the reduced ones (softmax over dim 0 and long-row norms
are decomposed into such reductions and elementwise kernels by spyre-decompose)."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import Float32Type, Float64Type, FloatAttr
from xdsl.ir import SSAValue

from spyre_ir import cost_model
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import card_of
from spyre_ir.passes import row_model
from spyre_ir.passes.tile_kernel import box_offsets, elem_bytes, new_kernel, split_index

F32 = Float32Type()
IDENTITY = {
    "spyre.sum": 0.0,
    "spyre.mean": 0.0,
    "spyre.reduce_max": float("-inf"),
    "spyre.reduce_min": float("inf"),
}
"""What each streamed reduction starts from, and reads past the input's end."""


def streamed_reduction(group: dataflow.GroupOp) -> spyre.ReductionOp | None:
    """The group's lone float reduction of a group input, if it is one."""
    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    if len(ops) != 1 or not isinstance(ops[0], spyre.ReductionOp):
        return None
    op = ops[0]
    floats = ("f16", "bf16", "f32")
    if op.name not in IDENTITY or spyre.element_type_name(spyre.element_of(op.input)) not in floats:
        return None
    return op if op.input in group.body.block.args else None


def chunk_extent(group: dataflow.GroupOp, x: SSAValue, dim: int, whole_after: int,
                 acc_bytes: int, budget: int) -> int:  # fmt: skip
    """The chunk of `dim` that fits `budget` with the accumulators: whole sticks when it
    is the stick dim and shorter than the dim."""
    size = spyre.shape_of(x)[dim]
    largest = min(size, max(1, (budget - acc_bytes) // max(1, whole_after * elem_bytes(x))))
    stick = 1
    if dim == len(spyre.shape_of(x)) - 1 and largest < size:
        stick = card_of(group).elements_per_stick(spyre.element_type_name(spyre.element_of(x)))
        largest = max(stick, largest - largest % stick)
    # As many chunks as the largest needs, of equal size (no nearly empty last chunk).
    even = cost_model.ceil_div(size, cost_model.ceil_div(size, largest))
    even = cost_model.ceil_div(even, stick) * stick
    return min(even, largest) if largest < size else size


RING_KIND = {"spyre.sum": "add", "spyre.mean": "add", "spyre.reduce_max": "max",
             "spyre.reduce_min": "min"}  # fmt: skip
"""How the ring combines the partial results of each streamed reduction."""


def ring_group(cores: int, used: int, chunks: int) -> tuple[int, int]:
    """(g, chunks per member): with fewer row tiles than cores (a reduction over dim 0
    has one), each tile's chunks are split over a ring group of g consecutive cores
    that combine their partial results on the ring; g = 1 leaves the chunks on one
    core. g is as large as the idle cores allow, then shrunk so every member's first
    chunk is inside the input (later ones past its end read the identity)."""
    g = min(cores // max(used, 1), chunks)
    if g < 2:
        return 1, chunks
    per_member = cost_model.ceil_div(chunks, g)
    return cost_model.ceil_div(chunks, per_member), per_member


def ring_split(op: spyre.ReductionOp, cores: int, used: int, chunks: int) -> tuple[int, int]:
    """`ring_group` for a reduction the ring can combine (else one core per tile)."""
    return ring_group(cores, used, chunks) if op.name in RING_KIND else (1, chunks)


def tile_stream_group(group: dataflow.GroupOp, op: spyre.ReductionOp,
                      analysis: row_model.RowAnalysis, cores: int,
                      lx_bytes: int) -> dataflow.KernelOp:  # fmt: skip
    """The streamed reduction kernel of a rows group (see the module docstring)."""
    x, y = op.input, op.results[0]
    shape = spyre.shape_of(x)
    row_axes = [a for a in analysis.axes[x] if a is not None]
    body = [d for d in range(len(shape)) if d not in row_axes]
    where = f"group @{group.sym_name.data}"
    if not body or body[0] not in op.reduced_dims or body != list(range(body[0], len(shape))):
        raise located_error(group, f"{where}: {op.name} over {list(op.reduced_dims)} of "
                                   f"{list(shape)}: its row does not fit LX and its first "
                                   "body dim is not reduced, so it cannot be streamed")  # fmt: skip
    s = body[0]
    p = analysis.row_dims
    rows = analysis.rows
    inner, outer = (rows[-1], rows[:-1]) if p else (1, ())
    acc_row = math.prod(analysis.tile_shape(y, [1] * p))
    acc_bytes = 3 * acc_row * 4  # accumulator, scale and result, f32 at most
    budget = lx_bytes // 2
    c = chunk_extent(group, x, s, math.prod(shape[s + 1 :]), acc_bytes, budget)
    chunk_bytes = c * math.prod(shape[s + 1 :]) * elem_bytes(x)
    if chunk_bytes + acc_bytes > budget:
        raise located_error(group, f"{where}: a chunk of {c} along dim {s} of {list(shape)} "
                                   f"needs {chunk_bytes + acc_bytes} bytes; half of LX is "
                                   f"{budget}")  # fmt: skip
    t, used, per_core = cost_model.balanced_rows_tile(
        math.prod(outer), inner, chunk_bytes + acc_bytes, cores, lx_bytes
    )
    chunks = cost_model.ceil_div(shape[s], c)
    g, per_member = ring_split(op, cores, used, chunks)
    shell = new_kernel(group, used * g, lx_bytes, dataflow.RowsPlanAttr.of(p, used * g))
    b = shell.body
    extents = [1] * (p - 1) + [t] if p else []
    x_tile = list(analysis.tile_shape(x, extents))
    x_tile[s] = c
    y_tile = analysis.tile_shape(y, extents)
    chunk = b.alloc(x_tile, spyre.element_of(x))
    acc = b.alloc(y_tile, F32)
    identity = IDENTITY[op.name]
    props = dict(op.properties)
    kind = "spyre.sum" if op.name == "spyre.mean" else op.name

    core = shell.kernel.core_id
    member = b.rem(core, g)  # this core's place in its item's ring group
    item_core = b.div(core, g)  # which cores' share of the items it works on
    item_iv, lb = b.loop(per_core)
    item = lb.add(lb.mul(item_core, per_core), item_iv)
    chunk_of_rows = lb.rem(item, cost_model.ceil_div(inner, t)) if outer else item
    row_offsets = (
        [*split_index(lb, lb.div(item, cost_model.ceil_div(inner, t)), outer),
         lb.mul(chunk_of_rows, t)] if p else []
    )  # fmt: skip
    lb.compute_named("spyre.full", [], [acc], {"value": FloatAttr(identity, Float64Type())})
    j, cb = lb.loop(per_member)
    offsets = box_offsets(cb, x, analysis.axes[x], row_offsets)
    offsets[s] = cb.mul(cb.add(cb.mul(member, per_member), j), c)
    cb.emit(dataflow.LoadOp(shell.memory[x], offsets, chunk, pad=identity))
    cb.compute_named(kind, [chunk], [acc], props, accumulate=True)
    if g > 1:  # the members' partial results combined on the ring, in f32
        # Every member then holds the whole result and stores it: the same bytes to
        # the same place (a branch on the core id is not allowed: conditions must be
        # the same on every core), a small cost next to streaming the input.
        lb.emit(dataflow.RingAllreduceOp(acc, RING_KIND[op.name], g))
    result = acc
    if op.name == "spyre.mean":
        n = math.prod(shape[d] for d in op.reduced_dims)
        scale, result = b.alloc(y_tile, F32), b.alloc(y_tile, F32)
        lb.compute_named("spyre.full", [], [scale], {"value": FloatAttr(1.0 / n, Float64Type())})
        lb.compute_named("spyre.mul", [acc, scale], [result])
    if spyre.element_of(y) != F32:
        out = b.alloc(y_tile, spyre.element_of(y))
        lb.compute_named("spyre.cast", [result], [out])
        result = out
    y_offsets = box_offsets(lb, y, analysis.axes[y], row_offsets)
    lb.emit(dataflow.StoreOp(result, shell.memory[y], y_offsets))
    return shell.kernel
