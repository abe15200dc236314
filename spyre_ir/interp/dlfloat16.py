"""DLFloat16, the card's 16-bit float: rounding, its 16-bit codes, host conversions.

A code is 1 sign, 6 exponent and 9 fraction bits: (-1)^s x 2^(e-31) x (1 + m/512), no
subnormals; e = m = 0 is zero (either sign) and (e=63, m=511) is the one NaN/infinity
code ("NINF"), so the largest finite magnitude is 2^32 x (1 + 510/512) and the smallest
non-zero one 2^-31 x (1 + 1/512). Source: A. Agrawal et al., "DLFloat: A 16-b Floating
Point Format Designed for Deep Learning Training and Inference", IEEE ARITH 2019 (the
format; its abstract: no subnormals, simplified rounding); the codes, zero and NINF as
IBM's NNP-data-type-1 emulation defines them (onnx/onnx-mlir,
src/Accelerators/NNPA/Support/Stickify/DLF16Conversion.hpp, class NNP1).

Rounding, from that emulation (`NNP1::convert(float)`): the float32 fraction plus half
of DLFloat16's last place, truncated - round to nearest, ties away from zero (not to
even); a result whose exponent falls below e = 0 is zero (no subnormals, so 2^-31 itself
becomes zero too: its code would be e = m = 0). Saturation, from IBM's host conversion
(onnx-mlir's `fp32_to_dlf16` in Stickify/Convert.cpp clips to +-DLF16_MAX before
converting; zDNN saturates the same way): a magnitude above the largest finite value,
infinities included, becomes +-MAXIMUM; NaN becomes NINF. The public sources are silent
on what the card's compute units do on overflow; we apply the same saturation to every
value stored as 16 bits on the card (docs/dlfloat16.md), which also keeps a -inf mask or
a max-reduction identity usable (it becomes -MAXIMUM).

On the simulated card a DLFloat16 tensor is a float32 array holding DLFloat16 values
(`round_to_dlf16` after every op: every such value is exact in float32); `encode` /
`decode` give the 16-bit codes the recipe runtime keeps in LPDDR5 images.
"""

from __future__ import annotations

import math

import numpy as np

from spyre_ir.interp.halves import converted
from spyre_ir.interp.numerics import round_to_bf16

MAXIMUM = float(2**32 * (1 + 510 / 512))
"""The largest finite DLFloat16 value (code 0x7FFE), about 8.57e9."""
SMALLEST = float(2**-31 * (1 + 1 / 512))
"""The smallest non-zero DLFloat16 magnitude (code 0x0001)."""
NINF = 0x7FFF
"""The NaN/infinity code (with either sign bit); it decodes to NaN."""

# float32 bit patterns. A DLFloat16 value keeps the float32 sign, an exponent of
# e + 96 (biases 127 and 31) and the top 9 fraction bits.
_SIGN = np.uint32(0x80000000)
_MAGNITUDE = np.uint32(0x7FFFFFFF)
_HALF_PLACE = np.uint32(1 << 13)  # half of the last kept place (bit 14)
_KEEP = np.uint32(0xFFFFC000)
_ZERO_EXPONENT = 96 << 23  # float32 bits of e = 0, m = 0
_MAX_BITS = np.uint32(0x4FFF8000)  # e = 63, m = 510
_INF_BITS = 0x7F800000
# Magnitudes (unrounded) that round to a finite non-zero value: [low, high].
_LOW = np.uint32(_ZERO_EXPONENT + (1 << 14) - (1 << 13))
_SPAN = np.uint32(0x4FFF8000 + (1 << 13) - 1 - int(_LOW))
_ZERO_WRAPPED = np.uint32((1 << 32) - int(_LOW))  # the magnitude 0, less _LOW
_HIGH = np.uint32(int(_LOW) + int(_SPAN))
_ONE = np.uint32(1)


_CHUNK = 1 << 16
"""Values rounded per pass: the scratch arrays of a chunk stay in the CPU's cache."""


def round_to_dlf16(x: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """Values rounded to DLFloat16 (see the module docstring), kept as float32.
    `overwrite`: round a contiguous writable float32 `x` in place."""
    if isinstance(x, np.ndarray) and x.dtype == np.float16:
        # Every fp16 value's rounding, looked up by its bits: one pass over the data
        # (converting, then rounding the float32 bits took four, and a fresh float32
        # scratch as large as the result), infinities and NaN included.
        return translate(_F16_ROUNDED, x.view(np.uint16))
    x = np.asarray(x, dtype=np.float32)
    in_place = overwrite and x.flags.c_contiguous and x.flags.writeable
    out = x if in_place else np.array(x, dtype=np.float32, order="C")
    bits = out.reshape(-1).view(np.uint32)  # 1-D: numpy makes scalars of 0-d results
    size = min(bits.size, _CHUNK)
    scratch, special = np.empty(size, np.uint32), np.empty(size, np.bool_)
    for start in range(0, bits.size, _CHUNK):
        chunk = bits[start : start + _CHUNK]
        s, f = scratch[: chunk.size], special[: chunk.size]
        np.bitwise_and(chunk, _MAGNITUDE, out=s)
        fixes = None
        if s.max() > _HIGH or (s - _ONE).min() < _LOW - _ONE:  # (a zero wraps to the top)
            s -= _LOW  # wraps below: one unsigned compare finds everything not ordinary
            np.greater(s, _SPAN, out=f)
            f &= s != _ZERO_WRAPPED  # +-0 rounds to itself below (zero-filled tiles)
            if f.any():
                at = np.flatnonzero(f)
                fixes = at, _special_bits(chunk[at])
        chunk += _HALF_PLACE
        chunk &= _KEEP
        if fixes is not None:
            chunk[fixes[0]] = fixes[1]
    return out


def _special_bits(bits: np.ndarray) -> np.ndarray:
    """The rounded float32 bits of values outside the ordinary range: zero below,
    +-MAXIMUM above (infinities too), NaN kept."""
    magnitude = bits & _MAGNITUDE
    sign = bits & _SIGN
    out = np.where(magnitude < _LOW, sign, sign | _MAX_BITS)
    return np.where(magnitude > _INF_BITS, np.uint32(0x7FC00000), out).astype(np.uint32)


def infinities_as_bounds(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The operands of a comparison on the card, where an infinite operand means the
    bound an infinity saturates to: where one side is +-inf both are taken as the card
    holds 16-bit values (rounded to DLFloat16, saturating: the infinity is +-MAXIMUM).
    So `x == -inf` holds for a -inf mask stored as -MAXIMUM and for f32 sums with it
    that round to -MAXIMUM (from -MAXIMUM + 2^22, half a place above, down), as it does
    in torch; the card cannot tell a saturated value from an infinity. Operands
    without infinities come back as they are."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        return a, b
    infinite = np.isinf(a) | np.isinf(b)
    if not infinite.any():
        return a, b
    return (np.where(infinite, round_to_dlf16(a), a), np.where(infinite, round_to_dlf16(b), b))


def encode(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The DLFloat16 codes (uint16) of float values, rounded and saturated; into `out`
    (a uint16 array of x's shape) when given. fp16 input is one table lookup of its
    bits; other floats are rounded in chunks, so the scratch stays a chunk's size."""
    x = np.asarray(x)
    if out is None:
        out = np.empty(x.shape, np.uint16)
    elif out.shape != x.shape or out.dtype != np.uint16:
        raise ValueError(f"encode into {out.dtype}{list(out.shape)} of {x.dtype}{list(x.shape)}")
    flat_out = out.reshape(-1)  # a view for a contiguous `out` (the callers' case)
    if x.dtype == np.float16:
        bits = x.reshape(-1).view(np.uint16)
        for start in range(0, bits.size, _CHUNK):
            np.take(
                F16_TO_CODE,
                bits[start : start + _CHUNK],
                out=flat_out[start : start + _CHUNK],
                mode="wrap",
            )
    else:
        values = x.reshape(-1)
        for start in range(0, values.size, _CHUNK):
            flat_out[start : start + _CHUNK] = _encode_chunk(values[start : start + _CHUNK])
    if not np.shares_memory(flat_out, out) and out.size:
        out[...] = flat_out.reshape(out.shape)
    return out


def _code_table() -> np.ndarray:
    """The code of each rounded float32 value by its top 18 bits (sign, exponent, the 9
    kept fraction bits: rounding leaves the other 14 zero): +-0, the ordinary values
    (exponent re-biased), and NaN (the one rounded NaN, 0x7FC00000) as NINF."""
    top = np.arange(1 << 18, dtype=np.uint32)
    magnitude = (top & np.uint32(0x1FFFF)) << np.uint32(14)
    code = (magnitude - np.uint32(_ZERO_EXPONENT)) >> np.uint32(14)
    code[magnitude == 0] = 0
    code[magnitude > _INF_BITS] = NINF
    code |= (top >> np.uint32(17)) << np.uint32(15)
    return code.astype(np.uint16)


_CODES = _code_table()


def _encode_chunk(x: np.ndarray) -> np.ndarray:
    rounded = round_to_dlf16(np.array(x, dtype=np.float32), overwrite=True)
    top = rounded.view(np.uint32) >> np.uint32(14)
    return _CODES.take(top)


def _decode_table() -> np.ndarray:
    codes = np.arange(1 << 16, dtype=np.uint32)
    magnitude = codes & np.uint32(0x7FFF)
    bits = (magnitude << np.uint32(14)) + np.uint32(_ZERO_EXPONENT)
    bits[magnitude == 0] = 0
    bits[magnitude == NINF] = 0x7FC00000
    bits |= (codes & np.uint32(0x8000)) << np.uint32(16)
    return bits.view(np.float32)


_DECODED = _decode_table()


def decode(codes: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The float32 values of DLFloat16 codes (uint16); NINF decodes to NaN. Into `out`
    (a float32 array of the codes' shape) when given; looked up in chunks (numpy widens
    lookup indices to 64 bits: whole, that scratch is 4x the codes)."""
    return translate(_DECODED, codes, out)


def translate(table: np.ndarray, codes: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`table[codes]` for 16-bit `codes` and a 65536-entry `table`, in chunks, into
    `out` (of the codes' shape and the table's dtype) when given."""
    codes = np.asarray(codes, dtype=np.uint16)
    if out is None:
        out = np.empty(codes.shape, table.dtype)
    if out.ndim > 1 and not out.flags.c_contiguous:
        # A strided `out` (a kernel output's padded memory): blocks of its rows, each
        # looked up into one reused scratch and copied in (not a copy of the whole
        # tensor; numpy's own buffering of a strided `out` takes twice as long).
        rows = max(1, _CHUNK // max(1, math.prod(out.shape[1:])))
        scratch = np.empty((min(rows, out.shape[0]), *out.shape[1:]), table.dtype)
        for start in range(0, out.shape[0], rows):
            part = codes[start : start + rows]
            block = scratch[: part.shape[0]]
            np.take(table, part, out=block, mode="wrap")
            out[start : start + part.shape[0]] = block
        return out
    flat_in, flat_out = codes.reshape(-1), out.reshape(-1)  # views of out: contiguous, 1-D
    for start in range(0, flat_in.size, _CHUNK):
        part = slice(start, start + _CHUNK)
        np.take(table, flat_in[part], out=flat_out[part], mode="wrap")
    return out


def from_user(values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """A new float32 array of host values (fp16, bf16 held in float32, f32, f64)
    converted to DLFloat16: the host-to-card conversion. Into `out` (float32, of their
    shape, any strides) when given: fp16 without a scratch as large as the tensor."""
    values = np.asarray(values)
    if values.dtype == np.float16:
        return translate(_F16_ROUNDED, values.view(np.uint16), out)
    if values.dtype != np.float32:
        rounded = round_to_dlf16(values.astype(np.float32), overwrite=True)
    else:
        rounded = round_to_dlf16(values)
    if out is None:
        return rounded
    out[...] = rounded
    return out


def to_user(values: np.ndarray, dtype: np.dtype | type | str) -> np.ndarray:
    """DLFloat16 values (float32) as a host dtype: float16 rounds to nearest even and
    overflows to +-inf (as torch's cast does), "bf16" rounds to bf16 (kept in float32),
    float32 is exact. The card-to-host conversion."""
    if dtype == "bf16":
        return round_to_bf16(values)
    dtype = np.dtype(dtype)
    if dtype == np.float16:
        with np.errstate(over="ignore", invalid="ignore"):
            return converted(np.asarray(values, dtype=np.float32), np.float16)
    return np.asarray(values).astype(dtype)


_ALL = np.arange(1 << 16, dtype=np.uint32)
_F16_ROUNDED = round_to_dlf16(_ALL.astype(np.uint16).view(np.float16).astype(np.float32))
"""Each IEEE fp16 bit pattern's DLFloat16 value (float32): round_to_dlf16 of fp16."""
F16_TO_CODE = encode(_ALL.astype(np.uint16).view(np.float16).astype(np.float32))
"""The DLFloat16 code of each IEEE fp16 bit pattern (the h2d conversion of fp16)."""
BF16_TO_CODE = encode((_ALL << np.uint32(16)).view(np.float32))
"""The DLFloat16 code of each bf16 bit pattern."""
CODE_TO_F16 = to_user(_DECODED, np.float16).view(np.uint16)
"""The IEEE fp16 bits of each code's value (round to nearest even, +-inf past 65504)."""
CODE_TO_BF16 = (to_user(_DECODED, "bf16").view(np.uint32) >> np.uint32(16)).astype(np.uint16)
"""The bf16 bits of each code's value (round to nearest even)."""
del _ALL
