"""Eager-op costs on the "spyre" torch device.

For a few ops on device-resident float16 tensors, in this one run:

- first call: wall time of the first call of a new signature (trace, import, compile
  through spyre-compile, prepare, launch, wait), with the artifact disk cache cold (a
  fresh directory) and warm (the artifact is on disk, the process has not seen it);
- cached call: host overhead per op of a cached signature (µs to enqueue: key, launch,
  result tensor), host time per op including running the simulation at synchronize,
  and the simulated card time per op;
- CPU eager time per op for the same op, and the cached host overhead as a ratio to it.

    python bench/eager.py [--repeat N] [--only OP] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch

from spyre_ir.runtime import device, eager
from spyre_ir.runtime.card import get_card

OPS: dict[str, tuple[Callable[..., torch.Tensor], list[tuple[int, ...]]]] = {
    "add 64x64": (lambda a, b: a + b, [(64, 64), (64, 64)]),
    "mul scalar 256x256": (lambda a: a * 3.0, [(256, 256)]),
    "softmax 32x512": (lambda a: torch.softmax(a, -1), [(32, 512)]),
    "matmul 128x128x128": (lambda a, b: a @ b, [(128, 128), (128, 128)]),
    "silu 1x4096": (lambda a: torch.nn.functional.silu(a), [(1, 4096)]),
}


@dataclass
class Row:
    op: str
    first_call_cold_ms: float
    first_call_warm_ms: float
    cached_host_us: float
    cached_host_with_sim_us: float
    simulated_us: float
    cpu_eager_us: float
    host_over_cpu: float


def _inputs(shapes: list[tuple[int, ...]], on: str) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(*s, generator=gen).half().to(on) for s in shapes]


def _first_call_ms(fn: Callable[..., torch.Tensor], args: list[torch.Tensor]) -> float:
    eager.clear_cache()  # the process forgets the signature; the disk cache decides
    start = time.perf_counter()
    fn(*args)
    torch.spyre.synchronize()
    return (time.perf_counter() - start) * 1e3


def measure(name: str, repeat: int) -> Row:
    fn, shapes = OPS[name]
    args = _inputs(shapes, "spyre")
    with tempfile.TemporaryDirectory() as cold_dir:
        previous = os.environ.get("SPYRE_CACHE_DIR")
        os.environ["SPYRE_CACHE_DIR"] = cold_dir
        try:
            cold = _first_call_ms(fn, args)
            warm = _first_call_ms(fn, args)
        finally:
            if previous is None:
                del os.environ["SPYRE_CACHE_DIR"]
            else:
                os.environ["SPYRE_CACHE_DIR"] = previous
    card = get_card()
    torch.spyre.synchronize()
    gc.collect()  # a full collection after the compiles above would land in the timed loop
    hits = eager.cache_info()["hits"]
    sim_start = card.now_s
    start = time.perf_counter()
    results = [fn(*args) for _ in range(repeat)]
    enqueued = time.perf_counter()
    torch.spyre.synchronize()
    done = time.perf_counter()
    assert eager.cache_info()["hits"] - hits >= repeat, "the cached calls did not hit the cache"
    del results
    cpu_args = _inputs(shapes, "cpu")
    fn(*cpu_args)
    gc.collect()
    cpu_start = time.perf_counter()
    for _ in range(repeat):
        fn(*cpu_args)
    cpu_us = (time.perf_counter() - cpu_start) / repeat * 1e6
    host_us = (enqueued - start) / repeat * 1e6
    return Row(
        op=name,
        first_call_cold_ms=round(cold, 1),
        first_call_warm_ms=round(warm, 1),
        cached_host_us=round(host_us, 1),
        cached_host_with_sim_us=round((done - start) / repeat * 1e6, 1),
        simulated_us=round((card.now_s - sim_start) / repeat * 1e6, 3),
        cpu_eager_us=round(cpu_us, 1),
        host_over_cpu=round(host_us / cpu_us, 3),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50, help="cached calls per op (default 50)")
    parser.add_argument("--only", metavar="OP", action="append", choices=list(OPS),
                        help="measure only this op (repeatable); default: all")  # fmt: skip
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    options = parser.parse_args(argv)
    if options.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:  # fail before measuring, not after
        out = open(options.json, "w") if options.json else None
    except OSError as error:
        print(
            f"bench/eager.py: error: cannot write {options.json}: {error.strerror}", file=sys.stderr
        )
        return 1
    device.setup()
    rows = [measure(name, options.repeat) for name in options.only or OPS]
    header = ("op", "first cold ms", "first warm ms", "cached host µs", "host+sim µs",
              "simulated µs", "CPU eager µs", "host/CPU")  # fmt: skip
    print(" | ".join(f"{h:>14}" for h in header))
    for row in rows:
        print(" | ".join(f"{v:>14}" for v in asdict(row).values()))
    if out is not None:
        with out:
            json.dump({"repeat": options.repeat, "rows": [asdict(r) for r in rows]}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
