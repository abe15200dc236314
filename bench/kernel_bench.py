"""Kernel benchmarks on the simulated card (`make bench`).

For each kernel: the simulated time, the fraction of its roofline (max of flops over
the fp16 peak and minimal LPDDR5 bytes over the bandwidth), the bottleneck resource,
the simulator's wall time (the first run, which schedules and records the program, and
the best of three later runs, which replay it), and the later runs' time as a ratio to
numpy doing the same math in f32 - all measured in this one run; and the time over the
kernel's bound on the calibrated card (issue 15: its flops at the sustained PE rate or
its bytes at the sustained read and write rates, whichever is larger). Targets (issue 6): prefill matmuls >= 85 % of
the fp16 peak, decode matmuls >= 85 % of LPDDR5 bandwidth, softmax/layernorm/rmsnorm
>= 80 % of their bandwidth bound, simulator wall time <= 10x numpy and < 2 s.

    python bench/kernel_bench.py [--json out.json] [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from spyre_ir import registry
from spyre_ir.cost_model import kernel_bound_seconds
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.interp import halves
from spyre_ir.pipelines import lower_to_units
from spyre_ir.sim.engine import simulate


@dataclass(frozen=True)
class Kernel:
    name: str
    kind: str  # "prefill", "decode" or "bandwidth": which target applies
    mlir: str
    numpy: Callable[[list[np.ndarray]], object]
    flops: float = 0.0
    """The math's own flops (2mnk for a matmul), not the padded tiles' (the report's)."""


def matmul(name: str, kind: str, m: int, k: int, n: int) -> Kernel:
    text = f"""
func.func @main(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>) -> tensor<{m}x{n}xf16> {{
  %c = spyre.matmul %a, %b : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16> -> tensor<{m}x{n}xf16>
  func.return %c : tensor<{m}x{n}xf16>
}}"""
    return Kernel(name, kind, text, lambda xs: xs[0] @ xs[1], 2.0 * m * n * k)


def softmax(rows: int, cols: int) -> Kernel:
    t = f"tensor<{rows}x{cols}xf16>"
    text = f"""
func.func @main(%x: {t}) -> {t} {{
  %s = spyre.softmax %x dim = -1 : {t} -> {t}
  func.return %s : {t}
}}"""

    def ref(xs: list[np.ndarray]) -> object:
        e = np.exp(xs[0] - xs[0].max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    return Kernel(f"softmax {rows}x{cols}", "bandwidth", text, ref)


def layer_norm(rows: int, cols: int) -> Kernel:
    t, w = f"tensor<{rows}x{cols}xf16>", f"tensor<{cols}xf16>"
    text = f"""
func.func @main(%x: {t}, %w: {w}, %b: {w}) -> {t} {{
  %y = spyre.layer_norm %x weight(%w : {w}) bias(%b : {w}) {{eps = 1.0e-05 : f64}} : {t} -> {t}
  func.return %y : {t}
}}"""

    def ref(xs: list[np.ndarray]) -> object:
        x = xs[0]
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-5) * xs[1] + xs[2]

    return Kernel(f"layernorm {rows}x{cols}", "bandwidth", text, ref)


def rms_norm(rows: int, cols: int) -> Kernel:
    t, w = f"tensor<{rows}x{cols}xf16>", f"tensor<{cols}xf16>"
    text = f"""
func.func @main(%x: {t}, %w: {w}) -> {t} {{
  %y = spyre.rms_norm %x weight(%w : {w}) {{eps = 1.0e-06 : f64}} : {t} -> {t}
  func.return %y : {t}
}}"""

    def ref(xs: list[np.ndarray]) -> object:
        x = xs[0]
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * xs[1]

    return Kernel(f"rmsnorm {rows}x{cols}", "bandwidth", text, ref)


KERNELS = [
    matmul("matmul 512x4096x4096", "prefill", 512, 4096, 4096),
    matmul("matmul 512x4096x12800", "prefill", 512, 4096, 12800),
    matmul("decode 1x4096x4096", "decode", 1, 4096, 4096),
    matmul("decode 4x(1x4096x4096)", "decode", 4, 4096, 4096),
    softmax(4096, 1024),
    layer_norm(1151, 8192),
    rms_norm(256, 4096),
    matmul("matmul 64x2048x8192", "decode", 64, 2048, 8192),
]

TARGET = {"prefill": 0.85, "decode": 0.85, "bandwidth": 0.80}
WALL_RATIO = 10.0
"""Simulator wall time over numpy's, at most (issue 6)."""
WALL_SECONDS = 2.0


def best_time(fn: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def measure(kernel: Kernel) -> dict:
    ctx = registry.make_context()
    module = parse_and_verify(ctx, kernel.mlir, kernel.name)
    fn = next(op for op in module.walk() if op.name == "func.func")
    read = sum(2.0 * np.prod(t.get_shape()) for t in fn.function_type.inputs.data)
    write = sum(2.0 * np.prod(t.get_shape()) for t in fn.function_type.outputs.data)
    bound_us = kernel_bound_seconds(kernel.flops, read, write, DEFAULT_CONFIG) * 1e6
    rng = np.random.default_rng(0)
    args = [(rng.standard_normal(t.get_shape()) * 0.5).astype(np.float16)
            for t in fn.function_type.inputs.data]  # fmt: skip
    start = time.perf_counter()
    lower_to_units(module)
    compile_s = time.perf_counter() - start
    # One OpenBLAS thread for the simulator's many small tile matmuls: threads only
    # slow them down, ~10x when another process holds a core (see `simulate`). The
    # first run schedules the program and records it; later runs replay it (see
    # spyre_ir/sim/replay.py): the steady state of a kernel launched again, which the
    # ratio uses. Both are reported.
    start = time.perf_counter()
    report = simulate(module, args, blas_threads=1).report
    first_s = time.perf_counter() - start
    sim_s = best_time(lambda: simulate(module, args, blas_threads=1))
    f32 = [a.astype(np.float32) for a in args]
    numpy_s = best_time(lambda: kernel.numpy(f32))
    if kernel.kind == "prefill":
        fraction = kernel.flops / DEFAULT_CONFIG.fp16_peak_flops / (report["simulated_us"] * 1e-6)
        against = "fp16 peak"
    else:
        fraction = report["roofline_fraction"]
        against = "roofline"
    return {
        "kernel": kernel.name,
        "kind": kernel.kind,
        "simulated_us": report["simulated_us"],
        "roofline_us": report["roofline_us"],
        "fraction": fraction,
        "fraction_of": against,
        "target": TARGET[kernel.kind],
        "bound_us": bound_us,
        "over_bound": report["simulated_us"] / bound_us,
        "bottleneck": report["bottleneck"],
        "lx_peak_bytes": report["lx_peak_bytes"],
        "compile_s": compile_s,
        "simulator_first_run_s": first_s,
        "simulator_s": sim_s,
        "numpy_f32_s": numpy_s,
        "simulator_over_numpy": sim_s / numpy_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--only", help="run the kernels whose name contains this")
    args = parser.parse_args(argv)
    # torch's import (about a second, once per process: the simulator's fast half
    # conversions use it) is not any kernel's cost.
    halves.converted(np.zeros(halves.TORCH_MIN_VALUES, np.float16), np.float32)
    rows = []
    header = (f"{'kernel':24} {'sim us':>9} {'roofline':>9} {'fraction':>14} {'target':>6} "
              f"{'bottleneck':>10} {'first s':>7} {'sim s':>6} {'numpy s':>8} "
              f"{'ratio':>6} {'x bound':>7}")  # fmt: skip
    print(header)
    for kernel in KERNELS:
        if args.only and args.only not in kernel.name:
            continue
        r = measure(kernel)
        rows.append(r)
        ok = "ok" if r["fraction"] >= r["target"] else "MISS"
        wall_ok = r["simulator_over_numpy"] <= WALL_RATIO and r["simulator_s"] < WALL_SECONDS
        ok += "" if wall_ok else " WALL-MISS"
        print(f"{r['kernel']:24} {r['simulated_us']:9.1f} {r['roofline_us']:9.1f} "
              f"{100 * r['fraction']:5.1f}% {r['fraction_of'][:8]:>8} {100 * r['target']:4.0f}% "
              f"{r['bottleneck']:>10} {r['simulator_first_run_s']:7.3f} "
              f"{r['simulator_s']:6.3f} {r['numpy_f32_s']:8.4f} "
              f"{r['simulator_over_numpy']:6.1f} {r['over_bound']:7.2f} {ok}")  # fmt: skip
        sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
