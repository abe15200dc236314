"""The `spyre` dialect's constants (full, constant, iota) and composite ops (softmax,
layer_norm, rms_norm, attention).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import (
    I64,
    DenseIntOrFPElementsAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from spyre_ir import shape_rules
from spyre_ir.dialects.spyre_base import I1, I64_T, SpyreOp, element_of, is_float, shape_of
from spyre_ir.dialects.spyre_reduce import AlongDimOp

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
