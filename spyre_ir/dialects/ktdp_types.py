"""Attributes and types of the `ktdp` dialect (KTIR): memory spaces, access tiles,
tile futures and runtime arguments (KTDPAttrs.td, KTDPTypes.td)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from xdsl.dialects.builtin import (
    AffineSetAttr,
    ArrayAttr,
    IndexType,
    IntAttr,
    TensorType,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    ParametrizedAttribute,
    TypeAttribute,
)
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

DYNAMIC = -(2**63)
"""MLIR's ShapedType::kDynamic, the marker of a dynamic entry in static_sizes."""

# ---------------------------------------------------------------- attributes


class SpyreMemoryKind(StrEnum):
    unspecified = "unspecified"
    LX = "LX"
    HBM = "HBM"
    L0 = "L0"


@irdl_attr_definition
class SpyreMemoryKindAttr(EnumAttribute[SpyreMemoryKind]):
    name = "ktdp.spyre_memory_kind"


@irdl_attr_definition
class SpyreMemorySpaceAttr(ParametrizedAttribute):
    """`#ktdp.spyre_memory_space<HBM>`, `#ktdp.spyre_memory_space<LX, core = 7>`;
    core -1 means no core affinity (KTDPAttrs.td)."""

    name = "ktdp.spyre_memory_space"
    kind: SpyreMemoryKindAttr
    core: IntAttr

    def __init__(self, kind: SpyreMemoryKind, core: int = -1):
        super().__init__(SpyreMemoryKindAttr(kind), IntAttr(core))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            kind = parser.parse_str_enum(SpyreMemoryKind)
            core = -1
            if parser.parse_optional_punctuation(","):
                parser.parse_keyword("core")
                parser.parse_punctuation("=")
                pos = parser.pos
                core = parser.parse_integer()
                if core < -1:
                    parser.raise_error(f"core must be >= 0 or -1, got {core}", pos, parser.pos)
        return [SpyreMemoryKindAttr(kind), IntAttr(core)]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.kind.data.value)
            if self.core.data != -1:
                printer.print_string(f", core = {self.core.data}")

    def verify(self) -> None:
        if self.core.data < -1:
            raise VerifyException(f"'{self.name}': core must be >= 0 or -1, got {self.core.data}")


class MemorySpace(StrEnum):
    """The generic spaces of the RFC examples: global memory and a tile's own memory."""

    global_ = "global"
    ct_local = "ct_local"


@irdl_attr_definition
class MemorySpaceAttr(EnumAttribute[MemorySpace]):
    """`#ktdp.memory_space<global>` / `<ct_local>`."""

    name = "ktdp.memory_space"

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> MemorySpace:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(MemorySpace)


# ---------------------------------------------------------------- types


@irdl_attr_definition
class AccessTileType(ParametrizedAttribute, TypeAttribute):
    """`!ktdp.access_tile<32x64xindex>`: a tile of coordinates (index elements only)."""

    name = "ktdp.access_tile"
    shape: ArrayAttr[IntAttr]
    element_type: IndexType

    def __init__(self, shape: Sequence[int]):
        super().__init__(ArrayAttr(IntAttr(d) for d in shape), IndexType())

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            dims, element = parser.parse_ranked_shape()
            if not isinstance(element, IndexType):
                parser.raise_error(
                    f"access_tile elements must be index, got {element}", pos, parser.pos
                )
        return [ArrayAttr(IntAttr(d) for d in dims), element]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            for d in self.get_shape():
                printer.print_string("?x" if d == DYNAMIC or d < 0 else f"{d}x")
            printer.print_string("index")


FUTURE_GROUPS: list[AffineSetAttr | None] = [None]
"""The groups an inter-tile op being parsed names (`groups = SET`): a future type
written there without its own groups takes them."""


@contextmanager
def future_groups(groups: AffineSetAttr | None) -> Iterator[None]:
    FUTURE_GROUPS.append(groups)
    try:
        yield
    finally:
        FUTURE_GROUPS.pop()


@irdl_attr_definition
class TileFutureType(ParametrizedAttribute, TypeAttribute):
    """`!ktdp.tile_future<(tensor<1x64xf16>, ...), groups = affine_set<(g) : ...>>`:
    the in-flight partials of an inter-tile communication, one tensor per role."""

    name = "ktdp.tile_future"
    partial_types: ArrayAttr[TensorType]
    groups: AffineSetAttr

    def __init__(self, partial_types: Sequence[TensorType], groups: AffineSetAttr):
        super().__init__(ArrayAttr(partial_types), groups)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            # One partial type may be written without the parentheses (ktir-cpu's
            # examples do: torch-spyre/ktir-cpu examples/ktir/ring_reduce.mlir).
            if parser.parse_optional_punctuation("(") is not None:
                types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
                parser.parse_punctuation(")")
            else:
                types = [parser.parse_type()]
            pos = parser.pos
            if parser.parse_optional_punctuation(",") is None:
                # ktir-cpu's newer examples name the groups on the inter-tile op
                # (`groups = SET`) and leave them out of the type.
                groups = FUTURE_GROUPS[-1]
                if groups is None:
                    parser.raise_error("tile_future needs `, groups = SET`", pos, parser.pos)
                return [ArrayAttr(types), groups]
            parser.parse_keyword("groups")
            parser.parse_punctuation("=")
            pos = parser.pos
            groups = parser.parse_attribute()
            if not isinstance(groups, AffineSetAttr) or (
                groups.data.num_dims != 1 or groups.data.num_symbols != 0
            ):
                parser.raise_error(
                    "tile_future groups must be a set over one dimension without symbols",
                    pos,
                    parser.pos,
                )
        return [ArrayAttr(types), groups]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            with printer.in_parens():
                printer.print_list(self.partial_types.data, printer.print_attribute)
            printer.print_string(", groups = ")
            printer.print_attribute(self.groups)

    def verify(self) -> None:
        if not self.partial_types.data:
            raise VerifyException("tile_future needs at least one partial type")
        for t in self.partial_types.data:
            if not isinstance(t, TensorType):
                raise VerifyException(f"tile_future partials must be ranked tensors, got {t}")
        g = self.groups.data
        if g.num_dims != 1 or g.num_symbols != 0:
            raise VerifyException(
                "tile_future groups must be a set over one dimension without symbols"
            )


@irdl_attr_definition
class RuntimeArgType(ParametrizedAttribute, TypeAttribute):
    """`!ktdp.runtime_arg<index, granularity=3, upperbound=300>` (0 = absent)."""

    name = "ktdp.runtime_arg"
    underlying: Attribute
    granularity: IntAttr
    upperbound: IntAttr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        values = {"granularity": 0, "upperbound": 0}
        with parser.in_angle_brackets():
            underlying = parser.parse_type()
            while parser.parse_optional_punctuation(","):
                key = parser.parse_keyword_in(values)
                parser.parse_punctuation("=")
                values[key] = parser.parse_integer()
        return [underlying, IntAttr(values["granularity"]), IntAttr(values["upperbound"])]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_attribute(self.underlying)
            for key, value in (("granularity", self.granularity), ("upperbound", self.upperbound)):
                if value.data:
                    printer.print_string(f", {key}={value.data}")

    def verify(self) -> None:
        for key, value in (("granularity", self.granularity), ("upperbound", self.upperbound)):
            if value.data < 0:
                raise VerifyException(f"runtime_arg {key} must be positive, got {value.data}")
