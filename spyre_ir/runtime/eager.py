"""Eager ATen ops on spyre tensors: one op -> a small graph -> the spyre compiler -> a launch.

The device's fallback kernel (:mod:`spyre_ir.runtime.device`) sends every compute op here.
An op is traced once per *signature* -- the op, and for each argument its shape, strides and
dtype (tensors) or its value (scalars, lists, dtypes) -- with ``make_fx`` on fake tensors and
the same decomposition table as ``torch.compile(backend="spyre")``. The graph is imported to
the ``spyre`` dialect and compiled by ``compile_artifact`` (``spyre-compile``, with its disk
cache), then prepared once. Later calls with the same signature only build the key and launch
the prepared recipe with the tensors' ``DeviceArray`` views on the current stream; the
results are new spyre tensors that own the recipe's output blocks.

An op whose graph the compiler cannot take (no lowering, a dtype numpy lacks, dynamic
shapes, a compile failure) runs on CPU copies of its device arguments instead, with a
:class:`SpyreCpuFallbackWarning` naming the op every time; what it mutates is copied back and
new results are uploaded. A launch the recipe refuses (``LaunchError``) runs that call on CPU
with the same warning and keeps the kernel: the next call tries the card again. In-place (``add_``) and ``out=`` (``add.out``) variants run their
functional twin (``add.Tensor``) and put its result in place.
"""

from __future__ import annotations

import functools
import gc
import itertools
import math
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from spyre_ir.byte_lru import ByteLRU
from spyre_ir.runtime import device, fallbacks
from spyre_ir.runtime.recipe import LaunchError

__all__ = [
    "SpyreCpuFallbackWarning", "cache_bytes", "cache_info", "clear_cache", "launch_on_device",
    "release_cache", "run", "run_on_cpu",
]  # fmt: skip


class SpyreCpuFallbackWarning(UserWarning):
    """An eager op on spyre tensors ran on CPU copies (every time it does, naming the op)."""


@dataclass
class _Kernel:
    """A compiled signature: the prepared recipe and how to rebuild the op's results."""

    prepared: Any
    tensor_slots: list[int]  # positions of tensor arguments among the flattened args
    out_spec: Any  # pytree spec of the op's result
    out_meta: list[tuple[tuple[int, ...], torch.dtype]]  # shape, dtype per flat result
    in_bytes: int = 0  # bytes of the tensor arguments (for the cache's size estimate)


_KERNEL_BYTES = 96 << 10
"""Estimated host bytes of a prepared kernel besides its tensors' bytes (its parsed
recipe module and bookkeeping; measured with tests/test_device_host_memory.py)."""


def _entry_bytes(signature: tuple, entry: Any) -> int:
    """Estimated host bytes a cached signature holds: a prepared kernel keeps its recipe
    module, whose size grows with the tiles of its tensors."""
    if not isinstance(entry, _Kernel):
        return 256  # a reason string or a device mismatch
    nbytes = sum(math.prod(shape) * torch.empty((), dtype=dtype).element_size()
                 for shape, dtype in entry.out_meta)  # fmt: skip
    return _KERNEL_BYTES + nbytes + entry.in_bytes


# signature -> kernel, or why it runs on CPU; bounded (SPYRE_HOST_CACHE_MB, least recently
# used out) and emptied by torch.spyre.memory.empty_cache()
_cache: ByteLRU[tuple, Any] = ByteLRU(_entry_bytes)
_cache_card: Any = None  # the card the cached kernels were prepared for
_lock = threading.Lock()
_kernel_ids = itertools.count()
_stats = {"hits": 0, "compiles": 0, "cpu_fallbacks": 0}


_COLLECT_EVERY = 16
"""Evictions (of kernels and of replay recordings) between two full garbage collections.
An evicted kernel or recording is a cyclic structure of IR that has lived long enough to
reach the oldest generation, which Python collects rarely under torch's ~400k objects:
without these collections a process compiling shape after shape held several MiB of
evicted entries (tests/test_device_host_memory.py). One collection per 16 evictions
costs a few milliseconds a compile."""
_collected_at = 0


def _collect_evicted() -> None:
    global _collected_at
    from spyre_ir.sim import replay

    evicted = _cache.evictions + replay._RECORDINGS.evictions
    if evicted - _collected_at >= _COLLECT_EVERY:
        _collected_at = evicted
        gc.collect()


def clear_cache() -> None:
    """Forget compiled signatures (tests; the disk cache stays)."""
    with _lock:
        _cache.clear()
        for k in _stats:
            _stats[k] = 0


def release_cache() -> None:
    """Drop the compiled signatures (torch.spyre.memory.empty_cache); counters stay."""
    _cache.clear()


def cache_bytes() -> int:
    """Estimated host bytes the compiled signatures hold."""
    return _cache.nbytes


def cache_info() -> dict[str, int]:
    """Counters: cached-signature hits, compiles, CPU fallback runs, cache entries."""
    return {**_stats, "entries": len(_cache), "bytes": _cache.nbytes, "evictions": _cache.evictions}


# ---------------------------------------------------------------------------- signature
def _describe(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("T", value.device.type, tuple(value.shape), tuple(value.stride()), value.dtype)
    if isinstance(value, float):
        return ("f", repr(value))  # repr keeps -0.0 and nan apart from 0.0
    return (type(value).__name__, value)


def _signature(op: torch._ops.OpOverload, flat: list[Any], spec: Any) -> tuple:
    """`spec` (the arguments' nesting) tells `sum(x, [0, 1])` from `f(x, 0, 1)`."""
    return (op, spec, *(_describe(v) for v in flat))


# ------------------------------------------------------------------------------- running
def run(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """Run `op` on spyre tensors: compiled and launched if possible, else on CPU."""
    global _cache_card
    if op._schema.is_mutable:
        return _run_mutating(op, args, kwargs)
    card = device._card()
    if card is not _cache_card:  # prepared recipes belong to one card (reset_card makes another)
        with _lock:
            _cache.clear()
            _cache_card = card
    flat, spec = tree_flatten((args, kwargs))
    if any(isinstance(v, torch.Tensor) and v.numel() == 0 for v in flat):
        return run_on_cpu(op, args, kwargs, warn=False)  # no elements: nothing for the card to do
    key = _signature(op, flat, spec)
    kernel = _cache.get(key)
    if kernel is None:
        mismatch = _device_mismatch(op, args, kwargs, flat)
        kernel = _DeviceMismatch(mismatch) if mismatch else _build(op, flat, spec)
        with _lock:
            _cache.put(key, kernel)
        _collect_evicted()
    if isinstance(kernel, _DeviceMismatch):  # torch's error, every call of this signature
        raise RuntimeError(kernel.message)
    if isinstance(kernel, str):
        return run_on_cpu(op, args, kwargs, reason=kernel)
    _stats["hits"] += 1
    try:
        return _launch(kernel, flat)
    except LaunchError as error:  # this call on CPU; the kernel stays, the next call retries
        reason = f"{_LAUNCH_FAILED} ({error}); the next call tries the card again"
        return run_on_cpu(op, args, kwargs, reason=reason)


@dataclass(frozen=True)
class _DeviceMismatch:
    """A signature mixing devices as torch forbids (a spyre and a CPU tensor of rank > 0)."""

    message: str


def _device_mismatch(op: torch._ops.OpOverload, args: tuple, kwargs: dict,
                     flat: list[Any]) -> str | None:  # fmt: skip
    """Torch's "same device" error for `op` on these arguments, or None when their devices
    may be mixed. Torch's own rules decide (CPU scalars and CPU indices are allowed): the op
    runs on fake tensors of the arguments' devices, whose device propagation checks them."""
    if all(device.is_spyre(v) for v in flat if isinstance(v, torch.Tensor)):
        return None
    from torch._subclasses.fake_tensor import FakeTensorDeviceMismatchError, FakeTensorMode
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes(), FakeTensorMode() as mode:
        fake = tree_map(lambda v: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v,
                        (args, kwargs))  # fmt: skip
        try:
            op(*fake[0], **fake[1])
        except FakeTensorDeviceMismatchError as error:
            return str(error)
        except Exception:  # noqa: BLE001 - any other problem is the op's own to report
            return None
    return None


def _run_mutating(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> Any:
    """`add_` / `add.out` (what torch's structured kernels call for `add` on a backend
    without its own kernel): run the functional twin, then put its results in place."""
    twin = _functional_twin(op)
    if twin is None:
        return run_on_cpu(op, args, kwargs, reason="it mutates its arguments")
    names = [a.name for a in op._schema.arguments]
    bound = dict(zip(names, args))
    bound.update(kwargs)
    targets = _written_arguments(op, args, kwargs)
    if not op._schema.name.endswith("_"):  # an out= variant: next time, come straight here
        device.register_direct(twin)
    twin_kwargs = {a.name: bound[a.name] for a in twin._schema.arguments if a.name in bound}
    twin_args = [twin_kwargs.pop(a.name) for a in twin._schema.arguments
                 if not a.kwarg_only and a.name in twin_kwargs]  # fmt: skip
    result = run(twin, tuple(twin_args), twin_kwargs)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(results) != len(targets):
        return run_on_cpu(op, args, kwargs, reason="its results do not match its out= arguments")
    for target, value in zip(targets, results):
        device.assign(target, value)
    return targets[0] if len(op._schema.returns) == 1 else tuple(targets)


_twins: dict[torch._ops.OpOverload, torch._ops.OpOverload | None] = {}


def _functional_twin(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    """The non-mutating overload computing what `op` writes: `aten.add.Tensor` for
    `aten.add_.Tensor` (same arguments) and for `aten.add.out` (arguments minus `out`)."""
    if op in _twins:
        return _twins[op]
    schema = op._schema
    written = {a.name for a in schema.arguments if a.alias_info and a.alias_info.is_write}
    everything = [(a.name, str(a.type)) for a in schema.arguments]
    inputs = [(a.name, str(a.type)) for a in schema.arguments if a.name not in written]
    base = schema.name.split("::")[-1]
    found = None
    for packet_name in dict.fromkeys((base.rstrip("_"), base)):
        packet = getattr(torch.ops.aten, packet_name, None)
        for overload_name in packet.overloads() if packet is not None else ():
            candidate = getattr(packet, overload_name)
            if candidate._schema.is_mutable:
                continue
            names = [(a.name, str(a.type)) for a in candidate._schema.arguments]
            if names in (everything, inputs) and len(candidate._schema.returns) == len(written):
                found = candidate
                break
        if found is not None:
            break
    _twins[op] = found
    return found


@functools.cache
def _decompositions() -> dict[Any, Any]:
    """torch.compile's table, plus ops torch's composite kernels call on a backend that
    Inductor keeps whole and spyre-ir does not lower (lerp.Tensor; addcmul, addcdiv and
    lerp.Scalar have lowerings that compute as torch's kernels, the decompositions
    round each step)."""
    from torch._decomp import get_decompositions

    from spyre_ir.runtime.backend import spyre_decompositions

    aten = torch.ops.aten
    return {**spyre_decompositions(), **get_decompositions([aten.lerp.Tensor])}


def _build(op: torch._ops.OpOverload, flat: list[Any], spec: Any) -> _Kernel | str:
    """Trace, import and compile one signature; a string says why it cannot run on spyre."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from spyre_ir.lowering.fx_importer import UnsupportedNode, import_graph, unsupported_reason

    slots = [i for i, v in enumerate(flat) if isinstance(v, torch.Tensor)]
    if not slots:
        return "it has no tensor arguments"
    for i in slots:
        if flat[i].dtype not in device.TORCH_TO_NUMPY and flat[i].dtype != torch.bfloat16:
            return f"{flat[i].dtype} tensors are not supported by the runtime"
    overflow = _scalar_overflow(op, flat, spec)
    if overflow is not None:
        return overflow  # torch's CPU kernel raises it (run_on_cpu gives torch's own error)
    cpu_flat = [torch.device("cpu") if isinstance(v, torch.device) else v for v in flat]
    out_spec: list[Any] = []

    def one_op(*tensors: torch.Tensor) -> Any:
        values = list(cpu_flat)
        for i, t in zip(slots, tensors):
            values[i] = t
        args, kwargs = tree_unflatten(values, spec)
        result = op(*args, **kwargs)
        results, structure = tree_flatten(result)
        out_spec.append(structure)
        return results

    examples = [torch.empty_strided(flat[i].shape, flat[i].stride(), dtype=flat[i].dtype)
                for i in slots]  # fmt: skip
    try:
        gm = make_fx(one_op, decomposition_table=_decompositions(), tracing_mode="fake")(*examples)
    except Exception as error:  # noqa: BLE001 - data-dependent ops and the like
        return f"it cannot be traced ({type(error).__name__}: {error})"
    gm.graph.eliminate_dead_code()  # decompositions leave unused casts behind
    gm.recompile()
    outputs = gm.graph.output_node().args[0]
    metas = [o.meta.get("val") if isinstance(o, torch.fx.Node) else o for o in outputs]
    if not metas or not all(isinstance(m, torch.Tensor) for m in metas):
        return "its results are not all tensors"
    for node in gm.graph.nodes:
        if node.op == "call_function":
            reason = unsupported_reason(node)
            if reason is not None:
                return reason
    name = f"eager_{op._schema.name.split('::')[-1]}_{next(_kernel_ids)}"
    try:
        from spyre_ir.passes.compute_in_f16 import takes_or_gives_f32
        from spyre_ir.runtime.artifact import compile_artifact
        from spyre_ir.runtime.backend import Settings, warn_f32_as_f16
        from spyre_ir.runtime.recipe import PreparedRecipe

        card = device._card()
        module = import_graph(gm)
        exact_f32 = Settings.resolve().exact_f32
        in_f16 = not exact_f32 and takes_or_gives_f32(module)
        artifact = compile_artifact(module, card.config, name, exact_f32=exact_f32)
        prepared = PreparedRecipe.from_artifact(artifact, card=card)
    except UnsupportedNode as error:
        return str(error)
    except Exception as error:  # noqa: BLE001 - a compiler bug must not break eager code
        return f"{_COMPILE_FAILED} ({type(error).__name__}: {error})"
    if in_f16:
        warn_f32_as_f16(str(op))
    _stats["compiles"] += 1
    out_meta = [(tuple(m.shape), m.dtype) for m in metas]
    in_bytes = sum(flat[i].numel() * flat[i].element_size() for i in slots)
    return _Kernel(prepared, slots, out_spec[0], out_meta, in_bytes)


_CHECKED_SCALARS = {"masked_fill": ("value",), "clamp": ("min", "max"), "clamp_min": ("min",),
                    "clamp_max": ("max",), "add": ("alpha",), "sub": ("alpha",)}  # fmt: skip
"""Scalars torch's CPU kernels convert to the tensor's dtype with a range check (an f16
`masked_fill(m, -1e9)` raises "value cannot be converted to type c10::Half without
overflow"); the decomposed graphs lose that check (masked_fill becomes a `where`, clamp
computes in f32), so eager checks them before tracing."""


def _scalar_overflow(op: torch._ops.OpOverload, flat: list[Any], spec: Any) -> str | None:
    from spyre_ir.lowering.fx_importer import scalar_overflow

    names = _CHECKED_SCALARS.get(op._schema.name.split("::")[-1].rstrip("_"))
    if not names:
        return None
    args, kwargs = tree_unflatten(flat, spec)
    if not args or not isinstance(args[0], torch.Tensor):
        return None
    bound = {a.name: v for a, v in zip(op._schema.arguments, args)} | kwargs
    for name in names:
        reason = scalar_overflow(bound.get(name), args[0].dtype)
        if reason is not None:
            return reason
    return None


def _launch(kernel: _Kernel, flat: list[Any]) -> Any:
    tensors = [flat[i] for i in kernel.tensor_slots]
    results = launch_on_device(kernel.prepared, tensors, kernel.out_meta)
    return tree_unflatten(results, kernel.out_spec)


def launch_on_device(prepared: Any, tensors: list[torch.Tensor],
                     out_meta: list[tuple[tuple[int, ...], torch.dtype]]) -> list[torch.Tensor]:  # fmt: skip
    """Launch a prepared recipe on the current stream with spyre tensors as DeviceArray
    arguments (CPU tensors are uploaded first); results are spyre tensors of the given
    shapes and dtypes that own the recipe's output blocks."""
    arrays = []
    for t in tensors:
        if not device.is_spyre(t):
            t = device.upload(t)
        arrays.append(device.device_array(t))
    # f32 results the card computed as 16-bit floats come back as float32 arrays of their
    # DLFloat16 values: through fp16 they would overflow past 65504 (x * 1e5 gave inf)
    wide = [dtype == torch.float32 for _shape, dtype in out_meta]
    outs = prepared.launch(arrays, stream=device._card().current_stream(), float32_results=wide)
    results = []
    for array, (shape, dtype) in zip(outs, out_meta, strict=True):
        bits_of_bf16 = dtype == torch.bfloat16 and array.dtype == np.uint16
        result = device.tensor_from_array(array, torch.bfloat16 if bits_of_bf16 else None)
        if result.dtype != dtype:  # e.g. an f32 graph computed in f16 returns f16 blocks
            result = result.to(dtype)
        if tuple(result.shape) != shape:
            raise RuntimeError(
                f"spyre: kernel returned shape {tuple(result.shape)}, expected {shape}"
            )
        results.append(result)
    return results


def _with_strides(result: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if result.numel() <= 1 or result.stride() == like.stride():
        return result
    if 0 in like.stride():  # an expanded view: rebuild it from its distinct elements
        index = tuple(slice(0, 1) if s == 0 else slice(None) for s in like.stride())
        return result[index].expand(like.shape)
    return device.empty_strided(like.shape, like.stride(), like.dtype).copy_(result)


# --------------------------------------------------------------------------- CPU fallback
_COMPILE_FAILED = "compiling it failed"
_LAUNCH_FAILED = "its launch failed"


def _warn_fallback(op: torch._ops.OpOverload, reason: str) -> None:
    """Every CPU run warns (a CPU fallback is never silent; Python's warning filters decide
    what is shown) and is recorded with its kind (runtime/fallbacks.py)."""
    kind = ("compile-error" if reason.startswith(_COMPILE_FAILED)
            else "launch-error" if reason.startswith(_LAUNCH_FAILED) else "unsupported")  # fmt: skip
    fallbacks.record(str(op), reason, kind, "eager")
    warnings.warn(f"spyre: {op} runs on CPU copies of device memory: {reason}",
                  SpyreCpuFallbackWarning, stacklevel=3)  # fmt: skip


def run_on_cpu(op: torch._ops.OpOverload, args: tuple, kwargs: dict, *, reason: str = "",
               warn: bool = True) -> Any:  # fmt: skip
    """Run `op` on host copies of its spyre arguments; copy what it wrote back to the card
    and upload new results. Results that are (mutated) arguments come back as the original
    spyre tensors."""
    originals: dict[int, torch.Tensor] = {}

    def to_cpu(value: Any) -> Any:
        if device.is_spyre(value):
            host = device.to_host(value)
            originals[id(host)] = value
            return host
        if isinstance(value, torch.device) and value.type == device.BACKEND:
            return torch.device("cpu")
        return value

    cpu_args, cpu_kwargs = tree_map(to_cpu, (args, kwargs))
    result = op(*cpu_args, **cpu_kwargs)  # a user error (bad shapes...) raises torch's own error
    if warn:  # only now: the op is valid, the device just cannot run it
        _warn_fallback(op, reason)
        _stats["cpu_fallbacks"] += 1
    for written in _written_arguments(op, cpu_args, cpu_kwargs):
        original = originals.get(id(written))
        if original is None:
            continue
        if original.shape != written.shape:
            original.resize_(written.shape)
        original.copy_(written)

    def back(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        original = originals.get(id(value))
        return original if original is not None else device.upload(value)

    return tree_map(back, result)


def _written_arguments(op: torch._ops.OpOverload, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    written = []
    for index, argument in enumerate(op._schema.arguments):
        if argument.alias_info is None or not argument.alias_info.is_write:
            continue
        value = args[index] if index < len(args) else kwargs.get(argument.name)
        values = value if isinstance(value, (list, tuple)) else [value]
        written.extend(v for v in values if isinstance(v, torch.Tensor))
    return written
