"""Types and helpers of the `dataflow` dialect (spyre_ir/dialects/dataflow.py): the
LX and LPDDR5 buffer types a kernel body works on."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    NoneAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    Operation,
    ParametrizedAttribute,
    TypeAttribute,
)
from xdsl.irdl import (
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.dialects.stick_layout import StickLayoutAttr
from spyre_ir.hardware import ELEMENT_BYTES

# ---------------------------------------------------------------- types


class _BufferType(ParametrizedAttribute, TypeAttribute):
    """A shaped buffer: `!dataflow.<space><67x256xf16>`."""

    shape: ArrayAttr[IntAttr]
    element_type: Attribute

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def element_bytes(self) -> int:
        return ELEMENT_BYTES[element_type_name(self.element_type)]

    @property
    def nbytes(self) -> int:
        n = self.element_bytes
        for d in self.get_shape():
            n *= d
        return n

    @classmethod
    def _parse_shape(cls, parser: AttrParser) -> tuple[ArrayAttr[IntAttr], Attribute]:
        dims, element = parser.parse_ranked_shape()
        if any(d < 0 for d in dims):
            parser.raise_error(f"{cls.name} needs a static shape")
        return ArrayAttr(IntAttr(d) for d in dims), element

    def _print_shape(self, printer: Printer) -> None:
        for d in self.get_shape():
            printer.print_string(f"{d}x")
        printer.print_attribute(self.element_type)


@irdl_attr_definition
class LxType(_BufferType):
    """A buffer in one core's LX scratchpad: `!dataflow.lx<8x256xf16>`."""

    name = "dataflow.lx"

    def __init__(self, shape: Sequence[int], element_type: Attribute):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return list(cls._parse_shape(parser))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            self._print_shape(printer)


@irdl_attr_definition
class DdrType(_BufferType):
    """A tensor in LPDDR5, seen by a kernel: `!dataflow.ddr<67x256xf16, #spyre.stick<..>>`.

    Indexing is by host coordinates; the stick layout says where the bytes live."""

    name = "dataflow.ddr"
    layout: StickLayoutAttr | NoneAttr

    def __init__(
        self, shape: Sequence[int], element_type: Attribute, layout: Attribute | None = None
    ):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), element_type, layout or NoneAttr())

    @staticmethod
    def of_tensor(t: TensorType) -> DdrType:
        layout = t.encoding if isinstance(t.encoding, StickLayoutAttr) else None
        return DdrType(t.get_shape(), t.element_type, layout)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape, element = cls._parse_shape(parser)
            layout: Attribute = NoneAttr()
            if parser.parse_optional_punctuation(","):
                layout = parser.parse_attribute()
        return [shape, element, layout]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            self._print_shape(printer)
            if not isinstance(self.layout, NoneAttr):
                printer.print_string(", ")
                printer.print_attribute(self.layout)

    @property
    def stick_dim(self) -> int:
        """The host dim whose elements share sticks (the last one by default)."""
        if isinstance(self.layout, StickLayoutAttr):
            return self.layout.stick_dim.data
        return len(self.get_shape()) - 1


# ---------------------------------------------------------------- helpers


def parent_kernel(op: Operation) -> Operation | None:
    """The enclosing kernel: a `dataflow.kernel`, or at L3 the `core.program` (both
    have `capacity` and `core_count`)."""
    parent = op.parent_op()
    while parent is not None and not (
        hasattr(parent, "capacity") and hasattr(parent, "core_count")
    ):
        parent = parent.parent_op()
    return parent


def dense(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def ints(attr: DenseArrayBase | None) -> tuple[int, ...]:
    return () if attr is None else tuple(int(v) for v in attr.get_values())
