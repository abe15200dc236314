"""xDSL's `scf` dialect with one parser addition KTIR kernels need: `scf.for`'s result
types after `iter_args(...) ->` may be a single type without parentheses
(`-> tensor<1x1024xf16>`), as MLIR's own parser takes them and Triton-Spyre's kernels
write them (torch-spyre/ktir-cpu, examples/triton-ktir/layernorm_fwd_ktir.mlir). The
op definition and its printer are xDSL's."""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Attribute, Dialect
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.traits import SingleBlockImplicitTerminator, ensure_terminator


class ForOp(scf.ForOp):
    """scf.for, parsing `-> T` as well as `-> (T, ...)` for its result types."""

    @classmethod
    def parse(cls, parser: Parser) -> ForOp:
        indvar = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        bounds = [parser.parse_unresolved_operand()]
        for keyword in ("to", "step"):
            parser.parse_keyword(keyword)
            bounds.append(parser.parse_unresolved_operand())
        pos = parser.pos
        names: list[Parser.UnresolvedArgument] = []
        inits: list[UnresolvedOperand] = []
        types: list[Attribute] = []
        if parser.parse_optional_keyword("iter_args"):

            def assignment() -> None:
                names.append(parser.parse_argument(expect_type=False))
                parser.parse_punctuation("=")
                inits.append(parser.parse_unresolved_operand())

            parser.parse_comma_separated_list(parser.Delimiter.PAREN, assignment)
            parser.parse_punctuation("->")
            if parser.parse_optional_punctuation("(") is not None:
                types = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, parser.parse_attribute
                )
                parser.parse_punctuation(")")
            else:
                types = [parser.parse_attribute()]
        operands = parser.resolve_operands(inits, types, pos)
        block_args = [name.resolve(t) for name, t in zip(names, types)]
        index = parser.parse_type() if parser.parse_optional_punctuation(":") else IndexType()
        lb, ub, step = (parser.resolve_operand(b, index) for b in bounds)
        body = parser.parse_region((indvar.resolve(index), *block_args))
        op = cls(lb, ub, step, operands, body)
        op.attributes |= parser.parse_optional_attr_dict()
        if not block_args:
            for trait in op.get_traits_of_type(SingleBlockImplicitTerminator):
                ensure_terminator(op, trait)
        return op


Scf = Dialect(
    "scf",
    [ForOp if op is scf.ForOp else op for op in scf.Scf.operations],
    list(scf.Scf.attributes),
)
