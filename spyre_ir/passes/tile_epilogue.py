"""The matmul kernel's epilogue hook (tile_matmul.py): the group's elementwise ops on
the cast output tile, per row block and corelet half, with their own LX tiles and the
loads of their inputs from LPDDR5 (a bias, a residual)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.ir import SSAValue

from spyre_ir.dialects import dataflow, spyre
from spyre_ir.passes import row_model
from spyre_ir.passes.fuse_heads import head_split
from spyre_ir.passes.matmul_tiling import MatmulTiling, MatmulVariant
from spyre_ir.passes.tile_head_view import HeadView
from spyre_ir.passes.tile_kernel import BodyBuilder, box_offsets
from spyre_ir.passes.tile_rows import slice_on_tile

if TYPE_CHECKING:
    from spyre_ir.passes.matmul_group import MatmulGroup


class Epilogue:
    """The epilogue hook: the group's elementwise ops on the cast output tile, per row
    block and corelet half, with their own LX tiles and their inputs' loads."""

    def __init__(self, parts: MatmulGroup, tiling: MatmulTiling, b: BodyBuilder,
                 memory: dict[SSAValue, SSAValue], first: Epilogue | None = None) -> None:  # fmt: skip
        """`first`: the epilogue of a merged group's first segment, whose per-row input
        tiles this one reads too (q's and k's cos and sin, loaded once)."""
        mm = parts.mm
        rank = len(spyre.shape_of(mm.result))
        self.ops = parts.epilogue
        self.memory = memory
        self.results = parts.results
        # A pair's two halves are its two matmuls' tiles of the same output columns, which
        # one epilogue combines: one set of tiles per row block, not one per half.
        self.outs = 1 if parts.second else tiling.halves
        views = [op for op in self.ops if head_split(op) is not None]
        self.heads = HeadView.of(views, parts, tiling) if views else None
        if self.heads is not None:
            self.analysis = self.heads.analysis
        elif self.ops:
            self.analysis = row_model.analyse(self.ops, parts.outputs, rank, whole_rows=False)
        else:
            self.analysis = row_model.RowAnalysis(rank, spyre.shape_of(mm.result),
                                                  {mm.result: tuple(range(rank))})  # fmt: skip
        for result in self.results:
            self.analysis.axes.setdefault(result, tuple(range(rank)))
        self.inputs = list(dict.fromkeys(
            operand for op in self.ops for operand in op.operands
            if operand in memory and operand not in self.results))  # fmt: skip
        """The epilogue's operands loaded from LPDDR5 (a bias, a residual; the input of
        a restickify, whose result shares its tile: the load changes the layout)."""
        self.extents = tiling.batch_extents(rank) + [tiling.rows_per_block, tiling.th]
        values = list(dict.fromkeys([*self.results, *(o for op in self.ops for o in op.operands),
                                     *(r for op in self.ops for r in op.results)]))  # fmt: skip
        # The tiles, per row block and half (SPLIT_K's stacked tiles have their own).
        self.buffers: list[list[dict[SSAValue, SSAValue]]] = []
        blocks = 0 if tiling.variant is MatmulVariant.SPLIT_K else tiling.row_blocks
        self.loaded_by_first = {v for v in self.inputs if first is not None and self.per_row(v)
                                and v in first.inputs and first.per_row(v)
                                and first.tile_shape(v) == self.tile_shape(v)
                                and len(first.buffers) == blocks}  # fmt: skip
        for j in range(blocks):
            self.buffers.append([])
            for h in range(self.outs):
                half: dict[SSAValue, SSAValue] = {}
                for v in values:
                    if isinstance(v.owner, spyre.RestickifyOp):
                        half[v] = half[v.owner.input]  # same tile in LX, see tile_rows_group
                    elif v in self.loaded_by_first:
                        assert first is not None
                        half[v] = first.buffers[j][0][v]
                    elif h and v in self.inputs and self.per_row(v):
                        # The same rows in every half (cos and sin): one tile, loaded once.
                        half[v] = self.buffers[-1][0][v]
                    else:
                        half[v] = b.alloc(self.tile_shape(v), spyre.element_of(v))
                self.buffers[-1].append(half)

    def tile_shape(self, value: SSAValue) -> tuple[int, ...]:
        """`value`'s tile: the output tile's shape, or of a head-view value its heads."""
        if self.heads is not None and value in self.heads.values:
            return self.heads.analysis.tile_shape(value, self.heads.extents)
        return self.analysis.tile_shape(value, self.extents)

    def offsets(self, fb: BodyBuilder, value: SSAValue, at: list[SSAValue]) -> list[SSAValue]:
        """Where `value`'s tile of the output tile at `at` (row, column) starts."""
        if self.heads is not None and value in self.heads.values:
            at = [*at[:-1], fb.div(at[-1], self.heads.width)]
        return box_offsets(fb, value, self.analysis.axes.get(value, ()), at)

    def output_tile(self, j: int, h: int) -> SSAValue:
        """Where the cast puts row block j, half h of the matmul's result (of a pair:
        half h is matmul h's tile)."""
        if len(self.results) > 1:
            return self.buffers[j][0][self.results[h]]
        return self.buffers[j][h][self.results[0]]

    def per_row(self, operand: SSAValue) -> bool:
        """An input with the same tile for every column of the output (rotary's cos and
        sin, [m, 1, D]): loaded once per M tile, not per output tile."""
        axes = self.analysis.axes.get(operand, ())
        return self.heads is not None and bool(axes) and axes[-1] is None

    @property
    def column_inputs(self) -> list[SSAValue]:
        return [o for o in self.inputs if not self.per_row(o)]

    def load_row_inputs(self, lb: BodyBuilder, j: int, at: list[SSAValue]) -> None:
        """Row block j's per-row inputs (`per_row`), at row offsets `at`: one tile that
        every half reads (and a later segment whose first segment loads it, none)."""
        rows = [o for o in self.inputs if self.per_row(o) and o not in self.loaded_by_first]
        for operand in rows:
            lb.emit(dataflow.LoadOp(self.memory[operand], self.offsets(lb, operand, at),
                                    self.buffers[j][0][operand]))  # fmt: skip

    def load_inputs(self, fb: BodyBuilder, j: int, row_offsets: Sequence[list[SSAValue]]) -> None:
        """The inputs of row block j from LPDDR5, per half at `row_offsets[h]`."""
        for h, at in enumerate(row_offsets[: self.outs]):
            for operand in self.column_inputs:
                offsets = self.offsets(fb, operand, at)
                fb.emit(dataflow.LoadOp(self.memory[operand], offsets,
                                        self.buffers[j][h][operand]))  # fmt: skip

    def apply(self, fb: BodyBuilder, j: int, h: int) -> None:
        tiles = self.buffers[j][h]
        for op in self.ops:
            ins, outs = [tiles[o] for o in op.operands], [tiles[r] for r in op.results]
            if isinstance(op, spyre.SliceOp) and self.heads is not None:
                fb.compute_named(op.name, ins, outs, slice_on_tile(
                    op, self.heads.analysis, self.heads.extents))  # fmt: skip
            elif not isinstance(op, spyre.RestickifyOp):
                fb.compute(op, ins, outs)  # a head view: the tile rearranged (ls)
