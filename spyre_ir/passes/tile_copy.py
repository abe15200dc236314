"""Copy kernels: data movement LPDDR5 -> LX -> LPDDR5, split over the cores.

`spyre-fuse` makes a "copy" group of a lone `spyre.concat`, `spyre.restickify` or
`spyre.slice` whose row tiling would put more than half of a core's LX in one row: a
concat along its outermost dim (the dim a row tiling must keep whole), the restickify
of a flattening reshape (rank 1: the whole tensor is one row), or a slice along a dim
before the stick dim (a sliced dim cannot be a row dim, so the rows are the dims before
it: `hidden[:, -1:, :]` of a long prompt has one row of the whole tensor). `spyre-tile`
hands such groups here.

A copy moves *pieces*: each input of a concat lands in the output at its offset along
the concat dim; a restickify's input lands whole at offset 0 (the reshape before it
is the logical index map; the bytes move here); a slice's output is one piece, read
from its input at the slice's starts. Each piece is cut into boxes
[1, .., 1, t, d_p, .., d_last]: the trailing dims whole where a box fits in half of LX
(the other half double-buffers it), t rows of the dim before them. The boxes of a piece
are dealt out to the cores in contiguous ranges; a core loads a box into LX and stores
it at its place in the output. A box never crosses into another piece: along the
concat dim t divides the piece, and a core past the last box wraps round to an early
one (it writes the same values again) instead of running off the piece's end, which
would be inside the next piece.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from spyre_ir import cost_model
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import ELEMENT_BYTES, card_of
from spyre_ir.shape_rules import numel

COPY_OPS = (spyre.ConcatOp, spyre.RestickifyOp, spyre.SliceOp)


def is_copy_op(op: object) -> bool:
    """Whether a copy kernel can do `op`: a concat, a restickify, or a slice with unit
    steps that keeps the stick dim whole (the boxes keep their sticks as they are)."""
    if not isinstance(op, COPY_OPS):
        return False
    if not isinstance(op, spyre.SliceOp):
        return True
    last = len(spyre.shape_of(op.input)) - 1
    starts, stops = spyre.ints(op.starts), spyre.ints(op.stops)
    return (
        last >= 0
        and all(s == 1 for s in spyre.ints(op.steps))
        and starts[last] == 0
        and stops[last] == spyre.shape_of(op.input)[last]
    )


@dataclass(frozen=True)
class Piece:
    """Boxes over `shape`, loaded from `source` at `read_shift` past the box's place and
    stored `write_shift` past it; `exact_dim`, if any, is a dim boxes must divide."""

    source: SSAValue
    shape: tuple[int, ...]
    read_shift: tuple[int, ...]
    write_shift: tuple[int, ...]
    exact_dim: int | None


def pieces(op: spyre.SpyreOp) -> list[Piece]:
    """The pieces the op's result is made of."""
    if isinstance(op, spyre.ConcatOp):
        rank = len(spyre.shape_of(op.results[0]))
        dim = op.dim.value.data % rank
        out, start = [], 0
        for value in op.operands:
            shape = spyre.shape_of(value)
            shift = tuple(start if d == dim else 0 for d in range(rank))
            out.append(Piece(value, shape, (0,) * rank, shift, dim))
            start += shape[dim]
        return out
    if isinstance(op, spyre.SliceOp):
        shape = spyre.shape_of(op.results[0])
        return [Piece(op.input, shape, tuple(spyre.ints(op.starts)), (0,) * len(shape), None)]
    shape = spyre.shape_of(op.operands[0])
    return [Piece(op.operands[0], shape, (0,) * len(shape), (0,) * len(shape), None)]


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
    if len(ops) != 1 or not is_copy_op(ops[0]):
        raise located_error(group, f"group @{group.sym_name.data}: a copy group holds one "
                                   "spyre.concat, spyre.restickify or unit-step spyre.slice "
                                   "that keeps the stick dim whole")  # fmt: skip
    op = ops[0]
    out = op.results[0]
    elem = ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(out))]
    card = card_of(group)
    per_stick = card.elements_per_stick(spyre.element_type_name(spyre.element_of(out)))
    budget = (lx_bytes or card.lx_bytes) // 2
    offered = plan.cores.data
    plans = []
    for piece in pieces(op):
        p, t = box_plan(piece.shape, elem, budget, per_stick, offered, piece.exact_dim)
        if numel(piece.shape[p:]) * t * elem > budget:
            raise located_error(group, f"group @{group.sym_name.data}: no box of "
                                       f"{piece.shape} fits {budget} bytes")  # fmt: skip
        items = numel(piece.shape[: p - 1]) * cost_model.ceil_div(piece.shape[p - 1], t)
        plans.append((piece, p, t, items))
    # The cores that have a box (partition_cores offers them all: the work is boxes).
    cores = max(1, min(offered, max(items for *_, items in plans)))
    kept = dataflow.CopyPlanAttr.of(plan.value("row_dims"), cores)
    shell = new_kernel(group, cores, lx_bytes, kept)
    b = shell.body
    for piece, p, t, items in plans:
        shape = piece.shape
        lead = shape[: p - 1]
        chunks = cost_model.ceil_div(shape[p - 1], t)
        per_core = cost_model.ceil_div(items, cores)
        box = [1] * (p - 1) + [t, *shape[p:]]
        buffer = b.alloc(box, spyre.element_of(piece.source))
        iv, lb = b.loop(per_core)
        item = lb.rem(lb.add(lb.mul(shell.kernel.core_id, per_core), iv), items)
        outer = split_index(lb, lb.div(item, chunks), lead) if lead else []
        index = [*outer, lb.mul(lb.rem(item, chunks), t)]
        place = box_offsets(lb, piece.source, tuple(range(p)), index)
        src_offsets = shifted(lb, place, piece.read_shift)
        lb.emit(dataflow.LoadOp(shell.memory[piece.source], src_offsets, buffer))
        dst_offsets = shifted(lb, place, piece.write_shift)
        lb.emit(dataflow.StoreOp(buffer, shell.memory[out], dst_offsets))
    return shell.kernel


def shifted(lb, offsets: Sequence[SSAValue], shift: Sequence[int]) -> list[SSAValue]:
    return [lb.add(o, d) if d else o for o, d in zip(offsets, shift)]


def lone_transpose(group: dataflow.GroupOp) -> spyre.TransposeOp | None:
    """The group's lone transpose of a group input that moves the stick dim, if it is
    one (a transpose keeping the last dim in place tiles as rows of any length)."""
    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    if len(ops) != 1 or not isinstance(ops[0], spyre.TransposeOp):
        return None
    op = ops[0]
    perm = spyre.ints(op.perm)
    moves_stick = bool(perm) and perm[-1] != len(perm) - 1
    return op if moves_stick and op.input in group.body.block.args else None


def block_side(size: int, stick: int, cap: int) -> int:
    """A block extent along a dim: the whole dim when within `cap`, else whole sticks."""
    return size if size <= cap else max(stick, cap - cap % stick)


def tile_transpose_group(group: dataflow.GroupOp, op: spyre.TransposeOp, cores: int,
                         lx_bytes: int) -> dataflow.KernelOp:  # fmt: skip
    """A transpose of any size, in blocks: an output block [1, .., b_q, .., b_last] is
    read by a transposed load (`perm`) - b_q whole sticks of the input's stick dim,
    which output dim q walks - and stored as b_last whole sticks of the output's. The
    blocks are dealt out to the cores in contiguous ranges; edge blocks overhang."""
    from spyre_ir.passes.tile_kernel import new_kernel, split_index

    out = op.results[0]
    shape = spyre.shape_of(out)
    perm = spyre.ints(op.perm)
    rank, q = len(shape), perm.index(len(shape) - 1)
    name = spyre.element_type_name(spyre.element_of(out))
    elem, stick = ELEMENT_BYTES[name], card_of(group).elements_per_stick(name)
    budget = (lx_bytes or card_of(group).lx_bytes) // 2
    # Square-ish blocks, a power of two on a side where the dims are large (whole
    # sticks that divide large power-of-two dims, so few blocks overhang).
    side = 1 << (max(1, math.isqrt(budget // elem)).bit_length() - 1)
    b_last = block_side(shape[-1], stick, side)
    b_q = block_side(shape[q], stick, max(1, budget // elem // b_last))
    if b_q * b_last * elem > budget:
        raise located_error(group, f"group @{group.sym_name.data}: no transpose block of "
                                   f"{list(shape)} fits {budget} bytes")  # fmt: skip
    grid = list(shape)
    grid[q], grid[-1] = cost_model.ceil_div(shape[q], b_q), cost_model.ceil_div(shape[-1], b_last)
    items = numel(grid)
    used = max(1, min(cores, items))
    per_core = cost_model.ceil_div(items, used)
    used = cost_model.ceil_div(items, per_core)
    shell = new_kernel(group, used, lx_bytes, dataflow.CopyPlanAttr.of(rank, used))
    b = shell.body
    box = [1] * rank
    box[q], box[-1] = b_q, b_last
    buffer = b.alloc(box, spyre.element_of(out))
    iv, lb = b.loop(per_core)
    index = split_index(lb, lb.add(lb.mul(shell.kernel.core_id, per_core), iv), grid)
    dst = list(index)
    dst[q], dst[-1] = lb.mul(index[q], b_q), lb.mul(index[-1], b_last)
    src = [dst[perm.index(d)] for d in range(rank)]  # source dim perm[j] <- output dim j
    lb.emit(dataflow.LoadOp(shell.memory[op.input], src, buffer, perm=perm, pad=0.0))
    lb.emit(dataflow.StoreOp(buffer, shell.memory[out], dst))
    return shell.kernel
