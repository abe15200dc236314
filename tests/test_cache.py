"""The on-disk artifact cache: hits and misses, every kind of bad entry detected,
reported once, deleted and missed, atomic writes, and an unwritable directory that
warns once and carries on without caching."""

from __future__ import annotations

import hashlib
import hmac
import os
import warnings
from pathlib import Path

import pytest

from spyre_ir.runtime import cache as cache_module
from spyre_ir.runtime.cache import ArtifactCache, ArtifactCacheWarning, default_cache_dir

TEXT = 'module {\n  "recipe.launch"() : () -> ()\n}\n'


@pytest.fixture
def cache(tmp_path: Path) -> ArtifactCache:
    return ArtifactCache(tmp_path / "cache")


def test_miss_put_hit(cache: ArtifactCache, tmp_path: Path) -> None:
    assert cache.get("graph-a") is None
    cache.put("graph-a", TEXT)
    assert cache.get("graph-a") == TEXT
    assert (cache.hits, cache.misses, cache.corrupt, cache.writes) == (1, 1, 0, 1)
    # Another process (a new cache object) sees the entry; another key does not.
    again = ArtifactCache(tmp_path / "cache")
    assert again.get("graph-a") == TEXT and again.get("graph-b") is None
    cache.put("graph-a", "replaced")
    assert cache.get("graph-a") == "replaced"
    entries = sorted(p.name for p in cache.directory.iterdir())
    assert entries == [".secret", cache.path_for("graph-a").name]


def test_entry_layout(cache: ArtifactCache) -> None:
    cache.put("k", TEXT)
    raw = cache.path_for("k").read_text()
    sha = hashlib.sha256
    key_hash, text_hash = sha(b"k").hexdigest(), sha(TEXT.encode()).hexdigest()
    secret = (cache.directory / ".secret").read_bytes()
    mac = hmac.new(secret, f"{key_hash} {text_hash}".encode(), hashlib.sha256).hexdigest()
    assert raw == f"spyre-ir-artifact 2 {key_hash} {text_hash} {mac}\n" + TEXT
    assert len(secret) == 32 and (cache.directory / ".secret").stat().st_mode & 0o077 == 0


def _forge(path: Path, key: str, text: str) -> None:
    """Rewrite an entry with other content and every hash recomputed, but no secret."""
    sha = hashlib.sha256
    header = path.read_text().split("\n", 1)[0].split(" ")
    header[2:4] = [sha(key.encode()).hexdigest(), sha(text.encode()).hexdigest()]
    path.write_text(" ".join(header) + "\n" + text)


def test_a_forged_entry_with_recomputed_hashes_is_not_authentic(cache: ArtifactCache) -> None:
    cache.put("key", TEXT)
    path = cache.path_for("key")
    _forge(path, "key", TEXT.replace("launch", "lunch"))
    with pytest.warns(ArtifactCacheWarning, match="not authentic"):
        assert cache.get("key") is None
    assert not path.exists() and cache.corrupt == 1


def test_another_cache_directory_does_not_authenticate_an_entry(tmp_path: Path) -> None:
    first, second = ArtifactCache(tmp_path / "a"), ArtifactCache(tmp_path / "b")
    first.put("key", TEXT)
    second.put("other", TEXT)  # makes b's own secret
    os.replace(first.path_for("key"), second.path_for("key"))
    with pytest.warns(ArtifactCacheWarning, match="not authentic"):
        assert second.get("key") is None


def test_an_entry_without_the_secret_is_dropped(cache: ArtifactCache) -> None:
    cache.put("key", TEXT)
    (cache.directory / ".secret").unlink()
    with pytest.warns(ArtifactCacheWarning, match="secret is missing"):
        assert cache.get("key") is None
    cache.put("key", TEXT)  # a new secret: usable again
    assert cache.get("key") == TEXT


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_only_regular_files_are_read(cache: ArtifactCache) -> None:
    cache.put("key", TEXT)
    path = cache.path_for("key")
    path.unlink()
    path.symlink_to("/dev/zero")  # read as a file, it never ends
    with pytest.warns(ArtifactCacheWarning, match="not a regular file"):
        assert cache.get("key") is None
    assert not path.is_symlink()
    if hasattr(os, "mkfifo"):
        fifo = cache.path_for("fifo")
        os.mkfifo(fifo)  # read as a file, it blocks until a writer comes
        with pytest.warns(ArtifactCacheWarning, match="not a regular file"):
            assert cache.get("fifo") is None
        assert not fifo.exists()


def test_discard_deletes_an_entry_its_user_cannot_load(cache: ArtifactCache) -> None:
    cache.put("key", TEXT)
    assert cache.get("key") == TEXT
    with pytest.warns(ArtifactCacheWarning, match="discarding .*: it does not parse"):
        cache.discard("key", "it does not parse")
    assert not cache.path_for("key").exists()
    assert (cache.hits, cache.misses, cache.corrupt) == (0, 1, 1)


def _flip_byte(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("flip", "content hash mismatch"),
        ("truncate", "content hash mismatch"),
        ("foreign", "no spyre-ir artifact header"),
        ("version", "format version '0', expected 2"),
        ("swap", "stored under another key"),
        ("binary", "not UTF-8 text"),
        ("directory", "a directory .a FIFO, device or directory is never read."),
    ],
)
def test_bad_entries_are_reported_deleted_and_missed(
    cache: ArtifactCache, how: str, problem: str
) -> None:
    cache.put("key", TEXT)
    path = cache.path_for("key")
    if how == "flip":
        _flip_byte(path, len(path.read_bytes()) - 3)
    elif how == "truncate":
        path.write_bytes(path.read_bytes()[:-10])
    elif how == "foreign":
        path.write_text("some other program's file\n")
    elif how == "version":
        path.write_text(path.read_text().replace("spyre-ir-artifact 2 ", "spyre-ir-artifact 0 ", 1))
    elif how == "swap":
        cache.put("another key", TEXT)
        os.replace(cache.path_for("another key"), path)
    elif how == "binary":
        path.write_bytes(b"\xff\xfe" + path.read_bytes())
    else:
        path.unlink()
        path.mkdir()  # reading a directory fails
    with pytest.warns(ArtifactCacheWarning, match=f"{path}: discarding .*{problem}"):
        assert cache.get("key") is None
    assert (cache.hits, cache.misses, cache.corrupt) == (0, 1, 1)
    if how != "directory":
        assert not path.exists()
        cache.put("key", TEXT)  # the slot is usable again
        assert cache.get("key") == TEXT


def test_a_bad_entry_is_reported_once(cache: ArtifactCache) -> None:
    cache.put("key", TEXT)
    path = cache.path_for("key")
    _flip_byte(path, len(path.read_bytes()) - 1)
    with pytest.warns(ArtifactCacheWarning):
        assert cache.get("key") is None
    cache.put("key", TEXT)
    _flip_byte(path, len(path.read_bytes()) - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.get("key") is None  # still detected and deleted, not reported again
    assert cache.corrupt == 2 and not path.exists()


def test_unwritable_directory_warns_once_and_carries_on(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    cache = ArtifactCache(blocker / "cache")
    message = f"{blocker / 'cache'} is not writable.*SPYRE_CACHE_DIR"
    with pytest.warns(ArtifactCacheWarning, match=message):
        cache.put("key", TEXT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.put("key", TEXT)  # no second warning
        assert cache.get("key") is None
    assert (cache.writable, cache.writes, cache.misses) == (False, 0, 1)


def test_a_failed_write_leaves_no_temporary_file(
    cache: ArtifactCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.put("key", TEXT)

    def refuse(src: str, dst: str) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache_module.os, "replace", refuse)
    with pytest.warns(ArtifactCacheWarning, match="Permission denied"):
        cache.put("key", "new text")
    monkeypatch.undo()
    entries = sorted(p.name for p in cache.directory.iterdir())
    assert entries == [".secret", cache.path_for("key").name]
    assert cache.get("key") == TEXT  # the old entry is intact


def test_default_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SPYRE_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"
    assert ArtifactCache().directory == tmp_path / "explicit"
    monkeypatch.delenv("SPYRE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "spyre-ir"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "spyre-ir"
