"""spyre-tile's way out for a rows group whose smallest tile does not fit LX even with
every dim a row dim (a group fused for a larger LX than the tiling's, written by hand,
or with a transpose moving the stick dim, whose tiles are whole sticks of rows) and that
is no lone reduction: the group is split into one group per op, in order, each planned
again (spyre-partition-cores' `plan_group`) and tiled on its own - elementwise ops along
their rows in whole sticks, reductions streamed (passes/tile_stream.py), transposes in
blocks (passes/tile_copy.py). The values that crossed between its ops now go through
LPDDR5."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import dataflow
from spyre_ir.passes import row_model
from spyre_ir.passes.fuse import is_scalar_constant
from spyre_ir.passes.split_head_view import group_of
from spyre_ir.passes.tile_rows import smallest_tile_bytes


def row_overflows(group: dataflow.GroupOp, plan: dataflow.RowsPlanAttr, lx_bytes: int) -> bool:
    """A group of more than one op whose row needs more than half of LX, or whose
    smallest tile does not fit LX at all: one stick of rows where an input is read
    across its stick dim (a transpose moving the stick dim: k [4096, 128] cast,
    transposed and scaled has rows of 4,096 elements, 57 KB, but a tile takes 64 of
    them, 3.7 MB)."""
    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    work = [op for op in ops if not is_scalar_constant(op)]
    if len(work) < 2:
        return False
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    values = [*group.body.block.args, *(r for op in ops for r in op.results)]
    try:
        analysis, row_bytes = row_model.fitting_rows(
            ops, list(yielded.values), values, plan.row_dims.data, lx_bytes
        )
    except (row_model.NotRowLocal, ValueError):
        return False  # not for this split to decide: tile_rows reports it
    if row_bytes > lx_bytes // 2:
        return True
    # Between half and all of LX a stick of rows still runs as one kernel, without the
    # double-buffering (cost_model.balanced_rows_tile's last resort): k [2048, 128]
    # cast, transposed and scaled takes 26.9 us so against 62.7 us split in three.
    return smallest_tile_bytes(group, analysis, row_bytes, plan.cores.data) > lx_bytes


def split_group(group: dataflow.GroupOp) -> list[dataflow.GroupOp]:
    """Replace `group` by one group per op (scalar constants go with each user)."""
    body = group.body.block
    outer: dict[SSAValue, SSAValue] = dict(zip(body.args, group.inputs))
    constants = {op.results[0]: op for op in body.ops if is_scalar_constant(op)}
    row_dims = group.attributes.get("dataflow.row_dims", IntegerAttr(0, i64))
    made: list[dataflow.GroupOp] = []
    for op in list(body.ops):
        if isinstance(op, dataflow.YieldOp) or is_scalar_constant(op):
            continue
        made.append(
            group_of([op], list(op.results), outer, constants, f"{group.sym_name.data}_{len(made)}")
        )
        made[-1].attributes["dataflow.kind"] = StringAttr("rows")
        made[-1].attributes["dataflow.row_dims"] = row_dims
        made[-1].location = op.location
        Rewriter.insert_op(made[-1], InsertPoint.before(group))
        outer.update(zip(op.results, made[-1].outputs))
    yielded = body.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    for result, inner in zip(group.outputs, yielded.values):
        result.replace_all_uses_with(outer[inner])
    Rewriter.erase_op(group)
    return made
