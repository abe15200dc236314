"""The `ktdp` dialect's access tiles (torch-spyre/ktir-mlir-frontend,
include/ktir/Dialect/KTDP/KTDP.td): `construct_access_tile`, an affine integer set of
coordinates anchored at a base coordinate of a memory view, and
`construct_indirect_access_tile`, whose subscripts may read index views, with the
terminator of its optional region. Our own implementation of the specification's
syntax and verifier rules; `ktdp.py` holds the rest of the dialect."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    ArrayAttr,
    BoolAttr,
    IndexType,
    MemRefType,
    TensorType,
    i1,
)
from xdsl.ir import (
    Attribute,
    Operation,
    Region,
)
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects import ktdp_syntax as syntax
from spyre_ir.dialects.ktdp_types import (
    AccessTileType,
)

# ---------------------------------------------------------------- access tiles


def _verify_order(op: Operation, order: AffineMapAttr, dims: int, what: str) -> None:
    m = order.data
    if m.num_dims != len(m.results):
        raise VerifyException(
            f"'{op.name}' {what}_order must have equal number of inputs ({m.num_dims}) and "
            f"outputs ({len(m.results)})"
        )
    if len(m.results) != dims:
        raise VerifyException(
            f"'{op.name}' {what}_order dimensions ({len(m.results)}) must match {what}_set "
            f"dimensions ({dims})"
        )


@irdl_op_definition
class ConstructAccessTileOp(IRDLOperation):
    """`ktdp.construct_access_tile %view[%row, %col + 64] symbols(%n)
    {access_tile_set = affine_set<...>, access_tile_order = affine_map<...>}
    : memref<..> -> !ktdp.access_tile<1x1024xindex>`: the coordinates of the set,
    relative to the base coordinate `base_map(indices)`, in the order's layout."""

    name = "ktdp.construct_access_tile"
    base = operand_def(MemRefType | TensorType)
    indices = var_operand_def(IndexType)
    symbol_operands = var_operand_def(IndexType)
    base_map = prop_def(AffineMapAttr)
    access_tile_set = prop_def(AffineSetAttr)
    access_tile_order = prop_def(AffineMapAttr)
    result = result_def(AccessTileType)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    traits = traits_def(Pure())

    def compat_warnings(self) -> list[str]:
        """What this op does that the specification rejects and ktir-cpu runs: a set
        holding more than the tile's type, read as the set's points within the type."""
        from spyre_ir.interp.ktir_sets import KtirError, order_perm, set_box, type_clipped_box

        if self.symbol_operands:
            return []
        shape = list(self.result.type.get_shape())
        try:
            box, perm = (
                set_box(self.access_tile_set, self),
                order_perm(self.access_tile_order, self),
            )
        except KtirError:
            return []  # the interpreter and the lowering report it
        extents = [box[d][1] - box[d][0] + 1 for d in perm]
        if extents == shape or type_clipped_box(box, perm, shape) is None:
            return []
        return [
            f"'{self.name}' access_tile_set spans {extents} but the tile type is {shape}: "
            "KTDP.td gives a tile the shape of its coordinate collection (ktdp.load: 'Its "
            "shape corresponds to the shape of the access tile's coordinate collection'; "
            "ktdp.store: the data tile 'must match the logical iteration shape of the "
            "access tile') and rejects this; accepted as torch-spyre/ktir-cpu runs it, the "
            f"tile being the set's points in the {shape} box of its type from the base"
        ]

    @classmethod
    def parse(cls, parser: Parser) -> ConstructAccessTileOp:
        index = IndexType()
        base = parser.parse_unresolved_operand()
        affine = syntax.SsaAffineParser(parser)
        exprs = affine.expr_list(parser.Delimiter.SQUARE)
        symbols = []
        if parser.parse_optional_keyword("symbols"):
            symbols = parser.parse_comma_separated_list(
                parser.Delimiter.PAREN, parser.parse_unresolved_operand
            )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        base_type = parser.parse_type()
        parser.parse_punctuation("->")
        result = parser.parse_type()
        props: dict[str, Attribute] = {
            "base_map": AffineMapAttr(affine.map(exprs)),
            "operandSegmentSizes": syntax.segments(1, len(affine.operands), len(symbols)),
        }
        for key in ("access_tile_set", "access_tile_order"):
            if key not in attrs:
                parser.raise_error(f"'{cls.name}' needs the attribute {key}")
            props[key] = attrs.pop(key)
        return cls.create(
            operands=[
                parser.resolve_operand(base, base_type),
                *(parser.resolve_operand(o, index) for o in affine.operands),
                *(parser.resolve_operand(o, index) for o in symbols),
            ],
            result_types=[result],
            properties=props,
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.base)
        printer.print_string("[")
        syntax.print_ssa_affine_list(printer, self.base_map.data.results, self.indices)
        printer.print_string("]")
        if self.symbol_operands:
            printer.print_string(" symbols")
            printer.print_operands(self.symbol_operands)
        syntax.print_attrs(printer, self, ("base_map", "operandSegmentSizes"))
        printer.print_string(" : ")
        printer.print_attribute(self.base.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        tile_set = self.access_tile_set.data
        base_map = self.base_map.data
        if tile_set.num_dims != len(base_map.results):
            raise VerifyException(
                f"'{self.name}' access_tile_set dimensions ({tile_set.num_dims}) must match "
                f"base_map dims ({len(base_map.results)})"
            )
        if base_map.num_dims != len(self.indices):
            raise VerifyException(
                f"'{self.name}' base_map expects {base_map.num_dims} operands but got "
                f"{len(self.indices)}"
            )
        if tile_set.num_symbols != len(self.symbol_operands):
            raise VerifyException(
                f"'{self.name}' access_tile_set has {tile_set.num_symbols} symbols but got "
                f"{len(self.symbol_operands)} symbol operands"
            )
        _verify_order(self, self.access_tile_order, tile_set.num_dims, "access_tile")
        rank = len(self.result.type.get_shape())
        if rank != tile_set.num_dims:
            raise VerifyException(
                f"'{self.name}' result type rank ({rank}) must match access_tile_set "
                f"dimensions ({tile_set.num_dims})"
            )
        base_rank = syntax.memref_rank(self.base.type)
        if base_rank != len(base_map.results):
            raise VerifyException(
                f"'{self.name}' base has rank {base_rank} but the base coordinate has "
                f"{len(base_map.results)} entries"
            )


@irdl_op_definition
class RegionTerminatorOp(IRDLOperation):
    name = "ktdp.region_terminator"
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict"


@irdl_op_definition
class ConstructIndirectAccessTileOp(IRDLOperation):
    """`ktdp.construct_indirect_access_tile intermediate_variables(%b, %k)
    %X[ind(%IDX[%b, %k floordiv 64]), (%k mod 64)] {variables_space_set = ...,
    variables_space_order = ...} : memref<..>, memref<..xi32> -> !ktdp.access_tile<..>`:
    per base dim a direct subscript or one read from an index view, over the points
    of the variable space. Subscript maps range over (captured..., intermediate...)."""

    name = "ktdp.construct_indirect_access_tile"
    base = operand_def(MemRefType | TensorType)
    indirect_memrefs = var_operand_def(MemRefType)
    captured_variables = var_operand_def(IndexType)
    symbol_operands = var_operand_def(IndexType)
    per_dim_subscript_kinds = prop_def(ArrayAttr[BoolAttr])
    per_dim_subscript_maps = prop_def(ArrayAttr[AffineMapAttr])
    variables_space_set = prop_def(AffineSetAttr)
    variables_space_order = prop_def(AffineMapAttr)
    region = region_def()
    result = result_def(AccessTileType)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())

    def kinds(self) -> list[bool]:
        return [bool(k.value.data) for k in self.per_dim_subscript_kinds.data]

    @classmethod
    def parse(cls, parser: Parser) -> ConstructIndirectAccessTileOp:
        from xdsl.ir import Block

        index = IndexType()
        parser.parse_keyword("intermediate_variables")
        variables = parser.parse_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        base = parser.parse_unresolved_operand()
        subscripts: list[tuple[UnresolvedOperand | None, list[AffineExpr], list]] = []

        def subscript() -> None:
            local = syntax.SsaAffineParser(parser)
            if parser.parse_optional_keyword("ind"):
                parser.parse_punctuation("(")
                view = parser.parse_unresolved_operand()
                exprs = local.expr_list(parser.Delimiter.SQUARE)
                parser.parse_punctuation(")")
                subscripts.append((view, exprs, local.operands))
            else:
                exprs = local.expr_list(parser.Delimiter.PAREN)
                subscripts.append((None, exprs, local.operands))

        parser.parse_comma_separated_list(parser.Delimiter.SQUARE, subscript)
        symbols = []
        if parser.parse_optional_keyword("symbols"):
            symbols = parser.parse_comma_separated_list(
                parser.Delimiter.PAREN, parser.parse_unresolved_operand
            )
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation("->")
        result = parser.parse_type()
        views = [v for v, _, _ in subscripts if v is not None]
        if len(types) != len(views) + 1:
            parser.raise_error(
                f"expected {len(views) + 1} types (base + {len(views)} indirect memrefs), "
                f"but got {len(types)}"
            )
        variable_names = [v.operand_name for v in variables]
        captured: list[UnresolvedOperand] = []
        for _, _, operands in subscripts:
            for o in operands:
                if o.operand_name not in variable_names and o.operand_name not in [
                    c.operand_name for c in captured
                ]:
                    captured.append(o)
        unified = [c.operand_name for c in captured] + variable_names
        maps = []
        for _, exprs, operands in subscripts:
            remap = [AffineExpr.dimension(unified.index(o.operand_name)) for o in operands]
            local_map = AffineMap(len(operands), 0, tuple(exprs))
            maps.append(AffineMapAttr(local_map.compose(AffineMap(len(unified), 0, tuple(remap)))))
        props: dict[str, Attribute] = {
            "per_dim_subscript_kinds": ArrayAttr(
                BoolAttr(v is not None, i1) for v, _, _ in subscripts
            ),
            "per_dim_subscript_maps": ArrayAttr(maps),
            "operandSegmentSizes": syntax.segments(1, len(views), len(captured), len(symbols)),
        }
        for key in ("variables_space_set", "variables_space_order"):
            if key not in attrs:
                parser.raise_error(f"'{cls.name}' needs the attribute {key}")
            props[key] = attrs.pop(key)
        block = Block(arg_types=[index] * len(variables))
        for arg, v in zip(block.args, variables):
            arg.name_hint = v.operand_name
        block.add_op(RegionTerminatorOp())
        return cls.create(
            operands=[
                parser.resolve_operand(base, types[0]),
                *(parser.resolve_operand(v, t) for v, t in zip(views, types[1:])),
                *(parser.resolve_operand(c, index) for c in captured),
                *(parser.resolve_operand(s, index) for s in symbols),
            ],
            result_types=[result],
            properties=props,
            attributes=attrs,
            regions=[Region(block)],
        )

    def print(self, printer: Printer) -> None:
        variables = list(self.region.block.args)
        printer.print_string(" intermediate_variables")
        printer.print_operands(variables)
        printer.print_string(" ")
        printer.print_operand(self.base)
        everything = [*self.captured_variables, *variables]
        views = iter(self.indirect_memrefs)
        parts = []
        for indirect, m in zip(self.kinds(), self.per_dim_subscript_maps.data):
            text = ", ".join(
                syntax.format_ssa_affine(e, printer, everything) for e in m.data.results
            )
            if indirect:
                parts.append(f"ind({syntax._name(printer, next(views))}[{text}])")
            else:
                parts.append(f"({text})")
        printer.print_string("[" + ", ".join(parts) + "]")
        if self.symbol_operands:
            printer.print_string(" symbols")
            printer.print_operands(self.symbol_operands)
        syntax.print_attrs(
            printer,
            self,
            ("per_dim_subscript_kinds", "per_dim_subscript_maps", "operandSegmentSizes"),
        )
        printer.print_string(" : ")
        printer.print_list(
            [self.base.type, *(v.type for v in self.indirect_memrefs)], printer.print_attribute
        )
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    def verify_(self) -> None:
        space = self.variables_space_set.data
        _verify_order(self, self.variables_space_order, space.num_dims, "variables_space")
        nvars = len(self.region.block.args) if self.region.blocks else 0
        if nvars != space.num_dims:
            raise VerifyException(
                f"'{self.name}' number of intermediate variables ({nvars}) must match "
                f"variables_space_set dimensions ({space.num_dims})"
            )
        if space.num_symbols != len(self.symbol_operands):
            raise VerifyException(
                f"'{self.name}' variables_space_set has {space.num_symbols} symbols but got "
                f"{len(self.symbol_operands)} symbol operands"
            )
        kinds, maps = self.kinds(), self.per_dim_subscript_maps.data
        if len(kinds) != len(maps):
            raise VerifyException(
                f"'{self.name}' per_dim_subscript_kinds size ({len(kinds)}) must match "
                f"per_dim_subscript_maps size ({len(maps)})"
            )
        base_rank = syntax.memref_rank(self.base.type)
        if len(kinds) != base_rank:
            raise VerifyException(
                f"'{self.name}' number of subscripts ({len(kinds)}) must match base rank "
                f"({base_rank})"
            )
        if sum(kinds) != len(self.indirect_memrefs):
            raise VerifyException(
                f"'{self.name}' number of indirect dimensions ({sum(kinds)}) must match "
                f"number of indirect memrefs ({len(self.indirect_memrefs)})"
            )
        expected = len(self.captured_variables) + nvars
        views = iter(self.indirect_memrefs)
        for dim, (indirect, m) in enumerate(zip(kinds, maps)):
            if m.data.num_dims != expected:
                raise VerifyException(
                    f"'{self.name}' subscript map for dimension {dim} has {m.data.num_dims} "
                    f"dimensions, but expected {expected} (captured_variables + "
                    "intermediate_variables)"
                )
            want = syntax.memref_rank(next(views).type) if indirect else 1
            if len(m.data.results) != want:
                kind = "indirect" if indirect else "direct"
                raise VerifyException(
                    f"'{self.name}' {kind} subscript map for dimension {dim} produces "
                    f"{len(m.data.results)} results, but needs {want}"
                )
        rank = len(self.result.type.get_shape())
        if rank != space.num_dims:
            raise VerifyException(
                f"'{self.name}' result type rank ({rank}) must match variables_space_set "
                f"dimensions ({space.num_dims})"
            )
