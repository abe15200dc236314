"""The attention kernel: spyre-tile's lowering of an "attention" group (one
`spyre.attention`, made by spyre-fuse-attention) to one flash-attention
`dataflow.kernel`, under the plan passes/attention_plan.py chooses.

Each core group owns a contiguous range of units (`heads` query heads of one key/value
head, `rows` query positions of one batch) and walks them; each of the group's
`split_kv` cores walks its share of a unit's keys in tiles of `keys`, each tile in
chunks of `chunk` keys (separate buffers):

    load Q [1, heads, rows, d]
    m = f32 lowest (MASKED_BELOW), l = 0, acc = 0       f32 statistics per query row
    for each key tile of this core:
        load K^T [1, 1, d, chunk], V [1, 1, chunk, e], the mask, per chunk
        s_i = scale * Q K^T_i  (+ mask | where(mask, s, -inf)), keys past the end and
              (causal) keys after the query -> -inf        s_i live in LX only
        mt = rowmax(max_i s_i);  mn = max(m, mt);  alpha = exp(m - mn)
        p_i = exp(s_i - mn);  l = l * alpha + rowsum(sum_i p_i)
        acc = acc * alpha + sum_i p_i V_i;  m = mn
    split over cores: M = ring max of m; l, acc *= exp(m - M); ring sums of l, acc
    out = acc / l (0 for rows with every key masked, with zero_masked_rows), stored

The chunks' elementwise max and sum run on the PE array, so the special-function
pipeline reduces one chunk's width per row; p V accumulates into two buffers (even and
odd chunks) so both corelets' PE arrays take a share.

No NaN arises from masked keys: m starts at the lowest finite f32 rather than -inf, so
exp(-inf - m) is 0; a row with every key masked ends with l = 0 and acc / l = 0 / 0 =
NaN, as softmax over -inf gives. With a 16-bit additive mask m starts at MASKED_BELOW
instead, just above -MAXIMUM (a 16-bit -inf on the card), so its rows end with l = 0 too. A buffer updated in place (s, m, l, acc) is updated
only by ops of one unit kind and read by no other unit between two of its updates
(so `m = mn` is `m = max(m, mt)` again, on the PE array, not a copy): the unit
programs' queues then have no wait cycle.
Lengths need not be whole sticks: keys are rows of K and V, so any length tiles; tiles
overhanging the end read zeros and are masked. The kernel's IR has the same size for
any core count and length.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects.builtin import Float64Type, FloatAttr, IntegerAttr, UnitAttr
from xdsl.ir import Attribute, SSAValue

from spyre_ir import cost_model
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import card_of
from spyre_ir.interp.dlfloat16 import MAXIMUM
from spyre_ir.lowering.dataflow_to_units import CORELET
from spyre_ir.passes.attention_plan import (
    F32,
    I1,
    I64,
    AttentionPlan,
    choose_plan,
    mask_tile,
    units_per_item,
)
from spyre_ir.passes.tile_kernel import BodyBuilder, new_kernel, transposed_load

F32_LOWEST = -3.4028234663852886e38
# The running max's start with a 16-bit additive mask: a 16-bit -inf is -MAXIMUM on the
# card, and -MAXIMUM + s is finite in f32, so from F32_LOWEST a row with every key masked
# would weigh each key exp(0) and be the mean of V. From here, half a DLFloat16 place above
# -MAXIMUM (the scores that round to -MAXIMUM lie below, as torch's guard finds them
# unfused: `infinities_as_bounds`), such keys weigh exp(s - m) = 0 and the row ends with
# l = 0: zero with zero_masked_rows, as in eager. Scores of unmasked keys lie far above.
MASKED_BELOW = -(MAXIMUM - 2.0**22)
# The PE arrays of the two stages of a key tile (see AttentionKernel.key_tile).
QK, PV = 0, 1
ROWS = {"dims": dataflow.dense([-1]), "keepdim": UnitAttr()}  # a reduction over the keys


def attention_of(group: dataflow.GroupOp) -> spyre.AttentionOp:
    return next(op for op in group.body.ops if isinstance(op, spyre.AttentionOp))


def plan_attention(group: dataflow.GroupOp, cores: int) -> dataflow.AttentionPlanAttr:
    """spyre-partition-cores' plan: the cores on offer; spyre-tile picks the tiling for
    its card and records it on the kernel."""
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
        """The kernel operand `value` is read from: through a restickify in the group
        (spyre-fuse's for the mask), its input's bytes, the load changing the layout."""
        owner = value.owner
        if isinstance(owner, spyre.RestickifyOp) and value not in self.shell.memory:
            return self.shell.memory[owner.input]
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
        self.stats = {n: self.buffer((*tile, 1), F32)
                      for n in ("m", "mn", "l", "mt", "d", "alpha", "rs", "rl")}  # fmt: skip
        self.acc = self.buffer((*tile, self.e), F32)
        self.neg_inf = self.constant(-math.inf)
        self.scale = self.constant(self.op.scale.value.data)
        self.overhang = p.key_tiles * p.split_kv * p.keys > self.t
        self.length = self.constant(self.t, I64) if self.overhang else None
        self.zero = self.constant(0.0) if self.op.zero_masked_rows is not None else None
        mask = self.op.mask
        additive_16 = mask is not None and spyre.element_of(mask) not in (I1, F32)
        self.m_start = MASKED_BELOW if additive_16 else F32_LOWEST
        core = self.shell.kernel.core_id
        self.part = top.rem(core, p.split_kv)
        unit_group = top.div(core, p.split_kv)
        self.resident = None
        if p.resident_kv:
            self.resident = self.fill(top, unit_group)
        ui, ub = top.loop(p.units_per_group)
        self.unit(ub, ub.add(ub.mul(unit_group, p.units_per_group), ui))
        return self.shell.kernel

    def unit(self, ub: BodyBuilder, unit: SSAValue) -> None:
        p, g, st = self.plan, self.h // self.kvh, self.stats
        q_blocks = cost_model.ceil_div(self.s, p.rows)
        qb, rest = ub.rem(unit, q_blocks), ub.div(unit, q_blocks)
        hb = ub.rem(rest, g // p.heads)
        if self.resident is None:  # else the fill's, the same for all the core's units
            item = ub.div(rest, g // p.heads)
            self.bi, self.kv = ub.div(item, self.kvh), ub.rem(item, self.kvh)
        self.h0 = ub.add(ub.mul(self.kv, g), ub.mul(hb, p.heads))
        self.s0 = ub.mul(qb, p.rows)
        zero = ub.const(0)
        ub.emit(dataflow.LoadOp(self.mem(self.op.q), [self.bi, self.h0, self.s0, zero], self.q,
                                pad=0.0))  # fmt: skip
        for buffer, value in ((st["m"], self.m_start), (st["l"], 0.0), (self.acc, 0.0)):
            tile_op(ub, "spyre.full", [], [buffer], {"value": float_attr(value)}, corelet=PV)
        first = ub.mul(self.part, p.key_tiles)
        self.kj, kb = ub.loop(p.key_tiles)
        self.key_tile(kb, kb.mul(kb.add(first, self.kj), p.keys))
        total, acc = st["l"], self.acc
        if p.split_kv > 1:
            total, acc = self.combine(ub, acc)
        self.finish(ub, total, acc)

    def item_of(self, b: BodyBuilder, unit: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(batch, key/value head) of `unit`."""
        item = b.div(unit, units_per_item(self.op, self.plan.rows, self.plan.heads))
        return b.div(item, self.kvh), b.rem(item, self.kvh)

    def fill(self, top: BodyBuilder, unit_group: SSAValue) -> tuple[SSAValue, SSAValue]:
        """resident_kv: the core's K^T and V chunks (its units are all on one
        key/value head), loaded once before its units into one slot each of two
        resident blocks, which the key tiles of every unit read. Views of one copy
        ([1, n, ..]), like spyre-tile's resident A block: one buffer written once and
        read in the loops, not a multi-buffer whose slots rotate with them. The fill
        precedes the first unit's Q load, so no compute overlaps it
        (attention_plan.estimate_cycles counts it)."""
        p = self.plan
        n = p.key_tiles * p.chunks
        blocks = []
        for shape in ((1, 1, self.d, p.chunk), (1, 1, p.chunk, self.e)):
            whole = self.buffer((1, n, *shape), self.elt)
            blocks.append(top.emit(dataflow.SlotOp(whole, top.const(0))).results[0])
        self.bi, self.kv = self.item_of(top, top.mul(unit_group, p.units_per_group))
        kj, fb = top.loop(p.key_tiles)
        t0 = fb.mul(fb.add(fb.mul(self.part, p.key_tiles), kj), p.keys)
        zero = fb.const(0)
        for i in range(p.chunks):
            start, at = fb.add(t0, i * p.chunk), fb.add(fb.mul(kj, p.chunks), i)
            kt, v = (fb.emit(dataflow.SlotOp(blk, at)).results[0] for blk in blocks)
            fb.emit(transposed_load(self.mem(self.op.k), [self.bi, self.kv, zero, start], kt,
                                    True))  # fmt: skip
            fb.emit(dataflow.LoadOp(self.mem(self.op.v), [self.bi, self.kv, start, zero], v,
                                    pad=0.0))  # fmt: skip
        return blocks[0], blocks[1]

    def resident_chunk(self, kb: BodyBuilder, which: int, index: int) -> SSAValue:
        """The resident block's K^T (0) or V (1) chunk `index` of the key tile."""
        assert self.resident is not None
        at = kb.add(kb.mul(self.kj, self.plan.chunks), index)
        return kb.emit(dataflow.SlotOp(self.resident[which], at)).results[0]

    def load_keys(self, kb: BodyBuilder, t0: SSAValue, index: int
                  ) -> tuple[SSAValue, SSAValue | None]:  # fmt: skip
        """Load the key chunk at t0 as K^T (or take it from the resident block), and
        its mask tile."""
        p, op = self.plan, self.op
        zero = kb.const(0)
        if self.resident is not None:
            kt = self.resident_chunk(kb, 0, index)
        else:
            kt = self.buffer((1, 1, self.d, p.chunk), self.elt)
            kb.emit(transposed_load(self.mem(op.k), [self.bi, self.kv, zero, t0], kt, True))
        return kt, self.load_mask(kb, t0) if op.mask is not None else None

    def load_values(self, kb: BodyBuilder, t0: SSAValue, index: int) -> SSAValue:
        if self.resident is not None:
            return self.resident_chunk(kb, 1, index)
        v = self.buffer((1, 1, self.plan.chunk, self.e), self.elt)
        zero = kb.const(0)
        kb.emit(dataflow.LoadOp(self.mem(self.op.v), [self.bi, self.kv, t0, zero], v, pad=0.0))
        return v

    def scores(self, kb: BodyBuilder, t0: SSAValue, kt: SSAValue, mask: SSAValue | None
               ) -> SSAValue:  # fmt: skip
        """The masked, scaled scores of the key chunk at t0 in an f32 tile, on the QK^T
        stage's PE array."""
        p = self.plan
        s = self.buffer((1, p.heads, p.rows, p.chunk), F32)
        tile_op(kb, "spyre.full", [], [s], {"value": float_attr(0.0)}, corelet=QK)
        tile_op(kb, "spyre.matmul", [self.q, kt], [s], accumulate=True, corelet=QK)
        tile_op(kb, "spyre.mul", [s, self.scale], [s], corelet=QK)
        if mask is not None:
            self.apply_mask(kb, s, mask)
        self.mask_positions(kb, s, t0)
        return s

    def key_tile(self, kb: BodyBuilder, t0: SSAValue) -> None:
        """One step of the online softmax over the key tiles of a unit, in stages: the
        scores and their elementwise max on one PE array (QK), the row max, the
        exponentials and the row sum on the special-function pipelines, the statistics
        and p V on the other PE array (PV). Each unit runs its ops in order, so the QK
        stage goes on to the next tile (double-buffered) while the others finish this
        one. The order of the ops below is each unit's order: the keys load before the
        values, which the last stage reads."""
        p, st = self.plan, self.stats
        starts = [kb.add(t0, i * p.chunk) for i in range(p.chunks)]
        keys = [self.load_keys(kb, start, i) for i, start in enumerate(starts)]
        values = [self.load_values(kb, start, i) for i, start in enumerate(starts)]
        scores = [self.scores(kb, start, *key) for start, key in zip(starts, keys)]
        self.row_reduce(kb, "spyre.reduce_max", scores, st["mt"], pe=QK, sfp=0)
        # m - mn as min(m - mt, 0): m is read and updated on one unit only.
        tile_op(kb, "spyre.max", [st["m"], st["mt"]], [st["mn"]], corelet=PV)
        tile_op(kb, "spyre.sub", [st["m"], st["mt"]], [st["d"]], corelet=PV)
        tile_op(kb, "spyre.clamp", [st["d"]], [st["d"]], {"max": float_attr(0.0)}, corelet=PV)
        tile_op(kb, "spyre.max", [st["m"], st["mt"]], [st["m"]], corelet=PV)
        shape = tuple(scores[0].type.get_shape())
        exps = []
        for i, s in enumerate(scores):
            shifted, e = self.buffer(shape, F32), self.buffer(shape, F32)
            tile_op(kb, "spyre.sub", [s, st["mn"]], [shifted], corelet=PV)
            tile_op(kb, "spyre.exp", [shifted], [e], corelet=i % 2)
            exps.append(e)
        probabilities = exps
        if self.elt != F32:
            probabilities = [self.buffer(shape, self.elt) for _ in exps]
            for i, (e, prob) in enumerate(zip(exps, probabilities)):
                tile_op(kb, "spyre.cast", [e], [prob], corelet=i % 2)
        tile_op(kb, "spyre.exp", [st["d"]], [st["alpha"]], corelet=1)
        self.row_reduce(kb, "spyre.sum", exps, st["rs"], pe=PV, sfp=1)
        tile_op(kb, "spyre.mul", [self.acc, st["alpha"]], [self.acc], corelet=PV)
        for prob, v in zip(probabilities, values):
            tile_op(kb, "spyre.matmul", [prob, v], [self.acc], accumulate=True, corelet=PV)
        tile_op(kb, "spyre.mul", [st["l"], st["alpha"]], [st["l"]], corelet=PV)
        tile_op(kb, "spyre.add", [st["l"], st["rs"]], [st["l"]], corelet=PV)

    def row_reduce(self, kb: BodyBuilder, kind: str, chunks: list[SSAValue], out: SSAValue,
                   pe: int, sfp: int) -> None:  # fmt: skip
        """`out` = the row reduction (max or sum) of the chunks: elementwise on PE
        array `pe` down to one chunk, then across it on special-function pipeline
        `sfp`."""
        folded = chunks[0]
        if len(chunks) > 1:
            pairwise = {"spyre.reduce_max": "spyre.max", "spyre.sum": "spyre.add"}[kind]
            folded = self.buffer(tuple(chunks[0].type.get_shape()), F32)
            tile_op(kb, pairwise, chunks[:2], [folded], corelet=pe)
            for chunk in chunks[2:]:
                tile_op(kb, pairwise, [folded, chunk], [folded], corelet=pe)
        tile_op(kb, kind, [folded], [out], ROWS, corelet=sfp)

    def combine(self, ub: BodyBuilder, acc: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The split_kv cores of a unit meet on the ring: the row max first, then each
        core's row sums and p V, rescaled to it, add up. Buffers of their own, apart
        from the key loop's (a queue per buffer: no wait cycle through the loop's).
        m is copied out by the load/store unit, which does not read it in the loop: a
        PE array that did could also be the one waiting for m's last version."""
        st, n = self.stats, self.plan.split_kv
        shape = tuple(st["m"].type.get_shape())
        local, top, shift, alpha, total = (self.buffer(shape, F32) for _ in range(5))
        whole = self.buffer(tuple(acc.type.get_shape()), F32)
        ub.compute_named("spyre.reshape", [st["m"]], [local])
        ub.compute_named("spyre.reshape", [local], [top])
        ub.emit(dataflow.RingAllreduceOp(top, "max", n))
        ub.compute_named("spyre.sub", [local, top], [shift])
        ub.compute_named("spyre.exp", [shift], [alpha])
        ub.compute_named("spyre.mul", [st["l"], alpha], [total])
        ub.compute_named("spyre.mul", [acc, alpha], [whole])
        ub.emit(dataflow.RingAllreduceOp(total, "add", n))
        ub.emit(dataflow.RingAllreduceOp(whole, "add", n))
        return total, whole

    def load_mask(self, kb: BodyBuilder, t0: SSAValue) -> SSAValue:
        """The mask's chunk (broadcast dims stay 1), as f32 for an additive mask."""
        p, mask = self.plan, self.op.mask
        assert mask is not None
        starts = (self.bi, self.h0, self.s0, t0)
        zero = kb.const(0)
        shape = mask_tile(self.op, (1, p.heads, p.rows, p.chunk))
        offsets = [o if n > 1 else zero for o, n in zip(starts, spyre.shape_of(mask))]
        elt = spyre.element_of(mask)
        tile = self.buffer(shape, elt)
        kb.emit(dataflow.LoadOp(self.mem(mask), offsets, tile, pad=0.0))
        if elt in (I1, F32):
            return tile
        wide = self.buffer(shape, F32)
        tile_op(kb, "spyre.cast", [tile], [wide], corelet=1)
        return wide

    def apply_mask(self, kb: BodyBuilder, s: SSAValue, mask: SSAValue) -> None:
        if spyre.element_type_name(mask.type.element_type) == "i1":
            tile_op(kb, "spyre.select", [mask, s, self.neg_inf], [s], corelet=QK)
        else:
            tile_op(kb, "spyre.add", [s, mask], [s], corelet=QK)

    def mask_positions(self, kb: BodyBuilder, s: SSAValue, t0: SSAValue) -> None:
        """Keys past the end (tiles overhanging it) and, when causal, keys after the
        query position (+ offset) become -inf."""
        p, op = self.plan, self.op
        if not self.overhang and op.causal_offset is None:
            return
        zero = kb.const(0)
        col = self.buffer((1, 1, 1, p.chunk), I64)
        tile_op(kb, "spyre.iota", [], [col], iota_attrs(3, 0), [zero, zero, zero, t0], corelet=QK)
        if self.length is not None:
            valid = self.buffer((1, 1, 1, p.chunk), I1)
            tile_op(kb, "spyre.lt", [col, self.length], [valid], corelet=QK)
            tile_op(kb, "spyre.select", [valid, s, self.neg_inf], [s], corelet=QK)
        if op.causal_offset is not None:
            last = self.buffer((1, 1, p.rows, 1), I64)
            tile_op(kb, "spyre.iota", [], [last], iota_attrs(2, op.causal_offset.value.data),
                    [zero, zero, self.s0, zero], corelet=QK)  # fmt: skip
            keep = self.buffer((1, 1, p.rows, p.chunk), I1)
            tile_op(kb, "spyre.le", [col, last], [keep], corelet=QK)
            tile_op(kb, "spyre.select", [keep, s, self.neg_inf], [s], corelet=QK)

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


def tile_op(b: BodyBuilder, kind: str, inputs: list[SSAValue], outputs: list[SSAValue],
            attrs: dict[str, Attribute] | None = None, offsets: Sequence[SSAValue] = (),
            accumulate: bool = False, corelet: int | None = None) -> None:  # fmt: skip
    """A tile op; on corelet `corelet` (its PE array or special-function pipeline)."""
    op = b.emit(dataflow.ComputeOp(kind, inputs, outputs, attrs, accumulate, offsets))
    if corelet is not None:
        op.attributes[CORELET] = IntegerAttr(corelet, I64)


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
        config = card_of(group)
        if lx_bytes and lx_bytes != config.lx_bytes:
            config = config.with_options(lx_bytes=lx_bytes)
        chosen = choose_plan(op, plan.cores.data, config)
    except ValueError as e:
        raise located_error(group, f"group @{group.sym_name.data}: {e}") from None
    return AttentionKernel(group, chosen, lx_bytes).build()
