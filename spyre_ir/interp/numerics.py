"""Numeric helpers shared by the numpy interpreters: element types <-> numpy dtypes,
bf16 rounding, and a vectorised erf.

bf16 has no numpy dtype: a bf16 tensor is a float32 array whose every value is exactly
representable in bf16 (`round_to_bf16` is applied after every op that makes one).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.ir import Attribute

from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.interp.halves import converted

# Storage dtype of each element type.
STORAGE: dict[str, np.dtype] = {
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(np.float32),
    "f32": np.dtype(np.float32),
    "i1": np.dtype(np.bool_),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
}
FLOATS = ("f16", "bf16", "f32")


def storage_dtype(element: Attribute) -> np.dtype:
    """The numpy dtype holding tensors of `element` (bf16 -> float32)."""
    name = element_type_name(element)
    if name not in STORAGE:
        raise TypeError(f"no numpy storage for element type {name}")
    return STORAGE[name]


def describe_type(t: Attribute) -> str:
    """`tensor<4x8xf32>` without any layout encoding, for messages."""
    if isinstance(t, TensorType):
        dims = "".join(f"{d}x" for d in t.get_shape())
        return f"tensor<{dims}{element_type_name(t.element_type)}>"
    return str(t)


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float values to the nearest bf16 (ties to even), returned as float32.

    Works on the float32 bit pattern: add 0x7FFF plus the lowest kept bit, then clear
    the low 16 bits. Overflow goes to +-inf, as a hardware conversion does; NaNs stay
    (quiet) NaNs.
    """
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32)
    rounded = (bits + (np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))) & np.uint32(
        0xFFFF0000
    )
    out = rounded.view(np.float32)
    nan = np.isnan(f)
    if nan.any():
        out = np.where(nan, np.float32(np.nan), out)
    return out.reshape(f.shape)


def to_storage(x: np.ndarray | np.generic, name: str) -> np.ndarray:
    """Convert computed values to the storage of element type `name`, rounding once."""
    x = np.asarray(x)
    if name == "bf16":
        return round_to_bf16(x.astype(np.float32))
    if name == "i1":
        return x != 0 if x.dtype != np.bool_ else x
    if name == "f16" and x.dtype == np.float32:
        return converted(x, np.float16)
    return x.astype(STORAGE[name], copy=False)


def dense_to_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The values of a dense elements attribute as an array in our storage dtype."""
    t = attr.type
    assert isinstance(t, TensorType)
    name = element_type_name(t.element_type)
    shape = tuple(t.get_shape())
    raw = attr.data.data
    if name == "bf16":
        flat = (np.frombuffer(raw, np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)
    elif name == "i1":
        flat = np.frombuffer(raw, np.int8) != 0
    elif name in STORAGE:
        flat = np.frombuffer(raw, STORAGE[name])
    else:
        raise TypeError(f"unsupported constant element type {name}")
    if flat.size == 1 and int(np.prod(shape)) != 1:
        return np.full(shape, flat[0], dtype=flat.dtype)
    return flat.reshape(shape).copy()


# ------------------------------------------------------------------------ erf
# W. J. Cody, "Rational Chebyshev approximations for the error function", Math. Comp.
# 23 (1969), as in SPECFUN's CALERF: maximal relative error about 1e-16 in float64.
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)  # fmt: skip
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)  # fmt: skip
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)  # fmt: skip
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)  # fmt: skip
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)  # fmt: skip
_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)  # fmt: skip
_INV_SQRT_PI = 5.6418958354775628695e-1


def _erfc_tail(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y > 0.46875 (float64)."""
    out = np.empty_like(y)
    mid = y <= 4.0
    ym = y[mid]
    num, den = _C[8] * ym, ym.copy()
    for c, d in zip(_C[:7], _D[:7]):
        num, den = (num + c) * ym, (den + d) * ym
    out[mid] = (num + _C[7]) / (den + _D[7])
    yt = y[~mid]
    z = 1.0 / (yt * yt)
    num, den = _P[5] * z, z.copy()
    for p, q in zip(_P[:4], _Q[:4]):
        num, den = (num + p) * z, (den + q) * z
    out[~mid] = (_INV_SQRT_PI - z * (num + _P[4]) / (den + _Q[4])) / yt
    # exp(-y^2) split as Cody does so the product keeps full relative accuracy.
    ysq = np.trunc(y * 16.0) / 16.0
    return np.exp(-ysq * ysq) * np.exp(-(y - ysq) * (y + ysq)) * out


def erf(x: np.ndarray) -> np.ndarray:
    """Vectorised erf in float64 by Cody's rational approximations (about 1e-16
    relative), for any float input; NaN stays NaN, +-inf gives +-1."""
    x = np.asarray(x, dtype=np.float64)
    y = np.abs(x)
    out = np.empty_like(x)
    small = y <= 0.46875
    xs = x[small]
    z = xs * xs
    num, den = _A[4] * z, z.copy()
    for a, b in zip(_A[:3], _B[:3]):
        num, den = (num + a) * z, (den + b) * z
    out[small] = xs * (num + _A[3]) / (den + _B[3])
    big = ~small & ~np.isnan(x)
    yb = np.minimum(y[big], 27.0)  # erfc underflows to 0 beyond ~26.6
    out[big] = np.copysign(1.0 - _erfc_tail(yb), x[big])
    out[np.isnan(x)] = np.nan
    return out
