"""A numpy interpreter for the `dataflow` dialect (level L2).

    results = run_module(module, [x, w], entry="main", check_races=True)

Same contract as `spyre_ir.interp.tensor.run_module` (argument checks, dtypes: bf16 is
a float32 array of bf16 values, numerics), and built on it: the function level is the
L1 interpreter extended with two ops.

* `spyre` ops, `func.call`/`func.return`, `arith.constant`: as at L1.
* `dataflow.group`: its body is run by the L1 interpreter on the group's inputs; the
  results are the yielded values.
* `dataflow.kernel`: run SPMD over its `cores`, see below.

Kernels: the body is interpreted ONCE with every value vectorised across the cores.

* An `index` (or integer) value is an int64 array of shape [cores], or a 0-d value when
  it is the same on every core (constants, loop counters); `i1` values are bool.
* An LX buffer is an `_Lx` handle on an array [cores, *shape]. A multi-buffer
  `!dataflow.lx<2x...>` is one array [cores, 2, ...]; `dataflow.slot %buf[%i]` is a
  handle (same array, per-core slot index), read and written through with advanced
  indexing, so the slot may differ per core.
* A DDR memory is the kernel's input array (shared, read-only) or an output array,
  zero-initialised and padded by one trash element along every dim: a vectorised
  store sends the elements past the tensor's end there instead of masking them.
* `dataflow.load`/`store` build index arrays [cores, box] per dim (per-core offsets) and
  move the whole box of every core in one numpy indexing operation; dims whose offset
  is the same on every core are sliced instead, and a load whose boxes step regularly
  over the cores (inside the tensor) reads one strided view. Elements past the end read
  as `pad`.
  When several cores store the same element the last core wins.
* `dataflow.compute` applies the L1 implementation of the named op (`IMPLS`) to the
  [cores, ...] arrays, through a detached copy of the op whose types carry the core
  axis and whose dim-valued properties are shifted past it; lower-rank operands are
  reshaped to [cores, 1.., *shape] so broadcasting stays right-aligned per core.
* `ring_allreduce` / `ring_allgather` reshape [cores, ...] into [blocks, group_size,
  stride, ...] and combine or stack along the group axis.
* `scf.for` runs in Python, one iteration at a time, for all cores at once: its bounds
  must be the same on every core (so must an `scf.if` condition), else
  `InterpreterError`. Index arithmetic: `arith` integer ops, `cmpi`, `select`,
  `index_cast`, `constant`.
* Kernel-body ops are dispatched by class, falling back to base classes
  (`dataflow.LoadBase` ...), so a lower level's subclasses run too.

Numerics: an LX buffer holds values of its element type, rounded after every op, and
tile ops compute as their L1 op does (half types in float32), bit for bit. An f16
buffer is held as a float32 array of f16 values (like bf16 at L1): most tile ops then
run in float32 and round with `round_to_f16`, skipping numpy's slow half conversions;
loads and stores convert. With `accumulate`, the op's result is computed in float32
(f16/bf16) or int64 and combined with the buffer's contents before one rounding, so a
K loop accumulating into an f16 buffer rounds each partial sum, as the hardware's f16
storage does; an f32 buffer stays f32. `ring_allreduce` combines in float32 and rounds
once. Results and DDR tensors use the L1 storage dtypes (f16 -> float16).

`halves="dlfloat16"` computes as the card does (docs/dlfloat16.md; the simulator's
numerics): an f16 tensor is DLFloat16, held in float32 in LX and in DDR alike (loads
and stores copy), every tile op computes in float32 (the L1 op with f16 widened to f32)
and rounds its result to DLFloat16 once, and an L1 op between kernels does the same.
f16 arguments (IEEE float16) are converted to DLFloat16 on entry and f16 results back
to float16, or, with `card_format`, taken and given as float32 arrays of DLFloat16
values. The default, "ieee", stays bit for bit with the L1 interpreter.

`check_races=True` (a debug mode, used by the tests) raises `InterpreterError` when two
cores write the same in-range element with different values, within one store or
across stores, and when a kernel leaves an element of an output unwritten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import spyre as S
from spyre_ir.interp.dlfloat16 import from_user, round_to_dlf16, to_user
from spyre_ir.interp.halves import convert_into, converted, round_to_f16
from spyre_ir.interp.numerics import FLOATS, STORAGE, storage_dtype, to_storage
from spyre_ir.interp.tensor import (
    InterpreterError,
    _Interpreter,
    apply_op,
    check_value,
    iota_values,
    make_op,
    op_label,
    run_entry,
)

__all__ = ["InterpreterError", "run_module"]

SPYRE_BY_NAME: dict[str, type[Operation]] = {op.name: op for op in S.SPYRE_OPS}


def run_module(
    module: ModuleOp,
    args: Sequence[np.ndarray],
    entry: str = "main",
    *,
    check_races: bool = False,
    halves: str = "ieee",
    card_format: bool = False,
    output_contents: dict[str, Sequence[np.ndarray]] | None = None,
) -> list[np.ndarray]:
    """Run `func.func @entry` of an L2 `module` on `args`; returns its results.

    Arguments are checked as by the L1 interpreter. `check_races` turns on the debug
    checks of kernel stores (see the module docstring). `halves`: "ieee" computes f16
    as L1 does, bit for bit; "dlfloat16" as the card does (see the module docstring;
    the simulator's numerics), where `card_format` takes and gives f16 tensors as
    float32 arrays of DLFloat16 values instead of float16. Raises `InterpreterError`
    with the failing op's location. `output_contents` (kernel name -> one array per
    output): the outputs of that kernel start with these contents instead of zeros, so
    elements the kernel does not store keep them (and are not reported as unwritten)."""
    interp = _DataflowInterpreter(module, check_races, halves, card_format)
    interp.output_contents = dict(output_contents or {})
    return run_entry(interp, args, entry)


HALVES = {"ieee": "f16", "dlfloat16": "dlf16"}
"""The `halves` choices -> the name the interpreter holds f16 tensors under."""


def _is_f16(t: Attribute) -> bool:
    return isinstance(t, TensorType) and S.element_type_name(t.element_type) == "f16"


def _wide(t: Attribute) -> Attribute:
    """An f16 tensor type as f32 (what an op on DLFloat16 values computes in)."""
    return TensorType(Float32Type(), t.get_shape()) if _is_f16(t) else t


class _DataflowInterpreter(_Interpreter):
    TERMINATORS = (*_Interpreter.TERMINATORS, D.YieldOp)

    def __init__(self, module: ModuleOp, check_races: bool, halves: str = "ieee",
                 card_format: bool = False) -> None:  # fmt: skip
        super().__init__(module)
        if halves not in HALVES:
            raise ValueError(f"halves={halves!r}: expected one of {', '.join(HALVES)}")
        self.check_races = check_races
        self.half = HALVES[halves]
        self.card_format = card_format and self.half == "dlf16"
        self.tiles: dict[Operation, _TileOp] = {}
        self.loads: dict[Operation, tuple[tuple[int, ...], object]] = {}
        self.widened: dict[Operation, Operation] = {}
        # Kernel name -> the contents its outputs start with (memory the kernel does not
        # store keeps them, as on the card); an output given none starts as zeros.
        self.output_contents: dict[str, Sequence[np.ndarray]] = {}

    def held_name(self, element: Attribute) -> str:
        """The name tensors and buffers of `element` are held under: "dlf16" for f16
        on the card, else the element type's name."""
        name = S.element_type_name(element)
        return self.half if name == "f16" else name

    def storage(self, element: Attribute) -> np.dtype:
        """The numpy dtype of a tensor of `element` between kernels (DDR)."""
        return (
            np.dtype(np.float32) if self.held_name(element) == "dlf16" else storage_dtype(element)
        )

    def take_argument(self, value: object, t: Attribute, what: str) -> np.ndarray:
        if self.half == "f16" or not _is_f16(t):
            return super().take_argument(value, t, what)
        if self.card_format:  # already DLFloat16 values (decoded from the card's codes)
            return check_value(value, t, what, self.storage)
        return from_user(check_value(value, t, what))  # IEEE fp16 in: the h2d conversion

    def give_result(self, value: np.ndarray, t: Attribute) -> np.ndarray:
        if self.half == "dlf16" and _is_f16(t) and not self.card_format:
            return to_user(value, np.float16)
        return value

    def check_result(self, value: object, op: Operation, result: SSAValue, who: str) -> None:
        """An InterpreterError unless `value` is what `result` holds here."""
        check_value(value, result.type, f"{op_label(op)}: result ({who} bug)", self.storage)

    def run_tensor_op(self, op: Operation, operands: list) -> list:
        """An L1 op between kernels. On DLFloat16 values (held in float32) it computes
        in f32 and rounds to DLFloat16, as a tile op does; else as at L1."""
        if (
            self.half == "f16"
            or isinstance(op, func.CallOp)
            or not any(_is_f16(v.type) for v in (*op.operands, *op.results))
        ):
            return super().run_op(op, operands)
        wide = self.widened.get(op)
        if wide is None:
            wide = make_op(type(op), [_wide(v.type) for v in op.operands],
                           [_wide(r.type) for r in op.results], dict(op.properties))  # fmt: skip
            self.widened[op] = wide
        result = apply_op(wide, operands)
        if _is_f16(op.results[0].type):
            result = round_to_dlf16(result)
        self.check_result(result, op, op.results[0], "interpreter")
        return [result]

    def run_op(self, op: Operation, operands: list) -> list:
        if isinstance(op, D.GroupOp):
            results = self.run_block(
                op.body.block, operands, f"{op_label(op)}: the group has no dataflow.yield"
            )
        elif isinstance(op, D.KernelOp):
            results = _Kernel(self, op).run(operands)
        else:
            return self.run_tensor_op(op, operands)
        for value, result in zip(results, op.results):
            self.check_result(value, op, result, "interpreter")
        return results


# ---------------------------------------------------------------- values in kernels


def _uniform(value: object) -> int | None:
    """The value shared by every core, or None when the cores disagree."""
    a = np.asarray(value)
    if a.ndim == 0:
        return a.item()
    first = a.flat[0]
    return first.item() if bool((a == first).all()) else None


class _Root:
    """The storage of one `alloc_lx`: [cores, *type shape]."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray):
        self.array = array


class _Lx:
    """An LX buffer of every core: `root.array` indexed by the per-core slot indices
    `index` (ints, or int64 arrays [cores]) after the core axis."""

    __slots__ = ("root", "index", "shape", "name", "cores")

    def __init__(self, root: _Root, index: tuple, shape: tuple[int, ...], name: str, cores: int):
        self.root, self.index, self.shape, self.name, self.cores = root, index, shape, name, cores

    @property
    def dtype(self) -> np.dtype:
        return self.root.array.dtype

    def _key(self) -> tuple:
        if self.is_view():
            return (slice(None), *self.index)
        return (np.arange(self.cores), *self.index)

    def is_view(self) -> bool:
        """Whether `read` gives a view of the storage (else a copy)."""
        return all(isinstance(i, int) for i in self.index)

    def read(self) -> np.ndarray:
        """[cores, *shape]; a view of the storage when no per-core indexing is needed."""
        return self.root.array[self._key()] if self.index else self.root.array

    def write(self, value: np.ndarray, fresh: bool = False) -> None:
        """Store `value` ([cores, *shape]); `fresh`: nothing else refers to it, so a
        whole buffer may take the array itself instead of a copy."""
        array = self.root.array
        if not self.is_view():
            # Per-core slots: advanced indexing, which cannot hand out a view.
            same = value.dtype == array.dtype
            array[self._key()] = value if same else converted(value, array.dtype)
        elif self.index:
            convert_into(array[self._key()], value)
        elif (
            fresh
            and value.base is None
            and value.flags.c_contiguous
            and value.flags.writeable
            and value.dtype == self.root.array.dtype
            and value.shape == self.root.array.shape
        ):
            self.root.array = value
        else:
            convert_into(array, value)

    def slot(self, i: object, copies: int) -> _Lx:
        u = _uniform(i)
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
        return _Lx(self.root, (*self.index, i), self.shape[1:], self.name, self.cores)


def _core_dtype(cores: int) -> type[np.signedinteger]:
    """A dtype for core ids and -1 (no core)."""
    return np.int16 if cores < 2**15 else np.int32


class _Ddr:
    """A tensor in LPDDR5 as the kernel sees it. Outputs are padded by one trash element
    per dim (see `_Box.scatter`); `data` is the tensor itself."""

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


class _Box:
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
        # strided view of the tensor: (r, {dim: (first, high, low)}), see `_core_grid`.
        self.grid: tuple[int, dict[int, tuple[int, int, int]]] | None = None
        for d, (o, e, n) in enumerate(zip(offsets, extents, shape)):
            u = _uniform(o)
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
            self.grid = _core_grid(dict(zip(self.varying, self.starts)), cores)

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


def _core_grid(
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


_HALF_NAMES = ("f16", "dlf16")
_FLOAT_NAMES = (*FLOATS, "dlf16")


def held_dtype(name: str) -> np.dtype:
    """The dtype of an LX buffer held as `name` (an element type's name, or "dlf16"):
    f16 (values exactly representable in f16) and DLFloat16 are held in float32, so
    tile ops skip numpy's slow half conversions; everything else as in DDR (the L1
    storage dtypes)."""
    return np.dtype(np.float32) if name in _HALF_NAMES else STORAGE[name]


def round_held(x: np.ndarray, name: str, *, overwrite: bool = False) -> np.ndarray:
    """Computed values (float32/int64) rounded to `name`, as held in LX (`overwrite`:
    a contiguous float32 `x` may be rounded in place)."""
    if name == "f16":
        return round_to_f16(x, overwrite=overwrite)
    if name == "dlf16":
        return round_to_dlf16(x, overwrite=overwrite)
    return to_storage(x, name)


def _fill(value: float, name: str) -> object:
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


def _differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a != b elementwise, NaN equal to NaN."""
    out = a != b
    if a.dtype.kind == "f":
        out &= ~(np.isnan(a) & np.isnan(b))
    return out


# ---------------------------------------------------------------- tile ops


def _shift_dim(d: int) -> int:
    return d + 1 if d >= 0 else d


def _lift_properties(props: dict[str, Attribute], cores: int) -> dict[str, Attribute]:
    """An L1 op's properties for operands with a leading core axis: the dim-valued
    ones (`dim`, `dims`, `perm`) shifted past it (negative dims count from the end and
    stay), the per-dim lists (`starts`, `stops`, `steps`, `low`, `high`) given an entry
    that keeps it whole. The names are those of the spyre ops' properties."""
    per_dim = {"perm": 0, "starts": 0, "stops": cores, "steps": 1, "low": 0, "high": 0}
    out = dict(props)
    for key, value in props.items():
        if key == "dim" and isinstance(value, IntegerAttr):
            out[key] = IntegerAttr(_shift_dim(value.value.data), value.type)
        elif isinstance(value, DenseArrayBase) and (key == "dims" or key in per_dim):
            values = [int(v) for v in value.get_values()]
            if key == "dims":
                values = [_shift_dim(d) for d in values]
            else:
                if key == "perm":
                    values = [p + 1 for p in values]
                values = [per_dim[key], *values]
            out[key] = DenseArrayBase.from_list(value.elt_type, values)
    return out


# L1 ops whose f16 result is their f32 result rounded to f16 (they compute half types
# in float32 and round once): a tile op of these runs on the float32-held f16 buffers
# with float32 types and rounds with `round_to_f16`, bit-for-bit the L1 result. The
# others (float64 statistics, erf, cumsum's accumulator, a pad value) run with their
# own types, as at L1.
_ROUNDS_FROM_F32: frozenset[type[Operation]] = frozenset({
    S.AddOp, S.SubOp, S.MulOp, S.DivOp, S.MaxOp, S.MinOp, S.PowOp,
    S.EqOp, S.NeOp, S.LtOp, S.LeOp, S.GtOp, S.GeOp,
    S.LogicalAndOp, S.LogicalOrOp, S.LogicalXorOp, S.SelectOp,
    S.NegOp, S.AbsOp, S.SignOp, S.ReluOp, S.ExpOp, S.LogOp, S.SqrtOp, S.RsqrtOp,
    S.ReciprocalOp, S.TanhOp, S.SigmoidOp, S.SiluOp, S.SinOp, S.CosOp, S.FloorOp,
    S.CeilOp, S.LogicalNotOp, S.ClampOp, S.CastOp,
    S.MatmulOp, S.SumOp, S.MeanOp, S.ReduceMaxOp, S.ReduceMinOp, S.ArgmaxOp, S.ArgminOp,
    S.SoftmaxOp, S.ReshapeOp, S.TransposeOp, S.BroadcastToOp, S.SliceOp, S.ConcatOp,
    S.GatherOp,
})  # fmt: skip


def _rounds_from_f32(op_class: type[Operation], props: dict[str, Attribute]) -> bool:
    if op_class is S.GeluOp:  # the tanh form computes in float32, erf in float64
        approximate = props.get("approximate")
        return isinstance(approximate, StringAttr) and approximate.data == "tanh"
    return op_class in _ROUNDS_FROM_F32


_COMBINE = {"add": np.add, "max": np.maximum, "min": np.minimum}


class _TileOp:
    """How one `dataflow.compute` runs on [cores, ...] arrays (built once per op).

    The L1 implementation runs on a detached copy of the op (`make_op`) whose operand
    and result types carry the core axis, with dim-valued properties shifted past it.
    """

    def __init__(self, op: D.ComputeBase, cores: int, half: str):
        self.op, self.cores = op, cores
        # Asked on every run; xDSL's operand accessors are slow next to a tile of work.
        self.inputs, self.outputs = len(op.inputs), len(op.outputs)
        kind = op.kind.data
        self.op_class = SPYRE_BY_NAME[kind]
        if len(op.outputs) != 1:
            raise InterpreterError(
                f"{kind} has one result, but the tile op has {len(op.outputs)} outputs"
            )
        out_type = op.outputs[0].type
        assert isinstance(out_type, D.LxType)
        self.out_shape = out_type.get_shape()
        self.name = S.element_type_name(out_type.element_type)
        if self.name == "f16":
            self.name = half
        self.combine = D.ACCUMULATING.get(kind) if op.accumulate is not None else None
        props = op.op_attrs()
        in_types = [v.type for v in op.inputs]
        elements = [t.element_type for t in in_types]
        if not op.inputs:  # full, constant, iota: the same on every core but for offsets
            out = TensorType(out_type.element_type, self.out_shape)
            out = _wide(out) if half == "dlf16" else out  # rounded once, from f32
            self.probe = make_op(self.op_class, [], [out], props)
            self.constant: np.ndarray | None = None
            return
        shapes = [t.get_shape() for t in in_types]
        rank = len(self.out_shape)
        if self.op_class is S.MatmulOp:  # torch's 1-D promotion, then batch alignment
            a, b = shapes
            shapes = [(1, *a) if len(a) == 1 else a, (*b, 1) if len(b) == 1 else b]
            rank = max(len(s) for s in shapes)
        if self.op_class is S.GatherOp:
            self.lifted = [(cores, *s) for s in shapes]
        else:  # lower-rank operands broadcast right-aligned, per core
            self.lifted = [(cores, *(1,) * (rank - len(s)), *s) for s in shapes]
        lifted_props = _lift_properties(props, cores)
        # Run with float32 in place of f16 (and of bf16 when accumulating: the partial
        # result is combined before the one rounding). On DLFloat16 every op does: the
        # card's units compute in fp32 and round the result once.
        rounds_from_f32 = half == "dlf16" or _rounds_from_f32(self.op_class, props)
        widen = {"f16"} if rounds_from_f32 else set()
        if self.combine is not None:
            widen |= {"f16", "bf16"}
        f32 = Float32Type()

        def wide(t: Attribute) -> Attribute:
            return f32 if S.element_type_name(t) in widen else t

        self.widened = S.element_type_name(out_type.element_type) in widen
        self.probe = make_op(
            self.op_class,
            [TensorType(wide(e), s) for e, s in zip(elements, self.lifted)],
            [TensorType(wide(out_type.element_type), (cores, *self.out_shape))],
            lifted_props,
        )

    def run(
        self, inputs: list[np.ndarray], offsets: list[object], current: np.ndarray | None
    ) -> np.ndarray:
        full = (self.cores, *self.out_shape)
        if not self.inputs:
            if isinstance(self.probe, S.IotaOp) and offsets:
                return self._iota(offsets)
            if self.constant is None:
                constant = apply_op(self.probe, [])
                self.constant = (round_held(constant, "dlf16") if self.name == "dlf16"
                                 else constant.astype(held_dtype(self.name)))  # fmt: skip
            return np.broadcast_to(self.constant, full)
        arrays = [x.reshape(s) for x, s in zip(inputs, self.lifted)]
        if self.op_class is S.GatherOp:
            result = self._gather(*arrays)
        else:
            result = apply_op(self.probe, arrays)
        if result.shape != full:  # (a reshape to the same shape would hide ownership)
            result = result.reshape(full)
        if self.combine is not None:
            assert current is not None
            wide = np.float32 if self.name in _FLOAT_NAMES else np.int64
            fn = _COMBINE[self.combine]
            if current.dtype == wide and current.flags.writeable and self.name not in _HALF_NAMES:
                # Nothing to round (an f32 or i64 accumulator): combine in place.
                return fn(current, result, out=current)
            combined = fn(current.astype(wide, copy=False), result.astype(wide, copy=False))
            return round_held(combined, self.name)
        if self.widened and self.name in _HALF_NAMES:  # float32 computed for a half buffer
            owned = result.base is None and not any(result is x for x in inputs)
            return round_held(result, self.name, overwrite=owned)
        held = held_dtype(self.name)
        return result if result.dtype == held else converted(result, held)

    def _gather(self, table: np.ndarray, indices: np.ndarray) -> np.ndarray:
        rows = table.shape[1]
        bad = (indices < 0) | (indices >= rows)
        if bad.any():
            core = int(np.argwhere(bad)[0][0])
            value = indices[bad].flat[0]
            raise InterpreterError(f"core {core}: index {value} is out of range for {rows} rows")
        cores = np.arange(self.cores).reshape((self.cores,) + (1,) * (indices.ndim - 1))
        return table[cores, indices]

    def _iota(self, offsets: list[object]) -> np.ndarray:
        op = self.probe
        assert isinstance(op, S.IotaOp)
        rank = len(self.out_shape)
        (dim,) = S.shape_rules.normalize_dims([op.dim.value.data], rank)
        start, step = op.start.value.data, op.step.value.data
        first = np.broadcast_to(np.asarray(offsets[dim], dtype=np.int64), (self.cores,))
        first = (start + step * first).reshape((self.cores,) + (1,) * rank)
        if self.name == "dlf16":  # computed in f32, rounded once
            values = iota_values((self.cores, *self.out_shape), dim + 1, first, step, "f32")
            return round_held(values, "dlf16")
        values = iota_values((self.cores, *self.out_shape), dim + 1, first, step, self.name)
        return values.astype(held_dtype(self.name), copy=False)


# ---------------------------------------------------------------- index arithmetic


def _width(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    return 64


def _signed(v: object, width: int) -> np.ndarray:
    """Integer values wrapped to `width` bits, as int64 (i1: bool)."""
    a = np.asarray(v).astype(np.int64)
    if width == 1:
        return (a & 1).astype(bool)
    if width < 64:
        half = np.int64(1) << np.int64(width - 1)
        a = ((a + half) & ((half << np.int64(1)) - 1)) - half
    return a


def _as_int(v: object, width: int, unsigned: bool) -> np.ndarray:
    """The integer value of `width`-bit `v` read as signed (int64) or unsigned (uint64)."""
    a = np.asarray(v)
    if width == 1:
        a = a.astype(np.int64)
        return a if unsigned else -a
    a = a.astype(np.int64)
    if not unsigned:
        return a
    u = a.astype(np.uint64)
    return u if width == 64 else u & np.uint64((1 << width) - 1)


def _nonzero(b: np.ndarray) -> None:
    if np.any(b == 0):
        raise InterpreterError("integer division by zero")


def _divsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _divui(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    return a // b


def _remsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a - b * _divsi(a, b)


def _remui(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    return a % b


def _floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    return a // b


def _ceildiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    return a // b + (a % b != 0)


# op -> (function, operands read as unsigned)
_INT_BINARY: dict[type[Operation], tuple[Callable, bool]] = {
    arith.AddiOp: (np.add, False), arith.SubiOp: (np.subtract, False),
    arith.MuliOp: (np.multiply, False),
    arith.DivSIOp: (_divsi, False), arith.DivUIOp: (_divui, True),
    arith.RemSIOp: (_remsi, False), arith.RemUIOp: (_remui, True),
    arith.FloorDivSIOp: (_floordiv, False), arith.CeilDivSIOp: (_ceildiv, False),
    arith.CeilDivUIOp: (_ceildiv, True),
    arith.MinSIOp: (np.minimum, False), arith.MinUIOp: (np.minimum, True),
    arith.MaxSIOp: (np.maximum, False), arith.MaxUIOp: (np.maximum, True),
    arith.AndIOp: (np.bitwise_and, True), arith.OrIOp: (np.bitwise_or, True),
    arith.XOrIOp: (np.bitwise_xor, True),
    arith.ShLIOp: (np.left_shift, True), arith.ShRUIOp: (np.right_shift, True),
    arith.ShRSIOp: (np.right_shift, False),
}  # fmt: skip


def _scalar_pair(operands: list) -> tuple[int, int] | None:
    """Two uniform (0-d) index values as Python ints, else None."""
    a, b = operands
    if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 0 and b.ndim == 0:
        return int(a), int(b)
    return None


def _natural(fn: Callable[[int, int], int]) -> Callable[[int, int], int | None]:
    """`fn` where both operands are >= 0 (signed and unsigned readings agree there);
    None elsewhere, for numpy's path."""
    return lambda a, b: fn(a, b) if a >= 0 and b >= 0 else None


def _dividing(fn: Callable[[int, int], int]) -> Callable[[int, int], int | None]:
    """`_natural`, and the divisor > 0 (numpy's path reports division by zero)."""
    return lambda a, b: fn(a, b) if a >= 0 and b > 0 else None


# Ops of `_INT_BINARY` on two uniform 64-bit values in Python ints (no shifts); None
# from one asks for the general path.
_INT_SCALAR: dict[type[Operation], Callable[[int, int], int | None]] = {
    arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: _dividing(lambda a, b: a // b), arith.DivUIOp: _dividing(lambda a, b: a // b),
    arith.RemSIOp: _dividing(lambda a, b: a % b), arith.RemUIOp: _dividing(lambda a, b: a % b),
    arith.FloorDivSIOp: _dividing(lambda a, b: a // b),
    arith.CeilDivSIOp: _dividing(lambda a, b: -(-a // b)),
    arith.CeilDivUIOp: _dividing(lambda a, b: -(-a // b)),
    arith.MinSIOp: min, arith.MaxSIOp: max,
    arith.MinUIOp: _natural(min), arith.MaxUIOp: _natural(max),
    arith.AndIOp: _natural(lambda a, b: a & b), arith.OrIOp: _natural(lambda a, b: a | b),
    arith.XOrIOp: _natural(lambda a, b: a ^ b),
}  # fmt: skip

# cmpi predicates 0-5 (and the unsigned 6-9 as 2-5, on values >= 0).
_CMPI_SCALAR: tuple[Callable[[int, int], bool], ...] = (
    lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b,
    lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b,
)  # fmt: skip

_CMPI: dict[int, tuple[Callable, bool]] = {
    0: (np.equal, False), 1: (np.not_equal, False),
    2: (np.less, False), 3: (np.less_equal, False),
    4: (np.greater, False), 5: (np.greater_equal, False),
    6: (np.less, True), 7: (np.less_equal, True),
    8: (np.greater, True), 9: (np.greater_equal, True),
}  # fmt: skip


# ---------------------------------------------------------------- kernels


class _Located(InterpreterError):
    """An error already naming the kernel op it comes from."""


class _Kernel:
    """One run of a `dataflow.kernel`, vectorised over its cores."""

    def __init__(self, interp: _DataflowInterpreter, op: D.KernelOp):
        self.interp, self.op = interp, op
        self.cores = op.core_count
        self.check = interp.check_races
        self.values: dict[SSAValue, object] = {}
        self.widths: dict[Operation, int] = {}  # index op -> bit width of its operands
        # The boxes the current instruction cuts: logged for a recording, or fed back
        # by a replay (spyre_ir.sim.replay), which then skips making them.
        self.box_log: list[_Box] | None = None
        self.box_feed: Iterator[_Box] | None = None
        self.handlers: dict[type[Operation], Callable[[Operation, list], list]] = {
            arith.ConstantOp: self.constant,
            arith.CmpiOp: self.cmpi,
            arith.SelectOp: self.select,
            arith.IndexCastOp: self.index_cast,
            scf.ForOp: self.for_,
            scf.IfOp: self.if_,
            D.AllocLxOp: self.alloc_lx,
            D.SlotOp: self.slot,
            # By base class: levels below may subclass these ops (see `handler`).
            D.LoadBase: self.load,
            D.StoreBase: self.store,
            D.GatherBase: self.gather,
            D.ComputeBase: self.compute,
            D.RingAllreduceBase: self.ring_allreduce,
            D.RingAllgatherBase: self.ring_allgather,
        }
        for cls in _INT_BINARY:
            self.handlers[cls] = self.int_binary

    # -------------------------------------------------------- driver

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        op, block = self.op, self.op.body.block
        name = op.sym_name.data
        memories: list[object] = [np.arange(self.cores, dtype=np.int64)]
        for i, (array, arg) in enumerate(zip(inputs, op.input_memories)):
            memories.append(self._ddr(array, arg, False, f"input {i} of @{name}"))
        outputs = []
        initial = self.interp.output_contents.get(name)
        if initial is not None and len(initial) != len(op.outputs):
            raise InterpreterError(
                f"@{name} has {len(op.outputs)} outputs, given contents of {len(initial)}"
            )
        for i, (result, arg) in enumerate(zip(op.outputs, op.output_memories)):
            t = result.type
            assert isinstance(t, TensorType)
            label = f"output {i} of @{name}"
            zeros = np.zeros(tuple(t.get_shape()), self.interp.storage(t.element_type))
            outputs.append(self._ddr(zeros, arg, True, label))
            if initial is not None:  # the memory's contents before the kernel runs
                outputs[-1].data[...] = self.interp.take_argument(initial[i], t, label)
        memories += outputs
        self.run_block(block, memories)
        results = []
        for memory in outputs:
            if memory.writers is not None and initial is None:
                self._check_written(memory)
            results.append(memory.data)  # a view: the caller copies what it keeps
        return results

    def _ddr(self, array: np.ndarray, arg: SSAValue, writable: bool, label: str) -> _Ddr:
        if arg.name_hint:
            label += f" (%{arg.name_hint})"
        t = arg.type
        assert isinstance(t, D.DdrType)
        checked = self.cores if self.check else None
        return _Ddr(array, self.interp.held_name(t.element_type), writable, label, checked)

    def run_block(self, block: Block, args: Sequence[object]) -> list:
        values = self.values
        values.update(zip(block.args, args))
        for op in block.ops:
            operands = [values[v] for v in op.operands]
            if isinstance(op, (scf.YieldOp, D.EndOp)):
                return operands
            handler = self.handler(op)
            try:
                results = handler(op, operands)
            except _Located:  # from an op nested in this one
                raise
            except (InterpreterError, ValueError, TypeError, IndexError) as error:
                raise self.error(op, str(error)) from None
            values.update(zip(op.results, results))
        return []

    def handler(self, op: Operation) -> Callable[[Operation, list], list]:
        cls = type(op)
        found = self.handlers.get(cls)
        if found is None:
            base = next((b for b in cls.__mro__ if b in self.handlers), None)
            if base is None:
                raise self.error(op, "the dataflow interpreter cannot run this op in a kernel")
            found = self.handlers[cls] = self.handlers[base]
        return found

    def error(self, op: Operation, message: str) -> InterpreterError:
        return _Located(f"{op_label(op)} (kernel @{self.op.sym_name.data}): {message}")

    # -------------------------------------------------------- arith and scf

    def constant(self, op: arith.ConstantOp, operands: list) -> list:
        value = op.value
        if isinstance(value, IntegerAttr):
            return [_signed(value.value.data, _width(op.result.type))]
        if isinstance(value, FloatAttr):
            return [np.asarray(value.value.data)]
        raise InterpreterError(f"unsupported constant {value} in a kernel")

    def int_binary(self, op: Operation, operands: list) -> list:
        width = self._width_of(op, op.results[0])
        fast = _INT_SCALAR.get(type(op)) if width == 64 else None
        scalar = _scalar_pair(operands) if fast is not None else None
        if scalar is not None:  # the same on every core: Python ints, no numpy calls
            result = fast(*scalar)
            if result is not None and -(1 << 63) <= result < 1 << 63:
                return [np.array(result, dtype=np.int64)]
        fn, unsigned = _INT_BINARY[type(op)]
        a, b = (_as_int(x, width, unsigned) for x in operands)
        return [_signed(fn(a, b), width)]

    def cmpi(self, op: arith.CmpiOp, operands: list) -> list:
        predicate = op.predicate.value.data
        fn, unsigned = _CMPI[predicate]
        width = self._width_of(op, op.lhs)
        scalar = _scalar_pair(operands) if width == 64 else None
        if scalar is not None and (not unsigned or min(scalar) >= 0):
            compare = _CMPI_SCALAR[predicate if predicate < 6 else predicate - 4]
            return [np.array(compare(*scalar))]
        a, b = (_as_int(x, width, unsigned) for x in operands)
        return [np.asarray(fn(a, b))]

    def _width_of(self, op: Operation, value: SSAValue) -> int:
        width = self.widths.get(op)
        if width is None:
            width = self.widths[op] = _width(value.type)
        return width

    def select(self, op: arith.SelectOp, operands: list) -> list:
        cond, a, b = operands
        if isinstance(a, (np.ndarray, np.generic)) and isinstance(b, (np.ndarray, np.generic)):
            return [np.where(cond, a, b)]
        u = _uniform(cond)
        if u is None:
            raise InterpreterError(
                "selects between buffers with a condition that differs across cores "
                "(use dataflow.slot for a per-core choice)"
            )
        return [a if u else b]

    def index_cast(self, op: Operation, operands: list) -> list:
        (x,) = operands
        source, target = _width(op.operands[0].type), _width(op.results[0].type)
        return [_signed(_as_int(x, source, False), target)]

    def _uniform_operand(self, value: object, what: str) -> int:
        u = _uniform(value)
        if u is None:
            a = np.asarray(value)
            first = int(a.flat[0])
            core = int(np.argmax(a != first))
            raise InterpreterError(
                f"the {what} differs across cores (core 0: {first}, core {core}: "
                f"{int(a[core])}); a kernel's loop bounds and branch conditions must be "
                "the same on every core"
            )
        return int(u)

    def for_(self, op: scf.ForOp, operands: list) -> list:
        lb, ub, step = (
            self._uniform_operand(v, what)
            for v, what in zip(operands[:3], ("lower bound", "upper bound", "step"))
        )
        if step <= 0:
            raise InterpreterError(f"the step must be positive, got {step}")
        carried = list(operands[3:])
        iv_width = _width(op.lb.type)
        for i in range(lb, ub, step):
            carried = self.run_block(op.body.block, [_signed(i, iv_width), *carried])
        return carried

    def if_(self, op: scf.IfOp, operands: list) -> list:
        taken = self._uniform_operand(operands[0], "scf.if condition")
        region = op.true_region if taken else op.false_region
        if not region.blocks:
            return []
        return self.run_block(region.block, [])

    # -------------------------------------------------------- buffers

    def alloc_lx(self, op: D.AllocLxOp, operands: list) -> list:
        t = op.buffer.type
        assert isinstance(t, D.LxType)
        shape = t.get_shape()
        name = self.interp.held_name(t.element_type)
        array = np.zeros((self.cores, *shape), held_dtype(name))
        return [_Lx(_Root(array), (), shape, name, self.cores)]

    def slot(self, op: D.SlotOp, operands: list) -> list:
        buffer, index = operands
        return [buffer.slot(index, buffer.shape[0])]

    def _box(self, offsets: Sequence[object], extents: Sequence[int], shape: Sequence[int]) -> _Box:
        if self.box_feed is not None:
            return next(self.box_feed)
        box = _Box(offsets, extents, shape, self.cores)
        if self.box_log is not None:
            self.box_log.append(box)
        return box

    def load(self, op: D.LoadBase, operands: list) -> list:
        source: _Ddr = operands[0]
        offsets = operands[1:-1]
        dest: _Lx = operands[-1]
        static = self.interp.loads.get(op)
        if static is None:  # (perm, the pad value): xDSL's accessors are slow per move
            static = (D.ints(op.perm), _fill(op.pad_value, source.name))
            self.interp.loads[op] = static
        perm, fill = static
        box = self._box(offsets, D._box_shape(dest.shape, perm), source.shape)
        tile = box.gather(source.data, fill)
        if perm:
            tile = tile.transpose([0] + [p + 1 for p in perm])
        dest.write(tile, fresh=True)  # a new array, or a view of DDR (then copied)
        return []

    def store(self, op: D.StoreBase, operands: list) -> list:
        source: _Lx = operands[0]
        dest: _Ddr = operands[1]
        if not dest.writable:
            raise InterpreterError(f"stores into {dest.label}, which is read-only")
        box = self._box(operands[2:], source.shape, dest.shape)
        value = source.read()
        if value.dtype != dest.array.dtype:  # f16 held in float32
            value = converted(value, dest.array.dtype)
        if dest.writers is None:
            box.scatter(dest.array, value)
            return []
        # Which core wrote each element of the box before and after this store (-1:
        # none, or outside the tensor); values are compared only where another did.
        cores = np.arange(self.cores, dtype=dest.writers.dtype).reshape((-1,) + (1,) * box.rank)
        checks = []
        writers = box.gather(dest.writers, -1)
        other = (writers >= 0) & (writers != cores)
        if other.any():
            checks.append((other, writers, box.gather(dest.array, 0), "earlier"))
        box.scatter(dest.array, value)
        box.scatter(dest.writers, np.broadcast_to(cores, value.shape))
        writers = box.gather(dest.writers, -1)
        other = (writers >= 0) & (writers != cores)
        if other.any():  # a later core won an element this core wrote too
            checks.insert(0, (other, writers, box.gather(dest.array, 0), "in this store"))
        for other, writers, values, when in checks:
            clash = other & _differ(values, value)
            if clash.any():
                core, *position = (int(i) for i in np.argwhere(clash)[0])
                at = (core, *position)
                raise InterpreterError(
                    f"store race on element {list(box.element(core, position))} of "
                    f"{dest.label}: core {core} writes {value[at].item()} here, core "
                    f"{int(writers[at])} wrote {values[at].item()} {when}"
                )
        return []

    def _check_written(self, memory: _Ddr) -> None:
        assert memory.writers is not None
        unwritten = memory.writers[tuple(slice(0, n) for n in memory.shape)] < 0
        if unwritten.any():
            first = [int(i) for i in np.argwhere(unwritten)[0]]
            raise InterpreterError(
                f"{op_label(self.op)}: {int(unwritten.sum())} of {unwritten.size} elements "
                f"of {memory.label} are never written (the first is {first})"
            )

    def gather(self, op: D.GatherBase, operands: list) -> list:
        table: _Ddr = operands[0]
        indices = operands[1].read()
        dest: _Lx = operands[2]
        rows = table.shape[0]
        bad = (indices < 0) | (indices >= rows)
        if bad.any():
            core = int(np.argwhere(bad)[0][0])
            raise InterpreterError(
                f"core {core}: index {indices[bad].flat[0]} is out of range for a table "
                f"of {rows} rows"
            )
        dest.write(table.data[indices])
        return []

    def compute(self, op: D.ComputeBase, operands: list) -> list:
        tile = self.interp.tiles.get(op)
        if tile is None or tile.cores != self.cores:
            tile = self.interp.tiles[op] = _TileOp(op, self.cores, self.interp.half)
        n = tile.inputs
        inputs = [b.read() for b in operands[:n]]
        out: _Lx = operands[n]
        offsets = operands[n + tile.outputs :]
        if offsets and len(offsets) != len(out.shape):
            raise InterpreterError(f"has {len(offsets)} offsets for a rank-{len(out.shape)} output")
        current = out.read() if tile.combine is not None else None
        result = tile.run(inputs, offsets, current)
        if result.dtype != out.dtype:
            raise InterpreterError(
                f"{op.kind.data} gave {result.dtype}, the buffer holds {out.dtype} "
                "(interpreter bug)"
            )
        if result is current and out.is_view():
            return []  # combined in place, in LX
        out.write(result, fresh=not any(result is x for x in inputs))
        return []

    def _groups(
        self, op: D.RingAllreduceBase | D.RingAllgatherBase, value: np.ndarray
    ) -> np.ndarray:
        """[cores, ...] as [blocks, group_size, stride, ...]: a ring group is the cores
        `stride` apart in one block of group_size * stride consecutive cores."""
        size, stride = op.group_size.value.data, op.stride_value
        return value.reshape(self.cores // (size * stride), size, stride, *value.shape[1:])

    def ring_allreduce(self, op: D.RingAllreduceBase, operands: list) -> list:
        (buffer,) = operands
        grouped = self._groups(op, buffer.read())
        kind = op.kind.data
        if kind == "add":
            wide = np.float32 if buffer.name in _FLOAT_NAMES else np.int64
            combined = round_held(grouped.sum(axis=1, dtype=wide, keepdims=True), buffer.name)
        else:
            combined = (np.max if kind == "max" else np.min)(grouped, axis=1, keepdims=True)
        buffer.write(np.broadcast_to(combined, grouped.shape).reshape(self.cores, *buffer.shape))
        return []

    def ring_allgather(self, op: D.RingAllgatherBase, operands: list) -> list:
        part, full = operands
        grouped = self._groups(op, part.read())  # [blocks, size, stride, p0, ...]
        blocks, size, stride = grouped.shape[:3]
        # Per (block, stride) group: the parts stacked along dim 0 in group order.
        stacked = np.moveaxis(grouped, 1, 2).reshape(blocks, 1, stride, *full.shape)
        every = np.broadcast_to(stacked, (blocks, size, stride, *full.shape))
        full.write(every.reshape(self.cores, *full.shape))
        return []
