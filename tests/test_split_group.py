"""spyre-tile's split of a fused rows group whose smallest tile does not fit LX
(passes/split_group.py): the group runs as one kernel per op instead of failing in
spyre-allocate-scratchpad, and its results match L1 and torch eager."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from spyre_ir import registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects import dataflow
from spyre_ir.interp import tensor as l1
from spyre_ir.pipelines import lower_to_units
from spyre_ir.sim.engine import simulate

# unfused attention's K side: k cast to f32, transposed for q k^T and scaled. One row
# of the group (T elements of f16 k, its f32 cast, transpose and product) is 14 T bytes,
# which spyre-fuse accepts; but the transpose reads k across its stick dim, so a tile
# takes one stick (64 rows) of it: 3.7 MB at T = 4,096, more than LX. It was "kernel
# @rows_1 needs 3670020 bytes of LX per core" (bench/attention.py --case ibm, unfused).
KT_SCALED = """
func.func @main(%k: tensor<Tx128xf16>) -> tensor<128xTxf32> {
  %c = spyre.cast %k : tensor<Tx128xf16> -> tensor<Tx128xf32>
  %t = spyre.transpose %c perm = [1, 0] : tensor<Tx128xf32> -> tensor<128xTxf32>
  %s = spyre.full {value = 0.25 : f64} : tensor<f32>
  %y = spyre.mul %t, %s : tensor<128xTxf32>, tensor<f32> -> tensor<128xTxf32>
  func.return %y : tensor<128xTxf32>
}"""


@pytest.mark.parametrize(("keys", "kernels"), [(4096, 3), (2048, 1)])
def test_transpose_fused_with_elementwise_ops_is_split_when_a_stick_tile_overflows_lx(
    keys: int, kernels: int
) -> None:
    # 4,096 keys: split, a kernel per op (the transpose in blocks, passes/tile_copy.py).
    # 2,048: a stick of rows (1.8 MB) fits LX once, one kernel, without double-buffering.
    text = KT_SCALED.replace("T", str(keys))
    module = parse_and_verify(registry.make_context(), text, "kt.mlir")
    k = np.random.default_rng(16).standard_normal((keys, 128)).astype(np.float16)
    (want,) = l1.run_module(module, [k])
    eager = torch.from_numpy(k).float().T * 0.25
    np.testing.assert_allclose(want, eager.numpy(), rtol=1e-6, atol=1e-6)
    lower_to_units(module)
    assert not any(isinstance(op, dataflow.KernelOp) for op in module.walk())
    assert sum(op.name == "core.program" for op in module.walk()) == kernels
    (got,) = simulate(module, [k], check_races=True).outputs
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
