"""ATen lowerings of reductions (sum, mean, amax, amin, argmax, argmin, any, all, var,
var_mean), cumsum and softmax.
"""

from __future__ import annotations

import torch
import torch.fx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_base import arg, aten, lowers, meta_shape, rank_of
from spyre_ir.lowering.fx_importer import (
    Importer,
    LoweringFn,
    meta_dtype,
    meta_type,
    tensor_type,
)

# ---------------------------------------------------------------- reductions


def _dims(node: torch.fx.Node, index: int = 1, name: str = "dim") -> list[int]:
    """Reduction dims; None or [] means every dim, as in torch."""
    dims = arg(node, index, name)
    rank = rank_of(node)
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return list(range(max(rank, 1)))
    return [dims] if isinstance(dims, int) else list(dims)


def _reduce(imp: Importer, op_cls: type[spyre.ReductionOp], node: torch.fx.Node,
            x: SSAValue, dims: list[int], keepdim: bool, out: TensorType,
            properties: dict | None = None) -> SSAValue:  # fmt: skip
    if not shape(x):
        x = imp.reshape(x, (1,))
        dims = [0]
    return imp.emit(op_cls(x, dims, keepdim, out, properties))


def _reduction(op_cls: type[spyre.ReductionOp], dims_at: int = 1) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
        keepdim = bool(arg(node, dims_at + 1, "keepdim", False))
        return _reduce(imp, op_cls, node, x, _dims(node, dims_at), keepdim, meta_type(node))

    return lower


lowers(aten.sum.dim_IntList, aten.sum.default)(_reduction(spyre.SumOp))
lowers(aten.mean.dim, aten.mean.default)(_reduction(spyre.MeanOp))
lowers(aten.amax.default)(_reduction(spyre.ReduceMaxOp))
lowers(aten.amin.default)(_reduction(spyre.ReduceMinOp))


def _truth_reduction(op_cls: type[spyre.ReductionOp]) -> LoweringFn:
    """any/all: the max/min of the operand's truth values."""

    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.value(node.args[0])
        if not imp.is_bool(x):
            zero = imp.full(0, (), meta_dtype(node.args[0]))
            x = imp.emit(spyre.NeOp(x, imp.cast(zero, node.args[0].meta["val"].dtype),
                                    tensor_type(shape(x), torch.bool)))  # fmt: skip
        keepdim = bool(arg(node, 2, "keepdim", False))
        return _reduce(imp, op_cls, node, x, _dims(node), keepdim, meta_type(node))

    return lower


lowers(aten.any.dim, aten.any.dims, aten.any.default)(_truth_reduction(spyre.ReduceMaxOp))
lowers(aten.all.dim, aten.all.dims, aten.all.default)(_truth_reduction(spyre.ReduceMinOp))


def _arg_reduction(op_cls: type[spyre.ReductionOp]) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.value(node.args[0])
        keepdim = bool(arg(node, 2, "keepdim", False))
        if arg(node, 1, "dim") is None:
            # torch flattens first; keepdim then keeps every dim as 1.
            flat = imp.reshape(x, (shape_rules.numel(shape(x)),))
            picked = imp.emit(op_cls(flat, [0], False, tensor_type((), torch.int64)))
            return imp.reshape(picked, meta_shape(node))
        return _reduce(imp, op_cls, node, x, _dims(node), keepdim, meta_type(node))

    return lower


lowers(aten.argmax.default)(_arg_reduction(spyre.ArgmaxOp))
lowers(aten.argmin.default)(_arg_reduction(spyre.ArgminOp))


def _value_and_index(value_cls: type, index_cls: type) -> LoweringFn:
    def lower(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
        x = imp.value(node.args[0])
        dims, keepdim = _dims(node), bool(arg(node, 2, "keepdim", False))
        values, indices = node.meta["val"]
        return (
            _reduce(imp, value_cls, node, x, dims, keepdim,
                    tensor_type(values.shape, values.dtype)),
            _reduce(imp, index_cls, node, x, dims, keepdim,
                    tensor_type(indices.shape, indices.dtype)),
        )  # fmt: skip

    return lower


lowers(aten.max.dim)(_value_and_index(spyre.ReduceMaxOp, spyre.ArgmaxOp))
lowers(aten.min.dim)(_value_and_index(spyre.ReduceMinOp, spyre.ArgminOp))


def _reduce_all(op_cls: type[spyre.ReductionOp]) -> LoweringFn:
    """max()/min() without a dim: the extreme over every dim, a rank-0 result."""

    def lower(imp: Importer, node: torch.fx.Node) -> SSAValue:
        x = imp.value(node.args[0])
        return _reduce(imp, op_cls, node, x, list(range(max(len(shape(x)), 1))),
                       False, meta_type(node))  # fmt: skip

    return lower


lowers(aten.max.default)(_reduce_all(spyre.ReduceMaxOp))
lowers(aten.min.default)(_reduce_all(spyre.ReduceMinOp))


def _variance(imp: Importer, node: torch.fx.Node, out_meta: torch.Tensor) -> SSAValue:
    from xdsl.dialects.builtin import IntegerAttr, i64

    x = imp.value(node.args[0])
    correction = node.kwargs.get("correction")
    correction = 1 if correction is None else correction
    if correction != int(correction):
        raise AssertionError("fractional correction is filtered by the check")
    props = {"correction": IntegerAttr(int(correction), i64)}
    keepdim = bool(node.kwargs.get("keepdim", False))
    out = tensor_type(out_meta.shape, out_meta.dtype)
    return _reduce(imp, spyre.VarOp, node, x, _dims(node), keepdim, out, props)


def _integral_correction(node: torch.fx.Node) -> str | None:
    c = node.kwargs.get("correction")
    return None if c is None or c == int(c) else "fractional var correction is not supported"


@lowers(aten.var.correction, check=_integral_correction)
def lower_var(imp: Importer, node: torch.fx.Node) -> SSAValue:
    return _variance(imp, node, node.meta["val"])


@lowers(aten.var_mean.correction, check=_integral_correction)
def lower_var_mean(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    var_meta, mean_meta = node.meta["val"]
    x = imp.value(node.args[0])
    keepdim = bool(node.kwargs.get("keepdim", False))
    mean = _reduce(imp, spyre.MeanOp, node, x, _dims(node), keepdim,
                   tensor_type(mean_meta.shape, mean_meta.dtype))  # fmt: skip
    return _variance(imp, node, var_meta), mean


@lowers(aten.cumsum.default)
def lower_cumsum(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
    return imp.emit(spyre.CumsumOp(x, node.args[1], meta_type(node)))


@lowers(aten._softmax.default, aten.softmax.int)
def lower_softmax(imp: Importer, node: torch.fx.Node) -> SSAValue:
    x = imp.as_tensor(imp.value(node.args[0]), meta_dtype(node))
    return imp.emit(spyre.SoftmaxOp(x, node.args[1], meta_type(node)))
