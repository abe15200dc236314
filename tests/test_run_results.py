"""spyre-run's result lines (spyre_ir/tools/run_results.py)."""

from __future__ import annotations

import numpy as np
import pytest

from spyre_ir.tools.run_results import _ends


@pytest.mark.parametrize("case", range(40))
def test_half_ends_as_numpy(case):
    """spyre-run's summary takes min and max of halves through float32 chunks: the
    same values (and NaN, inf and the sign of zero) as numpy's own min and max."""
    rng = np.random.default_rng(case)
    n = int(rng.integers(1, 3 << 20))
    x = (rng.standard_normal(n) * rng.choice([1e-5, 1.0, 3e3])).astype(np.float16)
    if case % 3 == 0:
        x[rng.integers(0, n, 3)] = np.nan
    if case % 4 == 0:
        x[rng.integers(0, n, 3)] = -np.inf
    if case % 5 == 0:
        x = np.abs(x)
        x[rng.integers(0, n, 2)] = 0
    if case % 7 == 0:
        x[:] = 0
        x[rng.integers(0, n, 2)] = -0.0
    got, want = _ends(x), (x.min(), x.max())
    assert [(str(g), g.dtype) for g in got] == [(str(w), w.dtype) for w in want]
