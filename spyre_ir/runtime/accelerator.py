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


def install() -> None:
    """Wrap torch.accelerator's synchronize / current_stream / set_stream (idempotent)."""
    accelerator = torch.accelerator
    for name, wrapper in (("synchronize", _synchronize), ("current_stream", _current_stream),
                          ("set_stream", _set_stream)):  # fmt: skip
        original = getattr(accelerator, name, None)
        if original is None or getattr(original, "spyre_aware", False):
            continue
        wrapped = functools.wraps(original)(functools.partial(wrapper, original))
        wrapped.spyre_aware = True  # type: ignore[attr-defined]
        setattr(accelerator, name, wrapped)
