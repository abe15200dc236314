"""The memories a kernel of the L2 machine works on (spyre_ir.interp.machine).

`LxRoot` / `LxBuffer`: an LX buffer of every core ([cores, *shape], slots by per-core
index); `DdrMemory`: a tensor in LPDDR5 (outputs padded by one trash element per dim);
`Box`: the boxes every core cuts from a tensor, moved with one numpy indexing operation;
`held_dtype` / `round_held` / `fill_value`: how each element type is held in LX.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spyre_ir.interp.dlfloat16 import round_to_dlf16
from spyre_ir.interp.halves import convert_into, converted, round_to_f16
from spyre_ir.interp.numerics import FLOATS, STORAGE, to_storage
from spyre_ir.interp.tensor import (
    InterpreterError,
)

# ---------------------------------------------------------------- values in kernels


def uniform_value(value: object) -> int | None:
    """The value shared by every core, or None when the cores disagree."""
    a = np.asarray(value)
    if a.ndim == 0:
        return a.item()
    first = a.flat[0]
    return first.item() if bool((a == first).all()) else None


class LxRoot:
    """The storage of one `alloc_lx`: [cores, *type shape]; `kept`: slots (first index)
    whose contents are a kept read-only tile (`LxBuffer.write(shared=True)`) rather than
    their part of `array`, which is stale there until `settle` copies them in."""

    __slots__ = ("array", "kept")

    def __init__(self, array: np.ndarray):
        self.array = array
        self.kept: dict[int, np.ndarray] | None = None

    def settle(self) -> None:
        """Copy the kept tiles into `array` (for a read or write of more than one slot)."""
        if self.kept is None:
            return
        array = self.own()
        for i, tile in self.kept.items():
            np.copyto(array[:, i], tile)
        self.kept = None

    def own(self) -> np.ndarray:
        """`array`, copied first if it is a shared tile taken whole (read-only)."""
        if not self.array.flags.writeable:
            self.array = self.array.copy()
        return self.array

    def reset(self, array: np.ndarray) -> None:
        self.array, self.kept = array, None


class LxBuffer:
    """An LX buffer of every core: `root.array` indexed by the per-core slot indices
    `index` (ints, or int64 arrays [cores]) after the core axis."""

    __slots__ = ("root", "index", "shape", "name", "cores", "_view", "_index_key")

    def __init__(self, root: LxRoot, index: tuple, shape: tuple[int, ...], name: str, cores: int):
        self.root, self.index, self.shape, self.name, self.cores = root, index, shape, name, cores
        # Made once: a replay reads and writes the same buffers thousands of times a step.
        self._view = all(isinstance(i, int) for i in index)
        self._index_key = (slice(None), *index) if self._view else (np.arange(cores), *index)

    @property
    def dtype(self) -> np.dtype:
        return self.root.array.dtype

    def is_view(self) -> bool:
        """Whether `read` gives a view of the storage (else a copy)."""
        return self._view

    def read(self) -> np.ndarray:
        """[cores, *shape]; a view of the storage when no per-core indexing is needed."""
        root = self.root
        if root.kept is not None:
            tile = root.kept.get(self.index[0]) if self._view and self.index else None
            if tile is not None:  # a slot that holds a kept tile (or a part of one)
                return tile if len(self.index) == 1 else tile[(slice(None), *self.index[1:])]
            if not (self._view and self.index):
                root.settle()
        return root.array[self._index_key] if self.index else root.array

    def write(self, value: np.ndarray, fresh: bool = False, shared: bool = False) -> None:
        """Store `value` ([cores, *shape]); `fresh`: nothing else refers to it, so a
        whole buffer may take the array itself instead of a copy; `shared`: it is
        read-only and never changes (a kept tile), so a whole buffer may take it too,
        and is copied before anything is written into it."""
        root = self.root
        slot = self.index[0] if self._view and self.index else None
        if root.kept is not None:
            if slot is None:
                root.settle()
            elif slot in root.kept:  # written over: the kept tile leaves, or is copied in
                tile = root.kept.pop(slot)
                if len(self.index) > 1 or value.shape != tile.shape:
                    np.copyto(root.own()[:, slot], tile)
                root.kept = root.kept or None
        array = root.array
        if not array.flags.writeable:  # a shared tile taken before (copy on write)
            whole = not self.index and value.shape == array.shape
            array = root.array = np.empty_like(array) if whole else array.copy()
        whole_slot = len(self.index) == 1 and value.shape == (self.cores, *self.shape)
        if shared and value.dtype == array.dtype and (whole_slot and slot is not None):
            root.kept = root.kept or {}
            root.kept[slot] = value
            return
        if shared and not self.index and value.shape == array.shape and value.dtype == array.dtype:
            root.array = value
            return
        same = value.dtype == array.dtype
        if not self._view:
            # Per-core slots: advanced indexing, which cannot hand out a view.
            array[self._index_key] = value if same else converted(value, array.dtype)
        elif self.index:
            if same:
                np.copyto(array[self._index_key], value)
            else:
                convert_into(array[self._index_key], value)
        elif (
            fresh
            and same
            and value.base is None
            and value.flags.c_contiguous
            and value.flags.writeable
            and value.shape == array.shape
        ):
            self.root.array = value
        elif same:
            np.copyto(array, value)
        else:
            convert_into(array, value)

    def slot(self, i: object, copies: int) -> LxBuffer:
        u = uniform_value(i)
        if u is not None:
            if not 0 <= u < copies:
                raise InterpreterError(f"slot {u} is out of range for {copies} slots")
            i = u
        else:
            i = np.broadcast_to(np.asarray(i, dtype=np.int64), (self.cores,))
            bad = (i < 0) | (i >= copies)
            if bad.any():
                core = int(np.argmax(bad))
                raise InterpreterError(
                    f"slot {i[core]} (core {core}) is out of range for {copies} slots"
                )
        return LxBuffer(self.root, (*self.index, i), self.shape[1:], self.name, self.cores)


def _core_dtype(cores: int) -> type[np.signedinteger]:
    """A dtype for core ids and -1 (no core)."""
    return np.int16 if cores < 2**15 else np.int32


class DdrMemory:
    """A tensor in LPDDR5 as the kernel sees it. Outputs are padded by one trash element
    per dim (see `Box.scatter`); `data` is the tensor itself."""

    __slots__ = ("array", "data", "shape", "name", "writable", "writers", "label")

    def __init__(self, array: np.ndarray, name: str, writable: bool, label: str, cores: int | None):
        self.shape = array.shape
        self.name, self.writable, self.label = name, writable, label
        self.writers: np.ndarray | None = None
        if writable:
            self.array = np.zeros([n + 1 for n in array.shape], array.dtype)
            # The Ellipsis keeps a rank-0 tensor a view (a[()] would copy it out).
            self.data = self.array[(*(slice(0, n) for n in array.shape), Ellipsis)]
            if cores is not None:  # the race checks: which core wrote each element last
                self.writers = np.full(self.array.shape, -1, _core_dtype(cores))
        else:
            self.array = self.data = array

    @property
    def codes(self) -> bool:
        """Whether the tensor is held as the card's DLFloat16 codes (uint16; see
        `DataflowInterpreter`'s `codes`), not as float32 values."""
        return self.name == "dlf16" and self.array.dtype == np.uint16

    @classmethod
    def in_place(cls, array: np.ndarray, name: str, label: str, cores: int | None) -> DdrMemory:
        """A writable memory whose tensor is `array` itself (a tied result: the input's
        buffer, updated in place). `array` as a program's result gives it (the tensor
        part of a padded memory) is taken as it is, its padding with it; any other
        array (an entry argument, read-only or unpadded) is copied in once."""
        base = array.base
        if (
            isinstance(base, np.ndarray)
            and array.flags.writeable
            and base.dtype == array.dtype
            and base.shape == tuple(n + 1 for n in array.shape)
            and base.strides == array.strides
            and base.__array_interface__["data"][0] == array.__array_interface__["data"][0]
        ):
            memory = cls.__new__(cls)
            memory.shape, memory.name, memory.writable, memory.label = (
                array.shape,
                name,
                True,
                label,
            )
            memory.array, memory.data = base, array
            memory.writers = None if cores is None else np.full(base.shape, -1, _core_dtype(cores))
            return memory
        memory = cls(array, name, True, label, cores)
        memory.data[...] = array
        return memory


class Box:
    """The boxes [offset, offset + extent) of every core in a tensor of `shape`.

    A dim whose offset is the same on every core is a slice (clipped to the tensor;
    `partial` when the box overhangs). The other dims are *varying*: per-core index
    arrays [cores, extent], moved to the front for one advanced-indexing operation."""

    def __init__(
        self, offsets: Sequence[object], extents: Sequence[int], shape: Sequence[int], cores: int
    ):
        self.cores, self.extents, self.rank = cores, tuple(extents), len(extents)
        self.shape = tuple(shape)
        self.empty = any(e == 0 or n == 0 for e, n in zip(extents, shape))
        self.partial = False
        self.offsets = list(offsets)  # per dim: an int or [cores] ints, for messages
        self.src: list[slice] = []  # per tensor dim: the slice taken before indexing
        self.tile: list[slice] = [slice(None)]  # the part of the tile that lands
        self.varying: list[int] = []
        self.uniform: list[int] = []
        # Per varying dim: the [cores] first indices, and whether every box is inside.
        self.starts: list[np.ndarray] = []
        self.inside: list[bool] = []
        self._indices: tuple[list, list, list] | None = None  # see `indices`
        # When every box lies inside the tensor and each varying dim's offset is
        # first + high * (core // r) + low * (core % r) (steps >= 0), the boxes are one
        # strided view of the tensor: (r, {dim: (first, high, low)}), see `core_grid`.
        self.grid: tuple[int, dict[int, tuple[int, int, int]]] | None = None
        for d, (o, e, n) in enumerate(zip(offsets, extents, shape)):
            u = uniform_value(o)
            if u is not None and u < n and u + e > 0:
                lo, hi = max(u, 0), min(u + e, n)
                self.partial |= (lo - u, hi - u) != (0, e)
                self.src.append(slice(lo, hi))
                self.tile.append(slice(lo - u, hi - u))
                self.uniform.append(d)
                continue
            first = np.broadcast_to(np.asarray(o, dtype=np.int64), (cores,))
            if bool(((first + e <= 0) | (first >= n)).all()):
                self.empty = True
            self.src.append(slice(None))
            self.tile.append(slice(None))
            self.varying.append(d)
            self.starts.append(first)
            self.inside.append(bool(first.min() >= 0) and bool(first.max() + e <= n))
        if self.varying and all(self.inside):
            self.grid = core_grid(dict(zip(self.varying, self.starts)), cores)

    def indices(self) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray | None]]:
        """Per varying dim, [cores, extent] index arrays: clipped into the tensor, with
        the trash element for what lies outside, and which are inside (None: all);
        made once, only for the moves that index per core."""
        if self._indices is None:
            clipped, trash, valid = [], [], []
            for d, first, inside in zip(self.varying, self.starts, self.inside):
                e, n = self.extents[d], self.shape[d]
                index = first.reshape(-1, 1) + np.arange(e)
                if inside:
                    clipped.append(index)
                    trash.append(index)
                    valid.append(None)
                    continue
                ok = (index >= 0) & (index < n)
                clipped.append(np.clip(index, 0, max(n - 1, 0)))
                trash.append(np.where(ok, index, n))
                valid.append(ok)
            self._indices = (clipped, trash, valid)
        return self._indices

    def _advanced(self, indices: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        k = len(indices)
        return tuple(
            ix.reshape((self.cores,) + (1,) * j + (ix.shape[1],) + (1,) * (k - 1 - j))
            for j, ix in enumerate(indices)
        )

    def _front(self, array: np.ndarray) -> np.ndarray:
        """The sliced view of `array` with the varying dims first."""
        view = array[tuple(self.src)]
        return np.moveaxis(view, self.varying, range(len(self.varying)))

    def _order(self) -> list[int]:
        """Axes of [cores, varying..., uniform...] back to [cores, dims in order]."""
        pos = {d: 1 + j for j, d in enumerate(self.varying + self.uniform)}
        return [0] + [pos[d] for d in range(self.rank)]

    def gather(self, array: np.ndarray, fill: object) -> np.ndarray:
        """[cores, *extents]: every core's box of `array`, `fill` outside the tensor."""
        full = (self.cores, *self.extents)
        if self.empty:
            return np.full(full, fill, array.dtype)
        k = len(self.varying)
        if k == 0:
            box = array[tuple(self.src)]
            got = np.broadcast_to(box, (self.cores, *box.shape))
        elif self.grid is not None:
            # The boxes of the cores as one strided view of the tensor (read-only),
            # instead of advanced indexing.
            r, steps = self.grid
            src = list(self.src)
            high = low = 0
            for d, (first, up, across) in steps.items():
                src[d] = slice(first, first + self.extents[d])
                high += up * array.strides[d]
                low += across * array.strides[d]
            view = array[tuple(src)]
            got = np.lib.stride_tricks.as_strided(
                view,
                (self.cores // r, r, *view.shape),
                (high, low, *view.strides),
                writeable=False,
            ).reshape(self.cores, *view.shape)
        else:
            clipped, _, valid = self.indices()
            got = self._front(array)[self._advanced(clipped)]
            if any(v is not None for v in valid):
                mask = self._varying_mask()
                got = np.where(mask.reshape(mask.shape + (1,) * len(self.uniform)), got, fill)
            order = self._order()
            if order != sorted(order):
                got = got.transpose(order)
        if self.partial:
            out = np.full(full, fill, array.dtype)
            out[tuple(self.tile)] = got
            return out
        return got

    def _varying_mask(self) -> np.ndarray:
        """[cores, varying extents...]: which elements of the varying dims are inside."""
        shape = (self.cores, *(self.extents[d] for d in self.varying))
        mask = np.ones(shape, bool)
        ones = np.ones((self.cores, 1), bool)
        for m in self._advanced([ones if v is None else v for v in self.indices()[2]]):
            mask &= m
        return mask

    def scatter(self, padded: np.ndarray, value: np.ndarray) -> None:
        """Write every core's box of `value` ([cores, *extents]) into `padded` (a
        tensor padded by one trash element per dim); the last core wins."""
        if self.empty:
            return
        part = value[tuple(self.tile)]
        if not self.varying:
            padded[tuple(self.src)] = part[-1]
            return
        front = [1 + d for d in self.varying] + [1 + d for d in self.uniform]
        self._front(padded)[self._advanced(self.indices()[1])] = part.transpose([0] + front)

    def element(self, core: int, position: Sequence[int]) -> tuple[int, ...]:
        firsts = [np.broadcast_to(np.asarray(o), (self.cores,)) for o in self.offsets]
        return tuple(int(firsts[d][core]) + int(p) for d, p in enumerate(position))


def core_grid(
    starts: dict[int, np.ndarray], cores: int
) -> tuple[int, dict[int, tuple[int, int, int]]] | None:
    """(r, {dim: (first, high, low)}) with starts[dim][c] = first + high * (c // r) + low
    * (c % r) for every core c and non-negative steps (r = 1: one step per core; r > 1:
    cores in groups of r, as a matmul's N groups of K-split cores), or None."""
    if cores < 2:
        return None
    core = np.arange(cores)
    for r in (1, *(q for q in range(2, cores) if cores % q == 0)):
        steps = {}
        for d, o in starts.items():
            first = int(o[0])
            up = int(o[r]) - first if r < cores else 0
            across = int(o[1]) - first if r > 1 else 0
            expected = first + up * (core // r) + across * (core % r)
            if up < 0 or across < 0 or not (o == expected).all():
                break
            steps[d] = (first, up, across)
        else:
            return r, steps
    return None


HALF_NAMES = ("f16", "dlf16")
FLOAT_NAMES = (*FLOATS, "dlf16")


def held_dtype(name: str) -> np.dtype:
    """The dtype of an LX buffer held as `name` (an element type's name, or "dlf16"):
    f16 (values exactly representable in f16) and DLFloat16 are held in float32, so
    tile ops skip numpy's slow half conversions; everything else as in DDR (the L1
    storage dtypes)."""
    return np.dtype(np.float32) if name in HALF_NAMES else STORAGE[name]


def round_held(x: np.ndarray, name: str, *, overwrite: bool = False) -> np.ndarray:
    """Computed values (float32/int64) rounded to `name`, as held in LX (`overwrite`:
    a contiguous float32 `x` may be rounded in place)."""
    if name == "f16":
        return round_to_f16(x, overwrite=overwrite)
    if name == "dlf16":
        return round_to_dlf16(x, overwrite=overwrite)
    return to_storage(x, name)


def fill_value(value: float, name: str) -> object:
    """A pad value in the storage of `name`."""
    if name == "dlf16":
        return round_to_dlf16(np.float32(value))[()]
    if name in FLOATS:
        return to_storage(np.asarray(value), name)[()]
    if name == "i1":
        return bool(value)
    info = np.iinfo(STORAGE[name])  # -inf/inf (a max/min identity): the extremes
    if np.isnan(value):
        return STORAGE[name].type(0)
    clipped = info.min if value <= info.min else info.max if value >= info.max else int(value)
    return STORAGE[name].type(clipped)


def differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a != b elementwise, NaN equal to NaN."""
    out = a != b
    if a.dtype.kind == "f":
        out &= ~(np.isnan(a) & np.isnan(b))
    return out
