"""float16 <-> float32 conversions fast enough for the simulator.

numpy converts halves one value at a time, without the F16C instructions: about 1.3 ns
per value here, 24 ms for the 16.8 M weights of a 4096 x 4096 matrix, which made half
conversions most of the simulator's time on bandwidth-bound kernels. torch's CPU copy
kernel converts with F16C, about 8x faster, and rounds the same way (float -> half ties
to even, subnormals and overflow as IEEE 754 says; only NaN payloads may differ, which
numpy does not define either). torch is a pinned dependency of ours, but it is used here
only when the process has imported it already (the torch backend, the device, the
tests): importing it costs one to several seconds, the time numpy takes to convert
about a billion values, so a command-line run such as spyre-run stays with numpy. Small
arrays stay with numpy anyway, whose per-call overhead is lower.
"""

from __future__ import annotations

import sys
import warnings
from types import ModuleType

import numpy as np

TORCH_MIN_VALUES = 1 << 16
"""Conversions of fewer values stay in numpy (torch's call overhead is ~5 us)."""

_HALF_FLOAT = (np.dtype(np.float16), np.dtype(np.float32))


def _torch() -> ModuleType | None:
    """torch when this process has imported it and no torch mode is active, else None
    (never imports it). Under a dispatch or function mode (dynamo's FakeTensorMode
    while a backend compiles) a copy between views of numpy arrays is traced, not run:
    the destination kept whatever np.empty gave it (the DLFloat16 -> fp16 table, first
    built while spyre_ir.interp.dlfloat16 was imported inside a compile, came out 0 and
    NaN)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    c = getattr(torch, "_C", None)
    try:
        if c._len_torch_dispatch_stack() or c._len_torch_function_stack():
            return None
    except AttributeError:  # torch is still being imported
        return None
    return torch


def _torch_view(torch: ModuleType, array: np.ndarray) -> object | None:
    """`array` as a torch tensor sharing its memory, or None when torch cannot view it
    (negative strides). Read-only arrays are viewed too; we only ever read them."""
    if any(s < 0 for s in array.strides):
        return None
    if array.flags.writeable:
        return torch.from_numpy(array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "not writable": only read here
        return torch.from_numpy(array)


def convert_into(dest: np.ndarray, src: np.ndarray) -> None:
    """`dest[...] = src` for float16 <-> float32 arrays of one shape (or `src`
    broadcastable to it), converting as numpy's assignment does."""
    if src.size >= TORCH_MIN_VALUES and (src.dtype, dest.dtype) in (
        _HALF_FLOAT,
        _HALF_FLOAT[::-1],
    ):
        torch = _torch()
        if torch is not None and dest.flags.writeable:
            if not src.flags.c_contiguous and src.ndim > 1:
                # torch's converting copy from a strided source (a tile of a larger
                # tensor) runs at a third of its contiguous speed; numpy's same-type
                # gather into one block, then the conversion, is twice as fast.
                src = np.ascontiguousarray(src)
            source, target = _torch_view(torch, src), _torch_view(torch, dest)
            if source is not None and target is not None:
                # One thread: a conversion is bound by memory bandwidth, which a second
                # thread does not add to here, and torch's workers spin - with another
                # process on the cores they slow down tenfold and burn CPU time.
                previous = torch.get_num_threads()
                torch.set_num_threads(1)
                try:
                    target.copy_(source)
                finally:
                    torch.set_num_threads(previous)
                return
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is the answer
        dest[...] = src


def converted(src: np.ndarray, dtype: np.dtype | type) -> np.ndarray:
    """`src.astype(dtype)` (a new array), fast for float16 <-> float32."""
    dtype = np.dtype(dtype)
    if src.dtype == dtype:
        return src.copy()
    out = np.empty(src.shape, dtype)
    convert_into(out, src)
    return out


def round_to_f16(x: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """float32 values rounded to the nearest f16 (ties to even), kept as float32:
    bit for bit `x.astype(float16).astype(float32)`. `overwrite`: round a contiguous
    float32 `x` in place."""
    x = np.asarray(x, dtype=np.float32)
    in_place = overwrite and x.flags.c_contiguous and x.flags.writeable
    if x.size >= TORCH_MIN_VALUES and _torch() is not None:
        half = converted(x, np.float16)
        out = x if in_place else np.empty_like(x)
        convert_into(out, half)
        return out
    return _round_bits(x if in_place else x.copy())


def _round_bits(out: np.ndarray) -> np.ndarray:
    """Round float32 `out` to f16 values in place, on the bit pattern (a quarter of the
    cost of numpy's two conversions, for small arrays). Normal values round like
    `round_to_bf16` does (13 bits); the rare elements outside f16's normal range
    (subnormal, overflowing, inf, NaN) go through numpy's own conversion."""
    bits = out.view(np.uint32)
    # |x| in [2**-14, 65520) rounds to a normal f16 (one unsigned compare); zeros too.
    scratch = bits & np.uint32(0x7FFFFFFF)
    scratch -= np.uint32(0x38800000)
    special = scratch >= np.uint32(0x477FF000 - 0x38800000)
    at, exact = None, None
    if special.any():
        special &= scratch != np.uint32(2**32 - 0x38800000)  # not +-0
        at = np.flatnonzero(special)
        with np.errstate(over="ignore", invalid="ignore"):  # inf is the right answer
            exact = out.reshape(-1)[at].astype(np.float16).astype(np.float32)
    np.right_shift(bits, np.uint32(13), out=scratch)
    scratch &= np.uint32(1)
    scratch += np.uint32(0xFFF)
    bits += scratch
    bits &= np.uint32(0xFFFFE000)
    if at is not None:
        out.reshape(-1)[at] = exact
    return out
