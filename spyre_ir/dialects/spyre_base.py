"""The `spyre` dialect's shared parts: element type helpers and `SpyreOp`, the base of
every L1 op (static tensors, supported element types, valid stick layouts, then the
op's own `verify_semantics`). The ops are in the sibling spyre_*.py modules; the
dialect is `spyre_ir.dialects.spyre.Spyre`.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    traits_def,
)
from xdsl.pattern_rewriter import RewritePattern
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException

from spyre_ir import shape_rules
from spyre_ir.dialects.stick_layout import verify_tensor_layout

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
