"""The simulator drives the L2 machine through its public interface
(spyre_ir/interp/machine.py, `DataflowInterpreter`): it imports no private name from
spyre_ir.interp and subclasses none of its classes; the interface's hooks (a runner for
a function-level op, a body driver for a kernel) do what they say."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

import spyre_ir.sim
from spyre_ir import pipelines, registry
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects import dataflow as D
from spyre_ir.interp.dataflow import DataflowInterpreter, run_module
from spyre_ir.interp.machine import DdrMemory, KernelMachine, LocatedError
from spyre_ir.interp.tensor import InterpreterError, run_entry

SIM = Path(spyre_ir.sim.__file__).parent

ADD = """
func.func @main(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %z = spyre.add %x, %y : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x64xf32>
  func.return %z : tensor<4x64xf32>
}
"""


def _l2() -> object:
    module = parse_and_verify(registry.make_context(), ADD, "add.mlir")
    return pipelines.lower_to_dataflow(module)


def _sim_modules() -> list[Path]:
    return sorted(SIM.glob("*.py"))


@pytest.mark.parametrize("path", _sim_modules(), ids=lambda p: p.name)
def test_the_simulator_imports_only_public_names_of_the_interpreters(path: Path) -> None:
    tree = ast.parse(path.read_text())
    private = [
        f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spyre_ir.interp")
        for alias in node.names
        if alias.name.startswith("_")
    ]
    assert private == []


def test_no_simulator_class_subclasses_an_interpreter_class() -> None:
    import importlib

    found = []
    for path in _sim_modules():
        module = importlib.import_module(f"spyre_ir.sim.{path.stem}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            bases = [b for b in cls.__mro__[1:] if b.__module__.startswith("spyre_ir.interp")]
            found += [f"{cls.__name__}({b.__module__}.{b.__name__})" for b in bases]
    # the simulator's error type extends the interpreters' public error, nothing else
    assert found == ["SimulationError(spyre_ir.interp.tensor.InterpreterError)"]


def test_a_runner_replaces_an_op_and_a_body_driver_gets_the_memories() -> None:
    """A runner for `dataflow.kernel` runs the kernel through a `KernelMachine` whose
    body driver executes the block's ops one by one: the same result as the plain
    interpreter; the driver sees the core ids, then the inputs and the output as
    `DdrMemory`s; an error inside names the op and the driver's kind."""
    x = np.arange(256, dtype=np.float32).reshape(4, 64)
    y = np.full((4, 64), 0.5, np.float32)
    want = run_module(_l2(), [x, y])[0]
    seen: list[list] = []

    def run_kernel(op, operands):
        def drive(block, memories):
            seen.append(memories)
            machine.values.update(zip(block.args, memories))
            for inner in block.ops:
                if isinstance(inner, D.EndOp):
                    break
                values = machine.values
                results = machine.execute(inner, [values[v] for v in inner.operands])
                values.update(zip(inner.results, results))

        machine = KernelMachine(interp, op, body=drive, kind="test")
        return machine.run(operands)

    module = _l2()
    interp = DataflowInterpreter(module, runners={D.KernelOp: run_kernel})
    got = run_entry(interp, [x, y], "main")[0]
    np.testing.assert_array_equal(got, want)
    assert len(seen) >= 1
    cores, *memories = seen[0]
    assert cores.dtype == np.int64 and cores[0] == 0
    assert all(isinstance(m, DdrMemory) for m in memories) and len(memories) == 3

    kernel = next(o for o in module.walk() if isinstance(o, D.KernelOp))
    machine = KernelMachine(interp, kernel, kind="test")
    assert machine.uniform(np.array([3, 3, 3, 3]), "x") == 3
    with pytest.raises(InterpreterError, match="the x differs across cores"):
        machine.uniform(np.arange(4), "x")
    error = machine.error(kernel, "boom")
    assert isinstance(error, LocatedError)
    assert str(error).endswith(f"(test @{kernel.sym_name.data}): boom")
