"""spyre-tile's way out for a matmul group with a head-view epilogue (a rotary embedding,
spyre-fuse-rotary) whose plan's output tiles hold no whole heads (a matmul too narrow
for its cores: 512 columns over 8 column groups are 64 per core, half a head of 128):
the head-view ops leave the group for a rows group of their own after it, reading the
matmul's result through the head view (a reshape view between the two kernels), and
both are planned again (spyre-partition-cores' `plan_group`). As with spyre-fuse's
switch off, the matmul's result then goes through LPDDR5 once more."""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import dataflow, spyre
from spyre_ir.passes.fuse import is_scalar_constant
from spyre_ir.passes.fuse_heads import head_split


def head_ops(ops: list[Operation]) -> list[Operation]:
    """The ops on a head view: the views and every op computing 3-D values after them."""
    views = [op for op in ops if head_split(op) is not None]
    if not views:
        return []
    first = ops.index(views[0])
    return [op for op in ops[first:] if head_split(op) is not None or (
        not isinstance(op, spyre.MatmulOp) and op.results
        and all(len(spyre.shape_of(r)) == 3 for r in op.results))]  # fmt: skip


def split_head_view(group: dataflow.GroupOp) -> list[dataflow.GroupOp]:
    """Replace matmul `group` by the group without its head-view ops and a rows group of
    those (the views themselves stand between them)."""
    body = group.body.block
    yielded = body.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    ops = [op for op in body.ops if op is not yielded]
    heads = head_ops(ops)
    views = [op for op in heads if head_split(op) is not None]
    rows = [op for op in heads if op not in views]
    first = [op for op in ops if op not in heads and not is_scalar_constant(op)]
    constants = {op.results[0]: op for op in ops if is_scalar_constant(op)}
    outer: dict[SSAValue, SSAValue] = dict(zip(body.args, group.inputs))
    name = group.sym_name.data
    inner_out = [v for v in yielded.values if v.owner in first]
    viewed = [op.operands[0] for op in views]
    matmul = group_of(first, [*inner_out, *viewed], outer, constants, f"{name}_matmul")
    matmul.attributes.update({k: v for k, v in group.attributes.items()
                              if k in ("dataflow.kind", "dataflow.row_dims")})  # fmt: skip
    parts = [matmul]
    Rewriter.insert_op(matmul, InsertPoint.before(group))
    outer.update(zip([*inner_out, *viewed], matmul.outputs))
    for view in views:
        copy = spyre.ReshapeOp(outer[view.operands[0]], view.results[0].type)
        copy.location = view.location
        Rewriter.insert_op(copy, InsertPoint.before(group))
        outer[view.results[0]] = copy.result
    rows_out = [v for v in yielded.values if v.owner in rows]
    if rows:
        tail = group_of(rows, rows_out, outer, constants, f"{name}_heads")
        tail.attributes["dataflow.kind"] = StringAttr("rows")
        tail.attributes["dataflow.row_dims"] = IntegerAttr(2, i64)
        Rewriter.insert_op(tail, InsertPoint.before(group))
        outer.update(zip(rows_out, tail.outputs))
        parts.append(tail)
    for part in parts:
        part.location = group.location
    for result, inner in zip(group.outputs, yielded.values):
        result.replace_all_uses_with(outer[inner])
    Rewriter.erase_op(group)
    return parts


def group_of(ops: list[Operation], results: list[SSAValue], outer: dict[SSAValue, SSAValue],
              constants: dict[SSAValue, Operation], name: str) -> dataflow.GroupOp:  # fmt: skip
    """A group running copies of `ops` on the outer values of what they read from
    outside (`outer`: each inner value read from outside -> its value outside the
    group; `constants` are cloned in instead), yielding the copies of `results`. Shared
    by the passes that split or carve out groups (split_group, fuse_segments)."""
    inside = {r for op in ops for r in op.results}
    inputs: list[SSAValue] = []
    for op in ops:
        for v in op.operands:
            if v not in inside and v not in constants and outer[v] not in inputs:
                inputs.append(outer[v])
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for op in ops:
        for v in op.operands:
            if v in mapping or v in inside:
                continue
            if v in constants:
                clone = constants[v].clone()
                block.add_op(clone)
                mapping[v] = clone.results[0]
            else:
                mapping[v] = block.args[inputs.index(outer[v])]
        if is_scalar_constant(op) and op.results[0] in mapping:
            continue
        copy = op.clone(value_mapper=mapping)
        block.add_op(copy)
        mapping.update(zip(op.results, copy.results))
    block.add_op(dataflow.YieldOp(*(mapping[r] for r in results)))
    return dataflow.GroupOp(name, inputs, [r.type for r in results], Region(block))
