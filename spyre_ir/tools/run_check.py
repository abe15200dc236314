"""spyre-run's `--check`: each result compared with the reference's, by element type
(floats within a tolerance, integers and booleans exactly)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from spyre_ir.tools.run_common import TOLERANCE


def tolerance(t: Attribute) -> float | None:
    """rtol = atol of --check for results of type `t`; None: exact."""
    from spyre_ir.dialects.spyre import element_type_name

    assert isinstance(t, TensorType)
    return TOLERANCE.get(element_type_name(t.element_type))


def _value(x: np.generic) -> str:
    v = x.item()
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def _at(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, index)) + "]"


_COMPARE_CHUNK = 1 << 22
"""Elements compared per pass: the float64 temporaries of a chunk, not of a whole
result (a 1.31 GB paged KV cache would take 20 GB of them)."""


def compare(got: np.ndarray, want: np.ndarray, t: Attribute) -> tuple[float, str | None]:
    """(max abs error over elements finite in both, a mismatch description or None)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return float("inf"), (
            f"got shape {got.shape}, dtype {got.dtype}; want shape {want.shape}, dtype {want.dtype}"
        )
    if got.size == 0:
        return 0.0, None
    tol = tolerance(t)
    flat_got, flat_want = got.reshape(-1), want.reshape(-1)
    atol = tol
    if tol is not None and want.dtype == np.float16:
        # the card rounds partial sums to DLFloat16: errors follow the largest
        # magnitudes, two DLFloat16 places (2**-9) of the largest |want|
        largest = _largest_finite(flat_want)
        if largest is not None:
            atol = max(tol, 2 * 2.0**-9 * largest)
    max_err, count, worst, at = 0.0, 0, -1.0, 0
    for start in range(0, got.size, _COMPARE_CHUNK):
        stop = start + _COMPARE_CHUNK
        part_got, part_want = flat_got[start:stop], flat_want[start:stop]
        if np.array_equal(part_got, part_want):  # equal, NaN-free: no error, no mismatch
            continue
        with np.errstate(all="ignore"):
            g, w = part_got.astype(np.float64), part_want.astype(np.float64)
            if tol is None:
                bad = part_got != part_want
            else:
                bad = ~np.isclose(g, w, rtol=tol, atol=atol, equal_nan=True)
            finite = np.isfinite(g) & np.isfinite(w)
            err = np.where(finite, np.abs(g - w), 0.0)
        max_err = max(max_err, float(err.max()))
        n_bad = int(bad.sum())
        if n_bad:
            count += n_bad
            scores = np.where(bad, np.where(finite, err, np.inf), -1.0)
            k = int(np.argmax(scores))
            if scores[k] > worst:
                worst, at = float(scores[k]), start + k
    if not count:
        return max_err, None
    index = tuple(int(i) for i in np.unravel_index(at, got.shape))
    rule = "exactly" if tol is None else f"within rtol = atol = {tol:g}"
    return max_err, (
        f"{count} of {got.size} elements differ (expected {rule}); max abs error "
        f"{max_err:.6g}; at {_at(index)}: got {_value(got[index])}, want {_value(want[index])}"
    )


def _largest_finite(values: np.ndarray) -> float | None:
    """The largest finite |value| of a 1-D float array (None when none is finite)."""
    largest = None
    for start in range(0, values.size, _COMPARE_CHUNK):
        part = np.abs(values[start : start + _COMPARE_CHUNK])
        part = part[np.isfinite(part)]
        if part.size:
            largest = max(largest or 0.0, float(part.max()))
    return largest


def check(
    fn: func.FuncOp, got: Sequence[np.ndarray], want: Sequence[np.ndarray], reference: str
) -> list[str]:
    """The check's lines; the first says `ok` or the rest say `MISMATCH`."""
    types = fn.function_type.outputs.data
    if len(got) != len(want):
        return [f"check: MISMATCH: {len(got)} results, {reference} gives {len(want)}"]
    errors, problems = [], []
    for index, (g, w, t) in enumerate(zip(got, want, types)):
        err, problem = compare(g, w, t)
        errors.append(err)
        if problem:
            problems.append(f"check: MISMATCH in result {index}: {problem} ({reference})")
    if problems:
        return problems
    worst = max(errors, default=0.0)
    return [
        f"check: ok (max abs error {worst:.3g} against {reference}, {len(got)} "
        f"result{'s' * (len(got) != 1)})"
    ]
