"""Launch benchmarks of prepared recipes on the simulated card.

1. Host overhead per launch: enqueueing a launch of a recipe prepared once, versus
   preparing it again from the artifact text (parse + verify + hash check) on every
   launch, for a 1-kernel graph (exp over 256x256 f16) and a 20-kernel graph (20
   chained 128x128 matmuls). A launch copies its host arguments (the pending upload
   must not see later changes), so the prepared figure includes that copy. Only host work is timed: launches are
   enqueued on a throw-away card that never runs them, so no simulation is included.
2. End to end, per launch (host wall time): launch + synchronize (which runs the
   simulator), prepared once versus re-prepared each time.
3. Simulated time of a stream of requests, each H2D + compute + D2H: on one stream
   versus alternating over two streams (double-buffered: the upload of request i+1
   overlaps the compute of request i), and their ratio.

    python bench/launch.py [--json out.json] [--requests 8]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.registry import make_context
from spyre_ir.runtime import telemetry
from spyre_ir.runtime.artifact import Artifact, compile_artifact
from spyre_ir.runtime.cache import ArtifactCache
from spyre_ir.runtime.card import Card
from spyre_ir.runtime.recipe import PreparedRecipe
from spyre_ir.runtime.streams import Stream


def one_kernel_graph(rows: int, cols: int) -> str:
    t = f"tensor<{rows}x{cols}xf16>"
    return f"""
func.func @main(%x: {t}) -> {t} {{
  %y = spyre.exp %x : {t} -> {t}
  func.return %y : {t}
}}"""


def matmul_chain_graph(kernels: int, dim: int) -> str:
    """`kernels` matmuls in a row (a matmul is one kernel each; nothing fuses them)."""
    t = f"tensor<{dim}x{dim}xf16>"
    lines, value = [], "%x"
    for i in range(kernels):
        lines.append(f"  %y{i} = spyre.matmul {value}, %w : {t}, {t} -> {t}")
        value = f"%y{i}"
    body = "\n".join(lines)
    return f"func.func @main(%x: {t}, %w: {t}) -> {t} {{\n{body}\n  func.return {value} : {t}\n}}"


def compile_graph(text: str, name: str, cache_dir: str) -> tuple[Artifact, int]:
    module = parse_and_verify(make_context(), text, name)
    with telemetry.recording() as rec:
        artifact = compile_artifact(module, name=name, cache=ArtifactCache(cache_dir))
    return artifact, rec.compiles[0].kernels


def inputs_for(recipe: PreparedRecipe, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s.shape) / 8).astype(np.float16) for s in recipe.inputs]


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def as_loaded(artifact: Artifact) -> Artifact:
    """The artifact as a launch that re-prepares it sees it: its text only (as read from
    the cache), without the module this process compiled."""
    return dataclasses.replace(artifact, module=None, levels={})


def host_overhead(artifact: Artifact, prepared_runs: int, reprepared_runs: int) -> dict:
    """Median host time to enqueue one launch; the card never runs the work."""
    card = Card()  # throw-away: its pending work is dropped with it
    recipe = PreparedRecipe.from_artifact(artifact, card)
    text_only = as_loaded(artifact)
    args = inputs_for(recipe, 0)
    prepared = []
    for _ in range(prepared_runs):
        start = time.perf_counter()
        recipe.launch_to_host(args)
        prepared.append(time.perf_counter() - start)
    reprepared = []
    for _ in range(reprepared_runs):
        start = time.perf_counter()
        PreparedRecipe.from_artifact(text_only, card).launch_to_host(args)
        reprepared.append(time.perf_counter() - start)
    a, b = median_us(prepared), median_us(reprepared)
    return {"prepared_us": a, "reprepared_us": b, "ratio": b / a}


def end_to_end(artifact: Artifact, runs: int) -> dict:
    """Median host wall time of launch + synchronize (the simulation included)."""
    card = Card()
    recipe = PreparedRecipe.from_artifact(artifact, card)
    args = inputs_for(recipe, 1)

    def timed(launch: Callable[[], object]) -> float:
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            launch()
            card.synchronize()
            samples.append(time.perf_counter() - start)
        return median_us(samples)

    a = timed(lambda: recipe.launch_to_host(args))
    text_only = as_loaded(artifact)
    b = timed(lambda: PreparedRecipe.from_artifact(text_only, card).launch_to_host(args))
    return {"prepared_us": a, "reprepared_us": b, "ratio": b / a}


def stream_requests(artifact: Artifact, requests: int, streams: int) -> dict:
    """Simulated time of `requests` H2D + compute + D2H requests over `streams` streams."""
    card = Card()
    recipe = PreparedRecipe.from_artifact(artifact, card)
    lanes = [card.default_stream] + [Stream(card) for _ in range(streams - 1)]
    for i in range(requests):
        recipe.launch_to_host(inputs_for(recipe, i), lanes[i % streams])
    card.synchronize()
    busy = card.timeline.engine_busy_s
    return {"simulated_us": card.now_s * 1e6,
            "busy_us": {e: busy[e] * 1e6 for e in ("h2d", "compute", "d2h")}}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument(
        "--requests", type=int, default=8, help="requests in the stream test (default 8)"
    )
    args = parser.parse_args(argv)
    if args.requests < 2:
        parser.error("--requests must be at least 2 (double buffering needs a next request)")

    results: dict = {"host_overhead": {}, "end_to_end": {}}
    with tempfile.TemporaryDirectory() as cache_dir:
        graphs = {
            "1-kernel": compile_graph(one_kernel_graph(256, 256), "exp", cache_dir),
            "20-kernel": compile_graph(matmul_chain_graph(20, 128), "chain", cache_dir),
        }
        # Big enough that the link matters: 2 MiB each way, ~35 us at PCIe Gen5 x16.
        streamed, _ = compile_graph(one_kernel_graph(1024, 1024), "exp_big", cache_dir)
    print("host overhead per launch (enqueue only, no simulation), median:")
    for label, (artifact, kernels) in graphs.items():
        many = 200 if kernels == 1 else 100
        r = host_overhead(artifact, many, 10 if kernels == 1 else 4)
        r["kernels"] = kernels
        results["host_overhead"][label] = r
        print(f"  {label:9} ({kernels:2} kernels): prepared {r['prepared_us']:9.1f} us   "
              f"re-prepared {r['reprepared_us']:11.1f} us   ratio {r['ratio']:8.1f}x")  # fmt: skip
    print("end to end per launch (launch + synchronize, simulation included), median:")
    for label, (artifact, kernels) in graphs.items():
        r = end_to_end(artifact, 5 if kernels == 1 else 3)
        results["end_to_end"][label] = r
        print(f"  {label:9}: prepared {r['prepared_us']:11.1f} us   "
              f"re-prepared {r['reprepared_us']:11.1f} us   ratio {r['ratio']:6.2f}x")  # fmt: skip

    one, two = (stream_requests(streamed, args.requests, n) for n in (1, 2))
    ratio = one["simulated_us"] / two["simulated_us"]
    results["streams"] = {"requests": args.requests, "graph": "exp over 1024x1024 f16",
                          "one_stream": one, "two_streams": two, "speedup": ratio}  # fmt: skip
    busy = one["busy_us"]
    print(f"{args.requests} requests of H2D + compute + D2H (exp over 1024x1024 f16; per request "
          f"h2d {busy['h2d'] / args.requests:.1f} us, compute {busy['compute'] / args.requests:.1f} us, "
          f"d2h {busy['d2h'] / args.requests:.1f} us), simulated:")  # fmt: skip
    print(f"  one stream  {one['simulated_us']:9.1f} us")
    print(f"  two streams {two['simulated_us']:9.1f} us   (double-buffered)   speedup {ratio:.2f}x")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
