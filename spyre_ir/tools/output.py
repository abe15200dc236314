"""How the tools write what they produce without ever losing data.

* A file output (`spyre-opt -o OUT`, `spyre-run --output/--trace`) is written to a
  temporary file next to it and moved into place with `os.replace` only once the run
  has succeeded: `spyre-opt f.mlir -o f.mlir` reads f.mlir before it is replaced, and a
  failed run leaves an existing OUT as it was.
* A write that fails (a directory, a full disk, a read-only place) is an `OutputError`
  naming the output, which the tools print as `TOOL: error: ...` and exit 1.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from typing import IO


class OutputError(Exception):
    """An output could not be written; the message names it and says why."""


def _why(error: OSError) -> str:
    return error.strerror or str(error)


def check_writable(path: str) -> None:
    """Fail early, before any work, for an output that can never be written."""
    if os.path.isdir(path):
        raise OutputError(f"cannot write '{path}': it is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise OutputError(f"cannot write '{path}': no directory '{parent}'")


def write_atomically(path: str, data: bytes | str) -> None:
    """Replace `path` with `data` in one step: readers see the old file or the new one.

    A symlink is followed (the file it names is replaced, the link stays); a new file
    gets the permissions `open` would give it, an existing one keeps its own."""
    check_writable(path)
    target = os.path.realpath(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    except OSError as error:
        raise OutputError(f"cannot write '{path}': {_why(error)}") from None
    temp = None
    try:
        fd, temp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".spyre-tmp-")
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
        os.chmod(temp, mode)
        os.replace(temp, target)
        temp = None
    except OSError as error:
        raise OutputError(f"cannot write '{path}': {_why(error)}") from None
    finally:
        if temp is not None:
            try:
                os.unlink(temp)
            except OSError:
                pass  # the error that brought us here is the one to report


def write_stream(stream: IO[str], text: str, name: str = "<stdout>") -> None:
    """Write and flush `text`; a failure (a full disk, a closed pipe) is an
    OutputError, and whatever is still buffered is dropped so that the interpreter
    does not fail again on it at exit."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as error:
        discard(stream)
        why = _why(error) if isinstance(error, OSError) else str(error)
        raise OutputError(f"cannot write {name}: {why}") from None


def discard(stream: IO[str]) -> None:
    """Point `stream` at /dev/null, so the interpreter's final flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


class GuardedStream:
    """A text stream whose failed writes are OutputErrors naming it (a full disk under
    stdout ends the run with a message, not a traceback); the rest is the stream's."""

    def __init__(self, stream: IO[str], name: str = "<stdout>") -> None:
        self._stream = stream
        self._name = name

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as error:
            discard(self._stream)
            raise OutputError(f"cannot write {self._name}: {_why(error)}") from None

    def flush(self) -> None:
        write_stream(self._stream, "", self._name)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def flush_stdout() -> None:
    """Flush stdout at the end of a tool's run; an OutputError if that fails."""
    write_stream(sys.stdout, "")
