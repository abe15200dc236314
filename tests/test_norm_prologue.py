"""Matmul prologues (spyre-fuse-norm-prologue): an RMSNorm feeding matmuls' A computed
inside each matmul kernel. Lowered to L2 and run by the L2 interpreter (with its race
check), it matches the L1 interpreter, fused and switched off; fused, the norm adds no
kernel: its row statistics and scaled A tiles live in the matmul's."""

from __future__ import annotations

import numpy as np
import pytest
from test_dataflow_differential import lowered_matches
from test_sim_engine import parse

from spyre_ir.dialects import dataflow


def norm_matmuls(rows: int, d: int, n: int, weight: bool = True, readers: int = 2):
    """x [1, rows, d] f16 -> RMSNorm (optional weight) -> `readers` projections [d, n]."""
    x3, x32 = f"tensor<1x{rows}x{d}xf16>", f"tensor<1x{rows}x{d}xf32>"
    stat = f"tensor<1x{rows}x1xf32>"
    end = "%y" if weight else "%n16"
    mul_w = f"%y = spyre.mul %w, %n16 : tensor<{d}xf16>, {x3} -> {x3}" if weight else ""
    projections, results, args = [], [], []
    for i in range(readers):
        projections.append(f"""
  %t{i} = spyre.transpose %b{i} perm = [1, 0] : tensor<{n}x{d}xf16> -> tensor<{d}x{n}xf16>
  %a{i} = spyre.reshape {end} : {x3} -> tensor<{rows}x{d}xf16>
  %m{i} = spyre.matmul %a{i}, %t{i} : tensor<{rows}x{d}xf16>, tensor<{d}x{n}xf16> -> tensor<{rows}x{n}xf16>""")
        results.append(f"%m{i}")
        args.append(f"%b{i}: tensor<{n}x{d}xf16>")
    out = ", ".join([f"tensor<{rows}x{n}xf16>"] * readers)
    w_arg = f"%w: tensor<{d}xf16>, " if weight else ""
    return parse(f"""
func.func @main(%x: {x3}, {w_arg}{", ".join(args)}) -> ({out}) {{
  %x32 = spyre.cast %x : {x3} -> {x32}
  %two = spyre.full {{value = 2.0 : f64}} : tensor<f32>
  %sq = spyre.pow %x32, %two : {x32}, tensor<f32> -> {x32}
  %ms = spyre.mean %sq dims = [-1] keepdim : {x32} -> {stat}
  %eps = spyre.full {{value = 1.0e-05 : f64}} : tensor<f32>
  %v = spyre.add %ms, %eps : {stat}, tensor<f32> -> {stat}
  %r = spyre.rsqrt %v : {stat} -> {stat}
  %n = spyre.mul %x32, %r : {x32}, {stat} -> {x32}
  %n16 = spyre.cast %n : {x32} -> {x3}
  {mul_w}
  {"".join(projections)}
  func.return {", ".join(results)} : {out}
}}""")


def inputs_of(module) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    (fn,) = module.body.block.ops
    out = []
    for i, a in enumerate(fn.body.block.args):
        shape = [int(s) for s in a.type.get_shape()]
        scale = 1.0 if i == 0 else 0.1  # activations, then weights
        out.append((scale * rng.standard_normal(shape) + (1.0 if len(shape) == 1 else 0.0))
                   .astype(np.float16))  # fmt: skip
    return out


# An f16 result after f16 rounding of the scaled A (where L1 rounds the normalised x).
TOL = 2e-2
CASES = {
    "one-k-step": {"rows": 67, "d": 200, "n": 130},
    "k-loop": {"rows": 130, "d": 1000, "n": 96, "lx_bytes": 256 * 1024},
    "no-weight": {"rows": 72, "d": 320, "n": 64, "weight": False},
    "one-reader": {"rows": 64, "d": 256, "n": 192, "readers": 1},
}


def test_few_rows_keep_their_norm_kernel() -> None:
    """Below MIN_ROWS (decode) the norm stays a kernel of its own."""
    module = norm_matmuls(rows=4, d=256, n=128)
    assert len(lowered_matches(module, inputs_of(module), TOL)) == 2


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "off"])
@pytest.mark.parametrize("case", CASES)
def test_norm_prologue_matches_l1(case: str, fused: bool) -> None:
    params = dict(CASES[case])
    options = {k: params.pop(k) for k in ("lx_bytes",) if k in params}
    module = norm_matmuls(**params)
    kernels = lowered_matches(module, inputs_of(module), TOL,
                              **options, **({} if fused else {"fuse_norm_prologue": False}))  # fmt: skip
    # Fused: one kernel (two projections with Bs of one shape pair in it, sharing the
    # chain); off: the norm's kernel too.
    assert len(kernels) == (1 if fused else 2)
    mean_in = [any(isinstance(op, dataflow.ComputeOp) and op.kind.data == "spyre.mean"
                   for op in k.walk()) for k in kernels]  # fmt: skip
    assert all(mean_in) if fused else sum(mean_in) == 1
