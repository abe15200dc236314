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
