"""The `spyre` dialect's elementwise ops: binary ops with torch broadcasting (arithmetic,
comparisons, logical and bitwise ops), select, unary ops, gelu, clamp and cast.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from spyre_ir import shape_rules
from spyre_ir.dialects.spyre_base import I1, SpyreOp, element_of, is_float, shape_of

# ---------------------------------------------------------------- elementwise binary


def is_opmath_scalar(scalar: SSAValue, other: SSAValue) -> bool:
    """Whether `scalar` is a rank-0 f32 operand beside a 16-bit float `other`: a Python
    scalar at torch's compute precision ("opmath": f32 for f16 and bf16). The op computes
    in f32 and rounds its result once, to the other operand's type."""
    return (
        shape_of(scalar) == ()
        and isinstance(element_of(scalar), Float32Type)
        and isinstance(element_of(other), (Float16Type, BFloat16Type))
    )


class BinaryOp(SpyreOp):
    """Elementwise with torch broadcasting; both operands of one element type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    # The result element type: None for "same as the operands".
    RESULT_ELEMENT: ClassVar[Attribute | None] = None
    FLOAT_ONLY: ClassVar[bool] = False
    BOOL_ONLY: ClassVar[bool] = False
    INTEGER_ONLY: ClassVar[bool] = False  # integers and i1 (bitwise ops)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_semantics(self) -> None:
        elt = element_of(self.lhs)
        if is_opmath_scalar(self.lhs, self.rhs):
            elt = element_of(self.rhs)
        elif not is_opmath_scalar(self.rhs, self.lhs):
            self.expect_element(self.rhs, elt, "rhs")
        if self.FLOAT_ONLY and not is_float(elt):
            raise VerifyException(f"'{self.name}' needs float operands, got {elt}")
        if self.BOOL_ONLY and elt != I1:
            raise VerifyException(f"'{self.name}' needs i1 operands, got {elt}")
        if self.INTEGER_ONLY and is_float(elt):
            raise VerifyException(f"'{self.name}' needs integer operands, got {elt}")
        self.expect_element(self.result, self.RESULT_ELEMENT or elt, "result")
        self.expect_shape(shape_rules.broadcast_shapes(shape_of(self.lhs), shape_of(self.rhs)))


class CompareOp(BinaryOp):
    RESULT_ELEMENT: ClassVar[Attribute | None] = I1


class LogicalBinaryOp(BinaryOp):
    BOOL_ONLY: ClassVar[bool] = True


def _define(name: str, base: type[SpyreOp], **flags: bool) -> type[SpyreOp]:
    """Define op `spyre.<name>` as a subclass of `base` with the given class flags."""
    body: dict[str, object] = {
        "name": f"spyre.{name}",
        "__annotations__": dict.fromkeys(flags, ClassVar[bool]),
        **flags,
    }
    return irdl_op_definition(type(name.title().replace("_", "") + "Op", (base,), body))


def _binary(name: str, base: type[BinaryOp] = BinaryOp, **flags: bool):
    return _define(name, base, **flags)


AddOp = _binary("add")
SubOp = _binary("sub")
MulOp = _binary("mul")
DivOp = _binary("div")
MaxOp = _binary("max")
MinOp = _binary("min")
PowOp = _binary("pow", FLOAT_ONLY=True)
EqOp = _binary("eq", CompareOp)
NeOp = _binary("ne", CompareOp)
LtOp = _binary("lt", CompareOp)
LeOp = _binary("le", CompareOp)
GtOp = _binary("gt", CompareOp)
GeOp = _binary("ge", CompareOp)
LogicalAndOp = _binary("logical_and", LogicalBinaryOp)
LogicalOrOp = _binary("logical_or", LogicalBinaryOp)
LogicalXorOp = _binary("logical_xor", LogicalBinaryOp)
# Bitwise ops of integers (two's complement, as torch); shifts by a negative or too
# large count are as torch's CPU kernels do them (see interp/tensor.py).
BitwiseAndOp = _binary("bitwise_and", INTEGER_ONLY=True)
BitwiseOrOp = _binary("bitwise_or", INTEGER_ONLY=True)
BitwiseXorOp = _binary("bitwise_xor", INTEGER_ONLY=True)
ShiftLeftOp = _binary("shift_left", INTEGER_ONLY=True)
ShiftRightOp = _binary("shift_right", INTEGER_ONLY=True)


@irdl_op_definition
class SelectOp(SpyreOp):
    """torch.where(cond, a, b) with broadcasting of all three."""

    name = "spyre.select"
    cond = operand_def(TensorType)
    true_value = operand_def(TensorType)
    false_value = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = (
        "$cond `,` $true_value `,` $false_value attr-dict `:` type($cond) `,` "
        "type($true_value) `,` type($false_value) `->` type($result)"
    )

    def __init__(self, cond: SSAValue, a: SSAValue, b: SSAValue, result_type: Attribute):
        super().__init__(operands=[cond, a, b], result_types=[result_type])

    def verify_semantics(self) -> None:
        self.expect_element(self.cond, I1, "condition")
        self.expect_element(self.false_value, element_of(self.true_value), "false value")
        self.expect_element(self.result, element_of(self.true_value), "result")
        self.expect_shape(
            shape_rules.broadcast_shapes(
                shape_of(self.cond), shape_of(self.true_value), shape_of(self.false_value)
            )
        )


# ---------------------------------------------------------------- elementwise unary


class UnaryOp(SpyreOp):
    """Elementwise on one tensor; the result has the input's shape and type."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    FLOAT_ONLY: ClassVar[bool] = False
    BOOL_ONLY: ClassVar[bool] = False
    INTEGER_ONLY: ClassVar[bool] = False

    def __init__(
        self,
        input: SSAValue,
        result_type: Attribute,
        properties: dict[str, Attribute] | None = None,
    ):
        super().__init__(operands=[input], result_types=[result_type], properties=properties or {})

    def verify_semantics(self) -> None:
        elt = element_of(self.input)
        if self.FLOAT_ONLY and not is_float(elt):
            raise VerifyException(f"'{self.name}' needs a float operand, got {elt}")
        if self.BOOL_ONLY and elt != I1:
            raise VerifyException(f"'{self.name}' needs an i1 operand, got {elt}")
        if self.INTEGER_ONLY and (is_float(elt) or elt == I1):
            raise VerifyException(f"'{self.name}' needs an integer operand, got {elt}")
        self.expect_element(self.result, elt, "result")
        self.expect_shape(shape_of(self.input))


def _unary(name: str, **flags: bool):
    return _define(name, UnaryOp, **flags)


NegOp = _unary("neg")
AbsOp = _unary("abs")
SignOp = _unary("sign")
ReluOp = _unary("relu")
ExpOp = _unary("exp", FLOAT_ONLY=True)
LogOp = _unary("log", FLOAT_ONLY=True)
SqrtOp = _unary("sqrt", FLOAT_ONLY=True)
RsqrtOp = _unary("rsqrt", FLOAT_ONLY=True)
ReciprocalOp = _unary("reciprocal", FLOAT_ONLY=True)
TanhOp = _unary("tanh", FLOAT_ONLY=True)
SigmoidOp = _unary("sigmoid", FLOAT_ONLY=True)
ErfOp = _unary("erf", FLOAT_ONLY=True)
Log1pOp = _unary("log1p", FLOAT_ONLY=True)
SiluOp = _unary("silu", FLOAT_ONLY=True)
SinOp = _unary("sin", FLOAT_ONLY=True)
CosOp = _unary("cos", FLOAT_ONLY=True)
FloorOp = _unary("floor", FLOAT_ONLY=True)
CeilOp = _unary("ceil", FLOAT_ONLY=True)
RoundOp = _unary("round", FLOAT_ONLY=True)  # to nearest, ties to even (torch.round)
BitwiseNotOp = _unary("bitwise_not", INTEGER_ONLY=True)  # ~x of integers; i1 has logical_not
LogicalNotOp = _unary("logical_not", BOOL_ONLY=True)


@irdl_op_definition
class GeluOp(UnaryOp):
    """GELU; `approximate = "tanh"` selects the tanh form, as in torch."""

    name = "spyre.gelu"
    approximate = opt_prop_def(StringAttr)
    FLOAT_ONLY: ClassVar[bool] = True

    def verify_semantics(self) -> None:
        super().verify_semantics()
        if self.approximate is not None and self.approximate_mode not in ("none", "tanh"):
            raise VerifyException(
                f'\'{self.name}\': approximate must be "none" or "tanh", got {self.approximate}'
            )

    @property
    def approximate_mode(self) -> str:
        return "none" if self.approximate is None else self.approximate.data


@irdl_op_definition
class ClampOp(UnaryOp):
    """Clamp to [min, max]; either bound may be absent."""

    name = "spyre.clamp"
    min = opt_prop_def(FloatAttr[Float64Type])
    max = opt_prop_def(FloatAttr[Float64Type])

    def verify_semantics(self) -> None:
        super().verify_semantics()
        if self.min is None and self.max is None:
            raise VerifyException(f"'{self.name}' needs a min or a max bound")
        if self.min is not None and self.max is not None:
            if self.min.value.data > self.max.value.data:
                raise VerifyException(f"'{self.name}': min is greater than max")


@irdl_op_definition
class CastOp(SpyreOp):
    """Element type conversion (torch's to(dtype)); the shape stays."""

    name = "spyre.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_semantics(self) -> None:
        self.expect_shape(shape_of(self.input))
