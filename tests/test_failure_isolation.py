"""Failure isolation: a partition that fails to compile leaves only the failing op on CPU.

One lowering is forced to raise (monkeypatched), so the partition holding that op fails to
compile; the backend must find the op, run it alone on CPU, keep the ops before and after
it on the card (seen in telemetry: two compiled pieces, two launches per call), warn with
the op, the partition and the reason for every compiled graph, and raise with SPYRE_STRICT.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

from spyre_ir.lowering import aten_lowerings
from spyre_ir.runtime import telemetry
from spyre_ir.runtime.backend import reset_warnings
from spyre_ir.runtime.isolation import first_failing_node, prefix_graph

aten = torch.ops.aten
FORCED = "forced failure of the sin lowering"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """The card executor, its own cache, no strict mode, and a sin lowering that raises."""
    for var in ("SPYRE_IR_DUMP", "SPYRE_EXECUTOR", "SPYRE_EXACT_F32", "SPYRE_STRICT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPYRE_CACHE_DIR", str(tmp_path / "cache"))

    def broken(imp, node):
        raise RuntimeError(FORCED)

    monkeypatch.setitem(aten_lowerings.LOWERINGS, aten.sin.default, broken)
    torch._dynamo.reset()
    reset_warnings()
    yield monkeypatch
    torch._dynamo.reset()
    reset_warnings()


def _model(x: torch.Tensor) -> torch.Tensor:
    return ((x.exp() * 0.5).sin() + x).neg() * 2


def _other_model(x: torch.Tensor) -> torch.Tensor:
    return (x * 3 - 1).sin().exp() + 1


def _run(fn, x: torch.Tensor, calls: int = 1):
    compiled = torch.compile(fn, backend="spyre", dynamic=False)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught, \
            telemetry.recording() as rec:  # fmt: skip
        warnings.simplefilter("always")
        for _ in range(calls):
            got = compiled(x)
    return got, [str(w.message) for w in caught], rec


def test_the_failing_op_alone_runs_on_cpu(env) -> None:
    x = torch.randn(64, 128, dtype=torch.float16) * 0.1
    got, caught, rec = _run(_model, x, calls=2)
    torch.testing.assert_close(got, _model(x), rtol=1e-2, atol=1e-2)
    # one warning, naming the op, the partition and the reason
    assert len(caught) == 1, caught
    (message,) = caught
    assert "aten.sin.default" in message and FORCED in message
    assert re.search(r"in graph\d+_0 failed to compile", message), message
    # the ops before and after sin: two pieces compiled, each launched on every call
    assert len(rec.compiles) == 2, [c.graph for c in rec.compiles]
    assert all(re.fullmatch(r"graph\d+_0_\d", c.graph) for c in rec.compiles)
    assert len(rec.launches) == 2 * 2
    assert {launch.graph for launch in rec.launches} == {c.graph for c in rec.compiles}


def test_the_failure_is_recorded_as_a_compile_error(env) -> None:
    """runtime/fallbacks.py tells a compile error from an unsupported op (tests/conftest.py
    fails a test whose compile error a fallback hid; this file is on its expected list)."""
    from spyre_ir.runtime import fallbacks

    fallbacks.clear()
    x = torch.randn(64, 128, dtype=torch.float16) * 0.1
    _run(_model, x)
    _run(lambda t: torch.cumprod(t, 0), x)  # no lowering: unsupported
    kinds = {(r.op, r.kind, r.path) for r in fallbacks.records()}
    assert kinds == {("aten.sin.default", "compile-error", "compiled"),
                     ("aten.cumprod.default", "unsupported", "compiled")}, kinds  # fmt: skip
    (sin,) = [r for r in fallbacks.records() if r.kind == "compile-error"]
    assert FORCED in sin.reason


def test_the_suite_fails_a_test_whose_compile_error_a_fallback_hid(tmp_path: Path) -> None:
    """The conftest hook, run on a test file of its own that hits a compile error."""
    import shutil
    import subprocess
    import sys

    shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_hidden.py").write_text(
        "import torch\n"
        "from spyre_ir.lowering import aten_lowerings\n"
        "def test_hidden(monkeypatch):\n"
        "    def broken(imp, node):\n"
        "        raise RuntimeError('boom')\n"
        "    monkeypatch.setitem(aten_lowerings.LOWERINGS, torch.ops.aten.sin.default, broken)\n"
        "    monkeypatch.delenv('SPYRE_STRICT', raising=False)\n"
        "    f = torch.compile(lambda x: x.exp().sin() * 2, backend='spyre', dynamic=False)\n"
        "    f(torch.randn(8, 64, dtype=torch.float16))\n"
    )
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-W", "ignore", str(tmp_path)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:]
    assert "a compile error was hidden by a CPU fallback: aten.sin.default" in done.stdout


def test_warned_again_for_every_compiled_model(env) -> None:
    x = torch.randn(64, 128, dtype=torch.float16) * 0.1
    _, first, _ = _run(_model, x)
    torch._dynamo.reset()
    got, second, rec = _run(_other_model, x)
    torch.testing.assert_close(got, _other_model(x), rtol=1e-2, atol=1e-2)
    assert len(first) == len(second) == 1, (first, second)
    assert "aten.sin.default" in second[0] and FORCED in second[0]
    graphs = [re.search(r"in (graph\d+_0)", m).group(1) for m in (first[0], second[0])]
    assert graphs[0] != graphs[1]
    assert len(rec.compiles) == 2 and len(rec.launches) == 2  # (x*3-1) and (exp+1)


def test_strict_mode_raises_on_the_failure(env) -> None:
    env.setenv("SPYRE_STRICT", "1")
    compiled = torch.compile(_model, backend="spyre", dynamic=False)
    with torch.no_grad(), pytest.raises(BackendCompilerFailed) as info:
        compiled(torch.randn(64, 128, dtype=torch.float16))
    assert FORCED in str(info.value.inner_exception)


def test_bisection_finds_an_op_that_fails_only_after_its_predecessors() -> None:
    """The search compiles prefixes: the culprit is the last op of the smallest failing one."""
    gm = torch.fx.symbolic_trace(lambda x: torch.abs((x + 1) * 2 - 3) / 5)
    nodes = [n for n in gm.graph.nodes if n.op == "call_function"]
    tried: list[int] = []

    def fails(candidate: torch.fx.GraphModule):
        count = sum(n.op == "call_function" for n in candidate.graph.nodes)
        tried.append(count)
        return RuntimeError("too long") if count >= 4 else None

    culprit, error = first_failing_node(gm, fails)
    assert culprit is nodes[3] and str(error) == "too long"
    assert len(tried) <= 3  # log2 of 5 ops
    prefix = prefix_graph(gm, 2)
    x = torch.randn(3)
    torch.testing.assert_close(prefix(x)[0], (x + 1) * 2)
