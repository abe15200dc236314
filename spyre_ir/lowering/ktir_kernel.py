"""A KTIR kernel's outside, for the KTIR -> dataflow lowering (ktir_to_dataflow) and
spyre-run: the kernels of a module, their grid, their scalar arguments (the `scalars`
option, "K=2048,eps=1e-5") and the L2 tensor type of each pointer."""

from __future__ import annotations

import math

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerType,
    ModuleOp,
    TensorType,
)

from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.dialects.stick_layout import StickLayoutAttr
from spyre_ir.layout import default_layout
from spyre_ir.lowering.ktir_values import Index, LoweringError, Pointer, Scalar

_INDEX_OPS = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b, "arith.divui": lambda a, b: a // b,
    "arith.divsi": lambda a, b: int(a / b), "arith.floordivsi": lambda a, b: a // b,
    "arith.ceildivsi": lambda a, b: -(-a // b), "arith.ceildivui": lambda a, b: -(-a // b),
    "arith.remui": lambda a, b: a % b, "arith.remsi": lambda a, b: int(math.fmod(a, b)),
    "arith.minsi": min, "arith.maxsi": max, "arith.minui": min, "arith.maxui": max,
    "arith.index_cast": lambda a: a, "arith.index_castui": lambda a: a,
}  # fmt: skip


def parse_scalars(text: str) -> dict[str, float]:
    """`"K=2048,eps=1e-5"` -> {"K": 2048.0, "eps": 1e-05}; ValueError when malformed."""
    values: dict[str, float] = {}
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"expected NAME=VALUE, got '{item}'")
        key = name.strip().lstrip("%")
        if key in values:
            raise ValueError(f"{key} is given twice")
        try:
            values[key] = float(value)
        except ValueError:
            raise ValueError(f"value of {name.strip()} is not a number: '{value}'") from None
    return values


def ktir_kernels(module: ModuleOp) -> list[func.FuncOp]:
    """The KTIR kernels of a module: functions whose bodies use `ktdp` ops."""
    return [
        op
        for op in module.ops
        if isinstance(op, func.FuncOp)
        and op.body.blocks
        and any(o.name.startswith("ktdp.") for o in op.walk())
    ]


def tensor_type(p: Pointer) -> TensorType:
    shape = (*p.shape, 1) if p.padded else p.shape
    layout = default_layout(shape, element_type_name(p.element))
    return TensorType(p.element, shape, StickLayoutAttr.from_layout(layout))


def scalar_value(fn: func.FuncOp, k: int, scalars: dict[str, float]) -> Index | Scalar:
    arg = fn.body.block.args[k]
    name = arg.name_hint or f"arg{k}"
    if not isinstance(arg.type, IndexType | IntegerType | AnyFloat):
        raise LoweringError(
            f"kernel argument %{name} is {arg.type}: KTIR kernels take pointers as index values",
            fn,
        )
    if name not in scalars:
        raise LoweringError(
            f"kernel @{fn.sym_name.data} needs a value for its scalar argument %{name} "
            f'({arg.type}): give scalars="{name}=VALUE" (spyre-run: --scalars {name}=VALUE)',
            fn,
        )
    value = scalars[name]
    if isinstance(arg.type, IndexType | IntegerType):
        if not math.isfinite(value) or value != int(value):
            raise LoweringError(f"scalar %{name} is {arg.type} but {value} is not an integer", fn)
        return Index(None, int(value))
    return Scalar(value, arg.type)
