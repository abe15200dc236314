"""The `spyre` dialect's shape and data-movement ops: reshape, transpose, broadcast_to,
slice, concat, pad, restickify, gather, scatter and scatter_add.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, BlockArgument, SSAValue
from xdsl.irdl import (
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from spyre_ir import shape_rules
from spyre_ir.dialects.spyre_base import I64_T, SpyreOp, element_of, ints, shape_of
from spyre_ir.dialects.stick_layout import StickLayoutAttr

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
    buffer. `dest` is then a function argument whose only reader is this op.

    `no_wrap` (torch.index_copy's rule): a negative index is an error, not counted from
    the end."""

    name = "spyre.scatter"
    dest = operand_def(TensorType)
    indices = operand_def(TensorType)
    source = operand_def(TensorType)
    dim = prop_def(IntegerAttr[I64])
    in_place = opt_prop_def(UnitAttr)
    no_wrap = opt_prop_def(UnitAttr)
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
        if self.in_place is not None and (refusal := self.in_place_refusal()) is not None:
            raise VerifyException(f"'{self.name}': {refusal}")

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

    def in_place_refusal(self) -> str | None:
        """Why this scatter's result cannot be `dest`'s own buffer, or None: the tied
        result's rules (dest's type exactly; dest a function argument, an input buffer,
        that nothing else reads, as its old value is overwritten). The verifier of
        `in_place` and spyre-lower-scatter's choice both ask it."""
        if self.result.type != self.dest.type:
            return f"an in-place result has dest's type {self.dest.type}, not {self.result.type}"
        owner = self.dest.owner.parent_op() if isinstance(self.dest, BlockArgument) else None
        if owner is None or owner.name != "func.func":
            return "in place into a function argument only"
        others = [u.operation.name for u in self.dest.uses if u.operation is not self]
        if others:
            return f"in place into an argument that {others[0]} also reads"
        return None


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
