"""`make demo`: a Llama-style decoder compiled for IBM Spyre generates text on the simulated card.

Built-in defaults, nothing downloaded: a LlamaForCausalLM with random weights, built from a
LlamaConfig as users do (2 layers, hidden 512, 8 heads, 2 KV heads, FFN 1408, f16), gets a
prompt of 128 tokens and generates 32 more with Hugging Face ``generate()`` (greedy, a
StaticCache) through ``torch.compile(model.forward, backend="spyre")`` on the simulated card;
the tokens are checked against eager ``generate()`` and the prefill's logits against eager
PyTorch. The weights cross to the card once and stay there (runtime/resident.py). The
compile and kernel figures come from ``spyre_ir.runtime.telemetry`` (what the backend
recorded for each compiled graph and each launch), the latencies from events on the card's
stream (simulated time). The report (stdout) gives the IR size per level, the compile time
per stage, time to first token, inter-token latency, tokens/s, the number of backend
compiles, the bytes each decode step moves, host wall time per token (and eager CPU's), and
the prefill's kernels with their roofline fraction and bottleneck. The output directory
gets, for the prefill:

* ``trace.json``: the card's Perfetto trace (validated before it is written): the kernels,
  and the steps on the card's streams (transfers, compute) on the same simulated time axis;
* ``utilization.png``: busy share of each unit over simulated time, kernels on top;
* ``kernels.csv``: every kernel's numbers.

    python -m spyre_ir.tools.demo [--out DIR] [--layers N] [--seq N] [--new-tokens N] ...
"""

from __future__ import annotations

import argparse
import csv
import functools
import os
import re
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path

from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.runtime import telemetry
from spyre_ir.runtime.streams import ExecutedStep
from spyre_ir.tools.demo_trace import (
    TraceError,
    merge_traces,
    plot_utilization,
    validate_trace,
    with_streams,
    write_json,
)

# Never let huggingface_hub / transformers reach the network: the model is built from a config.
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
    os.environ.setdefault(_var, "1")

# f16 logits against eager f16: both round intermediates to f16, in different orders, and
# the card also computes the model's f32 parts (RMSNorm statistics, rotary angles) in f16.
ATOL = RTOL = 2e-2


@dataclass(frozen=True)
class ModelShape:
    layers: int = 2
    hidden: int = 512
    heads: int = 8
    kv_heads: int = 2
    ffn: int = 1408
    seq: int = 128
    vocab: int = 1024

    def check(self) -> str | None:
        """Why this shape is not a valid Llama, or None."""
        if self.hidden % self.heads:
            return f"--hidden {self.hidden} is not a multiple of --heads {self.heads}"
        if self.heads % self.kv_heads:
            return f"--heads {self.heads} is not a multiple of --kv-heads {self.kv_heads}"
        if (self.hidden // self.heads) % 2:
            return f"the head size {self.hidden // self.heads} must be even (rotary embeddings)"
        return None


# ------------------------------------------------------------------------------ options
def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m spyre_ir.tools.demo",
        description="Compile a random-weight Llama-style decoder for Spyre, run it on the "
        "simulated card, check it against eager PyTorch and report.",
    )
    parser.add_argument("--out", type=Path, default=Path("demo-out"),
                        help="directory for trace.json, utilization.png, kernels.csv "
                             "(default: %(default)s)")  # fmt: skip
    for f in fields(ModelShape):
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=_positive, default=f.default,
                            help=f"default: {f.default}")  # fmt: skip
    parser.add_argument("--new-tokens", type=_positive, default=32,
                        help="tokens generated after the prompt (default: %(default)s)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="weights and prompt (default: 0)")
    parser.add_argument("--top", type=_positive, default=10,
                        help="slowest kernels listed (default: %(default)s)")  # fmt: skip
    args = parser.parse_args(argv)
    args.shape = ModelShape(**{f.name: getattr(args, f.name) for f in fields(ModelShape)})
    problem = args.shape.check()
    if problem:
        parser.error(problem)
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out}: exists and is not a directory")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        parser.error(f"--out {args.out}: cannot create the directory ({e.strerror})")
    if not os.access(args.out, os.W_OK):
        parser.error(f"--out {args.out}: the directory is not writable")
    return args


# ---------------------------------------------------------------------------- the run
@dataclass
class Step:
    """One forward call of generate(): simulated time on the card (end to end, and of its
    compute steps), host wall time, and the bytes that crossed the link each way."""

    sim_us: float
    wall_s: float
    h2d_bytes: int
    d2h_bytes: int
    compute_us: float = 0.0


@dataclass
class Generation:
    tokens: list[int]  # the compiled model's new tokens
    eager_tokens: list[int]  # eager generate()'s
    steps: list[Step]  # steps[0] is the prefill, the rest decode steps
    eager_wall_s: list[float]  # eager CPU's wall time per forward call, same order
    graphs: int  # graphs the backend compiled during generate()
    weights_bytes: int

    @property
    def decode(self) -> list[Step]:
        return self.steps[1:]

    @property
    def steady(self) -> list[Step]:
        """Decode steps that compiled nothing (the first decode step compiles its graph)."""
        return self.steps[2:] or self.steps[1:]


@dataclass
class Run:
    logits: object  # torch.Tensor: the prefill's last-position logits from the card
    eager: object  # torch.Tensor: the same from eager PyTorch
    parameters: int
    compiles: list[telemetry.CompileRecord]  # the prefill's
    launches: list[telemetry.LaunchRecord]  # the prefill's
    warnings: list[str]  # the backend's warnings (CPU fallbacks, f32 computed in f16, ...)
    first_call_s: float  # torch.compile: trace, compile, run (the prefill)
    end_to_end_us: float  # simulated time of the prefill: transfers in, compute, transfers out
    generation: Generation
    steps: list[ExecutedStep]  # what ran on the card's streams during the prefill
    origin_s: float  # simulated time the prefill started (its first event)


def timed(forward, walls: list[float]):
    @functools.wraps(forward)  # generate() reads forward's signature (logits_to_keep)
    def call(*args, **kwargs):
        start = time.perf_counter()
        out = forward(*args, **kwargs)
        walls.append(time.perf_counter() - start)
        return out

    return call


def run_llama(shape: ModelShape, seed: int, new_tokens: int = 32) -> Run:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=shape.vocab, hidden_size=shape.hidden, intermediate_size=shape.ffn,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads, max_position_embeddings=shape.seq + new_tokens,
        tie_word_embeddings=False,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float16).eval()
    ids = torch.randint(
        0, shape.vocab, (1, shape.seq), generator=torch.Generator().manual_seed(seed)
    )
    options = {"max_new_tokens": new_tokens, "min_new_tokens": new_tokens, "do_sample": False,
               "use_cache": True, "cache_implementation": "static"}  # fmt: skip
    torch._dynamo.reset()  # a fresh compile even if this process compiled the model before
    with torch.no_grad(), _fresh_artifact_cache():
        eager = model(ids).logits[:, -1:]
        eager_walls: list[float] = []
        eager_forward = model.forward
        model.forward = timed(eager_forward, eager_walls)
        want = model.generate(ids, **options)[0, shape.seq :].tolist()
        compiled = torch.compile(
            eager_forward, backend="spyre", dynamic=False, options={"executor": "card"}
        )
        card_run = functools.update_wrapper(CardForward(compiled), eager_forward)
        model.forward = card_run
        with (
            warnings.catch_warnings(record=True) as caught,
            telemetry.recording() as all_compiles,
            telemetry.progress("torch.compile + generate() on the simulated card"),
        ):
            warnings.simplefilter("always")
            got = model.generate(ids, **options)[0, shape.seq :].tolist()
        model.forward = eager_forward
    notes = list(dict.fromkeys(str(w.message).removeprefix("spyre: ") for w in caught
                               if str(w.message).startswith("spyre:")))  # fmt: skip
    graphs = len({c.graph.rsplit("_", 1)[0] for c in all_compiles.compiles})
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    generation = Generation(got, want, card_run.steps, eager_walls, graphs, weights)
    prefill = card_run.prefill
    return Run(prefill.logits, eager, sum(p.numel() for p in model.parameters()), prefill.compiles,
               prefill.launches, notes, card_run.steps[0].wall_s, card_run.steps[0].sim_us, generation,
               prefill.log, prefill.origin_s)  # fmt: skip


@dataclass
class _Prefill:
    logits: object
    compiles: list[telemetry.CompileRecord]
    launches: list[telemetry.LaunchRecord]
    log: list[ExecutedStep]
    origin_s: float


class CardForward:
    """A compiled forward, timed per call on the card's stream (``steps``); the first call
    (the prefill) is recorded in full (compiles, launches with traces, stream steps)."""

    def __init__(self, compiled) -> None:
        self.compiled = compiled
        self.steps: list[Step] = []
        self.prefill: _Prefill | None = None

    def __call__(self, *args, **kwargs):
        from spyre_ir.runtime.card import get_card
        from spyre_ir.runtime.streams import Event

        first = self.prefill is None
        with telemetry.recording(trace=first) as rec, get_card().timeline.recording_steps() as log:
            begin, end = Event(), Event()
            begin.record()
            start = time.perf_counter()
            out = self.compiled(*args, **kwargs)
            wall = time.perf_counter() - start
            end.record()
            end.synchronize()
        moved = {e: sum(s.nbytes for s in log if s.engine == e) for e in ("h2d", "d2h")}
        compute = 1e6 * sum(s.end_s - s.start_s for s in log if s.engine == "compute")
        self.steps.append(
            Step(1e3 * begin.elapsed_time(end), wall, moved["h2d"], moved["d2h"], compute)
        )
        if first:
            self.prefill = _Prefill(
                out.logits[:, -1:], rec.compiles, rec.launches, log, begin.time_s
            )
        return out


@contextmanager
def _fresh_artifact_cache() -> Iterator[None]:
    """Compile for real, in an empty artifact cache: a cache hit would skip the stages the
    report is about (and this run's artifact is not worth keeping)."""
    saved = os.environ.get("SPYRE_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="spyre-demo-cache-") as cache:
        os.environ["SPYRE_CACHE_DIR"] = cache
        try:
            yield
        finally:
            if saved is None:
                del os.environ["SPYRE_CACHE_DIR"]
            else:
                os.environ["SPYRE_CACHE_DIR"] = saved


# ------------------------------------------------------------------------- the report
def banner(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 74 - len(text)))


def kind_of(kernel: str) -> str:
    """The kernel's kind from its name (``matmul_4`` -> ``matmul``)."""
    return re.sub(r"_\d+$", "", kernel)


def show_card() -> None:
    c = DEFAULT_CONFIG
    banner("the simulated card (spyre_ir/hardware.py)")
    print(f"{c.cores} cores x {c.corelets_per_core} corelets at {c.clock_hz / 1e9:.1f} GHz, "
          f"fp16 peak {c.fp16_peak_flops / 1e12:.1f} TFLOP/s; {c.lx_bytes // 2**20} MiB LX "
          f"scratchpad per core; LPDDR5 {c.lpddr_bandwidth / 1e9:.1f} GB/s")  # fmt: skip


def show_model(shape: ModelShape, run: Run) -> None:
    import transformers

    banner("the model")
    print(f"LlamaForCausalLM (transformers {transformers.__version__}), random weights, f16: "
          f"{shape.layers} layers, hidden {shape.hidden}, {shape.heads} heads "
          f"({shape.kv_heads} KV heads), FFN {shape.ffn}, vocab {shape.vocab}; "
          f"{run.parameters / 1e6:.1f} M parameters")  # fmt: skip
    gen = run.generation
    print(
        f"prompt: 1 x {shape.seq} tokens, then {len(gen.tokens)} new tokens with generate() "
        f"(greedy, StaticCache of {shape.seq + len(gen.tokens)} positions)"
    )


def show_compile(run: Run) -> None:
    banner('compile: torch.compile(model.forward, backend="spyre"), the prefill graph')
    graphs = ", ".join(c.graph for c in run.compiles)
    print(
        f"{len(run.compiles)} partition{'' if len(run.compiles) == 1 else 's'} on the card: {graphs}; "
        f"first call (trace + compile + run) {run.first_call_s:.1f} s"
    )
    for message in run.warnings:
        print(f"  backend: {message}")
    ops: dict[str, int] = {}
    stages: dict[str, float] = {}
    for c in run.compiles:
        for level, n in c.ir_ops.items():
            ops[level] = ops.get(level, 0) + n
        for name, s in c.stage_seconds.items():
            stages[name] = stages.get(name, 0.0) + s
    levels = [lv for lv in telemetry.LEVELS if lv in ops] + [
        lv for lv in ops if lv not in telemetry.LEVELS
    ]
    print("IR size (ops) per level:  " + "  ->  ".join(f"{_LEVEL_NAMES.get(lv, lv)} {ops[lv]:,}"
                                                       for lv in levels))  # fmt: skip
    total = sum(stages.values())
    print(f"compile time per stage ({total:.2f} s in all):")
    for name, s in stages.items():
        print(
            f"  {name:9} {s:7.2f} s  {_bar(s / total if total else 0.0, 24):24}  {_STAGES.get(name, '')}"
        )
    print(f"kernels: {sum(c.kernels for c in run.compiles)}")


# What the backend's stages (telemetry.stage names) do.
_STAGES = {
    "import": "FX graph -> L1 spyre ops",
    "cache": "artifact cache lookup",
    "f16": "f32 parts of the graph retyped to f16 (the card has no fp32 compute)",
    "dataflow": "L1 -> L2: stickify, fuse, split over cores, tile, double-buffer, allocate LX",
    "units": "L2 -> L3: one program per kernel, a stream per unit",
    "recipe": "L3 -> L4: the recipe plan (slots, transfers, launch steps)",
    "prepare": "artifact text parsed and verified into a launchable recipe",
}

_LEVEL_NAMES = {"fx": "FX/ATen", "tensor": "L1 spyre", "dataflow": "L2 dataflow",
                "units": "L3 units", "recipe": "L4 recipe"}  # fmt: skip


def _bar(fraction: float, width: int = 30) -> str:
    return "#" * round(max(0.0, min(1.0, fraction)) * width)


def check_numerics(got: object, want: object) -> tuple[bool, str]:
    """Whether the card's logits match eager's within f16 tolerance, and a line saying so."""
    import torch

    got, want = got.float(), want.float()
    if got.shape != want.shape:
        return False, f"logits have shape {tuple(got.shape)}, eager {tuple(want.shape)} MISMATCH"
    err = (got - want).abs()
    bad = int((err > ATOL + RTOL * want.abs()).sum())
    finite = bool(torch.isfinite(got).all())
    line = (f"logits {tuple(got.shape)} vs eager: max |error| {float(err.max()):.1e} "
            f"(largest |logit| {float(want.abs().max()):.2f}; f16 tolerance atol {ATOL:g} + "
            f"rtol {RTOL:g})")  # fmt: skip
    ok = bad == 0 and finite
    return ok, line + (" OK" if ok else f" MISMATCH: {bad} element(s) out of tolerance"
                       + ("" if finite else ", non-finite values"))  # fmt: skip


def launch_kernels(run: Run) -> list[dict]:
    return [k for launch in run.launches for k in launch.report.get("kernels", [])]


def show_card_run(shape: ModelShape, run: Run, numerics: str) -> None:
    banner("the prefill on the simulated card")
    print(numerics)
    sim_us = sum(x.report["simulated_us"] for x in run.launches)
    roof_us = sum(x.report["roofline_us"] for x in run.launches)
    wall = sum(x.wall_seconds for x in run.launches)
    transfers = run.end_to_end_us - sim_us
    print(
        f"simulated latency of the {shape.seq}-token prefill: {run.end_to_end_us:,.1f} us end to end "
        f"= {sim_us:,.1f} us compute on the card + {transfers:,.1f} us host <-> card transfers "
        "(the inputs, weights included, and the logits)"
    )
    print(f"tokens/s: {shape.seq / (run.end_to_end_us * 1e-6):,.0f} end to end, "
          f"{shape.seq / (sim_us * 1e-6):,.0f} compute only; host time simulating the compute "
          f"{wall:.1f} s")  # fmt: skip
    kernels = launch_kernels(run)
    busy: dict[str, float] = {}
    for k in kernels:
        busy[k["bottleneck"]] = busy.get(k["bottleneck"], 0.0) + k["simulated_us"]
    share = ", ".join(f"{r} {100 * t / sim_us:.0f} %" for r, t in sorted(busy.items(), key=lambda x: -x[1])
                      if t >= 0.005 * sim_us)  # fmt: skip
    print(
        f"roofline {roof_us:,.1f} us: {100 * roof_us / sim_us:.0f} % of the roofline; "
        f"time by bottleneck: {share}"
    )
    util = _weighted_utilization(kernels)
    print("unit utilisation (busy share of the run): "
          + ", ".join(f"{u} {100 * util[u]:.0f} %" for u in ("lpddr", "ring", "pe0", "pe1", "sfp0", "sfp1")
                      if u in util))  # fmt: skip


def show_generation(run: Run) -> bool:
    """The generate() figures; False when the tokens differ from eager generate()'s."""
    gen = run.generation
    banner(f"generate(): {len(gen.tokens)} new tokens on the simulated card")
    same = sum(a == b for a, b in zip(gen.tokens, gen.eager_tokens))
    ok = gen.tokens == gen.eager_tokens
    print(
        f"tokens vs eager generate(): {same}/{len(gen.eager_tokens)} identical "
        + ("OK" if ok else f"MISMATCH (card {gen.tokens}, eager {gen.eager_tokens})")
    )
    itl = [s.sim_us for s in gen.decode]
    mean_itl = sum(itl) / len(itl) if itl else 0.0
    print(
        f"time to first token {gen.steps[0].sim_us:,.1f} us; inter-token latency {mean_itl:,.1f} us "
        f"(min {min(itl, default=0):,.1f}, max {max(itl, default=0):,.1f}); simulated"
    )
    if mean_itl:
        print(f"decode tokens/s: {1e6 / mean_itl:,.0f} (simulated)")
        compute = sum(s.compute_us for s in gen.decode) / len(gen.decode)
        print(
            f"card clock per decode step {mean_itl:,.1f} us = {compute:,.1f} us compute + "
            f"{mean_itl - compute:,.1f} us moving data ({100 * (mean_itl / compute - 1):.0f} % over the compute)"
        )
    print(
        f"backend compiles: {gen.graphs} graph{'s' if gen.graphs != 1 else ''} for "
        f"{len(gen.steps)} forward calls (prefill and decode)"
    )
    steady = gen.steady
    h2d = sum(s.h2d_bytes for s in steady) / len(steady)
    d2h = sum(s.d2h_bytes for s in steady) / len(steady)
    print(
        f"bytes over the link per decode step: {h2d:,.0f} in, {d2h:,.0f} out; the prefill moved "
        f"{gen.steps[0].h2d_bytes:,} in ({gen.weights_bytes:,} of weights, kept on the card)"
    )
    # medians: one step a host hiccup stretches moves neither (bench/generate.py too)
    wall = statistics.median(s.wall_s for s in steady)
    eager_steady = gen.eager_wall_s[2:] or gen.eager_wall_s[1:]
    eager = statistics.median(eager_steady) if eager_steady else 0.0
    ratio = f" ({wall / eager:.1f}x)" if eager else ""
    print(
        f"host wall time per token: {1e3 * wall:,.1f} ms (median of the decode steps that compiled "
        f"nothing); "
        f"eager CPU {1e3 * eager:,.1f} ms{ratio}"
    )
    return ok


def _weighted_utilization(kernels: list[dict]) -> dict[str, float]:
    total = sum(k["simulated_us"] for k in kernels)
    util: dict[str, float] = {}
    for k in kernels:
        for unit, u in k["utilization"].items():
            util[unit] = util.get(unit, 0.0) + u * k["simulated_us"] / total
    return util


def show_kernels(run: Run, top: int) -> None:
    kernels = launch_kernels(run)
    total = sum(k["simulated_us"] for k in kernels)
    banner(f"kernels of the prefill ({len(kernels)})")
    kinds: dict[str, list[dict]] = {}
    for k in kernels:
        kinds.setdefault(kind_of(k["name"]), []).append(k)
    print(f"{'kind':10} {'count':>5} {'time us':>9} {'share':>6} {'roofline':>9}  bottlenecks")
    for kind, ks in sorted(kinds.items(), key=lambda kv: -sum(k["simulated_us"] for k in kv[1])):
        t = sum(k["simulated_us"] for k in ks)
        roof = sum(k["roofline_us"] for k in ks)
        necks: dict[str, int] = {}
        for k in ks:
            necks[k["bottleneck"]] = necks.get(k["bottleneck"], 0) + 1
        print(
            f"{kind:10} {len(ks):5d} {t:9.1f} {100 * t / total:5.0f}% {100 * roof / t:8.0f}%  "
            + ", ".join(f"{n} x{c}" for n, c in sorted(necks.items(), key=lambda x: -x[1]))
        )
    print(f"\nslowest {min(top, len(kernels))} (all in kernels.csv):")
    print(
        f"{'kernel':14} {'cores':>5} {'time us':>9} {'share':>6} {'roofline':>9}  "
        f"{'bottleneck':10} {'GFLOP':>7} {'LPDDR MB':>9}"
    )
    for k in sorted(kernels, key=lambda k: -k["simulated_us"])[:top]:
        print(
            f"{k['name']:14} {k['cores']:5d} {k['simulated_us']:9.1f} "
            f"{100 * k['simulated_us'] / total:5.0f}% {100 * k['roofline_fraction']:8.0f}%  "
            f"{k['bottleneck']:10} {k['flops'] / 1e9:7.3f} {k['lpddr_bytes'] / 1e6:9.2f}"
        )


KERNEL_COLUMNS = ("name", "cores", "simulated_us", "roofline_us", "roofline_fraction", "bottleneck",
                  "flops", "lpddr_bytes", "delivered_bytes", "ring_bytes", "lx_peak_bytes")  # fmt: skip


def write_kernels_csv(run: Run, path: Path) -> None:
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(KERNEL_COLUMNS)
        for k in launch_kernels(run):
            out.writerow([k[c] for c in KERNEL_COLUMNS])


# --------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    shape: ModelShape = args.shape
    start = time.perf_counter()
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("demo: error: the demo builds its model with Hugging Face transformers, which is not "
              "installed here; `make demo` installs it (pip install -e '.[test]')", file=sys.stderr)  # fmt: skip
        return 2
    print("spyre-ir demo: a Llama-style decoder compiled for IBM Spyre, run on the simulated card")
    run = run_llama(shape, args.seed, args.new_tokens)
    if not run.compiles or not run.launches:
        print(f"demo: error: nothing ran on the card ({len(run.compiles)} graph(s) compiled, "
              f"{len(run.launches)} launch(es))", file=sys.stderr)  # fmt: skip
        for message in run.warnings:
            print(f"  {message}", file=sys.stderr)
        return 1
    ok, numerics = check_numerics(run.logits, run.eager)
    show_card()
    show_model(shape, run)
    show_compile(run)
    show_card_run(shape, run, numerics)
    tokens_ok = show_generation(run)
    show_kernels(run, args.top)

    banner(f"files in {args.out}")
    traces = [x.trace for x in run.launches if x.trace is not None]
    if len(traces) != len(run.launches):
        print("demo: error: a launch has no trace although the demo asked for one", file=sys.stderr)
        return 1
    launches = [(x.graph, x.trace) for x in run.launches]
    try:
        trace = with_streams(launches, run.steps, run.origin_s)
    except TraceError as e:
        print(
            f"demo: error: the launches and the card's stream steps disagree: {e}", file=sys.stderr
        )
        return 1
    validate_trace(trace)
    write_json(trace, args.out / "trace.json")
    events = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
    print(
        f"trace.json        Perfetto trace, {events:,} events (open it at https://ui.perfetto.dev; "
        "see docs/reading-a-trace.md)"
    )
    with telemetry.progress("drawing utilization.png"):
        # the kernels end to end, without the transfers: the shares match the report's
        plot_utilization(
            merge_traces(launches),
            args.out / "utilization.png",
            cores=DEFAULT_CONFIG.cores,
            title=f"Llama {shape.layers} layers, {shape.seq} tokens on the simulated card",
        )
    print("utilization.png   busy share of each unit over simulated time, kernels on top")
    write_kernels_csv(run, args.out / "kernels.csv")
    print("kernels.csv       every kernel: time, roofline, bottleneck, flops, bytes")
    print(
        f"\ndemo took {time.perf_counter() - start:.1f} s; next: README.md, docs/architecture.md, "
        "docs/reading-a-trace.md"
    )
    if not ok:
        print("demo: error: the card's logits do not match eager PyTorch", file=sys.stderr)
        return 1
    if not tokens_ok:
        print("demo: error: the tokens generated on the card differ from eager generate()'s",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
