"""Copy kernels: data movement LPDDR5 -> LX -> LPDDR5, split over the cores.

`spyre-fuse` makes a "copy" group of a lone `spyre.concat` or `spyre.restickify` whose
row tiling would put more than half of a core's LX in one row: a concat along its
outermost dim (the dim a row tiling must keep whole), or the restickify of a flattening
reshape (rank 1: the whole tensor is one row). `spyre-tile` hands such groups here.

A copy moves *pieces*: each input of a concat lands in the output at its offset along
the concat dim; a restickify's input lands whole at offset 0 (the reshape before it
is the logical index map; the bytes move here). Each piece is cut into boxes
[1, .., 1, t, d_p, .., d_last]: the trailing dims whole where a box fits in half of LX
(the other half double-buffers it), t rows of the dim before them. The boxes of a piece
are dealt out to the cores in contiguous ranges; a core loads a box into LX and stores
it at its place in the output. A box never crosses into another piece: along the
concat dim t divides the piece, and a core past the last box wraps round to an early
one (it writes the same values again) instead of running off the piece's end, which
would be inside the next piece.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from spyre_ir import cost_model
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import ELEMENT_BYTES, card_of
from spyre_ir.shape_rules import numel

COPY_OPS = (spyre.ConcatOp, spyre.RestickifyOp)


def pieces(op: spyre.SpyreOp) -> list[tuple[SSAValue, int, int]]:
    """(source, dim, offset along dim) for each piece the op's result is made of."""
    if isinstance(op, spyre.ConcatOp):
        rank = len(spyre.shape_of(op.results[0]))
        dim = op.dim.value.data % rank
        out, start = [], 0
        for value in op.operands:
            out.append((value, dim, start))
            start += spyre.shape_of(value)[dim]
        return out
    return [(op.operands[0], 0, 0)]


def box_plan(shape: Sequence[int], elem: int, budget: int, per_stick: int, cores: int,
             exact_dim: int | None) -> tuple[int, int]:  # fmt: skip
    """(p, t): boxes keep dims p.. whole and take t of dim p - 1. The fewest whole dims
    is 0 dims (p = rank: t elements of the last dim, whole sticks). t shrinks so that
    the boxes cover the cores; along `exact_dim` it divides the dim."""
    rank = len(shape)
    p = next(q for q in range(1, rank + 1) if numel(shape[q:]) * elem <= budget)
    dim = p - 1
    row = numel(shape[p:])
    t = min(shape[dim], max(1, budget // (row * elem)))
    outer = numel(shape[:dim])
    if outer < cores:  # enough boxes for every core, if the dim allows
        t = min(t, max(1, cost_model.ceil_div(shape[dim], cost_model.ceil_div(cores, outer))))
    if dim == rank - 1 and t < shape[dim]:
        t = max(per_stick, t - t % per_stick)  # whole sticks
        t = min(t, shape[dim])
    if dim == exact_dim:
        t = max(d for d in range(1, t + 1) if shape[dim] % d == 0)
    return p, t


def tile_copy_group(
    group: dataflow.GroupOp, plan: dataflow.CopyPlanAttr, lx_bytes: int
) -> dataflow.KernelOp:
    """The copy kernel of a "copy" group (see the module docstring)."""
    from spyre_ir.passes.tile_kernel import box_offsets, new_kernel, split_index

    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    if len(ops) != 1 or not isinstance(ops[0], COPY_OPS):
        raise located_error(group, f"group @{group.sym_name.data}: a copy group holds one "
                                   "spyre.concat or spyre.restickify")  # fmt: skip
    op = ops[0]
    out = op.results[0]
    elem = ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(out))]
    card = card_of(group)
    per_stick = card.elements_per_stick(spyre.element_type_name(spyre.element_of(out)))
    budget = (lx_bytes or card.lx_bytes) // 2
    cores = plan.cores.data
    shell = new_kernel(group, cores, lx_bytes, plan)
    b = shell.body
    for source, dim, start in pieces(op):
        shape = spyre.shape_of(source)
        exact = dim if isinstance(op, spyre.ConcatOp) else None
        p, t = box_plan(shape, elem, budget, per_stick, cores, exact)
        if numel(shape[p:]) * t * elem > budget:
            raise located_error(group, f"group @{group.sym_name.data}: no box of {shape} "
                                       f"fits {budget} bytes")  # fmt: skip
        lead = shape[: p - 1]
        chunks = cost_model.ceil_div(shape[p - 1], t)
        items = numel(lead) * chunks
        per_core = cost_model.ceil_div(items, cores)
        box = [1] * (p - 1) + [t, *shape[p:]]
        buffer = b.alloc(box, spyre.element_of(source))
        iv, lb = b.loop(per_core)
        item = lb.rem(lb.add(lb.mul(shell.kernel.core_id, per_core), iv), items)
        outer = split_index(lb, lb.div(item, chunks), lead) if lead else []
        index = [*outer, lb.mul(lb.rem(item, chunks), t)]
        axes = tuple(range(p))
        src_offsets = box_offsets(lb, source, axes, index)
        lb.emit(dataflow.LoadOp(shell.memory[source], src_offsets, buffer))
        dst_offsets = list(src_offsets)
        if start:
            dst_offsets[dim] = lb.add(dst_offsets[dim], start)
        lb.emit(dataflow.StoreOp(buffer, shell.memory[out], dst_offsets))
    return shell.kernel
