"""ATen lowerings of constants: full and its kin, arange, iota."""

from __future__ import annotations

from typing import Any

import torch
import torch.fx
from xdsl.ir import SSAValue

from spyre_ir.dialects import spyre
from spyre_ir.lowering.aten_base import aten, lowers, meta_shape, prims, scalar_only
from spyre_ir.lowering.fx_importer import (
    Importer,
    meta_dtype,
    meta_type,
    tensor_type,
)

# ---------------------------------------------------------------- constants


def _fill_value(node: torch.fx.Node) -> Any:
    if node.target in (aten.zeros.default, aten.zeros_like.default):
        return 0
    if node.target in (aten.ones.default, aten.ones_like.default):
        return 1
    if node.target == aten.full_like.default:
        return node.args[1]
    if node.target == aten.scalar_tensor.default:
        return node.args[0]
    return node.args[1]


@lowers(
    aten.full.default, aten.zeros.default, aten.ones.default, aten.scalar_tensor.default,
    aten.full_like.default, aten.zeros_like.default, aten.ones_like.default,
    check=lambda n: scalar_only((1, "fill_value"))(n) if n.target in
    (aten.full.default, aten.full_like.default) else None,
)  # fmt: skip
def lower_full(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return imp.full(_fill_value(node), meta_shape(node), meta_dtype(node))


ARANGES = (aten.arange.start_step, aten.arange.default, aten.arange.start)


def fold_fractional_aranges(gm: torch.fx.GraphModule) -> int:
    """Replace each `torch.arange` of dynamo's graph with fractional bounds by a tensor
    constant of the graph (`_Constant`). torch's CPU kernel computes start + step * i at double
    (RangeFactoriesKernel.cpp; its vector body adds the steps to a rounded base), and so
    does Inductor's decomposition (torch._refs.arange: an f64 convert the card has no
    type for, a compile error or CPU before); no card op computes at double, so the
    values are torch.arange's own, computed here on the host. Returns how many."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    folded = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in (torch.arange, *ARANGES):
            continue
        if not _fractional(node) or any(isinstance(a, torch.fx.Node) for a in node.args):
            continue
        meta = node.meta.get("val", node.meta.get("example_value"))
        if not isinstance(meta, torch.Tensor) or meta.requires_grad:
            continue
        with unset_fake_temporarily():  # dynamo's fake mode may be active
            values = torch.arange(*node.args, dtype=meta.dtype)
        with gm.graph.inserting_before(node):
            constant = gm.graph.call_function(_Constant(values))
        constant.meta.update(node.meta)
        node.replace_all_uses_with(constant)
        gm.graph.erase_node(node)
        folded += 1
    if folded:
        gm.recompile()
    return folded


class _Constant:
    """A graph function returning one tensor: AOTAutograd traces it into a tensor
    constant of the graph (`_tensor_constant0`), which the backend passes as an input."""

    __name__ = "spyre_constant"

    def __init__(self, values: torch.Tensor) -> None:
        self.values, self.dtype = values.tolist(), values.dtype  # each exact in a double

    def __call__(self) -> torch.Tensor:
        return torch.tensor(self.values, dtype=self.dtype)


def _static_range(node: torch.fx.Node) -> str | None:
    if any(isinstance(a, torch.fx.Node) for a in node.args):
        return "arange with tensor or symbolic bounds is not supported"
    if _fractional(node):
        return "arange with fractional bounds is a constant (fold_fractional_aranges)"
    return None


def _fractional(node: torch.fx.Node) -> bool:
    return any(isinstance(a, float) and not a.is_integer() for a in node.args)


@lowers(*ARANGES, check=_static_range)
def lower_arange(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """Integer bounds (or floats equal to integers): spyre.iota."""
    args = [int(a) for a in node.args]
    start, step = (args + [1])[0:3:2] if len(args) >= 2 else (0, 1)
    if node.target == aten.arange.start_step and len(args) == 3:
        start, step = args[0], args[2]
    return _iota(imp, node, start, step)


@lowers(prims.iota.default)
def lower_iota(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return _iota(imp, node, int(node.kwargs["start"]), int(node.kwargs["step"]))


def _iota(imp: Importer, node: torch.fx.Node, start: int, step: int) -> SSAValue:
    dtype, out_shape = meta_dtype(node), meta_shape(node)
    if dtype.is_floating_point:
        ints = imp.emit(spyre.IotaOp(0, start, step, tensor_type(out_shape, torch.int64)))
        return imp.cast(ints, dtype)
    return imp.emit(spyre.IotaOp(0, start, step, meta_type(node)))
