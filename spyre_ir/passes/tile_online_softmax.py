"""spyre-tile's streaming softmax: a lone softmax over the last dim whose row does not
fit half of LX, in one kernel (spyre-decompose-long-rows leaves such a softmax whole
unless `stream-softmax=false`). Each core walks its tiles of `t` rows as a rows kernel
does and makes two passes over their chunks of `c` elements (whole sticks):

* online max and sum, in f32: for each chunk x, m' = max(m, max(x)) (a reduce_max
  accumulated into m, after m is kept as the previous max), s = s * exp(m - m') +
  sum(exp(x - m')). Loads past the row's end read -inf, whose exp adds nothing;
* then, with r = 1 / s, every chunk again: y = exp(x - m) * r, stored.

With fewer row tiles than cores, a tile's chunks are split over a ring group of g
cores; between the passes the members combine their (m, s): m by a ring max, then each
s rescaled by exp(m_i - m) and added on the ring. The row is read twice and written
once; nothing between the passes goes to LPDDR5.
A softmax fused with other ops is split from them first (passes/split_group.py)."""

from __future__ import annotations

import math

from xdsl.dialects.builtin import Float32Type, Float64Type, FloatAttr, IntegerAttr, UnitAttr, i64
from xdsl.ir import SSAValue

from spyre_ir import cost_model, shape_rules
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.lowering.dataflow_to_units import CORELET
from spyre_ir.passes import row_model
from spyre_ir.passes.tile_kernel import (
    BodyBuilder,
    box_offsets,
    elem_bytes,
    new_kernel,
    split_index,
)
from spyre_ir.passes.tile_stream import chunk_extent, ring_group

F32 = Float32Type()
FLOATS = ("f16", "bf16", "f32")


def streamable_softmax(op: spyre.SoftmaxOp) -> bool:
    """A float softmax over the last dim: the one this kernel streams."""
    rank = len(spyre.shape_of(op.input))
    (dim,) = shape_rules.normalize_dims([op.dim.value.data], rank)
    return dim == rank - 1 and spyre.element_type_name(spyre.element_of(op.input)) in FLOATS


def streamed_softmax(group: dataflow.GroupOp) -> spyre.SoftmaxOp | None:
    """The group's lone streamable softmax of a group input, if it is one."""
    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    if len(ops) != 1 or not isinstance(ops[0], spyre.SoftmaxOp):
        return None
    op = ops[0]
    if not streamable_softmax(op) or op.input not in group.body.block.args:
        return None
    return op


def pinned(b: BodyBuilder, kind: str, inputs: list[SSAValue], output: SSAValue,
           attrs: dict | None = None) -> None:  # fmt: skip
    """A tile op on corelet 0. Every op of the kernel runs there: the running max and
    sum, carried from chunk to chunk and updated in place, are then each written by one
    unit, whose program order orders their carried reads and writes (the unit lowering
    places its syncs by program order within an iteration)."""
    op = dataflow.ComputeOp(kind, inputs, [output], attrs)
    op.attributes[CORELET] = IntegerAttr(0, i64)
    b.emit(op)


def combine_on_ring(b: BodyBuilder, lb: BodyBuilder, m: SSAValue, total: SSAValue,
                    row_tile: list[int], g: int) -> tuple[SSAValue, SSAValue]:  # fmt: skip
    """The row's max and sum from a ring group's members' (m, s): m by a ring max,
    then each s rescaled by exp(m_i - m) and added on the ring (g = 1: m and s as they
    are). Into buffers of their own, so those carried through pass 1 have one writer."""
    if g == 1:
        return m, total
    row_max, row_sum, own_diff, own_scale = (b.alloc(row_tile, F32) for _ in range(4))
    pinned(lb, "spyre.cast", [m], row_max)
    lb.emit(dataflow.RingAllreduceOp(row_max, "max", g))
    pinned(lb, "spyre.sub", [m, row_max], own_diff)
    pinned(lb, "spyre.exp", [own_diff], own_scale)
    pinned(lb, "spyre.mul", [total, own_scale], row_sum)
    lb.emit(dataflow.RingAllreduceOp(row_sum, "add", g))
    return row_max, row_sum


def _value(value: float) -> dict:
    return {"value": FloatAttr(value, Float64Type())}


def tile_online_softmax_group(group: dataflow.GroupOp, op: spyre.SoftmaxOp,
                              analysis: row_model.RowAnalysis, cores: int,
                              lx_bytes: int) -> dataflow.KernelOp:  # fmt: skip
    """The streaming softmax kernel of a rows group (see the module docstring)."""
    x, y = op.input, op.results[0]
    shape = spyre.shape_of(x)
    s = len(shape) - 1
    p = analysis.row_dims
    if p != s:
        raise located_error(group, f"group @{group.sym_name.data}: a streamed softmax "
                                   f"needs every dim but the last a row dim, not {p}")  # fmt: skip
    rows = analysis.rows
    inner, outer = (rows[-1], rows[:-1]) if p else (1, ())
    acc_bytes = 8 * 4 * 2  # the running max and sum and their temporaries, f32
    # Per element of a chunk: the loaded chunk and the stored result (their own types)
    # and two f32 working tiles.
    per_element = 2 * elem_bytes(x) + elem_bytes(y) + 8
    budget = lx_bytes // 2
    c = chunk_extent(group, x, s, 1, 0, (budget - acc_bytes) // per_element * elem_bytes(x))
    c = min(c, shape[s])
    chunk_bytes = c * per_element
    if chunk_bytes + acc_bytes > budget:
        raise located_error(group, f"group @{group.sym_name.data}: a chunk of {c} of the "
                                   f"softmax's row needs {chunk_bytes + acc_bytes} bytes; "
                                   f"half of LX is {budget}")  # fmt: skip
    t, used, per_core = cost_model.balanced_rows_tile(
        math.prod(outer), inner, chunk_bytes + acc_bytes, cores, lx_bytes
    )
    chunks = cost_model.ceil_div(shape[s], c)
    g, per_member = ring_group(cores, used, chunks)
    shell = new_kernel(group, used * g, lx_bytes, dataflow.RowsPlanAttr.of(p, used * g))
    b = shell.body
    extents = [1] * (p - 1) + [t] if p else []
    x_tile = list(analysis.tile_shape(x, extents))
    x_tile[s] = c
    row_tile = [*x_tile[:s], 1]
    # Each pass loads into its own buffer: the unit lowering's credits order one loop's
    # loads after that loop's reads only.
    chunks_lx = [b.alloc(x_tile, spyre.element_of(x)) for _ in range(2)]
    # Two f32 working tiles, each written by one unit only (a cast or exp on the SFP
    # into `a`, a sub or mul on the PE into `b_`): a buffer written in place by both
    # would need syncs the unit lowering does not place.
    a, b_ = b.alloc(x_tile, F32), b.alloc(x_tile, F32)
    out = b.alloc(x_tile, spyre.element_of(y))
    state = [b.alloc(row_tile, F32) for _ in range(7)]
    m, m_new, tile_max, tile_sum, diff, scale, total = state
    inverse = b.alloc(row_tile, F32)

    member = b.rem(shell.kernel.core_id, g)  # this core's place in its tile's ring group
    item_core = b.div(shell.kernel.core_id, g)  # which share of the row tiles it walks
    item_iv, lb = b.loop(per_core)
    item = lb.add(lb.mul(item_core, per_core), item_iv)
    tile_of_rows = lb.rem(item, cost_model.ceil_div(inner, t)) if outer else item
    row_offsets = (
        [*split_index(lb, lb.div(item, cost_model.ceil_div(inner, t)), outer),
         lb.mul(tile_of_rows, t)] if p else []
    )  # fmt: skip
    last = {"dims": dataflow.dense([s]), "keepdim": UnitAttr()}

    def load(cb: BodyBuilder, j: SSAValue, chunk: SSAValue) -> None:
        offsets = box_offsets(cb, x, analysis.axes[x], row_offsets)
        offsets[s] = cb.mul(cb.add(cb.mul(member, per_member), j), c)
        cb.emit(dataflow.LoadOp(shell.memory[x], offsets, chunk, pad=float("-inf")))
        pinned(cb, "spyre.cast", [chunk], a)

    pinned(lb, "spyre.full", [], m, _value(float("-inf")))
    pinned(lb, "spyre.full", [], total, _value(0.0))
    j, cb = lb.loop(per_member)  # pass 1: the running max and the rescaled running sum
    load(cb, j, chunks_lx[0])
    pinned(cb, "spyre.reduce_max", [a], tile_max, last)
    pinned(cb, "spyre.max", [m, tile_max], m_new)
    pinned(cb, "spyre.sub", [m, m_new], diff)
    pinned(cb, "spyre.max", [m, tile_max], m)  # m = m', in place
    pinned(cb, "spyre.exp", [diff], scale)
    pinned(cb, "spyre.sub", [a, m], b_)
    pinned(cb, "spyre.exp", [b_], a)
    pinned(cb, "spyre.sum", [a], tile_sum, last)
    pinned(cb, "spyre.mul", [total, scale], total)
    pinned(cb, "spyre.add", [total, tile_sum], total)
    row_max, row_sum = combine_on_ring(b, lb, m, total, row_tile, g)
    pinned(lb, "spyre.reciprocal", [row_sum], inverse)
    j, cb = lb.loop(per_member)  # pass 2: exp(x - m) / s, stored
    load(cb, j, chunks_lx[1])
    pinned(cb, "spyre.sub", [a, row_max], b_)
    pinned(cb, "spyre.exp", [b_], a)
    pinned(cb, "spyre.mul", [a, inverse], b_)
    pinned(cb, "spyre.cast", [b_], out)
    offsets = box_offsets(cb, y, analysis.axes[y], row_offsets)
    offsets[s] = cb.mul(cb.add(cb.mul(member, per_member), j), c)
    cb.emit(dataflow.StoreOp(out, shell.memory[y], offsets))
    return shell.kernel
