"""spyre-schedule-chains: the ops reordered so that chains stay together, lowered to L2
and run by the L2 interpreter, match the L1 interpreter, scheduled and switched off;
scheduled, the two chains of a projection pair run in fewer kernels."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_dataflow_differential import lowered_matches
from test_sim_engine import parse

from spyre_ir.dialects import spyre
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
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import layer

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
    """spyre-fuse's fuse-relayout-pairs: two head splits in one kernel, or one each."""
    module = parse(HEAD_SPLITS)
    kernels = lowered_matches(module, inputs_of(module), 0.0, fuse_relayout_pairs=paired)
    assert len(kernels) == (1 if paired else 2)
