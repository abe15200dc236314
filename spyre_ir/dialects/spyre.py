"""The `spyre` dialect (level L1): value-semantics tensor ops with torch semantics.

Operands and results are builtin ranked tensors with static shapes. A tensor may carry
its device stick layout as the type's encoding (`tensor<4x64xf16, #spyre.stick<...>>`).
Binary ops broadcast as torch does and take only their operands, so the generic form
`"spyre.add"(%a, %b) : (...) -> ...` is valid IR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, BlockArgument, Dialect, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException

from spyre_ir import shape_rules
from spyre_ir.dialects.stick_layout import StickLayoutAttr, verify_tensor_layout

ELEMENT_TYPE_NAMES = ("f16", "bf16", "f32", "i1", "i32", "i64")


def element_type_name(t: Attribute) -> str:
    """The short name of a tensor element type, e.g. 'f16' or 'i1'."""
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, BFloat16Type):
        return "bf16"
    if isinstance(t, Float32Type):
        return "f32"
    if (
        isinstance(t, IntegerType)
        and t.signedness.data == Signedness.SIGNLESS
        and t.width.data in (1, 32, 64)
    ):
        return f"i{t.width.data}"
    return str(t)


def is_float(t: Attribute) -> bool:
    return isinstance(t, AnyFloat)


def shape_of(value: SSAValue | Attribute) -> tuple[int, ...]:
    t = value.type if isinstance(value, SSAValue) else value
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


def element_of(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


def ints(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


class SpyreCanonicalization(HasCanonicalizationPatternsTrait):
    """Points each op at its patterns; imported lazily so start-up stays fast."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        from spyre_ir.passes.spyre_canonicalization import PATTERNS

        return PATTERNS


class SpyreOp(IRDLOperation):
    """Shared checks: static tensors, supported element types, valid stick layouts.

    Subclasses add their own rule in `verify_semantics`.
    """

    traits = traits_def(Pure(), SpyreCanonicalization())

    def verify_(self) -> None:
        for value in (*self.operands, *self.results):
            t = value.type
            if not isinstance(t, TensorType):
                raise VerifyException(f"'{self.name}' takes tensors, got {t}")
            if any(d < 0 for d in t.get_shape()):
                raise VerifyException(f"'{self.name}' needs static shapes, got {t}")
            if element_type_name(t.element_type) not in ELEMENT_TYPE_NAMES:
                raise VerifyException(
                    f"'{self.name}': element type {t.element_type} is not one of "
                    f"{', '.join(ELEMENT_TYPE_NAMES)}"
                )
            try:
                verify_tensor_layout(t)
            except VerifyException as e:
                raise VerifyException(f"'{self.name}': {e}") from None
        try:
            self.verify_semantics()
        except shape_rules.ShapeError as e:
            raise VerifyException(f"'{self.name}': {e}") from None

    def verify_semantics(self) -> None: ...

    def expect_shape(self, expected: Sequence[int]) -> None:
        got = shape_of(self.results[0])
        if got != tuple(expected):
            raise VerifyException(
                f"'{self.name}': result shape {list(got)} should be {list(expected)}"
            )

    def expect_element(self, value: SSAValue, expected: Attribute, what: str) -> None:
        if element_of(value) != expected:
            raise VerifyException(
                f"'{self.name}': {what} element type {element_of(value)} should be {expected}"
            )


I1 = IntegerType(1)
I64_T = IntegerType(64)

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


# ---------------------------------------------------------------- matmul


@irdl_op_definition
class MatmulOp(SpyreOp):
    """torch.matmul: batch dims broadcast, 1-D operands promoted then squeezed."""

    name = "spyre.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])

    def verify_semantics(self) -> None:
        elt = element_of(self.lhs)
        self.expect_element(self.rhs, elt, "rhs")
        self.expect_element(self.result, elt, "result")
        self.expect_shape(shape_rules.matmul_shape(shape_of(self.lhs), shape_of(self.rhs)))


# ---------------------------------------------------------------- reductions


class ReductionOp(SpyreOp):
    """Reduce over `dims` (negative counts from the end), keeping them as size 1
    with `keepdim`."""

    input = operand_def(TensorType)
    dims = prop_def(DenseArrayBase[I64])
    keepdim = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    assembly_format = (
        "$input `dims` `=` $dims (`keepdim` $keepdim^)? attr-dict `:` type($input) "
        "`->` type($result)"
    )
    irdl_options = (ParsePropInAttrDict(),)

    INDEX_RESULT: ClassVar[bool] = False
    FLOAT_ONLY: ClassVar[bool] = False

    def __init__(
        self,
        input: SSAValue,
        dims: Sequence[int],
        keepdim: bool,
        result_type: Attribute,
        properties: dict[str, Attribute] | None = None,
    ):
        props: dict[str, Attribute] = {"dims": DenseArrayBase.from_list(I64_T, dims)}
        if keepdim:
            props["keepdim"] = UnitAttr()
        super().__init__(
            operands=[input], result_types=[result_type], properties=props | (properties or {})
        )

    @property
    def reduced_dims(self) -> tuple[int, ...]:
        return shape_rules.normalize_dims(ints(self.dims), len(shape_of(self.input)))

    def verify_semantics(self) -> None:
        elt = element_of(self.input)
        if self.FLOAT_ONLY and not is_float(elt):
            raise VerifyException(f"'{self.name}' needs a float operand, got {elt}")
        if not ints(self.dims):
            raise VerifyException(f"'{self.name}' needs at least one dim")
        self.expect_element(self.result, I64_T if self.INDEX_RESULT else elt, "result")
        self.expect_shape(
            shape_rules.reduce_shape(
                shape_of(self.input), ints(self.dims), self.keepdim is not None
            )
        )


def _reduction(name: str, **flags: bool):
    return _define(name, ReductionOp, **flags)


SumOp = _reduction("sum")
MeanOp = _reduction("mean", FLOAT_ONLY=True)
ReduceMaxOp = _reduction("reduce_max")
ReduceMinOp = _reduction("reduce_min")
ArgmaxOp = _reduction("argmax", INDEX_RESULT=True)
ArgminOp = _reduction("argmin", INDEX_RESULT=True)


@irdl_op_definition
class VarOp(ReductionOp):
    """Variance with Bessel-style `correction` (torch.var's argument, default 1)."""

    name = "spyre.var"
    correction = opt_prop_def(IntegerAttr[I64])
    FLOAT_ONLY: ClassVar[bool] = True

    @property
    def correction_value(self) -> int:
        return 1 if self.correction is None else self.correction.value.data


class AlongDimOp(SpyreOp):
    """An op along one dim of its input whose result has the input's shape and type."""

    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    assembly_format = "$input `dim` `=` $dim attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, dim: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, I64_T)},
        )

    def verify_semantics(self) -> None:
        self.expect_element(self.result, element_of(self.input), "result")
        shape_rules.normalize_dims([self.dim.value.data], len(shape_of(self.input)))
        self.expect_shape(shape_of(self.input))


@irdl_op_definition
class CumsumOp(AlongDimOp):
    """Inclusive prefix sum along `dim` (torch.cumsum)."""

    name = "spyre.cumsum"

    def verify_semantics(self) -> None:
        if element_of(self.input) == I1:
            raise VerifyException(f"'{self.name}' needs a numeric operand; cast i1 first")
        super().verify_semantics()


# ---------------------------------------------------------------- sorting (issue 19)


class SortingOp(SpyreOp):
    """The first `k` of `input` sorted along `dim` (descending with `descending`; NaN
    counts as the largest value, as in torch): `spyre.sort` gives the values,
    `spyre.argsort` their positions along `dim` (i64). The order is stable, equal values
    in index order. `k` absent keeps them all (a sort); with it, a topk."""

    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    k = opt_prop_def(IntegerAttr[I64])
    descending = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input `dim` `=` $dim (`k` `=` $k^)? (`descending` $descending^)? attr-dict `:` "
        "type($input) `->` type($result)"
    )

    INDEX_RESULT: ClassVar[bool] = False

    def __init__(self, input: SSAValue, dim: int, k: int | None, descending: bool,
                 result_type: Attribute):  # fmt: skip
        props: dict[str, Attribute] = {"dim": IntegerAttr(dim, I64_T)}
        if k is not None:
            props["k"] = IntegerAttr(k, I64_T)
        if descending:
            props["descending"] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    @property
    def axis(self) -> int:
        return self.dim.value.data % max(len(shape_of(self.input)), 1)

    @property
    def kept(self) -> int:
        """How many of the sorted elements the result keeps along `dim`."""
        return shape_of(self.input)[self.axis] if self.k is None else self.k.value.data

    def verify_semantics(self) -> None:
        src = shape_of(self.input)
        if not src:
            raise VerifyException(f"'{self.name}' needs a tensor of rank 1 or more")
        (axis,) = shape_rules.normalize_dims([self.dim.value.data], len(src))
        if not 0 <= self.kept <= src[axis]:
            raise VerifyException(
                f"'{self.name}': k = {self.kept} is out of range for a dim of {src[axis]}"
            )
        elt = element_of(self.input)
        self.expect_element(self.result, I64_T if self.INDEX_RESULT else elt, "result")
        self.expect_shape(tuple(self.kept if d == axis else n for d, n in enumerate(src)))


@irdl_op_definition
class SortOp(SortingOp):
    name = "spyre.sort"


@irdl_op_definition
class ArgsortOp(SortingOp):
    name = "spyre.argsort"
    INDEX_RESULT: ClassVar[bool] = True


SORTING_OPS: tuple[type[Operation], ...] = (SortOp, ArgsortOp)


# ---------------------------------------------------------------- shape ops


@irdl_op_definition
class ReshapeOp(SpyreOp):
    name = "spyre.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_semantics(self) -> None:
        self.expect_element(self.result, element_of(self.input), "result")
        src, dst = shape_of(self.input), shape_of(self.result)
        if shape_rules.numel(src) != shape_rules.numel(dst):
            raise VerifyException(
                f"'{self.name}': cannot reshape {list(src)} ({shape_rules.numel(src)} "
                f"elements) to {list(dst)} ({shape_rules.numel(dst)} elements)"
            )


@irdl_op_definition
class TransposeOp(SpyreOp):
    """Any permutation of the dims: result dim i is input dim perm[i]."""

    name = "spyre.transpose"
    input = operand_def(TensorType)
    perm = prop_def(DenseArrayBase[I64])
    result = result_def(TensorType)
    assembly_format = "$input `perm` `=` $perm attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, perm: Sequence[int], result_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"perm": DenseArrayBase.from_list(I64_T, perm)},
        )

    def verify_semantics(self) -> None:
        self.expect_element(self.result, element_of(self.input), "result")
        self.expect_shape(shape_rules.transpose_shape(shape_of(self.input), ints(self.perm)))


@irdl_op_definition
class BroadcastToOp(SpyreOp):
    """torch.expand: right-aligned, size-1 dims stretched, new dims on the left."""

    name = "spyre.broadcast_to"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_semantics(self) -> None:
        self.expect_element(self.result, element_of(self.input), "result")
        src, dst = shape_of(self.input), shape_of(self.result)
        if not shape_rules.can_broadcast_to(src, dst):
            raise VerifyException(f"'{self.name}': {list(src)} cannot broadcast to {list(dst)}")


@irdl_op_definition
class SliceOp(SpyreOp):
    """input[starts:stops:steps] per dim, positive steps, bounds inside the dim."""

    name = "spyre.slice"
    input = operand_def(TensorType)
    starts = prop_def(DenseArrayBase[I64])
    stops = prop_def(DenseArrayBase[I64])
    steps = prop_def(DenseArrayBase[I64])
    result = result_def(TensorType)
    assembly_format = (
        "$input `starts` `=` $starts `stops` `=` $stops `steps` `=` $steps attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        starts: Sequence[int],
        stops: Sequence[int],
        steps: Sequence[int],
        result_type: Attribute,
    ):
        arr = lambda v: DenseArrayBase.from_list(I64_T, v)  # noqa: E731
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"starts": arr(starts), "stops": arr(stops), "steps": arr(steps)},
        )

    def verify_semantics(self) -> None:
        self.expect_element(self.result, element_of(self.input), "result")
        self.expect_shape(
            shape_rules.slice_shape(
                shape_of(self.input), ints(self.starts), ints(self.stops), ints(self.steps)
            )
        )


@irdl_op_definition
class ConcatOp(SpyreOp):
    name = "spyre.concat"
    inputs = var_operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    assembly_format = "$inputs `dim` `=` $dim attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: Attribute):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, I64_T)},
        )

    def verify_semantics(self) -> None:
        if not self.inputs:
            raise VerifyException(f"'{self.name}' needs at least one input")
        for value in self.inputs:
            self.expect_element(value, element_of(self.inputs[0]), "input")
        self.expect_element(self.result, element_of(self.inputs[0]), "result")
        self.expect_shape(
            shape_rules.concat_shape([shape_of(v) for v in self.inputs], self.dim.value.data)
        )


@irdl_op_definition
class PadOp(SpyreOp):
    """Constant padding: `low[i]` elements before and `high[i]` after dim i."""

    name = "spyre.pad"
    input = operand_def(TensorType)
    low = prop_def(DenseArrayBase[I64])
    high = prop_def(DenseArrayBase[I64])
    value = prop_def(FloatAttr[Float64Type])
    result = result_def(TensorType)
    assembly_format = (
        "$input `low` `=` $low `high` `=` $high `value` `=` $value attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        low: Sequence[int],
        high: Sequence[int],
        value: float,
        result_type: Attribute,
    ):
        arr = lambda v: DenseArrayBase.from_list(I64_T, v)  # noqa: E731
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"low": arr(low), "high": arr(high), "value": FloatAttr(value, 64)},
        )

    def verify_semantics(self) -> None:
        self.expect_element(self.result, element_of(self.input), "result")
        self.expect_shape(
            shape_rules.pad_shape(shape_of(self.input), ints(self.low), ints(self.high))
        )


@irdl_op_definition
class RestickifyOp(SpyreOp):
    """A layout change: the same tensor (shape, element type, values) moved into the
    stick layout its result type carries. Numerically the identity; on the device it
    is the data movement `spyre-stickify` inserts where an op needs another layout.

    The result must carry a `#spyre.stick` encoding. The input may carry none: that is
    the result of a `spyre.reshape` that is no view of its source (see
    spyre_ir/passes/stickify.py), whose elements only this op puts in place.
    Not an elementwise op (no `UnaryOp`): it moves bytes, it computes nothing.
    """

    name = "spyre.restickify"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_semantics(self) -> None:
        self.expect_element(self.result, element_of(self.input), "result")
        self.expect_shape(shape_of(self.input))
        result_type = self.result.type
        assert isinstance(result_type, TensorType)
        if not isinstance(result_type.encoding, StickLayoutAttr):
            raise VerifyException(
                f"'{self.name}': result type {result_type} carries no #spyre.stick layout"
            )


@irdl_op_definition
class GatherOp(SpyreOp):
    """Rows of `table` picked by integer `indices` (an embedding lookup)."""

    name = "spyre.gather"
    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    assembly_format = (
        "$table `[` $indices `]` attr-dict `:` type($table) `,` type($indices) `->` type($result)"
    )

    def __init__(self, table: SSAValue, indices: SSAValue, result_type: Attribute):
        super().__init__(operands=[table, indices], result_types=[result_type])

    def verify_semantics(self) -> None:
        idx = element_of(self.indices)
        if not (isinstance(idx, IntegerType) and idx.width.data in (32, 64)):
            raise VerifyException(f"'{self.name}': indices must be i32 or i64, got {idx}")
        self.expect_element(self.result, element_of(self.table), "result")
        self.expect_shape(shape_rules.gather_shape(shape_of(self.table), shape_of(self.indices)))


@irdl_op_definition
class ScatterOp(SpyreOp):
    """`dest` with the slices at positions `indices` along `dim` replaced by `source`'s
    (torch.index_copy; `cache[:, :, pos] = k`): result[.., indices[j], ..] =
    source[.., j, ..]. The indices are runtime data (1-D, i32/i64; negative ones count
    from the end); a position given twice gets one of its slices, as in torch.

    `in_place` (set by spyre-lower-scatter): the result *is* `dest`'s buffer, tied as
    a program's result is (`DeviceProgramBase.tied`): only the source's slices are
    stored, at the runtime positions, and the ops that read the result read `dest`'s
    buffer. `dest` is then a function argument whose only reader is this op."""

    name = "spyre.scatter"
    dest = operand_def(TensorType)
    indices = operand_def(TensorType)
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    in_place = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$dest `[` $indices `]` `,` $source `dim` `=` $dim attr-dict `:` type($dest) `,` "
        "type($indices) `,` type($source) `->` type($result)"
    )

    def __init__(self, dest: SSAValue, indices: SSAValue, source: SSAValue, dim: int,
                 result_type: Attribute):  # fmt: skip
        super().__init__(operands=[dest, indices, source], result_types=[result_type],
                         properties={"dim": IntegerAttr(dim, I64_T)})  # fmt: skip

    @property
    def axis(self) -> int:
        return self.dim.value.data % len(shape_of(self.dest))

    def verify_semantics(self) -> None:
        self.verify_scatter()
        if self.in_place is not None:
            self._verify_in_place()

    def verify_scatter(self) -> None:
        idx = element_of(self.indices)
        if not (isinstance(idx, IntegerType) and idx.width.data in (32, 64)):
            raise VerifyException(f"'{self.name}': indices must be i32 or i64, got {idx}")
        if len(shape_of(self.indices)) != 1:
            raise VerifyException(f"'{self.name}': indices must be 1-D")
        dest, source = shape_of(self.dest), shape_of(self.source)
        (dim,) = shape_rules.normalize_dims([self.dim.value.data], len(dest))
        want = tuple(shape_of(self.indices)[0] if d == dim else n for d, n in enumerate(dest))
        if tuple(source) != want:
            raise VerifyException(
                f"'{self.name}': source should be {list(want)} (dest with dim {dim} of "
                f"the index length), got {list(source)}"
            )
        self.expect_element(self.source, element_of(self.dest), "source")
        self.expect_element(self.result, element_of(self.dest), "result")
        self.expect_shape(dest)

    def _verify_in_place(self) -> None:
        """The tied result's rules: dest's type exactly, dest a function argument (an
        input buffer) that nothing else reads (its old value is overwritten)."""
        if self.result.type != self.dest.type:
            raise VerifyException(f"'{self.name}': an in-place result has dest's type "
                                  f"{self.dest.type}, not {self.result.type}")  # fmt: skip
        owner = self.dest.owner.parent_op() if isinstance(self.dest, BlockArgument) else None
        if owner is None or owner.name != "func.func":
            raise VerifyException(f"'{self.name}': in place into a function argument only")
        others = [u.operation.name for u in self.dest.uses if u.operation is not self]
        if others:
            raise VerifyException(
                f"'{self.name}': in place into an argument that {others[0]} also reads"
            )


@irdl_op_definition
class ScatterAddOp(SpyreOp):
    """`dest` with `source`'s slices added at positions `indices` along `dim`
    (torch.index_add; scatter_add and index_put(accumulate=True) flattened to one dim):
    result[.., indices[j], ..] = dest[.., indices[j], ..] + the sum of every
    source[.., j, ..] written there. Operands and verification as `spyre.scatter`'s; a
    position given twice gets the sum of its slices (issue 19: MoE routing)."""

    name = "spyre.scatter_add"
    dest = operand_def(TensorType)
    indices = operand_def(TensorType)
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = ScatterOp.assembly_format

    def __init__(self, dest: SSAValue, indices: SSAValue, source: SSAValue, dim: int,
                 result_type: Attribute):  # fmt: skip
        super().__init__(operands=[dest, indices, source], result_types=[result_type],
                         properties={"dim": IntegerAttr(dim, I64_T)})  # fmt: skip

    axis = ScatterOp.axis
    verify_semantics = ScatterOp.verify_scatter


# ---------------------------------------------------------------- constants


@irdl_op_definition
class FullOp(SpyreOp):
    """A tensor with every element `value` (torch.full; splat)."""

    name = "spyre.full"
    value = prop_def(FloatAttr[Float64Type] | IntegerAttr[I64])
    result = result_def(TensorType)
    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, value: float | int | bool, result_type: Attribute):
        attr = (
            IntegerAttr(int(value), I64_T)
            if isinstance(value, (bool, int))
            else FloatAttr(float(value), 64)
        )
        super().__init__(result_types=[result_type], properties={"value": attr})

    @property
    def scalar(self) -> float | int:
        return self.value.value.data

    def verify_semantics(self) -> None:
        elt = element_of(self.result)
        v = self.scalar
        if isinstance(self.value, IntegerAttr):
            if elt == I1 and v not in (0, 1):
                raise VerifyException(f"'{self.name}': {v} is not a boolean value")
            return
        if not is_float(elt) and (not math.isfinite(v) or float(v) != int(v)):
            raise VerifyException(f"'{self.name}': {v} is not an integer value for {elt}")


@irdl_op_definition
class ConstantOp(SpyreOp):
    """A dense tensor constant: `spyre.constant dense<[1.0, 2.0]> : tensor<2xf32>`."""

    name = "spyre.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)

    def __init__(self, value: DenseIntOrFPElementsAttr):
        super().__init__(result_types=[value.type], properties={"value": value})

    def verify_semantics(self) -> None:
        if self.value.type != self.result.type:
            raise VerifyException(
                f"'{self.name}': value type {self.value.type} differs from result type "
                f"{self.result.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("expected a dense elements attribute", pos, parser.pos)
        return cls(value)


@irdl_op_definition
class IotaOp(SpyreOp):
    """start + step * index along `dim` (torch.arange when rank 1)."""

    name = "spyre.iota"
    dim = prop_def(IntegerAttr[I64])
    start = prop_def(IntegerAttr[I64])
    step = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)
    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, dim: int, start: int, step: int, result_type: Attribute):
        super().__init__(
            result_types=[result_type],
            properties={
                "dim": IntegerAttr(dim, I64_T),
                "start": IntegerAttr(start, I64_T),
                "step": IntegerAttr(step, I64_T),
            },
        )

    def verify_semantics(self) -> None:
        shape_rules.normalize_dims([self.dim.value.data], len(shape_of(self.result)))
        if self.step.value.data == 0:
            raise VerifyException(f"'{self.name}': step must not be zero")


# ---------------------------------------------------------------- composites


@irdl_op_definition
class SoftmaxOp(AlongDimOp):
    """softmax along `dim`; `spyre-decompose` rewrites it into primitives."""

    name = "spyre.softmax"

    def verify_semantics(self) -> None:
        if not is_float(element_of(self.input)):
            raise VerifyException(f"'{self.name}' needs a float operand")
        super().verify_semantics()


class NormOp(SpyreOp):
    """Normalisation over the last `normalized_ndim` dims with optional affine
    operands shaped like those dims."""

    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    result = result_def(TensorType)
    eps = prop_def(FloatAttr[Float64Type])

    def verify_semantics(self) -> None:
        elt = element_of(self.input)
        if not is_float(elt):
            raise VerifyException(f"'{self.name}' needs a float operand")
        self.expect_element(self.result, elt, "result")
        self.expect_shape(shape_of(self.input))
        ndim = self.axes_count
        shape = shape_of(self.input)
        if not 1 <= ndim <= len(shape):
            raise VerifyException(f"'{self.name}': cannot normalise {ndim} dims of {list(shape)}")
        for name in ("weight", "bias"):
            value = getattr(self, name, None)
            if value is None:
                continue
            self.expect_element(value, elt, name)
            if shape_of(value) != shape[-ndim:]:
                raise VerifyException(
                    f"'{self.name}': {name} shape {list(shape_of(value))} should be "
                    f"{list(shape[-ndim:])}"
                )

    @property
    def axes_count(self) -> int:
        """How many trailing dims are normalised."""
        return 1


@irdl_op_definition
class LayerNormOp(NormOp):
    name = "spyre.layer_norm"
    # Re-declared so the operand order is (input, weight, bias): xDSL lists a subclass's
    # own fields before the inherited ones.
    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    normalized_ndim = opt_prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$input (`weight` `(` $weight^ `:` type($weight) `)`)? "
        "(`bias` `(` $bias^ `:` type($bias) `)`)? attr-dict `:` type($input) `->` "
        "type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue | None,
        bias: SSAValue | None,
        eps: float,
        normalized_ndim: int,
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input, weight, bias],
            result_types=[result_type],
            properties={
                "eps": FloatAttr(eps, 64),
                "normalized_ndim": IntegerAttr(normalized_ndim, I64_T),
            },
        )

    @property
    def axes_count(self) -> int:
        return 1 if self.normalized_ndim is None else self.normalized_ndim.value.data


@irdl_op_definition
class RmsNormOp(NormOp):
    """x * rsqrt(mean(x^2, last dim) + eps) * weight."""

    name = "spyre.rms_norm"
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$input (`weight` `(` $weight^ `:` type($weight) `)`)? attr-dict `:` "
        "type($input) `->` type($result)"
    )

    def __init__(
        self, input: SSAValue, weight: SSAValue | None, eps: float, result_type: Attribute
    ):
        super().__init__(
            operands=[input, weight],
            result_types=[result_type],
            properties={"eps": FloatAttr(eps, 64)},
        )


@irdl_op_definition
class AttentionOp(SpyreOp):
    """softmax(scale * q k^T + mask) v per head, as one op (what `spyre-fuse-attention`
    makes of the decomposed pattern). q [b, h, s, d], k [b, kvh, t, d], v [b, kvh, t, e]
    with h a multiple of kvh: query head i reads key/value head i // (h / kvh) (grouped-
    query attention, nothing repeated). `mask`, broadcasting to [b, h, s, t], is added
    (float) or keeps where true (i1); `causal_offset` c keeps key j of query i only when
    j <= i + c. Scores, softmax statistics and the sum over keys are f32; a row with
    every key masked is NaN, as softmax gives, or 0 with `zero_masked_rows`."""

    name = "spyre.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    scale = prop_def(FloatAttr[Float64Type])
    causal_offset = opt_prop_def(IntegerAttr[I64])
    zero_masked_rows = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$q `,` $k `,` $v (`mask` `(` $mask^ `:` type($mask) `)`)? `scale` `=` $scale "
        "attr-dict `:` type($q) `,` type($k) `,` type($v) `->` type($result)"
    )

    def __init__(self, q: SSAValue, k: SSAValue, v: SSAValue, mask: SSAValue | None,
                 scale: float, result_type: Attribute, causal_offset: int | None = None,
                 zero_masked_rows: bool = False):  # fmt: skip
        props: dict[str, Attribute] = {"scale": FloatAttr(scale, Float64Type())}
        if causal_offset is not None:
            props["causal_offset"] = IntegerAttr(causal_offset, I64_T)
        if zero_masked_rows:
            props["zero_masked_rows"] = UnitAttr()
        super().__init__(operands=[q, k, v, mask], result_types=[result_type],
                         properties=props)  # fmt: skip

    @property
    def group_size(self) -> int:
        """Query heads per key/value head."""
        return shape_of(self.q)[1] // shape_of(self.k)[1]

    def verify_semantics(self) -> None:
        q, k, v = shape_of(self.q), shape_of(self.k), shape_of(self.v)
        if not len(q) == len(k) == len(v) == 4:
            raise VerifyException(f"'{self.name}' takes rank-4 q, k and v [b, heads, seq, d]")
        elt = element_of(self.q)
        if not is_float(elt):
            raise VerifyException(f"'{self.name}' needs float operands")
        self.expect_element(self.k, elt, "k")
        self.expect_element(self.v, elt, "v")
        if not is_float(element_of(self.result)):
            raise VerifyException(f"'{self.name}': the result must be float")
        if k[0] != q[0] or v[0] != q[0] or k[1] != v[1] or k[2] != v[2]:
            raise VerifyException(
                f"'{self.name}': k {list(k)} and v {list(v)} do not match q {list(q)}"
            )
        if k[3] != q[3] or k[1] == 0 or q[1] % k[1]:
            raise VerifyException(
                f"'{self.name}': q {list(q)} and k {list(k)}: head dims must agree and "
                "the query heads be a multiple of the key heads"
            )
        self.expect_shape((q[0], q[1], q[2], v[3]))
        if self.mask is not None:
            scores = (q[0], q[1], q[2], k[2])
            if shape_rules.broadcast_shapes(shape_of(self.mask), scores) != scores:
                raise VerifyException(
                    f"'{self.name}': mask {list(shape_of(self.mask))} does not broadcast "
                    f"to the scores {list(scores)}"
                )
            mask_elt = element_of(self.mask)
            if not (is_float(mask_elt) or mask_elt == I1):
                raise VerifyException(f"'{self.name}': the mask must be float or i1")


SPYRE_OPS: tuple[type[Operation], ...] = (
    AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp,
    EqOp, NeOp, LtOp, LeOp, GtOp, GeOp,
    LogicalAndOp, LogicalOrOp, LogicalXorOp, SelectOp,
    BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, ShiftLeftOp, ShiftRightOp, BitwiseNotOp, RoundOp,
    NegOp, AbsOp, SignOp, ReluOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp,
    SigmoidOp, ErfOp, Log1pOp, SiluOp, SinOp, CosOp, FloorOp, CeilOp, LogicalNotOp, GeluOp,
    ClampOp, CastOp,
    MatmulOp,
    SumOp, MeanOp, ReduceMaxOp, ReduceMinOp, ArgmaxOp, ArgminOp, VarOp, CumsumOp,
    ReshapeOp, TransposeOp, BroadcastToOp, SliceOp, ConcatOp, PadOp, GatherOp, ScatterOp,
    ScatterAddOp,  # issue 19: MoE routing (index_add, scatter_add)
    FullOp, ConstantOp, IotaOp,
    SoftmaxOp, LayerNormOp, RmsNormOp, AttentionOp,
    RestickifyOp,
    *SORTING_OPS,
)  # fmt: skip

Spyre = Dialect("spyre", list(SPYRE_OPS), [StickLayoutAttr])
