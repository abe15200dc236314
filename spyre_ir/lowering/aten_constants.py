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


def _integer_range(node: torch.fx.Node) -> str | None:
    bounds = [a for a in node.args if not isinstance(a, torch.fx.Node)]
    if any(isinstance(b, float) and b != int(b) for b in bounds):
        return "arange with fractional bounds is not supported"
    return None


@lowers(aten.arange.start_step, aten.arange.default, aten.arange.start, check=_integer_range)
def lower_arange(imp: Importer, node: torch.fx.Node) -> SSAValue:
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
