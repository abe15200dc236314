"""Inter-tile communication ops of the `ktdp` dialect (KTDP.td and
docs/inter-tile-communication.md of torch-spyre/ktir-mlir-frontend): a produce op
names each tile's partials, one delivery op (consume: copy; reduce: fold) hands them
to the consumer tiles."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    AffineSetAttr,
    IndexType,
    TensorType,
)
from xdsl.ir import (
    Attribute,
    Operation,
    Region,
)
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects.ktdp_types import TileFutureType, future_groups


def _print_attrs(printer: Printer, op: Operation, elided: Sequence[str]) -> None:
    attrs = {**op.properties, **op.attributes}
    printer.print_op_attributes({k: v for k, v in attrs.items() if k not in elided})


def _parse_attrs(parser: Parser) -> dict[str, Attribute]:
    return parser.parse_optional_attr_dict()


# ---------------------------------------------------------------- inter-tile communication


def _verify_tile_set(op: Operation, attr: AffineSetAttr, what: str, symbols: Sequence[int]) -> None:
    s = attr.data
    if s.num_dims != 1 or s.num_symbols not in symbols:
        want = " or ".join(str(n) for n in symbols)
        raise VerifyException(
            f"'{op.name}' {what} must be a set over one tile dim with {want} symbol(s), "
            f"got ({s.num_dims} dims, {s.num_symbols} symbols)"
        )


def _verify_yield(op: Operation, region: Region, types: Sequence[Attribute], what: str) -> None:
    last = region.block.last_op
    got = [] if last is None else [v.type for v in last.operands]
    if list(got) != list(types):
        raise VerifyException(
            f"'{op.name}' {what} yields ({', '.join(map(str, got))}) but the partial types "
            f"are ({', '.join(map(str, types))})"
        )


@irdl_op_definition
class InterTileProduceOp(IRDLOperation):
    """Names what each producing tile contributes; its region runs on every producer
    with the group id and yields one tensor per partial role."""

    name = "ktdp.inter_tile_produce"
    producer_tiles_per_group = prop_def(AffineSetAttr)
    future = result_def(TileFutureType)
    body = region_def("single_block")
    irdl_options = (ParsePropInAttrDict(),)

    @classmethod
    def parse(cls, parser: Parser) -> InterTileProduceOp:
        """`producer_tiles_per_group = SET attr-dict (: T, ...)? -> FUTURE REGION`: the
        partial types before `->` are optional and must be the future's (ktir-cpu's
        examples write them: torch-spyre/ktir-cpu examples/ktir/ring_reduce.mlir)."""
        parser.parse_keyword("producer_tiles_per_group")
        parser.parse_punctuation("=")
        props = {"producer_tiles_per_group": parser.parse_attribute()}
        groups = _parse_groups(parser) if parser.parse_optional_punctuation(",") else None
        attrs = _parse_attrs(parser)
        partials = None
        pos = parser.pos
        with future_groups(groups):
            if parser.parse_optional_punctuation(":"):
                partials = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, parser.parse_type
                )
            parser.parse_punctuation("->")
            future = _DeliveryBase.parse_future_type(parser)
        _check_groups(parser, future, groups, pos)
        if partials is not None and (
            not isinstance(future, TileFutureType) or list(future.partial_types.data) != partials
        ):
            parser.raise_error(
                f"the partial types ({', '.join(map(str, partials))}) are not those of {future}",
                pos,
                parser.pos,
            )
        body = parser.parse_region()
        return cls.create(result_types=[future], properties=props, attributes=attrs, regions=[body])

    def print(self, printer: Printer) -> None:
        printer.print_string(" producer_tiles_per_group = ")
        printer.print_attribute(self.producer_tiles_per_group)
        _print_attrs(printer, self, ("producer_tiles_per_group",))
        printer.print_string(" -> ")
        printer.print_attribute(self.future.type)
        printer.print_string(" ")
        printer.print_region(self.body)

    def verify_(self) -> None:
        _verify_tile_set(self, self.producer_tiles_per_group, "producer_tiles_per_group", (1,))
        args = self.body.block.args
        if len(args) != 1 or not isinstance(args[0].type, IndexType):
            raise VerifyException(f"'{self.name}' region takes one index argument (the group id)")
        if not isinstance(self.body.block.last_op, YieldPartialOp):
            raise VerifyException(f"'{self.name}' region must end in ktdp.yield_partial")
        _verify_yield(self, self.body, self.future.type.partial_types.data, "region")
        uses = list(self.future.uses)
        if len(uses) != 1 or not isinstance(
            uses[0].operation, InterTileConsumeOp | InterTileReduceOp
        ):
            raise VerifyException(
                f"'{self.name}' result must have exactly one use: the delivery op (has {len(uses)})"
            )


@irdl_op_definition
class YieldPartialOp(IRDLOperation):
    name = "ktdp.yield_partial"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), Pure(), HasParent(InterTileProduceOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"


class _DeliveryBase(IRDLOperation):
    """What consume and reduce share: the future, the consumer set, the optional
    per-consumer dependency set, results of the partial types (each subclass declares
    these fields, in its operand order)."""

    # Results that differ from the partials by unit dims only: accepted with a warning
    # (`compat_warnings`) where ktir-cpu's interpreter runs them, not in the spec.
    UNIT_DIM_RESULTS: ClassVar[bool] = False

    def compat_warnings(self) -> list[str]:
        """What this op does that the specification rejects and ktir-cpu runs."""
        partials = list(self.future.type.partial_types.data)
        results = [r.type for r in self.results]
        if results == partials:
            return []
        return [
            f"'{self.name}' result types ({', '.join(map(str, results))}) differ from the "
            f"future partial types ({', '.join(map(str, partials))}) by unit dims only: the "
            "specification's rule 'result types must match future partial types' rejects "
            "this; accepted as torch-spyre/ktir-cpu runs it, each result being its partial "
            "reshaped"
        ]

    def verify_delivery(self) -> None:
        _verify_tile_set(self, self.consumer_tiles_per_group, "consumer_tiles_per_group", (1,))
        if self.producer_dependency_per_consumer is not None:
            _verify_tile_set(
                self,
                self.producer_dependency_per_consumer,
                "producer_dependency_per_consumer",
                (1, 2),
            )
        partials = list(self.future.type.partial_types.data)
        results = [r.type for r in self.results]
        if results != partials and not (
            self.UNIT_DIM_RESULTS and _unit_dims_apart(results, partials)
        ):
            got = ", ".join(map(str, results))
            raise VerifyException(
                f"'{self.name}' result types must match future partial types (results "
                f"({got}), partials ({', '.join(map(str, partials))}): the specification's "
                "delivery keeps each partial's type, a reshape comes after it)"
            )
        if not isinstance(self.future.owner, InterTileProduceOp):
            raise VerifyException(f"'{self.name}' future must come from ktdp.inter_tile_produce")

    @staticmethod
    def parse_future_type(parser: Parser) -> Attribute:
        """`!ktdp.tile_future<...>`, or its short form `<...>` as MLIR prints it."""
        from xdsl.utils.mlir_lexer import MLIRTokenKind

        if parser._current_token.kind == MLIRTokenKind.LESS:  # noqa: SLF001
            return TileFutureType.new(TileFutureType.parse_parameters(parser))
        return parser.parse_type()

    @staticmethod
    def parse_head(parser: Parser) -> tuple[UnresolvedOperand, dict[str, Attribute]]:
        """`(%future) consumer_tiles_per_group = SET (, producer_dependency_per_consumer
        = SET)?`"""
        parser.parse_punctuation("(")
        future = parser.parse_unresolved_operand()
        parser.parse_punctuation(")")
        parser.parse_keyword("consumer_tiles_per_group")
        parser.parse_punctuation("=")
        props = {"consumer_tiles_per_group": parser.parse_attribute()}
        while parser.parse_optional_punctuation(","):
            if parser.parse_optional_keyword("producer_dependency_per_consumer"):
                parser.parse_punctuation("=")
                props["producer_dependency_per_consumer"] = parser.parse_attribute()
            elif parser._current_token.text == "groups":  # noqa: SLF001
                props["groups"] = _parse_groups(parser)
            else:
                break
        return future, props

    @staticmethod
    def parse_future(parser: Parser, props: dict[str, Attribute]) -> Attribute:
        """The future's type, taking the op's `groups = SET` when it has none."""
        groups = props.pop("groups", None)
        pos = parser.pos
        with future_groups(groups):  # type: ignore[arg-type]
            future = _DeliveryBase.parse_future_type(parser)
        _check_groups(parser, future, groups, pos)  # type: ignore[arg-type]
        return future

    def print_head(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_operand(self.future)
        printer.print_string(") consumer_tiles_per_group = ")
        printer.print_attribute(self.consumer_tiles_per_group)
        if self.producer_dependency_per_consumer is not None:
            printer.print_string(", producer_dependency_per_consumer = ")
            printer.print_attribute(self.producer_dependency_per_consumer)

    def print_types(self, printer: Printer) -> None:
        printer.print_string(" : ")
        printer.print_attribute(self.future.type)
        printer.print_string(" -> ")
        printer.print_list([r.type for r in self.results], printer.print_attribute)


def _unit_dims_apart(results: Sequence[Attribute], partials: Sequence[Attribute]) -> bool:
    """Each result a static tensor of its partial's element type and elements, its
    shape the partial's with unit dims added or dropped (`1x128` and `128`)."""

    def core(t: Attribute) -> tuple[Attribute, list[int]] | None:
        if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
            return None
        return t.element_type, [d for d in t.get_shape() if d != 1]

    return len(results) == len(partials) and all(
        core(r) is not None and core(r) == core(p) for r, p in zip(results, partials)
    )


def _parse_groups(parser: Parser) -> AffineSetAttr:
    """`groups = SET` on an inter-tile op (ktir-cpu's newer spelling of the future's
    groups: torch-spyre/ktir-cpu examples/ktir/ffn_swiglu_4core.mlir)."""
    parser.parse_keyword("groups")
    parser.parse_punctuation("=")
    pos = parser.pos
    groups = parser.parse_attribute()
    if not isinstance(groups, AffineSetAttr):
        parser.raise_error("groups must be an affine set", pos, parser.pos)
    return groups


def _check_groups(
    parser: Parser, future: Attribute, groups: AffineSetAttr | None, pos: int
) -> None:
    if groups is not None and isinstance(future, TileFutureType) and future.groups != groups:
        parser.raise_error(
            f"the op's groups {groups} are not those of its future type {future}", pos, parser.pos
        )


def _parse_result_types(parser: Parser) -> list[Attribute]:
    if parser.parse_optional_punctuation("("):
        types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
        return types
    return parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)


@irdl_op_definition
class InterTileConsumeOp(_DeliveryBase):
    """Copy delivery (broadcast, routing): each consumer tile receives its producer's
    partials unchanged."""

    name = "ktdp.inter_tile_consume"
    future = operand_def(TileFutureType)
    consumer_tiles_per_group = prop_def(AffineSetAttr)
    producer_dependency_per_consumer = opt_prop_def(AffineSetAttr)
    results_ = var_result_def(TensorType)

    @classmethod
    def parse(cls, parser: Parser) -> InterTileConsumeOp:
        future, props = cls.parse_head(parser)
        attrs = _parse_attrs(parser)
        parser.parse_punctuation(":")
        future_type = cls.parse_future(parser, props)
        parser.parse_punctuation("->")
        results = _parse_result_types(parser)
        return cls.create(
            operands=[parser.resolve_operand(future, future_type)],
            result_types=results,
            properties=props,
            attributes=attrs,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        self.print_head(printer)
        _print_attrs(
            printer, self, ("consumer_tiles_per_group", "producer_dependency_per_consumer")
        )
        self.print_types(printer)

    def verify_(self) -> None:
        self.verify_delivery()


@irdl_op_definition
class InterTileReduceOp(_DeliveryBase):
    """Reduction delivery (all-reduce, reduce): the partials of every producer of a
    group folded by the combiner region (2N arguments, yields N), from `identity`."""

    name = "ktdp.inter_tile_reduce"
    UNIT_DIM_RESULTS: ClassVar[bool] = True
    future = operand_def(TileFutureType)
    consumer_tiles_per_group = prop_def(AffineSetAttr)
    producer_dependency_per_consumer = opt_prop_def(AffineSetAttr)
    identity = var_operand_def(TensorType)
    results_ = var_result_def(TensorType)
    combiner = region_def("single_block")

    @classmethod
    def parse(cls, parser: Parser) -> InterTileReduceOp:
        future, props = cls.parse_head(parser)
        parser.parse_keyword("identity")
        parser.parse_punctuation("(")
        identity: list[UnresolvedOperand] = []
        identity_types: list[Attribute] = []
        if not parser.parse_optional_punctuation(")"):
            identity = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
            parser.parse_punctuation(":")
            identity_types = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_type
            )
            parser.parse_punctuation(")")
        attrs = _parse_attrs(parser)
        parser.parse_punctuation(":")
        future_type = cls.parse_future(parser, props)
        parser.parse_punctuation("->")
        results = _parse_result_types(parser)
        combiner = parser.parse_region()
        return cls.create(
            operands=[
                parser.resolve_operand(future, future_type),
                *(parser.resolve_operand(o, t) for o, t in zip(identity, identity_types)),
            ],
            result_types=results,
            properties=props,
            attributes=attrs,
            regions=[combiner],
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        self.print_head(printer)
        printer.print_string(", identity(")
        if self.identity:
            printer.print_list(self.identity, printer.print_operand)
            printer.print_string(" : ")
            printer.print_list([v.type for v in self.identity], printer.print_attribute)
        printer.print_string(")")
        _print_attrs(
            printer,
            self,
            ("consumer_tiles_per_group", "producer_dependency_per_consumer"),
        )
        self.print_types(printer)
        printer.print_string(" ")
        printer.print_region(self.combiner)

    def verify_(self) -> None:
        self.verify_delivery()
        partials = list(self.future.type.partial_types.data)
        identity = [v.type for v in self.identity]
        if identity != [r.type for r in self.results] and identity != partials:
            # The partial types too: ktir-cpu's reductions to unit-dim-reshaped results
            # (`UNIT_DIM_RESULTS`) give their identity as the partial.
            raise VerifyException(f"'{self.name}' identity types must match result types")
        block = self.combiner.block
        if [a.type for a in block.args] != partials * 2:
            raise VerifyException(
                f"'{self.name}' combiner takes 2N arguments (lhs..., rhs...) of the partial types"
            )
        if not isinstance(block.last_op, YieldReducedOp):
            raise VerifyException(f"'{self.name}' combiner must end in ktdp.yield_reduced")
        _verify_yield(self, self.combiner, partials, "combiner")


@irdl_op_definition
class YieldReducedOp(IRDLOperation):
    name = "ktdp.yield_reduced"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), Pure(), HasParent(InterTileReduceOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"
