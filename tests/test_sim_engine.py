"""The simulated card (spyre_ir/sim/engine.py): L3 programs from spyre-to-units compute
what the L2 interpreter computes (bit for bit) and the L1 interpreter (to rounding);
timing follows the queues, the cost model and the shared LPDDR5 bandwidth."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest
from card_tolerance import assert_card_close
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.passes import PassPipeline
from xdsl.transforms import get_all_passes

from spyre_ir import registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.hardware import DEFAULT_CONFIG, UNCALIBRATED_CONFIG, SpyreConfig, set_card
from spyre_ir.interp import dataflow as L2
from spyre_ir.interp import tensor as L1
from spyre_ir.interp.dlfloat16 import from_user, round_to_dlf16, to_user
from spyre_ir.interp.numerics import storage_dtype
from spyre_ir.pipelines import PIPELINES
from spyre_ir.sim.engine import SimulationError, simulate

SIMPLE = UNCALIBRATED_CONFIG
"""The scheduler's exact-timing tests run on the uncalibrated card, whose LPDDR5 is one
shared bandwidth (204.8e9 B/s at 1.5 GHz: 136.5 B per cycle for the card) with no
per-core limit and no multicast, so their cycles are short hand sums; the calibrated
memory system has tests of its own (tests/test_sim_lpddr.py)."""

TO_UNITS = "spyre-to-units"  # L1 -> L3: spyre-to-dataflow, convert-dataflow-to-units


def no_double_buffer(cores: int) -> str:
    """spyre-to-units with double buffering switched off."""
    passes = [
        "spyre-double-buffer{enable=false}" if p == "spyre-double-buffer"
        else f"spyre-partition-cores{{cores={cores}}}" if p == "spyre-partition-cores"
        else p
        for p in PIPELINES["spyre-to-dataflow"]
    ]  # fmt: skip
    return ",".join([*passes, "convert-dataflow-to-units"])


LOWERINGS = {"double-buffered": TO_UNITS, "single-buffered": no_double_buffer(32)}
REPORT_KEYS = ("simulated_us", "roofline_us", "roofline_fraction", "flops", "lpddr_bytes",
               "delivered_bytes", "ring_bytes", "lx_peak_bytes", "bottleneck", "utilization")  # fmt: skip


def parse(text: str) -> ModuleOp:
    return parse_and_verify(registry.make_context(), text, "test.mlir")


def lower(text: str, pipeline: str, config: SpyreConfig | None = None) -> ModuleOp:
    """`text` through `pipeline`, compiled for `config` (its `spyre.card`) if given."""
    module = parse(text)
    if config is not None:
        set_card(module, config)
    available = {**get_all_passes(), **registry.PASSES}
    PassPipeline.parse_spec(available, pipeline).apply(registry.make_context(), module)
    module.verify()
    return module


def random_args(text: str, seed: int = 0, index_bound: int = 0) -> list[np.ndarray]:
    fn = next(op for op in parse(text).walk() if isinstance(op, func.FuncOp))
    rng = np.random.default_rng(seed)
    args = []
    for t in fn.function_type.inputs.data:
        assert isinstance(t, TensorType)
        dtype = storage_dtype(t.element_type)
        if np.issubdtype(dtype, np.integer):
            args.append(rng.integers(0, index_bound, t.get_shape()).astype(dtype))
        else:
            args.append(rng.standard_normal(t.get_shape()).astype(dtype))
    return args


def check_report(report: dict) -> None:
    """What every report promises, for the run and for each program."""
    for part in (report, *report["kernels"]):
        for key in REPORT_KEYS:
            assert key in part, key
        assert part["simulated_us"] >= part["roofline_us"] > 0
        assert 0 < part["roofline_fraction"] <= 1
        fraction = part["roofline_us"] / part["simulated_us"]
        assert part["roofline_fraction"] == pytest.approx(fraction)
        assert part["bottleneck"] in ("pe", "sfp", "lpddr", "ring", "ls")
        for unit, value in part["utilization"].items():
            assert 0 <= value <= 1 + 1e-9, (unit, value)
    for kernel in report["kernels"]:  # the LS unit: its busiest port (or itself)
        busy = kernel["busy_us"]
        ls = max(busy["lpddr"], busy["ring"], busy["ls"]) / kernel["simulated_us"]
        assert kernel["utilization"]["ls"] == pytest.approx(ls)
    kernels = report["kernels"]
    assert report["simulated_us"] == pytest.approx(sum(k["simulated_us"] for k in kernels))
    assert report["roofline_us"] == pytest.approx(sum(k["roofline_us"] for k in kernels))
    assert report["flops"] == sum(k["flops"] for k in kernels)
    assert report["lx_peak_bytes"] == max(k["lx_peak_bytes"] for k in kernels)


def differential(text: str, pipeline: str = TO_UNITS, tol: float = 1e-2,
                 config: SpyreConfig | None = None, **arg_options):  # fmt: skip
    """Simulate the L3 lowering of an L1 function (compiled for and run on `config`,
    else the default card): the same numbers as the L2 interpreter on the L2 lowering
    (with the card's DLFloat16) bit for bit, and as the L1 interpreter (IEEE fp16) to
    rounding. Returns the simulation result."""
    args = random_args(text, **arg_options)
    want = L1.run_module(parse(text), args)
    l2_pipeline = pipeline.replace("spyre-to-units", "spyre-to-dataflow")
    l2_pipeline = l2_pipeline.replace(",convert-dataflow-to-units", "")
    l2 = L2.run_module(lower(text, l2_pipeline, config), args, halves="dlfloat16")
    l3 = lower(text, pipeline, config)
    result = simulate(l3, args, config=config or DEFAULT_CONFIG, check_races=True)
    assert len(result.outputs) == len(want)
    for got, exact, ref in zip(result.outputs, l2, want):
        assert got.shape == ref.shape and got.dtype == ref.dtype
        np.testing.assert_array_equal(got, exact)
        assert_card_close(got, ref, tol)  # DLFloat16 on the card, fp16 at L1
    check_report(result.report)
    return result


# ---------------------------------------------------------------- numerics


ELEMENTWISE = """
func.func @main(%x: tensor<67x256xf16>, %w: tensor<256xf16>) -> tensor<67x256xf16> {
  %e = spyre.exp %x : tensor<67x256xf16> -> tensor<67x256xf16>
  %m = spyre.mul %e, %w : tensor<67x256xf16>, tensor<256xf16> -> tensor<67x256xf16>
  %a = spyre.add %m, %x : tensor<67x256xf16>, tensor<67x256xf16> -> tensor<67x256xf16>
  func.return %a : tensor<67x256xf16>
}
"""

SOFTMAX = """
func.func @main(%x: tensor<67x256xf16>) -> tensor<67x256xf16> {
  %s = spyre.softmax %x dim = -1 : tensor<67x256xf16> -> tensor<67x256xf16>
  func.return %s : tensor<67x256xf16>
}
"""

LAYER_NORM = """
func.func @main(%x: tensor<67x256xf16>, %w: tensor<256xf16>, %b: tensor<256xf16>) -> tensor<67x256xf16> {
  %y = spyre.layer_norm %x weight(%w : tensor<256xf16>) bias(%b : tensor<256xf16>) {eps = 1.0e-05 : f64} : tensor<67x256xf16> -> tensor<67x256xf16>
  func.return %y : tensor<67x256xf16>
}
"""

GATHER = """
func.func @main(%table: tensor<1000x128xf16>, %ids: tensor<67xi64>) -> tensor<67x128xf16> {
  %e = spyre.gather %table[%ids] : tensor<1000x128xf16>, tensor<67xi64> -> tensor<67x128xf16>
  %s = spyre.mul %e, %e : tensor<67x128xf16>, tensor<67x128xf16> -> tensor<67x128xf16>
  func.return %s : tensor<67x128xf16>
}
"""

MIXED = """
func.func @main(%x: tensor<67x256xf16>, %w: tensor<256xf16>, %b: tensor<256x320xf16>) -> tensor<67x320xf16> {
  %e = spyre.exp %x : tensor<67x256xf16> -> tensor<67x256xf16>
  %m = spyre.mul %e, %w : tensor<67x256xf16>, tensor<256xf16> -> tensor<67x256xf16>
  %s = spyre.softmax %m dim = -1 : tensor<67x256xf16> -> tensor<67x256xf16>
  %mm = spyre.matmul %s, %b : tensor<67x256xf16>, tensor<256x320xf16> -> tensor<67x320xf16>
  %v = spyre.reshape %mm : tensor<67x320xf16> -> tensor<67x1x320xf16>
  %r = spyre.reshape %v : tensor<67x1x320xf16> -> tensor<67x320xf16>
  %c = spyre.full {value = 2.0 : f64} : tensor<f16>
  %o = spyre.mul %r, %c : tensor<67x320xf16>, tensor<f16> -> tensor<67x320xf16>
  func.return %o : tensor<67x320xf16>
}
"""


def matmul_bias(m: int, n: int, k: int, split: tuple[int, ...] = ()) -> str:
    forced = f" {{spyre.split = array<i64: {', '.join(map(str, split))}>}}" if split else ""
    return f"""
func.func @main(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>, %c: tensor<{n}xf16>) -> tensor<{m}x{n}xf16> {{
  %p = spyre.matmul %a, %b{forced} : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16> -> tensor<{m}x{n}xf16>
  %r = spyre.add %p, %c : tensor<{m}x{n}xf16>, tensor<{n}xf16> -> tensor<{m}x{n}xf16>
  func.return %r : tensor<{m}x{n}xf16>
}}
"""


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_elementwise_uneven_rows(lowering: str) -> None:
    result = differential(ELEMENTWISE, LOWERINGS[lowering])
    (kernel,) = result.report["kernels"]
    # 67 rows of 4 sticks in, the same out, and w's 4 sticks once per core: edge tiles
    # overhang, but only sticks inside the tensors move.
    sticks = 2 * 67 * 4 + 4 * kernel["cores"]
    assert result.report["delivered_bytes"] == sticks * 128
    # LPDDR5 itself serves w's sticks once: the card multicasts them to every core.
    assert result.report["lpddr_bytes"] == (2 * 67 * 4 + 4) * 128
    assert kernel["lpddr_bytes"] == result.report["lpddr_bytes"]
    assert kernel["delivered_bytes"] == result.report["delivered_bytes"]


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_softmax(lowering: str) -> None:
    result = differential(SOFTMAX, LOWERINGS[lowering])
    assert result.report["kernels"][0]["utilization"]["sfp"] > 0


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_layer_norm(lowering: str) -> None:
    differential(LAYER_NORM, LOWERINGS[lowering])


@pytest.mark.parametrize(
    "mnk",
    [(67, 320, 256), (64, 64, 2048), (129, 64, 4096, (1, 8, 1, 4)), (16, 128, 4096),
     (67, 71, 129)],
    ids=["allgather-4", "split-k-2", "split-k-4", "allgather-2", "split-m-and-n"],
)  # fmt: skip
@pytest.mark.parametrize("lowering", LOWERINGS)
def test_matmul_with_bias(mnk: tuple, lowering: str) -> None:
    # split-k-4 is forced: on the calibrated card the planner avoids split-K there.
    m, n, k, *split = mnk
    result = differential(matmul_bias(m, n, k, *split), LOWERINGS[lowering])
    (kernel,) = result.report["kernels"]
    assert kernel["flops"] >= 2 * m * n * k
    if kernel["cores"] > 1:
        assert kernel["ring_bytes"] > 0  # split-K all-reduce or A all-gather


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_gather_embedding(lowering: str) -> None:
    result = differential(GATHER, LOWERINGS[lowering], index_bound=1000)
    assert result.report["lpddr_bytes"] >= 67 * 2 * 128  # 67 rows of 2 sticks, read + write


@pytest.mark.parametrize("lowering", LOWERINGS)
def test_programs_and_l1_views_in_one_function(lowering: str) -> None:
    # Softmax of logits exp(x) * w up to ~150, where DLFloat16's rounding of a logit
    # (0.125, to fp16's 0.0625) moves its weight by ~13 %: the L1 reference rounds the
    # same logits to fp16, so the two differ by that much on dominated rows.
    result = differential(MIXED, LOWERINGS[lowering], tol=5e-2)
    assert len(result.report["kernels"]) >= 2
    assert result.report["bottleneck"] in {k["bottleneck"] for k in result.report["kernels"]}


def test_l2_kernels_are_refused() -> None:
    module = lower(SOFTMAX, "spyre-to-dataflow")
    with pytest.raises(SimulationError, match="spyre-to-units"):
        simulate(module, random_args(SOFTMAX))


# ---------------------------------------------------------------- hand-written programs

T8, D16 = "!dataflow.lx<8x64xf16>", "!dataflow.ddr<32x64xf16>"


def two_tile_program(sfp_body: str, ls_body: str, queues: str, sfp_loop: bool = True) -> str:
    """Two cores, two 8-row tiles each of a 32 x 64 f16 tensor: LS loads into %a and
    stores %b, SFP computes exp(%a) -> %b (in a loop over the tiles, or in one block
    when not `sfp_loop`); the queues and sync ops are given."""
    if sfp_loop:
        sfp_body = f"      scf.for %j = %c0 to %c2 step %c1 {{\n{sfp_body}\n      }}"
    return f"""
func.func @main(%x: tensor<32x64xf16>) -> tensor<32x64xf16> {{
  %0 = core.program @exp cores(2) (%x) : (tensor<32x64xf16>) -> tensor<32x64xf16> {{
  ^bb0(%core: index, %in: {D16}, %out: {D16}):
    %a = dataflow.alloc_lx {{offset = 0 : i64}} : {T8}
    %b = dataflow.alloc_lx {{offset = 1024 : i64}} : {T8}
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
{queues}
    core.unit "ls" {{
      %base = arith.muli %core, %c2 : index
      scf.for %i = %c0 to %c2 step %c1 {{
        %t = arith.addi %base, %i : index
        %row = arith.muli %t, %c8 : index
{ls_body}
      }}
      core.end
    }}
    core.unit "sfp0" {{
{sfp_body}
      core.end
    }}
    core.end
  }}
  func.return %0 : tensor<32x64xf16>
}}
"""


LOAD = f"        ls.load %in[%row, %c0] into %a : {D16}, {T8}"
STORE = f"        ls.store %b into %out[%row, %c0] : {T8}, {D16}"
EXP = f'        sfp.compute "spyre.exp" on "sfp"(%a) -> (%b) : ({T8}) -> {T8}'
QUEUES = """    %full = core.queue "ls" -> "sfp0" {depth = 1 : i64, credits = 0 : i64}
    %free = core.queue "sfp0" -> "ls" {depth = 1 : i64, credits = 1 : i64}
    %done = core.queue "sfp0" -> "ls" {depth = 1 : i64, credits = 0 : i64}
    %bfree = core.queue "ls" -> "sfp0" {depth = 1 : i64, credits = 1 : i64}"""
PIPELINED = two_tile_program(
    sfp_body="\n".join(["        core.pop %full", "        core.pop %bfree", EXP,
                        "        core.push %free", "        core.push %done"]),
    ls_body="\n".join(["        core.pop %free", LOAD, "        core.push %full",
                       "        core.pop %done", STORE, "        core.push %bfree"]),
    queues=QUEUES,
)  # fmt: skip


def test_hand_written_program_numerics_and_exact_timing() -> None:
    x = random_args(PIPELINED)[0]
    result = simulate(parse(PIPELINED), [x], config=SIMPLE, trace=True)
    # On the card: x rounded to DLFloat16 on entry, exp in fp32 rounded to DLFloat16,
    # and the result back as fp16.
    want = to_user(round_to_dlf16(np.exp(from_user(x))), np.float16)
    np.testing.assert_array_equal(result.outputs[0], want)
    # By hand, the simple card (SIMPLE), 2 cores: a tile is 8 sticks = 1024 B, moved in
    # 1024 * 2 / (204.8e9 / 1.5e9) = 15 cycles, its result 750 cycles later; exp of
    # 512 elements is ceil(512 / 64) * 3 = 24 cycles; the LS unit issues an instruction
    # in 4 cycles, then its port runs it.
    #   tile 0: load issued [0, 4], [4, 19] -> full@769; exp [769, 793] -> free,
    #           done@793; store issued [793, 797], [797, 812] -> bfree@812 (read out)
    #   tile 1: load issued [797, 801], waits for the LPDDR5 port: [812, 827] ->
    #           full@1577; exp [1577, 1601] -> done@1601; store issued [1601, 1605],
    #           [1605, 1620], in LPDDR5 at 2370: the program's end.
    report = result.report
    assert report["simulated_us"] == pytest.approx(2370 / 1500)
    assert report["lpddr_bytes"] == 2 * 2 * 2 * 1024  # 2 cores x 2 tiles x load + store
    assert report["flops"] == 2 * 2 * 512
    (kernel,) = report["kernels"]
    assert kernel["busy_us"]["lpddr"] == pytest.approx(60 / 1500)
    assert kernel["busy_us"]["ls"] == pytest.approx(16 / 1500)  # 4 issues
    assert kernel["busy_us"]["sfp"] == pytest.approx(48 / 1500)
    assert kernel["bottleneck"] == "lpddr"
    assert kernel["utilization"]["sfp0"] == pytest.approx(48 / 2370)
    assert kernel["utilization"]["ls"] == pytest.approx(60 / 2370)  # its busier port
    events = result.trace["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}  # fmt: skip
    starts = sorted((threads[e["pid"], e["tid"]], round(e["ts"] * 1500), e["name"])
                    for e in events if e["ph"] == "X" and e["pid"] > 0)  # fmt: skip
    assert starts == [
        ("ls lpddr", 4, "ls.load"), ("ls lpddr", 812, "ls.load"),
        ("ls lpddr write", 797, "ls.store"), ("ls lpddr write", 1605, "ls.store"),
        ("sfp0", 769, "spyre.exp"), ("sfp0", 1577, "spyre.exp"),
    ]  # fmt: skip


A4, A1, D8 = "!dataflow.lx<4x1x8x64xf16>", "!dataflow.lx<1x8x64xf16>", "!dataflow.ddr<8x8x64xf16>"
BLOCKING_PUSH = f"""
func.func @main(%x: tensor<8x8x64xf16>) -> tensor<8x8x64xf16> {{
  %0 = core.program @blocking cores(2) (%x) : (tensor<8x8x64xf16>) -> tensor<8x8x64xf16> {{
  ^bb0(%core: index, %in: {D8}, %out: {D8}):
    %a = dataflow.alloc_lx {{offset = 0 : i64}} : {A4}
    %b = dataflow.alloc_lx {{offset = 4096 : i64}} : {A4}
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %q = core.queue "ls" -> "sfp0" {{depth = 1 : i64, credits = 0 : i64}}
    core.unit "ls" {{
      %base = arith.muli %core, %c4 : index
      scf.for %i = %c0 to %c3 step %c1 {{
        %t = arith.addi %base, %i : index
        %s = dataflow.slot %a[%i] : {A4} -> {A1}
        ls.load %in[%t, %c0, %c0] into %s : {D8}, {A1}
        core.push %q
      }}
      %t3 = arith.addi %base, %c3 : index
      %s3 = dataflow.slot %a[%c3] : {A4} -> {A1}
      ls.load %in[%t3, %c0, %c0] into %s3 : {D8}, {A1}
      core.end
    }}
    core.unit "sfp0" {{
      scf.for %j = %c0 to %c3 step %c1 {{
        core.pop %q
        %sa = dataflow.slot %a[%j] : {A4} -> {A1}
        %sb = dataflow.slot %b[%j] : {A4} -> {A1}
        sfp.compute "spyre.exp" on "sfp"(%sa) -> (%sb) : ({A1}) -> {A1}
      }}
      core.end
    }}
    core.end
  }}
  func.return %0 : tensor<8x8x64xf16>
}}
"""


def test_a_push_to_a_full_queue_waits_for_a_pop() -> None:
    # Loads of 8 sticks take 15 cycles on the LPDDR5 port and land 750 later; the LS
    # unit issues each in 4 cycles; exp takes 24 cycles.
    #   ls:   load0 issued [0, 4], [4, 19] push@769 | load1 issued [4, 8], [19, 34]
    #         push@784 | load2 issued [8, 12], [34, 49]: the depth-1 queue still holds
    #         784, so the push waits for the pop at 793
    #   sfp0: exp0 [769, 793], pops 784 at 793; exp1 [793, 817]; exp2 [817, 841]
    #   ls:   load3 is issued at 793 (not 12): [797, 812], lands at 1562 - the end.
    report = simulate(parse(BLOCKING_PUSH), random_args(BLOCKING_PUSH), config=SIMPLE).report
    assert report["simulated_us"] == pytest.approx(1562 / 1500)
    assert report["busy_us"]["sfp"] == pytest.approx(72 / 1500)
    assert report["busy_us"]["lpddr"] == pytest.approx(60 / 1500)


P8, X32, X64 = "!dataflow.lx<8x64xf16>", "!dataflow.ddr<32x64xf16>", "!dataflow.ddr<64x64xf16>"


def ls_program(body: str, out_rows: int = 32, cores: int = 2) -> str:
    """An LS-only program on two cores over a 32 x 64 f16 input: %a holds two 8-row
    slots (%s0, %s1), %c aliases slot 0 (the same LX bytes), %g and %h take 16 gathered
    rows; %row = 16 x core. `body` is the LS stream."""
    out = f"!dataflow.ddr<{out_rows}x64xf16>"
    return f"""
func.func @main(%x: tensor<32x64xf16>) -> tensor<{out_rows}x64xf16> {{
  %0 = core.program @ls cores({cores}) (%x) : (tensor<32x64xf16>) -> tensor<{out_rows}x64xf16> {{
  ^bb0(%core: index, %in: {X32}, %out: {out}):
    %a = dataflow.alloc_lx {{offset = 0 : i64}} : !dataflow.lx<2x8x64xf16>
    %c = dataflow.alloc_lx {{offset = 0 : i64}} : {P8}
    %g = dataflow.alloc_lx {{offset = 2048 : i64}} : !dataflow.lx<16x64xf16>
    %h = dataflow.alloc_lx {{offset = 4096 : i64}} : !dataflow.lx<16x64xf16>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    core.unit "ls" {{
      %row = arith.muli %core, %c16 : index
      %row8 = arith.addi %row, %c8 : index
      %s0 = dataflow.slot %a[%c0] : !dataflow.lx<2x8x64xf16> -> {P8}
      %s1 = dataflow.slot %a[%c1] : !dataflow.lx<2x8x64xf16> -> {P8}
{body}
      core.end
    }}
    core.end
  }}
  func.return %0 : tensor<{out_rows}x64xf16>
}}
"""


def gather(part: str, full: str = "%g") -> str:
    return (f"      ls.ring_allgather {part} into {full} {{group_size = 2 : i64}} : "
            f"{P8}, !dataflow.lx<16x64xf16>")  # fmt: skip


@pytest.mark.parametrize(
    "part, dependent",
    [("%s0", True), ("%s1", False), ("%c", True)],
    ids=["reads-the-loaded-slot", "reads-the-other-slot", "reads-an-alias-of-the-slot"],
)
def test_ls_ports_overlap_unless_the_data_depends(part: str, dependent: bool) -> None:
    # A load of 8 sticks (15 cycles on the LPDDR5 port, 2 cores) into slot 0, then an
    # all-gather of 2 x 8 rows (1024 / 128 + 10 = 18 cycles on the ring port), each
    # issued in 4 cycles: load [4, 19], lands at 769. An all-gather of other LX bytes
    # runs on the ring meanwhile ([8, 26]: the program ends when the load lands, less
    # than the sum of the two); one of the loaded bytes (the slot, or another buffer at
    # the same LX offset) waits for them: [769, 787], the sum.
    text = ls_program(f"      ls.load %in[%row, %c0] into %s0 : {X32}, {P8}\n" + gather(part))
    result = simulate(parse(text), random_args(text), config=SIMPLE, trace=True)
    check_report(result.report)
    starts = [(e["name"], round(e["ts"] * 1500)) for e in result.trace["traceEvents"]
              if e["ph"] == "X" and e["pid"] == 1]  # fmt: skip
    total = 4 + 15 + 750 + 18
    if dependent:
        assert starts == [("ls.load", 4), ("ls.ring_allgather", 769)]
        assert result.report["simulated_us"] == pytest.approx(total / 1500)
    else:
        assert starts == [("ls.load", 4), ("ls.ring_allgather", 8)]
        assert result.report["simulated_us"] == pytest.approx(769 / 1500)
        assert result.report["simulated_us"] < total / 1500
    (kernel,) = result.report["kernels"]
    assert kernel["busy_us"]["lpddr"] == pytest.approx(15 / 1500)
    assert kernel["busy_us"]["ring"] == pytest.approx(18 / 1500)


@pytest.mark.parametrize("stride", [1, 2])
def test_interleaved_ring_groups_share_the_links(stride: int) -> None:
    """4 cores all-gather 2 x 8 rows (2048 bytes) in pairs: adjacent pairs (0 1, 2 3)
    cross disjoint links; pairs 2 apart (0 2, 1 3) each cross 2 links per step, which
    the other pair crosses at the same time, so each moves its chunk at half the link's
    128 B per cycle. On the calibrated card: 1/2 * 2048 / 128 * sharers + 1 step *
    stride * 10 hop cycles = 8 + 10 = 18 (stride 1), 16 + 20 = 36 (stride 2); the
    uncalibrated card's links are its own: 8 + 20 = 28 (stride 2)."""
    props = "group_size = 2 : i64" + (f", stride = {stride} : i64" if stride > 1 else "")
    body = (f"      ls.ring_allgather %s0 into %g {{{props}}} : "
            f"{P8}, !dataflow.lx<16x64xf16>")  # fmt: skip
    text = ls_program(body, cores=4)
    want = {1: 8 + 10, 2: 16 + 20}[stride]
    for card, cycles in ((DEFAULT_CONFIG, want), (SIMPLE, 8 + 10 * stride)):
        result = simulate(parse(text), random_args(text), config=card)
        (kernel,) = result.report["kernels"]
        assert kernel["busy_us"]["ring"] == pytest.approx(cycles / card.clock_hz * 1e6)


def test_an_allreduces_reduction_holds_the_ls_unit() -> None:
    # On the calibrated card (1.1 GHz), 2 cores: an all-reduce of %g (2048 bytes) takes
    # 2 x 1/2 x 2048 / 128 + 2 x 10 = 36 cycles on the ring and reduces for one round
    # over half of it, 1024 x 0.8 = 819.2 cycles, the LS unit adding (issuing nothing):
    # ring [4, 859.2]. The load into the other slot is issued only then, [859.2,
    # 863.2]: 1024 B per core, 2048 / 145.68 = 14.06 cycles on the bus but 1024 /
    # 40.73 = 25.14 on the core's read channel, [863.2, 888.34], landing 550 later.
    body = "\n".join([
        '      ls.ring_allreduce %g {kind = "add", group_size = 2 : i64} : '
        "!dataflow.lx<16x64xf16>",
        f"      ls.load %in[%row, %c0] into %s1 : {X32}, {P8}",
    ])  # fmt: skip
    text = ls_program(body)
    report = simulate(parse(text), random_args(text)).report
    end = 4 + 36 + 819.2 + 4 + 1024 / (22_400 / 550) + 550
    assert report["simulated_us"] == pytest.approx(end / 1100)
    # Without the reduction cost the load goes out at once, beside the all-reduce:
    # [8, 33.14], landing at 583.14, the end.
    plain = DEFAULT_CONFIG.with_options(allreduce_round_cycles_per_byte=0.0)
    fast = simulate(parse(text), random_args(text), config=plain).report
    assert fast["simulated_us"] == pytest.approx((8 + 1024 / (22_400 / 550) + 550) / 1100)


def test_an_allreduces_reduction_waits_for_the_moves_issued_before_it() -> None:
    # The reduction uses the LS unit's data path, which LPDDR5 moves use too (the
    # card's split-K is not hidden behind loads: matmul_splits.csv). On the calibrated
    # card, 2 cores: a load of 16 rows into %h (2048 B per core: 4096 / 145.68 = 28.12
    # bus cycles, 2048 / 40.73 = 50.29 on the core's read channel) runs [4, 54.29]; the
    # all-reduce of %g (other LX bytes) is issued [4, 8] and moves its 36 ring cycles
    # [8, 44] beside it, but its 819.2 cycles of reduction start only when the load is
    # done: [54.29, 873.49]. The next load is issued then, [873.49, 877.49], runs
    # 1024 / 40.73 = 25.14 cycles and lands 550 later: the end.
    body = "\n".join([
        f"      ls.load %in[%row, %c0] into %h : {X32}, !dataflow.lx<16x64xf16>",
        '      ls.ring_allreduce %g {kind = "add", group_size = 2 : i64} : '
        "!dataflow.lx<16x64xf16>",
        f"      ls.load %in[%row, %c0] into %s1 : {X32}, {P8}",
    ])  # fmt: skip
    text = ls_program(body)
    report = simulate(parse(text), random_args(text)).report
    channel = 22_400 / 550
    end = 4 + 2048 / channel + 819.2 + 4 + 1024 / channel + 550
    assert report["simulated_us"] == pytest.approx(end / 1100)


MIXED_LS = ls_program(
    "\n".join([
        f"      ls.load %in[%row, %c0] into %s0 : {X32}, {P8}",
        gather("%s0"),
        f"      ls.load %in[%row8, %c0] into %s0 : {X32}, {P8}",
        "      %o = arith.muli %core, %c32 : index",
        f"      ls.store %g into %out[%o, %c0] : !dataflow.lx<16x64xf16>, {X64}",
        gather("%s0", "%h"),
        "      %o16 = arith.addi %o, %c16 : index",
        f"      ls.store %h into %out[%o16, %c0] : !dataflow.lx<16x64xf16>, {X64}",
    ]),
    out_rows=64,
)  # fmt: skip


def test_ls_stream_mixing_moves_and_collectives_exact_timing() -> None:
    x = random_args(MIXED_LS)[0]
    result = simulate(parse(MIXED_LS), [x], config=SIMPLE, trace=True)
    check_report(result.report)
    # Core c all-gathers rows [16c, 16c + 8) of both cores, then [16c + 8, 16c + 16),
    # and stores each 16-row result at rows 32c and 32c + 16.
    halves = [np.concatenate([x[0:8], x[16:24]]), np.concatenate([x[8:16], x[24:32]])]
    # Moves only: each value as DLFloat16 keeps it (x's fp16 rounded to 9 fraction bits)
    want = to_user(from_user(np.concatenate(halves * 2)), np.float16)
    np.testing.assert_array_equal(result.outputs[0], want)
    # By hand, 2 cores: 8 sticks move in 15 cycles, 16 in 30, an all-gather to 16 rows
    # takes 18; each instruction is issued in 4 cycles, at 0, 4, 8 ...
    #   load s0        issued [0, 4]   lpddr [4, 19]       lands 769
    #   gather s0 -> g issued [4, 8]   ring  [769, 787]    (reads s0: waits for it)
    #   load s0        issued [8, 12]  lpddr [787, 802]    lands 1552 (s0 is read until 787)
    #   store g        issued [12, 16] lpddr [802, 832]    (port busy until 802)
    #   gather s0 -> h issued [16, 20] ring  [1552, 1570]  (waits for the second load)
    #   store h        issued [20, 24] lpddr [1570, 1600]  in LPDDR5 at 2350: the end
    report = result.report
    assert report["simulated_us"] == pytest.approx(2350 / 1500)
    (kernel,) = report["kernels"]
    assert kernel["busy_us"]["lpddr"] == pytest.approx((15 + 15 + 30 + 30) / 1500)
    assert kernel["busy_us"]["ring"] == pytest.approx(2 * 18 / 1500)
    assert kernel["busy_us"]["ls"] == pytest.approx(6 * 4 / 1500)
    assert kernel["utilization"]["ls"] == pytest.approx(90 / 2350)
    assert report["ring_bytes"] == 2 * 2 * 1024  # 2 cores send half of 2048 bytes, twice
    events = result.trace["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}  # fmt: skip
    got = [(threads[e["pid"], e["tid"]], e["name"], round(e["ts"] * 1500),
            round((e["ts"] + e["dur"]) * 1500))
           for e in events if e["ph"] == "X" and e["pid"] == 1]  # fmt: skip
    assert got == [
        ("ls lpddr", "ls.load", 4, 19), ("ls ring", "ls.ring_allgather", 769, 787),
        ("ls lpddr", "ls.load", 787, 802), ("ls lpddr write", "ls.store", 802, 832),
        ("ls ring", "ls.ring_allgather", 1552, 1570), ("ls lpddr write", "ls.store", 1570, 1600),
    ]  # fmt: skip


def test_deadlock_names_the_waiting_units() -> None:
    # Verifies (pushes and pops match, no wait cycle through empty queues), but LS
    # needs a second credit before SFP returns the first, and SFP waits for a second
    # tile before it returns any.
    sfp = "\n".join(["        core.pop %full", EXP, "        core.pop %full", EXP,
                     "        core.push %free", "        core.push %free"])  # fmt: skip
    text = two_tile_program(
        sfp_body=sfp,
        ls_body="\n".join(["        core.pop %free", LOAD, "        core.push %full"]),
        queues=QUEUES.split("\n    %done")[0],
        sfp_loop=False,
    )
    with pytest.raises(SimulationError) as caught:
        simulate(parse(text), random_args(text))
    message = str(caught.value)
    assert "deadlock in program @exp" in message
    assert "unit ls" in message and "pop from queue %free (sfp0 -> ls" in message
    assert "unit sfp0" in message and "pop from queue %full (ls -> sfp0" in message
    assert "iteration 2 of 2" in message  # where LS waits
    assert "test.mlir:" in message  # the waiting ops are located


def test_l2_instructions_inside_a_unit_are_refused() -> None:
    text = PIPELINED.replace("ls.load %in", "dataflow.load %in", 1)
    with pytest.raises(SimulationError, match="L2 instruction in unit program of @exp"):
        simulate(parse(text), random_args(text))


def test_unmatched_pushes_are_an_error() -> None:
    text = PIPELINED.replace(
        "        core.push %full\n",
        "        core.push %full\n        %yes = arith.cmpi eq, %c0, %c0 : index\n"
        "        scf.if %yes {\n          core.push %bfree\n        }\n",
        1,
    ).replace('"sfp0" {depth = 1 : i64, credits = 1', '"sfp0" {depth = 4 : i64, credits = 1')
    with pytest.raises(SimulationError, match=r"queue %bfree .* 2 more pushes than pops"):
        simulate(parse(text), random_args(text))


# ---------------------------------------------------------------- timing of lowered programs


STREAM_EXP = """
func.func @main(%x: tensor<4096x1024xf16>) -> tensor<4096x1024xf16> {
  %e = spyre.exp %x : tensor<4096x1024xf16> -> tensor<4096x1024xf16>
  func.return %e : tensor<4096x1024xf16>
}
"""
STREAM_ADD = """
func.func @main(%x: tensor<4096x1024xf16>, %y: tensor<4096x1024xf16>) -> tensor<4096x1024xf16> {
  %s = spyre.add %x, %y : tensor<4096x1024xf16>, tensor<4096x1024xf16> -> tensor<4096x1024xf16>
  func.return %s : tensor<4096x1024xf16>
}
"""


def simulated_us(text: str, pipeline: str, config: SpyreConfig = DEFAULT_CONFIG) -> dict:
    result = simulate(lower(text, pipeline), random_args(text), config=config)
    check_report(result.report)
    return result.report


def test_double_buffering_hides_compute_behind_loads() -> None:
    # exp of 4096 x 1024 f16 on 2 cores: LPDDR5 ~82 us, SFP ~66 us per core. Single
    # buffered, a tile's load waits for the exp of the one before: about the sum.
    single = simulated_us(STREAM_EXP, no_double_buffer(cores=2), SIMPLE)
    double = simulated_us(STREAM_EXP, "spyre-to-units{cores=2}", SIMPLE)
    assert single["bottleneck"] == double["bottleneck"] == "lpddr"
    assert single["simulated_us"] > 1.5 * single["busy_us"]["lpddr"]
    assert double["simulated_us"] < 0.8 * single["simulated_us"]
    assert double["roofline_fraction"] > single["roofline_fraction"]


def test_thirty_two_cores_share_the_bandwidth() -> None:
    one = simulated_us(STREAM_ADD, "spyre-to-units{cores=1}", SIMPLE)
    many = simulated_us(STREAM_ADD, "spyre-to-units{cores=32}", SIMPLE)
    assert one["kernels"][0]["cores"] == 1 and many["kernels"][0]["cores"] == 32
    assert one["bottleneck"] == many["bottleneck"] == "lpddr"
    # Bandwidth-bound on the simple card (no per-core limit: one core alone streams at
    # the card's bandwidth): 32 cores stream at 1/32 of the bandwidth each, so they gain
    # only what overlapping the little compute with moves gains - far from 32x.
    speedup = one["simulated_us"] / many["simulated_us"]
    assert 0.9 < speedup < 1.5, speedup
    assert many["roofline_us"] == pytest.approx(one["roofline_us"])


def test_trace_is_chrome_trace_json() -> None:
    result = simulate(lower(MIXED, LOWERINGS["single-buffered"]), random_args(MIXED), trace=True)
    text = json.dumps(result.trace)
    events = json.loads(text)["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert complete
    for e in complete:
        for key in ("name", "ts", "dur", "pid", "tid", "args"):
            assert key in e, (key, e)
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert e["ts"] + e["dur"] <= result.report["simulated_us"] + 1e-6
    names = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in complete} <= names
    processes = [e["args"]["name"] for e in events if e["name"] == "process_name"]
    assert processes[0] == "card" and len(processes) == 1 + len(result.report["kernels"])
    # The card's track: the programs one after another, with their reports.
    card = [e for e in complete if e["pid"] == 0]
    assert [e["args"]["name"] for e in card] == [k["name"] for k in result.report["kernels"]]
    assert card[-1]["ts"] + card[-1]["dur"] == pytest.approx(result.report["simulated_us"])


def test_docs_list_every_timing_parameter() -> None:
    """docs/simulator.md names every SpyreConfig field or property the cost model and
    the engine read, with its current value (integers), and marks the model
    assumptions as such."""
    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "simulator.md").read_text().split("\n## Timing rules")[0]
    code = "".join((root / "spyre_ir" / f).read_text()
                   for f in ("cost_model.py", "matmul_plan.py", "lpddr_runs.py",
                             "passes/row_tiles.py", "sim/engine.py", "sim/lpddr.py",
                             "sim/timing.py", "sim/scheduler.py"))  # fmt: skip
    used = set(re.findall(r"\bconfig\.([a-z_0-9]+)", code))
    assert {"ls_issue_cycles", "lpddr_latency_cycles", "ring_bytes_per_cycle"} <= used
    rows = {m.group(1): line for line in doc.splitlines()
            if (m := re.match(r"\| `([a-z_0-9]+)` \|", line))}  # fmt: skip
    missing = sorted(used - set(rows))
    assert not missing, f"add to the parameter tables of docs/simulator.md: {missing}"
    source = inspect.getsource(SpyreConfig)
    for f in dataclasses.fields(SpyreConfig):
        if f.name not in rows:
            continue
        row = rows[f.name]
        value = getattr(DEFAULT_CONFIG, f.name)
        if isinstance(value, int):
            assert re.search(rf"\b{value}\b", row.split("|")[2]), (f.name, value, row)
        assumed = re.search(rf"\n    {f.name}: .*\n    \"\"\"MODEL ASSUMPTION", source)
        assert bool(assumed) == ("model assumption" in row), f.name


def test_no_trace_unless_asked() -> None:
    result = simulate(lower(SOFTMAX, TO_UNITS), random_args(SOFTMAX))
    assert result.trace is None


def test_config_changes_the_timing() -> None:
    module = lower(SOFTMAX, TO_UNITS)
    args = random_args(SOFTMAX)
    base = simulate(module, args).report["simulated_us"]
    fast = simulate(
        module,
        args,
        config=DEFAULT_CONFIG.with_options(lpddr_bandwidth=2 * DEFAULT_CONFIG.lpddr_bandwidth),
    )
    assert fast.report["simulated_us"] < base


def test_blas_threads_are_restored_and_numerics_stay_close() -> None:
    from spyre_ir.sim.engine import _blas_controls

    text = matmul_bias(67, 320, 256)
    args = random_args(text)
    before = [get() for get, _ in _blas_controls()]
    got = simulate(lower(text, TO_UNITS), args, blas_threads=1).outputs[0]
    assert [get() for get, _ in _blas_controls()] == before
    want = L1.run_module(parse(text), args)[0]
    assert_card_close(got, want, 1e-2)


@pytest.mark.slow
def test_large_matmul_streams_b_while_the_ring_gathers_a() -> None:
    """512x4096 @ 4096x4096 f16 on 32 cores, split over N: the A all-gathers on the ring
    overlap the B tiles' LPDDR5 stream. (How fast the simulator runs it is
    bench/kernel_bench.py's business.)"""
    lines = matmul_bias(512, 4096, 4096).splitlines(keepends=True)
    text = "".join(x for x in lines if "spyre.add" not in x).replace("return %r", "return %p")
    # Split over N, so that every core needs all of A: with the calibrated planner's own
    # choice a multicast delivers A and the ring is all but idle.
    module = lower(text, "spyre-to-units{split=1,1,32,1}")
    args = random_args(text)
    result = simulate(module, args, blas_threads=1)
    assert result.report["simulated_us"] >= result.report["roofline_us"]
    # The A all-gathers run on the ring while the LPDDR5 port streams B tiles: the two
    # ports together are busy more than the whole time, the LS unit at its busier one.
    use = result.report["utilization"]
    assert use["lpddr"] + use["ring"] > 1
    assert use["ls"] == pytest.approx(max(use["lpddr"], use["ring"]))
    assert result.report["bottleneck"] == "lpddr"
