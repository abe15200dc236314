"""`spyre-compute-in-f16`: retype an L1 graph's f32 tensors to f16.

The card computes in fp16 (with fp32 accumulation inside PE and SFP) and has no fp32
compute; fp32 tensors are converted (docs/spyre-hardware.md, "fp32 tensors are
converted"). The torch.compile backend therefore compiles an f32 graph as f16: this pass
retypes every f32 tensor - arguments, results, constants - to f16, and the runtime
converts the data at the transfer boundary. Casts to f32 (e.g. RMSNorm's statistics in
f32) become f16 -> f16 casts, which the interpreters run as copies. Other element types
(bf16, integers, i1) are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    FunctionType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from spyre_ir.dialects.spyre import (
    BinaryOp,
    CompareOp,
    ConstantOp,
    FullOp,
    element_of,
    is_float,
    shape_of,
)


def _f16(t: Attribute) -> Attribute:
    if isinstance(t, TensorType) and isinstance(t.element_type, Float32Type):
        return TensorType(Float16Type(), t.get_shape(), t.encoding)
    return t


def has_f32(module: ModuleOp) -> bool:
    """Whether any value of `module` is an f32 tensor."""
    for op in module.walk():
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        if any(_f16(v.type) is not v.type for v in values):
            return True
    return False


def takes_or_gives_f32(module: ModuleOp) -> bool:
    """Whether a function of `module` has an f32 tensor argument or result: the user's
    data is f32. (An f16 graph's own f32 intermediates, such as the statistics of a
    softmax decomposed in f32, are not the user's concern.)"""
    for op in module.walk():
        if isinstance(op, FuncOp):
            types = [*op.function_type.inputs.data, *op.function_type.outputs.data]
            if any(_f16(t) is not t for t in types):
                return True
    return False


def _opmath_scalar(op: Operation) -> bool:
    """A rank-0 f32 `spyre.full` used only by arithmetic on float tensors: the scalar
    keeps f32 (spyre.is_opmath_scalar) while the tensors become f16."""
    if not isinstance(op, FullOp) or shape_of(op.result) != () or not op.result.uses:
        return False
    if not isinstance(element_of(op.result), Float32Type):
        return False
    for use in op.result.uses:
        user = use.operation
        if not isinstance(user, BinaryOp) or isinstance(user, CompareOp):
            return False
        other = user.operands[1 - use.index]
        if shape_of(other) == () or not is_float(element_of(other)):
            return False
    return True


@dataclass(frozen=True)
class SpyreComputeInF16(ModulePass):
    """Every f32 tensor of the module becomes f16 (see the module docstring)."""

    name = "spyre-compute-in-f16"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in list(op.walk()):
            for region in inner.regions:
                for block in region.blocks:
                    for arg in list(block.args):
                        if _f16(arg.type) is not arg.type:
                            Rewriter.replace_value_with_new_type(arg, _f16(arg.type))
            if _opmath_scalar(inner):
                continue  # a Python scalar of f32 arithmetic stays f32 beside f16 tensors
            for result in list(inner.results):
                if _f16(result.type) is not result.type:
                    Rewriter.replace_value_with_new_type(result, _f16(result.type))
            if isinstance(inner, ConstantOp) and inner.value.type != inner.result.type:
                values = np.asarray(inner.value.get_values(), dtype=np.float16)
                inner.properties["value"] = DenseIntOrFPElementsAttr.from_list(
                    inner.result.type, values.astype(np.float64).tolist()
                )
            if isinstance(inner, FuncOp):
                ft = inner.function_type
                inner.properties["function_type"] = FunctionType.from_lists(
                    [_f16(t) for t in ft.inputs.data], [_f16(t) for t in ft.outputs.data]
                )
