"""spyre-run's output: a line per result (type, shape, dtype, min/max/mean/std), the
results saved as .npz, the simulator's report as one line or as text, the trace."""

from __future__ import annotations

import io
import json
import math
import sys
from collections.abc import Sequence
from typing import IO

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from spyre_ir.tools.output import write_atomically


def describe(t: Attribute) -> str:
    from spyre_ir.interp.numerics import describe_type

    return describe_type(t)


def _moments(x: np.ndarray, chunk: int = 1 << 16) -> tuple[float, float]:
    """Mean and standard deviation of a 1-D array, in float64, a chunk at a time (the
    float64 temporaries of a whole large result cost more than the statistics)."""
    mean = float(np.add.reduce(x, dtype=np.float64)) / x.size
    squares = 0.0
    for start in range(0, x.size, chunk):
        d = x[start : start + chunk].astype(np.float64)
        d -= mean
        squares += float(np.dot(d, d))
    return mean, math.sqrt(squares / x.size)


def summary(value: np.ndarray, t: Attribute) -> str:
    from spyre_ir.dialects.spyre import element_type_name

    assert isinstance(t, TensorType)
    name = element_type_name(t.element_type)
    dtype = "bf16 (float32 storage)" if name == "bf16" else str(value.dtype)
    head = f"{describe(t)}  shape {value.shape}  dtype {dtype}"
    if value.size == 0:
        return f"{head}  (empty)"
    if value.dtype == np.bool_:
        return f"{head}  true {int(value.sum())} of {value.size}"
    # float32 holds every value of the card's types exactly (float64 only for f64 and
    # 64-bit integers); the mean and std accumulate in float64 all the same.
    wide = value.dtype.itemsize > 4 or value.dtype.kind in "iu" and value.dtype.itemsize > 2
    if value.dtype == np.float16:  # exact as it is: no float32 copy of a large result
        x = value.reshape(-1)
    else:
        x = value.astype(np.float64 if wide else np.float32).reshape(-1)
    lo, hi = _ends(x)
    # Finite ends (min and max propagate NaN): every value finite, no pass counts them.
    clean = bool(np.isfinite(lo) and np.isfinite(hi))
    finite = x if clean else x[np.isfinite(x)]
    if not clean and finite.size:
        lo, hi = finite.min(), finite.max()
    parts = []
    if finite.size:
        g = lambda v: f"{v:.6g}"  # noqa: E731
        mean, std = _moments(finite)
        parts.append(f"min {g(lo)}  max {g(hi)}  mean {g(mean)}  std {g(std)}")
    nans, infs = (0, 0) if clean else (int(np.isnan(x).sum()), int(np.isinf(x).sum()))
    if nans:
        parts.append(f"nan {nans}")
    if infs:
        parts.append(f"inf {infs}")
    return "  ".join([head, *parts])


_ENDS_CHUNK = 1 << 20
"""Halves converted to float32 per pass of `_ends` (4 MiB of float32)."""


def _ends(x: np.ndarray) -> tuple[np.generic, np.generic]:
    """`(x.min(), x.max())` of a 1-D array. numpy compares halves one at a time (0.2 s
    for layernorm 1151x8192's 9.4 M), float32 with SIMD: halves go through float32 a
    chunk at a time (exact, NaN propagating as in min/max) and come back as halves. A
    zero end keeps numpy's own answer, whose sign (-0 or 0) float32 may not pick."""
    if x.dtype != np.float16 or x.size < _ENDS_CHUNK:
        return x.min(), x.max()
    lows, highs = [], []
    for start in range(0, x.size, _ENDS_CHUNK):
        part = x[start : start + _ENDS_CHUNK].astype(np.float32)
        lows.append(part.min())
        highs.append(part.max())
    lo, hi = np.float16(np.array(lows).min()), np.float16(np.array(highs).max())
    if lo == 0 or hi == 0:
        return x.min(), x.max()
    return lo, hi


def report(
    fn: func.FuncOp, results: Sequence[np.ndarray], show_values: bool, out: IO[str] | None = None
) -> None:
    out = out or sys.stdout
    types = fn.function_type.outputs.data
    print(f"@{fn.sym_name.data}: {len(results)} result{'s' * (len(results) != 1)}", file=out)
    for index, (value, t) in enumerate(zip(results, types)):
        print(f"result {index}: {summary(value, t)}", file=out)
        if show_values:
            with np.printoptions(threshold=sys.maxsize, linewidth=100):
                print(np.array2string(value, separator=", "), file=out)


def save(path: str, results: Sequence[np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez(buffer, **{f"result_{i}": r for i, r in enumerate(results)})
    write_atomically(path, buffer.getvalue())


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n:,} B ({n / size:.2f} {unit})"
    return f"{n:,} B"


def _flops(n: int) -> str:
    for unit, size in (("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if n >= size:
            return f"{n:,} ({n / size:.3g} {unit})"
    return f"{n:,}"


def one_line_report(rep: dict) -> str:
    """The simulator's verdict in one line, printed after the results."""
    kernels = rep.get("kernels", [])
    return (
        f"simulated {rep['simulated_us']:.3f} us on the card, {len(kernels)} "
        f"kernel{'s' * (len(kernels) != 1)} (roofline {rep['roofline_us']:.3f} us, "
        f"{_percent(rep['roofline_fraction'])}); bottleneck {rep['bottleneck'] or '-'}"
    )


def format_report(rep: dict) -> str:
    """The simulator's report as readable text (`--report text`)."""
    from spyre_ir.hardware import DEFAULT_CONFIG

    util = rep.get("utilization", {})
    units = "  ".join(f"{k} {_percent(util[k])}" for k in ("ls", "pe0", "pe1", "sfp0", "sfp1")
                      if k in util)  # fmt: skip
    kinds = "  ".join(f"{k} {_percent(util[k])}" for k in ("pe", "sfp", "lpddr", "ring")
                      if k in util)  # fmt: skip
    lines = [
        "simulator report (default card)",
        f"  simulated time     {rep['simulated_us']:.3f} us",
        f"  roofline time      {rep['roofline_us']:.3f} us",
        f"  roofline fraction  {_percent(rep['roofline_fraction'])}",
        f"  flops              {_flops(rep['flops'])}",
        f"  LPDDR5 bytes       {_bytes(rep['lpddr_bytes'])} served"
        f" ({_bytes(rep['delivered_bytes'])} delivered to the cores)",
        f"  ring bytes         {_bytes(rep.get('ring_bytes', 0))}",
        f"  LX peak            {_bytes(rep['lx_peak_bytes'])} per core"
        f" (of {_bytes(DEFAULT_CONFIG.lx_bytes)})",
        f"  bottleneck         {rep['bottleneck'] or '-'}",
        f"  utilization        {units or '-'}",
        f"                     {kinds}" if kinds else "",
    ]
    lines = [line for line in lines if line]
    kernels = rep.get("kernels", [])
    lines.append(f"kernels ({len(kernels)}, run one after another)")
    if kernels:
        width = max(len("name"), *(len(k["name"]) for k in kernels))
        lines.append(f"  {'name':<{width}}  {'cores':>5}  {'us':>10}  {'roofline':>8}  bottleneck")
        for k in kernels:
            lines.append(
                f"  {k['name']:<{width}}  {k['cores']:>5}  {k['simulated_us']:>10.3f}  "
                f"{_percent(k['roofline_fraction']):>8}  {k['bottleneck'] or '-'}"
            )
    return "\n".join(lines)


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def write_trace(path: str, trace: dict) -> None:
    write_atomically(path, json.dumps(trace, default=_json_default))
