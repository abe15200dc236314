"""spyre-tile's matmul kernels: output-stationary tiles per core, a K loop, split-K
partial sums combined by a ring all-reduce, and the epilogue on the f32 accumulator
before the store.

The tiles and loops come from a pure plan (matmul_tiling.py); one emitter per variant
of it builds the loops. The emitters keep one order, which spyre-double-buffer relies
on to prefetch: in every loop that streams A or B tiles, their loads (and the ring
all-gather completing a shared A tile) open the loop body. `check_streamed_loads_lead`
verifies it on each kernel built."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import Float32Type, Float64Type, FloatAttr
from xdsl.ir import SSAValue

from spyre_ir import matmul_plan
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import card_of
from spyre_ir.passes.double_buffer import leading_loads
from spyre_ir.passes.matmul_group import (
    MatmulGroup,
    SegmentsApart,
    plan_group_tiling,
    resident_steps,
    segment_tiling,
    segments_lx_bytes,
)
from spyre_ir.passes.matmul_tiling import (
    MatmulTiling,
    MatmulVariant,
)
from spyre_ir.passes.partition_cores import matmul_dims
from spyre_ir.passes.tile_epilogue import Epilogue
from spyre_ir.passes.tile_kernel import (
    BodyBuilder,
    KernelShell,
    new_kernel,
    split_index,
    transposed_load,
)
from spyre_ir.passes.tile_prologue import (
    Prologue,
)


def tile_matmul_group(
    group: dataflow.GroupOp,
    plan: dataflow.MatmulPlanAttr,
    lx_bytes: int,
    a_resident: bool = False,
    prologue_resident: bool = True,
) -> dataflow.KernelOp:
    """Output-stationary matmul: each core owns (m, n) tiles of its split and walks K;
    split-K partial sums meet in a ring all-reduce; the epilogue runs on the f32->out
    tile before the store. `a_resident` lets the plan keep A row blocks in LX
    (A_RESIDENT); `prologue_resident`, under a norm prologue (see `plan_group_tiling`)."""
    parts = MatmulGroup.of(group)
    split = tuple(plan.split_mnk)
    split_b = plan.batch_split
    batch = matmul_dims(parts.mm)[0]
    if split_b is not None and batch % split_b:
        raise located_error(group, f"group @{group.sym_name.data}: plan split_b = {split_b} "
                                   f"does not divide the matmul's batch {batch}")  # fmt: skip
    try:
        tiling = plan_group_tiling(parts, card_of(group), plan.cores.data, split, lx_bytes,
                                   a_resident, prologue_resident, split_b)  # fmt: skip
        if parts.segments:  # planned again beside the later segments' own tiles
            room = lx_bytes - segments_lx_bytes(parts, tiling)
            tiling = plan_group_tiling(parts, card_of(group), plan.cores.data, split, room,
                                       a_resident, prologue_resident, split_b)  # fmt: skip
    except ValueError as e:
        raise located_error(group, f"group @{group.sym_name.data}: {e}") from None
    if parts.segments and tiling.variant is not MatmulVariant.A_RESIDENT:
        # Only a resident A block is read by every segment's N loop without loading A
        # again: apart, each segment computes its prologue itself.
        raise SegmentsApart
    if parts.second is not None and tiling.halves == 1:
        # A pair's two halves are its two matmuls' B tiles, one per corelet.
        tiling = replace(tiling, halves=2)
    shell = new_kernel(group, tiling.cores, lx_bytes, group.plan)
    emitter = MatmulEmitter(parts, tiling, shell)
    emitter.emit()
    check_streamed_loads_lead(shell.kernel, emitter.streamed_buffers())
    return shell.kernel


@dataclass
class Segment:
    """What one segment of a kernel emits with (see `MatmulEmitter.enter`)."""

    parts: MatmulGroup
    t: MatmulTiling
    rhs_of: list[SSAValue]
    """Per half, the B operand it streams."""
    rhs_mems: list[SSAValue]
    b_steps: list[list[SSAValue]]
    """Per K step of an iteration, per half, a B tile."""
    block_accs: list[list[SSAValue]]
    epilogue: Epilogue


class MatmulEmitter:
    """Builds one matmul kernel's body for its tiling: the buffers, then the M loop
    and the variant's loops inside it."""

    def __init__(self, parts: MatmulGroup, tiling: MatmulTiling, shell: KernelShell) -> None:
        self.parts, self.t, self.shell = parts, tiling, shell
        mm, t, b = parts.mm, tiling, shell.body
        sm, sn, sk = t.split
        core = shell.kernel.core_id
        self.ck, self.cn, self.cm = (
            b.rem(core, sk),
            b.rem(b.div(core, sk), sn),
            b.div(core, sk * sn),
        )
        # Under a batch split the batch groups are outermost: core = ((cb x sm + cm) x
        # sn + cn) x sk + ck, so each group's N and K cohorts stay as without one.
        self.cb = None
        if t.split_b:
            self.cb, self.cm = b.div(self.cm, sm), b.rem(self.cm, sm)
        blocks, rows = t.row_blocks, t.rows_per_block
        resident = t.variant is MatmulVariant.A_RESIDENT
        self.in_k_loop = bool(parts.prologue) and self.stats_in_k_loop(rows)
        self.prologue = None
        if parts.prologue and resident:
            # The fill's A tiles are the statistics' chunks: this core's slice of the
            # shared tile (the N group's cores each gather their rows' factors).
            self.prologue = Prologue(parts.prologue, b, shell.memory, rows, t.tk, blocks,
                                     matmul_dims(mm)[3], sn if t.shares_a else 1,
                                     chunk=t.tk, resident=True)  # fmt: skip
        elif self.in_k_loop:
            # One N tile: the K loop loads each A tile once, and the statistics read
            # it there (this core's slice of a shared tile), not in a loop of their own.
            self.prologue = Prologue(parts.prologue, b, shell.memory, rows, t.tk, blocks,
                                     matmul_dims(mm)[3], sn if t.shares_a else 1,
                                     chunk=t.tk)  # fmt: skip
        elif parts.prologue:
            self.prologue = Prologue(parts.prologue, b, shell.memory, rows, t.tk, blocks,
                                     matmul_dims(mm)[3], sn)  # fmt: skip
        self.lhs_mem = self.prologue.x_mem if self.prologue else self.memory_of(mm.lhs)
        self.lhs_rank, self.rhs_rank = len(spyre.shape_of(mm.lhs)), len(spyre.shape_of(mm.rhs))
        self.rank = len(spyre.shape_of(mm.result))
        lhs_el = spyre.element_of(mm.lhs)
        a_tile = t.batch_extents(self.lhs_rank) + [rows, t.tk]
        # A_RESIDENT: the M tile's A row block, one slot per K step, in place of A tiles.
        # Its slots are views of the one copy ([1, k_per, ..]): for
        # convert-dataflow-to-units it is one buffer written once per M tile and read
        # in the N loop (waited for once per M tile), not a multi-buffer whose slots
        # rotate with the loop that reads them.
        self.a_block = None
        if resident:
            whole = b.alloc([1, t.k_per, *a_tile], lhs_el)
            self.a_block = b.emit(dataflow.SlotOp(whole, b.const(0))).results[0]
        # (Resident under a prologue with a weight: the A tile x is loaded into before
        # the fill scales it into the block.)
        staged = not resident or (self.prologue is not None and self.prologue.w_tile is not None)
        self.a_bufs = [b.alloc(a_tile, lhs_el) for _ in range(blocks)] if staged else []
        self.a_parts = [b.alloc([rows // sn, t.tk], lhs_el)
                        for _ in range(blocks)] if t.shares_a else []  # fmt: skip
        # A merged group's segments (passes/fuse_segments.py; A_RESIDENT only, see
        # `tile_matmul_group`) run one after another over this M tile's A block; one of
        # the same tile widths shares the first's B tiles and accumulators (they are
        # free between the segments' N loops).
        self.segments = [self.segment(parts, t, None)]
        for later in parts.segments:
            self.segments.append(self.segment(later, segment_tiling(t, later), self.segments[0]))
        self.enter(self.segments[0])

    def segment(self, parts: MatmulGroup, t: MatmulTiling, first: Segment | None) -> Segment:
        """A segment's B operands, tiles and epilogue."""
        b, mm = self.shell.body, parts.mm
        # Per half, the B operand it streams: a pair's second half reads the second's.
        rhs_of = [parts.second.rhs if parts.second and h else mm.rhs for h in range(t.halves)]
        epilogue = Epilogue(parts, t, b, self.shell.memory, first and first.epilogue)
        rhs_mems = [self.memory_of(v) for v in rhs_of]
        if first is not None and (first.t.th, first.t.halves) == (t.th, t.halves):
            return Segment(parts, t, rhs_of, rhs_mems, first.b_steps, first.block_accs, epilogue)
        resident = t.variant is MatmulVariant.A_RESIDENT
        rhs_rank, rhs_el = len(spyre.shape_of(mm.rhs)), spyre.element_of(mm.rhs)
        # The two corelets each take half of the tile's columns: their own B tile, f32
        # accumulator, epilogue and store, sharing the A tile. A_RESIDENT's K steps per
        # iteration each have B tiles of their own.
        steps = resident_steps(t, self.shell.kernel.capacity) if resident else 1
        b_steps = [[b.alloc(t.batch_extents(rhs_rank) + [t.tk, t.th], rhs_el)
                    for _ in range(t.halves)] for _ in range(steps)]  # fmt: skip
        if t.variant is MatmulVariant.SPLIT_K:
            acc_shape = [t.split[2], t.rows_per_core, t.th]
        else:
            acc_shape = t.batch_extents(self.rank) + [t.rows_per_block, t.th]
        # Block by block, half by half: spyre.full picks the corelets in turn, so half
        # h's accumulators land on corelet h (one half: its row blocks take turns).
        accs = [[b.alloc(acc_shape, Float32Type()) for _ in range(t.halves)]
                for _ in range(t.row_blocks)]  # fmt: skip
        return Segment(parts, t, rhs_of, rhs_mems, b_steps, accs, epilogue)

    def enter(self, seg: Segment) -> None:
        """Emit `seg`'s N loop from here on (its prologue row factors are the first's)."""
        self.parts, self.t, self.rhs_of, self.rhs_mems = seg.parts, seg.t, seg.rhs_of, seg.rhs_mems
        self.b_steps, self.block_accs, self.epilogue = seg.b_steps, seg.block_accs, seg.epilogue
        self.b_bufs = seg.b_steps[0]

    def stats_in_k_loop(self, rows: int) -> bool:
        """Whether a prologue's statistics can read the K loop's A tiles (the cost
        model's rule, which its plans weigh: `matmul_plan.prologue_stats_in_k_loop`)."""
        t, share = self.t, self.t.split[1] if self.t.shares_a else 1
        return not t.a_resident and matmul_plan.prologue_stats_in_k_loop(
            rows, t.tk, share, t.k_per, t.n_per, t.split[2]
        )

    def memory_of(self, value: SSAValue) -> SSAValue:
        p, memory = self.parts, self.shell.memory
        if value in p.resticked:
            return memory[p.resticked[value]]
        return memory[p.folded[value].input] if value in p.folded else memory[value]

    def streamed_buffers(self) -> set[SSAValue]:
        """The LX buffers of the tiles a loop streams, which spyre-double-buffer
        prefetches: B tiles, and A tiles in a K loop. (PLAIN's A tile is loaded once
        per M tile, after the `remui` of its address, which is not side-effect free
        for xDSL: that load is not prefetched.)"""
        # (A_RESIDENT's A tiles are loaded at the M loop's level, into the block;
        # under a prologue in the fill loop.)
        in_k_loop = self.t.variant in (MatmulVariant.K_LOOP, MatmulVariant.ROW_BLOCKED) or \
            (self.t.variant is MatmulVariant.A_RESIDENT and self.prologue is not None)  # fmt: skip
        a_tiles = [*self.a_bufs, *self.a_parts] if in_k_loop else []
        return {*a_tiles, *(b for seg in self.segments for step in seg.b_steps for b in step)}

    # --- the M loop and the variants --------------------------------------------------

    def emit(self) -> None:
        t, b = self.t, self.shell.body
        mi, lb = b.loop(t.m_per)
        batch_dims = spyre.shape_of(self.parts.mm.result)[:-2]
        if self.cb is not None:
            # The card's division: this group's batches, each batch's M tiles of this core.
            # (A tile of `batch_tile` batches: its first batch.)
            per = t.m_tiles_per_batch
            batch = lb.add(lb.mul(self.cb, t.batch_per), lb.mul(lb.div(mi, per), t.batch_tile))
            self.m0 = lb.mul(lb.add(lb.mul(self.cm, per), lb.rem(mi, per)), t.tm)
        else:  # batch x M tiles in contiguous ranges
            item = lb.add(lb.mul(self.cm, t.m_per), mi)
            self.m0 = lb.mul(lb.rem(item, t.m_chunks), t.tm)
            batch = lb.div(item, t.m_chunks)
        self.batch_index = split_index(lb, batch, batch_dims) if batch_dims else []
        n = len(self.batch_index)
        self.a_batch = self.batch_index[n - (self.lhs_rank - 2) :] if self.lhs_rank > 2 else []
        self.b_batch = self.batch_index[n - (self.rhs_rank - 2) :] if self.rhs_rank > 2 else []
        if self.in_k_loop:
            self.prologue.begin(lb)
        elif self.prologue is not None and t.variant is not MatmulVariant.A_RESIDENT:
            tops = [self.block_top(lb, j) for j in range(t.row_blocks)]
            self.prologue.stats(lb, tops, self.cn, t.split[2])
        for seg in self.segments:
            for j in range(len(seg.epilogue.buffers)):
                at = [*self.batch_index, self.block_top(lb, j), lb.const(0)]
                seg.epilogue.load_row_inputs(lb, j, at)
        if t.variant is not MatmulVariant.A_RESIDENT:
            VARIANTS[t.variant](self, lb)
            return
        self.fill_a_block(lb)
        for seg in self.segments:  # each segment's N loop reads the block
            self.enter(seg)
            self.emit_a_resident(lb)
        self.enter(self.segments[0])

    def n_loop(self, lb: BodyBuilder) -> tuple[SSAValue, BodyBuilder, list[SSAValue]]:
        """The N loop: its iv, body and the first column of each half tile."""
        nj, nb = lb.loop(self.t.n_per)
        return nj, nb, self.n_offsets(nb, nj)

    def n_offsets(self, nb: BodyBuilder, nj: SSAValue) -> list[SSAValue]:
        """The first column of each half tile of N tile `nj`."""
        t = self.t
        if self.parts.second is not None:  # both halves: the same columns of two matmuls
            n0 = nb.add(nb.mul(self.cn, t.n_per * t.th), nb.mul(nj, t.th))
            return [n0] * t.halves
        n0 = nb.add(nb.mul(self.cn, t.n_per * t.tn), nb.mul(nj, t.tn))
        return [nb.add(n0, h * t.th) for h in range(t.halves)]

    def emit_plain(self, lb: BodyBuilder) -> None:
        """One K step per output tile: the A tile is the same for every N tile of this
        M tile, so it is loaded once, and the N loop streams B tiles."""
        k0 = lb.mul(self.ck, self.t.tk)
        self.load_a(lb, k0)
        self.gather_a(lb)
        a_tile = self.a_in(lb, 0)
        _, nb, n_half = self.n_loop(lb)
        self.load_b(nb, k0, n_half)
        self.zero_accumulators(nb)
        self.multiply(nb, a_tile)
        self.finish(nb, 0, n_half, load_inputs=True)

    def emit_split_k(self, lb: BodyBuilder) -> None:
        """PLAIN on stacked [sk, tm / sk, th] tiles (the resident A tile reshaped once),
        each core of a K group storing its slot."""
        t = self.t
        sk = t.split[2]
        k0 = lb.mul(self.ck, t.tk)
        self.load_a(lb, k0)
        self.gather_a(lb)
        a_rows = self.shell.body.alloc([sk, t.rows_per_core, t.tk],
                                       spyre.element_of(self.parts.mm.lhs))  # fmt: skip
        lb.compute_named("spyre.reshape", [self.a_in(lb, 0)], [a_rows])
        nj, nb, n_half = self.n_loop(lb)
        self.load_b(nb, k0, n_half)
        self.zero_accumulators(nb)
        accs = self.block_accs[0]
        self.multiply(nb, a_rows)
        store_stacked(nb, lb, nj, accs, self.shell.memory[self.parts.mm.result], sk,
                      (self.cn, self.ck, self.m0), (t.n_per, t.tn, t.th),
                      t.rows_per_core)  # fmt: skip

    def k_loop(self, nb: BodyBuilder, n_half: list[SSAValue]) -> tuple[SSAValue, BodyBuilder]:
        """The K loop, opened by its A and B tile loads."""
        t = self.t
        kk, kb = nb.loop(t.k_per)
        k0 = kb.add(kb.mul(self.ck, t.k_per * t.tk), kb.mul(kk, t.tk))
        self.load_a(kb, k0)
        self.load_b(kb, k0, n_half, [0])
        # The all-gather right after the first corelet's B tile: a push of the LS unit
        # carries the landing of every move issued before it, so that corelet's matmul
        # then waits for its own B tile, not for the other corelet's too.
        self.gather_a(kb)
        self.load_b(kb, k0, n_half, range(1, t.halves))
        if self.in_k_loop:
            p = self.prologue
            p.accumulate(kb, self.a_parts if p.share_n > 1 else self.a_bufs)
        return kk, kb

    def emit_k_loop(self, lb: BodyBuilder) -> None:
        _, nb, n_half = self.n_loop(lb)
        self.zero_accumulators(nb)
        _, kb = self.k_loop(nb, n_half)
        self.multiply(kb, self.a_in(kb, 0))
        if self.in_k_loop:
            self.prologue.end(nb, self.t.split[2])
        self.finish(nb, 0, n_half, load_inputs=True)

    def emit_row_blocked(self, lb: BodyBuilder) -> None:
        """The last K step block by block, so the first blocks' stores stream to LPDDR5
        while the PE arrays still compute the others (the whole tile's last matmul
        would leave LPDDR5 idle meanwhile)."""
        t, mm = self.t, self.parts.mm
        _, nb, n_half = self.n_loop(lb)
        self.zero_accumulators(nb)
        kk, kb = self.k_loop(nb, n_half)
        a_tiles = [self.a_in(kb, j) for j in range(t.row_blocks)]
        more = kb.emit(arith.CmpiOp(kk, kb.const(t.k_per - 1), "ult")).results[0]
        steps, last = kb.branch(more)
        for h in range(t.halves):
            for j in range(t.row_blocks):
                steps.compute(mm, [a_tiles[j], self.b_bufs[h]], [self.block_accs[j][h]],
                              accumulate=True)  # fmt: skip
        for j in range(t.row_blocks if self.epilogue.column_inputs else 0):
            self.epilogue.load_inputs(last, j, self.row_offsets(last, j, n_half))
        if self.in_k_loop:
            self.prologue.end(last, t.split[2])
        for j in range(t.row_blocks):
            for h in range(t.halves):
                last.compute(mm, [a_tiles[j], self.b_bufs[h]], [self.block_accs[j][h]],
                             accumulate=True)  # fmt: skip
            self.finish(last, j, n_half)

    def fill_a_block(self, lb: BodyBuilder) -> None:
        """A_RESIDENT's fill: this M tile's A tile of every K step into its slot of the
        resident block (completed over the ring when shared)."""
        t = self.t
        assert self.a_block is not None
        if self.prologue is not None:
            self.fill_with_prologue(lb)
        for step in range(t.k_per if self.prologue is None else 0):
            # unrolled: the block is written at the M loop's level
            k0 = lb.add(lb.mul(self.ck, t.k_per * t.tk), step * t.tk)
            slot = lb.emit(dataflow.SlotOp(self.a_block, lb.const(step))).results[0]
            self.load_a(lb, k0, slot)
            self.gather_a(lb, [slot])

    def emit_a_resident(self, lb: BodyBuilder) -> None:
        """After the fill (`fill_a_block`), each N tile's K loop streams only B tiles,
        reading A from the block."""
        t = self.t
        # One loop over the N tiles' K steps, `resident_steps` at a time (each step its
        # own B tiles): its B loads open the body, so spyre-double-buffer prefetches the
        # next steps' tiles, across N tiles too, and the PE arrays have that many steps'
        # B tiles in LX while LPDDR5 takes an output tile's stores (an N loop around a
        # K loop idles them for every tile's stores).
        steps = len(self.b_steps)
        groups = t.k_per // steps
        ii, sb = lb.loop(t.n_per * groups)
        nj = sb.div(ii, groups)
        kg = sb.emit(arith.SubiOp(ii, sb.mul(nj, groups))).results[0]
        n_half = self.n_offsets(sb, nj)
        ks = [sb.add(sb.mul(kg, steps), u) for u in range(steps)]
        for k, bufs in zip(ks, self.b_steps):
            k0 = sb.add(sb.mul(self.ck, t.k_per * t.tk), sb.mul(k, t.tk))
            self.load_b(sb, k0, n_half, bufs=bufs)
        self.zero_accumulators(sb.when(kg, 0))
        for k, bufs in zip(ks, self.b_steps):
            self.multiply(sb, sb.emit(dataflow.SlotOp(self.a_block, k)).results[0], bufs)
        self.finish(sb.when(kg, groups - 1), 0, n_half, load_inputs=True)

    def fill_with_prologue(self, lb: BodyBuilder) -> None:
        """A_RESIDENT's fill under a norm prologue, a loop over the M tile's K steps
        (its loads open the body: spyre-double-buffer prefetches them): each A tile of
        x is loaded once, added to the row statistics (this core's rows of it) and
        scaled by the weight into its slot of the block (without a weight it is
        loaded into the slot). The row factors follow the loop; the N loop reads the
        block and applies them to each accumulator (`finish`)."""
        t, p = self.t, self.prologue
        assert p is not None and self.a_block is not None and t.split[2] == 1
        p.begin(lb)
        kk, fb = lb.loop(t.k_per)
        k0 = fb.mul(kk, t.tk)
        if self.a_bufs:  # loaded (and gathered) into the A tile, then scaled
            self.load_a(fb, k0)
            self.gather_a(fb)
            staged = self.a_bufs[0]
            slot = fb.emit(dataflow.SlotOp(self.a_block, kk)).results[0]
        else:
            slot = staged = fb.emit(dataflow.SlotOp(self.a_block, kk)).results[0]
            self.load_a(fb, k0, slot)
            self.gather_a(fb, [slot])
        p.accumulate(fb, [self.a_parts[0] if p.share_n > 1 else staged])
        if self.a_bufs:
            p.scale_into(fb, staged, slot)
        p.end(lb, t.split[2])

    # --- the steps the variants share -------------------------------------------------

    def block_top(self, kb: BodyBuilder, j: int) -> SSAValue:
        """The first row of row block j."""
        return self.m0 if self.t.row_blocks == 1 else kb.add(self.m0, j * self.t.rows_per_block)

    def row_offsets(self, fb: BodyBuilder, j: int, n_half: list[SSAValue]) -> list[list[SSAValue]]:
        """Per half, the output offsets of row block j."""
        top = self.block_top(fb, j)
        return [[*self.batch_index, top, n_half[h]] for h in range(self.t.halves)]

    def load_a(self, kb: BodyBuilder, k0: SSAValue, into: SSAValue | None = None) -> None:
        """The A tile (its row blocks) at column k0 into the A tiles, or `into`."""
        mm, t = self.parts.mm, self.t
        lhs_b = [x if s > 1 else kb.const(0) for x, s in zip(self.a_batch, spyre.shape_of(mm.lhs))]
        for j in range(t.row_blocks):
            top = self.block_top(kb, j)
            if t.shares_a:
                # Each core of an N group loads its slice of the A block; the ring
                # completes it.
                rows = t.rows_per_block // t.split[1]
                kb.emit(dataflow.LoadOp(self.lhs_mem, [kb.add(top, kb.mul(self.cn, rows)), k0],
                                        self.a_parts[j], pad=0.0))  # fmt: skip
            else:
                dest = self.a_bufs[j] if into is None else into
                kb.emit(transposed_load(self.lhs_mem, [*lhs_b, top, k0], dest,
                                        mm.lhs in self.parts.folded))  # fmt: skip
        if self.prologue is not None:
            self.prologue.load_weight(kb, k0)

    def a_in(self, kb: BodyBuilder, j: int) -> SSAValue:
        """Row block j's A tile as the matmul reads it: scaled by the prologue, if any
        (a streamed A tile: A_RESIDENT scales each tile once, in its fill)."""
        a_tile = self.a_bufs[j]
        return self.prologue.scale(kb, j, a_tile) if self.prologue is not None else a_tile

    def gather_a(self, kb: BodyBuilder, into: Sequence[SSAValue] | None = None) -> None:
        sm, sn, sk = self.t.split
        for part, full in zip(self.a_parts, self.a_bufs if into is None else into):
            kb.emit(dataflow.RingAllgatherOp(part, full, sn, sk))

    def load_b(self, kb: BodyBuilder, k0: SSAValue, n_half: list[SSAValue],
               which: Sequence[int] | None = None,
               bufs: Sequence[SSAValue] | None = None) -> None:  # fmt: skip
        mm = self.parts.mm
        rhs_b = [x if s > 1 else kb.const(0) for x, s in zip(self.b_batch, spyre.shape_of(mm.rhs))]
        for h in range(self.t.halves) if which is None else which:
            kb.emit(transposed_load(self.rhs_mems[h], [*rhs_b, k0, n_half[h]],
                                    (bufs or self.b_bufs)[h],
                                    self.rhs_of[h] in self.parts.folded))  # fmt: skip

    def zero_accumulators(self, nb: BodyBuilder) -> None:
        for acc in [acc for row in self.block_accs for acc in row]:
            nb.compute_named("spyre.full", [], [acc], {"value": FloatAttr(0.0, Float64Type())})

    def multiply(self, kb: BodyBuilder, a_tile: SSAValue,
                 bufs: Sequence[SSAValue] | None = None) -> None:  # fmt: skip
        for h in range(self.t.halves):
            kb.compute(self.parts.mm, [a_tile, (bufs or self.b_bufs)[h]],
                       [self.block_accs[0][h]], accumulate=True)  # fmt: skip

    def finish(self, fb: BodyBuilder, j: int, n_half: list[SSAValue],
               load_inputs: bool = False) -> None:  # fmt: skip
        """Row block j of the output tile: its split-K all-reduce, cast, epilogue
        (`load_inputs`: after loading its inputs; they are issued before any block's
        stores, which wait for the epilogue: the load/store unit issues in order, so a
        load behind a store would pay the LPDDR5 latency once more) and stores."""
        t, ep = self.t, self.epilogue
        sk = t.split[2]
        for h in range(t.halves):
            if sk > 1:
                fb.emit(dataflow.RingAllreduceOp(self.block_accs[j][h], "add", sk))
            if self.prologue is not None:
                self.prologue.scale_rows(fb, j, self.block_accs[j][h])
            fb.compute_named("spyre.cast", [self.block_accs[j][h]], [ep.output_tile(j, h)])
        if load_inputs and ep.column_inputs:
            ep.load_inputs(fb, j, self.row_offsets(fb, j, n_half))
        for h, at in enumerate(self.row_offsets(fb, j, n_half)[: ep.outs]):
            ep.apply(fb, j, h)
            for value in self.parts.outputs:
                self.store(fb, ep.buffers[j][h][value], value, at)

    def store(self, fb: BodyBuilder, tile: SSAValue, value: SSAValue, at: list[SSAValue]) -> None:
        t, ep = self.t, self.epilogue
        sk = t.split[2]
        axes = ep.analysis.axes[value]
        if sk > 1 and axes == tuple(range(self.rank)) and \
                list(ep.tile_shape(value)) == ep.extents:  # fmt: skip
            # The cores of a K group hold the same reduced tile: each stores its tm / sk
            # rows, picked from the tile reshaped to [sk, .., tm / sk, th]; of a tile
            # of several batches its batch_tile / sk batches ([sk, tb / sk, tm, th]).
            tb = t.batch_tile
            rows = t.tm // sk if tb == 1 else t.tm
            inner = [*ep.extents[:-3], tb // sk] if tb > 1 else ep.extents[:-2]
            split = self.shell.body.alloc([sk, *inner, rows, t.th], spyre.element_of(value))
            fb.compute_named("spyre.reshape", [tile], [split])
            tile = fb.emit(dataflow.SlotOp(split, self.ck)).results[0]
            if tb > 1:
                first = fb.add(self.batch_index[-1], fb.mul(self.ck, tb // sk))
                at = [*self.batch_index[:-1], first, self.m0, at[-1]]
            else:
                at = [*self.batch_index, fb.add(self.m0, fb.mul(self.ck, rows)), at[-1]]
        fb.emit(dataflow.StoreOp(tile, self.shell.memory[value], ep.offsets(fb, value, at)))


VARIANTS: dict[MatmulVariant, Callable[[MatmulEmitter, BodyBuilder], None]] = {
    MatmulVariant.PLAIN: MatmulEmitter.emit_plain,
    MatmulVariant.SPLIT_K: MatmulEmitter.emit_split_k,
    MatmulVariant.K_LOOP: MatmulEmitter.emit_k_loop,
    MatmulVariant.ROW_BLOCKED: MatmulEmitter.emit_row_blocked,
    MatmulVariant.A_RESIDENT: MatmulEmitter.emit_a_resident,
}


def check_streamed_loads_lead(kernel: dataflow.KernelOp, streamed: set[SSAValue]) -> None:
    """The op-order contract with spyre-double-buffer: every load of an A or B tile
    (`streamed`), and every all-gather completing one, is among the leading loads of
    the loop it sits in, so that the pass can prefetch it."""
    for loop in [op for op in kernel.walk() if isinstance(op, scf.ForOp)]:
        leading = set(leading_loads(loop))
        for op in loop.body.block.ops:
            fills = op.dest if isinstance(op, dataflow.LoadOp) else \
                op.full if isinstance(op, dataflow.RingAllgatherBase) else None  # fmt: skip
            if fills in streamed and op not in leading:
                raise located_error(kernel, f"spyre-tile: kernel @{kernel.sym_name.data}: "
                                            f"'{op.name}' of a streamed tile does not open "
                                            "its loop body; spyre-double-buffer could not "
                                            "prefetch it")  # fmt: skip


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
