"""Session-wide test settings."""

import pytest


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
