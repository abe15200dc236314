"""The L2 kernel machine: one run of a `dataflow.kernel` (or of a `core.program`, for
the simulator), every value vectorised over the cores (semantics: the docstring of
`spyre_ir.interp.dataflow`). This module is the machine's public interface; a driver
such as the simulator (`spyre_ir/sim/engine.py`) composes with it instead of
subclassing it:

    machine = KernelMachine(interp, op, body=drive, kind="program")
    outputs = machine.run(inputs)   # builds the memories, then drive(block, memories)

* `interp`: the `DataflowInterpreter` whose numerics (`halves`) and caches it uses;
  `body`: what runs the kernel's body block on `[core ids, *input memories, *output
  memories]` (by default the machine walks the block itself); `kind` names the op in
  errors ("kernel", "program").
* `machine.values`: the SSA environment (value -> per-core array, `LxBuffer`,
  `DdrMemory`, ...); `machine.execute(op, operands)` runs one op's numerics and
  returns its results, `machine.handler(op)` gives the function that does it (called
  as `handler(op, operands)`, or unbound as `function(machine, op, operands)` -
  what a replay calls); `machine.uniform(value, what)` is a value every core agrees on
  (an `InterpreterError` naming `what` otherwise); `machine.error(op, message)` a
  `LocatedError` naming the op and the kernel.
* `machine.box_log` (a list: each executed move appends the boxes it cut) and
  `machine.box_feed` (an iterator: moves take their boxes from it instead of cutting
  them) let a driver record a run and replay it without the index arithmetic.
* `machine.cores`, `machine.check` (the race checks are on), `machine.op`.
* `LxBuffer` (`.root`: its `LxRoot`, whose `.array` is [cores, *shape]; `.index`: the
  per-core slot indices; `.shape`), `DdrMemory` (a tensor in LPDDR5), `signed` and
  `index_width` (index values wrapped to a bit width) are what the values hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    TensorType,
)
from xdsl.ir import Block, Operation, SSAValue

from spyre_ir.dialects import dataflow as D
from spyre_ir.interp import versions
from spyre_ir.interp.dlfloat16 import decode, encode
from spyre_ir.interp.halves import converted
from spyre_ir.interp.index_arith import (
    CMPI,
    CMPI_SCALAR,
    INT_BINARY,
    INT_SCALAR,
    as_int,
    index_width,
    scalar_pair,
    signed,
)
from spyre_ir.interp.kernel_memory import (
    FLOAT_NAMES,
    Box,
    DdrMemory,
    LxBuffer,
    LxRoot,
    differ,
    fill_value,
    held_dtype,
    round_held,
    uniform_value,
)
from spyre_ir.interp.tensor import InterpreterError, op_label
from spyre_ir.interp.tile_ops import TileOp

if TYPE_CHECKING:
    from spyre_ir.interp.dataflow import DataflowInterpreter

__all__ = [
    "DdrMemory",
    "KernelMachine",
    "LocatedError",
    "LxBuffer",
    "LxRoot",
    "index_width",
    "signed",
]

# ---------------------------------------------------------------- kernels


class LocatedError(InterpreterError):
    """An error already naming the kernel op it comes from."""


class KernelMachine:
    """One run of a `dataflow.kernel`, vectorised over its cores."""

    def __init__(
        self,
        interp: DataflowInterpreter,
        op: Operation,
        *,
        body: Callable[[Block, list], None] | None = None,
        kind: str = "kernel",
    ):
        self.interp, self.op, self.body, self.kind = interp, op, body, kind
        self.cores = op.core_count
        self.check = interp.check_races
        self.values: dict[SSAValue, object] = {}
        self.widths: dict[Operation, int] = {}  # index op -> bit width of its operands
        # index op -> (its INT_SCALAR entry, None off 64 bits; its operands' bit width)
        self.int_fast: dict[Operation, tuple[Callable | None, int]] = {}
        # The boxes the current instruction cuts: logged for a recording, or fed back
        # by a replay (spyre_ir.sim.replay), which then skips making them.
        self.box_log: list[Box] | None = None
        self.box_feed: Iterator[Box] | None = None
        # (box, source, decode, perm) -> the decoded tile kept between runs, or None (the
        # source is not declared, `spyre_ir.interp.versions`): set by a replay, whose
        # boxes are the recording's (`spyre_ir.sim.replay.cached_tile`).
        self.tile_cache: (
            Callable[[Box, np.ndarray, Callable[[], np.ndarray], tuple], np.ndarray | None] | None
        ) = None

    # -------------------------------------------------------- driver

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        op, block = self.op, self.op.body.block
        name = op.sym_name.data
        memories: list[object] = [np.arange(self.cores, dtype=np.int64)]
        for i, (array, arg) in enumerate(zip(inputs, op.input_memories)):
            memories.append(self._ddr(array, arg, False, f"input {i} of @{name}"))
        outputs = []
        initial = self.interp.output_contents.get(name)
        if initial is not None and len(initial) != len(op.outputs):
            raise InterpreterError(
                f"@{name} has {len(op.outputs)} outputs, given contents of {len(initial)}"
            )
        tied = op.tied_inputs()
        for i, (result, arg) in enumerate(zip(op.outputs, op.output_memories)):
            t = result.type
            assert isinstance(t, TensorType)
            label = f"output {i} of @{name}"
            if i in tied:  # the input's buffer itself, updated in place
                source = memories[1 + tied[i]]
                memory = self._ddr(source.data, arg, True, label, in_place=True)
                if memory.data is not source.data:  # copied in: it was no buffer
                    self.interp.tied_copy_bytes += memory.data.nbytes
                source.array = source.data = memory.data  # the input reads what is written
                outputs.append(memory)
                continue
            zeros = np.zeros(tuple(t.get_shape()), self.interp.storage(t.element_type))
            outputs.append(self._ddr(zeros, arg, True, label))
            if initial is not None:  # the memory's contents before the kernel runs
                self.interp.take_argument_into(outputs[-1].data, initial[i], t, label)
        memories += outputs
        if self.body is None:
            self.run_block(block, memories)
        else:
            self.body(block, memories)
        results = []
        for i, memory in enumerate(outputs):
            if memory.writers is not None and initial is None and i not in tied:
                self._check_written(memory)  # a tied result keeps what is not written
            results.append(memory.data)  # a view: the caller copies what it keeps
        # The environment holds every memory of the run (the tensors): a driver that
        # keeps this machine (the simulator's programs, in reference cycles) would keep
        # them alive until the next full garbage collection.
        self.values.clear()
        return results

    def _ddr(self, array: np.ndarray, arg: SSAValue, writable: bool, label: str,
             in_place: bool = False) -> DdrMemory:  # fmt: skip
        if arg.name_hint:
            label += f" (%{arg.name_hint})"
        t = arg.type
        assert isinstance(t, D.DdrType)
        checked = self.cores if self.check else None
        name = self.interp.held_name(t.element_type)
        if in_place:
            return DdrMemory.in_place(array, name, label, checked)
        return DdrMemory(array, name, writable, label, checked)

    def run_block(self, block: Block, args: Sequence[object]) -> list:
        values = self.values
        values.update(zip(block.args, args))
        for op in block.ops:
            operands = [values[v] for v in op.operands]
            if isinstance(op, (scf.YieldOp, D.EndOp)):
                return operands
            handler = self.handler(op)
            try:
                results = handler(op, operands)
            except LocatedError:  # from an op nested in this one
                raise
            except (InterpreterError, ValueError, TypeError, IndexError) as error:
                raise self.error(op, str(error)) from None
            values.update(zip(op.results, results))
        return []

    def handler(self, op: Operation) -> Callable[[Operation, list], list]:
        cls = type(op)
        name = _HANDLERS.get(cls)
        if name is None:
            base = next((b for b in cls.__mro__ if b in _HANDLERS), None)
            if base is None:
                raise self.error(op, "the dataflow interpreter cannot run this op in a kernel")
            name = _HANDLERS[cls] = _HANDLERS[base]
        return getattr(self, name)

    def error(self, op: Operation, message: str) -> InterpreterError:
        return LocatedError(f"{op_label(op)} ({self.kind} @{self.op.sym_name.data}): {message}")

    def execute(self, op: Operation, operands: list) -> list:
        """Run one op of the kernel body on its operand values (the numerics only);
        an error names the op (`LocatedError`)."""
        try:
            return self.handler(op)(op, operands)
        except LocatedError:
            raise
        except (InterpreterError, ValueError, TypeError, IndexError) as error:
            raise self.error(op, str(error)) from None

    # -------------------------------------------------------- arith and scf

    def constant(self, op: arith.ConstantOp, operands: list) -> list:
        value = op.value
        if isinstance(value, IntegerAttr):
            return [signed(value.value.data, index_width(op.result.type))]
        if isinstance(value, FloatAttr):
            return [np.asarray(value.value.data)]
        raise InterpreterError(f"unsupported constant {value} in a kernel")

    def int_binary(self, op: Operation, operands: list) -> list:
        found = self.int_fast.get(op)
        if found is None:  # looked up once: the index ops of a loop run every iteration
            width = self._width_of(op, op.results[0])
            found = self.int_fast[op] = (INT_SCALAR.get(type(op)) if width == 64 else None, width)
        fast, width = found
        scalar = scalar_pair(operands) if fast is not None else None
        if scalar is not None:  # the same on every core: Python ints, no numpy calls
            result = fast(*scalar)
            if result is not None and -(1 << 63) <= result < 1 << 63:
                return [np.array(result, dtype=np.int64)]
        fn, unsigned = INT_BINARY[type(op)]
        a, b = (as_int(x, width, unsigned) for x in operands)
        return [signed(fn(a, b), width)]

    def cmpi(self, op: arith.CmpiOp, operands: list) -> list:
        predicate = op.predicate.value.data
        fn, unsigned = CMPI[predicate]
        width = self._width_of(op, op.lhs)
        scalar = scalar_pair(operands) if width == 64 else None
        if scalar is not None and (not unsigned or min(scalar) >= 0):
            compare = CMPI_SCALAR[predicate if predicate < 6 else predicate - 4]
            return [np.array(compare(*scalar))]
        a, b = (as_int(x, width, unsigned) for x in operands)
        return [np.asarray(fn(a, b))]

    def _width_of(self, op: Operation, value: SSAValue) -> int:
        width = self.widths.get(op)
        if width is None:
            width = self.widths[op] = index_width(value.type)
        return width

    def select(self, op: arith.SelectOp, operands: list) -> list:
        cond, a, b = operands
        if isinstance(a, (np.ndarray, np.generic)) and isinstance(b, (np.ndarray, np.generic)):
            return [np.where(cond, a, b)]
        u = uniform_value(cond)
        if u is None:
            raise InterpreterError(
                "selects between buffers with a condition that differs across cores "
                "(use dataflow.slot for a per-core choice)"
            )
        return [a if u else b]

    def index_cast(self, op: Operation, operands: list) -> list:
        (x,) = operands
        source, target = index_width(op.operands[0].type), index_width(op.results[0].type)
        return [signed(as_int(x, source, False), target)]

    def uniform(self, value: object, what: str) -> int:
        u = uniform_value(value)
        if u is None:
            a = np.asarray(value)
            first = int(a.flat[0])
            core = int(np.argmax(a != first))
            raise InterpreterError(
                f"the {what} differs across cores (core 0: {first}, core {core}: "
                f"{int(a[core])}); a kernel's loop bounds and branch conditions must be "
                "the same on every core"
            )
        return int(u)

    def for_(self, op: scf.ForOp, operands: list) -> list:
        lb, ub, step = (
            self.uniform(v, what)
            for v, what in zip(operands[:3], ("lower bound", "upper bound", "step"))
        )
        if step <= 0:
            raise InterpreterError(f"the step must be positive, got {step}")
        carried = list(operands[3:])
        iv_width = index_width(op.lb.type)
        for i in range(lb, ub, step):
            carried = self.run_block(op.body.block, [signed(i, iv_width), *carried])
        return carried

    def if_(self, op: scf.IfOp, operands: list) -> list:
        taken = self.uniform(operands[0], "scf.if condition")
        region = op.true_region if taken else op.false_region
        if not region.blocks:
            return []
        return self.run_block(region.block, [])

    # -------------------------------------------------------- buffers

    def alloc_lx(self, op: D.AllocLxOp, operands: list) -> list:
        t = op.buffer.type
        assert isinstance(t, D.LxType)
        shape = t.get_shape()
        name = self.interp.held_name(t.element_type)
        array = np.zeros((self.cores, *shape), held_dtype(name))
        return [LxBuffer(LxRoot(array), (), shape, name, self.cores)]

    def slot(self, op: D.SlotOp, operands: list) -> list:
        buffer, index = operands
        return [buffer.slot(index, buffer.shape[0])]

    def position(self, op: D.PositionOp, operands: list) -> list:
        """The runtime position the host patches in (`dataflow.position`), checked."""
        memory: DdrMemory = operands[0]
        values = np.asarray(memory.data).reshape(-1)[np.asarray(operands[1])].astype(np.int64)
        bound, dim = op.bound.value.data, op.dim.value.data
        low = -bound if op.wrap is not None else 0
        bad = values[(values < low) | (values >= bound)]
        if bad.size:
            raise InterpreterError(
                f"index {int(bad.flat[0])} is out of range for dim {dim} of size {bound}"
            )
        return [np.where(values < 0, values + bound, values)]

    def _box(self, offsets: Sequence[object], extents: Sequence[int], shape: Sequence[int]) -> Box:
        if self.box_feed is not None:
            return next(self.box_feed)
        box = Box(offsets, extents, shape, self.cores)
        if self.box_log is not None:
            self.box_log.append(box)
        return box

    def load(self, op: D.LoadBase, operands: list) -> list:
        source: DdrMemory = operands[0]
        offsets = operands[1:-1]
        dest: LxBuffer = operands[-1]
        static = self.interp.loads.get(op)
        if static is None:  # (perm, the pad value, the box's extents): xDSL's accessors
            fill = fill_value(op.pad_value, source.name)  # are slow per move
            code = encode(np.float32(fill))[()] if source.name == "dlf16" else fill
            perm = D.ints(op.perm)
            static = (perm, fill, code, D.box_shape(dest.shape, perm))
            self.interp.loads[op] = static
        perm, fill, code, extents = static
        box = self._box(offsets, extents, source.shape)
        if source.codes:  # the card's 16-bit codes in DDR: the box's values into LX

            def decoded() -> np.ndarray:
                tile = decode_distinct(box.gather(source.data, code))
                return tile.transpose([0] + [p + 1 for p in perm]) if perm else tile

            tile_cache = self.tile_cache
            kept = None if tile_cache is None else tile_cache(box, source.data, decoded, perm)
            if kept is not None:
                dest.write(kept, shared=True)
                return []
            tile = decoded()
        else:
            tile = box.gather(source.data, fill)
            if perm:
                tile = tile.transpose([0] + [p + 1 for p in perm])
        dest.write(tile, fresh=True)  # a new array, or a view of DDR (then copied)
        return []

    def store(self, op: D.StoreBase, operands: list) -> list:
        source: LxBuffer = operands[0]
        dest: DdrMemory = operands[1]
        if not dest.writable:
            raise InterpreterError(f"stores into {dest.label}, which is read-only")
        box = self._box(operands[2:], source.shape, dest.shape)
        value = source.read()
        if dest.codes:  # DLFloat16 values (float32 in LX) as the card's codes in DDR
            value = encode(value)
        elif value.dtype != dest.array.dtype:  # f16 held in float32
            value = converted(value, dest.array.dtype)
        version = versions.version_of(dest.data)
        if version is not None:  # tiles kept of it may go stale
            version.change(versions.box_bounds(box.offsets, box.extents, box.shape))
        if dest.writers is None:
            box.scatter(dest.array, value)
            return []
        # Which core wrote each element of the box before and after this store (-1:
        # none, or outside the tensor); values are compared only where another did.
        cores = np.arange(self.cores, dtype=dest.writers.dtype).reshape((-1,) + (1,) * box.rank)
        checks = []
        writers = box.gather(dest.writers, -1)
        other = (writers >= 0) & (writers != cores)
        if other.any():
            checks.append((other, writers, box.gather(dest.array, 0), "earlier"))
        box.scatter(dest.array, value)
        box.scatter(dest.writers, np.broadcast_to(cores, value.shape))
        writers = box.gather(dest.writers, -1)
        other = (writers >= 0) & (writers != cores)
        if other.any():  # a later core won an element this core wrote too
            checks.insert(0, (other, writers, box.gather(dest.array, 0), "in this store"))
        for other, writers, values, when in checks:
            clash = other & differ(values, value)
            if clash.any():
                core, *position = (int(i) for i in np.argwhere(clash)[0])
                at = (core, *position)
                raise InterpreterError(
                    f"store race on element {list(box.element(core, position))} of "
                    f"{dest.label}: core {core} writes {value[at].item()} here, core "
                    f"{int(writers[at])} wrote {values[at].item()} {when}"
                )
        return []

    def _check_written(self, memory: DdrMemory) -> None:
        assert memory.writers is not None
        unwritten = memory.writers[tuple(slice(0, n) for n in memory.shape)] < 0
        if unwritten.any():
            first = [int(i) for i in np.argwhere(unwritten)[0]]
            raise InterpreterError(
                f"{op_label(self.op)}: {int(unwritten.sum())} of {unwritten.size} elements "
                f"of {memory.label} are never written (the first is {first})"
            )

    def gather(self, op: D.GatherBase, operands: list) -> list:
        table: DdrMemory = operands[0]
        indices = operands[1].read()
        dest: LxBuffer = operands[2]
        _check_rows(indices, table.shape[0])
        rows_of = table.data[indices]
        dest.write(decode(rows_of) if table.codes else rows_of)
        return []

    def scatter(self, op: D.ScatterBase, operands: list) -> list:
        """Rows of LX written to the table rows the indices name (every core's, in core
        order: a row two cores write keeps the later core's, a race the card would
        have too)."""
        value = operands[0].read()
        indices = operands[1].read()
        table: DdrMemory = operands[2]
        if not table.writable:
            raise InterpreterError(f"scatters into {table.label}, which is read-only")
        k = op.index_dims  # an index names a position of the first k dims (row-major)
        leading = table.shape[:k]
        _check_rows(indices, math.prod(leading))
        where = indices if k == 1 else np.unravel_index(indices, leading)
        if table.codes:  # DLFloat16 values (float32 in LX) as the card's codes in DDR
            value = encode(value)
        elif value.dtype != table.array.dtype:  # f16 held in float32
            value = converted(value, table.array.dtype)
        table.data[where] = value
        versions.changed(table.data)
        if table.writers is not None:
            cores = np.arange(self.cores, dtype=table.writers.dtype)
            table.writers[where] = cores.reshape((-1,) + (1,) * (value.ndim - 1))
        return []

    def compute(self, op: D.ComputeBase, operands: list) -> list:
        tile = self.interp.tiles.get(op)
        if tile is None or tile.cores != self.cores:
            tile = self.interp.tiles[op] = TileOp(op, self.cores, self.interp.half)
        n = tile.inputs
        inputs = [b.read() for b in operands[:n]]
        out: LxBuffer = operands[n]
        offsets = operands[n + tile.outputs :]
        if offsets and len(offsets) != len(out.shape):
            raise InterpreterError(f"has {len(offsets)} offsets for a rank-{len(out.shape)} output")
        current = out.read() if tile.combine is not None else None
        result = tile.run(inputs, offsets, current)
        if result.dtype != out.dtype:
            raise InterpreterError(
                f"{op.kind.data} gave {result.dtype}, the buffer holds {out.dtype} "
                "(interpreter bug)"
            )
        if result is current and out.is_view():
            return []  # combined in place, in LX
        out.write(result, fresh=not any(result is x for x in inputs))
        return []

    def _groups(
        self, op: D.RingAllreduceBase | D.RingAllgatherBase, value: np.ndarray
    ) -> np.ndarray:
        """[cores, ...] as [blocks, group_size, stride, ...]: a ring group is the cores
        `stride` apart in one block of group_size * stride consecutive cores."""
        size, stride = op.group_size.value.data, op.stride_value
        return value.reshape(self.cores // (size * stride), size, stride, *value.shape[1:])

    def ring_allreduce(self, op: D.RingAllreduceBase, operands: list) -> list:
        (buffer,) = operands
        grouped = self._groups(op, buffer.read())
        kind = op.kind.data
        if kind == "add":
            wide = np.float32 if buffer.name in FLOAT_NAMES else np.int64
            combined = round_held(grouped.sum(axis=1, dtype=wide, keepdims=True), buffer.name)
        else:
            combined = (np.max if kind == "max" else np.min)(grouped, axis=1, keepdims=True)
        buffer.write(np.broadcast_to(combined, grouped.shape).reshape(self.cores, *buffer.shape))
        return []

    def ring_allgather(self, op: D.RingAllgatherBase, operands: list) -> list:
        part, full = operands
        grouped = self._groups(op, part.read())  # [blocks, size, stride, p0, ...]
        blocks, size, stride = grouped.shape[:3]
        # Per (block, stride) group: the parts stacked along dim 0 in group order.
        stacked = np.moveaxis(grouped, 1, 2).reshape(blocks, 1, stride, *full.shape)
        every = np.broadcast_to(stacked, (blocks, size, stride, *full.shape))
        full.write(every.reshape(self.cores, *full.shape))
        return []


_HANDLERS: dict[type[Operation], str] = {
    arith.ConstantOp: "constant",
    arith.CmpiOp: "cmpi",
    arith.SelectOp: "select",
    arith.IndexCastOp: "index_cast",
    scf.ForOp: "for_",
    scf.IfOp: "if_",
    D.AllocLxOp: "alloc_lx",
    D.SlotOp: "slot",
    D.PositionOp: "position",
    # By base class: levels below may subclass these ops (see `KernelMachine.handler`).
    D.LoadBase: "load",
    D.StoreBase: "store",
    D.GatherBase: "gather",
    D.ScatterBase: "scatter",
    D.ComputeBase: "compute",
    D.RingAllreduceBase: "ring_allreduce",
    D.RingAllgatherBase: "ring_allgather",
    **dict.fromkeys(INT_BINARY, "int_binary"),
}
"""Op class -> the name of its `KernelMachine` handler (one table, not one per run: a
decode step starts ~40 machines; a class found by its base is added on first use)."""


def decode_distinct(codes: np.ndarray) -> np.ndarray:
    """`decode(codes)`, each distinct element once: a box that several cores share comes
    as a broadcast (stride 0 along the cores, or along a group of them), and its values
    stay a broadcast of one decoded copy (read-only), not one lookup per core."""
    shared = [
        d for d, (n, step) in enumerate(zip(codes.shape, codes.strides)) if step == 0 and n > 1
    ]
    if not shared:
        return decode(codes)
    one = codes[tuple(slice(0, 1) if d in shared else slice(None) for d in range(codes.ndim))]
    return np.broadcast_to(decode(one), codes.shape)


def _check_rows(indices: np.ndarray, rows: int) -> None:
    """A gather's or scatter's row indices (per core) name rows of a table of `rows`."""
    bad = (indices < 0) | (indices >= rows)
    if bad.any():
        core = int(np.argwhere(bad)[0][0])
        raise InterpreterError(
            f"core {core}: index {indices[bad].flat[0]} is out of range for a table of {rows} rows"
        )
