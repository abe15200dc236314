"""The upstream dialects KTIR kernels use (linalg, tensor, math, memref, affine), as
xDSL defines them, with one addition to xDSL's linalg: the short form of
`linalg.reduce { arith.addf } ins(...) outs(...) dimensions = [1]` that Triton-Spyre
writes (MLIR prints a reduce whose body is one binary op that way)."""

from __future__ import annotations

from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.dialects.linalg import Linalg
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Dialect, Region
from xdsl.parser import Parser


class ReduceOp(linalg.ReduceOp):
    """linalg.reduce, parsing both the region form and the short `{ op }` form (the
    definition is xDSL's; only the parser is added)."""

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        if parser.parse_optional_punctuation("{") is None:
            return super().parse(parser)
        pos = parser.pos
        op_name = parser.parse_identifier()
        parser.parse_punctuation("}")
        op_class = parser.ctx.get_optional_op(op_name)
        if op_class is None:
            parser.raise_error(f"unknown combiner op '{op_name}'", pos, parser.pos)
        parser.parse_characters("ins")
        parser.parse_punctuation("(")
        input_name = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        input_value = parser.resolve_operand(input_name, parser.parse_type())
        parser.parse_punctuation(")")
        parser.parse_characters("outs")
        parser.parse_punctuation("(")
        init_name = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        init = parser.resolve_operand(init_name, parser.parse_type())
        parser.parse_punctuation(")")
        parser.parse_keyword("dimensions")
        parser.parse_punctuation("=")
        dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        element = init.type.element_type if isinstance(init.type, TensorType) else None
        block = Block(arg_types=[element, element])
        combined = op_class.create(operands=list(block.args), result_types=[element])
        block.add_ops([combined, linalg.YieldOp(combined.results[0])])
        return cls(input_value, init, DenseArrayBase.from_list(i64, dims), Region(block))


def linalg_dialect() -> Dialect:
    ops = [ReduceOp if op is linalg.ReduceOp else op for op in Linalg.operations]
    return Dialect("linalg", ops, list(Linalg.attributes))


def tensor_dialect() -> Dialect:
    from xdsl.dialects.tensor import Tensor

    return Tensor


def math_dialect() -> Dialect:
    from xdsl.dialects.math import Math

    return Math


def memref_dialect() -> Dialect:
    from xdsl.dialects.memref import MemRef

    return MemRef


def affine_dialect() -> Dialect:
    from xdsl.dialects.affine import Affine

    return Affine
