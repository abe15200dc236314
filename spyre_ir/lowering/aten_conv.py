"""Convolutions and sliding windows: `aten.convolution` (F.conv1d / F.conv2d, with stride,
padding, dilation, groups and bias), `aten.unfold` (Tensor.unfold) and `aten.im2col`
(F.unfold), as `spyre` data movement feeding the matmul path.

A 2-D convolution is a *sum of shifted matmuls*. With the input turned channels-last
(N, H, W, C: the channels on the stick, the contraction dim a matmul wants there) and
zero-padded, each kernel tap (kh, kw) reads one strided window of it,

    window[n, i, j, c] = x_pad[n, kh*dh + i*sh, kw*dw + j*sw, c]   (a spyre.slice with steps)

and contributes `window.reshape(M, C) @ w[:, :, kh, kw].T` (M = N*OH*OW) to the result,
so the PE arrays do every multiply-add and the K loop of each matmul accumulates in f32.
The KH*KW partial results are added; the bias is added along the channel dim before the
result goes back to N, O, OH, OW. Groups make each tap a batched matmul over the groups;
depthwise convolutions (one input and one output channel per group) make it an
elementwise multiply by the tap's weights broadcast along the stick. A 1-D convolution
is the 2-D one with H = 1. See docs/frontend.md ("Convolutions") for why this form
and not an im2col buffer.

What this module does not take runs on CPU with the reason in the warning: transposed
convolutions, 3-D convolutions, and F.fold (aten.col2im: a scatter-add).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.fx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from spyre_ir import shape_rules
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


def _add(imp: Importer, acc: SSAValue | None, term: SSAValue) -> SSAValue:
    return term if acc is None else imp.emit(spyre.AddOp(acc, term, term.type))


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


def _tap_weights(imp: Importer, w: SSAValue, groups: int) -> SSAValue:
    """w (O, Cg, KH, KW) as (KH, KW, G, Cg, Og): one (G, Cg, Og) matrix per tap."""
    o, cg, kh, kw = shape(w)
    w5 = imp.reshape(w, (groups, o // groups, cg, kh, kw))
    return _transpose(imp, w5, (3, 4, 0, 2, 1))


def _tap_term(imp: Importer, window: SSAValue, taps: SSAValue, kh: int, kw: int,
              groups: int) -> SSAValue:  # fmt: skip
    """One tap's contribution, (N, OH, OW, O), from its window (N, OH, OW, C)."""
    n, oh, ow, c = shape(window)
    _, _, g, cg, og = shape(taps)
    tap = _window(imp, taps, (kh, kw, 0, 0, 0), (1, 1, g, cg, og), (1,) * 5)
    m = n * oh * ow
    if cg == 1 and og == 1:  # depthwise: an elementwise product along the stick
        return imp.emit(spyre.MulOp(window, imp.reshape(tap, (c,)), window.type))
    if g == 1:
        product = _matmul(imp, imp.reshape(window, (m, c)), imp.reshape(tap, (cg, og)))
        return imp.reshape(product, (n, oh, ow, og))
    per_group = _transpose(imp, imp.reshape(window, (m, g, cg)), (1, 0, 2))  # G, M, Cg
    product = _matmul(imp, per_group, imp.reshape(tap, (g, cg, og)))  # G, M, Og
    return imp.reshape(_transpose(imp, product, (1, 0, 2)), (n, oh, ow, g * og))


def conv2d_nhwc(imp: Importer, x: SSAValue, w: SSAValue, stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], groups: int) -> SSAValue:  # fmt: skip
    """The convolution of x (N, C, H, W) by w (O, C/groups, KH, KW), channels-last:
    (N, OH, OW, O). See the module docstring."""
    _, _, h, wd = shape(x)
    o, _, kh, kw = shape(w)
    oh = out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = out_size(wd, kw, stride[1], padding[1], dilation[1])
    xp = _pad(imp, _transpose(imp, x, (0, 2, 3, 1)), (0, *padding, 0), (0, *padding, 0))
    n, _, _, c = shape(xp)
    taps = _tap_weights(imp, w, groups)
    acc: SSAValue | None = None
    for i in range(kh):
        for j in range(kw):
            start = (0, i * dilation[0], j * dilation[1], 0)
            window = _window(imp, xp, start, (n, oh, ow, c), (1, stride[0], stride[1], 1))
            acc = _add(imp, acc, _tap_term(imp, window, taps, i, j, groups))
    assert acc is not None and shape(acc) == (n, oh, ow, o)
    return acc


@lowers(aten.convolution.default, check=_convolution_check)
def lower_convolution(imp: Importer, node: torch.fx.Node) -> SSAValue:
    dtype = meta_dtype(node)
    x = imp.cast(imp.value(node.args[0]), dtype)
    w = imp.cast(imp.value(node.args[1]), dtype)
    bias = arg(node, 2, "bias")
    stride, padding, dilation, groups = _conv_params(node)
    one_d = len(shape(x)) == 3
    if one_d:  # (N, C, L) as (N, C, 1, L)
        x = imp.reshape(x, (shape(x)[0], shape(x)[1], 1, shape(x)[2]))
        w = imp.reshape(w, (shape(w)[0], shape(w)[1], 1, shape(w)[2]))
        stride, padding, dilation = [1, *stride], [0, *padding], [1, *dilation]
    acc = conv2d_nhwc(imp, x, w, stride, padding, dilation, groups)
    if bias is not None:
        acc = imp.emit(spyre.AddOp(acc, imp.cast(imp.value(bias), dtype), acc.type))
    out = _transpose(imp, acc, (0, 3, 1, 2))
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
    """F.unfold: (N, C, H, W) -> (N, C*KH*KW, L), column (c, kh, kw) of every block in
    row-major block order: the windows of conv2d_nhwc, stacked per channel. An unbatched
    (C, H, W) input is a batch of one."""
    x = imp.value(node.args[0])
    if len(shape(x)) == 3:
        x = imp.reshape(x, (1, *shape(x)))
    (kh, kw), dilation, padding, stride = (list(node.args[i]) for i in range(1, 5))
    n, c, h, wd = shape(x)
    oh = out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = out_size(wd, kw, stride[1], padding[1], dilation[1])
    xp = _pad(imp, x, (0, 0, *padding), (0, 0, *padding))
    windows = []
    for i in range(kh):
        for j in range(kw):
            start = (0, 0, i * dilation[0], j * dilation[1])
            window = _window(imp, xp, start, (n, c, oh, ow), (1, 1, stride[0], stride[1]))
            windows.append(imp.reshape(window, (n, c, 1, oh * ow)))
    stacked = windows[0]
    if len(windows) > 1:
        stacked = imp.emit(spyre.ConcatOp(windows, 2, _typed(x, (n, c, kh * kw, oh * ow))))
    return imp.reshape(stacked, meta_shape(node))


