"""``torch.compile(model, backend="spyre")`` on whole building blocks, and the backend's
behaviour around them: entry-point discovery, CPU fallback and its warnings, strict mode,
IR dumps and executor selection.

Models come from ``tests/models.py`` (MLP, RMSNorm+SwiGLU, causal attention with four
mask styles, rotary embeddings, a 2-layer HF Llama with SDPA and with eager attention).
Each is compiled in f32, f16 and bf16 with ``SPYRE_STRICT=1`` (no CPU fallback allowed)
and compared with eager: f32 at rtol = atol = 1e-5, f16 / bf16 at 1e-2.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.exc import BackendCompilerFailed

import spyre_ir.lowering.fx_importer as fx_importer
from spyre_ir.runtime import backend
from spyre_ir.runtime.backend import (
    Executor,
    SpyreConfigError,
    SpyreUnsupportedError,
    reset_warnings,
    spyre_backend,
)

sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402

F32, F16, BF16 = torch.float32, torch.float16, torch.bfloat16
FLOATS = (F32, F16, BF16)
TOLERANCE = {F32: 1e-5, F16: 1e-2, BF16: 1e-2}
UNSUPPORTED = "aten.cumprod.default"  # no lowering; checked below, so this cannot go stale


def _dtype_id(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    """No SPYRE_* settings from outside (the L1 reference executor: the card's own tests
    are tests/test_backend_card.py), a fresh dynamo cache and fresh warning state."""
    for var in ("SPYRE_STRICT", "SPYRE_IR_DUMP", "SPYRE_EXACT_F32"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPYRE_EXECUTOR", "reference")
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    reset_warnings()
    yield monkeypatch
    torch._dynamo.reset()
    reset_warnings()


class Spy:
    """Counts the graphs dynamo hands the backend and records, per graph, the ATen
    targets AOTAutograd produced and the ones imported to spyre."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.graphs = 0
        self.aten_targets: set[str] = set()
        self.imported: set[str] = set()
        real_import, real_compile = fx_importer.import_graph, backend.compile_graph

        def import_graph(gm, name="main"):
            module = real_import(gm, name)
            module.verify()
            self.imported |= _call_targets(gm)
            return module

        def compile_graph(gm, example_inputs, settings):
            self.aten_targets |= _call_targets(gm)
            return real_compile(gm, example_inputs, settings)

        monkeypatch.setattr(fx_importer, "import_graph", import_graph)
        monkeypatch.setattr(backend, "compile_graph", compile_graph)

    def backend(self, gm, example_inputs, **kwargs):
        self.graphs += 1
        return spyre_backend(gm, example_inputs, **kwargs)


def _call_targets(gm: torch.fx.GraphModule) -> set[str]:
    return {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}


def _compare(got, want, dtype: torch.dtype) -> None:
    tol = TOLERANCE[dtype]
    for g, w in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want),
                    strict=True):  # fmt: skip
        torch.testing.assert_close(g, w, rtol=tol, atol=tol)


def _run(compiled, model, inputs):
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compiled(*inputs)
        want = model(*inputs)
    return got, want, [str(w.message) for w in caught]


# --------------------------------------------------------------------------- models
@pytest.mark.parametrize("dtype", FLOATS, ids=_dtype_id)
@pytest.mark.parametrize("name", list(models.MODELS))
def test_model_matches_eager(name: str, dtype: torch.dtype, env) -> None:
    env.setenv("SPYRE_STRICT", "1")
    spy = Spy(env)
    model, inputs = models.build(name, dtype)
    compiled = torch.compile(model, backend=spy.backend, dynamic=False)
    got, want, caught = _run(compiled, model, inputs)
    assert not caught, caught
    _compare(got, want, dtype)
    assert spy.graphs == 1, f"{name}: {spy.graphs} graphs reached the backend"
    assert spy.imported, "nothing ran on spyre"


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_tiny_llama_is_one_graph_entirely_on_spyre(attention: str, env) -> None:
    """The whole forward is one dynamo graph (no graph break), every ATen op of it is
    imported to spyre (none is left on CPU), and the logits match eager."""
    env.setenv("SPYRE_STRICT", "1")
    spy = Spy(env)
    model, (ids,) = models.build(f"tiny_llama_{attention}", F32)
    compiled = torch.compile(model, backend=spy.backend, dynamic=False)
    got, want, caught = _run(compiled, model, (ids,))
    assert not caught, caught
    assert spy.graphs == 1
    breaks = torch._dynamo.utils.counters["graph_break"]
    assert not breaks, dict(breaks)
    assert spy.aten_targets - spy.imported == set(), "left on CPU"
    assert got.shape == (1, models.SEQ, models.LLAMA_VOCAB)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # a second call with other tokens reuses the compiled graph
    other = models.llama_inputs(seed=5)
    with torch.no_grad():
        torch.testing.assert_close(compiled(other), model(other), rtol=1e-5, atol=1e-5)
    assert spy.graphs == 1


def test_backend_is_discoverable_without_importing_spyre_ir(tmp_path: Path) -> None:
    """`backend="spyre"` resolves through the torch_dynamo_backends entry point. (The
    device's own autoload entry point, which imports spyre_ir with torch, is switched
    off here: tests/test_device_registration.py covers it.)"""
    code = textwrap.dedent("""
        import sys
        import torch
        assert "spyre_ir" not in sys.modules, "importing torch imported spyre_ir"
        model = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU())
        compiled = torch.compile(model, backend="spyre", dynamic=False)
        x = torch.randn(5, 64)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
        assert "spyre_ir.runtime.backend" in sys.modules
        print("ok")
    """)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
        cwd=tmp_path, env={**_clean_env(), "SPYRE_STRICT": "1", "SPYRE_EXACT_F32": "1",
                           "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"


def _clean_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("SPYRE_")}


# -------------------------------------------------------------------------- fallback
def _with_cumprod(x):
    return torch.cumprod(x.exp() * 0.5, -1).sin() + x


def _with_cumprod_and_kthvalue(x):
    return torch.cumprod(x, 0) + torch.kthvalue(x, 3).values.sum()


def test_fallback_op_is_really_unsupported() -> None:
    from spyre_ir.lowering.aten_lowerings import supported_targets

    assert UNSUPPORTED not in supported_targets()
    assert "aten.kthvalue.default" not in supported_targets()


def test_unsupported_op_warns_once_and_runs_on_cpu(env) -> None:
    spy = Spy(env)
    x = models.randn(63, 129, seed=3) * 0.1
    compiled = torch.compile(_with_cumprod, backend="spyre", dynamic=False)
    got, want, caught = _run(compiled, _with_cumprod, (x,))
    assert len(caught) == 1, caught
    assert UNSUPPORTED in caught[0] and "running it on CPU" in caught[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # the ops around the fallback still ran on spyre
    assert {"aten.exp.default", "aten.sin.default"} <= spy.imported
    assert UNSUPPORTED not in spy.imported


def _compile(fn):
    return torch.compile(fn, backend="spyre", dynamic=False)


def test_fallback_warning_comes_with_every_compiled_graph(env) -> None:
    """Never silent: each compiled graph warns about each op kind it leaves on CPU, naming
    the graph, also when an earlier graph warned about the same kind."""
    x = models.randn(63, 129, seed=4) * 0.1
    _, _, first = _run(_compile(_with_cumprod), _with_cumprod, (x,))
    assert len(first) == 1 and UNSUPPORTED in first[0]

    torch._dynamo.reset()
    compiled = torch.compile(_with_cumprod_and_kthvalue, backend="spyre", dynamic=False)
    got, want, second = _run(compiled, _with_cumprod_and_kthvalue, (x,))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert len(second) == 2, second
    assert any(UNSUPPORTED in w for w in second) and any(
        "aten.kthvalue.default" in w for w in second
    )

    torch._dynamo.reset()
    _, _, third = _run(_compile(_with_cumprod), _with_cumprod, (x,))
    assert len(third) == 1 and UNSUPPORTED in third[0]
    graph_of = lambda message: message.rsplit(" in ", 1)[1]  # noqa: E731
    assert graph_of(first[0]) != graph_of(third[0])


@pytest.mark.parametrize("how", ["env", "option"])
def test_strict_mode_is_a_clear_error_naming_the_op(how: str, env) -> None:
    options = None
    if how == "env":
        env.setenv("SPYRE_STRICT", "1")
    else:
        options = {"strict": True}
    compiled = torch.compile(_with_cumprod, backend="spyre", dynamic=False, options=options)
    with torch.no_grad(), pytest.raises(BackendCompilerFailed) as info:
        compiled(models.randn(63, 129))
    inner = info.value.inner_exception
    assert isinstance(inner, SpyreUnsupportedError)
    assert inner.op == UNSUPPORTED
    assert UNSUPPORTED in str(inner) and "SPYRE_STRICT" in str(inner)
    assert UNSUPPORTED in str(info.value)


def test_executor_failure_falls_back_to_cpu(env) -> None:
    def broken(module):
        def run(arrays):
            raise RuntimeError("device lost")

        return run

    env.setitem(backend.EXECUTORS, "broken", Executor("broken", "tensor", broken))
    env.setenv("SPYRE_EXECUTOR", "broken")
    fn = lambda x: x.exp() + 1  # noqa: E731
    x = models.randn(63, 129)
    got, want, caught = _run(torch.compile(fn, backend="spyre", dynamic=False), fn, (x,))
    assert len(caught) == 1 and "broken executor" in caught[0] and "device lost" in caught[0]
    torch.testing.assert_close(got, want)


# --------------------------------------------------------------------------- IR dumps
def _spyre_opt(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spyre_ir.tools.spyre_opt", str(path)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_ir_dump_files_reparse_verify_and_rerun(tmp_path: Path, env) -> None:
    from spyre_ir.diagnostics import parse_file
    from spyre_ir.interp.tensor import run_module
    from spyre_ir.registry import make_context

    env.setenv("SPYRE_IR_DUMP", str(tmp_path))
    env.setenv("SPYRE_STRICT", "1")

    def fn(x, w):
        return F.gelu(x @ w).sum(-1, keepdim=True) * 2 + 1

    x, w = models.randn(67, 256, seed=1), models.randn(256, 71, seed=2) / 16
    got, want, caught = _run(torch.compile(fn, backend="spyre", dynamic=False), fn, (x, w))
    assert not caught
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)

    files = sorted(tmp_path.glob("*.mlir"))
    assert [f.name.split(".")[1] for f in files] == ["dataflow", "recipe", "tensor", "units"], files
    for dumped, marker in zip(
        files, ["dataflow.kernel", "recipe.plan", "spyre.matmul", "core.program"]
    ):
        result = _spyre_opt(dumped)
        assert result.returncode == 0, result.stderr
        assert marker in result.stdout

    module = parse_file(make_context(), str(files[2]))  # the tensor level
    # the partition's arguments are x and w, told apart by shape
    by_shape = {tuple(x.shape): x.numpy(), tuple(w.shape): w.numpy()}
    fn_op = module.body.block.first_op
    arrays = [by_shape[tuple(t.get_shape())] for t in fn_op.function_type.inputs.data]
    (rerun,) = run_module(module, arrays)
    np.testing.assert_array_equal(rerun, got.numpy())


def test_ir_dump_of_a_partitioned_graph(tmp_path: Path, env) -> None:
    """A CPU fallback in the middle splits the graph: one dump per spyre partition."""
    env.setenv("SPYRE_IR_DUMP", str(tmp_path))
    x = models.randn(63, 129, seed=5) * 0.1
    got, want, caught = _run(torch.compile(_with_cumprod, backend="spyre", dynamic=False),
                             _with_cumprod, (x,))  # fmt: skip
    assert len(caught) == 1 and UNSUPPORTED in caught[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    files = sorted(tmp_path.glob("*.tensor.mlir"))
    assert len(files) == 2, files
    for path in files:
        result = _spyre_opt(path)
        assert result.returncode == 0, f"{path.name}: {result.stderr}"


# -------------------------------------------------------------------------- executors
def test_reference_executor_by_name(env) -> None:
    env.setenv("SPYRE_EXECUTOR", "reference")
    env.setenv("SPYRE_STRICT", "1")
    model, inputs = models.build("mlp", F32)
    got, want, caught = _run(torch.compile(model, backend="spyre", dynamic=False), model, inputs)
    assert not caught
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("how", ["env", "option"])
def test_unknown_executor_is_a_clear_error(how: str, env) -> None:
    options = None
    if how == "env":
        env.setenv("SPYRE_EXECUTOR", "warp-drive")
    else:
        options = {"executor": "warp-drive"}
    compiled = torch.compile(lambda x: x + 1, backend="spyre", dynamic=False, options=options)
    with pytest.raises(BackendCompilerFailed) as info:
        compiled(torch.ones(3))
    inner = info.value.inner_exception
    assert isinstance(inner, SpyreConfigError)
    assert "'warp-drive'" in str(inner) and "reference" in str(inner)
