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


def pytest_collection_modifyitems(items):
    # The f32 placement warnings of the card executor (spyre_ir/runtime/f32_policy.py)
    # inform, every compile; tests/test_f32_policy.py asserts them. A mark, because
    # marks are applied after -W error (a -W filter cannot hold a colon in its message).
    for item in items:
        item.add_marker(pytest.mark.filterwarnings("ignore:spyre. float32 ops:UserWarning"))
