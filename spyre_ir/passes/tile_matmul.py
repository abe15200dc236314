"""spyre-tile's matmul kernels: output-stationary tiles per core, a K loop, split-K
partial sums combined by a ring all-reduce, and the epilogue on the f32 accumulator
before the store."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
)
from xdsl.ir import SSAValue

from spyre_ir import cost_model
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import card_of
from spyre_ir.passes import row_model
from spyre_ir.passes.fuse import swaps_last_two
from spyre_ir.passes.partition_cores import (
    matmul_dims,
    matmul_of,
)
from spyre_ir.passes.tile_kernel import (
    BodyBuilder,
    box_offsets,
    elem_bytes,
    new_kernel,
    split_index,
    transposed_load,
)


def tile_matmul_group(
    group: dataflow.GroupOp, plan: dataflow.MatmulPlanAttr, lx_bytes: int
) -> dataflow.KernelOp:
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
    sm, sn, sk = plan.split_mnk
    # Transposes folded into the matmul: their operand is read through `perm` loads.
    folded = {v: v.owner for v in (mm.lhs, mm.rhs) if v.owner in ops and swaps_last_two(v.owner)}
    # Restickifies folded into it (spyre-fuse): its tile loads read their input's bytes.
    resticked = {v: v.owner.input for v in (mm.lhs, mm.rhs)
                 if v.owner in ops and isinstance(v.owner, spyre.RestickifyOp)}  # fmt: skip
    epilogue = [op for op in ops if op is not mm and op not in folded.values()
                and not any(r in resticked for r in op.results)]  # fmt: skip
    try:
        mp = cost_model.plan_matmul(batch, m, n, k, elem, card_of(group), plan.cores.data,
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
