"""``torch.accelerator`` on the spyre device: what torch's C++ cannot ask a Python backend.

``torch.accelerator.synchronize()`` and the stream calls go to the device guard's C++
interface (``DeviceGuardImplInterface::synchronizeDevice``, ``getStream``), which a Python
backend cannot implement (``torch._C._acc.DeviceGuard`` exposes only ``type_``): synchronize
raised "Backend doesn't support synchronizing all streams on device", and
``current_stream()`` returned a ``torch.Stream`` unrelated to the card's streams.
:func:`install` wraps those functions of ``torch.accelerator`` so that, when the current
accelerator is spyre, they are ``torch.spyre``'s: ``synchronize`` waits for the card,
``current_stream`` returns the card's current ``torch.spyre.Stream``, ``set_stream`` makes a
``torch.spyre.Stream`` current. Other accelerators (and other stream types) go to torch.
(``device_count``, ``current_device_index``, ``is_available`` already work through the hooks.)

The memory calls of ``torch.accelerator`` (``memory_allocated``, ``memory_stats``,
``empty_cache``, ``get_memory_info``, ...) ask the C++ ``DeviceAllocator`` of the device,
which a Python backend does not have: they failed an internal assert. On spyre they are
``torch.spyre.memory``'s; ``empty_host_cache`` (pinned host memory, which spyre does not
keep) does nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["install"]


def _on_spyre(device: Any = None) -> bool:
    if device is not None and not isinstance(device, int):
        return torch.device(device).type == "spyre"
    current = torch.accelerator.current_accelerator()
    return current is not None and current.type == "spyre"


def _synchronize(original: Callable[..., Any], device: Any = None, /) -> None:
    if not _on_spyre(device):
        original(device)
        return
    from spyre_ir.runtime import torch_spyre

    torch_spyre.synchronize(device)


def _current_stream(original: Callable[..., Any], device: Any = None, /) -> Any:
    if not _on_spyre(device):
        return original(device)
    from spyre_ir.runtime import torch_spyre

    return torch_spyre.current_stream(device)


def _set_stream(original: Callable[..., Any], stream: Any) -> None:
    from spyre_ir.runtime import torch_spyre

    if isinstance(stream, torch_spyre.Stream):
        torch_spyre.set_stream(stream)
    else:
        original(stream)


def _memory_stats() -> Any:
    from collections import OrderedDict

    from spyre_ir.runtime import spyre_memory

    return OrderedDict(spyre_memory.memory_stats())


def _memory_info() -> tuple[int, int]:
    from spyre_ir.runtime import torch_spyre

    return torch_spyre.mem_get_info()


def _spyre_memory(name: str) -> Callable[[], Any]:
    def call() -> Any:
        from spyre_ir.runtime import spyre_memory

        return getattr(spyre_memory, name)()

    return call


_MEMORY_CALLS: dict[str, Callable[[], Any]] = {
    "memory_stats": _memory_stats,
    "get_memory_info": _memory_info,
    "empty_host_cache": lambda: None,
    **{name: _spyre_memory(name) for name in (
        "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
        "reset_peak_memory_stats", "reset_accumulated_memory_stats", "empty_cache")},
}  # fmt: skip
"""torch.accelerator's memory functions -> what answers them on spyre."""


def _memory_call(spyre_call: Callable[[], Any], original: Callable[..., Any], *args: Any) -> Any:
    device = args[0] if args else None
    if not _on_spyre(device):
        return original(*args)
    return spyre_call()


def _wrap(owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
    original = getattr(owner, name, None)
    if original is None or getattr(original, "spyre_aware", False):
        return
    wrapped = functools.wraps(original)(functools.partial(wrapper, original))
    wrapped.spyre_aware = True  # type: ignore[attr-defined]
    setattr(owner, name, wrapped)


def install() -> None:
    """Wrap torch.accelerator's synchronize / current_stream / set_stream and its memory
    calls, in ``torch.accelerator`` and ``torch.accelerator.memory`` (idempotent)."""
    accelerator = torch.accelerator
    for name, wrapper in (("synchronize", _synchronize), ("current_stream", _current_stream),
                          ("set_stream", _set_stream)):  # fmt: skip
        _wrap(accelerator, name, wrapper)
    memory = getattr(accelerator, "memory", None)
    for name, spyre_call in _MEMORY_CALLS.items():
        wrapper = functools.partial(_memory_call, spyre_call)
        for owner in (accelerator, memory):
            if owner is not None:
                _wrap(owner, name, wrapper)
