"""Inter-tile communication of the KTIR -> dataflow lowering: a produce op and its
delivery become a ring all-reduce over groups of consecutive cores.

* reduce, where every tile of a group produces and consumes: `dataflow.ring_allreduce`
  of the partials with the combiner's kind (add, max, min);
* consume (or reduce) from one producer per group (a broadcast): every tile computes
  the produce region (the card runs one program on every core), the group's tiles
  all-gather their partials over the ring (`dataflow.ring_allgather`) and each keeps
  the producer's slice.

Groups must be blocks of G consecutive tiles covering the grid (tile i in group i / G),
or strided groups the lowering places on consecutive cores (`strided_order`), and
consumers every tile of their group; other patterns are a located error."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from xdsl.dialects import arith
from xdsl.ir import Operation

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ktdp_intertile as kt
from spyre_ir.interp.ktir import in_set
from spyre_ir.interp.ktir_ops import combiner_name
from spyre_ir.lowering.ktir_compute import REDUCTIONS, element_of, shape_of
from spyre_ir.lowering.ktir_values import Buf, Future, Index, LoweringError

if TYPE_CHECKING:
    from spyre_ir.lowering.ktir_to_dataflow import KernelLowering

_KIND = {"spyre.sum": "add", "spyre.reduce_max": "max", "spyre.reduce_min": "min"}


def membership(set_attr, tiles: int, groups: np.ndarray, order: np.ndarray | None = None):
    """[group, core] -> whether the tile on that core (`order[core]`, the tile id; the
    core id itself when None) is in the set for that group."""
    t = np.arange(tiles) if order is None else order
    return np.asarray(in_set(set_attr, [t[None, :]], [groups[:, None]]), bool) & np.ones(
        (len(groups), tiles), bool
    )


def strided_order(fn, tiles: int) -> tuple[int, int] | None:
    """(B, S) when the kernel's inter-tile consumer groups are strided, group g being
    tiles {g, g + S, g + 2S, ...} (B of them; torch-spyre/ktir-cpu
    examples/sdsc/sdpa_pv_ksplit.mlir reduces over such groups): the lowering then runs
    tile g + k*S on core g*B + k, which makes every group a block of consecutive cores
    for the ring. None when the groups are blocks already (or there are none)."""
    found = None
    for op in fn.walk():
        if not isinstance(op, kt.InterTileConsumeOp | kt.InterTileReduceOp):
            continue
        groups = _groups(op, tiles)
        member = membership(op.consumer_tiles_per_group, tiles, groups)
        if len(groups) <= 1 or _is_blocks(member):
            return None
        stride = len(groups)
        size = tiles // stride
        want = np.zeros_like(member)
        for g in range(stride):
            want[g, g::stride] = True
        if stride * size != tiles or not (member == want).all() or found not in (None, stride):
            return None
        found = stride
    return None if found is None else (tiles // found, found)


def _is_blocks(member: np.ndarray) -> bool:
    groups, tiles = member.shape
    size = tiles // max(groups, 1)
    want = np.zeros_like(member)
    for g in range(groups):
        want[g, g * size : (g + 1) * size] = True
    return groups * size == tiles and bool((member == want).all())


def group_size(member: np.ndarray, op: Operation, what: str) -> int:
    """G when group g is exactly tiles [G*g, G*g + G) and the groups cover the grid."""
    groups, tiles = member.shape
    size = tiles // max(groups, 1)
    want = np.zeros_like(member)
    for g in range(groups):
        want[g, g * size : (g + 1) * size] = True
    if groups * size != tiles or not (member == want).all():
        raise LoweringError(
            f"'{op.name}': {what} must be blocks of consecutive tiles covering the grid "
            "(other tile sets are not supported)",
            op,
        )
    return size


def lower(lw: KernelLowering, op: Operation) -> None:
    if isinstance(op, kt.InterTileProduceOp):
        produce(lw, op)
    else:
        deliver(lw, op)  # type: ignore[arg-type]


def _groups(op: Operation, tiles: int) -> np.ndarray:
    candidates = np.arange(tiles)
    future_type = op.future.type  # type: ignore[attr-defined]
    return candidates[np.asarray(in_set(future_type.groups, [candidates]), bool)]


def produce(lw: KernelLowering, op: kt.InterTileProduceOp) -> None:
    tiles = math.prod(lw.grid)
    groups = _groups(op, tiles)
    member = membership(op.producer_tiles_per_group, tiles, groups, lw.tile_of_core)
    delivery = next(iter(op.future.uses)).operation
    consumers = membership(delivery.consumer_tiles_per_group, tiles, groups, lw.tile_of_core)  # type: ignore[attr-defined]
    size = group_size(consumers, delivery, "consumer_tiles_per_group")
    per_group = member.sum(axis=1)
    if (member == consumers).all():
        everyone, offset = True, 0
    elif (per_group == 1).all() and (member.any(axis=0) <= consumers.any(axis=0)).all():
        everyone = False
        offset = int(np.argmax(member[0]))
        if any(int(np.argmax(member[g])) != g * size + offset for g in range(len(groups))):
            raise LoweringError(
                f"'{op.name}': the producers must sit at one offset in each group", op
            )
    else:
        raise LoweringError(
            f"'{op.name}': producers must be every tile of a group, or one tile per group",
            op,
        )
    group_id = lw.emit(arith.DivUIOp(lw.core, lw.index_constant(size).value)).results[0]
    lw.env[op.body.block.args[0]] = Index(group_id, uniform=size == tiles)
    _identity(delivery)  # the combiner must be one the ring can apply
    types = op.future.type.partial_types.data
    values = lw.lower_block(op.body.block)
    partials = []
    for value, t in zip(values, types):
        shape = tuple(t.get_shape())
        part = lw.math.materialize(value, shape, t.element_type, op)
        if part is value and everyone:
            # The ring reduces in place: a copy, so a tile the kernel reads again (a
            # partial loaded before a loop that reduces it each trip) keeps its value.
            into = lw.alloc(shape, t.element_type)
            part = lw.math.materialize(value, shape, t.element_type, op, into=into)
        partials.append(part)
    lw.env[op.future] = Future(partials, size, None if everyone else offset)


def _identity(delivery: Operation) -> float:
    if isinstance(delivery, kt.InterTileConsumeOp):
        return 0.0
    name = combiner_name(delivery.combiner.block)  # type: ignore[attr-defined]
    if name not in REDUCTIONS:
        raise LoweringError(
            f"'{delivery.name}' with a combiner other than one add/max/min is not supported",
            delivery,
        )
    return REDUCTIONS[name][1]


def deliver(lw: KernelLowering, op: kt.InterTileConsumeOp | kt.InterTileReduceOp) -> None:
    future = lw.get(op.future)
    assert isinstance(future, Future)
    if isinstance(op, kt.InterTileConsumeOp):
        if future.producer is None and future.group_size > 1:
            raise LoweringError(
                f"'{op.name}' from several producers per group (routing) is not supported", op
            )
        kind = "add"
    else:
        kind = _KIND[REDUCTIONS[combiner_name(op.combiner.block)][0]]  # type: ignore[index]
    size = future.group_size
    for buf, r in zip(future.partials, op.results):
        if size == 1:
            lw.env[r] = buf
        elif future.producer is None:
            lw.emit(D.RingAllreduceOp(buf.value, kind, size))
            lw.env[r] = buf
        else:
            lw.env[r] = pick(lw, op, buf, size, future.producer)
        shape = shape_of(r.type)
        if shape != buf.shape:  # a result of the partial's elements with unit dims apart
            lw.env[r] = lw.math.materialize(lw.env[r], shape, element_of(r.type), op)


def pick(lw: KernelLowering, op: Operation, part: Buf, size: int, producer: int) -> Buf:
    """Every tile of the group ends with the producer's `part`: all-gather, then slice."""
    shape = part.lx_shape
    if not shape:
        raise LoweringError(f"'{op.name}' of a rank-0 partial is not supported", op)
    full = lw.alloc((shape[0] * size, *shape[1:]), part.element)
    lw.emit(D.RingAllgatherOp(part.value, full, size))
    out = lw.alloc(shape, part.element)
    starts = [producer * shape[0], *([0] * (len(shape) - 1))]
    stops = [(producer + 1) * shape[0], *shape[1:]]
    attrs = {"starts": D.dense(starts), "stops": D.dense(stops), "steps": D.dense([1] * len(shape))}
    lw.emit(D.ComputeOp("spyre.slice", [full], [out], attrs))
    return Buf(out, part.shape)
