"""spyre-tile: turn each planned `dataflow.group` into a `dataflow.kernel`.

The kernel body is one SPMD program: the core id picks a contiguous range of work items
(tiles); a loop walks them, loading inputs from LPDDR5 into LX, running every op of the
group as a tile operation on its unit, and storing the results. Tile sizes come from the
cost model so that the working set, with two slots per streamed input, fits `lx-bytes`.
Edge tiles overhang the tensors: loads read padding there and stores drop it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir import cost_model
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES, card_of
from spyre_ir.passes import row_model
from spyre_ir.passes.fuse import swaps_last_two
from spyre_ir.passes.partition_cores import (
    from_attr,
    group_kind,
    matmul_dims,
    matmul_of,
    to_attr,
)
from spyre_ir.shape_rules import numel

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
        cond = self.emit(arith.CmpiOp(value, self.const(0), "ugt")).results[0]
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


def tile_rows_group(group: dataflow.GroupOp, plan: dict, lx_bytes: int) -> dataflow.KernelOp:
    """Rows and gather kernels: tiles of `t` rows of the innermost row dim."""
    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    p = plan["row_dims"]
    if plan["kind"] == "rows":
        analysis = row_model.analyse(ops, list(yielded.values), p)
    else:
        analysis = gather_analysis(ops, yielded, p)
    rows = analysis.rows
    unit = [1] * p
    values = [*group.body.block.args, *(r for op in ops for r in op.results)]
    table = {op.table for op in ops if isinstance(op, spyre.GatherOp)}
    row_bytes = sum(
        numel(analysis.tile_shape(v, unit)) * elem_bytes(v) for v in values if v not in table
    )
    inner = rows[-1] if p else 1
    outer = rows[:-1] if p else ()
    try:
        t, cores, per_core = rows_tile(group, analysis, numel(outer), inner, row_bytes,
                                       plan["cores"], lx_bytes or card_of(group).lx_bytes)  # fmt: skip
    except ValueError as e:
        raise located_error(group, f"group @{group.sym_name.data}: {e}") from None
    chunks = cost_model.ceil_div(inner, t)
    # The plan records what the kernel really uses (fewer cores when there are fewer
    # tiles than cores).
    plan_attr = to_attr({**plan, "cores": cores})
    shell = new_kernel(group, cores, lx_bytes, plan_attr)
    b = shell.body
    extents = [1] * (p - 1) + [t] if p else []

    def is_row_dependent(v: SSAValue) -> bool:
        return any(a is not None for a in analysis.axes.get(v, ()))

    buffers: dict[SSAValue, SSAValue] = {}
    for v in values:
        if v in table:
            continue
        if isinstance(v.owner, spyre.RestickifyOp):
            # A layout change happens between LPDDR5 and LX: in LX the tile is the same.
            buffers[v] = buffers[v.owner.input]
            continue
        buffers[v] = b.alloc(analysis.tile_shape(v, extents), spyre.element_of(v))
    # Resident inputs and constants: once per core, before the loop.
    for arg in group.body.block.args:
        if arg not in table and not is_row_dependent(arg):
            zeros = [b.const(0)] * len(spyre.shape_of(arg))
            b.emit(dataflow.LoadOp(shell.memory[arg], zeros, buffers[arg]))
    hoisted = [op for op in ops if not op.operands and not is_row_dependent(op.results[0])
               and not isinstance(op, spyre.IotaOp)]  # fmt: skip
    for op in hoisted:
        b.compute(op, [], [buffers[op.results[0]]])

    item_iv, lb = b.loop(per_core)
    item = lb.add(lb.mul(shell.kernel.core_id, per_core), item_iv)
    # Without outer row dims the chunk is the item itself: not wrapped, so items past
    # the end fall outside the tensor instead of repeating a tile.
    chunk = lb.rem(item, chunks) if outer else item
    row_offsets = [*split_index(lb, lb.div(item, chunks), outer), lb.mul(chunk, t)] if p else []
    for arg in group.body.block.args:
        if arg in table or not is_row_dependent(arg):
            continue
        offsets = box_offsets(lb, arg, analysis.axes[arg], row_offsets)
        lb.emit(dataflow.LoadOp(shell.memory[arg], offsets, buffers[arg]))
    for op in ops:
        if op in hoisted or isinstance(op, spyre.RestickifyOp):
            continue
        outs = [buffers[r] for r in op.results]
        if isinstance(op, spyre.GatherOp):
            lb.emit(dataflow.GatherOp(shell.memory[op.table], buffers[op.indices], outs[0]))
            continue
        offsets: list[SSAValue] = []
        if isinstance(op, spyre.SliceOp):
            lb.compute_named(op.name, [buffers[op.input]], outs,
                             slice_on_tile(op, analysis, extents))  # fmt: skip
            continue
        if isinstance(op, spyre.IotaOp):
            offsets = box_offsets(lb, op.results[0], analysis.axes.get(op.results[0], ()),
                                  row_offsets)  # fmt: skip
        lb.compute(op, [buffers[o] for o in op.operands], outs, offsets)
    for value in yielded.values:
        offsets = box_offsets(lb, value, analysis.axes[value], row_offsets)
        lb.emit(dataflow.StoreOp(buffers[value], shell.memory[value], offsets))
    return shell.kernel


def rows_tile(group: dataflow.GroupOp, analysis: row_model.RowAnalysis, outer: int,
              inner: int, row_bytes: int, cores: int, lx_bytes: int) -> tuple[int, int, int]:  # fmt: skip
    """(t, cores, tiles per core) of a rows kernel. Inputs read across their stick dim
    need tiles of whole sticks; outputs written across theirs get whole sticks too when
    such tiles fit half of LX (an output with wider sticks, an i1 mask of i64 indices,
    would otherwise be written in part-sticks: masked stores, each moving whole sticks)."""
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)

    def stick_of(values: Sequence[SSAValue]) -> int:
        return max((card_of(group).elements_per_stick(spyre.element_type_name(spyre.element_of(v)))
                    for v in values if analysis.innermost_on_stick(v)), default=1)  # fmt: skip

    inputs = stick_of(group.body.block.args)
    moved = max(inputs, stick_of(yielded.values))
    if moved > inputs and min(inner, moved) * row_bytes <= lx_bytes // 2:
        return cost_model.balanced_rows_tile(outer, inner, row_bytes, cores, lx_bytes, moved)
    return cost_model.balanced_rows_tile(outer, inner, row_bytes, cores, lx_bytes, inputs)


def slice_on_tile(op: spyre.SliceOp, analysis: row_model.RowAnalysis,
                  extents: Sequence[int]) -> dict[str, Attribute]:  # fmt: skip
    """A slice's bounds on a tile: row axes are never sliced, so they span the tile."""
    stops = list(spyre.ints(op.stops))
    tile = analysis.tile_shape(op.input, extents)
    for axis in analysis.axes.get(op.input, ()):
        if axis is not None:
            stops[axis] = tile[axis]
    props = dict(op.properties)
    props["stops"] = dataflow.dense(stops)
    return props


def gather_analysis(ops: Sequence[Operation], yielded: dataflow.YieldOp,
                    p: int) -> row_model.RowAnalysis:  # fmt: skip
    """Row axes for a gather group: the index positions are the rows; the table is
    read from LPDDR5 by row, so it has none."""
    gather = next(op for op in ops if isinstance(op, spyre.GatherOp))
    epilogue = [op for op in ops if op is not gather]
    outputs = list(yielded.values)
    analysis = (
        row_model.analyse(epilogue, outputs, p)
        if epilogue
        else row_model.RowAnalysis(
            p, spyre.shape_of(gather.result)[:p], {gather.result: tuple(range(p))}
        )
    )
    analysis.axes.setdefault(gather.result, tuple(range(p)))
    analysis.axes[gather.indices] = tuple(range(p))
    return analysis


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


def tile_matmul_group(group: dataflow.GroupOp, plan: dict, lx_bytes: int) -> dataflow.KernelOp:
    """Output-stationary matmul: each core owns (m, n) tiles of its split and walks K;
    split-K partial sums meet in a ring all-reduce; the epilogue runs on the f32->out
    tile before the store."""
    mm = matmul_of(group)
    ops = [op for op in group.body.ops if not isinstance(op, dataflow.YieldOp)]
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    if min(len(spyre.shape_of(mm.lhs)), len(spyre.shape_of(mm.rhs))) < 2:
        raise located_error(mm, "spyre-tile: matmul with a 1-D operand; reshape it to 2-D")
    batch, m, n, k = matmul_dims(mm)
    out_shape = spyre.shape_of(mm.result)
    elem = elem_bytes(mm.lhs)
    sm, sn, sk = plan["split"]
    # Transposes folded into the matmul: their operand is read through `perm` loads.
    folded = {v: v.owner for v in (mm.lhs, mm.rhs) if v.owner in ops and swaps_last_two(v.owner)}
    # Restickifies folded into it (spyre-fuse): its tile loads read their input's bytes.
    resticked = {v: v.owner.input for v in (mm.lhs, mm.rhs)
                 if v.owner in ops and isinstance(v.owner, spyre.RestickifyOp)}  # fmt: skip
    epilogue = [op for op in ops if op is not mm and op not in folded.values()
                and not any(r in resticked for r in op.results)]  # fmt: skip
    try:
        mp = cost_model.plan_matmul(batch, m, n, k, elem, card_of(group), plan["cores"],
                                    2 * elem * len(epilogue), (sm, sn, sk), lx_bytes,
                                    len(spyre.shape_of(mm.rhs)) > 2)  # fmt: skip
    except ValueError as e:
        raise located_error(group, f"group @{group.sym_name.data}: {e}") from None
    tm, tn, tk = mp.tm, mp.tn, mp.tk
    rank = len(out_shape)
    batch_dims = out_shape[:-2]
    m_chunks = cost_model.ceil_div(m, tm)
    m_per = cost_model.ceil_div(batch * m_chunks, sm)
    n_per = cost_model.ceil_div(cost_model.ceil_div(n, sn), tn)
    k_per = cost_model.ceil_div(cost_model.ceil_div(k, sk), tk)
    shell = new_kernel(group, sm * sn * sk, lx_bytes, group.plan)
    b = shell.body
    core = shell.kernel.core_id
    ck, cn, cm = b.rem(core, sk), b.rem(b.div(core, sk), sn), b.div(core, sk * sn)

    def memory_of(value: SSAValue) -> SSAValue:
        if value in resticked:
            return shell.memory[resticked[value]]
        return shell.memory[folded[value].input] if value in folded else shell.memory[value]

    lhs_mem, rhs_mem = memory_of(mm.lhs), memory_of(mm.rhs)
    lhs_rank, rhs_rank = len(spyre.shape_of(mm.lhs)), len(spyre.shape_of(mm.rhs))
    # The two corelets each take half of the tile's columns: their own B tile, f32
    # accumulator, epilogue and store, sharing the A tile.
    halves = cost_model.corelets_sharing(tn, card_of(group))
    th = tn // halves
    # A matmul walking K may compute its last K step in row blocks, each finished
    # (epilogue) and stored as soon as it is done (the planner's `row_blocks`): the A
    # tile, the accumulators and the epilogue tiles are kept as that many row blocks.
    blocks = mp.row_blocks
    rows_per_block = tm // blocks
    a_bufs = [b.alloc([1] * (lhs_rank - 2) + [rows_per_block, tk], spyre.element_of(mm.lhs))
              for _ in range(blocks)]  # fmt: skip
    a_buf = a_bufs[0]
    b_bufs = [b.alloc([1] * (rhs_rank - 2) + [tk, th], spyre.element_of(mm.rhs))
              for _ in range(halves)]  # fmt: skip
    # Split-K with one K step per output tile and no epilogue: the cores of a K group
    # each store tm / sk rows of the reduced tile, so the tile is computed stacked as
    # [sk, tm / sk, th] (the resident A tile reshaped once) and a core stores its slot.
    stacked = (k_per == 1 and sk > 1 and not epilogue and rank == 2 and lhs_rank == 2
               and list(yielded.values) == [mm.result])  # fmt: skip
    rows_per_core = tm // sk
    acc_shape = [sk, rows_per_core, th] if stacked else [1] * (rank - 2) + [tm, th]
    if blocks > 1:
        acc_shape = [1] * (rank - 2) + [rows_per_block, th]
    # Block by block, half by half: spyre.full picks the corelets in turn, so half h's
    # accumulators land on corelet h (one half: its row blocks take turns).
    block_accs = [[b.alloc(acc_shape, Float32Type()) for _ in range(halves)]
                  for _ in range(blocks)]  # fmt: skip
    accs = [acc for row in block_accs for acc in row]
    share_a = mp.shares_a and lhs_rank == 2 and mm.lhs not in folded
    a_parts = [b.alloc([rows_per_block // sn, tk], spyre.element_of(mm.lhs))
               for _ in range(blocks)] if share_a else []  # fmt: skip

    ep_outputs = list(yielded.values)
    analysis = row_model.analyse(epilogue, ep_outputs, rank, whole_rows=False) if epilogue \
        else row_model.RowAnalysis(rank, out_shape, {mm.result: tuple(range(rank))})  # fmt: skip
    analysis.axes.setdefault(mm.result, tuple(range(rank)))
    extents = [1] * (rank - 2) + [rows_per_block, th]
    values = list(dict.fromkeys([mm.result, *(o for op in epilogue for o in op.operands),
                                 *(r for op in epilogue for r in op.results)]))  # fmt: skip
    # The epilogue's tiles, per row block and half.
    block_buffers: list[list[dict[SSAValue, SSAValue]]] = []
    for _ in range(0 if stacked else blocks):  # stacked tiles have their own (below)
        block_buffers.append([])
        for _ in range(halves):
            half: dict[SSAValue, SSAValue] = {}
            for v in values:
                if isinstance(v.owner, spyre.RestickifyOp):
                    half[v] = half[v.owner.input]  # same tile in LX, see tile_rows_group
                else:
                    half[v] = b.alloc(analysis.tile_shape(v, extents), spyre.element_of(v))
            block_buffers[-1].append(half)

    mi, lb = b.loop(m_per)
    item = lb.add(lb.mul(cm, m_per), mi)
    m0 = lb.mul(lb.rem(item, m_chunks), tm)
    batch_index = split_index(lb, lb.div(item, m_chunks), batch_dims) if batch_dims else []
    a_batch = batch_index[len(batch_index) - (lhs_rank - 2) :] if lhs_rank > 2 else []
    b_batch = batch_index[len(batch_index) - (rhs_rank - 2) :] if rhs_rank > 2 else []

    def load_a(kb: BodyBuilder, k0: SSAValue) -> None:
        lhs_b = [x if s > 1 else kb.const(0) for x, s in zip(a_batch, spyre.shape_of(mm.lhs))]
        for j in range(blocks):
            top = block_top(kb, j)
            if share_a:
                # Each core of an N group loads its slice of the A block; the ring
                # completes it.
                rows = rows_per_block // sn
                kb.emit(dataflow.LoadOp(lhs_mem, [kb.add(top, kb.mul(cn, rows)), k0],
                                        a_parts[j], pad=0.0))  # fmt: skip
            else:
                kb.emit(transposed_load(lhs_mem, [*lhs_b, top, k0], a_bufs[j],
                                        mm.lhs in folded))  # fmt: skip

    def block_top(kb: BodyBuilder, j: int) -> SSAValue:
        """The first row of row block j."""
        return m0 if blocks == 1 else kb.add(m0, j * rows_per_block)

    def gather_a(kb: BodyBuilder) -> None:
        for part, full in zip(a_parts, a_bufs):
            kb.emit(dataflow.RingAllgatherOp(part, full, sn, sk))

    def load_b(kb: BodyBuilder, k0: SSAValue, n_half: list[SSAValue],
               which: Sequence[int] = range(halves)) -> None:  # fmt: skip
        rhs_b = [x if s > 1 else kb.const(0) for x, s in zip(b_batch, spyre.shape_of(mm.rhs))]
        for h in which:
            kb.emit(transposed_load(rhs_mem, [*rhs_b, k0, n_half[h]], b_bufs[h],
                                    mm.rhs in folded))  # fmt: skip

    def load_epilogue_inputs(fb: BodyBuilder, j: int) -> None:
        """The epilogue's inputs from LPDDR5 for row block j. They are issued before
        any block's stores, which wait for the epilogue: the load/store unit issues in
        order, so a load behind a store would pay the LPDDR5 latency once more."""
        inputs = [operand for op in epilogue if not isinstance(op, spyre.RestickifyOp)
                  for operand in op.operands
                  if operand in shell.memory and operand is not mm.result]  # fmt: skip
        if not inputs:
            return
        top = block_top(fb, j)
        for h in range(halves):
            row_offsets = [*batch_index, top, n_half[h]]
            for operand in inputs:
                offsets = box_offsets(fb, operand, analysis.axes.get(operand, ()), row_offsets)
                fb.emit(dataflow.LoadOp(shell.memory[operand], offsets,
                                        block_buffers[j][h][operand]))  # fmt: skip

    def finish(fb: BodyBuilder, j: int, load_inputs: bool = False) -> None:
        """Row block j of the output tile: its split-K all-reduce, cast, epilogue
        (`load_inputs`: after loading its inputs) and stores."""
        buffers = block_buffers[j]
        for h in range(halves):
            if sk > 1:
                fb.emit(dataflow.RingAllreduceOp(block_accs[j][h], "add", sk))
            fb.compute_named("spyre.cast", [block_accs[j][h]], [buffers[h][mm.result]])
        if load_inputs:
            load_epilogue_inputs(fb, j)
        top = block_top(fb, j)
        for h in range(halves):
            row_offsets = [*batch_index, top, n_half[h]]
            for op in epilogue:
                if not isinstance(op, spyre.RestickifyOp):
                    fb.compute(op, [buffers[h][o] for o in op.operands],
                               [buffers[h][r] for r in op.results])  # fmt: skip
            for value in ep_outputs:
                tile, at = buffers[h][value], row_offsets
                if sk > 1 and analysis.axes[value] == tuple(range(rank)) and \
                        list(analysis.tile_shape(value, extents)) == extents:  # fmt: skip
                    # The cores of a K group hold the same reduced tile: each stores
                    # its tm / sk rows, picked from the tile reshaped to
                    # [sk, .., tm / sk, th].
                    rows = tm // sk
                    split = b.alloc([sk, *extents[:-2], rows, th], spyre.element_of(value))
                    fb.compute_named("spyre.reshape", [tile], [split])
                    tile = fb.emit(dataflow.SlotOp(split, ck)).results[0]
                    at = [*batch_index, fb.add(m0, fb.mul(ck, rows)), n_half[h]]
                offsets = box_offsets(fb, value, analysis.axes[value], at)
                fb.emit(dataflow.StoreOp(tile, shell.memory[value], offsets))

    def zero_accumulators(nb: BodyBuilder) -> None:
        for acc in accs:
            nb.compute_named("spyre.full", [], [acc], {"value": FloatAttr(0.0, Float64Type())})

    # Loads first in each loop body, so spyre-double-buffer can prefetch them all.
    resident = k_per == 1
    a_operand = a_buf
    if resident:
        # One K step per output tile: the A tile is the same for every N tile of this
        # M tile, so it is loaded once, and the N loop streams B tiles.
        k0 = lb.mul(ck, tk)
        load_a(lb, k0)
        gather_a(lb)
        if stacked:
            a_rows = b.alloc([sk, rows_per_core, tk], spyre.element_of(mm.lhs))
            lb.compute_named("spyre.reshape", [a_buf], [a_rows])
            a_operand = a_rows
    nj, nb = lb.loop(n_per)
    n0 = nb.add(nb.mul(cn, n_per * tn), nb.mul(nj, tn))
    n_half = [nb.add(n0, h * th) for h in range(halves)]
    if resident:
        load_b(nb, k0, n_half)
        zero_accumulators(nb)
        kb = nb
    else:
        zero_accumulators(nb)
        kk, kb = nb.loop(k_per)
        k0 = kb.add(kb.mul(ck, k_per * tk), kb.mul(kk, tk))
        load_a(kb, k0)
        load_b(kb, k0, n_half, [0])
        # The all-gather right after the first corelet's B tile: a push of the LS unit
        # carries the landing of every move issued before it, so that corelet's matmul
        # then waits for its own B tile, not for the other corelet's too.
        gather_a(kb)
        load_b(kb, k0, n_half, range(1, halves))
        if blocks > 1:
            more = kb.emit(arith.CmpiOp(kk, kb.const(k_per - 1), "ult")).results[0]
            steps, last = kb.branch(more)
            for h in range(halves):
                for j in range(blocks):
                    steps.compute(mm, [a_bufs[j], b_bufs[h]], [block_accs[j][h]],
                                  accumulate=True)  # fmt: skip
            # The last step block by block, so the first blocks' stores stream to
            # LPDDR5 while the PE arrays still compute the others (the whole tile's
            # last matmul would leave LPDDR5 idle meanwhile).
            for j in range(blocks):
                load_epilogue_inputs(last, j)
            for j in range(blocks):
                for h in range(halves):
                    last.compute(mm, [a_bufs[j], b_bufs[h]], [block_accs[j][h]],
                                 accumulate=True)  # fmt: skip
                finish(last, j)
            return shell.kernel
    for h in range(halves):
        kb.compute(mm, [a_operand, b_bufs[h]], [accs[h]], accumulate=True)
    if stacked:
        store_stacked(nb, lb, nj, accs, shell.memory[mm.result], sk, (cn, ck, m0),
                      (n_per, tn, th), rows_per_core)  # fmt: skip
        return shell.kernel
    finish(nb, 0, load_inputs=True)
    return shell.kernel


def store_stacked(nb: BodyBuilder, lb: BodyBuilder, nj: SSAValue, accs: Sequence[SSAValue],
                  out: SSAValue, sk: int, where: tuple[SSAValue, SSAValue, SSAValue],
                  widths: tuple[int, int, int], rows: int) -> None:  # fmt: skip
    """Reduce, cast and store the stacked [sk, rows, th] tiles of a split-K matmul into
    `out`: each core of a K group stores its `rows` rows. A tile's cast goes to one of
    two slots and its store waits for the next iteration of the N loop (`nb`; the last
    tile's follows the loop, in `lb`), so the load/store unit never waits for a cast:
    its pushes wait for every move issued before them, which includes the prefetch of
    the next B tile."""
    cn, ck, m0 = where
    n_per, tn, th = widths
    element = out.type.element_type
    slots = [nb.alloc([2, sk, rows, th], element) for _ in accs]
    parity = nb.rem(nj, 2)
    for acc, buffer in zip(accs, slots):
        nb.emit(dataflow.RingAllreduceOp(acc, "add", sk))
        current = nb.emit(dataflow.SlotOp(buffer, parity)).results[0]
        nb.compute_named("spyre.cast", [acc], [current])

    def store(b: BodyBuilder, slot: SSAValue, tile: SSAValue) -> None:
        row = b.add(m0, b.mul(ck, rows))
        base = b.add(b.mul(cn, n_per * tn), b.mul(tile, tn))
        for h, buffer in enumerate(slots):
            view = b.emit(dataflow.SlotOp(buffer, slot)).results[0]
            mine = b.emit(dataflow.SlotOp(view, ck)).results[0]
            b.emit(dataflow.StoreOp(mine, out, [row, b.add(base, h * th)]))

    later = nb.when_positive(nj)
    store(later, later.rem(later.add(nj, 1), 2), later.sub(nj, 1))
    store(lb, lb.const((n_per - 1) % 2), lb.const(n_per - 1))


@dataclass(frozen=True)
class SpyreTile(ModulePass):
    """Turn planned dataflow.groups into dataflow.kernels that fit `lx-bytes` of LX (at
    most the module's card's)."""

    name = "spyre-tile"

    lx_bytes: int = DEFAULT_CONFIG.lx_bytes

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lx_bytes = min(self.lx_bytes, card_of(op).lx_bytes)
        for group in [g for g in op.walk() if isinstance(g, dataflow.GroupOp)]:
            if group.plan is None:
                raise located_error(group, f"group @{group.sym_name.data} has no plan; "
                                           "run spyre-partition-cores first")  # fmt: skip
            plan = from_attr(group.plan)
            group_kind(group)
            if plan["kind"] == "matmul":
                kernel = tile_matmul_group(group, plan, lx_bytes)
            elif plan["kind"] == "attention":
                from spyre_ir.passes.tile_attention import tile_attention_group

                kernel = tile_attention_group(group, plan, lx_bytes)
            elif plan["kind"] == "copy":
                from spyre_ir.passes.tile_copy import tile_copy_group

                kernel = tile_copy_group(group, plan, lx_bytes)
            else:
                kernel = tile_rows_group(group, plan, lx_bytes)
            hoist_definitions(kernel)
            Rewriter.replace_op(group, kernel)
