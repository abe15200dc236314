"""Convolutions and sliding windows: `aten.convolution` (F.conv1d / F.conv2d, with stride,
padding, dilation, groups and bias), `aten.unfold` (Tensor.unfold) and `aten.im2col`
(F.unfold), as `spyre` data movement feeding the matmul path.

A 2-D convolution is an *im2col buffer and one matmul*, in the input's own NCHW order.
The buffer (N, C, KH*KW, OH*OW) holds, for every channel and kernel tap (kh, kw), the
window of the zero-padded input that tap sees,

    buffer[n, c, (kh, kw), (i, j)] = x_pad[n, c, i*sh + kh*dh, j*sw + kw*dw],

each tap one strided `spyre.slice`; `spyre-fuse` puts the pad, the slices and their
`spyre.concat` in one row kernel whose rows (N, C) spread over the cores. The weights
as (O, C*KH*KW) times the buffer as (N, C*KH*KW, OH*OW) is the result, already
(N, O, OH*OW): the PE arrays do every multiply-add, each output accumulated in one K
loop, and the output positions are on the stick, as a matmul's B and C want, so no
layout change is needed on either side. The bias is added along the channels. Groups
make the matmul a batched one over the groups; a depthwise convolution (one input and
one output channel per group: K = KH*KW, nothing for a PE array) is a product of the
buffer by the tap weights and a sum over the taps. A 1-D convolution is the 2-D one
with H = 1. A plane whose one-channel buffer is large is done in blocks of output
rows, each with its own buffer and matmul (`row_blocks`). docs/frontend.md ("Convolutions and sliding windows") says why this form
and what it costs.

What this module does not take runs on CPU with the reason in the warning: transposed
convolutions, 3-D convolutions, integer convolutions. F.fold (aten.col2im) is a
scatter-add, decomposed by Inductor's table to an accumulating index_put, which runs
on CPU with its own warning.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.fx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from spyre_ir import cost_model, hardware, shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_lowerings import arg, lowers, meta_shape
from spyre_ir.lowering.fx_importer import Importer, meta_dtype

aten = torch.ops.aten


# ---------------------------------------------------------------- small builders
def _typed(value: SSAValue, new_shape: Sequence[int]) -> TensorType:
    assert isinstance(value.type, TensorType)
    return TensorType(value.type.element_type, list(new_shape))


def _transpose(imp: Importer, x: SSAValue, perm: Sequence[int]) -> SSAValue:
    if list(perm) == list(range(len(perm))):
        return x
    out = shape_rules.transpose_shape(shape(x), list(perm))
    return imp.emit(spyre.TransposeOp(x, list(perm), _typed(x, out)))


def _window(imp: Importer, x: SSAValue, starts: Sequence[int], counts: Sequence[int],
            steps: Sequence[int]) -> SSAValue:  # fmt: skip
    """x[starts[d] : starts[d] + steps[d] * (counts[d] - 1) + 1 : steps[d]] per dim."""
    sizes = shape(x)
    stops = [s + st * (c - 1) + 1 for s, c, st in zip(starts, counts, steps)]
    if list(starts) == [0] * len(sizes) and list(counts) == list(sizes):
        return x
    steps = [1 if c == 1 else st for c, st in zip(counts, steps)]
    out = shape_rules.slice_shape(sizes, list(starts), stops, steps)
    return imp.emit(spyre.SliceOp(x, list(starts), stops, steps, _typed(x, out)))


def _pad(imp: Importer, x: SSAValue, low: Sequence[int], high: Sequence[int]) -> SSAValue:
    if not any(low) and not any(high):
        return x
    out = shape_rules.pad_shape(shape(x), list(low), list(high))
    return imp.emit(spyre.PadOp(x, list(low), list(high), 0.0, _typed(x, out)))


def _matmul(imp: Importer, a: SSAValue, b: SSAValue) -> SSAValue:
    out = shape_rules.matmul_shape(shape(a), shape(b))
    return imp.emit(spyre.MatmulOp(a, b, _typed(a, out)))


def out_size(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


# ---------------------------------------------------------------- convolution
def _conv_params(node: torch.fx.Node) -> tuple[list[int], list[int], list[int], int]:
    """(stride, padding, dilation, groups), each spatial list of the input's rank - 2."""
    spatial = node.args[0].meta["val"].dim() - 2
    stride, padding, dilation = (list(arg(node, i, n)) for i, n in
                                 ((3, "stride"), (4, "padding"), (5, "dilation")))  # fmt: skip
    expand = lambda v: v * spatial if len(v) == 1 else v  # noqa: E731
    return expand(stride), expand(padding), expand(dilation), int(arg(node, 8, "groups", 1))


def _convolution_check(node: torch.fx.Node) -> str | None:
    rank = node.args[0].meta["val"].dim()
    if arg(node, 6, "transposed", False):
        return "transposed convolutions (conv_transpose) are not supported"
    if rank not in (3, 4):
        return f"{rank - 2}-D convolutions are not supported (1-D and 2-D are)"
    if not meta_dtype(node).is_floating_point:
        return "convolutions of integer tensors are not supported"
    if 0 in meta_shape(node):
        return "a convolution with an empty result is not supported"
    return None


def im2col(imp: Importer, x: SSAValue, kernel: Sequence[int], dilation: Sequence[int],
           padding: Sequence[int], stride: Sequence[int]) -> SSAValue:  # fmt: skip
    """The im2col buffer of x (N, C, H, W): (N, C, KH*KW, OH*OW), element (n, c, t, l)
    = x_pad[n, c, i*sh + kh*dh, j*sw + kw*dw] for tap t = (kh, kw) and position l = (i, j).
    Each tap is one strided spyre.slice of the padded input, the taps stacked along a
    new dim."""
    n, c, h, wd = shape(x)
    (kh, kw), (oh, ow) = (
        kernel,
        (
            out_size(h, kernel[0], stride[0], padding[0], dilation[0]),
            out_size(wd, kernel[1], stride[1], padding[1], dilation[1]),
        ),
    )
    xp = _pad(imp, x, (0, 0, *padding), (0, 0, *padding))
    windows = []
    for i in range(kh):
        for j in range(kw):
            start = (0, 0, i * dilation[0], j * dilation[1])
            window = _window(imp, xp, start, (n, c, oh, ow), (1, 1, stride[0], stride[1]))
            windows.append(imp.reshape(window, (n, c, 1, oh * ow)))
    if len(windows) == 1:
        return windows[0]
    return imp.emit(spyre.ConcatOp(windows, 2, _typed(x, (n, c, kh * kw, oh * ow))))


WHOLE_LX_FRACTION = 4
"""A plane whose one-channel im2col buffer is within LX / this is one block."""
BLOCK_LX_FRACTION = 16
"""Otherwise, one channel's buffer of an output-row block stays within LX / this, so
the slice, pad, taps and concat of a block are one row kernel (spyre-fuse counts the
input rows, the taps and the buffer against half of LX). Measured with bench/conv.py
on 1x32x224x224 3x3: LX/8 blocks do not fuse (1452 us), LX/16 do (903 us), LX/32 fuse
but launch twice the kernels (1118 us)."""


def row_blocks(out_h: int, out_w: int, taps: int, elem: int, lx_bytes: int,
               per_stick: int) -> list[tuple[int, int]]:  # fmt: skip
    """(first output row, rows) of each block: the whole plane when its one-channel
    buffer (taps x out_h x out_w) is small (WHOLE_LX_FRACTION), else as few blocks as
    keep it within lx_bytes / BLOCK_LX_FRACTION, rows balanced and, where that costs
    no more blocks, rows x out_w whole sticks."""
    if taps * out_h * out_w * elem <= lx_bytes // WHOLE_LX_FRACTION:
        return [(0, out_h)]
    cap = max(1, lx_bytes // BLOCK_LX_FRACTION // (taps * out_w * elem))
    if cap >= out_h:
        return [(0, out_h)]
    rows = cost_model.ceil_div(out_h, cost_model.ceil_div(out_h, cap))
    whole = [r for r in range(rows, 0, -1) if (r * out_w) % per_stick == 0]
    if whole and cost_model.ceil_div(out_h, whole[0]) == cost_model.ceil_div(out_h, rows):
        rows = whole[0]
    return [(r, min(rows, out_h - r)) for r in range(0, out_h, rows)]


def conv2d(imp: Importer, x: SSAValue, w: SSAValue, stride: Sequence[int],
           padding: Sequence[int], dilation: Sequence[int], groups: int) -> SSAValue:  # fmt: skip
    """The convolution of x (N, C, H, W) by w (O, C/groups, KH, KW), as (N, O, OH*OW).
    A large plane is done in blocks of output rows (row_blocks): each block's rows of
    the padded input, their buffer and their matmul, the blocks' results concatenated
    along the output positions. One block is the whole plane otherwise."""
    n, _, h, wd = shape(x)
    o, _, kh, kw = shape(w)
    oh = out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = out_size(wd, kw, stride[1], padding[1], dilation[1])
    name = spyre.element_type_name(spyre.element_of(x))
    config = hardware.DEFAULT_CONFIG
    elem, per_stick = hardware.ELEMENT_BYTES[name], config.elements_per_stick(name)
    blocks = row_blocks(oh, ow, kh * kw, elem, config.lx_bytes, per_stick)
    if len(blocks) == 1:
        return conv2d_block(imp, x, w, stride, padding, dilation, groups)
    outs = []
    for first, rows in blocks:  # its input rows, sliced from x, then padded
        top = first * stride[0] - padding[0]
        bottom = top + (rows - 1) * stride[0] + (kh - 1) * dilation[0]  # inclusive
        lo, hi = max(0, top), min(h - 1, bottom)
        part = _window(imp, x, (0, 0, lo, 0), (n, shape(x)[1], hi - lo + 1, wd), (1,) * 4)
        pad_low, pad_high = (0, 0, lo - top, padding[1]), (0, 0, bottom - hi, padding[1])
        part = _pad(imp, part, pad_low, pad_high)
        outs.append(conv2d_block(imp, part, w, stride, (0, 0), dilation, groups))
    return imp.emit(spyre.ConcatOp(outs, 2, _typed(outs[0], (n, o, oh * ow))))


def conv2d_block(imp: Importer, x: SSAValue, w: SSAValue, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], groups: int) -> SSAValue:  # fmt: skip
    """One block: the weights (G, Og, Cg*T) times the im2col buffer (N, G, Cg*T, L), a
    matmul with the output positions on the stick (see the module docstring)."""
    n, c, _, _ = shape(x)
    o, cg, kh, kw = shape(w)
    cols = im2col(imp, x, (kh, kw), dilation, padding, stride)  # N, C, T, L
    t, length, og = kh * kw, shape(cols)[-1], o // groups
    if cg == 1 and og == 1:  # depthwise: a product along the taps and their sum
        taps = imp.reshape(w, (c, t, 1))
        product = imp.emit(spyre.MulOp(cols, taps, cols.type))
        return imp.emit(spyre.SumOp(product, [2], False, _typed(cols, (n, c, length))))
    if groups == 1:
        return _matmul(imp, imp.reshape(w, (o, c * t)), imp.reshape(cols, (n, c * t, length)))
    taps = imp.reshape(w, (groups, og, cg * t))
    product = _matmul(imp, taps, imp.reshape(cols, (n, groups, cg * t, length)))
    return imp.reshape(product, (n, o, length))  # N, G, Og, L -> N, O, L


@lowers(aten.convolution.default, check=_convolution_check)
def lower_convolution(imp: Importer, node: torch.fx.Node) -> SSAValue:
    dtype = meta_dtype(node)
    x = imp.cast(imp.value(node.args[0]), dtype)
    w = imp.cast(imp.value(node.args[1]), dtype)
    bias = arg(node, 2, "bias")
    stride, padding, dilation, groups = _conv_params(node)
    if len(shape(x)) == 3:  # (N, C, L) as (N, C, 1, L)
        x = imp.reshape(x, (shape(x)[0], shape(x)[1], 1, shape(x)[2]))
        w = imp.reshape(w, (shape(w)[0], shape(w)[1], 1, shape(w)[2]))
        stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
    out = conv2d(imp, x, w, stride, padding, dilation, groups)  # N, O, L
    if bias is not None:
        b = imp.reshape(imp.cast(imp.value(bias), dtype), (shape(w)[0], 1))
        out = imp.emit(spyre.AddOp(out, b, out.type))
    return imp.reshape(out, meta_shape(node))


# ---------------------------------------------------------------- sliding windows
@lowers(aten.unfold.default)
def lower_unfold(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """Tensor.unfold(dim, size, step): windows of `size` along `dim`, every `step`, in a
    new last dim. Window element k of every window is one strided slice along `dim`; the
    `size` slices stacked on a new last dim are the result."""
    x = imp.value(node.args[0])
    rank = max(len(shape(x)), 1)
    dim, size, step = int(node.args[1]) % rank, int(node.args[2]), int(node.args[3])
    out_shape = meta_shape(node)
    if not shape(x):  # a rank-0 tensor unfolds into a 1-element dim
        return imp.reshape(x, out_shape)
    count = out_shape[dim]
    counts = [count if d == dim else n for d, n in enumerate(shape(x))]
    steps = [step if d == dim else 1 for d in range(rank)]
    columns = []
    for k in range(size):
        starts = [k if d == dim else 0 for d in range(rank)]
        column = _window(imp, x, starts, counts, steps)
        columns.append(imp.reshape(column, (*shape(column), 1)))
    if len(columns) == 1:
        return imp.reshape(columns[0], out_shape)
    return imp.emit(spyre.ConcatOp(columns, rank, _typed(x, out_shape)))


@lowers(aten.im2col.default)
def lower_im2col(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """F.unfold: (N, C, H, W) -> (N, C*KH*KW, L), the buffer of `im2col` with its
    channel and tap dims merged. An unbatched (C, H, W) input is a batch of one."""
    x = imp.value(node.args[0])
    if len(shape(x)) == 3:
        x = imp.reshape(x, (1, *shape(x)))
    kernel, dilation, padding, stride = (list(node.args[i]) for i in range(1, 5))
    return imp.reshape(im2col(imp, x, kernel, dilation, padding, stride), meta_shape(node))
