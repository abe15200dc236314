"""`spyre-decompose-long-rows`: decompose the softmax, layer_norm and rms_norm ops whose
row does not fit half of LX into primitive ops (the patterns of `spyre-decompose`).

A composite is one tile op over its row: every element it normalises over, and for a
softmax over dim d everything after d too (the row model keeps the dims from d on whole).
When one row of its input and result needs more than half of LX (`lx-bytes`, at most the
module's card's), no tile of it fits; its primitives do: the reductions stream over the
row in chunks (passes/tile_stream.py) and the elementwise ops tile along it
(row_model.fitting_rows), so a softmax over dim 0 of 512x1024 or a norm over rows of 1M
elements runs on the card, in a few passes over the row, instead of being rejected.
A topk (`spyre.sort` / `spyre.argsort` with `k`) whose row does not fit runs in two
rounds, over chunks then over their candidates (passes/split_long_topk.py).
Composites whose row fits are left whole (one pass, one kernel), and so is a float
softmax over the last dim (`stream-softmax`, on by default): spyre-tile streams it in one
kernel, an online softmax across the row's chunks (passes/tile_online_softmax.py). What
that kernel cannot do is decomposed: a softmax over another dim (its row spans several
dims) or over integers, and any softmax with `stream-softmax=false`.

    spyre-opt in.mlir -p 'spyre-decompose-long-rows{lx-bytes=65536}'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES, card_of
from spyre_ir.passes.decompose import DecomposeLayerNorm, DecomposeRmsNorm, DecomposeSoftmax
from spyre_ir.passes.split_long_topk import SplitLongTopk
from spyre_ir.passes.tile_online_softmax import streamable_softmax

COMPOSITES = (spyre.SoftmaxOp, spyre.LayerNormOp, spyre.RmsNormOp)


def row_bytes(op: Operation) -> int:
    """Bytes of one row of the composite's input and result (see the module docstring)."""
    shape = spyre.shape_of(op.operands[0])
    if isinstance(op, spyre.SoftmaxOp):
        (first,) = shape_rules.normalize_dims([op.dim.value.data], len(shape))
    else:
        first = len(shape) - op.axes_count
    per_element = sum(
        ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(v))]
        for v in (op.operands[0], op.results[0])
    )
    return math.prod(shape[first:]) * per_element


@dataclass
class _WhenTooLong(RewritePattern):
    """`pattern`, applied only to composites whose row needs more than `budget` bytes."""

    pattern: RewritePattern
    budget: int
    stream_softmax: bool

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, COMPOSITES) or row_bytes(op) <= self.budget:
            return
        if self.stream_softmax and isinstance(op, spyre.SoftmaxOp) and streamable_softmax(op):
            return  # left whole: spyre-tile streams it in one kernel
        self.pattern.match_and_rewrite(op, rewriter)


@dataclass(frozen=True)
class SpyreDecomposeLongRows(ModulePass):
    """Decompose the composites whose row does not fit half of `lx-bytes` of LX."""

    name = "spyre-decompose-long-rows"

    lx_bytes: int = DEFAULT_CONFIG.lx_bytes
    stream_softmax: bool = True
    """Leave a float softmax over the last dim whole, for spyre-tile's streaming
    softmax kernel (passes/tile_online_softmax.py); false decomposes it too."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        budget = min(self.lx_bytes, card_of(op).lx_bytes) // 2
        patterns = [DecomposeSoftmax(), DecomposeLayerNorm(), DecomposeRmsNorm()]
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [_WhenTooLong(p, budget, self.stream_softmax) for p in patterns]
                + [SplitLongTopk(budget)],  # issue 19: topk over long rows, two rounds
                dce_enabled=False,
            ),  # fmt: skip
            apply_recursively=False,
        ).rewrite_module(op)
