"""The row model: which dims of every value in a group follow the group's rows.

A group of L1 ops is tiled by its *rows* - the leading `p` dims of its results - while
the rest of each value (the row body) stays whole in LX. This module works out, for a
candidate group and a `p`, where each row dim lives in every value ("row axes"), or
says why the ops cannot be tiled that way. spyre-fuse, spyre-partition-cores and
spyre-tile share it, so what fuse accepts, tile can build.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.hardware import ELEMENT_BYTES, card_of

RowAxes = tuple[int | None, ...]
"""For each row dim of the group, the axis of a value that walks it (None: broadcast)."""

ELEMENTWISE = (
    spyre.BinaryOp, spyre.UnaryOp, spyre.SelectOp, spyre.CastOp, spyre.BroadcastToOp,
    spyre.RestickifyOp,
)  # fmt: skip
NO_OPERANDS = (spyre.FullOp, spyre.IotaOp, spyre.ConstantOp)
MOVES_ROWS_FREELY = (spyre.MatmulOp, spyre.GatherOp)


class NotRowLocal(Exception):
    """The ops cannot be tiled by rows with this many row dims."""


@dataclass
class RowAnalysis:
    row_dims: int
    rows: tuple[int, ...]
    axes: dict[SSAValue, RowAxes]

    def innermost_on_stick(self, value: SSAValue) -> bool:
        """Whether the innermost row dim walks `value`'s stick (last) dim, so tiles
        must hold whole sticks of it."""
        return self.walks_stick(value, self.row_dims - 1)

    def walks_stick(self, value: SSAValue, dim: int) -> bool:
        """Whether row dim `dim` walks `value`'s stick (last) dim."""
        axes = self.axes.get(value, ())
        return 0 <= dim < len(axes) and axes[dim] == len(shape(value)) - 1 and shape(value)[-1] > 1

    def tile_shape(self, value: SSAValue, extents: Sequence[int]) -> tuple[int, ...]:
        """`value`'s shape on a tile whose row dims have the given extents."""
        out = list(shape(value))
        for dim, axis in enumerate(self.axes.get(value, (None,) * self.row_dims)):
            if axis is not None:
                out[axis] = extents[dim]
        return tuple(out)


def _operand_axes_elementwise(result: SSAValue, operand: SSAValue, axes: RowAxes) -> RowAxes:
    """Right-aligned broadcasting: an operand axis follows the result axis it aligns
    with, unless it is a stretched size-1 axis."""
    r_res, r_op = len(shape(result)), len(shape(operand))
    out: list[int | None] = []
    for axis in axes:
        if axis is None:
            out.append(None)
            continue
        mine = axis - (r_res - r_op)
        if mine < 0 or shape(operand)[mine] != shape(result)[axis]:
            out.append(None)
        else:
            out.append(mine)
    return tuple(out)


def _merge(found: dict[SSAValue, RowAxes], value: SSAValue, axes: RowAxes) -> None:
    old = found.get(value)
    if old is None:
        found[value] = axes
    elif old != axes:
        raise NotRowLocal(f"{value.name_hint or 'a value'} is used with two row mappings")


def _forbid(axes: RowAxes, body_axes: Sequence[int], op: Operation) -> None:
    if any(a in body_axes for a in axes if a is not None):
        raise NotRowLocal(f"{op.name} works across rows")


def operand_axes(op: Operation, axes: RowAxes) -> list[RowAxes]:
    """Given the row axes of `op`'s (first) result, those of each operand."""
    result = op.results[0]
    if isinstance(op, spyre.ReductionOp):
        kept = [i for i in range(len(shape(op.input))) if i not in op.reduced_dims]
        if op.keepdim is not None:
            mapped = axes
        else:
            mapped = tuple(None if a is None else kept[a] for a in axes)
        _forbid(mapped, op.reduced_dims, op)
        return [mapped]
    if isinstance(op, (spyre.SoftmaxOp, spyre.CumsumOp, spyre.SortingOp)):
        rank = len(shape(result))
        _forbid(axes, [op.dim.value.data % rank], op)
        return [axes]
    if isinstance(op, spyre.NormOp):
        rank = len(shape(result))
        _forbid(axes, range(rank - op.axes_count, rank), op)
        return [axes] + [(None,) * len(axes) for _ in op.operands[1:]]
    if isinstance(op, spyre.TransposeOp):
        perm = spyre.ints(op.perm)
        return [tuple(None if a is None else perm[a] for a in axes)]
    if isinstance(op, spyre.ReshapeOp):
        # A reshape keeps the rows only if it leaves the leading row axes alone.
        src, dst = shape(op.input), shape(result)
        used = [a for a in axes if a is not None]
        lead = max(used, default=-1) + 1
        if used != list(range(lead)) or src[:lead] != dst[:lead]:
            raise NotRowLocal("a reshape that moves row dims")
        return [axes]
    if isinstance(op, (spyre.SliceOp, spyre.PadOp, spyre.ConcatOp)):
        if isinstance(op, spyre.ConcatOp):
            touched = [op.dim.value.data % len(shape(result))]
        else:
            before = shape(op.operands[0])
            touched = [i for i, (a, b) in enumerate(zip(before, shape(result))) if a != b]
            if isinstance(op, spyre.SliceOp):
                touched += [i for i, s in enumerate(spyre.ints(op.steps)) if s != 1]
        _forbid(axes, touched, op)
        return [axes for _ in op.operands]
    if isinstance(op, ELEMENTWISE):
        return [_operand_axes_elementwise(result, o, axes) for o in op.operands]
    if isinstance(op, NO_OPERANDS):
        return []
    raise NotRowLocal(f"{op.name} is not tiled by rows")


def analyse(
    ops: Sequence[Operation],
    outputs: Sequence[SSAValue],
    row_dims: int,
    whole_rows: bool = True,
) -> RowAnalysis:
    """Row axes of every value used by `ops`, for `row_dims` leading row dims of the
    outputs; raises NotRowLocal when the ops do not allow it. With `whole_rows` the last
    dim must stay out of the rows (it is the stick dim, moved whole)."""
    if not outputs:
        raise NotRowLocal("a group needs a result")
    rows = shape(outputs[0])[:row_dims]
    found: dict[SSAValue, RowAxes] = {}
    for out in outputs:
        too_short = len(shape(out)) < row_dims + (1 if whole_rows and row_dims else 0)
        if too_short or shape(out)[:row_dims] != rows:
            raise NotRowLocal("results disagree on their rows")
        _merge(found, out, tuple(range(row_dims)))
    inside = set(ops)
    for op in reversed(list(ops)):
        result_axes = [found.get(r) for r in op.results]
        if all(a is None for a in result_axes):
            raise NotRowLocal(f"{op.name} result is not used by the group's results")
        axes = next(a for a in result_axes if a is not None)
        for operand, mapped in zip(op.operands, operand_axes(op, axes)):
            if operand.owner in inside or not _is_scalar(operand):
                _merge(found, operand, mapped)
    for value, axes in found.items():
        if value.owner in inside:
            continue
        last = len(shape(value)) - 1
        if shape(value)[last:] == (1,):
            continue
        if any(axis == last for axis in axes[:-1]):
            # An outer row dim moves one element per tile: a partial stick.
            raise NotRowLocal("an input's stick dim would be an outer row dim")
    return RowAnalysis(row_dims, rows, found)


def extend(analysis: RowAnalysis, inside: Collection[Operation], op: Operation,
           outputs: Sequence[SSAValue]) -> RowAnalysis:  # fmt: skip
    """The analysis of the ops `inside` (analysed as `analysis`) with `op` appended as
    their last op and `outputs` the new results, at the same row dims: only `op`'s own
    operands are mapped, so a chain of n ops costs n, not n^2. It is what `analyse`
    gives on all the ops whenever it succeeds (every old value keeps its axes: an old
    result that `op` now consumes must be mapped as it was seeded, by the row dims);
    NotRowLocal means only that the whole group must be analysed again."""
    p = analysis.row_dims
    if not outputs:
        raise NotRowLocal("a group needs a result")
    rows = shape(outputs[0])[:p]
    seed = tuple(range(p))
    found: dict[SSAValue, RowAxes] = {}
    for out in outputs:
        if len(shape(out)) < p + (1 if p else 0) or shape(out)[:p] != rows:
            raise NotRowLocal("results disagree on their rows")
        if analysis.axes.get(out, seed) != seed:
            raise NotRowLocal("a result is mapped off its rows")
        found[out] = seed
    axes = next((found[r] for r in op.results if r in found), None)
    if axes is None:
        raise NotRowLocal(f"{op.name} result is not used by the group's results")
    for operand, mapped in zip(op.operands, operand_axes(op, axes)):
        if operand.owner not in inside and _is_scalar(operand):
            continue
        old = found.get(operand, analysis.axes.get(operand))
        if old is not None and old != mapped:
            raise NotRowLocal(f"{operand.name_hint or 'a value'} is used with two row mappings")
        found[operand] = mapped
        if operand.owner not in inside:
            last = len(shape(operand)) - 1
            if shape(operand)[last:] != (1,) and any(a == last for a in mapped[:-1]):
                raise NotRowLocal("an input's stick dim would be an outer row dim")
    return RowAnalysis(p, rows, {**analysis.axes, **found})


def stick_of(group: Operation, analysis: RowAnalysis, values: Sequence[SSAValue],
             dim: int | None = None) -> int:  # fmt: skip
    """The elements per stick of the widest-sticked of `values` whose stick dim row dim
    `dim` (the innermost by default) walks, 1 if none: a tile shorter than that dim
    would move part-sticks of it, so its extent there is a multiple of this."""
    dim = analysis.row_dims - 1 if dim is None else dim
    card = card_of(group)
    return max((card.elements_per_stick(spyre.element_type_name(spyre.element_of(v)))
                for v in values if analysis.walks_stick(v, dim)), default=1)  # fmt: skip


def _is_scalar(value: SSAValue) -> bool:
    return shape(value) == ()


def best_row_dims(ops: Sequence[Operation], outputs: Sequence[SSAValue]) -> RowAnalysis:
    """The analysis with the most row dims that works (the body excludes the last dim)."""
    rank = min(len(shape(o)) for o in outputs)
    for p in range(rank - 1, -1, -1):
        try:
            return analyse(ops, outputs, p)
        except NotRowLocal:
            continue
    raise NotRowLocal("no row tiling")


def body_bytes(analysis: RowAnalysis, values: Sequence[SSAValue],
               table: Collection[SSAValue] = ()) -> int:  # fmt: skip
    """Bytes of one row (a unit extent along every row dim) of every buffer."""
    unit = [1] * analysis.row_dims
    return sum(math.prod(analysis.tile_shape(v, unit)) * _element_bytes(v)
               for v in values if v not in table)  # fmt: skip


def fitting_rows(ops: Sequence[Operation], outputs: Sequence[SSAValue], values: Sequence[SSAValue],
                 row_dims: int, lx_bytes: int) -> tuple[RowAnalysis, int]:  # fmt: skip
    """The row analysis with the planned `row_dims`, or, when one row of it does not fit
    half of LX, with more row dims - down to the stick dim itself, tiled in whole
    sticks - as long as the ops stay row-local (elementwise ops over rows of any length).
    Returns it with its bytes per row; a row that fits nowhere is left to the tiler's
    error."""
    rank = min(len(shape(v)) for v in outputs)
    analysis = analyse(ops, outputs, row_dims, whole_rows=row_dims < rank)
    row_bytes = body_bytes(analysis, values)
    for wider in range(row_dims + 1, rank + 1):
        if row_bytes <= lx_bytes // 2:
            break
        try:
            candidate = analyse(ops, outputs, wider, whole_rows=False)
        except NotRowLocal:
            break
        analysis, row_bytes = candidate, body_bytes(candidate, values)
    return analysis, row_bytes


def _element_bytes(value: SSAValue) -> int:
    return ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(value))]
