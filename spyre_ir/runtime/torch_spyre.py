"""``torch.spyre``: the device module of the ``spyre`` device, shaped like ``torch.cuda``.

Registered by :func:`spyre_ir.runtime.device.setup` with ``torch._register_device_module``,
so torch's own code finds it too (``torch.manual_seed`` calls :func:`manual_seed_all`, the
AMP and RNG helpers ask :func:`is_available` / :func:`device_count`). Everything is backed
by the process-wide simulated card (``spyre_ir.runtime.card.get_card()``): its allocator for
the memory counters, its streams and events (simulated time) for synchronisation.

Random numbers for spyre tensors are made on the host by :func:`generator` (a CPU
``torch.Generator``) and uploaded; ``torch.manual_seed(s)`` seeds it like the CPU
generator, so ``torch.randn(n, device="spyre")`` after a seed equals the CPU draw.

Importing this module must stay cheap: torch imports it during ``import torch``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from spyre_ir.runtime.streams import Event, Stream

__all__ = [
    "Event",
    "Stream",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "generator",
    "get_device_name",
    "get_rng_state",
    "initial_seed",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "mem_get_info",
    "memory",
    "memory_stats",
    "memory_summary",
    "reset_peak_memory_stats",
    "set_stream",
    "set_rng_state",
    "stream",
    "synchronize",
]

_generator: torch.Generator | None = None


def _card() -> Any:
    from spyre_ir.runtime.card import get_card

    return get_card()


# ------------------------------------------------------------------------------ device
def is_available() -> bool:
    """Always True: the card is simulated."""
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> int:
    return 0


def set_device(device: Any) -> None:
    """Only device 0 exists."""
    index = torch.device(device).index if not isinstance(device, int) else device
    if index not in (None, 0):
        raise ValueError(f"spyre: device index {index} does not exist (device_count() == 1)")


class device:  # noqa: N801 - named like torch.cuda.device
    """Context manager selecting a device, like ``torch.cuda.device``; one card, so it
    only checks the index."""

    def __init__(self, device: Any) -> None:
        set_device(0 if device is None else device)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def get_device_name(device: Any = None) -> str:
    return "Spyre (simulated)"


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of device memory the allocator can hand out."""
    card = _card()
    total = card.allocator.capacity
    return total - card.memory_stats().allocated_bytes, total


def synchronize(device: Any = None) -> None:
    """Wait for all work on the card (runs the pending simulated work)."""
    _card().synchronize()


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


def _is_in_bad_fork() -> bool:
    return False


# ------------------------------------------------------------------------------ memory
# torch.spyre.memory is the module; its functions are also torch.spyre's, as in torch.cuda
from spyre_ir.runtime import spyre_memory as memory  # noqa: E402
from spyre_ir.runtime.spyre_memory import (  # noqa: E402
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_peak_memory_stats,
)


# ----------------------------------------------------------------------------- streams
def current_stream(device: Any = None) -> Stream:
    return _card().current_stream()


def default_stream(device: Any = None) -> Stream:
    return _card().default_stream


def set_stream(s: Stream) -> None:
    """Make `s` the current stream (like ``torch.cuda.set_stream``)."""
    _card().set_current_stream(s)


@contextmanager
def stream(s: Stream | None) -> Iterator[Stream]:
    """Make `s` the current stream inside the block (like ``torch.cuda.stream``)."""
    with _card().stream(s) as current:
        yield current


# ------------------------------------------------------------------------------ random
def generator() -> torch.Generator:
    """The host generator that makes the device's random numbers."""
    global _generator
    if _generator is None:
        _generator = torch.Generator()
        _generator.manual_seed(torch.initial_seed())
    return _generator


def manual_seed(seed: int) -> None:
    generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)


def initial_seed() -> int:
    return generator().initial_seed()


def get_rng_state(device: Any = None) -> torch.Tensor:
    return generator().get_state()


def set_rng_state(state: torch.Tensor, device: Any = None) -> None:
    generator().set_state(state)
