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
    DenseArrayBase,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
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
    Region,
    SSAValue,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
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
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects.dataflow_moves import (
    GatherBase,
    GatherOp,
    LoadBase,
    LoadOp,
    RingAllgatherBase,
    RingAllgatherOp,
    RingAllreduceBase,
    RingAllreduceOp,
    ScatterBase,
    ScatterOp,
    StoreBase,
    StoreOp,
    box_shape,
    partial_stick,
    ring_group_check,
)
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
from spyre_ir.dialects.dataflow_types import (
    DdrType,
    LxType,
    dense,
    ints,
    parent_kernel,
)
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.hardware import card_of, unit_for

ACCUMULATING = {
    "spyre.matmul": "add",
    "spyre.sum": "add",
    "spyre.reduce_max": "max",
    "spyre.reduce_min": "min",
}
"""Tile ops that may add into their output (`accumulate`), and how they combine."""


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
# (the moves - load, store, gather, scatter, ring collectives - are in dataflow_moves.py)


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


DATAFLOW_OPS = (
    GroupOp, YieldOp, KernelOp, EndOp, AllocLxOp, SlotOp, LoadOp, StoreOp, GatherOp,
    ScatterOp, ComputeOp, PositionOp,
    RingAllreduceOp, RingAllgatherOp,
)  # fmt: skip

Dataflow = Dialect("dataflow", list(DATAFLOW_OPS), [LxType, DdrType, *PLAN_ATTRS])

__all__ = [
    "box_shape",
    "DdrType",
    "GatherBase",
    "GatherOp",
    "LoadBase",
    "LoadOp",
    "LxType",
    "RingAllgatherBase",
    "RingAllgatherOp",
    "RingAllreduceBase",
    "RingAllreduceOp",
    "ScatterBase",
    "ScatterOp",
    "StoreBase",
    "StoreOp",
    "dense",
    "ints",
    "parent_kernel",
    "partial_stick",
    "ring_group_check",
    "AttentionPlanAttr",
    "CopyPlanAttr",
    "GatherPlanAttr",
    "KtirPlanAttr",
    "MatmulPlanAttr",
    "RowPlanBase",
    "RowsPlanAttr",
    "WorkPlanAttr",
]  # fmt: skip  (the types, moves and plan attributes, re-exported with the dialect)


def new_kernel_block(inputs: Sequence[Attribute], outputs: Sequence[Attribute]) -> Block:
    return Block(arg_types=KernelOp.block_arg_types(inputs, outputs))
