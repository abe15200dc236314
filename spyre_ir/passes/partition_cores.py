"""spyre-partition-cores: decide how each group's work divides over the cores.

The plan goes on the group as a typed `plan` attribute (dialects/dataflow_plan.py,
docs/dataflow.md):
  #dataflow.rows_plan<row_dims, cores>     rows split in contiguous ranges
  #dataflow.gather_plan<row_dims, cores>   the same, over index positions
  #dataflow.copy_plan<row_dims, cores>     a concat or restickify
  #dataflow.matmul_plan<cores, split = [m, n, k]>  from the matmul cost model; k > 1
          is split-K with a ring all-reduce of the partial sums; a forced split of a
          batched matmul adds `split_b`, the cores along the batch
  #dataflow.attention_plan<cores>          the cores on offer; spyre-tile picks the
          flash-attention tiling (passes/tile_attention.py)

A matmul's split can be forced: `spyre-partition-cores{split=B,M,N,K}` for every matmul
of the module, `{spyre.split = array<i64: b, m, n, k>}` on one `spyre.matmul` (which
wins). Cores per axis. Of a batched matmul the plan records the batch split as
`split_b` and spyre-tile runs the card's division (matmul_splits.csv): B groups of
M x N x K cores each walk a contiguous range of B / split_b batches, and the M split
divides each batch's rows. (The cost model's own plans divide the rows of all batches,
batch x M tiles in contiguous ranges per core, and carry no `split_b`.) A split that
cannot be honoured (product not the cores, N or K not whole sticks per core) is a
located error.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from spyre_ir import matmul_plan
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.dialects.stick_layout import layout_or_default
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES, SpyreConfig, card_of
from spyre_ir.lpddr_runs import MatmulLayouts
from spyre_ir.passes.fuse_segments import segment_of


def group_kind(group: dataflow.GroupOp) -> tuple[str, int]:
    kind = group.attributes.get("dataflow.kind")
    dims = group.attributes.get("dataflow.row_dims")
    if not isinstance(kind, StringAttr) or not isinstance(dims, IntegerAttr):
        raise located_error(
            group,
            f"group @{group.sym_name.data} has no dataflow.kind/dataflow.row_dims: "
            "it was not formed by spyre-fuse",
        )
    return kind.data, dims.value.data


def matmul_of(group: dataflow.GroupOp) -> spyre.MatmulOp:
    return next(op for op in group.body.ops if isinstance(op, spyre.MatmulOp))


def matmul_dims(mm: spyre.MatmulOp) -> tuple[int, int, int, int]:
    """(batch, m, n, k) with 1-D operands promoted as torch does."""
    a, b = spyre.shape_of(mm.lhs), spyre.shape_of(mm.rhs)
    out = spyre.shape_of(mm.result)
    m = a[-2] if len(a) > 1 else 1
    n = b[-1] if len(b) > 1 else 1
    k = a[-1]
    batch = 1
    for d in out[: max(len(out) - 2, 0)]:
        batch *= d
    return batch, m, n, k


def matmul_layouts(mm: spyre.MatmulOp) -> MatmulLayouts | None:
    """Where the matmul's A, B and C live in LPDDR5 (their stick layouts, else
    torch-spyre's default layout), for the planner to count its tiles' runs; None with a
    1-D operand (a vector's tiles are one run each)."""
    values = (mm.lhs, mm.rhs, mm.result)
    if any(len(spyre.shape_of(v)) < 2 for v in values):
        return None
    return MatmulLayouts(*(layout_or_default(v.type) for v in values))


def check_sizes(group: dataflow.GroupOp) -> None:
    """A located error for a group with a zero-size tensor: there is no work to divide,
    and the card's kernels move whole sticks (run such graphs on the host)."""
    for value in (*group.inputs, *group.outputs):
        if 0 in spyre.shape_of(value):
            raise located_error(
                group,
                f"group @{group.sym_name.data}: a zero-size tensor ({value.type}) has no "
                "work for the card",
            )


def remove_dead_groups(module: ModuleOp) -> None:
    """Erase groups whose results nobody uses (latest first, so a group only a dead
    one used goes too): they have no work to plan."""
    for group in reversed([g for g in module.walk() if isinstance(g, dataflow.GroupOp)]):
        if is_trivially_dead(group):
            group.detach()
            group.erase()


SPLIT_ATTR = "spyre.split"
"""Discardable attribute of a `spyre.matmul` forcing its split: array<i64: b, m, n, k>."""


def forced_split(
    mm: spyre.MatmulOp, split: tuple[int, ...], cores: int, config: SpyreConfig
) -> tuple[int, int, int, int] | None:
    """The (b, m, n, k) split to force on `mm` (its `spyre.split` attribute, else the
    pass's `split`), or None to let the cost model choose; a split that cannot be
    honoured is a located error."""
    attr = mm.attributes.get(SPLIT_ATTR)
    where = f"{SPLIT_ATTR} = array<i64: ...>" if attr is not None else "split=B,M,N,K"
    if attr is not None:
        if not isinstance(attr, DenseArrayBase):
            raise located_error(mm, f"{SPLIT_ATTR} must be array<i64: b, m, n, k>")
        split = tuple(attr.get_values())
    if not split:
        return None
    if len(split) != 4 or min(split) < 1:
        raise located_error(
            mm, f"{where}: a split is four positive core counts (b, m, n, k), got {list(split)}"
        )
    sb, sm, sn, sk = (int(x) for x in split)
    batch, m, n, k = matmul_dims(mm)
    stick = config.elements_per_stick(spyre.element_type_name(spyre.element_of(mm.lhs)))
    problems = []
    if sb * sm * sn * sk != cores:
        problems.append(f"{sb} x {sm} x {sn} x {sk} = {sb * sm * sn * sk} cores, not {cores}")
    if batch % sb:
        problems.append(f"the batch split {sb} does not divide the batch {batch}")
    if sm > m:
        problems.append(f"the row split {sm} exceeds the {m} rows")
    for axis, size, parts in (("N", n, sn), ("K", k, sk)):
        if size % (parts * stick):
            problems.append(
                f"{axis} = {size} does not split into {parts} parts of whole sticks "
                f"({stick} elements)"
            )
    if problems:
        shape = f"{batch}x{m}x{n}x{k}"
        raise located_error(
            mm, f"{where}: cannot split matmul {shape} as {list(split)}: " + "; ".join(problems)
        )
    return sb, sm, sn, sk


ROW_PLANS: dict[str, type[dataflow.RowPlanBase]] = {
    "rows": dataflow.RowsPlanAttr,
    "gather": dataflow.GatherPlanAttr,
    "copy": dataflow.CopyPlanAttr,
}
"""The plan of each kind of group whose work items are rows."""


def rows_that_fit(group: dataflow.GroupOp, row_dims: int, lx_bytes: int) -> int:
    """spyre-fuse's row dims, or more when one row of those does not fit half of LX and
    the ops allow it (see row_model.fitting_rows): the cores divide the finer rows."""
    from spyre_ir.passes import row_model

    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    values = [*group.body.block.args, *(r for op in ops for r in op.results)]
    try:
        analysis, _ = row_model.fitting_rows(ops, list(yielded.values), values, row_dims, lx_bytes)
    except row_model.NotRowLocal:
        return row_dims  # spyre-tile reports it, located
    return analysis.row_dims


def prologue_options(group: dataflow.GroupOp, resident: bool) -> dict[str, object]:
    """plan_matmul's options for a matmul group under a norm prologue
    (spyre-fuse-norm-prologue), as spyre-tile plans its tiles: the epilogue's LX, its
    head view, the statistics' pass over x and, when `resident` (spyre-tile's
    `prologue-resident`), A_RESIDENT. The split decides whether a core can keep its A
    rows in LX beside its output tiles (8B prefill's q projection: 128 rows under 4 x 8
    cores cannot beside its rotary's 256-column tiles, 64 rows under 8 x 4 can).
    Without a prologue: none (the epilogue is not weighed)."""
    from spyre_ir.passes.fuse_norm_prologue import is_prologue
    from spyre_ir.passes.matmul_group import MatmulGroup

    if not any(is_prologue(op) for op in group.body.ops):
        return {}
    shape = MatmulGroup.of(group).shape()
    return {"epilogue_bytes_per_elem": shape.epilogue_bytes_per_elem, "prologue": True,
            "head_width": shape.head_width, "a_resident": resident}  # fmt: skip


def plan_group(
    group: dataflow.GroupOp, cores: int, split: tuple[int, ...] = (),
    prologue_resident: bool = True,
) -> dataflow.WorkPlanAttr:  # fmt: skip
    kind, row_dims = group_kind(group)
    check_sizes(group)
    config = card_of(group)
    if kind == "matmul":
        mm = matmul_of(group)
        elem = ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(mm.lhs))]
        forced = forced_split(mm, split, cores, config)
        batch, m, n, k = matmul_dims(mm)
        # A forced split of a batched matmul keeps its batch axis (the card's
        # division); a plain matmul's batch split is 1 (forced_split checks it).
        split_b = forced[0] if forced and batch > 1 else None
        # A pair (spyre-fuse: a second matmul sharing A) runs as both Bs side by side.
        # A merged group's later segments (passes/fuse_segments.py) take the first's
        # split and tiles: the plan is the first's.
        pairs = sum(isinstance(op, spyre.MatmulOp) and not segment_of(op)
                    for op in group.body.ops)  # fmt: skip
        try:
            plan = matmul_plan.plan_matmul(
                batch,
                m,
                n * pairs,
                k,
                elem,
                config,
                cores,
                split=forced[1:] if forced else None,
                rhs_batched=len(spyre.shape_of(mm.rhs)) > 2,
                paired=pairs > 1,
                split_b=split_b,
                layouts=matmul_layouts(mm),
                a_shareable=len(spyre.shape_of(mm.lhs)) == 2,
                **({} if forced else prologue_options(group, prologue_resident)),
            )
        except ValueError as e:
            raise located_error(group, f"group @{group.sym_name.data}: {e}") from None
        return dataflow.MatmulPlanAttr.of(plan.cores, (plan.split_m, plan.split_n, plan.split_k),
                                          plan.split_b)  # fmt: skip
    if kind == "attention":
        from spyre_ir.passes.tile_attention import plan_attention

        return plan_attention(group, cores)
    if kind == "rows":
        row_dims = rows_that_fit(group, row_dims, config.lx_bytes)
    out = spyre.shape_of(group.outputs[0])
    rows = 1
    for d in out[:row_dims]:
        rows *= d
    if kind not in ROW_PLANS:
        raise located_error(group, f"group @{group.sym_name.data}: unknown dataflow.kind "
                                   f"{kind!r} (kinds: matmul, attention, {', '.join(ROW_PLANS)})")  # fmt: skip
    if kind == "rows" and (streamed_reduction(group) or streamed_softmax(group)) is not None:
        # A lone reduction or softmax may be streamed (spyre-tile, passes/tile_stream.py
        # and tile_online_softmax.py), its chunks split over the cores its few rows
        # leave idle: it gets them all, and spyre-tile uses only as many as have work.
        return ROW_PLANS[kind].of(row_dims, cores)
    if kind == "copy":
        # A copy kernel deals out boxes, not rows (passes/tile_copy.py): a concat of one
        # row can still fill every core. spyre-tile uses only as many as have boxes.
        return ROW_PLANS[kind].of(row_dims, cores)
    return ROW_PLANS[kind].of(row_dims, max(1, min(cores, rows)))


def streamed_reduction(group: dataflow.GroupOp) -> object | None:
    from spyre_ir.passes.tile_stream import streamed_reduction as lone_reduction

    return lone_reduction(group)


def streamed_softmax(group: dataflow.GroupOp) -> object | None:
    from spyre_ir.passes.tile_online_softmax import streamed_softmax as lone_softmax

    return lone_softmax(group)


@dataclass(frozen=True)
class SpyrePartitionCores(ModulePass):
    """Record a work division over `cores` cores (at most the module's card's) on every
    dataflow.group; `split` (b, m, n, k cores per axis) forces that of every matmul."""

    name = "spyre-partition-cores"

    cores: int = DEFAULT_CONFIG.cores
    split: tuple[int, ...] = ()
    prologue_resident: bool = True
    """As spyre-tile's: a matmul's split under a norm prologue weighs A_RESIDENT."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.cores < 1:
            raise ValueError("spyre-partition-cores: cores must be positive")
        remove_dead_groups(op)
        split = (self.split,) if isinstance(self.split, int) else tuple(self.split)
        cores = min(self.cores, card_of(op).cores)
        for group in op.walk():
            if isinstance(group, dataflow.GroupOp):
                group.plan = plan_group(group, cores, split, self.prologue_resident)
