"""`make demo`: a tour of spyre-ir on built-in defaults, with nothing downloaded.

1. the card's machine model;
2. a hand-written attention block (examples/attention_block.mlir) through every level,
   with op counts, and each level's interpreter checked against the tensor level;
3. a small transformer block compiled with torch.compile(backend="spyre"), run on the
   simulated card and compared with eager PyTorch, its IR dumped per level and the
   card's report for it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def banner(text: str) -> None:
    print(f"\n== {text} " + "=" * max(0, 74 - len(text)))


def show_machine() -> None:
    from spyre_ir.hardware import DEFAULT_CONFIG as c

    banner("the card (spyre_ir/hardware.py)")
    print(f"{c.cores} cores x {c.corelets_per_core} corelets, {c.lx_bytes // 2**20} MiB LX per core "
          f"({c.lx_total_bytes // 2**20} MiB on chip), {c.lpddr_bandwidth / 1e9:.1f} GB/s LPDDR5")
    print(f"fp16 peak {c.fp16_peak_flops / 1e12:.3f} TFLOP/s at {c.clock_hz / 1e9:.1f} GHz, "
          f"{c.stick_bytes}-byte sticks ({c.elements_per_stick('f16')} x f16)")


def count_ops(module) -> int:
    return sum(1 for _ in module.walk())


def tour_levels() -> None:
    from spyre_ir import registry
    from spyre_ir.diagnostics import parse_file
    from spyre_ir.dialects import core, dataflow
    from spyre_ir.interp import dataflow as l2
    from spyre_ir.interp import tensor as l1
    from spyre_ir.lowering.dataflow_to_units import ConvertDataflowToUnits
    from spyre_ir.pipelines import lower_to_dataflow

    banner("examples/attention_block.mlir through the levels")
    ctx = registry.make_context()
    path = ROOT / "examples" / "attention_block.mlir"
    module = parse_file(ctx, str(path))
    rng = np.random.default_rng(0)
    fn = next(op for op in module.walk() if op.name == "func.func")
    args = [
        (rng.standard_normal(t.get_shape()) * 0.1).astype(np.float16)
        for t in fn.function_type.inputs.data
    ]
    reference = l1.run_module(module, args)
    print(f"L1 spyre     {count_ops(module):5d} ops   (tensor ops with torch semantics)")

    start = time.perf_counter()
    lower_to_dataflow(module)
    kernels = [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
    elapsed = time.perf_counter() - start
    got = l2.run_module(module, args, check_races=True)
    err = max(float(np.max(np.abs(g.astype(np.float32) - r.astype(np.float32))))
              for g, r in zip(got, reference))  # fmt: skip
    print(f"L2 dataflow  {count_ops(module):5d} ops   {len(kernels)} kernels, "
          f"lowered in {elapsed:.2f} s; interpreter vs L1: max |error| {err:.1e}")
    for k in kernels:
        plan = k.plan.data if k.plan else {}
        kind = plan.get("kind")
        print(f"    @{k.sym_name.data:12} {kind.data if kind else '':7} cores {k.core_count:2d}   "
              f"LX peak {k.lx_peak_bytes.value.data:8d} bytes of {k.capacity}")

    ConvertDataflowToUnits().apply(ctx, module)
    module.verify()
    programs = [p for p in module.walk() if isinstance(p, core.ProgramOp)]
    units = sorted({u for p in programs for u in p.units()})
    print(f"L3 units     {count_ops(module):5d} ops   {len(programs)} core programs over units "
          f"{', '.join(units)}")
    try:
        from spyre_ir.sim.engine import simulate
    except ImportError:
        return
    result = simulate(module, args)
    err = max(float(np.max(np.abs(g.astype(np.float32) - r.astype(np.float32))))
              for g, r in zip(result.outputs, reference))  # fmt: skip
    report = result.report
    print(f"simulated card: {report['simulated_us']:.1f} us, roofline {report['roofline_us']:.1f} us "
          f"({100 * report['roofline_fraction']:.0f} %), bottleneck {report['bottleneck']}; "
          f"vs L1: max |error| {err:.1e}")


def tour_torch() -> None:
    import torch
    import torch.nn as nn

    banner('torch.compile(model, backend="spyre")')
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, dim: int = 256, hidden: int = 512) -> None:
            super().__init__()
            self.norm = nn.RMSNorm(dim)
            self.up = nn.Linear(dim, hidden)
            self.down = nn.Linear(hidden, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.down(nn.functional.silu(self.up(self.norm(x))))

    model = Block().half().eval()
    x = torch.randn(4, 64, 256, dtype=torch.float16)
    dump = Path(tempfile.mkdtemp(prefix="spyre-demo-"))
    os.environ["SPYRE_IR_DUMP"] = str(dump)
    os.environ["SPYRE_EXECUTOR"] = "simulator"
    with torch.no_grad():
        eager = model(x)
        start = time.perf_counter()
        compiled = torch.compile(model, backend="spyre")(x)
        elapsed = time.perf_counter() - start
    err = float((compiled.float() - eager.float()).abs().max())
    print(f"RMSNorm + SiLU MLP block, f16 [4, 64, 256]: compiled and run in {elapsed:.1f} s on "
          f"the simulated card; max |error| vs eager {err:.1e}")
    for f in sorted(dump.iterdir()):
        print(f"    IR dump {f.name:32} {f.stat().st_size:8d} bytes")
    report_units(next(dump.glob("*.units.mlir")))
    print(f"(re-run a dump: .venv/bin/spyre-run {dump}/<file>.mlir --report text)")


def report_units(path: Path) -> None:
    """The simulated card's report for a dumped L3 file (timing does not depend on the
    values, so random inputs of the right types do)."""
    from spyre_ir import registry
    from spyre_ir.diagnostics import parse_file
    from spyre_ir.interp.numerics import storage_dtype
    from spyre_ir.sim.engine import simulate

    module = parse_file(registry.make_context(), str(path))
    fn = next(op for op in module.walk() if op.name == "func.func")
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(t.get_shape()).astype(storage_dtype(t.element_type))
            for t in fn.function_type.inputs.data]  # fmt: skip
    report = simulate(module, args).report
    print(f"    simulated {report['simulated_us']:.1f} us, roofline {report['roofline_us']:.1f} us "
          f"({100 * report['roofline_fraction']:.0f} %), bottleneck {report['bottleneck']}")
    for k in report["kernels"]:
        print(f"      {k['name']:14} {k['simulated_us']:7.2f} us  "
              f"{100 * k['roofline_fraction']:3.0f} % of roofline  {k['bottleneck']}")


def main() -> int:
    print("spyre-ir demo: an MLIR-style compiler and simulated card for IBM Spyre")
    show_machine()
    tour_levels()
    tour_torch()
    print("\nnext: README.md, docs/architecture.md, docs/passes.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
