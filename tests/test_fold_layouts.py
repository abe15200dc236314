"""spyre-fold-layouts: the layouts it gives are views (every element at the device
offset the relayout's result puts it), and a projection's head split, its merge back and
a [s, h] result returned as [1, s, h] lose their kernels while matching L1 and eager
(on the L2 interpreter and the simulated card)."""

from __future__ import annotations

import capture
import numpy as np
import pytest
import torch

from spyre_ir.dialects import dataflow
from spyre_ir.interp import dataflow as l2
from spyre_ir.interp import tensor as l1
from spyre_ir.layout import default_layout, host_to_device_offsets, layout_sticked_on
from spyre_ir.passes.fold_layouts import merged_layout, transposed_layout
from spyre_ir.passes.stickify import offsets_agree
from spyre_ir.pipelines import lower_to_dataflow, lower_to_units
from spyre_ir.sim.engine import simulate

TOL = 2e-2


@pytest.mark.parametrize(
    "shape,perm",
    [((1, 64, 4, 128), (0, 2, 1, 3)), ((1, 4, 64, 128), (0, 2, 1, 3)), ((2, 3, 5, 64), (1, 0, 2, 3)),
     ((3, 7, 200), (1, 0, 2)), ((2, 3, 4, 64), (2, 0, 1, 3))],
)  # fmt: skip
def test_transposed_layout_is_a_view(shape: tuple[int, ...], perm: tuple[int, ...]) -> None:
    """x in transposed_layout(T) holds x[i] at the offset T gives transpose(x)[j]."""
    result = tuple(shape[p] for p in perm)
    target = default_layout(result, 2)
    source = transposed_layout(target, perm)
    assert source.host_shape == shape
    x_offsets = host_to_device_offsets(source).reshape(shape)
    y_offsets = host_to_device_offsets(target).reshape(result)
    np.testing.assert_array_equal(np.transpose(x_offsets, perm), y_offsets)


@pytest.mark.parametrize(
    "coarse,fine",
    [((512, 4096), (1, 512, 32, 128)), ((64, 256), (1, 64, 2, 128)), ((64, 256), (1, 64, 256)),
     ((6, 640), (2, 3, 5, 128)), ((6, 128), (6, 2, 64))],
)  # fmt: skip
@pytest.mark.parametrize("target_of", ["default", "heads_first"])
def test_merged_layout_is_a_view(coarse: tuple[int, ...], fine: tuple[int, ...],
                                 target_of: str) -> None:  # fmt: skip
    """The row-major reshape of `coarse` in merged_layout(T) to `fine` is a view of T."""
    target = default_layout(fine, 2)
    if target_of == "heads_first" and len(fine) == 4:
        heads = (fine[0], fine[2], fine[1], fine[3])
        target = transposed_layout(default_layout(heads, 2), (0, 2, 1, 3))
    source = merged_layout(target, coarse)
    assert source is not None
    assert offsets_agree(source, target)


def test_merged_layout_refuses_what_no_store_writes() -> None:
    """No layout when the dims do not merge, or the stick dim would leave the last dim."""
    assert merged_layout(default_layout((1, 64, 2, 128), 2), (32, 512)) is None
    assert merged_layout(layout_sticked_on((64, 2, 128), 2, 0), (64, 256)) is None


def heads_layer(x: torch.Tensor, wq: torch.Tensor, wo: torch.Tensor, c: torch.Tensor) -> tuple:
    """A projection split into heads of 128 (returned, as a layer returns its new keys),
    scaled per position, merged back and projected again: the head split and merge of a
    Llama attention block."""
    s, heads = x.shape[1], wq.shape[0] // 128
    q = (x @ wq.t()).view(1, s, heads, 128).transpose(1, 2)
    merged = (q * c).transpose(1, 2).reshape(1, s, heads * 128)
    return q, merged @ wo.t()


def kernels_of(module: object) -> list[str]:
    return [k.sym_name.data for k in module.walk() if isinstance(k, dataflow.KernelOp)]


@pytest.mark.parametrize("folded", [True, False], ids=["folded", "off"])
@pytest.mark.parametrize("s", [64, 17])
def test_heads_match_l1(s: int, folded: bool) -> None:
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(1, s, 256, generator=g).half(),
            (torch.randn(256, 256, generator=g) / 16).half(),
            (torch.randn(256, 256, generator=g) / 16).half(),
            torch.randn(s, 128, generator=g).half()]  # fmt: skip
    ((module, arrays),) = capture.capture(heads_layer, args)
    want = l1.run_module(module.clone(), arrays)
    with torch.no_grad():
        eager = [t.float().numpy() for t in heads_layer(*(a.float() for a in args))]
    lowered = lower_to_dataflow(module.clone(), fold_layouts=folded)
    names = kernels_of(lowered)
    # Folded: the two projections and the scale, every relayout a view; off: the head
    # split, the merge and the [s, h] -> [1, s, h] output restickify are kernels too.
    assert len(names) == (3 if folded else 5), names
    got = l2.run_module(lowered, arrays, check_races=True)
    card = simulate(lower_to_units(module.clone(), fold_layouts=folded), arrays).outputs
    for result in (got, card):
        for mine, l1_out, torch_out in zip(result, want, eager):
            mine = np.asarray(mine, np.float64)
            np.testing.assert_allclose(mine, l1_out.astype(np.float64), rtol=TOL, atol=TOL)
            np.testing.assert_allclose(mine, torch_out, rtol=TOL, atol=TOL)
