"""The ``spyre`` device in PyTorch: PrivateUse1 renamed, implemented in Python.

:func:`setup` (idempotent; run by ``import torch`` through the ``torch.backends`` entry
point, by ``import spyre_ir`` when torch is already imported, or by importing this module)
does what a C++ backend would do, with torch's python-backend helpers
(``torch.utils.backend_registration._setup_privateuseone_for_python_backend``): renames
PrivateUse1 to ``spyre``, registers ``torch.spyre`` (:mod:`spyre_ir.runtime.torch_spyre`), a
hooks object and a device guard, and ONE boxed Python fallback kernel for every ATen op on
the PrivateUse1 dispatch key (:func:`_kernel`). Autograd, ADInplaceOrView (view tracking,
version counters) and composite kernels stay torch's own; only backend work reaches us.

Memory. A spyre tensor is an ordinary ``TensorImpl`` whose storage was built with
``torch._C._construct_storage_from_data_pointer``: its data pointer is a synthetic card
address (never dereferenced by torch) and its size is the tensor's byte size. The storage's
Python object carries a :class:`_BlockOwner` holding the allocator's ``DeviceBlock``; torch
keeps a storage's Python object alive as long as the C++ storage lives (PyObject
preservation), so the owner dies, and frees the block, exactly when the last tensor or view
on that storage dies. The bytes live in the simulated LPDDR5 in torch's strided layout.

What the fallback does with an op:

- views (``op.is_view``) and ``set_``: torch's CPU kernels, redispatched. They only build a
  new ``TensorImpl`` on the same storage with new sizes/strides/offset and copy the key set
  of their input, so the result is a spyre view sharing the block;
- allocation (``empty``, ``empty_strided``, ``resize_``), copies between host and card or
  on the card (``copy_``: h2d / d2h / dma steps on the current stream), ``item()``;
- host-initialised data (``fill_``, ``zero_``, the random fills, ``arange``): computed on
  the host and uploaded, like a data loader would; random numbers come from
  ``torch.spyre``'s generator, seeded by ``torch.manual_seed`` like the CPU one;
- everything else: :mod:`spyre_ir.runtime.eager` (compile through the spyre pipeline and
  launch, or run on CPU copies with a one-time warning).

Host code reads device memory only after synchronizing: copies to the host wait for the
current stream, like torch.cuda's blocking copies.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

BACKEND = "spyre"

__all__ = [
    "BACKEND",
    "array_dtype",
    "assign",
    "device_array",
    "empty_strided",
    "host_view",
    "is_spyre",
    "setup",
    "tensor_from_array",
    "to_host",
    "upload",
]

# Element types numpy shares with torch (DeviceArray dtypes); bfloat16 has no numpy twin.
TORCH_TO_NUMPY = {
    torch.float16: np.dtype(np.float16), torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64), torch.int64: np.dtype(np.int64),
    torch.int32: np.dtype(np.int32), torch.int16: np.dtype(np.int16),
    torch.int8: np.dtype(np.int8), torch.uint8: np.dtype(np.uint8), torch.bool: np.dtype(np.bool_),
}  # fmt: skip
NUMPY_TO_TORCH = {v: k for k, v in TORCH_TO_NUMPY.items()}

_CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_setup_lock = threading.Lock()
_library: torch.library.Library | None = None  # keeps the fallback registration alive
_direct_library: torch.library.Library | None = None  # kernels of single ops (register_direct)
# Synthetic card addresses: region r, byte offset o -> _ADDRESS_BASE + r * _REGION_SPAN + o.
# Only their uniqueness matters (torch compares data pointers, e.g. for overlap checks).
_ADDRESS_BASE = 1 << 44
_REGION_SPAN = 1 << 40


# ------------------------------------------------------------------------- registration
class _Hooks(torch._C._acc.PrivateUse1Hooks):
    """What torch's C++ asks a PrivateUse1 backend (at::PrivateUse1HooksInterface)."""

    def is_available(self) -> bool:
        return True

    def has_primary_context(self, dev_id: int) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class _Guard(torch._C._acc.DeviceGuard):
    """One card, one device index: the guard only names the device type."""

    def type_(self) -> Any:
        return torch._C._autograd.DeviceType.PrivateUse1


def setup(required: bool = True) -> bool:
    """Make ``spyre`` a torch device in this process (safe to call any number of times).

    PrivateUse1 can be renamed once per process: if another backend holds it, this
    raises RuntimeError, or returns False when not `required` (the implicit set-ups on
    import, which must not break ``import torch`` or ``import spyre_ir``)."""
    global _library
    if _library is not None:
        return True
    with _setup_lock:
        if _library is not None:
            return True
        from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

        from spyre_ir.runtime import accelerator, amp, default_backend, torch_spyre

        current = torch._C._get_privateuse1_backend_name()
        if current != "privateuseone":
            if not required:
                return False
            raise RuntimeError(
                f"spyre: PrivateUse1 is already registered as '{current}' in this process; "
                "torch allows one PrivateUse1 backend per process"
            )
        _setup_privateuseone_for_python_backend(
            rename=BACKEND, backend_module=torch_spyre, hook=_Hooks(), device_guard=_Guard()
        )
        library = torch.library.Library("_", "IMPL")  # noqa: TOR901 - a global fallback
        library.fallback(torch._disable_dynamo(_kernel, recursive=True), "PrivateUse1")
        default_backend.install()  # torch.compile(f) on spyre tensors: the spyre backend
        accelerator.install()  # torch.accelerator.synchronize / current_stream: the card's
        amp.install()  # torch.autocast("spyre")
        for op in (*_BACKEND_SPECIFIC_ENTRIES, *_WHOLE_ON_THE_CARD):
            register_direct(op)
        _install_printing()
        _install_storage_clone()
        _fake_tensors_never_touch_the_card()
        torch.serialization.register_package(_SERIALIZATION_PRIORITY, _no_tag, _deserialize)
        _library = library
    return True


def autoload() -> None:
    """Entry point of the ``torch.backends`` group: torch calls it during ``import torch``
    (torch/__init__.py, ``_import_device_backends``). Another autoloaded PrivateUse1
    backend wins quietly rather than breaking ``import torch``."""
    setup(required=False)


def is_spyre(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.device.type == BACKEND


# ----------------------------------------------------------------------------- storage
class _BlockOwner:
    """Frees one DeviceBlock when the storage that carries it dies."""

    __slots__ = ("card", "block", "__weakref__")

    def __init__(self, card: Any, block: Any) -> None:
        self.card, self.block = card, block

    def __del__(self) -> None:
        try:
            self.card.free(self.block)
        except Exception:
            if not sys.is_finalizing():  # at shutdown the allocator may be gone first
                raise


def _card() -> Any:
    from spyre_ir.runtime.card import get_card

    return get_card()


def _new_storage(nbytes: int) -> torch.UntypedStorage:
    """A spyre storage of `nbytes` backed by a fresh block of the card's allocator."""
    device = torch.device(BACKEND, 0)
    if nbytes == 0:
        return torch._C._construct_storage_from_data_pointer(0, device, 0)
    from spyre_ir.runtime.allocator import SpyreOutOfMemoryError

    card = _card()
    try:
        block = card.allocate(nbytes)
    except SpyreOutOfMemoryError as error:
        stats = card.memory_stats()
        raise torch.OutOfMemoryError(
            f"spyre: out of memory: tried to allocate {nbytes} bytes "
            f"({nbytes / 2**30:.2f} GiB) on the card; {error.free} bytes free, "
            f"{stats.allocated_bytes} allocated by tensors, {stats.reserved_bytes} reserved "
            f"({error})"
        ) from None
    address = _ADDRESS_BASE + block.region * _REGION_SPAN + block.offset
    storage = torch._C._construct_storage_from_data_pointer(address, device, nbytes)
    storage.spyre_block = _BlockOwner(card, block)
    return storage


def _clone_storage(storage: torch.UntypedStorage) -> torch.UntypedStorage:
    """A new spyre storage holding a copy of `storage`'s bytes (copied on the card)."""
    nbytes = storage.nbytes()
    clone = _new_storage(nbytes)
    if nbytes:
        source = _on_storage(storage, [nbytes], [1], 0, torch.uint8)
        _copy_on_card(_on_storage(clone, [nbytes], [1], 0, torch.uint8), source)
    return clone


def _install_storage_clone() -> None:
    """`UntypedStorage.clone` (what `copy.deepcopy` of a tensor calls) makes its copy
    with the C++ allocator of the storage's device and a raw byte copy; a Python backend
    has no allocator, so on a spyre storage the process crashed. A spyre storage is
    cloned with a card block of its own and a copy on the card instead."""
    original = torch.UntypedStorage.clone
    if getattr(original, "spyre_aware", False):
        return

    @functools.wraps(original)
    def clone(self: torch.UntypedStorage) -> torch.UntypedStorage:
        if self.device.type == BACKEND:
            return _clone_storage(self)
        return original(self)

    clone.spyre_aware = True  # type: ignore[attr-defined]
    torch.UntypedStorage.clone = clone  # type: ignore[method-assign]


def _owner(t: torch.Tensor) -> _BlockOwner | None:
    return getattr(t.untyped_storage(), "spyre_block", None)


def _storage_elements(shape: Sequence[int], stride: Sequence[int]) -> int:
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, stride))


def _on_storage(storage: torch.UntypedStorage, shape: Sequence[int], stride: Sequence[int],
                offset: int, dtype: torch.dtype) -> torch.Tensor:  # fmt: skip
    t = torch._C._acc.create_empty_tensor((0,), dtype)
    return torch.ops.aten.set_.source_Storage_storage_offset.redispatch(
        _CPU_KEYS, t, storage, offset, list(shape), list(stride)
    )


def empty_strided(shape: Sequence[int], stride: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """A new spyre tensor (contents undefined) owning one block of device memory."""
    shape, stride = [int(n) for n in shape], [int(s) for s in stride]
    itemsize = torch.empty((), dtype=dtype, device="meta").element_size()
    storage = _new_storage(_storage_elements(shape, stride) * itemsize)
    return _on_storage(storage, shape, stride, 0, dtype)


def tensor_from_array(array: Any, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A spyre tensor taking ownership of a runtime DeviceArray's block (e.g. an output of
    ``PreparedRecipe.launch``): the block is freed when the tensor and its views die.
    `dtype` reinterprets same-sized elements (bf16 travels as its uint16 bits)."""
    dtype = dtype or NUMPY_TO_TORCH[array.dtype]
    device = torch.device(BACKEND, 0)
    if array.numel == 0:
        array.card.free(array.block)
        storage = torch._C._construct_storage_from_data_pointer(0, device, 0)
    else:
        block = array.block
        nbytes = (
            array.offset + _storage_elements(array.shape, array.strides)
        ) * array.dtype.itemsize
        address = _ADDRESS_BASE + block.region * _REGION_SPAN + block.offset
        storage = torch._C._construct_storage_from_data_pointer(address, device, nbytes)
        storage.spyre_block = _BlockOwner(array.card, block)
    return _on_storage(storage, array.shape, array.strides, array.offset, dtype)


# Called with a storage's block before its bytes are reached through `device_array` or
# `host_view` (every read or write of a spyre tensor's memory): resident.py registers one,
# so a KV cache whose row-major bytes lag behind its kept stick image catches up first.
before_access: list[Callable[[Any], None]] = []


def device_array(t: torch.Tensor) -> Any:
    """The runtime's view (DeviceArray) of a spyre tensor's memory: same block, shape,
    element strides and offset; bfloat16 as its raw uint16 bits (the recipe's convention)."""
    from spyre_ir.runtime.card import DeviceArray

    owner = _owner(t)
    if owner is None:
        raise RuntimeError("spyre: tensor has no device memory (empty or not a spyre tensor)")
    for hook in before_access:
        hook(owner.block)
    return DeviceArray(owner.card, owner.block, tuple(t.shape), tuple(t.stride()),
                       t.storage_offset(), array_dtype(t.dtype))  # fmt: skip


def array_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of a DeviceArray holding `dtype` elements."""
    return np.dtype(np.uint16) if dtype == torch.bfloat16 else TORCH_TO_NUMPY[dtype]


def host_view(t: torch.Tensor) -> torch.Tensor:
    """A CPU tensor aliasing the simulated LPDDR5 bytes of spyre tensor `t` (same shape,
    strides and offset); it keeps `t`'s block allocated while it lives. Reads see memory
    as it is now: synchronize first."""
    if t.numel() == 0:
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
    owner = _owner(t)
    if owner is None:
        raise RuntimeError("spyre: tensor has no device memory")
    for hook in before_access:
        hook(owner.block)
    storage_bytes = t.untyped_storage().nbytes()
    raw = owner.card.memory.view(owner.block.region, owner.block.offset, storage_bytes)
    flat = torch.from_numpy(raw)
    itemsize = t.element_size()
    flat = flat[: storage_bytes - storage_bytes % itemsize].view(t.dtype)
    view = flat.as_strided(t.shape, t.stride(), t.storage_offset())
    view.spyre_block = owner  # the block stays allocated while the view lives
    return view


# ------------------------------------------------------------------------ serialization
# torch.load restores a "spyre:0" storage with the PrivateUse1 deserializer, which asks
# the C++ allocator for memory; a Python backend has none (the process would crash), so
# this deserializer runs first (lower number = earlier; torch's own start at 10).
_SERIALIZATION_PRIORITY = 5


def _no_tag(storage: Any) -> None:
    return None  # saving: torch's own PrivateUse1 tagger names the location


def _deserialize(storage: Any, location: str) -> torch.UntypedStorage | None:
    """A loaded host storage (bytes) -> a new spyre storage with the same bytes."""
    if not location.startswith(BACKEND):
        return None
    _check_index(location)
    nbytes = storage.nbytes()
    card_storage = _new_storage(nbytes)
    if nbytes:
        host = torch.empty(0, dtype=torch.uint8).set_(storage.untyped(), 0, (nbytes,), (1,))
        _upload_into(_on_storage(card_storage, [nbytes], [1], 0, torch.uint8), host)
    return card_storage


# ------------------------------------------------------------------------------ copies
def _stream() -> Any:
    return _card().current_stream()


def _upload_into(dst: torch.Tensor, src: torch.Tensor) -> None:
    """Enqueue host -> card: `src` (CPU, broadcastable to dst) into spyre tensor `dst`.
    The host data is snapshotted now, so later changes to `src` do not leak in."""
    from spyre_ir.cost_model import host_transfer_s

    snapshot = torch.empty(dst.shape, dtype=dst.dtype)
    snapshot.copy_(src)
    config = _card().config
    # Resolve the destination bytes now: by the time the step runs, `dst` may have been
    # given another storage (see `assign`); its block stays alive through `target`.
    target = host_view(dst)

    def run() -> float:
        target.copy_(snapshot)
        return host_transfer_s(snapshot.nbytes, config)

    _stream().enqueue("h2d", run, f"h2d {tuple(dst.shape)} {dst.dtype}", snapshot.nbytes)


def upload(src: torch.Tensor) -> torch.Tensor:
    """A new spyre tensor with CPU tensor `src`'s values and strides (h2d enqueued)."""
    src = src.detach()
    dst = empty_strided(src.shape, src.stride(), src.dtype)
    if src.numel():
        _upload_into(dst, src)
    return dst


def to_host(src: torch.Tensor) -> torch.Tensor:
    """Card -> host: a new CPU tensor with `src`'s values (and strides, unless they
    overlap, as in an expanded view), after the current stream's pending work."""
    from spyre_ir.cost_model import host_transfer_s

    if src.numel() == 0:
        return torch.empty_strided(src.shape, src.stride(), dtype=src.dtype)
    config = _card().config
    source = host_view(src)
    landed: list[torch.Tensor] = []

    def run() -> float:
        landed.append(source.clone())
        return host_transfer_s(src.numel() * src.element_size(), config)

    stream = _stream()
    stream.enqueue(
        "d2h", run, f"d2h {tuple(src.shape)} {src.dtype}", src.numel() * src.element_size()
    )
    stream.synchronize()
    return landed[0]


def _copy_on_card(dst: torch.Tensor, src: torch.Tensor) -> None:
    """Enqueue card -> card (broadcast and dtype conversion included) on the dma engine."""
    from spyre_ir.cost_model import device_copy_s

    config = _card().config
    nbytes = dst.numel() * dst.element_size()
    target, source = host_view(dst), host_view(src)

    def run() -> float:
        # clone first: source and destination may overlap (x.copy_(x.flip(0)) style)
        target.copy_(source.clone())
        return device_copy_s(nbytes, config)

    _stream().enqueue("dma", run, f"copy {tuple(dst.shape)} {dst.dtype}", nbytes)


def _copy_(dst: torch.Tensor, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    if dst.numel() == 0:
        return dst
    if dst is src or _same_view(dst, src):
        # nothing to move (AOTAutograd's write-back of an input the graph updated in place,
        # see runtime/resident.py); the version bump that follows changes no value
        from spyre_ir.runtime import resident

        resident.note_copy_onto_itself(dst)
        return dst
    if is_spyre(dst) and is_spyre(src):
        _copy_on_card(dst, src)
    elif is_spyre(dst):
        _upload_into(dst, src.detach())
    else:
        dst.copy_(to_host(src))
    return dst


def _same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (is_spyre(a) and is_spyre(b) and a.data_ptr() == b.data_ptr() and a.dtype == b.dtype
            and a.shape == b.shape and a.stride() == b.stride())  # fmt: skip


def assign(target: torch.Tensor, value: torch.Tensor) -> None:
    """Make spyre tensor `target` hold `value` (an op's fresh result), as an out= or
    in-place kernel must. When nothing else shares `target`'s storage (use count 2: the
    tensor and its storage's Python object) and the layouts match, `target` simply takes
    over `value`'s storage; otherwise the values are copied on the card."""
    same = (target.shape == value.shape and target.dtype == value.dtype
            and target.stride() == value.stride())  # fmt: skip
    if same and torch._C._storage_Use_Count(target.untyped_storage()._cdata) <= 2:
        torch.ops.aten.set_.source_Tensor.redispatch(_CPU_KEYS, target, value)
        return
    if target.shape != value.shape:
        target.resize_(value.shape)
    _copy_(target, value)


def _copy_from(src: torch.Tensor, dst: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    return _copy_(dst, src, non_blocking)


def _copy_from_and_resize(src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    if dst.shape != src.shape:
        dst.resize_(src.shape)
    return _copy_(dst, src)


def _local_scalar_dense(t: torch.Tensor) -> Any:
    return to_host(t).item()


# --------------------------------------------------------------------------- factories
def _empty(size: Sequence[int], dtype: torch.dtype | None = None, layout: Any = None,
           device: Any = None, pin_memory: Any = None,
           memory_format: Any = None) -> torch.Tensor:  # fmt: skip
    _check_index(device)
    dtype = dtype or torch.get_default_dtype()
    fmt = memory_format if memory_format is not None else torch.contiguous_format
    stride = torch.empty(list(size), device="meta", memory_format=fmt).stride()
    return empty_strided(size, stride, dtype)


def _check_index(where: Any) -> None:
    index = torch.device(where).index if where is not None else None
    if index not in (None, 0):
        raise RuntimeError(f"spyre: device index {index} does not exist (one card: spyre:0)")


def _empty_strided(size: Sequence[int], stride: Sequence[int], dtype: torch.dtype | None = None,
                   layout: Any = None, device: Any = None,
                   pin_memory: Any = None) -> torch.Tensor:  # fmt: skip
    _check_index(device)
    return empty_strided(size, stride, dtype or torch.get_default_dtype())


def _resize_(t: torch.Tensor, size: Sequence[int], memory_format: Any = None) -> torch.Tensor:
    """Grow the storage (new block, old bytes copied) when the new shape needs more."""
    fmt = memory_format if memory_format is not None else torch.contiguous_format
    stride = torch.empty(list(size), device="meta", memory_format=fmt).stride()
    need = (_storage_elements(size, stride) + t.storage_offset()) * t.element_size()
    storage = t.untyped_storage()
    if need > storage.nbytes():
        grown = _new_storage(need)
        if storage.nbytes():
            old = _on_storage(storage, [storage.nbytes()], [1], 0, torch.uint8)
            new = _on_storage(grown, [storage.nbytes()], [1], 0, torch.uint8)
            _copy_on_card(new, old)
        storage = grown
    return torch.ops.aten.set_.source_Storage_storage_offset.redispatch(
        _CPU_KEYS, t, storage, t.storage_offset(), list(size), list(stride)
    )


# ---------------------------------------------------------------- host-initialised data
_RANDOM_FILLS = {"normal_", "uniform_", "random_", "bernoulli_", "exponential_",
                 "geometric_", "log_normal_", "cauchy_"}  # fmt: skip
_HOST_INITIALISED = _RANDOM_FILLS | {"fill_", "zero_", "arange", "linspace", "randperm"}


def _host_initialised(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """Run a data-initialising op on host copies and upload what it wrote."""
    from spyre_ir.runtime import eager, torch_spyre

    if op._schema.name.split("::")[-1] in _RANDOM_FILLS and kwargs.get("generator") is None:
        kwargs = {**kwargs, "generator": torch_spyre.generator()}
    return eager.run_on_cpu(op, args, kwargs, warn=False)


# ------------------------------------------------------------------------------ kernel
def _view(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    if not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CPU"):
        raise NotImplementedError(f"spyre: view op {op} has no storage-sharing kernel")
    return op.redispatch(_CPU_KEYS, *args, **kwargs)


_HANDLERS: dict[str, Callable[..., Any]] = {
    "aten::empty.memory_format": _empty,
    "aten::empty_strided": _empty_strided,
    "aten::copy_": _copy_,
    "aten::_copy_from": _copy_from,
    "aten::_copy_from_and_resize": _copy_from_and_resize,
    "aten::_local_scalar_dense": _local_scalar_dense,
    "aten::resize_": _resize_,
}


Route = Callable[[torch._ops.OpOverload, tuple, dict], Any]
_routes: dict[torch._ops.OpOverload, Route] = {}  # op -> how the kernel handles it


def _route(op: torch._ops.OpOverload) -> Route:
    name = op._schema.name
    handler = _HANDLERS.get(f"{name}.{op._overloadname}" if op._overloadname else name)
    handler = handler or _HANDLERS.get(name)
    if handler is not None:
        return lambda op, args, kwargs: handler(*args, **kwargs)
    if op.is_view or name.startswith("aten::set_"):
        return _view
    if name.split("::")[-1] in _HOST_INITIALISED:
        return _host_initialised
    from spyre_ir.runtime import eager

    return eager.run


def _kernel(op: torch._ops.OpOverload, *args: Any, **kwargs: Any) -> Any:
    """The PrivateUse1 fallback: every ATen op on spyre tensors that torch does not
    handle itself arrives here (below autograd)."""
    route = _routes.get(op)
    if route is None:
        route = _routes[op] = _route(op)
    return route(op, args, kwargs)


_direct: set[torch._ops.OpOverload] = set()

# Ops whose composite kernel hands a backend without its own kernel to a stub that raises
# (``convolution`` -> ``convolution_overrideable``: "NotImplementedError ... use
# TORCH_LIBRARY_IMPL to override"), so the fallback kernel would never see them: they are
# registered as PrivateUse1 kernels of their own, which compile them or run them on CPU
# with a warning like any other op.
_BACKEND_SPECIFIC_ENTRIES = (
    torch.ops.aten.convolution.default,
    torch.ops.aten.convolution_backward.default,
)


# Ops whose composite kernel would run its steps as eager ops, each result stored in the
# resident fp16 bytes: |65504| is DLFloat16's 65536, fp16's inf once stored, so isinf(65504)
# would be True. As kernels of their own they compile whole (one graph: the steps stay on
# the card in DLFloat16, docs/dlfloat16.md) or run on CPU with a warning.
_WHOLE_ON_THE_CARD = (torch.ops.aten.isinf.default, torch.ops.aten.isfinite.default)


def register_direct(op: torch._ops.OpOverload) -> None:
    """Make `op` itself a PrivateUse1 kernel (it then wins over torch's composite kernel).

    For a structured op like ``add.Tensor`` torch's backend-generic kernel allocates an
    output and calls ``add.out``, which the eager path turns back into ``add.Tensor``:
    registering the functional op directly skips that allocation and round trip."""
    global _direct_library
    if op in _direct:
        return
    _direct.add(op)
    if _direct_library is None:
        _direct_library = torch.library.Library("aten", "IMPL")  # noqa: TOR901
    kernel = torch._disable_dynamo(functools.partial(_kernel, op), recursive=True)
    _direct_library.impl(op, kernel, "PrivateUse1")


def _fake_tensors_never_touch_the_card() -> None:
    """FakeTensorMode (dynamo's tracing, AOTAutograd) must never run a spyre kernel.

    ``torch.tensor(data, device="spyre")`` and ``t.new_tensor(data)`` (transformers' caches
    call them) build a CPU tensor and move it with the Python dispatch key excluded; when
    the fake mode believes the device is available it lets that move run for real, and a
    Python fallback kernel cannot be called with a mode on the stack (torch's trampoline
    asserts ``func != nullptr`` in python_dispatch.cpp). The mode asks
    ``_is_privateuse1_backend_available`` (torch/_subclasses/fake_tensor.py,
    ``avoid_device_init``); answering False for spyre makes it keep such a tensor on the
    CPU and fake the move, as it does for CUDA on a machine without one."""
    from torch._subclasses import fake_tensor

    available = fake_tensor._is_privateuse1_backend_available
    if getattr(available, "spyre_aware", False):
        return

    def spyre_aware() -> bool:
        return torch._C._get_privateuse1_backend_name() != BACKEND and available()

    spyre_aware.spyre_aware = True  # type: ignore[attr-defined]
    fake_tensor._is_privateuse1_backend_available = spyre_aware


# ---------------------------------------------------------------------------- printing
def _install_printing() -> None:
    """Tensor printing formats values with dozens of small ops (abs, masked_select, ...);
    for a spyre tensor the values are formatted from one host copy instead, and torch's
    own code adds the suffixes (device, dtype, grad_fn) from the device tensor."""
    from torch import _tensor_str

    original = _tensor_str._str

    def _str(self: torch.Tensor, *, tensor_contents: str | None = None) -> str:
        if tensor_contents is None and self.device.type == BACKEND and self.layout == torch.strided:
            tensor_contents = _contents(self, _tensor_str)
        return original(self, tensor_contents=tensor_contents)

    _tensor_str._str = _str


@torch._disable_dynamo  # dynamo tracing a print graph-breaks here rather than tracing the copy
def _contents(t: torch.Tensor, tensor_str: Any) -> str | None:
    """The formatted values of spyre tensor `t`, or "..." when it has none to show.

    Printing must never raise: dynamo's messages and structured trace logs print tensors
    while a FakeTensorMode is active (which would turn the host copy's ops into fake ones),
    and a FakeTensor (or any tensor without device memory) has no values to read, so the
    copy runs with every dispatch mode set aside, and "..." stands for missing memory, as
    torch prints meta tensors."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._python_dispatch import _disable_current_modes

    indent = len(
        "tensor(" if type(t) in (torch.Tensor, torch.nn.Parameter) else f"{type(t).__name__}("
    )
    if t.numel() == 0:
        return "[]"
    if isinstance(t, FakeTensor):
        return None  # torch prints it as "FakeTensor(..., size=...)" itself
    if _owner(t) is None:
        return "..."
    with _disable_current_modes(), torch.no_grad():
        return tensor_str._tensor_str(to_host(t.detach()), indent)
