"""The process-wide simulated card: LPDDR5, its allocator, streams and device arrays.

`get_card()` makes the card on first use (memory mode from SPYRE_MEMORY_MODE, "vf" by
default); `reset_card()` replaces it, for tests and for a different config.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from spyre_ir.cost_model import device_copy_s, host_transfer_s
from spyre_ir.hardware import DEFAULT_CONFIG, SpyreConfig
from spyre_ir.runtime.allocator import MODES, AllocatorStats, DeviceBlock, LpddrAllocator
from spyre_ir.runtime.streams import Stream, Timeline
from spyre_ir.sim.memory import Lpddr5


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major element strides of `shape`."""
    strides = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


@dataclass
class DeviceArray:
    """A strided view of device memory, like a torch tensor's storage + view: element
    `i` sits at element `offset + sum(i[d] * strides[d])` of `block`."""

    card: Card
    block: DeviceBlock
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    dtype: np.dtype

    def __post_init__(self) -> None:
        self.shape = tuple(int(n) for n in self.shape)
        self.strides = tuple(int(s) for s in self.strides)
        self.dtype = np.dtype(self.dtype)
        if len(self.shape) != len(self.strides):
            raise ValueError(f"shape {self.shape} and strides {self.strides} differ in rank")
        if any(n < 0 for n in self.shape) or self.offset < 0:
            raise ValueError(f"negative extent or offset in {self.shape} @ {self.offset}")
        if self.numel and any(s < 0 for s in self.strides):
            raise ValueError(f"negative strides {self.strides} are not supported")
        end = self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.strides)) + 1
        if self.numel and end * self.dtype.itemsize > self.block.size:
            raise ValueError(
                f"view {self.shape} strides {self.strides} offset {self.offset} of "
                f"{self.dtype} reaches byte {end * self.dtype.itemsize}, past the "
                f"{self.block.size}-byte block"
            )

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def is_contiguous(self) -> bool:
        """Row-major with no gaps (extents of 1 may have any stride, as in torch)."""
        expected = contiguous_strides(self.shape)
        return all(n == 1 or s == e for n, s, e in zip(self.shape, self.strides, expected))

    def _elements(self) -> np.ndarray:
        """A numpy view of the LPDDR5 bytes this array covers (no copy)."""
        itemsize = self.dtype.itemsize
        raw = self.card.memory.view(self.block.region, self.block.offset, self.block.size)
        flat = raw[: self.block.size - self.block.size % itemsize].view(self.dtype)
        return np.lib.stride_tricks.as_strided(
            flat[self.offset :] if self.numel else flat[:0],
            shape=self.shape,
            strides=tuple(s * itemsize for s in self.strides),
        )

    def to_host(self) -> np.ndarray:
        """The elements as a new host array, read now (synchronize first if work that
        writes them is pending)."""
        return np.array(self._elements(), copy=True)

    def write_host(self, array: np.ndarray) -> None:
        """Write `array` (same shape; cast to this dtype) into the elements now."""
        array = np.asarray(array)
        if array.shape != self.shape:
            raise ValueError(f"writing shape {array.shape} into a device array of {self.shape}")
        np.copyto(self._elements(), array, casting="unsafe")


class Card:
    """One simulated Spyre card (normally the process-wide one from `get_card()`)."""

    def __init__(self, config: SpyreConfig = DEFAULT_CONFIG, mode: str = "vf") -> None:
        self.config = config
        self.memory = Lpddr5(config)
        self.allocator = LpddrAllocator(config, self.memory, mode)
        self.timeline = Timeline()
        self.default_stream = Stream(self)
        self._current = self.default_stream

    @property
    def now_s(self) -> float:
        """The host's simulated clock: the end of the latest work the host waited for."""
        return self.timeline.now_s

    def current_stream(self) -> Stream:
        return self._current

    def set_current_stream(self, stream: Stream) -> None:
        """Make `stream` current until the next change (torch.cuda.set_stream)."""
        if stream.card is not self:
            raise ValueError(f"{stream} belongs to another card")
        self._current = stream

    @contextmanager
    def stream(self, stream: Stream | None) -> Iterator[Stream]:
        """Make `stream` current inside the block (None keeps the current one)."""
        previous = self._current
        if stream is not None:
            if stream.card is not self:
                raise ValueError(f"{stream} belongs to another card")
            self._current = stream
        try:
            yield self._current
        finally:
            self._current = previous

    def synchronize(self) -> None:
        """Run all pending work; the host clock moves to its end."""
        self.timeline.synchronize()

    def allocate(self, nbytes: int) -> DeviceBlock:
        return self.allocator.allocate(nbytes)

    def free(self, block: DeviceBlock) -> None:
        """Return `block` to the allocator now. As with torch, work already enqueued on
        the same stream still sees the old contents; work on other streams must be
        joined by events first."""
        self.allocator.free(block)

    def release(self, block: DeviceBlock) -> None:
        """`free`, and give the block's host pages back (its bytes read as zeros): for a
        block whose contents are dead, from a step on the stream (a launch's staging
        slots once read), never from the host while work that reads it is pending."""
        self.memory.discard(block.region, block.offset, block.size)
        self.allocator.free(block)

    def empty_cache(self) -> int:
        return self.allocator.empty_cache()

    def memory_stats(self) -> AllocatorStats:
        return self.allocator.stats()

    def empty(self, shape: Sequence[int], dtype: np.dtype | type | str) -> DeviceArray:
        """A new contiguous row-major array (contents undefined); free `array.block`."""
        dtype = np.dtype(dtype)
        shape = tuple(int(n) for n in shape)
        block = self.allocate(math.prod(shape) * dtype.itemsize)
        return DeviceArray(self, block, shape, contiguous_strides(shape), 0, dtype)

    def upload(self, host: np.ndarray, stream: Stream | None = None) -> DeviceArray:
        """Allocate a device array and enqueue the host -> card copy of `host` (taken
        now, so later changes to `host` do not leak in) on `stream`."""
        data = np.array(host, copy=True, order="C")
        array = self.empty(data.shape, data.dtype)

        def run() -> float:
            array.write_host(data)
            return host_transfer_s(data.nbytes, self.config)

        self._on(stream).enqueue(
            "h2d", run, f"h2d {_describe(data.shape, data.dtype)}", data.nbytes
        )
        return array

    def download(self, array: DeviceArray, stream: Stream | None = None) -> np.ndarray:
        """Enqueue the card -> host copy of `array` on `stream`; return the host array
        it fills (valid once the host has waited for the stream)."""
        out = np.empty(array.shape, array.dtype)

        def run() -> float:
            out[...] = array._elements()
            return host_transfer_s(array.nbytes, self.config)

        self._on(stream).enqueue(
            "d2h", run, f"d2h {_describe(array.shape, array.dtype)}", array.nbytes
        )
        return out

    def copy(self, dst: DeviceArray, src: DeviceArray, stream: Stream | None = None) -> None:
        """Enqueue an on-card copy of `src` into `dst` (same shape, strides may differ)
        on the "dma" engine, timed at LPDDR5 bandwidth (read + write)."""
        if dst.shape != src.shape:
            raise ValueError(f"copy between shapes {src.shape} and {dst.shape}")

        def run() -> float:
            dst._elements()[...] = src._elements()
            return device_copy_s(dst.nbytes, self.config)

        self._on(stream).enqueue("dma", run, f"copy {_describe(dst.shape, dst.dtype)}", dst.nbytes)

    def _on(self, stream: Stream | None) -> Stream:
        stream = self._current if stream is None else stream
        if stream.card is not self:
            raise ValueError(f"{stream} belongs to another card")
        return stream


def _describe(shape: tuple[int, ...], dtype: np.dtype) -> str:
    return f"{'x'.join(map(str, shape)) or 'scalar'} {dtype}"


_card: Card | None = None


def get_card() -> Card:
    """The process-wide card, made on first use."""
    global _card
    if _card is None:
        mode = os.environ.get("SPYRE_MEMORY_MODE", "vf")
        if mode not in MODES:
            raise ValueError(f"SPYRE_MEMORY_MODE={mode!r}: expected 'vf' or 'pf'")
        _card = Card(DEFAULT_CONFIG, mode)
    return _card


def reset_card(config: SpyreConfig | None = None, mode: str = "vf") -> Card:
    """Replace the process-wide card with a fresh one (empty memory, clock at 0)."""
    global _card
    _card = Card(DEFAULT_CONFIG if config is None else config, mode)
    return _card
