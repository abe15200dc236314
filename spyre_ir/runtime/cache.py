"""An on-disk cache of compiled artifacts (text), keyed by any string.

Directory: $SPYRE_CACHE_DIR, else $XDG_CACHE_HOME/spyre-ir, else ~/.cache/spyre-ir.
Each entry is one file named by the sha256 of its key. Its first line is a header,

    spyre-ir-artifact <FORMAT_VERSION> <sha256 of the key> <sha256 of the content> <mac>

and the content follows. `mac` is the HMAC-SHA256, under the cache's own secret (the
file `.secret` in the directory, made once, readable by its owner only), of the key's
and the content's hashes: it authenticates the content against what it was built from
(the key holds the graph, the card and the compiler's fingerprint). An entry edited by
hand, even with every hash recomputed, fails it. An entry whose header, key, content
hash or mac does not check out (a torn write, a flipped byte, a file from another
program or another format version), or that is not a regular file (a FIFO, a symlink
to /dev/zero: never read), is reported once with a warning naming its path, deleted,
and treated as a miss; so is one its user finds it cannot load (`discard`). Writes go
to a temporary file in the same directory and are moved into place with os.replace,
so a reader sees the old entry or the new one, never half of one.

When the directory cannot be created or written, the cache warns once and carries on
without storing anything: a compile still works, it is only not remembered.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tempfile
import warnings
from pathlib import Path

from spyre_ir.diagnostics import NotRegularFile, open_regular

FORMAT_VERSION = 2
MAGIC = "spyre-ir-artifact"
SECRET_FILE = ".secret"


class ArtifactCacheWarning(UserWarning):
    """The artifact cache dropped a bad entry or cannot write its directory."""


def default_cache_dir() -> Path:
    """$SPYRE_CACHE_DIR, else the user cache directory's spyre-ir folder."""
    explicit = os.environ.get("SPYRE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spyre-ir"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Bad entries already reported in this process, so each is reported once.
_reported: set[Path] = set()


class ArtifactCache:
    """key -> text, on disk. Counters: `hits`, `misses` (corrupt entries count as
    misses too), `corrupt`, `writes`."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.hits = 0
        self.misses = 0
        self.corrupt = 0
        self.writes = 0
        self.writable = True

    def path_for(self, key: str) -> Path:
        """The file that holds `key`'s entry."""
        return self.directory / f"{_sha256(key)}.artifact"

    def get(self, key: str) -> str | None:
        """The text stored for `key`, or None (a miss)."""
        path = self.path_for(key)
        try:
            with open_regular(path) as f:
                raw = f.read()
        except (FileNotFoundError, NotADirectoryError):  # no entry, or no directory
            self.misses += 1
            return None
        except NotRegularFile as error:
            return self._drop(path, str(error))
        except OSError as error:
            return self._drop(path, f"unreadable ({error.strerror or error})")
        secret = self._secret(create=False)
        if secret is None:
            return self._drop(path, "the cache's secret is missing: it cannot be authenticated")
        problem, text = _check(raw, _sha256(key), secret)
        if problem:
            return self._drop(path, problem)
        self.hits += 1
        return text

    def discard(self, key: str, problem: str) -> None:
        """Delete `key`'s entry, which its user could not load (reported once)."""
        self.hits -= 1
        self._drop(self.path_for(key), problem)

    def put(self, key: str, text: str) -> None:
        """Store `text` for `key`, replacing any entry atomically."""
        if not self.writable:
            return
        temp = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            secret = self._secret(create=True)
            assert secret is not None
            key_hash, text_hash = _sha256(key), _sha256(text)
            header = (
                f"{MAGIC} {FORMAT_VERSION} {key_hash} {text_hash} "
                f"{_mac(secret, key_hash, text_hash)}\n"
            )
            fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".artifact")
            with os.fdopen(fd, "wb") as out:
                out.write((header + text).encode("utf-8"))
            os.replace(temp, self.path_for(key))
            temp = None
            self.writes += 1
        except OSError as error:
            self.writable = False
            warnings.warn(
                f"artifact cache directory {self.directory} is not writable "
                f"({error.strerror or error}); compiled artifacts will not be cached "
                f"(set SPYRE_CACHE_DIR to a writable directory)",
                ArtifactCacheWarning,
                stacklevel=2,
            )
        finally:
            if temp is not None:
                Path(temp).unlink(missing_ok=True)

    def _secret(self, create: bool) -> bytes | None:
        """The cache's MAC key: read from `.secret`, or made there (mode 0600, by an
        exclusive create, so two processes agree on it) when `create`."""
        path = self.directory / SECRET_FILE
        for _ in range(2):
            try:
                with open_regular(path) as f:
                    secret = f.read()
                if len(secret) >= 32:
                    return secret
                if not create:
                    return None
                path.unlink()  # a stub (a torn first write): make it again
            except FileNotFoundError:
                if not create:
                    return None
            except NotRegularFile:
                if not create:
                    return None
                path.unlink()
            fresh = secrets.token_bytes(32)
            temp = self.directory / f".tmp-secret-{os.getpid()}-{secrets.token_hex(4)}"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(fresh)
            try:
                os.link(temp, path)  # fails if another process made it first: read theirs
            except FileExistsError:
                pass
            finally:
                temp.unlink()
        raise OSError(f"cannot make the cache's secret {path}")

    def _drop(self, path: Path, problem: str) -> None:
        self.corrupt += 1
        self.misses += 1
        if path not in _reported:
            _reported.add(path)
            warnings.warn(
                f"{path}: discarding artifact cache entry: {problem}",
                ArtifactCacheWarning,
                stacklevel=3,
            )
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass  # an entry we cannot delete stays a miss; it was reported above
        return


def _mac(secret: bytes, key_hash: str, text_hash: str) -> str:
    return hmac.new(secret, f"{key_hash} {text_hash}".encode(), hashlib.sha256).hexdigest()


def _check(raw: bytes, key_hash: str, secret: bytes) -> tuple[str, str]:
    """(problem, text): problem is "" when `raw` is a sound entry for `key_hash`."""
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text", ""
    header, newline, text = decoded.partition("\n")
    parts = header.split(" ")
    if not newline or len(parts) < 2 or parts[0] != MAGIC:
        return "no spyre-ir artifact header", ""
    if parts[1] != str(FORMAT_VERSION):
        return f"format version {parts[1]!r}, expected {FORMAT_VERSION}", ""
    if len(parts) != 5:
        return "no spyre-ir artifact header", ""
    if parts[2] != key_hash:
        return "stored under another key", ""
    text_hash = _sha256(text)
    if parts[3] != text_hash:
        return "content hash mismatch", ""
    if not hmac.compare_digest(parts[4], _mac(secret, key_hash, text_hash)):
        return "not authentic: it was not written by this cache for this key", ""
    return "", text
