"""The `ktdp` dialect: IBM's KTIR kernel IR (Triton-Spyre's output), as published in
torch-spyre/ktir-mlir-frontend (include/ktir/Dialect/KTDP/KTDP.td, KTDPTypes.td,
KTDPAttrs.td and docs/inter-tile-communication.md). Our own implementation of that
specification's ops, types, verifier rules and textual syntax.

A KTIR kernel is a `func.func` with `attributes {grid = [...]}` over a grid of compute
tiles; its pointer arguments are `index` values. Memory is seen through views
(`construct_memory_view`, a strided memref over an address), coordinates through access
tiles (`construct_access_tile`, an affine integer set anchored at a base coordinate; or
`construct_indirect_access_tile`, with subscripts read from index views), data through
`load` / `store` of value-semantics tensors. Tiles exchange partial results with
`inter_tile_produce` and a delivery op (`inter_tile_consume`, `inter_tile_reduce`).

This module holds tile ids, memory views, load / store, runtime arguments and the
dialect; the access tiles are in `ktdp_access.py`, the inter-tile ops in
`ktdp_intertile.py`, types and attributes in `ktdp_types.py`, the shared textual
syntax in `ktdp_syntax.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import (
    I64,
    AffineSetAttr,
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    TensorType,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Dialect,
    Operation,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from spyre_ir.dialects import ktdp_syntax as syntax
from spyre_ir.dialects.ktdp_access import (
    ConstructAccessTileOp,
    ConstructIndirectAccessTileOp,
    RegionTerminatorOp,
)
from spyre_ir.dialects.ktdp_intertile import (
    InterTileConsumeOp,
    InterTileProduceOp,
    InterTileReduceOp,
    YieldPartialOp,
    YieldReducedOp,
)
from spyre_ir.dialects.ktdp_types import (
    DYNAMIC,
    AccessTileType,
    MemorySpaceAttr,
    RuntimeArgType,
    SpyreMemoryKindAttr,
    SpyreMemorySpaceAttr,
    TileFutureType,
)

# ---------------------------------------------------------------- tile ids and views


def grid_of(
    fn: Operation, error: Callable[[str, Operation], Exception] = VerifyException
) -> tuple[int, ...]:
    """A kernel's `grid = [...]` attribute (one tile when absent). Anything but an array
    of positive integers is `error(message, fn)`: the interpreter and the lowering each
    pass their own located error type."""
    attr = fn.attributes.get("grid")
    if attr is None:
        return (1,)
    if not isinstance(attr, ArrayAttr) or not all(isinstance(a, IntegerAttr) for a in attr):
        raise error(f"the kernel's grid is {attr}, not an array of integers", fn)
    grid = tuple(int(a.value.data) for a in attr.data)  # type: ignore[attr-defined]
    if not grid or any(d <= 0 for d in grid):
        raise error(
            f"the kernel's grid {list(grid)} must have at least one dim, each a positive "
            "count of tiles",
            fn,
        )
    return grid


@irdl_op_definition
class GetComputeTileIdOp(IRDLOperation):
    """`%i, %j = ktdp.get_compute_tile_id : index, index`: this tile's position in
    the grid, one index per grid dim. `ktdp.get_compute_tile_id {dim = 1} : index` is
    one of them, grid dim 1: not in the specification, but Triton-Spyre's kernels write
    it and ktir-cpu runs it (torch-spyre/ktir-cpu, examples/triton-ktir/indexed_add.mlir)."""

    name = "ktdp.get_compute_tile_id"
    results_ = var_result_def(IndexType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict `:` type($results_)"

    def __init__(self, rank: int = 1):
        super().__init__(result_types=[[IndexType()] * rank])

    def grid_dims(self, grid: Sequence[int]) -> list[int] | None:
        """The grid dims the results are, or None when they do not fit `grid`. Fewer
        results than grid dims are the leading dims when the others are 1 (a
        `grid = [32, 1]` kernel asking one id: the two readings, dim 0 and the linear
        id, agree only then)."""
        dim = self.attributes.get("dim")
        if dim is None:
            n = len(self.results)
            fits = n <= len(grid) and all(d == 1 for d in grid[n:])
            return list(range(n)) if fits else None
        assert isinstance(dim, IntegerAttr)
        return [dim.value.data] if dim.value.data < len(grid) else None

    def verify_(self) -> None:
        if not self.results:
            raise VerifyException(
                f"'{self.name}' must return at least one index (num tile-grid dims >= 1)"
            )
        dim = self.attributes.get("dim")
        if dim is None:
            return
        if not isinstance(dim, IntegerAttr) or dim.value.data < 0:
            raise VerifyException(f"'{self.name}' dim must be a non-negative integer, got {dim}")
        if len(self.results) != 1:
            raise VerifyException(
                f"'{self.name}' with a dim returns one index, not {len(self.results)}"
            )


@irdl_op_definition
class ConstructMemoryViewOp(IRDLOperation):
    """`ktdp.construct_memory_view %ptr, sizes: [4096, %n], strides: [%n, 1]
    {coordinate_set = affine_set<...>, memory_space = #ktdp.spyre_memory_space<HBM>}
    : memref<4096x?xf16>`: a strided view of memory at an address."""

    name = "ktdp.construct_memory_view"
    offset = operand_def(IndexType)
    sizes = var_operand_def(IndexType)
    strides = var_operand_def(IndexType)
    static_sizes = prop_def(DenseArrayBase[I64])
    static_strides = prop_def(DenseArrayBase[I64])
    memory_space = prop_def(SpyreMemorySpaceAttr | MemorySpaceAttr)
    coordinate_set = prop_def(AffineSetAttr)
    result = result_def(MemRefType)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(Pure())

    def sizes_static(self) -> tuple[int, ...]:
        return tuple(self.static_sizes.get_values())

    def strides_static(self) -> tuple[int, ...]:
        return tuple(self.static_strides.get_values())

    @classmethod
    def parse(cls, parser: Parser) -> ConstructMemoryViewOp:
        index = IndexType()
        offset = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        parser.parse_punctuation(",")
        parser.parse_keyword("sizes")
        parser.parse_punctuation(":")
        static_sizes, sizes = syntax.parse_dynamic_index_list(parser)
        parser.parse_punctuation(",")
        parser.parse_keyword("strides")
        parser.parse_punctuation(":")
        static_strides, strides = syntax.parse_dynamic_index_list(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        result = parser.parse_type()
        props = {
            "static_sizes": DenseArrayBase.from_list(i64, static_sizes),
            "static_strides": DenseArrayBase.from_list(i64, static_strides),
        }
        for key in ("memory_space", "coordinate_set"):
            if key in attrs:
                props[key] = attrs.pop(key)
        if "coordinate_set" not in props and DYNAMIC not in static_sizes:
            # Left out (ktir-cpu's softmax_lx_fused.ktir): the view's whole box.
            props["coordinate_set"] = syntax.box_set(static_sizes)
        return cls.create(
            operands=[
                offset,
                *(parser.resolve_operand(s, index) for s in sizes),
                *(parser.resolve_operand(s, index) for s in strides),
            ],
            result_types=[result],
            properties={
                **props,
                "operandSegmentSizes": syntax.segments(1, len(sizes), len(strides)),
            },
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.offset)
        printer.print_string(", sizes: ")
        syntax.print_dynamic_index_list(printer, self.sizes_static(), self.sizes)
        printer.print_string(", strides: ")
        syntax.print_dynamic_index_list(printer, self.strides_static(), self.strides)
        syntax.print_attrs(printer, self, ("static_sizes", "static_strides", "operandSegmentSizes"))
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        sizes, strides = self.sizes_static(), self.strides_static()
        if len(sizes) != len(strides):
            raise VerifyException(
                f"'{self.name}' static_sizes and static_strides must have equal length"
            )
        if len(self.sizes) != sizes.count(DYNAMIC):
            raise VerifyException(
                f"'{self.name}' number of dynamic size operands does not match dynamic "
                "entries in sizes"
            )
        if len(self.strides) != strides.count(DYNAMIC):
            raise VerifyException(
                f"'{self.name}' number of dynamic stride operands does not match dynamic "
                "entries in strides"
            )
        shape = self.result.type.get_shape()
        if len(shape) != len(sizes):
            raise VerifyException(
                f"'{self.name}' result memref rank does not match sizes/strides length"
            )
        # A static size the type contradicts (a `?` of the type, d < 0, takes any): the
        # interpreter and the lowering would each read one of them.
        if any(s != DYNAMIC and d >= 0 and s != d for s, d in zip(sizes, shape)):
            raise VerifyException(
                f"'{self.name}' sizes {list(sizes)} do not match the result type {self.result.type}"
            )
        if syntax.set_of(self.coordinate_set).data.num_dims != len(sizes):
            raise VerifyException(f"'{self.name}' coordinate_set must have one dim per view dim")


@irdl_op_definition
class ConstructDistributedMemoryViewOp(IRDLOperation):
    """`ktdp.construct_distributed_memory_view (%a, %b : memref<..>, memref<..>)
    : memref<..>`: one global view over several memory views (by their coordinate
    sets)."""

    name = "ktdp.construct_distributed_memory_view"
    memrefs = var_operand_def(MemRefType)
    result = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "`(` ($memrefs^ `:` type($memrefs))? `)` attr-dict `:` type($result)"

    def verify_(self) -> None:
        out = self.result.type
        for m in self.memrefs:
            t = m.type
            assert isinstance(t, MemRefType) and isinstance(out, MemRefType)
            if t.element_type != out.element_type:
                raise VerifyException(
                    f"'{self.name}' all input memrefs must have the same element type as the result"
                )
            if len(t.get_shape()) != len(out.get_shape()):
                raise VerifyException(
                    f"'{self.name}' all input memrefs must have the same rank as the result"
                )


# ---------------------------------------------------------------- load and store


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`ktdp.load %tile : !ktdp.access_tile<32x64xindex> -> tensor<32x64xf16>` (the
    tile's type may be written `<32x64xindex>`)."""

    name = "ktdp.load"
    access_tile = operand_def(AccessTileType)
    result = result_def(TensorType)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        tile = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        tile_type = syntax.parse_access_tile_type(parser)
        parser.parse_punctuation("->")
        result = parser.parse_type()
        return cls.create(
            operands=[parser.resolve_operand(tile, tile_type)],
            result_types=[result],
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.access_tile)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.access_tile.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        if tuple(self.result.type.get_shape()) != self.access_tile.type.get_shape():
            raise VerifyException(f"'{self.name}' access tile shape must match result tensor shape")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`ktdp.store %data, %tile : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>`
    (the tile's type may be written `<32x64xindex>`)."""

    name = "ktdp.store"
    data_tile = operand_def(TensorType)
    access_tile = operand_def(AccessTileType)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        data = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        tile = parser.parse_unresolved_operand()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        data_type = parser.parse_type()
        parser.parse_punctuation(",")
        tile_type = syntax.parse_access_tile_type(parser)
        return cls.create(
            operands=[
                parser.resolve_operand(data, data_type),
                parser.resolve_operand(tile, tile_type),
            ],
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.data_tile)
        printer.print_string(", ")
        printer.print_operand(self.access_tile)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.data_tile.type)
        printer.print_string(", ")
        printer.print_attribute(self.access_tile.type)

    def verify_(self) -> None:
        if tuple(self.data_tile.type.get_shape()) != self.access_tile.type.get_shape():
            raise VerifyException(f"'{self.name}' data tile shape must match access tile shape")


# ---------------------------------------------------------------- runtime arguments


class RuntimeArgKind(StrEnum):
    value = "value"
    granularity = "granularity"
    upperbound = "upperbound"


@irdl_attr_definition
class RuntimeArgKindAttr(EnumAttribute[RuntimeArgKind]):
    name = "ktdp.runtime_arg_kind"


@irdl_op_definition
class RuntimeArgExtractOp(IRDLOperation):
    """`ktdp.runtime_arg_extract granularity from %m : !ktdp.runtime_arg<..> -> index`."""

    name = "ktdp.runtime_arg_extract"
    kind = prop_def(RuntimeArgKindAttr)
    input = operand_def(RuntimeArgType)
    result = result_def()
    traits = traits_def(Pure())

    @classmethod
    def parse(cls, parser: Parser) -> RuntimeArgExtractOp:
        kind = parser.parse_str_enum(RuntimeArgKind)
        parser.parse_keyword("from")
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        input_type = parser.parse_type()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation("->")
        result = parser.parse_type()
        return cls.create(
            operands=[parser.resolve_operand(operand, input_type)],
            result_types=[result],
            properties={"kind": RuntimeArgKindAttr(kind)},
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data.value} from ")
        printer.print_operand(self.input)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        syntax.print_attrs(printer, self, ("kind",))
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        t = self.input.type
        assert isinstance(t, RuntimeArgType)
        kind = self.kind.data
        if kind == RuntimeArgKind.value:
            if self.result.type != t.underlying:
                raise VerifyException(
                    f"'{self.name}' result type ({self.result.type}) must match runtime_arg "
                    f"underlying type ({t.underlying}) when extracting value"
                )
            return
        if not getattr(t, kind.value).data:
            raise VerifyException(
                f"'{self.name}' cannot extract {kind.value} from runtime_arg that doesn't have one"
            )
        if not isinstance(self.result.type, IndexType):
            raise VerifyException(
                f"'{self.name}' result type must be index when extracting {kind.value}"
            )


Ktdp = Dialect(
    "ktdp",
    [
        GetComputeTileIdOp,
        ConstructMemoryViewOp,
        ConstructDistributedMemoryViewOp,
        ConstructAccessTileOp,
        ConstructIndirectAccessTileOp,
        RegionTerminatorOp,
        LoadOp,
        StoreOp,
        InterTileProduceOp,
        YieldPartialOp,
        InterTileConsumeOp,
        InterTileReduceOp,
        YieldReducedOp,
        RuntimeArgExtractOp,
    ],
    [
        SpyreMemoryKindAttr,
        SpyreMemorySpaceAttr,
        MemorySpaceAttr,
        AccessTileType,
        TileFutureType,
        RuntimeArgType,
        RuntimeArgKindAttr,
    ],
)
