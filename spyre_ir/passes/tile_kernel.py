"""The kernel-building toolkit shared by spyre-tile's emitters (rows, matmul, copy,
attention): a body builder for index arithmetic and dataflow ops, the kernel shell of a
planned group, and the zero-padded (optionally transposed) tile load."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import ELEMENT_BYTES
from spyre_ir.passes import row_model

INDEX = IndexType()


def elem_bytes(value: SSAValue) -> int:
    return ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(value))]


@dataclass
class BodyBuilder:
    """Emits index arithmetic and dataflow ops into a kernel body; constants and
    buffers go to the top of the kernel (`entry`), whatever loop is being built."""

    builder: Builder
    entry: Builder
    constants: dict[int, SSAValue] = field(default_factory=dict)

    def emit(self, op: Operation) -> Operation:
        self.builder.insert(op)
        return op

    def const(self, value: int) -> SSAValue:
        if value not in self.constants:
            op = arith.ConstantOp(IntegerAttr(value, INDEX))
            self.entry.insert(op)
            self.constants[value] = op.result
        return self.constants[value]

    # Index arithmetic is emitted whatever the values, so a kernel's IR has the same
    # shape for any core count (a folded "* 1" would make it depend on the split).
    def mul(self, a: SSAValue, b: int) -> SSAValue:
        return self.emit(arith.MuliOp(a, self.const(b))).results[0]

    def add(self, a: SSAValue, b: SSAValue | int) -> SSAValue:
        if isinstance(b, int):
            b = self.const(b)
        return self.emit(arith.AddiOp(a, b)).results[0]

    def sub(self, a: SSAValue, b: int) -> SSAValue:
        return self.emit(arith.SubiOp(a, self.const(b))).results[0]

    def div(self, a: SSAValue, b: int) -> SSAValue:
        return self.emit(arith.DivUIOp(a, self.const(b))).results[0]

    def rem(self, a: SSAValue, b: int) -> SSAValue:
        return self.emit(arith.RemUIOp(a, self.const(b))).results[0]

    def alloc(self, shape: Sequence[int], element: Attribute) -> SSAValue:
        op = dataflow.AllocLxOp(dataflow.LxType(shape, element))
        self.entry.insert(op)
        return op.buffer

    def loop(self, count: int) -> tuple[SSAValue, BodyBuilder]:
        """An scf.for over [0, count); returns its iv and a builder for its body."""
        body = Block(arg_types=[INDEX])
        self.emit(scf.ForOp(self.const(0), self.const(count), self.const(1), [], Region(body)))
        body.add_op(scf.YieldOp())
        inner = BodyBuilder(Builder(InsertPoint.before(body.last_op)), self.entry,
                            self.constants)  # fmt: skip
        return body.args[0], inner

    def _inside(self, body: Block) -> BodyBuilder:
        """A builder for a new scf.if region `body`, before the yield it ends with."""
        body.add_op(scf.YieldOp())
        return BodyBuilder(Builder(InsertPoint.before(body.last_op)), self.entry,
                           self.constants)  # fmt: skip

    def branch(self, cond: SSAValue) -> tuple[BodyBuilder, BodyBuilder]:
        """An scf.if on i1 `cond` with an else region; returns builders for both."""
        then, other = Block(), Block()
        self.emit(scf.IfOp(cond, [], Region(then), Region(other)))
        return self._inside(then), self._inside(other)

    def when_positive(self, value: SSAValue) -> BodyBuilder:
        """An scf.if running when index `value` > 0; returns a builder for its body."""
        return self.when(value, 0, "ugt")

    def when(self, value: SSAValue, other: int, predicate: str = "eq") -> BodyBuilder:
        """An scf.if (no else) running when index `value` `predicate` `other`; returns
        a builder for its body."""
        cond = self.emit(arith.CmpiOp(value, self.const(other), predicate)).results[0]
        body = Block()
        self.emit(scf.IfOp(cond, [], Region(body)))
        return self._inside(body)

    def compute(self, op: Operation, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue],
                offsets: Sequence[SSAValue] = (), accumulate: bool = False) -> None:  # fmt: skip
        """The tile form of the L1 op `op`, with its properties."""
        self.compute_named(op.name, inputs, outputs, dict(op.properties), offsets, accumulate)

    def compute_named(self, kind: str, inputs: Sequence[SSAValue],
                      outputs: Sequence[SSAValue], attrs: dict[str, Attribute] | None = None,
                      offsets: Sequence[SSAValue] = (), accumulate: bool = False) -> None:  # fmt: skip
        self.emit(dataflow.ComputeOp(kind, inputs, outputs, attrs, accumulate, offsets))


def split_index(b: BodyBuilder, index: SSAValue, sizes: Sequence[int]) -> list[SSAValue]:
    """Row-major multi-index of `index` over `sizes`; the outermost is not wrapped, so an
    index past the end lands outside the tensor (and is dropped by stores)."""
    if not sizes:
        return []
    out: list[SSAValue] = []
    for size in reversed(sizes[1:]):
        out.append(b.rem(index, size))
        index = b.div(index, size)
    out.append(index)
    return list(reversed(out))


@dataclass
class KernelShell:
    kernel: dataflow.KernelOp
    body: BodyBuilder
    memory: dict[SSAValue, SSAValue]  # group block arg or group result value -> ddr


def new_kernel(group: dataflow.GroupOp, cores: int, lx_bytes: int, plan: Attribute) -> KernelShell:
    in_types = [v.type for v in group.inputs]
    out_types = [r.type for r in group.outputs]
    block = dataflow.new_kernel_block(in_types, out_types)
    kernel = dataflow.KernelOp(
        group.sym_name.data, cores, group.inputs, out_types, Region(block),
        {"plan": plan, "lx_capacity": IntegerAttr(lx_bytes, i64)},
    )  # fmt: skip
    kernel.location = group.location
    block.add_op(dataflow.EndOp())
    builder = Builder(InsertPoint.before(block.last_op))
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    memory = dict(zip(group.body.block.args, block.args[1 : 1 + len(in_types)]))
    memory.update(zip(yielded.values, block.args[1 + len(in_types) :]))
    return KernelShell(kernel, BodyBuilder(builder, builder), memory)


def hoist_definitions(kernel: dataflow.KernelOp) -> None:
    """Constants and buffers, which take no operands, move to the top of the kernel so
    they dominate every loop that uses them."""
    block = kernel.body.block
    movable = [op for op in block.ops if isinstance(op, (arith.ConstantOp, dataflow.AllocLxOp))]
    for op in reversed(movable):
        op.detach()
        block.insert_op_before(op, block.first_op) if block.first_op else block.add_op(op)


def box_offsets(b: BodyBuilder, value: SSAValue, axes: row_model.RowAxes,
                row_offsets: Sequence[SSAValue]) -> list[SSAValue]:  # fmt: skip
    offsets = [b.const(0)] * len(spyre.shape_of(value))
    for dim, axis in enumerate(axes):
        if axis is not None:
            offsets[axis] = row_offsets[dim]
    return offsets


def transposed_load(memory: SSAValue, offsets: Sequence[SSAValue], dest: SSAValue,
                    transposed: bool) -> dataflow.LoadOp:  # fmt: skip
    """A zero-padded tile load; from a [.., N, K] operand read as [.., K, N] when
    `transposed` (the offsets are given in the tile's coordinates)."""
    if not transposed:
        return dataflow.LoadOp(memory, offsets, dest, pad=0.0)
    rank = len(offsets)
    perm = [*range(rank - 2), rank - 1, rank - 2]
    source_offsets = [offsets[p] for p in perm]
    return dataflow.LoadOp(memory, source_offsets, dest, perm=perm, pad=0.0)
