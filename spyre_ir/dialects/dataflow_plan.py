"""Work plans of the `dataflow` dialect: how a group's or a kernel's work divides over
the cores (see docs/dataflow.md). One typed attribute per kind of kernel:

    #dataflow.rows_plan<row_dims = 1, cores = 4>        rows split in contiguous ranges
    #dataflow.gather_plan<row_dims = 1, cores = 4>      the same, over index positions
    #dataflow.copy_plan<row_dims = 1, cores = 32>       a concat or restickify
    #dataflow.matmul_plan<cores = 32, split = [16, 1, 2]>   cores per m, n, k
    #dataflow.matmul_plan<cores = 32, split = [2, 1, 1], split_b = 16>
        a batched matmul with 16 cores along the batch, then m, n, k in each batch
    #dataflow.attention_plan<cores = 8>                 flash attention; on the kernel
        also `tile = [heads, rows, keys]` and `split_kv` (passes/tile_attention.py)
    #dataflow.ktir_plan<grid = [4]>                     a kernel lowered from KTIR

Fields are `name = value` (an integer or a list of integers), in any order, printed in
the order above. Each attribute's `verify` checks what holds on any card (positive
counts, row dims within [0, 64], a split of three); `verify_plan` checks what needs the
op (cores within the module's card, row dims within the result rank).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntAttr, NoneAttr, StringAttr
from xdsl.ir import Attribute, Operation, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from spyre_ir.hardware import card_of

MAX_ROW_DIMS = 64
"""The largest tensor rank a plan may name (the verifier's bound, not a card limit)."""

FieldValue = int | tuple[int, ...] | None


class WorkPlanAttr(ParametrizedAttribute):
    """What every plan has: its `KIND` and the fields its syntax names. A field is an
    `IntAttr`, an `ArrayAttr` of them, or `NoneAttr` when optional and absent."""

    KIND: ClassVar[str]
    # (field name, "int" or "ints", required)
    FIELDS: ClassVar[tuple[tuple[str, str, bool], ...]]

    @property
    def kind(self) -> str:
        """The kind of kernel: rows, gather, copy, matmul, attention or ktir."""
        return self.KIND

    @classmethod
    def from_values(cls, **values: FieldValue):
        """The plan with these field values (None: an optional field left out)."""
        params: list[Attribute] = []
        for name, _, _ in cls.FIELDS:
            value = values.get(name)
            if value is None:
                params.append(NoneAttr())
            elif isinstance(value, int):
                params.append(IntAttr(value))
            else:
                params.append(ArrayAttr(IntAttr(int(v)) for v in value))
        return cls(*params)

    def value(self, name: str) -> FieldValue:
        attr = getattr(self, name)
        if isinstance(attr, IntAttr):
            return attr.data
        if isinstance(attr, ArrayAttr):
            return tuple(a.data for a in attr.data)
        return None

    @property
    def core_count(self) -> int | None:
        """The cores the plan divides work over (None for a KTIR grid)."""
        return self.value("cores") if any(f[0] == "cores" for f in self.FIELDS) else None

    def field_values(self) -> dict[str, FieldValue]:
        return {n: self.value(n) for n, _, _ in self.FIELDS}

    @classmethod
    def values_problem(cls, values: dict[str, FieldValue]) -> str | None:
        """Why these field values make no plan on any card (None when they do)."""
        for name, what, required in cls.FIELDS:
            value = values.get(name)
            if value is None:
                if required:
                    return f"a {cls.KIND!r} plan needs {name!r}"
                continue
            if (what == "int") != isinstance(value, int):
                noun = "an integer" if what == "int" else "a list of integers"
                return f"plan {name} must be {noun}"
            low, high = (0, MAX_ROW_DIMS) if name == "row_dims" else (1, None)
            bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
            if isinstance(value, tuple) and any(v < low for v in value):
                return f"plan {name} = {list(value)} must hold integers {bound}"
            if isinstance(value, int) and not low <= value <= (high or value):
                return f"plan {name} = {value} must be {bound}"
        return cls.shape_problem(values)

    @classmethod
    def shape_problem(cls, values: dict[str, FieldValue]) -> str | None:
        """Kind-specific rules beyond each field's range."""
        return None

    def verify(self) -> None:
        problem = self.values_problem(self.field_values())
        if problem:
            raise VerifyException(f"#{self.name}: {problem}")

    def print_parameters(self, printer: Printer) -> None:
        fields = [(n, self.value(n)) for n, _, _ in self.FIELDS]
        text = ", ".join(
            f"{n} = {list(v) if isinstance(v, tuple) else v}" for n, v in fields if v is not None
        )
        if text:
            printer.print_string(f"<{text}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        start = parser.pos
        values: dict[str, FieldValue] = {}
        if parser.parse_optional_punctuation("<") is not None:
            if parser.parse_optional_punctuation(">") is None:
                parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, lambda: cls._parse_field(parser, values)
                )
                parser.parse_punctuation(">", f" to end #{cls.name}")
        known = {n for n, _, _ in cls.FIELDS}
        for name in values:
            if name not in known:
                parser.raise_error(f"#{cls.name} has no field {name!r} (fields: "
                                   f"{', '.join(n for n, _, _ in cls.FIELDS)})",
                                   start, parser.pos)  # fmt: skip
        # Report a malformed plan at its source position, not as a bare exception.
        problem = cls.values_problem(values)
        if problem:
            parser.raise_error(f"#{cls.name}: {problem}", start, parser.pos)
        return cls.from_values(**values).parameters

    @staticmethod
    def _parse_field(parser: AttrParser, values: dict[str, FieldValue]) -> None:
        at = parser.pos
        name = parser.parse_identifier(" (a plan field name)")
        parser.parse_punctuation("=", f" after plan field {name!r}")
        if parser.parse_optional_punctuation("[") is not None:
            items: list[int] = []
            if parser.parse_optional_punctuation("]") is None:
                items = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, lambda: parser.parse_integer(allow_boolean=False)
                )
                parser.parse_punctuation("]")
            value: FieldValue = tuple(items)
        else:
            value = parser.parse_integer(allow_boolean=False)
        if name in values:
            parser.raise_error(f"plan field {name!r} given twice", at, parser.pos)
        values[name] = value

    def with_cores(self, cores: int):
        """The same plan over `cores` cores."""
        return type(self).from_values(**{**self.field_values(), "cores": cores})


class RowPlanBase(WorkPlanAttr):
    """Work items are rows over the first `row_dims` dims, in contiguous ranges per core."""

    FIELDS = (("row_dims", "int", True), ("cores", "int", True))
    row_dims: IntAttr
    cores: IntAttr

    def __init__(self, row_dims: Attribute, cores: Attribute):
        super().__init__(row_dims, cores)

    @classmethod
    def of(cls, row_dims: int, cores: int):
        return cls.from_values(row_dims=row_dims, cores=cores)


@irdl_attr_definition
class RowsPlanAttr(RowPlanBase):
    name = "dataflow.rows_plan"
    KIND = "rows"


@irdl_attr_definition
class GatherPlanAttr(RowPlanBase):
    name = "dataflow.gather_plan"
    KIND = "gather"


@irdl_attr_definition
class CopyPlanAttr(RowPlanBase):
    name = "dataflow.copy_plan"
    KIND = "copy"


@irdl_attr_definition
class MatmulPlanAttr(WorkPlanAttr):
    """`split` is the cores along m, n and k (k > 1: split-K with a ring all-reduce).

    `split_b` (optional, a batched matmul): that many groups of m x n x k cores each
    take a contiguous range of the batch, and the M split divides the rows of each
    batch (the card's forced division, matmul_splits.csv `split_b`); `cores` is then
    split_b x m x n x k. Without it the M split divides the rows of all batches
    (batch x M tiles in contiguous ranges per core)."""

    name = "dataflow.matmul_plan"
    KIND = "matmul"
    FIELDS = (("cores", "int", True), ("split", "ints", True), ("split_b", "int", False))
    cores: IntAttr
    split: ArrayAttr[IntAttr]
    split_b: IntAttr | NoneAttr

    def __init__(self, cores: Attribute, split: Attribute, split_b: Attribute | None = None):
        super().__init__(cores, split, NoneAttr() if split_b is None else split_b)

    @classmethod
    def of(cls, cores: int, split: Sequence[int], split_b: int | None = None) -> MatmulPlanAttr:
        return cls.from_values(cores=cores, split=tuple(split), split_b=split_b)

    @property
    def split_mnk(self) -> tuple[int, int, int]:
        m, n, k = self.value("split")  # type: ignore[misc]
        return m, n, k

    @property
    def batch_split(self) -> int | None:
        """Cores along the batch (None: the M split spans the rows of all batches)."""
        value = self.value("split_b")
        return value if isinstance(value, int) else None

    @property
    def split_cores(self) -> int:
        """The cores the split uses: split_b x m x n x k."""
        return (self.batch_split or 1) * math.prod(self.split_mnk)

    @classmethod
    def shape_problem(cls, values: dict[str, FieldValue]) -> str | None:
        split = values["split"]
        if isinstance(split, tuple) and len(split) != 3:
            return f"plan split must be [m, n, k], got {list(split)}"
        split_b, cores = values.get("split_b"), values.get("cores")
        if isinstance(split_b, int) and isinstance(split, tuple) and isinstance(cores, int):
            need = split_b * math.prod(split)
            if need != cores:
                return (f"plan split_b = {split_b} x split {list(split)} is {need} cores, "
                        f"not cores = {cores}")  # fmt: skip
        return None


@irdl_attr_definition
class AttentionPlanAttr(WorkPlanAttr):
    """On a group, the cores on offer; on the kernel, also the tile spyre-tile chose:
    [heads, rows, keys] per tile, and the cores each unit's keys split over."""

    name = "dataflow.attention_plan"
    KIND = "attention"
    FIELDS = (("cores", "int", True), ("tile", "ints", False), ("split_kv", "int", False))
    cores: IntAttr
    tile: ArrayAttr[IntAttr] | NoneAttr
    split_kv: IntAttr | NoneAttr

    def __init__(self, cores: Attribute, tile: Attribute, split_kv: Attribute):
        super().__init__(cores, tile, split_kv)

    @classmethod
    def shape_problem(cls, values: dict[str, FieldValue]) -> str | None:
        tile = values.get("tile")
        if isinstance(tile, tuple) and len(tile) != 3:
            return f"plan tile must be [heads, rows, keys], got {list(tile)}"
        return None


@irdl_attr_definition
class KtirPlanAttr(WorkPlanAttr):
    """A kernel lowered from KTIR (lowering/ktir_to_dataflow.py): its launch grid."""

    name = "dataflow.ktir_plan"
    KIND = "ktir"
    FIELDS = (("grid", "ints", False),)
    grid: ArrayAttr[IntAttr] | NoneAttr

    def __init__(self, grid: Attribute):
        super().__init__(grid)


PLAN_ATTRS = (RowsPlanAttr, GatherPlanAttr, CopyPlanAttr, MatmulPlanAttr,
              AttentionPlanAttr, KtirPlanAttr)  # fmt: skip


def verify_plan(op: Operation, plan: WorkPlanAttr | None) -> None:
    """What the plan of `op` (a group, kernel or core program) needs of its op: cores
    and a matmul split within the module's card, row dims within the result rank."""
    if plan is None:
        return
    problem = None
    limit = card_of(op).cores
    cores = plan.core_count
    if isinstance(plan, MatmulPlanAttr) and plan.split_cores > limit:
        need = plan.split_cores
        batch = f"split_b = {plan.batch_split} x " if plan.batch_split else ""
        problem = (
            f"plan {batch}split {list(plan.split_mnk)} needs {need} cores; the card has {limit}"
        )
    elif cores is not None and cores > limit:
        problem = f"plan cores = {cores} is out of range [1, {limit}]"
    elif isinstance(plan, RowPlanBase):
        row_dims = plan.value("row_dims")
        rank = min((len(r.type.get_shape()) for r in op.results), default=0)  # type: ignore[attr-defined]
        if isinstance(row_dims, int) and row_dims > rank:
            problem = f"plan row_dims = {row_dims} exceeds the result rank {rank}"
    if problem:
        name = getattr(op, "sym_name", None)
        label = f" @{name.data}" if isinstance(name, StringAttr) else ""
        raise VerifyException(f"'{op.name}'{label}: {problem}")
