"""spyre-tile's matmul epilogue on a head view (a rotary embedding, spyre-fuse-rotary):
the tile shapes and row axes of its values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import Operation, SSAValue

from spyre_ir.dialects import spyre
from spyre_ir.passes import row_model
from spyre_ir.passes.fuse_heads import head_split
from spyre_ir.passes.matmul_tiling import MatmulTiling

if TYPE_CHECKING:
    from spyre_ir.passes.matmul_group import MatmulGroup


class NoWholeHeads(Exception):
    """The plan's output tiles hold no whole heads: spyre-tile splits the head view off
    (passes/split_head_view.py)."""


@dataclass
class HeadView:
    """A 2-D matmul's epilogue on the head view [m, H, D] of its results (a rotary
    embedding, spyre-fuse-rotary): each output tile [rows, th] holds th / D whole heads,
    seen as [rows, th / D, D] by a reshape computed on the tile; the ops after it are
    tiled by two row dims (positions, heads) with D whole, and their inputs ([m, 1, D]:
    cos, sin) and outputs are loaded and stored at column / D."""

    width: int
    analysis: row_model.RowAnalysis
    extents: list[int]
    values: set[SSAValue]

    @staticmethod
    def of(views: list[Operation], parts: MatmulGroup, tiling: MatmulTiling) -> HeadView:
        widths = {head_split(op) for op in views}
        width = widths.pop()
        mm = parts.mm
        if widths or len(spyre.shape_of(mm.result)) != 2 or tiling.th % width:
            raise NoWholeHeads(f"tiles of {tiling.th} columns, heads of {width}")
        ops = [op for op in parts.epilogue if op not in views]
        values = {v for op in views for v in op.results}
        values |= {v for op in ops for v in (*op.operands, *op.results)
                   if len(spyre.shape_of(v)) == 3}  # fmt: skip
        outputs = [v for v in parts.outputs if v in values]
        analysis = row_model.analyse(ops, outputs, 2, whole_rows=False)
        for result in parts.results:  # the accumulators' own [rows, th] tiles
            analysis.axes[result] = (0, 1)
        for view in views:
            analysis.axes.setdefault(view.results[0], (0, 1))
        extents = [tiling.rows_per_block, tiling.th // width]
        return HeadView(width, analysis, extents, values)
