"""Stick layouts: where each element of a host tensor lives in device memory.

Spyre moves and computes on 128-byte *sticks*. A tensor on the device is a row-major array
of *device dims* whose innermost dim is one stick; one host dim, the *stick dim*, is cut
into sticks (padded up to whole sticks), and the device dims may walk the host dims in
another order than the host does. A `StickLayout` records that mapping as three vectors
over the device dims, outermost first:

- `device_sizes`: the extent of each device dim (the last is the elements per stick);
- `dim_map`: the host dim each device dim walks (the stick dim appears twice: stick index
  and element-in-stick);
- `stride_map`: how far one step along the device dim moves in the host tensor, in
  elements of the contiguous (C-order) host tensor.

The vocabulary (device_size, dim_map, stride_map) is torch-spyre's, so layouts can be
compared with theirs: torch-spyre docs/TensorLayouts.md and SpyreTensorLayout::init in
torch_spyre/csrc/spyre_tensor_impl.cpp (github.com/torch-spyre/torch-spyre).

Everything here is pure maths on shapes plus vectorised numpy, so the passes, the
interpreters, the runtime and the simulator share one definition of "where is element x".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES

STICK_BYTES = DEFAULT_CONFIG.stick_bytes


def element_bytes(dtype: int | str) -> int:
    """Bytes of one stored element, from a width in bytes or an element type name.

    Names are those of `hardware.ELEMENT_BYTES` (f16, bf16, f32, i1, i8, i32, i64, ...);
    i1 is stored as one byte. A width must fill a stick with whole elements.
    """
    if isinstance(dtype, str):
        try:
            return ELEMENT_BYTES[dtype]
        except KeyError:
            raise ValueError(
                f"unknown element type '{dtype}'; known: {', '.join(ELEMENT_BYTES)}"
            ) from None
    if dtype <= 0 or STICK_BYTES % dtype:
        raise ValueError(f"{dtype}-byte elements do not fill a {STICK_BYTES}-byte stick")
    return dtype


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major (C-order) strides in elements: the host tensor as the host holds it."""
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return tuple(strides)


@dataclass(frozen=True)
class StickLayout:
    """How one host tensor (shape, element width) lives in device memory.

    Build one with `default_layout`, `layout_sticked_on` or `generic_layout`; a layout
    written by hand (or parsed from IR) should pass `validate` before use.
    """

    host_shape: tuple[int, ...]
    elem_bytes: int
    stick_dim: int
    """The host dim cut into sticks."""
    device_sizes: tuple[int, ...]
    dim_map: tuple[int, ...]
    stride_map: tuple[int, ...]

    def __post_init__(self) -> None:
        # Accept any int sequences but store tuples of Python ints, so that equal layouts
        # compare and hash equal whatever built them.
        for name in ("host_shape", "device_sizes", "dim_map", "stride_map"):
            object.__setattr__(self, name, tuple(int(v) for v in getattr(self, name)))

    @property
    def elems_per_stick(self) -> int:
        return self.device_sizes[-1]

    @property
    def host_strides(self) -> tuple[int, ...]:
        return contiguous_strides(self.host_shape)

    @property
    def device_strides(self) -> tuple[int, ...]:
        """Device memory is a dense row-major array of `device_sizes`."""
        return contiguous_strides(self.device_sizes)

    @property
    def device_elements(self) -> int:
        """Elements in the allocation, padding included."""
        return math.prod(self.device_sizes)

    def walkers(self, host_dim: int) -> list[int]:
        """The device dims that walk `host_dim`, finest step first."""
        dims = [j for j, h in enumerate(self.dim_map) if h == host_dim]
        return sorted(dims, key=lambda j: self.stride_map[j])

    def tile_factor(self, device_dim: int) -> int:
        """Host-dim coordinate step of one step along `device_dim`."""
        return self.stride_map[device_dim] // self.host_strides[self.dim_map[device_dim]]

    def host_span(self, host_dim: int) -> int:
        """Coordinates of `host_dim` the device dims cover, padding included."""
        return max(
            (self.tile_factor(j) * self.device_sizes[j] for j in self.walkers(host_dim)),
            default=0,
        )


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _checked_shape(shape: Iterable[int]) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if not shape or min(shape) < 1:
        raise ValueError(
            f"stick layouts need rank >= 1 and sizes >= 1, got {list(shape)}"
            " (hold a scalar as shape [1])"
        )
    return shape


def generic_layout(shape: Iterable[int], dtype: int | str, dim_order: Iterable[int]) -> StickLayout:
    """torch-spyre's "generic stick" layout for a host dim order (a permutation).

    The last dim of `dim_order` is the stick dim. The device dims are
    `[dim_order[1], ..., dim_order[-1], dim_order[0], element-in-stick]`, where the
    stick dim (`dim_order[-1]`) counts sticks, padded up to whole sticks. The first dim
    of the order sits just outside the stick, so its sticks are adjacent: for a matrix
    `[m, k]` (device `[ceil(k/e), m, e]`) each k-stick of all m rows is one contiguous
    block, the unit a matmul streams. This follows SpyreTensorLayout::init
    (torch_spyre/csrc/spyre_tensor_impl.cpp): same device_size and dim order. Our
    stride_map differs in two corner cases that move no element: torch-spyre writes -1
    for size-1 host dims and clamps the stick-index stride to the host extent when one
    stick holds the whole dim; we keep the plain host stride (stick count x stick
    elements for the stick index), so `validate` can check one rule everywhere.
    """
    shape = _checked_shape(shape)
    order = tuple(int(d) for d in dim_order)
    if sorted(order) != list(range(len(shape))):
        raise ValueError(f"dim order {list(order)} is not a permutation of the host dims")
    elem_bytes = element_bytes(dtype)
    per_stick = STICK_BYTES // elem_bytes
    stick_dim = order[-1]
    host_strides = contiguous_strides(shape)
    outer = order[1:] + order[:1]

    def extent(h: int) -> int:
        return _ceil_div(shape[h], per_stick) if h == stick_dim else shape[h]

    def stride(h: int) -> int:
        return per_stick * host_strides[h] if h == stick_dim else host_strides[h]

    return StickLayout(
        host_shape=shape,
        elem_bytes=elem_bytes,
        stick_dim=stick_dim,
        device_sizes=tuple(extent(h) for h in outer) + (per_stick,),
        dim_map=outer + (stick_dim,),
        stride_map=tuple(stride(h) for h in outer) + (host_strides[stick_dim],),
    )


def default_layout(shape: Iterable[int], dtype: int | str) -> StickLayout:
    """The layout a tensor gets unless an op asks for another: torch-spyre's default.

    The stick dim is the last host dim (generic_stick_dim_order is the identity), so
    rank 1 `[a]` -> device `[ceil(a/e), e]`; rank 2 `[a, b]` -> `[ceil(b/e), a, e]`;
    rank 3 `[a, b, c]` -> `[b, ceil(c/e), a, e]`; rank 4 `[a, b, c, d]` ->
    `[b, c, ceil(d/e), a, e]`; with e = 128 bytes / element width. Size-1 dims are kept
    as they are (a size-1 last dim still becomes a padded stick dim); pick another stick
    dim with `layout_sticked_on` where that wastes memory.
    """
    shape = _checked_shape(shape)
    return generic_layout(shape, dtype, range(len(shape)))


def layout_sticked_on(shape: Iterable[int], dtype: int | str, stick_dim: int) -> StickLayout:
    """The generic layout with `stick_dim` as the stick dim, other dims in host order.

    E.g. a matmul B operand `[k, n]` sticked on k instead of n: device `[ceil(k/e), n, e]`,
    the same arrangement as the default layout of its transpose.
    """
    shape = _checked_shape(shape)
    rank = len(shape)
    if not -rank <= stick_dim < rank:
        raise ValueError(f"stick dim {stick_dim} out of range for rank {rank}")
    stick_dim %= rank
    order = [d for d in range(rank) if d != stick_dim] + [stick_dim]
    return generic_layout(shape, dtype, order)


def device_size_bytes(layout: StickLayout) -> int:
    """Bytes of the device allocation, padding included."""
    return layout.device_elements * layout.elem_bytes


def padding_elements(layout: StickLayout) -> int:
    """Padding elements at the end of each row of the stick dim (0 if it fills its sticks)."""
    return layout.host_span(layout.stick_dim) - layout.host_shape[layout.stick_dim]


def validate(layout: StickLayout, shape: Sequence[int], elem_bytes: int) -> list[str]:
    """Problems that keep `layout` from describing a host tensor of `shape`/`elem_bytes`.

    An empty list means: every host element has exactly one device slot, each stick is
    128 bytes of consecutive stick-dim elements, and only the stick dim is padded, by
    less than one stick.
    """
    shape = tuple(shape)
    problems: list[str] = []
    if layout.host_shape != shape:
        problems.append(
            f"layout is for host shape {list(layout.host_shape)}, tensor has {list(shape)}"
        )
    if layout.elem_bytes != elem_bytes:
        problems.append(
            f"layout is for {layout.elem_bytes}-byte elements, tensor has {elem_bytes}-byte"
        )
    structural = _structural_problems(layout, shape)
    if structural:
        return problems + structural

    stick_bytes = layout.elems_per_stick * elem_bytes
    if stick_bytes != STICK_BYTES:
        problems.append(
            f"stick holds {layout.elems_per_stick} x {elem_bytes}-byte elements ="
            f" {stick_bytes} bytes, not {STICK_BYTES}"
        )
    host_strides = contiguous_strides(shape)
    stick = layout.stick_dim
    if layout.dim_map[-1] != stick or layout.stride_map[-1] != host_strides[stick]:
        problems.append(
            f"innermost device dim must step host dim {stick} (the stick dim) by one"
            f" element (host stride {host_strides[stick]}), it steps host dim"
            f" {layout.dim_map[-1]} by stride {layout.stride_map[-1]}"
        )
    for h, size in enumerate(shape):
        problems += _host_dim_problems(layout, h, size, host_strides[h], elem_bytes)
    return problems


def _structural_problems(layout: StickLayout, shape: tuple[int, ...]) -> list[str]:
    """Shape-of-the-vectors problems; past these, the per-dim checks can index safely."""
    rank = len(shape)
    if rank == 0 or min(shape) < 1:
        return [f"stick layouts need rank >= 1 and sizes >= 1, got {list(shape)}"]
    n = len(layout.device_sizes)
    if not n == len(layout.dim_map) == len(layout.stride_map) or n < 2:
        return [
            f"device sizes, dim map and stride map must have one equal length >= 2, have"
            f" {n}, {len(layout.dim_map)}, {len(layout.stride_map)}"
        ]
    if min(layout.device_sizes) < 1:
        return [f"device sizes must be >= 1, got {list(layout.device_sizes)}"]
    if not all(0 <= h < rank for h in (*layout.dim_map, layout.stick_dim)):
        return [
            f"dim map {list(layout.dim_map)} / stick dim {layout.stick_dim} name host dims"
            f" outside 0..{rank - 1}"
        ]
    return []


def _host_dim_problems(
    layout: StickLayout, h: int, size: int, host_stride: int, elem_bytes: int
) -> list[str]:
    """The device dims walking host dim `h` must tile it exactly (a mixed radix).

    Finest first, their strides must be host_stride, host_stride * size0, ..., so that no
    two device slots hold the same element; together they must cover the dim, padded
    only on the stick dim and only up to whole sticks.
    """
    walkers = layout.walkers(h)
    if not walkers:
        return [f"no device dim walks host dim {h}"]
    expected = host_stride
    for j in walkers:
        if layout.stride_map[j] != expected:
            return [
                f"device dim {j} walks host dim {h} with stride {layout.stride_map[j]},"
                f" the tiling needs {expected}"
            ]
        expected *= layout.device_sizes[j]
    span = expected // host_stride
    if h != layout.stick_dim:
        if span != size:
            return [f"device sizes cover {span} of host dim {h}, which has {size}"]
        return []
    per_stick = STICK_BYTES // elem_bytes
    needed = _ceil_div(size, per_stick) * per_stick
    if span != needed:
        return [
            f"stick dim {h} of size {size} is padded to {span} on the device, whole"
            f" {per_stick}-element sticks need {needed}"
        ]
    return []


def _require_valid(layout: StickLayout) -> None:
    problems = validate(layout, layout.host_shape, layout.elem_bytes)
    if problems:
        raise ValueError("invalid stick layout: " + "; ".join(problems))


def host_to_device_offsets(layout: StickLayout) -> np.ndarray:
    """Device element offset of every host element, host elements in C order (int64).

    Each host dim contributes independently: a coordinate x of host dim h splits into the
    digits (x // tile) % size of the device dims walking h. So the offsets are a broadcast
    sum of one small vector per host dim, with no per-element Python.
    """
    _require_valid(layout)
    rank = len(layout.host_shape)
    device_strides = layout.device_strides
    offsets = np.zeros((1,) * rank, dtype=np.int64)
    for h, size in enumerate(layout.host_shape):
        x = np.arange(size, dtype=np.int64)
        part = np.zeros(size, dtype=np.int64)
        for j in layout.walkers(h):
            digit = (x // layout.tile_factor(j)) % layout.device_sizes[j]
            part += digit * device_strides[j]
        offsets = offsets + part.reshape([size if k == h else 1 for k in range(rank)])
    return offsets.reshape(-1)


def device_to_host_index(layout: StickLayout, offset: int) -> tuple[int, ...] | None:
    """The host index stored at device element `offset`, or None for a padding slot."""
    _require_valid(layout)
    if not 0 <= offset < layout.device_elements:
        raise ValueError(f"device offset {offset} outside 0..{layout.device_elements - 1}")
    coords = np.unravel_index(offset, layout.device_sizes)
    index = [0] * len(layout.host_shape)
    for j, c in enumerate(coords):
        index[layout.dim_map[j]] += int(c) * layout.tile_factor(j)
    if any(i >= size for i, size in zip(index, layout.host_shape)):
        return None
    return tuple(index)


@functools.lru_cache(maxsize=1024)
def _device_order(
    layout: StickLayout,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """The layout as numpy reshapes: (padded host shape, split shape, axes to device order).

    Pad each host dim to the span its device dims cover, split it into those dims
    (coarsest first), and transpose the split axes into device order. No per-element
    index array: an 8B layer's weights would need gigabytes of them."""
    _require_valid(layout)
    split: list[int] = []  # device dims, host dim by host dim, coarsest first
    padded = []
    for h in range(len(layout.host_shape)):
        walkers = layout.walkers(h)  # finest first: tile factors 1, s0, s0*s1, ...
        split += reversed(walkers)
        padded.append(math.prod(layout.device_sizes[j] for j in walkers))
    sizes = tuple(layout.device_sizes[j] for j in split)
    return tuple(padded), sizes, tuple(split.index(j) for j in range(len(split)))


def stickify(host: np.ndarray, layout: StickLayout, pad_value: float = 0) -> np.ndarray:
    """The flat device image of `host`: what a host-to-device copy writes.

    Padding slots hold `pad_value` (zero by default, which matmul needs in padded k).
    """
    host = np.asarray(host)
    if host.shape != layout.host_shape:
        raise ValueError(
            f"host array has shape {list(host.shape)}, layout is for {list(layout.host_shape)}"
        )
    padded_shape, split, to_device = _device_order(layout)
    if padded_shape != host.shape:
        padded = np.full(padded_shape, pad_value, dtype=host.dtype)
        padded[tuple(slice(0, n) for n in host.shape)] = host
        host = padded
    return np.ascontiguousarray(host.reshape(split).transpose(to_device)).reshape(-1)


def unstickify(device: np.ndarray, layout: StickLayout) -> np.ndarray:
    """The host tensor held in the flat device image `device`; padding is dropped. A new
    array, never a view of `device` (device memory gets reused)."""
    device = np.asarray(device)
    if device.size != layout.device_elements:
        raise ValueError(
            f"device image has {device.size} elements, layout needs {layout.device_elements}"
        )
    padded_shape, split, to_device = _device_order(layout)
    in_device_order = device.reshape(tuple(split[a] for a in to_device))
    host = in_device_order.transpose(np.argsort(to_device)).reshape(padded_shape)
    host = host[tuple(slice(0, n) for n in layout.host_shape)]
    return host.copy() if np.may_share_memory(host, device) else host
