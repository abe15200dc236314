"""The attention kernel: spyre-tile's lowering of an "attention" group (one
`spyre.attention`, made by spyre-fuse-attention) to one flash-attention
`dataflow.kernel`.

Work is cut into units: a unit is `heads` query heads of one key/value head (all the
heads of a group of grouped-query attention when they fit, so K and V are read once for
all of them) and `rows` query positions of one batch. Each core group owns a contiguous
range of units and walks them, walking each unit's keys in tiles of `keys`:

    load Q [1, heads, rows, d]
    m = f32 lowest, l = 0, acc = 0                      f32 statistics per query row
    for each key tile of this core:
        load K^T [1, 1, d, keys], V [1, 1, keys, e], the mask tile
        s = scale * Q K^T  (+ mask | where(mask, s, -inf)), keys past the end and
            (causal) keys after the query -> -inf      s lives in LX only
        mt = rowmax(s);  mn = max(m, mt);  alpha = exp(m - mn)
        p = exp(s - mn);  l = l * alpha + rowsum(p);  acc = acc * alpha + p V;  m = mn
    out = acc / l (0 for rows with every key masked, with zero_masked_rows), stored

When there are fewer units than cores (decode: one query row, long keys), each unit's
keys are split over `split_kv` consecutive cores, one key tile each: the cores take
their row max, meet it on the ring (max all-reduce), then exponentiate against that
global max, so their row sums and p V are final terms that a ring sum all-reduce adds
up; each core stores 1 / split_kv of the result (`split_unit`).

No NaN arises from masked keys: m starts at the lowest finite f32 rather than -inf, so
exp(-inf - m) is 0; a row with every key masked ends with l = 0 and acc / l = 0 / 0 =
NaN, as softmax over -inf gives. A buffer updated in place (s, m, l, acc) is updated
only by ops of one unit kind and read by no other unit between two of its updates
(so `m = mn` is `m = max(m, mt)` again, on the PE array, not a copy): the unit
programs' queues then have no wait cycle.
Lengths need not be whole sticks: keys are rows of K and V, so any length tiles; tiles
overhanging the end read zeros and are masked. The kernel's IR has the same size for
any core count and length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue

from spyre_ir import cost_model
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES
from spyre_ir.passes.tile_kernel import BodyBuilder, new_kernel, transposed_load

F32 = Float32Type()
I64 = IntegerType(64)
I1 = IntegerType(1)
F32_LOWEST = -3.4028234663852886e38
ROWS = {"dims": dataflow.dense([-1]), "keepdim": UnitAttr()}  # a reduction over the keys
# Key tiles are whole sticks of every mask element type (128 i1 per stick).
KEY_STEP = 128


def attention_of(group: dataflow.GroupOp) -> spyre.AttentionOp:
    return next(op for op in group.body.ops if isinstance(op, spyre.AttentionOp))


@dataclass(frozen=True)
class AttentionPlan:
    """A tiling of attention over the cores (see the module docstring)."""

    heads: int
    rows: int
    keys: int
    split_kv: int
    groups: int
    units_per_group: int
    key_tiles: int  # key tiles each core walks per unit

    @property
    def cores(self) -> int:
        return self.groups * self.split_kv


def nbytes(shape: tuple[int, ...], element: Attribute) -> int:
    return math.prod(shape) * ELEMENT_BYTES[spyre.element_type_name(element)]


def lx_need(op: spyre.AttentionOp, plan: AttentionPlan) -> int:
    """Bytes of LX the kernel's buffers take, all counted as live at once. A buffer
    written in a loop that runs more than once gets two slots (spyre-double-buffer
    prefetches loads and alternates compute buffers across iterations)."""
    _, h, s, d = spyre.shape_of(op.q)
    t, e = spyre.shape_of(op.v)[2:]
    elt, out = spyre.element_of(op.q), spyre.element_of(op.result)
    tile, scores = (1, plan.heads, plan.rows), (1, plan.heads, plan.rows, plan.keys)
    per_key = nbytes((1, 1, d, plan.keys), elt) + nbytes((1, 1, plan.keys, e), elt)
    per_key += 3 * nbytes(scores, F32) + nbytes(scores, elt)  # s, s - m, exp, p
    per_key += 8 * nbytes((*tile, 1), F32) + 2 * nbytes((1, 1, 1, plan.keys), I64)
    per_key += nbytes((1, 1, plan.rows, plan.keys), I1) + nbytes((1, 1, plan.rows, 1), I64)
    if op.mask is not None:
        full = (0, h, s, t)
        mask_tile = tuple(x if n == f and f > 1 else 1
                          for x, n, f in zip(scores, spyre.shape_of(op.mask), full))  # fmt: skip
        per_key += 2 * nbytes(mask_tile, spyre.element_of(op.mask)) + nbytes(mask_tile, F32)
    per_unit = nbytes((*tile, d), elt) + 2 * nbytes((*tile, e), F32) + nbytes((*tile, e), out)
    per_unit += 6 * nbytes((*tile, 1), F32)
    key_slots = 2 if plan.key_tiles > 1 else 1
    unit_slots = 2 if plan.units_per_group > 1 else 1
    carried = nbytes((*tile, e), F32) + 4 * nbytes((*tile, 1), F32)  # acc, m, l
    return unit_slots * (per_unit + key_slots * per_key) + carried + KEY_STEP * 64


def choose_plan(op: spyre.AttentionOp, cores: int, lx_bytes: int) -> AttentionPlan:
    """The largest query tile that fits (fewer re-reads of K and V), then the widest
    key tile; with fewer units than cores, the keys split over the idle cores."""
    s = spyre.shape_of(op.q)[2]
    kvh, t = spyre.shape_of(op.k)[1:3]
    g = spyre.shape_of(op.q)[1] // kvh
    key_cap = max(KEY_STEP, cost_model.ceil_div(max(t, 1), KEY_STEP) * KEY_STEP)
    row_options = [s] if s <= 8 else [r for r in (512, 256, 128, 64, 32, 16, 8) if r <= s]
    for heads in (g, 1):
        for rows in row_options:
            for keys in (512, 256, 128):
                if keys > key_cap:
                    continue
                plan = split(op, cores, heads, rows, keys, lx_bytes)
                if lx_need(op, plan) <= lx_bytes:
                    return plan
    raise ValueError("no attention tile fits in LX")


def split(op: spyre.AttentionOp, cores: int, heads: int, rows: int, keys: int,
          lx_bytes: int) -> AttentionPlan:  # fmt: skip
    b, h, s, _ = spyre.shape_of(op.q)
    kvh, t = spyre.shape_of(op.k)[1:3]
    units = b * kvh * (h // kvh // heads) * cost_model.ceil_div(s, rows)
    if units < cores and t > KEY_STEP:
        # Idle cores take a share of the keys each, one key tile (see split_unit).
        want = min(cores // units, cost_model.ceil_div(t, KEY_STEP))
        share = cost_model.ceil_div(cost_model.ceil_div(t, want), KEY_STEP) * KEY_STEP
        split_kv = cost_model.ceil_div(t, share)
        groups = min(units, max(1, cores // split_kv))
        plan = AttentionPlan(heads, rows, share, split_kv, groups,
                             cost_model.ceil_div(units, groups), 1)  # fmt: skip
        if lx_need(op, plan) <= lx_bytes:
            return plan
    groups = min(units, cores)
    key_tiles = cost_model.ceil_div(max(t, 1), keys)
    return AttentionPlan(heads, rows, keys, 1, groups, cost_model.ceil_div(units, groups),
                         key_tiles)  # fmt: skip


def plan_attention(group: dataflow.GroupOp, cores: int) -> dataflow.AttentionPlanAttr:
    """spyre-partition-cores' plan: the cores on offer; spyre-tile picks the tiling for
    its LX size and records it on the kernel."""
    return dataflow.AttentionPlanAttr.from_values(cores=cores)


class AttentionKernel:
    """Emits the kernel body for one plan."""

    def __init__(self, group: dataflow.GroupOp, plan: AttentionPlan, lx_bytes: int):
        self.op = op = attention_of(group)
        self.plan = plan
        self.b, self.h, self.s, self.d = spyre.shape_of(op.q)
        self.kvh, self.t = spyre.shape_of(op.k)[1:3]
        self.e = spyre.shape_of(op.v)[3]
        self.elt = spyre.element_of(op.q)
        attrs = dataflow.AttentionPlanAttr.from_values(cores=plan.cores,
                 tile=(plan.heads, plan.rows, plan.keys), split_kv=plan.split_kv)  # fmt: skip
        self.shell = new_kernel(group, plan.cores, lx_bytes, attrs)
        self.top = self.shell.body

    def mem(self, value: SSAValue) -> SSAValue:
        return self.shell.memory[value]

    def buffer(self, shape: tuple[int, ...], element: Attribute) -> SSAValue:
        return self.top.alloc(shape, element)

    def constant(self, value: float, element: Attribute = F32) -> SSAValue:
        """A [1, 1, 1, 1] buffer holding `value`, filled before the unit loop."""
        buf = self.buffer((1, 1, 1, 1), element)
        attr = float_attr(value) if element == F32 else IntegerAttr(int(value), I64)
        self.top.compute_named("spyre.full", [], [buf], {"value": attr})
        return buf

    def build(self) -> dataflow.KernelOp:
        p, top = self.plan, self.top
        tile = (1, p.heads, p.rows)
        self.q = self.buffer((*tile, self.d), self.elt)
        self.kt = self.buffer((1, 1, self.d, p.keys), self.elt)
        self.v = self.buffer((1, 1, p.keys, self.e), self.elt)
        self.stats = {n: self.buffer((*tile, 1), F32)
                      for n in ("m", "mn", "l", "mt", "d", "alpha", "rs", "rl",
)}  # fmt: skip
        self.acc = self.buffer((*tile, self.e), F32)
        self.neg_inf = self.constant(-math.inf)
        self.scale = self.constant(self.op.scale.value.data)
        self.overhang = p.key_tiles * p.split_kv * p.keys > self.t
        self.length = self.constant(self.t, I64) if self.overhang else None
        self.zero = self.constant(0.0) if self.op.zero_masked_rows is not None else None
        core = self.shell.kernel.core_id
        self.part = top.rem(core, p.split_kv)
        unit_group = top.div(core, p.split_kv)
        ui, ub = top.loop(p.units_per_group)
        self.unit(ub, ub.add(ub.mul(unit_group, p.units_per_group), ui))
        return self.shell.kernel

    def unit(self, ub: BodyBuilder, unit: SSAValue) -> None:
        p, g = self.plan, self.h // self.kvh
        q_blocks = cost_model.ceil_div(self.s, p.rows)
        qb, rest = ub.rem(unit, q_blocks), ub.div(unit, q_blocks)
        hb, item = ub.rem(rest, g // p.heads), ub.div(rest, g // p.heads)
        self.bi, self.kv = ub.div(item, self.kvh), ub.rem(item, self.kvh)
        self.h0 = ub.add(ub.mul(self.kv, g), ub.mul(hb, p.heads))
        self.s0 = ub.mul(qb, p.rows)
        zero = ub.const(0)
        ub.emit(dataflow.LoadOp(self.mem(self.op.q), [self.bi, self.h0, self.s0, zero], self.q,
                                pad=0.0))  # fmt: skip
        if p.split_kv > 1:
            self.split_unit(ub)
            return
        st = self.stats
        fill(ub, st["m"], F32_LOWEST)
        fill(ub, st["l"], 0.0)
        fill(ub, self.acc, 0.0)
        kj, kb = ub.loop(p.key_tiles)
        self.key_tile(kb, kb.mul(kj, p.keys))
        self.finish(ub, st["l"], self.acc)

    def scores(self, kb: BodyBuilder, t0: SSAValue) -> SSAValue:
        """Load the key tile at t0 (K^T, V, the mask) and compute its masked, scaled
        scores in an f32 tile."""
        p, op = self.plan, self.op
        zero = kb.const(0)
        kb.emit(transposed_load(self.mem(op.k), [self.bi, self.kv, zero, t0], self.kt, True))
        kb.emit(dataflow.LoadOp(self.mem(op.v), [self.bi, self.kv, t0, zero], self.v, pad=0.0))
        mask = self.load_mask(kb, t0) if op.mask is not None else None
        s = self.buffer((1, p.heads, p.rows, p.keys), F32)
        fill(kb, s, 0.0)
        kb.compute_named("spyre.matmul", [self.q, self.kt], [s], accumulate=True)
        kb.compute_named("spyre.mul", [s, self.scale], [s])
        if mask is not None:
            self.apply_mask(kb, s, mask)
        self.mask_positions(kb, s, t0)
        return s

    def exponentials(self, kb: BodyBuilder, s: SSAValue, top: SSAValue) -> SSAValue:
        """exp(s - top) and its row sum (into the `rs` statistic); returns the
        probabilities in the operands' type, for the PE array."""
        tile = tuple(s.type.get_shape())
        shifted, e = self.buffer(tile, F32), self.buffer(tile, F32)
        kb.compute_named("spyre.sub", [s, top], [shifted])
        kb.compute_named("spyre.exp", [shifted], [e])
        kb.compute_named("spyre.sum", [e], [self.stats["rs"]], ROWS)
        if self.elt == F32:
            return e
        probabilities = self.buffer(tile, self.elt)
        kb.compute_named("spyre.cast", [e], [probabilities])
        return probabilities

    def key_tile(self, kb: BodyBuilder, t0: SSAValue) -> None:
        """One step of the online softmax over the key tiles of a unit."""
        st = self.stats
        s = self.scores(kb, t0)
        kb.compute_named("spyre.reduce_max", [s], [st["mt"]], ROWS)
        kb.compute_named("spyre.max", [st["m"], st["mt"]], [st["mn"]])
        kb.compute_named("spyre.sub", [st["m"], st["mn"]], [st["d"]])
        kb.compute_named("spyre.exp", [st["d"]], [st["alpha"]])
        probabilities = self.exponentials(kb, s, st["mn"])
        kb.compute_named("spyre.mul", [st["l"], st["alpha"]], [st["l"]])
        kb.compute_named("spyre.add", [st["l"], st["rs"]], [st["l"]])
        kb.compute_named("spyre.mul", [self.acc, st["alpha"]], [self.acc])
        kb.compute_named("spyre.matmul", [probabilities, self.v], [self.acc], accumulate=True)
        kb.compute_named("spyre.max", [st["m"], st["mt"]], [st["m"]])

    def load_mask(self, kb: BodyBuilder, t0: SSAValue) -> SSAValue:
        """The mask's tile (broadcast dims stay 1), as f32 for an additive mask."""
        p, mask = self.plan, self.op.mask
        assert mask is not None
        full = (self.b, self.h, self.s, self.t)
        extents = (1, p.heads, p.rows, p.keys)
        starts = (self.bi, self.h0, self.s0, t0)
        mshape = spyre.shape_of(mask)
        zero = kb.const(0)
        shape = tuple(x if n == f and f > 1 else 1 for x, n, f in zip(extents, mshape, full))
        offsets = [o if n > 1 else zero for o, n in zip(starts, mshape)]
        elt = spyre.element_of(mask)
        tile = self.buffer(shape, elt)
        kb.emit(dataflow.LoadOp(self.mem(mask), offsets, tile, pad=0.0))
        if elt in (I1, F32):
            return tile
        wide = self.buffer(shape, F32)
        kb.compute_named("spyre.cast", [tile], [wide])
        return wide

    def apply_mask(self, kb: BodyBuilder, s: SSAValue, mask: SSAValue) -> None:
        if spyre.element_type_name(mask.type.element_type) == "i1":
            kb.compute_named("spyre.select", [mask, s, self.neg_inf], [s])
        else:
            kb.compute_named("spyre.add", [s, mask], [s])

    def mask_positions(self, kb: BodyBuilder, s: SSAValue, t0: SSAValue) -> None:
        """Keys past the end (tiles overhanging it) and, when causal, keys after the
        query position (+ offset) become -inf."""
        p, op = self.plan, self.op
        if not self.overhang and op.causal_offset is None:
            return
        zero = kb.const(0)
        col = self.buffer((1, 1, 1, p.keys), I64)
        kb.compute_named("spyre.iota", [], [col], iota_attrs(3, 0), [zero, zero, zero, t0])
        if self.length is not None:
            valid = self.buffer((1, 1, 1, p.keys), I1)
            kb.compute_named("spyre.lt", [col, self.length], [valid])
            kb.compute_named("spyre.select", [valid, s, self.neg_inf], [s])
        if op.causal_offset is not None:
            last = self.buffer((1, 1, p.rows, 1), I64)
            kb.compute_named("spyre.iota", [], [last],
                             iota_attrs(2, op.causal_offset.value.data),
                             [zero, zero, self.s0, zero])  # fmt: skip
            keep = self.buffer((1, 1, p.rows, p.keys), I1)
            kb.compute_named("spyre.le", [col, last], [keep])
            kb.compute_named("spyre.select", [keep, s, self.neg_inf], [s])

    def split_unit(self, ub: BodyBuilder) -> None:
        """A unit whose keys are split over its split_kv cores, one key tile each: the
        row max meets on the ring first, so each core's exponentials are final and
        the row sums and p V only add up on the ring (no rescaling)."""
        st, n = self.stats, self.plan.split_kv
        s = self.scores(ub, ub.mul(self.part, self.plan.keys))
        ub.compute_named("spyre.reduce_max", [s], [st["mt"]], ROWS)
        # Rows with every key masked keep a finite max (no -inf - -inf).
        ub.compute_named("spyre.clamp", [st["mt"]], [st["mn"]], {"min": float_attr(F32_LOWEST)})
        ub.emit(dataflow.RingAllreduceOp(st["mn"], "max", n))
        probabilities = self.exponentials(ub, s, st["mn"])
        fill(ub, self.acc, 0.0)
        ub.compute_named("spyre.matmul", [probabilities, self.v], [self.acc], accumulate=True)
        ub.emit(dataflow.RingAllreduceOp(st["rs"], "add", n))
        ub.emit(dataflow.RingAllreduceOp(self.acc, "add", n))
        self.finish(ub, st["rs"], self.acc)

    def finish(self, ub: BodyBuilder, row_sum: SSAValue, acc: SSAValue) -> None:
        p, st = self.plan, self.stats
        ub.compute_named("spyre.reciprocal", [row_sum], [st["rl"]])
        scale = st["rl"]
        if self.zero is not None:
            zero = self.zero
            some = self.buffer(tuple(st["l"].type.get_shape()), I1)
            scale = self.buffer(tuple(st["l"].type.get_shape()), F32)
            ub.compute_named("spyre.gt", [row_sum, zero], [some])
            ub.compute_named("spyre.select", [some, st["rl"], zero], [scale])
        out_elt = spyre.element_of(self.op.result)
        tile = (1, p.heads, p.rows, self.e)
        out = self.buffer(tile, F32)
        ub.compute_named("spyre.mul", [acc, scale], [out])
        if out_elt != F32:
            narrow = self.buffer(tile, out_elt)
            ub.compute_named("spyre.cast", [out], [narrow])
            out = narrow
        self.store(ub, out)

    def store(self, ub: BodyBuilder, out: SSAValue) -> None:
        """Every core of a unit holds the result: each stores its 1 / split_kv of the
        rows (or of the heads) where they divide, else all store the same values."""
        p, n = self.plan, self.plan.split_kv
        memory, zero = self.mem(self.op.result), ub.const(0)
        at = [self.bi, self.h0, self.s0, zero]
        if n > 1 and (p.heads % n == 0 or (p.heads == 1 and p.rows % n == 0)):
            by_heads = p.heads % n == 0
            piece = (1, p.heads // n, p.rows, self.e) if by_heads else (1, 1, p.rows // n, self.e)
            stacked = self.buffer((n, *piece), spyre.element_of(self.op.result))
            ub.compute_named("spyre.reshape", [out], [stacked])
            out = ub.emit(dataflow.SlotOp(stacked, self.part)).results[0]
            axis, size = (1, piece[1]) if by_heads else (2, piece[2])
            at[axis] = ub.add(at[axis], ub.mul(self.part, size))
        ub.emit(dataflow.StoreOp(out, memory, at))


def fill(b: BodyBuilder, buffer: SSAValue, value: float) -> None:
    b.compute_named("spyre.full", [], [buffer], {"value": float_attr(value)})


def float_attr(value: float) -> FloatAttr:
    return FloatAttr(float(value), Float64Type())


def iota_attrs(dim: int, start: int) -> dict[str, Attribute]:
    return {"dim": IntegerAttr(dim, I64), "start": IntegerAttr(start, I64),
            "step": IntegerAttr(1, I64)}  # fmt: skip


def tile_attention_group(
    group: dataflow.GroupOp, plan: dataflow.AttentionPlanAttr, lx_bytes: int
) -> dataflow.KernelOp:
    """The flash-attention kernel of an "attention" group."""
    op = attention_of(group)
    try:
        chosen = choose_plan(op, plan.cores.data, lx_bytes or DEFAULT_CONFIG.lx_bytes)
    except ValueError as e:
        raise located_error(group, f"group @{group.sym_name.data}: {e}") from None
    return AttentionKernel(group, chosen, lx_bytes).build()
