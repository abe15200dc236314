"""Per-unit timing of the simulated card: one timing function per instruction class.

`timer_for(program, op)` returns how an L3 instruction is timed - a function of the op
and its operands that counts flops and bytes on the program and returns the event
(INSTR, cycles, latency, info, LX regions read, LX regions written) the scheduler runs;
the regions only for the LS unit, whose moves complete `latency` after their port is done
with them - or None for ops that take no time (index arithmetic, slots). The durations
come from `spyre_ir.cost_model` (units) and `spyre_ir.sim.lpddr` (the memory system).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.ir import Operation

from spyre_ir import cost_model as cm
from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ls, pe, sfp
from spyre_ir.sim import lpddr
from spyre_ir.sim.scheduler import INSTR, LPDDR, LS, PE, RING, SFP, Info

Timer = Callable[[Operation, list], tuple]


def timer_for(program, op: Operation) -> Timer | None:
    """The timer of `op` in `program` (a `_Program` of spyre_ir.sim.engine)."""
    timing = TIMINGS.get(type(op))
    return None if timing is None else timing(program, op)


def time_move(program, op: ls.LoadOp | ls.StoreOp) -> Timer:
    """`ls.load` / `ls.store`: the LPDDR5 port, for the largest box any core moves
    (never less than the nominal tile clipped to the tensor), costed by the memory
    system for all the program's cores moving their boxes at once."""
    config, cores = program.config, program.cores
    latency = config.lpddr_latency_cycles
    load = isinstance(op, ls.LoadOp)
    memory = (op.source if load else op.dest).type
    tile = (op.dest if load else op.source).type
    assert isinstance(memory, D.DdrType) and isinstance(tile, D.LxType)
    extents = D.box_shape(tile.get_shape(), D.ints(op.perm) if load else ())
    shape = memory.get_shape()
    stick_dim, per_stick = lpddr.stick_geometry(memory, config)
    nominal = cm.box_sticks(extents, shape, stick_dim, per_stick)
    info = Info(op.name, LPDDR, {"sticks": nominal})
    runs = 1  # counted only for a card that limits a core's requests in flight
    if config.lpddr_core_requests_in_flight:
        runs = info.args["runs"] = lpddr.move_runs(memory, extents)
    offsets = slice(1, -1) if load else slice(2, None)
    stick = config.stick_bytes
    region = program.region

    def move(op: Operation, operands: list) -> tuple:
        boxes = lpddr.box_moves(operands[offsets], extents, shape, stick_dim, per_stick, cores)
        program.delivered_bytes += boxes.total * stick
        shared = load and config.lpddr_multicast
        program.lpddr_bytes += (boxes.unique if shared else boxes.total) * stick
        cycles = lpddr.move_cycles(boxes, nominal, load, cores, config, runs)
        if load:
            return (INSTR, cycles, latency, info, (), (region(operands[-1]),))
        return (INSTR, cycles, latency, info, (region(operands[0]),), ())

    return move


def _table_rows(table: D.DdrType, indices: D.LxType, config, dims: int = 1) -> tuple[int, int]:
    """(rows, bytes) a gather or scatter moves: one whole row of `table` per index (the
    dims past the first `dims`; a row inside one stick moves that stick)."""
    shape = table.get_shape()
    stick_dim, per_stick = lpddr.stick_geometry(table, config)
    row = cm.box_sticks((*([1] * dims), *shape[dims:]), shape, stick_dim, per_stick)
    rows = math.prod(indices.get_shape())
    return rows, rows * row * config.stick_bytes


def time_gather(program, op: ls.GatherOp) -> Timer:
    """`ls.gather`: one row of the table per index, on the LPDDR5 port."""
    config, cores = program.config, program.cores
    table, indices = op.table.type, op.indices.type
    assert isinstance(table, D.DdrType) and isinstance(indices, D.LxType)
    rows, nbytes = _table_rows(table, indices, config)
    info = Info(op.name, LPDDR, {"bytes": nbytes})
    cycles = lpddr.gather_cycles(nbytes, rows, cores, config)
    return _static(program, cycles, config.lpddr_latency_cycles, info, (1,), (2,),
                   lpddr=nbytes * cores)  # fmt: skip


def time_scatter(program, op: ls.ScatterOp) -> Timer:
    """`ls.scatter`: one row of the table per index written, on the LPDDR5 port (as a
    gather reads them, on the write channel and at the bus's write efficiency)."""
    config, cores = program.config, program.cores
    table, indices = op.dest.type, op.indices.type
    assert isinstance(table, D.DdrType) and isinstance(indices, D.LxType)
    rows, nbytes = _table_rows(table, indices, config, op.index_dims)
    info = Info(op.name, LPDDR, {"bytes": nbytes})
    cycles = lpddr.scatter_cycles(nbytes, rows, cores, config)
    return _static(program, cycles, config.lpddr_latency_cycles, info, (0, 1), (),
                   lpddr=nbytes * cores)  # fmt: skip


def time_allreduce(program, op: ls.RingAllreduceOp) -> Timer:
    """`ls.ring_allreduce`: the ring port (cost_model.ring_allreduce_cycles), its
    reduction (cost_model.allreduce_reduction_cycles) holding the LS unit too."""
    t = op.buffer.type
    assert isinstance(t, D.LxType)
    g, stride = op.group_size.value.data, op.stride_value
    total = cm.ring_allreduce_cycles(t.nbytes, g, program.config, stride)
    reduction = cm.allreduce_reduction_cycles(t.nbytes, g, program.config)
    cycles = (total - reduction, reduction) if reduction else total
    info = Info(op.name, RING, {"bytes": t.nbytes, "group": g})
    sent = cm.ring_bytes_sent(t.nbytes, g, True) * program.cores
    return _static(program, cycles, 0.0, info, (0,), (0,), ring=sent)


def time_allgather(program, op: ls.RingAllgatherOp) -> Timer:
    """`ls.ring_allgather`: the ring port (cost_model.ring_allgather_cycles)."""
    t = op.full.type
    assert isinstance(t, D.LxType)
    g, stride = op.group_size.value.data, op.stride_value
    cycles = cm.ring_allgather_cycles(t.nbytes, g, program.config, stride)
    info = Info(op.name, RING, {"bytes": t.nbytes, "group": g})
    sent = cm.ring_bytes_sent(t.nbytes, g, False) * program.cores
    return _static(program, cycles, 0.0, info, (0,), (1,), ring=sent)


def _tile_elements(op: Operation) -> tuple[list[tuple[int, ...]], int]:
    """Shapes of the LX operands of a tile op and the element count of the largest (a
    reduction reads all of its input)."""
    types = [v.type for v in (*op.inputs, *op.outputs)]
    shapes = [t.get_shape() for t in types if isinstance(t, D.LxType)]
    return shapes, max((math.prod(s) for s in shapes), default=1)


def time_rearrange(program, op: ls.ComputeOp) -> Timer:
    """`ls.compute`: an LX -> LX rearrangement on the LS unit itself."""
    out = op.outputs[0].type
    assert isinstance(out, D.LxType)
    n = len(op.inputs)
    info = Info(op.kind.data, LS, {"op": op.name, "bytes": out.nbytes})
    cycles = cm.ls_rearrange_cycles(out.nbytes, program.config)
    return _static(program, cycles, 0.0, info, tuple(range(n)), (n,))


def time_pe(program, op: pe.ComputeOp) -> Timer:
    """`pe.compute`: a matmul tile (cost_model.pe_matmul_cycles) or an elementwise
    tile op (pe_elementwise_cycles) on one corelet's PE array."""
    kind = op.kind.data
    shapes, elements = _tile_elements(op)
    flops = elements if op.inputs else 0  # a fill (full, iota) computes nothing
    if kind == "spyre.matmul" and len(op.inputs) == 2:
        batch, m, n, k = matmul_dims(shapes[0], shapes[1], shapes[2])
        cycles = cm.pe_matmul_cycles(m, n, k, program.config, batch)
        flops = 2 * batch * m * n * k
    else:
        cycles = cm.pe_elementwise_cycles(elements, program.config)
    info = Info(kind, PE, {"op": op.name, "flops": flops})
    return _static(program, cycles, 0.0, info, flops=flops)


def time_sfp(program, op: sfp.ComputeOp) -> Timer:
    """`sfp.compute`: one corelet's special-function pipeline (cost_model.sfp_cycles)."""
    kind = op.kind.data
    _, elements = _tile_elements(op)
    flops = elements if op.inputs else 0
    cycles = cm.sfp_cycles(kind, elements, program.config)
    if kind.removeprefix("spyre.") in cm.SFP_SORTING:  # issue 19: passes per row length
        cycles = _sort_cycles(op, program.config)
    info = Info(kind, SFP, {"op": op.name, "flops": flops})
    return _static(program, cycles, 0.0, info, flops=flops)


def _sort_cycles(op: sfp.ComputeOp, config) -> int:
    """A sorting tile op: its input's rows along `dim`, the first `k` of each kept."""
    shape = op.inputs[0].type.get_shape()
    attrs = op.op_attrs()
    axis = attrs["dim"].value.data % len(shape)
    k = attrs["k"].value.data if "k" in attrs else shape[axis]
    return cm.sort_cycles(shape[axis], k, math.prod(shape), config)


TIMINGS: dict[type, Callable[[object, Operation], Timer]] = {
    ls.LoadOp: time_move,
    ls.StoreOp: time_move,
    ls.GatherOp: time_gather,
    ls.ScatterOp: time_scatter,
    ls.RingAllreduceOp: time_allreduce,
    ls.RingAllgatherOp: time_allgather,
    ls.ComputeOp: time_rearrange,
    pe.ComputeOp: time_pe,
    sfp.ComputeOp: time_sfp,
}


def _static(
    program,
    cycles: float | tuple,
    latency: float,
    info: Info,
    reads: tuple[int, ...] = (),
    writes: tuple[int, ...] = (),
    flops: int = 0,
    lpddr: int = 0,
    ring: float = 0.0,
) -> Timer:
    """A timer whose duration and counts do not depend on the operands; `reads` and
    `writes` index the operands that are LX buffers an LS instruction reads and
    writes. LPDDR5 moves' `cycles` are (bus, channel, which channel), see
    spyre_ir/sim/lpddr.py; an all-reduce's (transfer, reduction)."""
    if not isinstance(cycles, tuple):
        cycles = float(cycles)
    if not reads and not writes:
        event = (INSTR, cycles, latency, info, (), ())

        def timer(op: Operation, operands: list) -> tuple:
            program.flops += flops
            return event

        return timer
    region = program.region

    def ls_timer(op: Operation, operands: list) -> tuple:
        program.lpddr_bytes += lpddr
        program.delivered_bytes += lpddr
        program.ring_bytes += ring
        return (INSTR, cycles, latency, info,
                tuple(region(operands[i]) for i in reads),
                tuple(region(operands[i]) for i in writes))  # fmt: skip

    return ls_timer


def matmul_dims(
    a: Sequence[int], b: Sequence[int], out: Sequence[int]
) -> tuple[int, int, int, int]:
    """(batch, m, n, k) of a matmul tile from its operand and result shapes."""
    k = a[-1]
    m = out[-2] if len(out) >= 2 and len(a) >= 2 else 1
    n = out[-1] if len(b) >= 2 else 1
    batch = math.prod(out[:-2]) if len(out) > 2 else 1
    return batch, m, n, k
