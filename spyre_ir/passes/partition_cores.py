"""spyre-partition-cores: decide how each group's work divides over the cores.

The plan goes on the group as a `plan` dictionary (see docs/dataflow.md):
  rows:   {kind = "rows", row_dims, cores}            rows split in contiguous ranges
  gather: {kind = "gather", row_dims, cores}          the same, over index positions
  matmul: {kind = "matmul", cores, split = [m, n, k]} from the matmul cost model; k > 1
          is split-K with a ring all-reduce of the partial sums
  attention: {kind = "attention", cores, ...} the flash-attention tiling of
          passes/tile_attention.py
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64

from spyre_ir import cost_model
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES
from xdsl.passes import ModulePass


def group_kind(group: dataflow.GroupOp) -> tuple[str, int]:
    kind = group.attributes.get("dataflow.kind")
    dims = group.attributes.get("dataflow.row_dims")
    if not isinstance(kind, StringAttr) or not isinstance(dims, IntegerAttr):
        from spyre_ir.diagnostics import located_error

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


def plan_group(group: dataflow.GroupOp, cores: int) -> dict[str, object]:
    kind, row_dims = group_kind(group)
    config = DEFAULT_CONFIG
    if kind == "matmul":
        mm = matmul_of(group)
        elem = ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(mm.lhs))]
        plan = cost_model.plan_matmul(*matmul_dims(mm), elem, config, cores)
        return {
            "kind": kind,
            "cores": plan.cores,
            "split": [plan.split_m, plan.split_n, plan.split_k],
        }
    if kind == "attention":
        from spyre_ir.passes.tile_attention import plan_attention

        return plan_attention(group, cores)
    out = spyre.shape_of(group.outputs[0])
    rows = 1
    for d in out[:row_dims]:
        rows *= d
    return {"kind": kind, "row_dims": row_dims, "cores": max(1, min(cores, rows))}


def to_attr(plan: dict[str, object]) -> DictionaryAttr:
    from xdsl.dialects.builtin import ArrayAttr

    def attr(v: object):
        if isinstance(v, str):
            return StringAttr(v)
        if isinstance(v, list):
            return ArrayAttr([attr(x) for x in v])
        return IntegerAttr(int(v), i64)

    return DictionaryAttr({k: attr(v) for k, v in plan.items()})


def from_attr(plan: DictionaryAttr) -> dict[str, object]:
    def value(a):
        if isinstance(a, StringAttr):
            return a.data
        if isinstance(a, IntegerAttr):
            return a.value.data
        return [value(x) for x in a.data]

    return {k: value(v) for k, v in plan.data.items()}


@dataclass(frozen=True)
class SpyrePartitionCores(ModulePass):
    """Record a work division over `cores` cores on every dataflow.group."""

    name = "spyre-partition-cores"

    cores: int = DEFAULT_CONFIG.cores

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.cores < 1:
            raise ValueError("spyre-partition-cores: cores must be positive")
        for group in op.walk():
            if isinstance(group, dataflow.GroupOp):
                group.plan = to_attr(plan_group(group, self.cores))
