"""spyre-fuse-rotary: Llama's rotary embedding on the q and k projections runs as their
matmuls' epilogue (k's beside v's, a pair) and matches L1 and eager on the L2
interpreter and the simulated card, at whole and awkward lengths; off, it is a kernel
of its own."""

from __future__ import annotations

import capture
import numpy as np
import pytest
import torch

from spyre_ir.dialects import dataflow
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.pipelines import lower_to_dataflow, lower_to_units
from spyre_ir.sim.engine import simulate

TOL = 2e-2
HEAD = 128


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def projections(x: torch.Tensor, wq: torch.Tensor, wk: torch.Tensor, wv: torch.Tensor,
                cos: torch.Tensor, sin: torch.Tensor) -> tuple:  # fmt: skip
    """q, k and v of a Llama attention block: head split, rotary on q and k."""
    s = x.shape[1]

    def heads(w: torch.Tensor) -> torch.Tensor:
        return (x @ w.t()).view(1, s, w.shape[0] // HEAD, HEAD).transpose(1, 2)

    q, k, v = heads(wq), heads(wk), heads(wv)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin, v


def inputs(s: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    angles = torch.arange(s)[:, None] * torch.rand(HEAD // 2, generator=g)[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return [torch.randn(1, s, 256, generator=g).half(),
            (torch.randn(512, 256, generator=g) / 16).half(),
            (torch.randn(256, 256, generator=g) / 16).half(),
            (torch.randn(256, 256, generator=g) / 16).half(),
            angles.cos().half(), angles.sin().half()]  # fmt: skip


def kernels_of(module: object) -> list[str]:
    return [k.sym_name.data for k in module.walk() if isinstance(k, dataflow.KernelOp)]


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "off"])
@pytest.mark.parametrize("s,cores", [(64, 2), (17, 2), (64, 4), (64, 32)])
def test_rotary_projections_match_l1(s: int, cores: int, fused: bool) -> None:
    args = inputs(s)
    ((module, arrays),) = capture.capture(projections, args)
    want = l1.run_module(module.clone(), arrays)
    with torch.no_grad():
        eager = [t.float().numpy() for t in projections(*(a.float() for a in args))]
    lowered = lower_to_dataflow(module.clone(), cores=cores, fuse_rotary=fused)
    names = kernels_of(lowered)
    if not fused:  # the rotary of q and of k in rows kernels after the projections
        assert len(names) == 4 and sum(n.startswith("rows") for n in names) == 2, names
    elif cores == 2:  # the q kernel and the k, v pair's, rotary in their epilogues
        assert names == ["matmul_0", "matmul_1"], names
    elif cores == 4:  # 128 columns per core: q's tile on one corelet (whole heads); the
        # pair's tiles are 64 columns of k and of v, half a head: its rotary is split off
        assert names == ["matmul_0", "matmul_1_matmul", "matmul_1_heads"], names
    else:  # 32 cores: 64 columns per core, half a head: both rotaries are split off
        assert names == ["matmul_0_matmul", "matmul_0_heads", "matmul_1_matmul",
                         "matmul_1_heads"], names  # fmt: skip
    got = l2.run_module(lowered, arrays, check_races=True)
    card = simulate(lower_to_units(module.clone(), cores=cores, fuse_rotary=fused),
                    arrays).outputs  # fmt: skip
    for result in (got, card):
        for mine, l1_out, torch_out in zip(result, want, eager):
            mine = np.asarray(mine, np.float64)
            np.testing.assert_allclose(mine, l1_out.astype(np.float64), rtol=TOL, atol=TOL)
            np.testing.assert_allclose(mine, torch_out, rtol=TOL, atol=TOL)
