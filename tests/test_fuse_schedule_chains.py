"""spyre-schedule-chains: the ops reordered so that chains stay together, lowered to L2
and run by the L2 interpreter, match the L1 interpreter, scheduled and switched off;
scheduled, the two chains of a projection pair run in fewer kernels."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_dataflow_differential import lowered_matches
from test_sim_engine import parse

from spyre_ir.dialects import dataflow, spyre
from spyre_ir.passes.schedule_chains import chain_order, merge_duplicate_reshapes

# Two projections of one activation, each followed by a chain, in torch's order (both
# projections, then the chains), one chain reading an argument of its own.
TWO_CHAINS = """
func.func @main(%x: tensor<1x67x96xf32>, %w1: tensor<96x130xf32>, %w2: tensor<96x130xf32>, %c: tensor<67x130xf32>) -> (tensor<67x130xf32>, tensor<67x130xf32>) {
  %a = spyre.reshape %x : tensor<1x67x96xf32> -> tensor<67x96xf32>
  %p = spyre.matmul %a, %w1 : tensor<67x96xf32>, tensor<96x130xf32> -> tensor<67x130xf32>
  %b = spyre.reshape %x : tensor<1x67x96xf32> -> tensor<67x96xf32>
  %q = spyre.matmul %b, %w2 : tensor<67x96xf32>, tensor<96x130xf32> -> tensor<67x130xf32>
  %e = spyre.exp %c : tensor<67x130xf32> -> tensor<67x130xf32>
  %p1 = spyre.neg %p : tensor<67x130xf32> -> tensor<67x130xf32>
  %p2 = spyre.relu %p1 : tensor<67x130xf32> -> tensor<67x130xf32>
  %q1 = spyre.relu %q : tensor<67x130xf32> -> tensor<67x130xf32>
  %q2 = spyre.add %q1, %e : tensor<67x130xf32>, tensor<67x130xf32> -> tensor<67x130xf32>
  func.return %p2, %q2 : tensor<67x130xf32>, tensor<67x130xf32>
}"""


def inputs_of(module) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    (fn,) = module.body.block.ops
    return [rng.standard_normal([int(d) for d in a.type.get_shape()]).astype(np.float32)
            for a in fn.body.block.args]  # fmt: skip


@pytest.mark.parametrize("scheduled", [True, False], ids=["scheduled", "off"])
def test_scheduled_chains_match_l1(scheduled: bool) -> None:
    module = parse(TWO_CHAINS)
    kernels = lowered_matches(module, inputs_of(module), 1e-5, schedule_chains=scheduled)
    with_matmul = [
        k
        for k in kernels
        if any(
            getattr(op.properties.get("kind"), "data", None) == "spyre.matmul" for op in k.walk()
        )
    ]
    # Scheduled, the two projections read one A and are paired in one kernel; in
    # torch's order each reads its own flattened copy and runs alone.
    assert len(with_matmul) == (1 if scheduled else 2), [k.sym_name.data for k in kernels]


def test_every_op_follows_its_operands() -> None:
    module = parse(TWO_CHAINS)
    (fn,) = module.body.block.ops
    assert merge_duplicate_reshapes(fn.body.block) == 1
    order = chain_order(fn.body.block)
    seen = set(fn.body.block.args)
    for op in order:
        assert all(o in seen for o in op.operands), op.name
        seen.update(op.results)
    matmuls = [i for i, op in enumerate(order) if isinstance(op, spyre.MatmulOp)]
    assert matmuls[1] == matmuls[0] + 1


def test_layer_kernels_fewer_with_schedule() -> None:
    """The small bench layer (bench/layer.py --quick shape): scheduled, the head
    split transposes of q and k run in the rotary kernels, and numerics still match."""
    from bench_module import load_bench

    layer = load_bench("layer")

    torch.manual_seed(0)
    s, case = layer.SMALL, layer.QUICK_CASES[0]
    model, inputs = layer.build_layer(s), layer.make_inputs(s, case)
    module, args = layer.captured_l1(model, inputs)
    counts = {}
    for scheduled in (True, False):
        kernels = lowered_matches(module.clone(), args, 2e-2, schedule_chains=scheduled)
        counts[scheduled] = len(kernels)
    assert counts[True] <= counts[False] - 2, counts


HEAD_SPLITS = """
func.func @main(%v: tensor<67x128xf32>, %k: tensor<67x128xf32>) -> (tensor<1x2x67x64xf32>, tensor<1x2x67x64xf32>) {
  %vr = spyre.reshape %v : tensor<67x128xf32> -> tensor<1x67x2x64xf32>
  %vt = spyre.transpose %vr perm = [0, 2, 1, 3] : tensor<1x67x2x64xf32> -> tensor<1x2x67x64xf32>
  %kr = spyre.reshape %k : tensor<67x128xf32> -> tensor<1x67x2x64xf32>
  %kt = spyre.transpose %kr perm = [0, 2, 1, 3] : tensor<1x67x2x64xf32> -> tensor<1x2x67x64xf32>
  func.return %vt, %kt : tensor<1x2x67x64xf32>, tensor<1x2x67x64xf32>
}"""


@pytest.mark.parametrize("paired", [True, False], ids=["paired", "off"])
def test_relayout_pairs_match_l1(paired: bool) -> None:
    """spyre-fuse's fuse-relayout-pairs: two head splits in one kernel, or one each
    (spyre-fold-layouts off: it would make the head splits of the f16 casts views)."""
    module = parse(HEAD_SPLITS)
    kernels = lowered_matches(module, inputs_of(module), 0.0, fuse_relayout_pairs=paired,
                              fold_layouts=False)  # fmt: skip
    assert len(kernels) == (1 if paired else 2)


# Decode's KV-cache update: the new row (a projection's head split) broadcast over the
# cache positions and selected in where a mask computed in the graph says so, with
# another chain on the projection between (torch's order).
CACHE_UPDATE = """
func.func @main(%x: tensor<1x128xf32>, %w: tensor<128x128xf32>, %cache: tensor<1x2x9x64xf32>, %mi: tensor<1x1x9x1xf32>) -> (tensor<1x2x9x64xf32>, tensor<1x1x2x64xf32>) {
  %p = spyre.matmul %x, %w : tensor<1x128xf32>, tensor<128x128xf32> -> tensor<1x128xf32>
  %r = spyre.reshape %p : tensor<1x128xf32> -> tensor<1x1x2x64xf32>
  %t = spyre.transpose %r perm = [0, 2, 1, 3] : tensor<1x1x2x64xf32> -> tensor<1x2x1x64xf32>
  %q = spyre.neg %r : tensor<1x1x2x64xf32> -> tensor<1x1x2x64xf32>
  %b = spyre.broadcast_to %t : tensor<1x2x1x64xf32> -> tensor<1x2x9x64xf32>
  %z = spyre.full {value = 0.0 : f64} : tensor<f32>
  %m = spyre.gt %mi, %z : tensor<1x1x9x1xf32>, tensor<f32> -> tensor<1x1x9x1xi1>
  %s = spyre.select %m, %b, %cache : tensor<1x1x9x1xi1>, tensor<1x2x9x64xf32>, tensor<1x2x9x64xf32> -> tensor<1x2x9x64xf32>
  func.return %s, %q : tensor<1x2x9x64xf32>, tensor<1x1x2x64xf32>
}"""


def test_broadcast_comes_right_before_its_reader() -> None:
    """Scheduled, a broadcast follows the last op its reader waits for, not the op it
    reads (there it would close the transpose's group and be written to LPDDR5 at nine
    times its operand's size: the demo's decode step, 2 x 5.5 us a layer)."""
    module = parse(CACHE_UPDATE)
    (fn,) = module.body.block.ops
    order = [op.name for op in chain_order(fn.body.block)]
    at = order.index("spyre.broadcast_to")
    assert order[at + 1] == "spyre.select", order
    assert order.index("spyre.gt") < at, order


def test_no_kernel_writes_a_broadcast() -> None:
    """Lowered with the schedule, the broadcast is computed in the select's kernel from
    the small row; no kernel stores it, and numerics match L1."""
    module = parse(CACHE_UPDATE)
    inputs = inputs_of(module)
    inputs[3] = (np.arange(9) == 4).reshape(1, 1, 9, 1).astype(np.float32)
    kernels = lowered_matches(module, inputs, 1e-6)
    broadcast = [k for k in kernels if any(
        getattr(op.properties.get("kind"), "data", None) == "spyre.broadcast_to"
        for op in k.walk())]  # fmt: skip
    assert len(broadcast) == 1, [k.sym_name.data for k in kernels]
    (kernel,) = broadcast
    assert any(getattr(op.properties.get("kind"), "data", None) == "spyre.select"
               for op in kernel.walk())  # fmt: skip
    # What it stores is the select's [1, 2, 9, 64] result only, once: not the broadcast
    # too.
    stores = [op for op in kernel.walk() if isinstance(op, dataflow.StoreOp)]
    assert len({s.dest for s in stores}) == 1
