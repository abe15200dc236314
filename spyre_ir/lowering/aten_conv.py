"""Convolutions and sliding windows: `aten.convolution` (F.conv1d / F.conv2d, with stride,
padding, dilation, groups and bias), `aten.unfold` (Tensor.unfold) and `aten.im2col`
(F.unfold), as `spyre` data movement feeding the matmul path.

A 2-D convolution is an *im2col gather and one matmul*. The input is zero-padded and
turned channels-last (N, Hp, Wp, C: the channels on the stick, where a matmul wants its
contraction dim), and viewed as a table of N*Hp*Wp channel rows. One `spyre.gather`
builds the im2col buffer (M, KH*KW, C), M = N*OH*OW: output position (n, i, j) reads,
at tap (kh, kw), row

    n*Hp*Wp + (i*sh + kh*dh)*Wp + (j*sw + kw*dw)

(the row indices are `spyre.iota` arithmetic, so stride and dilation cost nothing
extra). The buffer, as (M, KH*KW*C), times the weights as (KH*KW*C, O) is the result
channels-last: the PE arrays do every multiply-add and accumulate each output in one K
loop. The bias is added along the stick, then the result goes back to N, O, OH, OW.
Groups make the matmul a batched one over the groups; a depthwise convolution (one
input and one output channel per group) is an elementwise product of the buffer by the
tap weights and a sum over the taps. A 1-D convolution is the 2-D one with H = 1.
docs/frontend.md ("Convolutions") says why this form and what it costs.

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

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_lowerings import arg, lowers, meta_shape
from spyre_ir.lowering.fx_importer import Importer, meta_dtype, tensor_type

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


def _iota_sum(imp: Importer, sizes: Sequence[int], steps: Sequence[int]) -> SSAValue:
    """sum over d of steps[d] * index_d on an i32 tensor of `sizes`."""
    ty = tensor_type(tuple(sizes), torch.int32)
    acc: SSAValue | None = None
    for dim, step in enumerate(steps):
        if sizes[dim] > 1 and step:
            term = imp.emit(spyre.IotaOp(dim, 0, step, ty))
            acc = term if acc is None else imp.emit(spyre.AddOp(acc, term, ty))
    return acc if acc is not None else imp.full(0, tuple(sizes), torch.int32)


def _windows(imp: Importer, xp: SSAValue, kernel: Sequence[int], out: Sequence[int],
             stride: Sequence[int], dilation: Sequence[int]) -> SSAValue:  # fmt: skip
    """The im2col buffer (M, KH*KW, C): every output position's window of the padded
    channels-last input, one gather of whole channel rows. Output (n, i, j) reads, at
    tap (kh, kw), row n*Hp*Wp + (i*sh + kh*dh)*Wp + (j*sw + kw*dw) of (N*Hp*Wp, C)."""
    n, hp, wp, c = shape(xp)
    (oh, ow), (kh, kw) = out, kernel
    base = _iota_sum(imp, (n, oh, ow), (hp * wp, stride[0] * wp, stride[1]))
    taps = _iota_sum(imp, (kh, kw), (dilation[0] * wp, dilation[1]))
    m, t = n * oh * ow, kh * kw
    index = imp.emit(spyre.AddOp(imp.reshape(base, (m, 1)), imp.reshape(taps, (1, t)),
                                 tensor_type((m, t), torch.int32)))  # fmt: skip
    table = imp.reshape(xp, (n * hp * wp, c))
    return imp.emit(spyre.GatherOp(table, index, _typed(xp, (m, t, c))))


def conv2d_nhwc(imp: Importer, x: SSAValue, w: SSAValue, stride: Sequence[int],
                padding: Sequence[int], dilation: Sequence[int], groups: int) -> SSAValue:  # fmt: skip
    """The convolution of x (N, C, H, W) by w (O, C/groups, KH, KW), channels-last:
    (M, O) with M = N*OH*OW. See the module docstring."""
    n, c, h, wd = shape(x)
    o, cg, kh, kw = shape(w)
    oh = out_size(h, kh, stride[0], padding[0], dilation[0])
    ow = out_size(wd, kw, stride[1], padding[1], dilation[1])
    # padded before the transpose: rows (N, C) spread over the cores, where the padded
    # dims of the channels-last tensor would leave only N
    xp = _transpose(imp, _pad(imp, x, (0, 0, *padding), (0, 0, *padding)), (0, 2, 3, 1))
    cols = _windows(imp, xp, (kh, kw), (oh, ow), stride, dilation)  # M, T, C
    m, t, og = n * oh * ow, kh * kw, o // groups
    # w (O, Cg, KH, KW) -> (G, T, Cg, Og): tap-major rows, as the buffer's columns
    taps = _transpose(imp, imp.reshape(w, (groups, og, cg, t)), (0, 3, 2, 1))
    if cg == 1 and og == 1:  # depthwise: multiply along the stick, sum over the taps
        tap_weights = _transpose(imp, imp.reshape(w, (c, t)), (1, 0))  # T, C
        product = imp.emit(spyre.MulOp(cols, tap_weights, cols.type))
        return imp.emit(spyre.SumOp(product, [1], False, _typed(cols, (m, c))))
    if groups == 1:
        return _matmul(imp, imp.reshape(cols, (m, t * c)), imp.reshape(taps, (t * c, o)))
    per_group = _transpose(imp, imp.reshape(cols, (m, t, groups, cg)), (2, 0, 1, 3))
    product = _matmul(imp, imp.reshape(per_group, (groups, m, t * cg)),
                      imp.reshape(taps, (groups, t * cg, og)))  # G, M, Og  # fmt: skip
    return imp.reshape(_transpose(imp, product, (1, 0, 2)), (m, o))


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
    oh, ow = (1, *meta_shape(node)[2:]) if one_d else meta_shape(node)[2:]
    out = _transpose(imp, imp.reshape(acc, (shape(x)[0], oh, ow, shape(acc)[1])), (0, 3, 1, 2))
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
