"""A record of the CPU fallbacks of this process: which op, why, and of what kind.

Every fallback also warns (a fallback is never silent); the record is for code that must
tell the kinds apart, such as the test suite (tests/conftest.py fails a test whose ops
ran on CPU because of a compile error: a compile error is a bug, not an unsupported op).

Kinds: "unsupported" (no lowering, or a check of the lowering refused the node: a
declared limit), "compile-error" (the compiler raised on a graph it had accepted), and
"launch-error" (a compiled program failed at run time, out of memory for instance).
The record keeps the last `LIMIT` fallbacks.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

__all__ = ["KINDS", "LIMIT", "Fallback", "clear", "record", "records"]

KINDS = ("unsupported", "compile-error", "launch-error")
LIMIT = 10_000


@dataclass(frozen=True)
class Fallback:
    op: str  # the ATen op (or the partition, when no single op is to blame)
    reason: str
    kind: str  # one of KINDS
    path: str  # "compiled" (torch.compile) or "eager" (the spyre device)


_records: deque[Fallback] = deque(maxlen=LIMIT)
_lock = threading.Lock()


def record(op: str, reason: str, kind: str, path: str) -> None:
    assert kind in KINDS, kind
    with _lock:
        _records.append(Fallback(str(op), reason, kind, path))


def records() -> list[Fallback]:
    with _lock:
        return list(_records)


def clear() -> None:
    with _lock:
        _records.clear()
