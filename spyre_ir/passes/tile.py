"""spyre-tile: turn each planned `dataflow.group` into a `dataflow.kernel`.

The kernel body is one SPMD program: the core id picks a contiguous range of work items
(tiles); a loop walks them, loading inputs from LPDDR5 into LX, running every op of the
group as a tile operation on its unit, and storing the results. Tile sizes come from the
cost model so that the working set, with two slots per streamed input, fits `lx-bytes`.
Edge tiles overhang the tensors: loads read padding there and stores drop it.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ModuleOp,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow
from spyre_ir.hardware import DEFAULT_CONFIG, card_of
from spyre_ir.passes.fuse_segments import split_segments
from spyre_ir.passes.matmul_group import SegmentsApart
from spyre_ir.passes.partition_cores import group_kind, plan_group
from spyre_ir.passes.split_group import row_overflows, split_group
from spyre_ir.passes.split_head_view import split_head_view
from spyre_ir.passes.tile_attention import tile_attention_group
from spyre_ir.passes.tile_copy import tile_copy_group
from spyre_ir.passes.tile_head_view import NoWholeHeads
from spyre_ir.passes.tile_kernel import hoist_definitions
from spyre_ir.passes.tile_matmul import tile_matmul_group
from spyre_ir.passes.tile_rows import tile_rows_group


@dataclass(frozen=True)
class SpyreTile(ModulePass):
    """Turn planned dataflow.groups into dataflow.kernels that fit `lx-bytes` of LX (at
    most the module's card's)."""

    name = "spyre-tile"

    lx_bytes: int = DEFAULT_CONFIG.lx_bytes
    a_resident: bool = False
    """Let a matmul keep its M tile's A row block in LX over its N tiles (A_RESIDENT).
    Off: where the cost model picks it (8B prefill gate/up) the simulator measures it
    slower (docs/passes.md)."""
    prologue_resident: bool = True
    """Let a matmul under a norm prologue keep its scaled A row block in LX, the
    statistics computed as the block is filled (A_RESIDENT, where the cost model picks
    it; false: A streams, its statistics in a loop of their own)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lx_bytes = min(self.lx_bytes, card_of(op).lx_bytes)
        for group in [g for g in op.walk() if isinstance(g, dataflow.GroupOp)]:
            if group.plan is None:
                raise located_error(group, f"group @{group.sym_name.data} has no plan; "
                                           "run spyre-partition-cores first")  # fmt: skip
            plan = group.plan
            group_kind(group)
            if isinstance(plan, dataflow.RowsPlanAttr) and row_overflows(group, plan, lx_bytes):
                # Too long a row for its ops together: each op on its own (split_group).
                for part in split_group(group):
                    part.plan = plan_group(part, plan.cores.data)
                    tile_group(part, part.plan, lx_bytes)
                continue
            tile_group(group, plan, lx_bytes, self.a_resident, self.prologue_resident)


def tile_group(group: dataflow.GroupOp, plan: dataflow.WorkPlanAttr, lx_bytes: int,
               a_resident: bool = False, prologue_resident: bool = True) -> None:  # fmt: skip
    """Replace one planned group by its kernel."""
    if isinstance(plan, dataflow.MatmulPlanAttr):
        try:
            kernel = tile_matmul_group(group, plan, lx_bytes, a_resident, prologue_resident)
        except (NoWholeHeads, SegmentsApart) as apart:
            # the head-view epilogue, or each segment of a merged group, a kernel of its own
            split = split_head_view if isinstance(apart, NoWholeHeads) else split_segments
            for part in split(group):
                part.plan = plan_group(part, plan.cores.data, prologue_resident=prologue_resident)
                tile_group(part, part.plan, lx_bytes, a_resident, prologue_resident)
            return
    elif isinstance(plan, dataflow.AttentionPlanAttr):
        kernel = tile_attention_group(group, plan, lx_bytes)
    elif isinstance(plan, dataflow.CopyPlanAttr):
        kernel = tile_copy_group(group, plan, lx_bytes)
    elif isinstance(plan, dataflow.RowsPlanAttr | dataflow.GatherPlanAttr):
        kernel = tile_rows_group(group, plan, lx_bytes)
    else:
        raise located_error(group, f"group @{group.sym_name.data}: spyre-tile has "
                                   f"no kernel for a {plan.kind!r} plan")  # fmt: skip
    hoist_definitions(kernel)
    Rewriter.replace_op(group, kernel)
