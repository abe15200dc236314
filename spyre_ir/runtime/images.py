"""Stick images written and read in place, a few rows at a time.

`layout.stickify` / `unstickify` build a whole new array (and, with padding, a padded
copy of the tensor first); converting a tensor's elements to the card's codes and back
adds whole-tensor scratch of its own (float32 values, 64-bit lookup indices). Here the
image in device memory is viewed in host order (the layout's split axes, a strided view
of the slot's bytes, no copy) and filled or read in chunks of the coarsest rows of host
dim 0: the scratch is one chunk's, whatever the tensor's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from spyre_ir.layout import StickLayout, _device_order, stickify, unstickify

CHUNK_ELEMENTS = 1 << 18
"""Elements converted per pass (about 1 MiB of 32-bit scratch)."""

Convert = Callable[[np.ndarray], np.ndarray]


def _plan(layout: StickLayout) -> tuple[tuple[int, ...], tuple[int, ...], int, int, int] | None:
    """(padded host shape, split shape, rows per split step of dim 0, split steps of dim
    0, steps per chunk), or None when the image is small enough to convert whole."""
    if not layout.host_shape or layout.device_elements <= CHUNK_ELEMENTS:
        return None
    padded, split, _ = _device_order(layout)
    first = len(layout.walkers(0))
    rows_per_step = math.prod(split[1:first])
    per_step = rows_per_step * math.prod(padded[1:])
    return padded, split, rows_per_step, split[0], max(1, CHUNK_ELEMENTS // per_step)


def _host_order(image: np.ndarray, layout: StickLayout) -> np.ndarray:
    """The flat image as an array of the split shape (host order): a view."""
    _, split, to_device = _device_order(layout)
    return image.reshape(tuple(split[a] for a in to_device)).transpose(np.argsort(to_device))


def write_image(image: np.ndarray, layout: StickLayout, host: np.ndarray, convert: Convert,
                fill: object) -> None:  # fmt: skip
    """Fill the flat device-dtype `image` with the stick image of `host` (any array of
    the layout's elements, reshapeable to its host shape): `convert` turns a chunk of
    `host` into device elements; padding slots hold `fill`. As `stickify`, bit for bit."""
    host = np.asarray(host).reshape(layout.host_shape)
    plan = _plan(layout)
    if plan is None:
        image[:] = stickify(convert(host), layout, fill)
        return
    padded, _, rows_per_step, steps, per_chunk = plan
    view = _host_order(image, layout)
    rows = layout.host_shape[0]
    for i0 in range(0, steps, per_chunk):
        i1 = min(steps, i0 + per_chunk)
        dest = view[i0:i1]
        r0, r1 = i0 * rows_per_step, min(i1 * rows_per_step, rows)
        if r0 >= rows:
            dest[...] = fill
            continue
        part = convert(host[r0:r1])
        whole = ((i1 - i0) * rows_per_step, *padded[1:])
        if part.shape != whole:
            block = np.full(whole, fill, dtype=image.dtype)
            block[tuple(slice(0, n) for n in part.shape)] = part
            part = block
        dest[...] = part.reshape(dest.shape)


def read_image(image: np.ndarray, layout: StickLayout, convert: Convert, out: np.ndarray) -> None:
    """Fill `out` (of the layout's host shape, or reshapeable to it) with the
    tensor in the flat device-dtype `image`, each chunk through `convert`. As
    `unstickify`, bit for bit."""
    target = out.reshape(layout.host_shape)
    if out.size and not np.shares_memory(target, out):  # not a view: through a copy
        target = np.empty(layout.host_shape, out.dtype)
        read_image(image, layout, convert, target)
        out[...] = target.reshape(out.shape)
        return
    plan = _plan(layout)
    if plan is None:
        target[...] = convert(unstickify(image, layout))
        return
    _, _, rows_per_step, steps, per_chunk = plan
    view = _host_order(image, layout)
    rows, rest = layout.host_shape[0], layout.host_shape[1:]
    for i0 in range(0, steps, per_chunk):
        i1 = min(steps, i0 + per_chunk)
        r0, r1 = i0 * rows_per_step, min(i1 * rows_per_step, rows)
        if r0 >= rows:
            break
        block = np.ascontiguousarray(view[i0:i1])
        block = block.reshape((i1 - i0) * rows_per_step, *_padded_rest(layout))
        target[r0:r1] = convert(block[(slice(0, r1 - r0), *(slice(0, n) for n in rest))])


def _padded_rest(layout: StickLayout) -> tuple[int, ...]:
    return _device_order(layout)[0][1:]
