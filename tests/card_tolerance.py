"""How closely the simulated card's f16 results follow an IEEE fp16 reference.

The card holds 16-bit floats as DLFloat16 (9 fraction bits to fp16's 10), so each
rounding errs by up to twice fp16's; and it rounds every partial result it stores as
16 bits (a K loop accumulating into an f16 buffer rounds each partial sum), where the
reference (L1 interpreter, torch eager) rounds once: those errors scale with the
largest partial sums - about the output's largest magnitude - not with each element.
"""

from __future__ import annotations

import numpy as np

from spyre_ir.interp import dlfloat16

DLF16_ULP = 2.0**-9
"""DLFloat16's relative spacing (fp16's is 2**-10)."""


def assert_card_close(got: np.ndarray, ref: np.ndarray, tol: float, *, partials: int = 2) -> None:
    """`got` (the card) within `tol` of `ref` as fp16 would be, for an f16 `ref`: `tol`
    doubled for DLFloat16's coarser rounding, and at least `partials` DLFloat16 places
    of the output's largest magnitude absolutely (partial sums rounded on the card).
    Outputs of other dtypes are compared with `tol` alone."""
    half = np.asarray(ref).dtype == np.float16
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    if not half:
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
        return
    finite = np.abs(ref[np.isfinite(ref)])
    scale = float(finite.max()) if finite.size else 0.0
    atol = max(2 * tol, partials * DLF16_ULP * scale)
    np.testing.assert_allclose(got, ref, rtol=2 * tol, atol=atol)


def as_on_the_card(values: np.ndarray) -> np.ndarray:
    """fp16 values as the card gives them back after storing them (DLFloat16's rounding,
    then the cast to fp16); other dtypes unchanged."""
    if values.dtype != np.float16:
        return values
    return dlfloat16.to_user(dlfloat16.from_user(values), np.float16)
