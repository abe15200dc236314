"""``torch.spyre.memory``: the card's memory counters, shaped like ``torch.cuda.memory``.

Device memory is the runtime allocator's (``runtime/allocator.py``). ``empty_cache()``
gives its cached free blocks back and also releases the host memory the runtime keeps for
speed (compiled eager signatures, replay recordings: see :func:`host_cache_bytes`), as the caches of
compiled programs would otherwise only grow.

Importing this module must stay cheap: ``import torch`` imports ``torch.spyre``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "empty_cache",
    "host_cache_bytes",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "register_host_cache",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
]

# name -> (bytes held now, release everything). The runtime's own caches are named by
# module and function, and asked only once their module is imported (a module not yet
# imported holds nothing, and importing it here would slow `import torch` down).
_host_caches: dict[str, tuple[Callable[[], int], Callable[[], None]]] = {}
_RUNTIME_CACHES = {
    "eager kernels": ("spyre_ir.runtime.eager", "cache_bytes", "release_cache"),
    "replay recordings and kept tiles": ("spyre_ir.sim.replay", "held_bytes", "clear"),
}


def _caches() -> dict[str, tuple[Callable[[], int], Callable[[], None]]]:
    found = dict(_host_caches)
    for name, (module_name, held, release) in _RUNTIME_CACHES.items():
        module = sys.modules.get(module_name)
        if module is not None:
            found[name] = (getattr(module, held), getattr(module, release))
    return found


def _card() -> Any:
    from spyre_ir.runtime.card import get_card

    return get_card()


def memory_allocated(device: Any = None) -> int:
    """Bytes of device memory held by live tensors (allocator blocks, 128-B rounded)."""
    return _card().memory_stats().allocated_bytes


def max_memory_allocated(device: Any = None) -> int:
    return _card().memory_stats().peak_allocated_bytes


def memory_reserved(device: Any = None) -> int:
    """Bytes the caching allocator holds (live blocks plus cached free blocks)."""
    return _card().memory_stats().reserved_bytes


def max_memory_reserved(device: Any = None) -> int:
    return _card().memory_stats().peak_reserved_bytes


def reset_peak_memory_stats(device: Any = None) -> None:
    _card().allocator.reset_peak_stats()


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Zero the event counters (allocations, frees, OOMs, cache flushes)."""
    _card().allocator.reset_event_counts()


def memory_stats(device: Any = None) -> dict[str, Any]:
    """The allocator's counters: its own names (AllocatorStats fields) and the keys of
    ``torch.cuda.memory_stats`` that have a meaning here (``allocated_bytes.all.current``,
    ``reserved_bytes.all.peak``, ``num_ooms``, ...), plus ``host_cache_bytes``."""
    from dataclasses import asdict

    stats = _card().memory_stats()
    torch_style = {
        "allocated_bytes.all.current": stats.allocated_bytes,
        "allocated_bytes.all.peak": stats.peak_allocated_bytes,
        "reserved_bytes.all.current": stats.reserved_bytes,
        "reserved_bytes.all.peak": stats.peak_reserved_bytes,
        "requested_bytes.all.current": stats.requested_bytes,
        "active.all.current": stats.active_blocks,
        "segment.all.current": stats.regions,
        "allocation.all.allocated": stats.num_allocs,
        "allocation.all.freed": stats.num_frees,
        "num_alloc_retries": stats.num_cache_flushes,
        "num_ooms": stats.num_ooms,
    }
    return {**asdict(stats), **torch_style, "host_cache_bytes": host_cache_bytes()}


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A readable table of the counters, like ``torch.cuda.memory_summary``."""
    stats = _card().memory_stats()
    rows = [
        ("Allocated memory", stats.allocated_bytes, stats.peak_allocated_bytes),
        ("Requested memory", stats.requested_bytes, None),
        ("Reserved memory", stats.reserved_bytes, stats.peak_reserved_bytes),
        ("Largest cached free block", stats.largest_free_block, None),
    ]
    lines = ["|" + "=" * 62 + "|",
             "|" + " spyre memory summary, device 0 (simulated card)".ljust(62) + "|",
             "|" + "-" * 62 + "|",
             f"| {'Metric':<30}| {'Current':>13} | {'Peak':>13} |"]  # fmt: skip
    for name, current, peak in rows:
        lines.append(f"| {name:<30}| {_size(current):>13} | {_size(peak):>13} |")
    lines.append(f"| {'Active blocks':<30}| {stats.active_blocks:>13} | {'':>13} |")
    lines.append(f"| {'Cached free blocks':<30}| {stats.cached_blocks:>13} | {'':>13} |")
    lines.append(f"| {'Regions':<30}| {stats.regions:>13} | {'':>13} |")
    lines.append(f"| {'Allocations / frees':<30}| {stats.num_allocs:>13} | {stats.num_frees:>13} |")
    lines.append(f"| {'Out-of-memory errors':<30}| {stats.num_ooms:>13} | {'':>13} |")
    if not abbreviated:
        for name, (held, _release) in sorted(_caches().items()):
            lines.append(f"| {'Host cache: ' + name:<30}| {_size(held()):>13} | {'':>13} |")
    lines.append("|" + "=" * 62 + "|")
    return "\n".join(lines) + "\n"


def _size(nbytes: int | None) -> str:
    if nbytes is None:
        return ""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.2f} {unit}"
    return f"{nbytes} B"


def register_host_cache(name: str, held_bytes: Callable[[], int],
                        release: Callable[[], None]) -> None:  # fmt: skip
    """A host-memory cache of the runtime that :func:`empty_cache` releases."""
    _host_caches[name] = (held_bytes, release)


def host_cache_bytes() -> int:
    """Host bytes held by the registered caches (an estimate each cache makes)."""
    return sum(held() for held, _release in _caches().values())


def empty_cache() -> None:
    """Give cached free device memory back (unmaps wholly free regions) and release the
    runtime's host caches of compiled programs."""
    for _held, release in list(_caches().values()):
        release()
    _card().empty_cache()
