"""The `dataflow` dialect (level L2): kernels over N cores with explicit scratchpad.

Between kernels, tensors keep value semantics (builtin tensors with stick layouts).
Two region ops hold the work:

* `dataflow.group` - a fused set of `spyre` ops on tensors, not yet tiled (what
  `spyre-fuse` makes and `spyre-partition-cores` annotates with a plan);
* `dataflow.kernel` - one device compute operation, SPMD over `cores` cores. Its block
  receives the core id and one `!dataflow.ddr` memory per input and per result; its body
  allocates `!dataflow.lx` scratchpad buffers, loops over tiles (`scf.for`), moves whole
  sticks between LPDDR5 and LX (`dataflow.load` / `dataflow.store`), runs tile
  operations on a named unit (`dataflow.compute`) and combines partial results over the
  ring (`dataflow.ring_allreduce`).

A tile operation names the `spyre` op whose semantics it applies to its LX operands, so
the L2 interpreter and the L1 reference agree by construction.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    Float64Type,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
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
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects.dataflow_plan import (
    PLAN_ATTRS,
    AttentionPlanAttr,
    CopyPlanAttr,
    GatherPlanAttr,
    KtirPlanAttr,
    MatmulPlanAttr,
    RowPlanBase,
    RowsPlanAttr,
    WorkPlanAttr,
    verify_plan,
)
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.dialects.stick_layout import StickLayoutAttr
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES, card_of, unit_for

ACCUMULATING = {
    "spyre.matmul": "add",
    "spyre.sum": "add",
    "spyre.reduce_max": "max",
    "spyre.reduce_min": "min",
}
"""Tile ops that may add into their output (`accumulate`), and how they combine."""


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


# ---------------------------------------------------------------- graph-level ops


@irdl_op_definition
class GroupOp(IRDLOperation):
    """Fused tensor ops that will become one kernel; `plan` records the work division."""

    name = "dataflow.group"
    sym_name = prop_def(SymbolNameConstraint())
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    plan = opt_prop_def(WorkPlanAttr)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$sym_name `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body"
    )

    def __init__(
        self,
        name: str,
        inputs: Sequence[SSAValue],
        output_types: Sequence[Attribute],
        body: Region,
        plan: WorkPlanAttr | None = None,
    ):
        props: dict[str, Attribute] = {"sym_name": StringAttr(name)}
        if plan is not None:
            props["plan"] = plan
        super().__init__(
            operands=[inputs], result_types=[output_types], regions=[body], properties=props
        )

    def verify_(self) -> None:
        verify_plan(self, self.plan)
        block = self.body.block
        if [a.type for a in block.args] != [v.type for v in self.inputs]:
            raise VerifyException(
                f"'{self.name}' @{self.sym_name.data}: block arguments must match the inputs"
            )
        last = block.last_op
        if not isinstance(last, YieldOp) or [v.type for v in last.values] != [
            r.type for r in self.outputs
        ]:
            raise VerifyException(
                f"'{self.name}' @{self.sym_name.data}: must end in dataflow.yield of its "
                "result types"
            )


@irdl_op_definition
class YieldOp(IRDLOperation):
    name = "dataflow.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(GroupOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


class DeviceProgramBase(IRDLOperation):
    """What a kernel (L2) and a core program (L3) share: one device compute operation
    over `cores` cores (SPMD). Block arguments: the core id (index), then one
    `!dataflow.ddr` per input and one per result, in order. `lx_capacity` is the
    scratchpad per core it was built for; `lx_peak_bytes` is filled in by
    `spyre-allocate-scratchpad`."""

    sym_name = prop_def(SymbolNameConstraint())
    cores = prop_def(IntegerAttr[I64])
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    plan = opt_prop_def(WorkPlanAttr)
    lx_capacity = opt_prop_def(IntegerAttr[I64])
    lx_peak_bytes = opt_prop_def(IntegerAttr[I64])
    tied = opt_prop_def(DenseArrayBase[I64])
    """Per result, the input whose buffer it is (written in place), or -1 for a block of
    its own (see `tied_inputs`)."""
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$sym_name `cores` `(` $cores `)` `(` $inputs `)` attr-dict `:` "
        "functional-type($inputs, $outputs) $body"
    )

    def __init__(
        self,
        name: str,
        cores: int,
        inputs: Sequence[SSAValue],
        output_types: Sequence[Attribute],
        body: Region,
        properties: dict[str, Attribute] | None = None,
    ):
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "cores": IntegerAttr(cores, i64),
        }
        super().__init__(
            operands=[inputs],
            result_types=[output_types],
            regions=[body],
            properties=props | (properties or {}),
        )

    @staticmethod
    def block_arg_types(
        inputs: Sequence[Attribute], outputs: Sequence[Attribute]
    ) -> list[Attribute]:
        types: list[Attribute] = [IndexType()]
        for t in (*inputs, *outputs):
            assert isinstance(t, TensorType)
            types.append(DdrType.of_tensor(t))
        return types

    @property
    def capacity(self) -> int:
        if self.lx_capacity is None:
            return card_of(self).lx_bytes
        return self.lx_capacity.value.data

    @property
    def core_count(self) -> int:
        return self.cores.value.data

    @property
    def core_id(self) -> SSAValue:
        return self.body.block.args[0]

    @property
    def input_memories(self) -> tuple[SSAValue, ...]:
        return self.body.block.args[1 : 1 + len(self.inputs)]

    @property
    def output_memories(self) -> tuple[SSAValue, ...]:
        return self.body.block.args[1 + len(self.inputs) :]

    def tied_inputs(self) -> dict[int, int]:
        """Result index -> index of the input whose buffer it is. A tied result is no new
        memory: its `!dataflow.ddr` argument is the input's buffer, which the program
        updates in place (reading it first where it needs the old values), and the
        ops after the program read that buffer as the result."""
        return {o: i for o, i in enumerate(ints(self.tied)) if i >= 0}

    def verify_tied(self, where: str) -> None:
        """A tied result has its input's type exactly; an input is tied at most once and
        passed once; nothing after the program reads the input's old value (it is
        overwritten) and no other program writes it in place."""
        if self.tied is None:
            return
        tied = ints(self.tied)
        if len(tied) != len(self.outputs):
            raise VerifyException(
                f"{where}: tied names {len(tied)} results, the program has {len(self.outputs)}"
            )
        seen: set[int] = set()
        for o, i in enumerate(tied):
            if i < 0:
                continue
            if i >= len(self.inputs):
                raise VerifyException(
                    f"{where}: result {o} is tied to input {i}, which does not exist"
                )
            if i in seen:
                raise VerifyException(f"{where}: input {i} is tied to two results")
            seen.add(i)
            value, result = self.inputs[i], self.outputs[o]
            if value.type != result.type:
                raise VerifyException(
                    f"{where}: result {o} ({result.type}) is tied to input {i} of another "
                    f"type ({value.type})"
                )
            if sum(1 for v in self.inputs if v is value) > 1:
                raise VerifyException(
                    f"{where}: input {i}, tied to result {o}, is passed more than once"
                )
            self._verify_sole_writer(where, value, o, i)

    def _verify_sole_writer(self, where: str, value: SSAValue, o: int, i: int) -> None:
        block = self.parent_block()
        if block is None:
            return
        for use in value.uses:
            user = use.operation
            if user is self:
                continue
            while user is not None and user.parent_block() is not block:
                user = user.parent_op()
            if user is None:
                continue
            if isinstance(user, DeviceProgramBase) and use.index in user.tied_inputs().values():
                raise VerifyException(
                    f"{where}: input {i} is also written in place by @{user.sym_name.data}"
                )
            if block.get_operation_index(user) > block.get_operation_index(self):
                raise VerifyException(
                    f"{where}: input {i} is written in place (tied to result {o}), but "
                    f"{user.name} reads its old value afterwards"
                )

    def verify_scratchpad(self, where: str) -> None:
        """LX use per core within capacity: the end of the highest buffer once every
        buffer has its offset; before that only the largest buffer is known to be
        needed (buffers never live together may share bytes)."""
        allocs = [
            op
            for op in self.walk()
            if isinstance(op, AllocLxOp)
            and isinstance(op.buffer.type, LxType)
            and isinstance(op.offset, IntegerAttr | None)
        ]  # fmt: skip  (a malformed buffer reports itself)
        if any(a.offset is None for a in allocs):
            need = max((a.buffer.type.nbytes for a in allocs), default=0)
        else:
            need = max((a.offset_value + a.buffer.type.nbytes for a in allocs), default=0)
        if need > self.capacity:
            raise VerifyException(
                f"{where}: needs {need} bytes of LX per core, but a core has {self.capacity}"
            )


@irdl_op_definition
class KernelOp(DeviceProgramBase):
    """One device compute operation over `cores` cores, as tiled dataflow (L2)."""

    name = "dataflow.kernel"

    def verify_(self) -> None:
        where = f"'{self.name}' @{self.sym_name.data}"
        verify_plan(self, self.plan)
        if self.core_count < 1:
            raise VerifyException(f"{where}: needs at least one core")
        card_cores = card_of(self).cores
        if self.core_count > card_cores:
            raise VerifyException(
                f"{where}: runs on {self.core_count} cores; the card has {card_cores}"
            )
        want = self.block_arg_types([v.type for v in self.inputs], [r.type for r in self.outputs])
        got = [a.type for a in self.body.block.args]
        if got != want:
            raise VerifyException(
                f"{where}: block arguments must be (index, ddr per input and result); "
                f"expected {', '.join(map(str, want))}"
            )
        if not isinstance(self.body.block.last_op, EndOp):
            raise VerifyException(f"{where}: must end in dataflow.end")
        self.verify_tied(where)
        self.verify_scratchpad(where)


@irdl_op_definition
class EndOp(IRDLOperation):
    name = "dataflow.end"
    traits = traits_def(IsTerminator(), HasParent(KernelOp))
    assembly_format = "attr-dict"


# ---------------------------------------------------------------- kernel-body ops


@irdl_op_definition
class AllocLxOp(IRDLOperation):
    """A scratchpad buffer of the enclosing kernel; `offset` (bytes, 128-aligned) is set
    by `spyre-allocate-scratchpad`."""

    name = "dataflow.alloc_lx"
    offset = opt_prop_def(IntegerAttr[I64])
    buffer = result_def(LxType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($buffer)"

    def __init__(self, buffer_type: LxType, offset: int | None = None):
        props = {} if offset is None else {"offset": IntegerAttr(offset, i64)}
        super().__init__(result_types=[buffer_type], properties=props)

    @property
    def offset_value(self) -> int:
        assert self.offset is not None
        return self.offset.value.data

    def verify_(self) -> None:
        kernel = parent_kernel(self)
        if kernel is None:
            raise VerifyException(f"'{self.name}' must be inside a dataflow.kernel")
        if self.offset is None:
            return
        stick = card_of(self).stick_bytes
        if self.offset_value % stick:
            raise VerifyException(
                f"'{self.name}': offset {self.offset_value} is not {stick}-byte aligned"
            )
        end = self.offset_value + self.buffer.type.nbytes
        if end > kernel.capacity:
            raise VerifyException(
                f"'{self.name}': buffer ends at byte {end}, past the {kernel.capacity} bytes of LX"
            )


@irdl_op_definition
class SlotOp(IRDLOperation):
    """Slot `index` of a multi-buffer (leading dim = number of copies), as a buffer."""

    name = "dataflow.slot"
    buffer = operand_def(LxType)
    index = operand_def(IndexType)
    result = result_def(LxType)
    traits = traits_def(Pure())
    assembly_format = "$buffer `[` $index `]` attr-dict `:` type($buffer) `->` type($result)"

    def __init__(self, buffer: SSAValue, index: SSAValue):
        t = buffer.type
        assert isinstance(t, LxType)
        super().__init__(
            operands=[buffer, index], result_types=[LxType(t.get_shape()[1:], t.element_type)]
        )

    def verify_(self) -> None:
        outer, inner = self.buffer.type, self.result.type
        assert isinstance(outer, LxType) and isinstance(inner, LxType)
        if outer.get_shape()[1:] != inner.get_shape() or outer.element_type != inner.element_type:
            raise VerifyException(f"'{self.name}': a slot drops exactly the leading dim")


def partial_stick(memory: DdrType, extents: Sequence[int]) -> bool:
    """Whether a box of `extents` (DDR coordinates) covers part of a stick inside the
    tensor: its extent along the stick dim is not whole sticks and does not reach the
    tensor's end. Such a box moves the sticks it touches; a store of it writes only
    its own elements (a masked store)."""
    if not extents:
        return False
    stick_dim = memory.stick_dim
    per_stick = DEFAULT_CONFIG.stick_bytes // memory.element_bytes
    extent = extents[stick_dim]
    return bool(extent % per_stick) and extent < memory.get_shape()[stick_dim]


def _verify_box(op: Operation, memory: DdrType, tile: LxType, perm: tuple[int, ...],
                masked: bool) -> None:  # fmt: skip
    """The LX tile is a box of the DDR tensor; unless `masked`, whole sticks along its
    stick dim (a partial stick only at the tensor's end)."""
    rank = len(memory.get_shape())
    if len(tile.get_shape()) != rank:
        raise VerifyException(
            f"'{op.name}': tile rank {len(tile.get_shape())} differs from tensor rank {rank}"
        )
    if memory.element_type != tile.element_type:
        raise VerifyException(
            f"'{op.name}': element types differ ({memory.element_type} vs {tile.element_type})"
        )
    if perm and sorted(perm) != list(range(rank)):
        raise VerifyException(f"'{op.name}': perm {list(perm)} is not a permutation")
    if rank == 0:
        return
    box = _box_shape(tile.get_shape(), perm)
    if not masked and partial_stick(memory, box):
        per_stick = card_of(op).stick_bytes // memory.element_bytes
        raise VerifyException(
            f"'{op.name}': moves {box[memory.stick_dim]} elements along stick dim "
            f"{memory.stick_dim}, part of a stick of {per_stick} inside the tensor, "
            "without `masked`"
        )


def _box_shape(tile_shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    """The box in DDR coordinates that a (possibly transposed) tile covers."""
    if not perm:
        return tuple(tile_shape)
    box = [0] * len(perm)
    for tile_dim, memory_dim in enumerate(perm):
        box[memory_dim] = tile_shape[tile_dim]
    return tuple(box)


class LoadBase(IRDLOperation):
    """LPDDR5 -> LX: the box of `source` at `offsets` (host coordinates) with the
    destination's extent, transposed by `perm` when given (tile dim i is source dim
    perm[i]). Elements past the tensor's end read as `pad` (the padding fill). A box
    that covers part of a stick inside the tensor is `masked`: the sticks it touches
    are read and only its own elements kept (the constructor marks it so)."""

    source = operand_def(DdrType)
    offsets = var_operand_def(IndexType)
    dest = operand_def(LxType)
    perm = opt_prop_def(DenseArrayBase[I64])
    pad = opt_prop_def(FloatAttr[Float64Type])
    masked = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$source `[` $offsets `]` `into` $dest attr-dict `:` type($source) `,` type($dest)"
    )

    def __init__(
        self,
        source: SSAValue,
        offsets: Sequence[SSAValue],
        dest: SSAValue,
        perm: Sequence[int] | None = None,
        pad: float | None = None,
    ):
        props: dict[str, Attribute] = {}
        if perm is not None:
            props["perm"] = dense(perm)
        if pad is not None:
            props["pad"] = FloatAttr(pad, Float64Type())
        memory, tile = source.type, dest.type
        assert isinstance(memory, DdrType) and isinstance(tile, LxType)
        if len(tile.get_shape()) == len(memory.get_shape()) and partial_stick(
            memory, _box_shape(tile.get_shape(), tuple(perm or ()))
        ):
            props["masked"] = UnitAttr()
        super().__init__(operands=[source, offsets, dest], properties=props)

    @property
    def pad_value(self) -> float:
        return 0.0 if self.pad is None else self.pad.value.data

    def verify_(self) -> None:
        memory, tile = self.source.type, self.dest.type
        assert isinstance(memory, DdrType) and isinstance(tile, LxType)
        if len(self.offsets) != len(memory.get_shape()):
            raise VerifyException(f"'{self.name}': needs one offset per tensor dim")
        _verify_box(self, memory, tile, ints(self.perm), masked=self.masked is not None)


@irdl_op_definition
class LoadOp(LoadBase):
    name = "dataflow.load"


class StoreBase(IRDLOperation):
    """LX -> LPDDR5: `source` written at `offsets`; the part past the tensor's end is
    dropped, so edge tiles may overhang. A tile that covers part of a stick inside the
    tensor is `masked`: only its own elements of the sticks it touches are written
    (another core may own the rest of the stick). The constructor marks it so."""

    source = operand_def(LxType)
    dest = operand_def(DdrType)
    offsets = var_operand_def(IndexType)
    masked = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$source `into` $dest `[` $offsets `]` attr-dict `:` type($source) `,` type($dest)"
    )

    def __init__(self, source: SSAValue, dest: SSAValue, offsets: Sequence[SSAValue]):
        memory, tile = dest.type, source.type
        assert isinstance(memory, DdrType) and isinstance(tile, LxType)
        props: dict[str, Attribute] = {}
        if len(tile.get_shape()) == len(memory.get_shape()) and partial_stick(
            memory, tile.get_shape()
        ):
            props["masked"] = UnitAttr()
        super().__init__(operands=[source, dest, offsets], properties=props)

    def verify_(self) -> None:
        memory, tile = self.dest.type, self.source.type
        assert isinstance(memory, DdrType) and isinstance(tile, LxType)
        if len(self.offsets) != len(memory.get_shape()):
            raise VerifyException(f"'{self.name}': needs one offset per tensor dim")
        _verify_box(self, memory, tile, (), masked=self.masked is not None)


@irdl_op_definition
class StoreOp(StoreBase):
    name = "dataflow.store"


class GatherBase(IRDLOperation):
    """LPDDR5 -> LX by index: rows of `table` picked by the integer buffer `indices`
    (an embedding lookup; the table may be far larger than LX)."""

    table = operand_def(DdrType)
    indices = operand_def(LxType)
    dest = operand_def(LxType)
    assembly_format = (
        "$table `[` $indices `]` `into` $dest attr-dict `:` type($table) `,` "
        "type($indices) `,` type($dest)"
    )

    def __init__(self, table: SSAValue, indices: SSAValue, dest: SSAValue):
        super().__init__(operands=[table, indices, dest])

    def verify_(self) -> None:
        table, indices, dest = self.table.type, self.indices.type, self.dest.type
        assert isinstance(table, DdrType)
        assert isinstance(indices, LxType) and isinstance(dest, LxType)
        if element_type_name(indices.element_type) not in ("i32", "i64"):
            raise VerifyException(f"'{self.name}': indices must be i32 or i64")
        want = (*indices.get_shape(), *table.get_shape()[1:])
        if dest.get_shape() != want or dest.element_type != table.element_type:
            raise VerifyException(
                f"'{self.name}': destination should be {list(want)} of {table.element_type}"
            )


@irdl_op_definition
class GatherOp(GatherBase):
    name = "dataflow.gather"


class ScatterBase(IRDLOperation):
    """LX -> LPDDR5 by index, gather's dual: the rows of `source` written to the rows of
    `dest` that the integer buffer `indices` names (a paged KV-cache write). A row named
    twice keeps the later write (indices in row-major order).

    With `dims = k` (default 1) an index names a position of `dest`'s first k dims
    taken together (row-major, the flat position of a KTIR element scatter: k = the
    rank, each row one element): the rows are `dest.shape[k:]`. A row that covers part
    of a stick is `masked` (only its own elements of the stick are written, as a masked
    store's); the constructor marks it so."""

    source = operand_def(LxType)
    indices = operand_def(LxType)
    dest = operand_def(DdrType)
    dims = opt_prop_def(IntegerAttr[I64])
    masked = opt_prop_def(UnitAttr)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = (
        "$source `into` $dest `[` $indices `]` attr-dict `:` type($source) `,` "
        "type($indices) `,` type($dest)"
    )

    def __init__(self, source: SSAValue, indices: SSAValue, dest: SSAValue, dims: int = 1):
        props: dict[str, Attribute] = {}
        if dims != 1:
            props["dims"] = IntegerAttr(dims, 64)
        memory = dest.type
        assert isinstance(memory, DdrType)
        if _partial_rows(memory, dims):
            props["masked"] = UnitAttr()
        super().__init__(operands=[source, indices, dest], properties=props)

    @property
    def index_dims(self) -> int:
        """How many leading dims of `dest` an index names (1: rows of dim 0)."""
        return 1 if self.dims is None else self.dims.value.data

    def verify_(self) -> None:
        table, indices, source = self.dest.type, self.indices.type, self.source.type
        assert isinstance(table, DdrType)
        assert isinstance(indices, LxType) and isinstance(source, LxType)
        if element_type_name(indices.element_type) not in ("i32", "i64"):
            raise VerifyException(f"'{self.name}': indices must be i32 or i64")
        k = self.index_dims
        if not 1 <= k <= len(table.get_shape()):
            raise VerifyException(
                f"'{self.name}': dims = {k} must name 1 to {len(table.get_shape())} leading "
                "dims of the destination"
            )
        want = (*indices.get_shape(), *table.get_shape()[k:])
        if source.get_shape() != want or source.element_type != table.element_type:
            raise VerifyException(
                f"'{self.name}': source should be {list(want)} of {table.element_type}"
            )
        if _partial_rows(table, k) and self.masked is None:
            raise VerifyException(
                f"'{self.name}': its rows {list(table.get_shape()[k:])} cover part of a "
                "stick of the destination, so it must be masked"
            )


def _partial_rows(table: DdrType, dims: int) -> bool:
    """Whether one row of `table` past its first `dims` dims covers part of a stick."""
    shape = table.get_shape()
    return partial_stick(table, (*([1] * dims), *shape[dims:]))


@irdl_op_definition
class ScatterOp(ScatterBase):
    name = "dataflow.scatter"


class ComputeBase(IRDLOperation):
    """A tile operation: the `spyre` op `kind` applied to LX buffers on one unit.

    `attrs` holds that op's properties (dims, perm, eps ...). With `accumulate`, the
    result is combined into the output (add for matmul/sum, max/min for reductions).
    `offsets` give the tile's position for position-dependent ops (iota)."""

    kind = prop_def(StringAttr)
    unit = prop_def(StringAttr)
    inputs = var_operand_def(LxType)
    outputs = var_operand_def(LxType)
    offsets = var_operand_def(IndexType)
    attrs = opt_prop_def(DictionaryAttr)
    accumulate = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True), ParsePropInAttrDict())
    assembly_format = (
        "$kind `on` $unit `(` $inputs `)` `->` `(` $outputs `)` "
        "(`offsets` `[` $offsets^ `]`)? attr-dict `:` "
        "functional-type($inputs, $outputs)"
    )

    def __init__(
        self,
        kind: str,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue],
        attrs: dict[str, Attribute] | None = None,
        accumulate: bool = False,
        offsets: Sequence[SSAValue] = (),
    ):
        props: dict[str, Attribute] = {
            "kind": StringAttr(kind),
            "unit": StringAttr(unit_for(kind)),
        }
        if attrs:
            props["attrs"] = DictionaryAttr(attrs)
        if accumulate:
            props["accumulate"] = UnitAttr()
        super().__init__(operands=[inputs, outputs, offsets], properties=props)

    def op_attrs(self) -> dict[str, Attribute]:
        return {} if self.attrs is None else dict(self.attrs.data)

    def unit_allowed(self) -> bool:
        """L3 subclasses also check the unit program they stand in."""
        return True

    def verify_(self) -> None:
        kind = self.kind.data
        if kind not in _spyre_ops_by_name():
            raise VerifyException(f"'{self.name}': '{kind}' is not a spyre op")
        if self.unit.data != unit_for(kind) or not self.unit_allowed():
            raise VerifyException(
                f"'{self.name}': {kind} runs on {unit_for(kind)}, not {self.unit.data}"
            )
        if self.accumulate is not None and kind not in ACCUMULATING:
            raise VerifyException(f"'{self.name}': {kind} cannot accumulate")
        if not self.outputs:
            raise VerifyException(f"'{self.name}' needs an output buffer")
        self.verify_shapes(kind)

    def verify_shapes(self, kind: str) -> None:
        """Check the buffers against the spyre op's own verifier, on tensors of the same
        shapes, so a tile op obeys exactly the rules of the op it names."""
        op_class = _spyre_ops_by_name()[kind]
        as_tensor = [
            TensorType(t.element_type, t.get_shape())
            for t in (v.type for v in (*self.inputs, *self.outputs))
            if isinstance(t, LxType)
        ]
        if kind in ACCUMULATING and self.accumulate is not None and as_tensor[0:1]:
            # The PE array accumulates in f32: check the shapes at the inputs' type.
            elt = as_tensor[0].element_type
            as_tensor[len(self.inputs) :] = [
                TensorType(elt, t.get_shape()) for t in as_tensor[len(self.inputs) :]
            ]
        try:
            _verify_tile_op(op_class, tuple(as_tensor), len(self.inputs), self.attrs)
        except VerifyException as e:
            raise VerifyException(f"'{self.name}' {e}") from None


@functools.cache
def _spyre_ops_by_name() -> dict[str, type[Operation]]:
    """The spyre ops by name (built once: every tile op's verifier looks its kind up)."""
    from spyre_ir.dialects.spyre import SPYRE_OPS

    return {op.name: op for op in SPYRE_OPS}


@functools.lru_cache(maxsize=4096)
def _verify_tile_op(op_class: type[Operation], types: tuple[TensorType, ...], inputs: int,
                    attrs: DictionaryAttr | None) -> None:  # fmt: skip
    """Run `op_class`'s verifier on a probe op of these operand and result types. The
    answer depends on nothing else, so each signature is checked once (the tile ops of a
    long kernel repeat a few signatures; building a probe op costs a millisecond)."""
    block = Block(arg_types=types[:inputs])
    probe = op_class.create(operands=list(block.args), result_types=types[inputs:],
                            properties={} if attrs is None else dict(attrs.data))  # fmt: skip
    probe.verify_()


@irdl_op_definition
class ComputeOp(ComputeBase):
    name = "dataflow.compute"


@irdl_op_definition
class PositionOp(IRDLOperation):
    """A runtime scalar: element `index` of the 1-D integer input memory `source` (the
    positions of a KV cache write), as an index for the offsets of later moves. The host
    reads it when it patches the launch's addresses and writes it into the program's
    scalar table, so no unit loads it: the LS unit adds it to a store's address, which
    then lands at `base + position * stride` of the destination. A position outside
    `[0, bound)` is an error (the launch stops), except that with `wrap` one in
    `[-bound, 0)` counts from the end (index_put's rule; index_copy's refuses it).
    `dim` (of the destination) is for the message."""

    name = "dataflow.position"
    source = operand_def(DdrType)
    index = operand_def(IndexType)
    dim = prop_def(IntegerAttr[I64])
    bound = prop_def(IntegerAttr[I64])
    wrap = opt_prop_def(UnitAttr)
    result = result_def(IndexType)
    traits = traits_def(Pure())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$source `[` $index `]` `dim` $dim `bound` $bound attr-dict `:` type($source)"

    def __init__(self, source: SSAValue, index: SSAValue, dim: int, bound: int, wrap: bool):
        props: dict[str, Attribute] = {
            "dim": IntegerAttr(dim, i64),
            "bound": IntegerAttr(bound, i64),
        }
        if wrap:
            props["wrap"] = UnitAttr()
        super().__init__(operands=[source, index], result_types=[IndexType()], properties=props)

    def verify_(self) -> None:
        memory = self.source.type
        assert isinstance(memory, DdrType)
        if len(memory.get_shape()) != 1 or element_type_name(memory.element_type) not in (
            "i32",
            "i64",
        ):
            raise VerifyException(f"'{self.name}': positions come from a 1-D i32 or i64 memory")
        if self.bound.value.data < 1:
            raise VerifyException(f"'{self.name}': bound must be >= 1")
        kernel = parent_kernel(self)
        if kernel is None:
            raise VerifyException(f"'{self.name}' must be inside a dataflow.kernel")
        if self.source not in kernel.input_memories:
            raise VerifyException(
                f"'{self.name}': the host patches positions of a program input only"
            )


def ring_group_check(op: Operation, size: int, stride: int) -> None:
    """A ring group is `size` cores `stride` apart; the groups must tile the kernel."""
    kernel = parent_kernel(op)
    if kernel is None:
        raise VerifyException(f"'{op.name}' must be inside a dataflow.kernel")
    cores = kernel.core_count
    if size < 1 or stride < 1 or cores % (size * stride):
        raise VerifyException(
            f"'{op.name}': groups of {size} cores {stride} apart do not tile {cores} cores"
        )


class RingAllreduceBase(IRDLOperation):
    """Combine `buffer` over groups of `group_size` cores, `stride` apart (consecutive by
    default), on the ring; every core of a group ends with the combined value (split-K
    matmul, cross-core reduction)."""

    buffer = operand_def(LxType)
    kind = prop_def(StringAttr)
    group_size = prop_def(IntegerAttr[I64])
    stride = opt_prop_def(IntegerAttr[I64])
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue, kind: str, group_size: int, stride: int = 1):
        props = {"kind": StringAttr(kind), "group_size": IntegerAttr(group_size, i64)}
        if stride != 1:
            props["stride"] = IntegerAttr(stride, i64)
        super().__init__(operands=[buffer], properties=props)

    @property
    def stride_value(self) -> int:
        return 1 if self.stride is None else self.stride.value.data

    def verify_(self) -> None:
        if self.kind.data not in ("add", "max", "min"):
            raise VerifyException(f"'{self.name}': kind must be add, max or min")
        ring_group_check(self, self.group_size.value.data, self.stride_value)


class RingAllgatherBase(IRDLOperation):
    """Every core of a group (`group_size` cores `stride` apart) contributes `part`; all
    of them receive the parts stacked along dim 0 in group order into `full`. Used to
    share an A tile loaded once (in slices) by the cores that split N."""

    part = operand_def(LxType)
    full = operand_def(LxType)
    group_size = prop_def(IntegerAttr[I64])
    stride = opt_prop_def(IntegerAttr[I64])
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$part `into` $full attr-dict `:` type($part) `,` type($full)"

    def __init__(self, part: SSAValue, full: SSAValue, group_size: int, stride: int = 1):
        props = {"group_size": IntegerAttr(group_size, i64)}
        if stride != 1:
            props["stride"] = IntegerAttr(stride, i64)
        super().__init__(operands=[part, full], properties=props)

    @property
    def stride_value(self) -> int:
        return 1 if self.stride is None else self.stride.value.data

    def verify_(self) -> None:
        size = self.group_size.value.data
        ring_group_check(self, size, self.stride_value)
        part, full = self.part.type, self.full.type
        assert isinstance(part, LxType) and isinstance(full, LxType)
        p, f = part.get_shape(), full.get_shape()
        if not p or f != (p[0] * size, *p[1:]) or part.element_type != full.element_type:
            raise VerifyException(
                f"'{self.name}': {size} parts of {list(p)} stack to "
                f"{[p[0] * size, *p[1:]] if p else []}, not {list(f)}"
            )


@irdl_op_definition
class RingAllreduceOp(RingAllreduceBase):
    name = "dataflow.ring_allreduce"


@irdl_op_definition
class RingAllgatherOp(RingAllgatherBase):
    name = "dataflow.ring_allgather"


DATAFLOW_OPS = (
    GroupOp, YieldOp, KernelOp, EndOp, AllocLxOp, SlotOp, LoadOp, StoreOp, GatherOp,
    ScatterOp, ComputeOp, PositionOp,
    RingAllreduceOp, RingAllgatherOp,
)  # fmt: skip

Dataflow = Dialect("dataflow", list(DATAFLOW_OPS), [LxType, DdrType, *PLAN_ATTRS])

__all__ = [
    "AttentionPlanAttr",
    "CopyPlanAttr",
    "GatherPlanAttr",
    "KtirPlanAttr",
    "MatmulPlanAttr",
    "RowPlanBase",
    "RowsPlanAttr",
    "WorkPlanAttr",
]  # fmt: skip  (the plan attributes, re-exported with the dialect)


def new_kernel_block(inputs: Sequence[Attribute], outputs: Sequence[Attribute]) -> Block:
    return Block(arg_types=KernelOp.block_arg_types(inputs, outputs))
