"""Textual pieces of KTIR's custom op syntax: affine expressions over SSA values
(`%view[%row + 1, %c0]`, MLIR's `parseAffineMapOfSSAIds`) and dynamic index lists
(`sizes: [%n, 64]`, MLIR's `custom<DynamicIndexList>`), and the helpers the ops' custom
parsers and printers share."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import AffineSetAttr, DenseArrayBase, MemRefType, TensorType, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer

DYNAMIC = -(2**63)


class SsaAffineParser:
    """Parses affine expressions whose dims are SSA values, numbering each distinct
    value (by name) as a dim in order of first appearance, or in the order of
    `fixed` names given up front (the intermediate variables of an indirect tile)."""

    def __init__(self, parser: Parser, fixed: Sequence[UnresolvedOperand] = ()):
        self.parser = parser
        self.operands: list[UnresolvedOperand] = list(fixed)
        self.names = [o.operand_name for o in fixed]

    def _dim(self, operand: UnresolvedOperand) -> AffineExpr:
        name = operand.operand_name
        if name not in self.names:
            self.names.append(name)
            self.operands.append(operand)
        return AffineExpr.dimension(self.names.index(name))

    def _primary(self) -> AffineExpr:
        p = self.parser
        if (operand := p.parse_optional_unresolved_operand()) is not None:
            return self._dim(operand)
        if p.parse_optional_punctuation("("):
            expr = self.expr()
            p.parse_punctuation(")")
            return expr
        if p.parse_optional_punctuation("-"):
            return -self._primary()
        return AffineExpr.constant(p.parse_integer(allow_negative=False, allow_boolean=False))

    def _term(self) -> AffineExpr:
        p = self.parser
        expr = self._primary()
        while True:
            if p.parse_optional_punctuation("*"):
                expr = expr * self._primary()
            elif p.parse_optional_keyword("floordiv"):
                expr = expr // self._primary()
            elif p.parse_optional_keyword("ceildiv"):
                expr = expr.ceil_div(self._primary())
            elif p.parse_optional_keyword("mod"):
                expr = expr % self._primary()
            else:
                return expr

    def expr(self) -> AffineExpr:
        p = self.parser
        expr = self._term()
        while True:
            if p.parse_optional_punctuation("+"):
                expr = expr + self._term()
            elif p.parse_optional_punctuation("-"):
                expr = expr - self._term()
            else:
                return expr

    def expr_list(self, delimiter: Parser.Delimiter) -> list[AffineExpr]:
        return self.parser.parse_comma_separated_list(delimiter, self.expr)

    def map(self, results: Sequence[AffineExpr]) -> AffineMap:
        return AffineMap(len(self.names), 0, tuple(results))


_TOKENS = {
    AffineBinaryOpKind.Add: "+",
    AffineBinaryOpKind.Mul: "*",
    AffineBinaryOpKind.FloorDiv: "floordiv",
    AffineBinaryOpKind.CeilDiv: "ceildiv",
    AffineBinaryOpKind.Mod: "mod",
}


def format_ssa_affine(expr: AffineExpr, printer: Printer, operands: Sequence[SSAValue]) -> str:
    """`expr` with dim i written as the SSA name of operands[i]."""
    if isinstance(expr, AffineDimExpr):
        return _name(printer, operands[expr.position])
    if isinstance(expr, AffineConstantExpr):
        return str(expr.value)
    assert isinstance(expr, AffineBinaryOpExpr)
    lhs = format_ssa_affine(expr.lhs, printer, operands)
    rhs = format_ssa_affine(expr.rhs, printer, operands)
    if expr.kind == AffineBinaryOpKind.Add and rhs.startswith("-"):
        return f"{lhs} - {rhs[1:]}"
    if isinstance(expr.rhs, AffineBinaryOpExpr):
        rhs = f"({rhs})"
    if expr.kind != AffineBinaryOpKind.Add and isinstance(expr.lhs, AffineBinaryOpExpr):
        lhs = f"({lhs})"
    return f"{lhs} {_TOKENS[expr.kind]} {rhs}"


def _name(printer: Printer, value: SSAValue) -> str:
    """The printed name of `value` (assigning one as print_ssa_value would)."""
    from io import StringIO

    saved = printer.stream
    printer.stream = StringIO()
    try:
        printer.print_ssa_value(value)
        return printer.stream.getvalue()
    finally:
        printer.stream = saved


def print_ssa_affine_list(
    printer: Printer, exprs: Sequence[AffineExpr], operands: Sequence[SSAValue]
) -> None:
    printer.print_string(", ".join(format_ssa_affine(e, printer, operands) for e in exprs))


def parse_dynamic_index_list(parser: Parser) -> tuple[list[int], list[UnresolvedOperand]]:
    """`[%n, 64]` -> static entries (DYNAMIC where an SSA value stands) and the values."""
    static: list[int] = []
    dynamic: list[UnresolvedOperand] = []

    def entry() -> None:
        if (operand := parser.parse_optional_unresolved_operand()) is not None:
            dynamic.append(operand)
            static.append(DYNAMIC)
        else:
            static.append(parser.parse_integer(allow_boolean=False))

    parser.parse_comma_separated_list(parser.Delimiter.SQUARE, entry)
    return static, dynamic


def print_dynamic_index_list(
    printer: Printer, static: Sequence[int], dynamic: Sequence[SSAValue]
) -> None:
    values = iter(dynamic)
    parts = [_name(printer, next(values)) if s == DYNAMIC else str(s) for s in static]
    printer.print_string("[" + ", ".join(parts) + "]")


# ---------------------------------------------------------------- op helpers


def set_of(attr: Attribute) -> AffineSetAttr:
    assert isinstance(attr, AffineSetAttr)
    return attr


def box_set(sizes: Sequence[int]) -> AffineSetAttr:
    """`0 <= d_i <= size_i - 1` for every dim: a whole box of coordinates."""
    from xdsl.ir.affine import AffineConstraintExpr, AffineConstraintKind, AffineSet

    constraints = []
    for i, n in enumerate(sizes):
        d = AffineExpr.dimension(i)
        zero = AffineExpr.constant(0)
        constraints.append(AffineConstraintExpr(AffineConstraintKind.ge, d, zero))
        constraints.append(
            AffineConstraintExpr(AffineConstraintKind.ge, AffineExpr.constant(n - 1) - d, zero)
        )
    return AffineSetAttr(AffineSet(len(sizes), 0, tuple(constraints)))


def memref_rank(t: Attribute) -> int | None:
    if isinstance(t, MemRefType | TensorType):
        return len(t.get_shape())
    return None


def print_attrs(printer: Printer, op: Operation, elided: Sequence[str]) -> None:
    """The op's properties and attributes as one attribute dictionary, less `elided`."""
    attrs = {**op.properties, **op.attributes}
    printer.print_op_attributes({k: v for k, v in attrs.items() if k not in elided})


def segments(*sizes: int) -> DenseArrayBase:
    """An operandSegmentSizes value."""
    return DenseArrayBase.from_list(i32, sizes)


def parse_access_tile_type(parser: Parser) -> Attribute:
    """An access tile type, `!ktdp.access_tile<4x64xindex>` or, as MLIR's declarative
    formats print a type the op constrains to one class, `<4x64xindex>`."""
    from spyre_ir.dialects.ktdp_types import AccessTileType

    if parser._current_token.text != "<":  # noqa: SLF001 - xDSL has no public peek
        return parser.parse_type()
    return AccessTileType.new(AccessTileType.parse_parameters(parser))
