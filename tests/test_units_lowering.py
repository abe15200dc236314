"""L3: per-unit programs from the frontend graphs verify (queue balance, no wait cycle),
and the IR does not grow with the core count."""

from __future__ import annotations

import capture
import models
import pytest
import torch

from spyre_ir.dialects import core, dataflow
from spyre_ir.pipelines import lower_to_dataflow, lower_to_units


def op_count(module) -> int:
    """Ops of the module, index constants aside: those are uniqued by value, so two equal
    sizes of a split share one op."""
    from xdsl.dialects import arith

    return sum(1 for op in module.walk() if not isinstance(op, arith.ConstantOp))


@pytest.mark.parametrize("name", ["mlp", "rmsnorm_swiglu", "attention_manual", "tiny_llama_eager"])
def test_frontend_graphs_lower_to_verified_units(name: str) -> None:
    model, args = models.build(name, torch.float16)
    for module, _ in capture.capture(model, args):
        lower_to_units(module)
        programs = [p for p in module.walk() if isinstance(p, core.ProgramOp)]
        assert programs
        assert not [k for k in module.walk() if isinstance(k, dataflow.KernelOp)]
        for program in programs:
            units = program.units()
            assert "ls" in units
            assert set(units) <= set(core.UNITS)


@pytest.mark.parametrize("name", ["mlp", "attention_manual"])
def test_ir_size_does_not_grow_with_cores(name: str) -> None:
    model, args = models.build(name, torch.float16)
    ((module, _),) = capture.capture(model, args)
    eight, thirty_two = module.clone(), module.clone()
    lower_to_units(eight, cores=8)
    lower_to_units(thirty_two, cores=32)
    # SPMD over the core id: four times the cores never means more IR (the plans may
    # differ - a core of eight walks more tiles, so it may loop where 32 cores do not).
    assert op_count(thirty_two) <= op_count(eight)
    cores = lambda m: max(p.core_count for p in m.walk() if isinstance(p, core.ProgramOp))  # noqa: E731
    assert cores(eight) <= 8 < cores(thirty_two)


def test_matmul_program_uses_both_pe_corelets() -> None:
    from spyre_ir import registry
    from spyre_ir.diagnostics import parse_and_verify

    text = """
    func.func @main(%a: tensor<512x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<512x4096xf16> {
      %c = spyre.matmul %a, %b : tensor<512x4096xf16>, tensor<4096x4096xf16> -> tensor<512x4096xf16>
      func.return %c : tensor<512x4096xf16>
    }"""
    module = parse_and_verify(registry.make_context(), text, "mm.mlir")
    lower_to_units(module)
    (program,) = [p for p in module.walk() if isinstance(p, core.ProgramOp)]
    units = program.units()
    assert program.core_count == 32
    for corelet in ("pe0", "pe1"):
        kinds = [op.kind.data for op in units[corelet].walk() if hasattr(op, "kind")]
        assert "spyre.matmul" in kinds


DTYPES = {"f32": (torch.float32, 1e-5), "f16": (torch.float16, 1e-2)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(models.MODELS))
def test_frontend_graphs_on_units_match_l1(name: str, dtype: str) -> None:
    """Every frontend graph, lowered to per-unit programs and run in the order the
    queues allow, gives what the L1 interpreter gives."""
    import numpy as np

    from spyre_ir.interp import dataflow as l2
    from spyre_ir.interp import tensor as l1
    from spyre_ir.interp import units as l3

    torch_dtype, tol = DTYPES[dtype]
    model, args = models.build(name, torch_dtype)
    for module, inputs in capture.capture(model, args):
        # The card holds 16-bit floats as DLFloat16, the L1 interpreter as IEEE fp16: the
        # level above in the same number format is the L2 interpreter in DLFloat16 (L2
        # against L1 in IEEE fp16 is tests/test_dataflow_differential.py).
        want = l1.run_module(module, inputs)
        if dtype == "f16":
            above = module.clone()
            lower_to_dataflow(above)
            want = l2.run_module(above, inputs, halves="dlfloat16")
        lower_to_units(module)
        got = l3.run_module(module, inputs, check_races=True)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(
                g.astype(np.float64), w.astype(np.float64), rtol=tol, atol=tol
            )
