"""spyre-tile's rows and gather kernels: each core walks tiles of `t` rows of the
innermost row dim, loads every input box, runs the group's ops on the tile and stores
the results."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Attribute, Operation, SSAValue

from spyre_ir import cost_model
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import card_of
from spyre_ir.passes import row_model, row_tiles, tile_copy, tile_online_softmax, tile_stream
from spyre_ir.passes.tile_kernel import (
    box_offsets,
    new_kernel,
    split_index,
)
from spyre_ir.shape_rules import numel


def tile_rows_group(
    group: dataflow.GroupOp, plan: dataflow.RowsPlanAttr | dataflow.GatherPlanAttr, lx_bytes: int
) -> dataflow.KernelOp:
    """Rows and gather kernels: tiles of `t` rows of the innermost row dim."""
    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    values = [*group.body.block.args, *(r for op in ops for r in op.results)]
    table = {op.table for op in ops if isinstance(op, spyre.GatherOp)}
    lx_bytes = lx_bytes or card_of(group).lx_bytes
    if isinstance(plan, dataflow.RowsPlanAttr):
        analysis, row_bytes = row_model.fitting_rows(ops, list(yielded.values), values,
                                                     plan.row_dims.data, lx_bytes)  # fmt: skip
    else:
        analysis = gather_analysis(ops, yielded, plan.row_dims.data)
        row_bytes = row_model.body_bytes(analysis, values, table)
    lone = tile_stream.streamed_reduction(group)
    if lone is not None and row_bytes > lx_bytes // 2:
        return tile_stream.tile_stream_group(group, lone, analysis, plan.cores.data, lx_bytes)
    softmax = tile_online_softmax.streamed_softmax(group)
    if softmax is not None and row_bytes > lx_bytes // 2:
        return tile_online_softmax.tile_online_softmax_group(group, softmax, analysis,
                                                             plan.cores.data, lx_bytes)  # fmt: skip
    p, rows = analysis.row_dims, analysis.rows
    inner = rows[-1] if p else 1
    outer = rows[:-1] if p else ()
    transpose = tile_copy.lone_transpose(group)
    stick = card_of(group).elements_per_stick(
        spyre.element_type_name(spyre.element_of(yielded.values[0]))
    )
    if transpose is not None and min(inner, stick) * row_bytes > lx_bytes // 2:
        return tile_copy.tile_transpose_group(group, transpose, plan.cores.data, lx_bytes)
    try:
        t, cores, per_core = rows_tile(group, analysis, numel(outer), inner, row_bytes,
                                       plan.cores.data, lx_bytes)  # fmt: skip
    except ValueError as e:
        raise located_error(group, f"group @{group.sym_name.data}: {e}") from None
    extents = [1] * (p - 1) + [t] if p else []
    if p and isinstance(plan, dataflow.RowsPlanAttr) and row_tiles.limits_requests(group):
        buffers = [v for v in values if v not in table]
        tile = box_tile(group, ops, yielded, analysis, buffers, extents, plan.cores.data,
                        lx_bytes)  # fmt: skip
        analysis, extents, cores, per_core = (
            tile.analysis,
            list(tile.extents),
            tile.cores,
            tile.per_core,
        )
        p = analysis.row_dims
    counts = [cost_model.ceil_div(r, e) for r, e in zip(analysis.rows, extents)]
    # The plan records what the kernel really uses (fewer cores when there are fewer
    # tiles than cores).
    kernel_plan = type(plan).of(p, cores)
    shell = new_kernel(group, cores, lx_bytes, kernel_plan)
    b = shell.body

    def is_row_dependent(v: SSAValue) -> bool:
        return any(a is not None for a in analysis.axes.get(v, ()))

    buffers: dict[SSAValue, SSAValue] = {}
    for v in values:
        if v in table:
            continue
        if isinstance(v.owner, spyre.RestickifyOp):
            # A layout change happens between LPDDR5 and LX: in LX the tile is the same.
            buffers[v] = buffers[v.owner.input]
            continue
        buffers[v] = b.alloc(analysis.tile_shape(v, extents), spyre.element_of(v))
    # Resident inputs and constants: once per core, before the loop.
    for arg in group.body.block.args:
        if arg not in table and not is_row_dependent(arg):
            zeros = [b.const(0)] * len(spyre.shape_of(arg))
            b.emit(dataflow.LoadOp(shell.memory[arg], zeros, buffers[arg]))
    hoisted = [op for op in ops if not op.operands and not is_row_dependent(op.results[0])
               and not isinstance(op, spyre.IotaOp)]  # fmt: skip
    for op in hoisted:
        b.compute(op, [], [buffers[op.results[0]]])

    item_iv, lb = b.loop(per_core)
    item = lb.add(lb.mul(shell.kernel.core_id, per_core), item_iv)
    # The item's tile along each row dim; the outermost is not wrapped, so items past
    # the end fall outside the tensor instead of repeating a tile.
    row_offsets = [lb.mul(i, e) if e > 1 or d == p - 1 else i
                   for d, (i, e) in enumerate(zip(split_index(lb, item, counts), extents))]  # fmt: skip
    for arg in group.body.block.args:
        if arg in table or not is_row_dependent(arg):
            continue
        offsets = box_offsets(lb, arg, analysis.axes[arg], row_offsets)
        lb.emit(dataflow.LoadOp(shell.memory[arg], offsets, buffers[arg]))
    for op in ops:
        if op in hoisted or isinstance(op, spyre.RestickifyOp):
            continue
        outs = [buffers[r] for r in op.results]
        if isinstance(op, spyre.GatherOp):
            lb.emit(dataflow.GatherOp(shell.memory[op.table], buffers[op.indices], outs[0]))
            continue
        offsets: list[SSAValue] = []
        if isinstance(op, spyre.SliceOp):
            lb.compute_named(op.name, [buffers[op.input]], outs,
                             slice_on_tile(op, analysis, extents))  # fmt: skip
            continue
        if isinstance(op, spyre.IotaOp):
            offsets = box_offsets(lb, op.results[0], analysis.axes.get(op.results[0], ()),
                                  row_offsets)  # fmt: skip
        lb.compute(op, [buffers[o] for o in op.operands], outs, offsets)
    for value in yielded.values:
        offsets = box_offsets(lb, value, analysis.axes[value], row_offsets)
        lb.emit(dataflow.StoreOp(buffers[value], shell.memory[value], offsets))
    return shell.kernel


def box_tile(group: dataflow.GroupOp, ops: Sequence[Operation], yielded: dataflow.YieldOp,
             analysis: row_model.RowAnalysis, buffers: Sequence[SSAValue], extents: list[int],
             cores: int, lx_bytes: int) -> row_tiles.BoxTile:  # fmt: skip
    """On a card that limits requests in flight: the rows kernel's own tile (`extents`)
    or a box tile the card's model times faster, over the analysis and the wider ones
    the group allows (down to the stick dim, for elementwise groups); `buffers`: the
    values a tile holds in LX."""
    own = row_tiles.estimated(group, ops, analysis, extents, cores)
    analyses = [analysis]
    outputs = list(yielded.values)
    for wider in range(analysis.row_dims + 1, min(len(spyre.shape_of(v)) for v in outputs) + 1):
        try:
            analyses.append(row_model.analyse(ops, outputs, wider, whole_rows=False))
        except row_model.NotRowLocal:
            break
    return row_tiles.best_box_tile(group, ops, analyses, buffers, own, cores, lx_bytes)


def rows_tile(group: dataflow.GroupOp, analysis: row_model.RowAnalysis, outer: int,
              inner: int, row_bytes: int, cores: int, lx_bytes: int) -> tuple[int, int, int]:  # fmt: skip
    """(t, cores, tiles per core) of a rows kernel. Inputs read across their stick dim
    need tiles of whole sticks; outputs written across theirs get whole sticks too when
    such tiles fit half of LX (an output with wider sticks, an i1 mask of i64 indices,
    would otherwise be written in part-sticks: masked stores, each moving whole sticks)."""
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)

    inputs = row_model.stick_of(group, analysis, group.body.block.args)
    moved = max(inputs, row_model.stick_of(group, analysis, yielded.values))
    if moved > inputs and min(inner, moved) * row_bytes <= lx_bytes // 2:
        return cost_model.balanced_rows_tile(outer, inner, row_bytes, cores, lx_bytes, moved)
    return cost_model.balanced_rows_tile(outer, inner, row_bytes, cores, lx_bytes, inputs)


def smallest_tile_bytes(group: dataflow.GroupOp, analysis: row_model.RowAnalysis,
                        row_bytes: int, cores: int) -> int:  # fmt: skip
    """LX bytes of the smallest tile a rows kernel can take - one stick of rows where an
    input is read across its stick dim (`rows_tile`), else one row - twice over when a
    core walks more than one (spyre-double-buffer gives its buffers two slots)."""
    p, rows = analysis.row_dims, analysis.rows
    inner = rows[-1] if p else 1
    t = min(inner, row_model.stick_of(group, analysis, group.body.block.args))
    items = numel(rows[:-1] if p else ()) * cost_model.ceil_div(inner, t)
    per_core = cost_model.ceil_div(items, max(1, min(cores, items)))
    return t * row_bytes * (2 if per_core > 1 else 1)


def slice_on_tile(op: spyre.SliceOp, analysis: row_model.RowAnalysis,
                  extents: Sequence[int]) -> dict[str, Attribute]:  # fmt: skip
    """A slice's bounds on a tile: row axes are never sliced, so they span the tile."""
    stops = list(spyre.ints(op.stops))
    tile = analysis.tile_shape(op.input, extents)
    for axis in analysis.axes.get(op.input, ()):
        if axis is not None:
            stops[axis] = tile[axis]
    props = dict(op.properties)
    props["stops"] = dataflow.dense(stops)
    return props


def gather_analysis(ops: Sequence[Operation], yielded: dataflow.YieldOp,
                    p: int) -> row_model.RowAnalysis:  # fmt: skip
    """Row axes for a gather group: the index positions are the rows; the table is
    read from LPDDR5 by row, so it has none."""
    gather = next(op for op in ops if isinstance(op, spyre.GatherOp))
    epilogue = [op for op in ops if op is not gather]
    outputs = list(yielded.values)
    analysis = (
        row_model.analyse(epilogue, outputs, p)
        if epilogue
        else row_model.RowAnalysis(
            p, spyre.shape_of(gather.result)[:p], {gather.result: tuple(range(p))}
        )
    )
    analysis.axes.setdefault(gather.result, tuple(range(p)))
    analysis.axes[gather.indices] = tuple(range(p))
    return analysis
