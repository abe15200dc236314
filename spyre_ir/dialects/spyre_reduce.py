"""The `spyre` dialect's ops that work along dimensions: matmul, the reductions (sum,
mean, max, min, argmax, argmin, var), cumsum, and sorting (sort, argsort).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    IntegerAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException

from spyre_ir import shape_rules
from spyre_ir.dialects.spyre_base import I1, I64_T, SpyreOp, element_of, ints, is_float, shape_of
from spyre_ir.dialects.spyre_elementwise import _define

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
