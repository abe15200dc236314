"""Sorting ops: `aten.sort`, `aten.topk` (and `argsort`, which Inductor's decompositions
turn into `sort`), `aten.histc` and `aten.div.Tensor_mode` (floor and trunc division).

`sort` and `topk` are `spyre.sort` (the values) and `spyre.argsort` (their i64 positions),
the same order twice: the first `k` along the dim, descending for `largest`, NaN the
largest value, equal values in index order (a stable sort; torch.sort(stable=True) gives
the same indices, torch's unstable sort and topk may order ties otherwise). Each is one
row op over the sorted dim, whole in LX (docs/passes.md, "Sorting"). `histc` counts the
elements at or above each bin edge (a compare against the edges and a sum) and takes the
differences; the edges are torch.linspace(min, max, bins + 1) in the input's dtype, as
torch's kernel finds each element's bin against them.
"""

from __future__ import annotations

import torch
import torch.fx
from xdsl.ir import SSAValue

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_lowerings import arg, lowers, promoted_dtype
from spyre_ir.lowering.fx_importer import Importer, meta_dtype, meta_type, tensor_type

aten = torch.ops.aten


def _sorted_pair(imp: Importer, node: torch.fx.Node, dim: int, k: int | None,
                 descending: bool) -> tuple[SSAValue, SSAValue]:  # fmt: skip
    x = imp.value(node.args[0])
    values, indices = node.meta["val"]
    if not shape(x):  # a 0-d tensor: itself, at position 0
        return x, imp.full(0, (), torch.int64)
    return (
        imp.emit(spyre.SortOp(x, dim, k, descending, tensor_type(values.shape, values.dtype))),
        imp.emit(spyre.ArgsortOp(x, dim, k, descending,
                                 tensor_type(indices.shape, torch.int64))),
    )  # fmt: skip


@lowers(aten.sort.default)
def lower_sort(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    dim = int(arg(node, 1, "dim", -1))
    return _sorted_pair(imp, node, dim, None, bool(arg(node, 2, "descending", False)))


@lowers(aten.sort.stable)
def lower_sort_stable(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    # sort.stable(self, *, stable, dim=-1, descending=False): all but self are keywords
    dim = int(node.kwargs.get("dim", -1))
    return _sorted_pair(imp, node, dim, None, bool(node.kwargs.get("descending", False)))


@lowers(aten.topk.default)
def lower_topk(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    """`sorted=False` lets torch return the k in any order; they come sorted here."""
    k, dim = int(arg(node, 1, "k")), int(arg(node, 2, "dim", -1))
    return _sorted_pair(imp, node, dim, k, bool(arg(node, 3, "largest", True)))
