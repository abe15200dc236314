"""Session-wide test settings."""

from pathlib import Path

import pytest

# Tests whose ops may run on CPU because a compile failed, and why that is expected (a
# compile error elsewhere fails its test: it is a bug, not a fallback). A prefix of a
# test id (file::name) per entry; the `compile_fallback_expected` mark does the same
# for one test.
EXPECTED_COMPILE_FALLBACKS: dict[str, str] = {
    "tests/test_failure_isolation.py::": "injects compile failures to test the isolation",
}

# Files whose tests report the ops they ran on CPU (pytest's terminal summary).
_REPORTED = ("test_device_", "test_frontend_")
_cpu_ops: dict[str, set[str]] = {}


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "compile_fallback_expected(reason): this test expects a compile error's CPU fallback",
    )


@pytest.fixture(autouse=True)
def _compile_errors_are_not_fallbacks(request):
    """Fail the test when an op of it ran on CPU because compiling it failed, rather
    than because it has no lowering (see spyre_ir/runtime/fallbacks.py)."""
    from spyre_ir.runtime import fallbacks

    fallbacks.clear()
    yield
    seen = fallbacks.records()
    nodeid = request.node.nodeid
    if Path(nodeid.split("::")[0]).name.startswith(_REPORTED) and seen:
        _cpu_ops[nodeid] = {f"{r.op} ({r.kind}, {r.path})" for r in seen}
    errors = [r for r in seen if r.kind == "compile-error"]
    expected = request.node.get_closest_marker("compile_fallback_expected") or any(
        nodeid.startswith(prefix) for prefix in EXPECTED_COMPILE_FALLBACKS
    )
    if errors and not expected:
        listed = "; ".join(f"{r.op} ({r.path}): {r.reason[:300]}" for r in errors[:5])
        pytest.fail(f"a compile error was hidden by a CPU fallback: {listed}", pytrace=False)


def pytest_sessionfinish(session):
    # Under pytest-xdist (`make test` runs two workers) each worker hands its records to
    # the controller, which prints the summary.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["spyre_cpu_ops"] = {k: sorted(v) for k, v in _cpu_ops.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for nodeid, ops in getattr(node, "workeroutput", {}).get("spyre_cpu_ops", {}).items():
        _cpu_ops[nodeid] = set(ops)


def pytest_terminal_summary(terminalreporter):
    if not _cpu_ops:
        return
    terminalreporter.section("spyre: ops that ran on CPU (device and frontend tests)")
    for nodeid, ops in sorted(_cpu_ops.items()):
        terminalreporter.write_line(f"{nodeid}: {', '.join(sorted(ops))}")


@pytest.fixture(autouse=True, scope="session")
def _private_artifact_cache(tmp_path_factory):
    # Compiled artifacts of the tests go to a fresh directory, never the user's cache:
    # a stale entry from an earlier checkout must not decide a test's outcome.
    mp = pytest.MonkeyPatch()
    mp.setenv("SPYRE_CACHE_DIR", str(tmp_path_factory.mktemp("spyre-cache")))
    yield
    mp.undo()


@pytest.fixture
def card(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """The card executor, strict (a CPU fallback raises), a fresh dynamo, warnings and
    artifact cache; yields the monkeypatch for further settings."""
    import torch

    from spyre_ir.runtime.backend import reset_warnings

    for var in ("SPYRE_IR_DUMP", "SPYRE_EXECUTOR", "SPYRE_EXACT_F32"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    monkeypatch.setenv("SPYRE_CACHE_DIR", str(tmp_path / "cache"))
    torch._dynamo.reset()
    reset_warnings()
    yield monkeypatch
    torch._dynamo.reset()


def pytest_collection_modifyitems(items):
    # The f32 placement warnings of the card executor (spyre_ir/runtime/f32_policy.py)
    # inform, every compile; tests/test_f32_policy.py asserts them. A mark, because
    # marks are applied after -W error (a -W filter cannot hold a colon in its message).
    for item in items:
        item.add_marker(pytest.mark.filterwarnings("ignore:spyre. float32 ops:UserWarning"))
