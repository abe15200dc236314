"""A matmul group as spyre-tile sees it (`MatmulGroup`: the matmul or pair, the operand
views it reads through, its norm prologue, its epilogue and a merged group's later
segments) and how its tiling is planned (`plan_group_tiling`: the plan of
matmul_tiling.py with a prologue's and the later segments' tiles taking their share of
LX). The kernels are built by tile_matmul.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from xdsl.ir import Operation, SSAValue

from spyre_ir import matmul_plan
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import SpyreConfig
from spyre_ir.passes.fuse import swaps_last_two
from spyre_ir.passes.fuse_heads import head_split
from spyre_ir.passes.fuse_norm_prologue import is_prologue
from spyre_ir.passes.fuse_segments import segment_of
from spyre_ir.passes.matmul_tiling import (
    MatmulShape,
    MatmulTiling,
    MatmulVariant,
    plan_tiling,
)
from spyre_ir.passes.partition_cores import matmul_dims, matmul_layouts
from spyre_ir.passes.tile_kernel import (
    elem_bytes,
)
from spyre_ir.passes.tile_prologue import (
    prologue_bytes,
    resident_prologue_bytes,
)


@dataclass
class MatmulGroup:
    """A matmul group's parts: the matmul, the operand transposes and restickifies it
    reads through, and the elementwise epilogue on its result."""

    mm: spyre.MatmulOp
    second: spyre.MatmulOp | None
    """A second matmul reading mm's A with its own B of the same shape (spyre-fuse's
    pairs): its B tiles stream beside mm's, one corelet each."""
    folded: dict[SSAValue, Operation]
    """Operand -> the transpose producing it: the operand is read through `perm` loads."""
    resticked: dict[SSAValue, SSAValue]
    """Operand -> the input of the restickify producing it: its loads read those bytes."""
    epilogue: list[Operation]
    outputs: list[SSAValue]
    """The group's yielded values."""
    prologue: list[Operation] = field(default_factory=list)
    """The norm chain computing A from a group input (spyre-fuse-norm-prologue)."""

    segments: list[MatmulGroup] = field(default_factory=list)
    """A merged group's later segments (passes/fuse_segments.py): each a matmul or a
    pair reading this group's A, with its own epilogue and outputs (its `prologue`
    empty: this group's computes A)."""

    @staticmethod
    def of(group: dataflow.GroupOp) -> MatmulGroup:
        ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
        yielded = group.body.block.last_op
        assert isinstance(yielded, dataflow.YieldOp)
        by_segment: dict[int, list[spyre.MatmulOp]] = {}
        for op in ops:
            if isinstance(op, spyre.MatmulOp):
                by_segment.setdefault(segment_of(op), []).append(op)
        segments = [by_segment[s] for s in sorted(by_segment)]
        for mm, *others in segments:
            check_segment(group, mm, others, segments[0][0])
        operands = [v for mms in segments for mm in mms
                    for v in ([mm.lhs, mm.rhs] if mm is mms[0] else [mm.rhs])]  # fmt: skip
        folded = {v: v.owner for v in operands
                  if v.owner in ops and swaps_last_two(v.owner)}  # fmt: skip
        resticked = {v: v.owner.input for v in operands
                     if v.owner in ops and isinstance(v.owner, spyre.RestickifyOp)}  # fmt: skip
        # The chain, and the scalar constants only it reads (copied into the group).
        prologue = [op for op in ops if is_prologue(op) or (
            isinstance(op, spyre.FullOp) and op.results[0].uses
            and all(is_prologue(u.operation) for u in op.results[0].uses))]  # fmt: skip
        matmuls = {mm for mms in segments for mm in mms}
        epilogue = [op for op in ops if op not in matmuls
                    and op not in folded.values() and op not in prologue
                    and not any(r in resticked for r in op.results)]  # fmt: skip
        owners = epilogue_segments(group, segments, epilogue)
        outputs = list(yielded.values)
        parts = [MatmulGroup(mms[0], mms[1] if len(mms) > 1 else None, folded, resticked,
                             [op for op in epilogue if s in owners[op]],
                             [v for v in outputs if segment_of_value(v, owners, matmuls) == s])
                 for s, mms in enumerate(segments)]  # fmt: skip
        first = parts[0]
        first.prologue, first.segments = prologue, parts[1:]
        return first

    def head_width(self) -> int | None:
        """The head width D of the epilogue's head view, if it has one."""
        return next((w for w in map(head_split, self.epilogue) if w is not None), None)

    @property
    def results(self) -> list[SSAValue]:
        """The matmuls' results, which the epilogue reads from the accumulators."""
        return [self.mm.result, *([self.second.result] if self.second else [])]

    def shape(self) -> MatmulShape:
        mm = self.mm
        batch, m, n, k = matmul_dims(mm)
        elem = elem_bytes(mm.lhs)
        lhs_rank, rhs_rank = len(spyre.shape_of(mm.lhs)), len(spyre.shape_of(mm.rhs))
        rank = len(spyre.shape_of(mm.result))
        stackable = (not self.epilogue and not self.prologue and rank == 2 and lhs_rank == 2
                     and self.outputs == [mm.result] and self.second is None)  # fmt: skip
        # A pair plans as one matmul of both Bs side by side: each output tile of the
        # plan is half the first's columns and half the second's, and the epilogue's
        # tiles hold the real columns only, half the plan's tile.
        epilogue = self.epilogue_bytes_per_elem()
        if self.second:
            n, epilogue = 2 * n, -(-epilogue // 2)
        tileable = (not self.epilogue and not self.prologue and not self.segments
                    and rank == 3 and lhs_rank == 3 and self.outputs == [mm.result]
                    and self.second is None)  # fmt: skip
        return MatmulShape(batch, m, n, k, elem, epilogue, rhs_rank > 2, stackable,
                           lhs_rank == 2 and mm.lhs not in self.folded,
                           self.second is not None, bool(self.prologue),
                           None if self.second else self.head_width(), tileable,
                           matmul_layouts(mm))  # fmt: skip

    def epilogue_bytes_per_elem(self) -> int:
        """LX bytes per output element of the epilogue's tiles, two slots each (the
        tiles a loop rewrites alternate, see spyre-double-buffer): each op's result in
        its own element type (a silu computed in f32 takes 4 bytes a value), and each
        input of the output's whole shape loaded from LPDDR5 (a residual; a bias row is
        small)."""
        out = spyre.shape_of(self.mm.result)
        inside = {r for op in self.epilogue for r in op.results}
        results = [r for op in self.epilogue for r in op.results]
        inputs = {o for op in self.epilogue if not isinstance(op, spyre.RestickifyOp)
                  for o in op.operands if o not in inside and o not in self.results
                  and spyre.shape_of(o) == out}  # fmt: skip
        # A head-view value holds its share of the output's elements (a rotary's halves
        # half), rounded up to whole bytes.
        share = lambda v: math.prod(spyre.shape_of(v)) / math.prod(out)  # noqa: E731
        return math.ceil(sum(2 * elem_bytes(v) * min(share(v), 1.0)
                             for v in [*results, *inputs]))  # fmt: skip


def segments_lx_bytes(parts: MatmulGroup, tiling: MatmulTiling) -> int:
    """LX the later segments of a merged group take beside the first's tiling (its
    tiles at most `tiling`'s): their epilogue tiles, and their own B tiles and
    accumulators where their tile widths differ from the first's."""
    total = 0
    for later in parts.segments:
        t = segment_tiling(tiling, later)
        total += t.tm * t.tn * t.shape.epilogue_bytes_per_elem
        if (t.th, t.halves) != (tiling.th, tiling.halves):
            steps = RESIDENT_STEPS if t.a_resident else 1
            total += t.tn * (2 * steps * t.tk * t.shape.elem_bytes + t.tm * 4)
    return total


def plan_group_tiling(parts: MatmulGroup, config: SpyreConfig, cores: int,
                      split: tuple[int, int, int], lx_bytes: int, a_resident: bool,
                      prologue_resident: bool, split_b: int | None = None) -> MatmulTiling:  # fmt: skip
    """The group's tiling; under a norm prologue its tiles take their share of LX
    first. A prologue's group weighs A_RESIDENT when `prologue_resident` (without
    split-K: the statistics need each row whole): its fill loop loads each A tile of
    an M tile once, adds it to the row statistics and scales it by the weight into
    the block, so neither the statistics' own pass over x nor a scaling per N tile
    remains. Without a prologue A_RESIDENT is weighed when `a_resident`. `split_b`:
    cores along the batch (the plan's)."""
    shape = parts.shape()
    if not parts.prologue:
        return plan_tiling(shape, config, cores, split, lx_bytes, a_resident, split_b)
    if prologue_resident and split[2] == 1:
        first = plan_tiling(shape, config, cores, split, lx_bytes, True, split_b)
        if first.variant is MatmulVariant.A_RESIDENT:
            share = split[1] if first.shares_a else 1
            room = lx_bytes - resident_prologue_bytes(first.tm, first.tk, share)
            tiling = plan_tiling(shape, config, cores, split, room, True, split_b)
            # The prologue's tiles, sized for `first`, hold this tiling's.
            if tiling.variant is MatmulVariant.A_RESIDENT and tiling.tm <= first.tm and \
                    tiling.tk <= first.tk and tiling.shares_a == first.shares_a:  # fmt: skip
                return tiling
    first = plan_tiling(shape, config, cores, split, lx_bytes, split_b=split_b)
    room = lx_bytes - prologue_bytes(first.rows_per_block, first.tk, first.row_blocks)
    return plan_tiling(shape, config, cores, split, room, split_b=split_b)


def check_segment(group: dataflow.GroupOp, mm: spyre.MatmulOp, others: list[spyre.MatmulOp],
                  first: spyre.MatmulOp) -> None:  # fmt: skip
    """A segment is one matmul, or a pair: a second reading its A with a B of the same
    shape, both 2-D; a later segment reads the first's A."""
    if min(len(spyre.shape_of(mm.lhs)), len(spyre.shape_of(mm.rhs))) < 2:
        raise located_error(mm, "spyre-tile: matmul with a 1-D operand; reshape it to 2-D")
    second = others[0] if others else None
    if len(others) > 1 or (second is not None and (
            second.lhs is not mm.lhs or spyre.shape_of(second.rhs) != spyre.shape_of(mm.rhs)
            or len(spyre.shape_of(mm.result)) != 2)):  # fmt: skip
        raise located_error(group, f"spyre-tile: group @{group.sym_name.data}: a second "
                                   "matmul must read the first's A with a B of the same "
                                   "shape, both 2-D")  # fmt: skip
    if mm is not first and (mm.lhs is not first.lhs or len(spyre.shape_of(mm.result)) != 2):
        raise located_error(group, f"spyre-tile: group @{group.sym_name.data}: a later "
                                   "segment's matmul must read the first's A, both 2-D")  # fmt: skip


def epilogue_segments(group: dataflow.GroupOp, segments: list[list[spyre.MatmulOp]],
                      epilogue: list[Operation]) -> dict[Operation, set[int]]:  # fmt: skip
    """Per epilogue op, the segments whose epilogue runs it: the one whose results it
    reads, or (an op reading only group inputs, a view of cos) every one reading it."""
    of_value = {mm.result: s for s, mms in enumerate(segments) for mm in mms}
    owners: dict[Operation, set[int]] = {}
    for op in epilogue:
        owners[op] = {of_value[v] for v in op.operands if v in of_value}
        if len(owners[op]) > 1:
            raise located_error(op, f"spyre-tile: group @{group.sym_name.data}: an epilogue "
                                    "op reads the results of two segments")  # fmt: skip
        of_value.update({r: s for r in op.results for s in owners[op]})
    for op in reversed(epilogue):
        if not owners[op]:
            owners[op] = {s for r in op.results for u in r.uses
                          for s in owners.get(u.operation, ())} or {0}  # fmt: skip
    return owners


def segment_of_value(value: SSAValue, owners: dict[Operation, set[int]],
                     matmuls: set[spyre.MatmulOp]) -> int:  # fmt: skip
    """The segment storing yielded `value` (0 when no later segment computes it)."""
    owner = value.owner
    if owner in matmuls:
        return segment_of(owner)
    return min(owners.get(owner, {0}), default=0)


class SegmentsApart(Exception):
    """A merged group's plan keeps no A block resident: tile its segments apart
    (fuse_segments.split_segments)."""


RESIDENT_STEPS = 4
"""K steps per iteration of A_RESIDENT's loop (each with two slots of its B tiles, by
spyre-double-buffer) when they fit: four steps of PE work cover an output tile's
stores."""


def resident_steps(t: MatmulTiling, lx_bytes: int) -> int:
    """K steps per iteration of an A_RESIDENT loop: `RESIDENT_STEPS` or fewer, dividing
    the K steps, whose B tiles fit LX beside the plan's working set (its estimate,
    `matmul_plan.matmul_lx_bytes`, the block in place of the A tiles, and a prologue's
    tiles with their staging A tiles)."""
    elem = t.shape.elem_bytes
    planned = matmul_plan.matmul_lx_bytes(t.tm, t.tn, t.tk, elem, t.shape.epilogue_bytes_per_elem) + \
        (t.k_per - 2) * t.tm * t.tk * elem + resident_prologue_bytes(t.tm, t.tk, 1)  # fmt: skip
    step = 2 * t.tk * t.tn * elem  # two slots of a step's B tiles
    steps = RESIDENT_STEPS
    while steps > 1 and (t.k_per % steps or planned + (steps - 1) * step > lx_bytes):
        steps //= 2
    return steps


def segment_tiling(t: MatmulTiling, later: MatmulGroup) -> MatmulTiling:
    """A later segment's tiling: the first's split, tiles and loops over its own
    columns (a pair's halves its two matmuls')."""
    shape = later.shape()
    tiling = replace(t, shape=replace(t.shape, n=shape.n, paired=shape.paired,
                                      epilogue_bytes_per_elem=shape.epilogue_bytes_per_elem,
                                      head_width=shape.head_width))  # fmt: skip
    return replace(tiling, halves=2) if later.second is not None else tiling
