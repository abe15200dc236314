"""The data-movement ops of a `dataflow.kernel` body (the dialect: spyre_ir/dialects/
dataflow.py): whole-stick moves between LPDDR5 and LX (load, store, gather, scatter)
and the ring collectives (all-reduce, all-gather) between cores."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import (
    Attribute,
    Operation,
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
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects.dataflow_types import DdrType, LxType, dense, ints, parent_kernel
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.hardware import DEFAULT_CONFIG, card_of


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
    box = box_shape(tile.get_shape(), perm)
    if not masked and partial_stick(memory, box):
        per_stick = card_of(op).stick_bytes // memory.element_bytes
        raise VerifyException(
            f"'{op.name}': moves {box[memory.stick_dim]} elements along stick dim "
            f"{memory.stick_dim}, part of a stick of {per_stick} inside the tensor, "
            "without `masked`"
        )


def box_shape(tile_shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
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
            memory, box_shape(tile.get_shape(), tuple(perm or ()))
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
