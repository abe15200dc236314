"""A-resident matmul kernels (spyre-tile's A_RESIDENT variant): a core keeps its M
tile's A row block in LX while it streams the B tiles of its N tiles, so A is loaded
once per M tile, not once per N tile. The plan's choice (the cost model's, within the
card's LX) by unit tests; the kernels against the L2 interpreter (bit for bit) and L1
(to rounding), moving each tensor's bytes once. The shapes are ones the default
card's planner makes resident. A_RESIDENT is opt-in (spyre-tile's `a-resident`,
`plan_matmul(a_resident=True)`): default plans never pick it."""

from __future__ import annotations

import pytest
from test_dataflow_differential import lowered_matches
from test_matmul_split_k import matmul
from test_norm_prologue import TOL, inputs_of, norm_matmuls
from test_sim_engine import differential, lower, no_double_buffer
from xdsl.dialects import scf

from spyre_ir import matmul_plan
from spyre_ir.dialects import dataflow
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.lowering.dataflow_to_units import root_buffer
from spyre_ir.passes.matmul_group import RESIDENT_STEPS, resident_steps
from spyre_ir.passes.matmul_tiling import MatmulShape, MatmulVariant, plan_tiling

CARD = DEFAULT_CONFIG


def test_plan_keeps_a_resident_when_it_pays_and_fits() -> None:
    """64 x 4096 x 512 on one core: 32 N tiles of a K loop; resident, A is loaded once
    instead of 32 times, and the block (every K step's tile) fits LX with the rest."""
    t = plan_tiling(MatmulShape(1, 64, 4096, 512, 2), CARD, 1, (1, 1, 1), CARD.lx_bytes,
                    a_resident=True)  # fmt: skip
    assert t.variant is MatmulVariant.A_RESIDENT
    assert t.k_per > 1 and t.n_per > 1 and t.row_blocks == 1
    block = t.k_per * t.tm * t.tk * 2
    lx = matmul_plan.matmul_lx_bytes(t.tm, t.tn, t.tk, 2, 0) - 2 * t.tm * t.tk * 2 + block
    assert lx <= CARD.lx_bytes


def test_plan_streams_a_when_the_block_does_not_fit() -> None:
    """The same matmul with a K of 16384 on a card with 256 KiB of LX: the row block
    (64 x 16384 f16, 2 MiB) cannot stay, so A streams per N tile (K_LOOP)."""
    small = CARD.with_options(lx_bytes=256 * 1024)
    shape = MatmulShape(1, 64, 4096, 16384, 2)
    t = plan_tiling(shape, small, 1, (1, 1, 1), small.lx_bytes, a_resident=True)
    assert t.variant is MatmulVariant.K_LOOP
    assert t.k_per * t.tm * t.tk * 2 > small.lx_bytes


def test_cost_model_prefers_resident_for_the_8b_gate_up_pair() -> None:
    """Prefill 512 of the 8B layer, gate and up side by side (512 x 28672 x 4096): the
    estimate with A resident is below the best without (each A tile was loaded once per
    N tile of a core)."""
    best = matmul_plan.plan_matmul(1, 512, 2 * 14336, 4096, 2, CARD, CARD.cores, paired=True,
                          a_resident=True)  # fmt: skip
    assert best.a_resident
    split = (best.split_m, best.split_n, best.split_k)
    streamed = min(
        (p for p in [matmul_plan.plan_matmul(1, 512, 2 * 14336, 4096, 2, CARD, CARD.cores, split=s,
                                    paired=True, a_resident=True) for s in [(4, 8, 1), (8, 4, 1), (2, 16, 1)]]
         if not p.a_resident), key=lambda p: p.estimate_s, default=None)  # fmt: skip
    if streamed is not None:
        assert best.estimate_s <= streamed.estimate_s
    assert split[0] * split[1] * split[2] == CARD.cores


def kernel_of(text: str, cores: int) -> dataflow.KernelOp:
    passes = f"spyre-fuse,spyre-partition-cores{{cores={cores}}},spyre-tile{{a-resident=true}}"
    module = lower(text, passes, CARD)
    (kernel,) = [op for op in module.walk() if isinstance(op, dataflow.KernelOp)]
    return kernel


def resident_fill(kernel: dataflow.KernelOp) -> list[dataflow.LoadOp]:
    """The loads (or all-gathers, for a shared A tile) into the resident block's
    slots, at the M loop's level (the fill, unrolled), after checking the loop nest: M,
    then one loop over the (N tile, K step) pairs inside it."""
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 2, "not the A_RESIDENT loop nest"
    m_loop, steps = loops
    assert steps.parent_op() is m_loop
    fills = [op.dest if isinstance(op, dataflow.LoadOp) else
             op.full if isinstance(op, dataflow.RingAllgatherBase) else None
             for op in m_loop.body.block.ops]  # fmt: skip
    return [op for op, f in zip(m_loop.body.block.ops, fills)
            if f is not None and isinstance(f.owner, dataflow.SlotOp)]  # fmt: skip


def test_kernel_fills_the_block_then_streams_b() -> None:
    """The M loop loads every K step's A tile into its slot of the block, then the N
    loop's K loop loads B tiles only."""
    kernel = kernel_of(matmul(64, 4096, 512), 1)
    t = plan_tiling(MatmulShape(1, 64, 4096, 512, 2), CARD, 1, (1, 1, 1), CARD.lx_bytes, True)
    fill = resident_fill(kernel)
    assert len(fill) == t.k_per
    a_mem = fill[0].source
    assert all(op.source is a_mem for op in fill)
    (n_loop,) = [op for op in kernel.walk() if isinstance(op, scf.ForOp)][1:2]
    inner = [op for op in n_loop.walk() if isinstance(op, dataflow.LoadOp)]
    assert inner and all(op.source is not a_mem for op in inner)


# cores, m, n, k, bias, forced (b, m, n, k) split
CASES = {
    # One core, 32 N tiles: A once instead of 32 times.
    "one-core": (1, 64, 4096, 512, False, ()),
    # N split over two cores sharing each A tile (a slice each, the ring completes it),
    # K over two: the reduced tiles' all-reduce. (With K = 512 each core's 256 of K
    # are one K step, which loads A once already: nothing to keep.)
    "shared-split-k": (4, 32, 4096, 2048, False, (1, 1, 2, 2)),
    # A bias epilogue on each N tile.
    "epilogue": (1, 64, 4096, 512, True, ()),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("lowering", ["double-buffered", "single-buffered"])
def test_a_resident_matches_and_loads_a_once(case: str, lowering: str) -> None:
    cores, m, n, k, bias, split = CASES[case]
    text = matmul(m, n, k, bias, split)
    assert resident_fill(kernel_of(text, cores))
    pipeline = f"spyre-to-units{{cores={cores} a-resident=true}}" if lowering == \
        "double-buffered" else no_double_buffer(cores).replace(
            "spyre-tile", "spyre-tile{a-resident=true}")  # fmt: skip
    result = differential(text, pipeline, config=CARD)
    (report,) = result.report["kernels"]
    a, b, c = -(-k // 64) * m, -(-n // 64) * k, -(-n // 64) * m
    assert report["lpddr_bytes"] == 128 * (a + b + c + (-(-n // 64) * cores if bias else 0))


def test_default_plans_never_pick_a_resident() -> None:
    """Off by default: the shapes above (and the 8B gate/up pair, where the estimate
    prefers it) plan without A_RESIDENT, and spyre-tile without the option builds the
    K loop that streams A."""
    shape = MatmulShape(1, 64, 4096, 512, 2)
    assert plan_tiling(shape, CARD, 1, (1, 1, 1), CARD.lx_bytes).variant is not \
        MatmulVariant.A_RESIDENT  # fmt: skip
    for args in [(1, 64, 4096, 512), (1, 32, 4096, 512), (1, 512, 2 * 14336, 4096)]:
        for cores in (1, 4, CARD.cores):
            assert not matmul_plan.plan_matmul(
                *args, 2, CARD, cores, paired=args[2] > 4096
            ).a_resident
    module = lower(matmul(64, 4096, 512), "spyre-fuse,spyre-partition-cores{cores=1},spyre-tile",
                   CARD)  # fmt: skip
    assert not [op for op in module.walk() if isinstance(op, dataflow.SlotOp)]


def resident_blocks(kernels: list[dataflow.KernelOp], rows: int) -> list[dataflow.AllocLxOp]:
    """The resident blocks: one LX buffer of every K step's A tile, [1, k_per, rows, tk]."""
    return [op for k in kernels for op in k.walk() if isinstance(op, dataflow.AllocLxOp)
            and len(op.results[0].type.get_shape()) == 4
            and op.results[0].type.get_shape()[2] == rows]  # fmt: skip


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "streamed"])
@pytest.mark.parametrize("prologue", [True, False], ids=["prologue", "norm-kernel"])
def test_norm_prologue_keeps_the_scaled_block(prologue: bool, resident: bool) -> None:
    """A matmul reading an RMSNorm through its prologue keeps its M tile's scaled A
    block in LX (spyre-tile's `prologue-resident`, on by default, without `a-resident`):
    its fill loop is the only loop reading x, and the statistics are computed there.
    With the switch off, A streams and the statistics have a loop of their own; with
    the norm in a kernel of its own the matmul streams A (`a-resident` is off). All
    match L1."""
    module = norm_matmuls(rows=64, d=512, n=4096, readers=1)
    kernels = lowered_matches(module, inputs_of(module), TOL, cores=1,
                              prologue_resident=resident, fuse_norm_prologue=prologue)  # fmt: skip
    assert len(kernels) == (1 if prologue else 2)
    assert bool(resident_blocks(kernels, 64)) == (prologue and resident)
    if prologue:
        (kernel,) = kernels
        x = kernel.body.block.args[1]

        def loop_of(op: dataflow.ComputeOp) -> scf.ForOp:
            while not isinstance(op, scf.ForOp):
                op = op.parent_op()
            return op

        def computes(kind: str) -> list[dataflow.ComputeOp]:
            return [op for op in kernel.walk()
                    if isinstance(op, dataflow.ComputeOp) and op.kind.data == kind]  # fmt: skip

        def loads_x(loop: scf.ForOp) -> bool:
            return any(isinstance(op, dataflow.LoadOp) and op.source is x for op in loop.walk())

        (mean,) = computes("spyre.mean")
        stats = loop_of(mean)
        steps = {loop_of(op) for op in computes("spyre.matmul")}
        assert loads_x(stats) and stats not in steps
        # Resident: x is loaded only by the fill, which also scales it into the block;
        # the matmuls' loop reads the block.
        blocks = resident_blocks(kernels, 64)
        writes_block = [op for op in computes("spyre.mul")
                        if root_buffer(op.outputs[0]).owner in blocks]  # fmt: skip
        assert bool(writes_block) == resident
        assert all(loop_of(op) is stats for op in writes_block)
        if resident:
            assert not any(loads_x(loop) for loop in steps)


def test_norm_prologue_without_weight_fills_the_block_directly() -> None:
    """An RMSNorm without a weight: the fill loads x's tiles straight into the block's
    slots and the statistics read them there. Matches L1."""
    module = norm_matmuls(rows=64, d=512, n=4096, readers=1, weight=False)
    (kernel,) = lowered_matches(module, inputs_of(module), TOL, cores=1)
    (block,) = resident_blocks([kernel], 64)
    x = kernel.body.block.args[1]
    fills = [op for op in kernel.walk() if isinstance(op, dataflow.LoadOp) and op.source is x]
    assert fills and all(root_buffer(op.dest).owner is block for op in fills)
    (mean,) = [op for op in kernel.walk()
               if isinstance(op, dataflow.ComputeOp) and op.kind.data == "spyre.mean"]  # fmt: skip
    fill_loop = mean.parent_op()
    assert isinstance(fill_loop, scf.ForOp)
    assert any(isinstance(op, dataflow.LoadOp) and op.source is x for op in fill_loop.walk())
    assert not [op for op in fill_loop.walk()
                if isinstance(op, dataflow.ComputeOp) and op.kind.data == "spyre.matmul"]  # fmt: skip


def test_resident_steps_per_iteration_fit_lx() -> None:
    """The 8B prefill gate/up pair's resident tiling (split 4 x 8): four K steps per
    iteration, each with its own two slots of B tiles, fit the card's LX; in less LX
    the loop takes fewer steps at a time, and always a divisor of the K steps."""
    shape = MatmulShape(1, 512, 2 * 14336, 4096, 2, 28, paired=True)
    t = plan_tiling(shape, CARD, CARD.cores, (4, 8, 1), CARD.lx_bytes, a_resident=True)
    assert t.variant is MatmulVariant.A_RESIDENT
    assert resident_steps(t, CARD.lx_bytes) == RESIDENT_STEPS == 4
    step = 2 * t.tk * t.tn * 2
    tight = CARD.lx_bytes - 2 * step
    assert resident_steps(t, tight) < RESIDENT_STEPS
    assert t.k_per % resident_steps(t, tight) == 0
