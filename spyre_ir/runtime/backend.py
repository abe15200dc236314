"""The ``torch.compile(model, backend="spyre")`` backend.

Registration: only through the ``torch_dynamo_backends`` entry point in pyproject.toml.
torch/_dynamo/backends/registry.py loads the entry point on the first lookup of "spyre" and
then calls ``register_backend`` itself, so this module must NOT call ``register_backend``
(that would make the second registration raise "duplicate name: spyre").

Road of one FX graph from dynamo:

1. AOTAutograd (``torch._dynamo.backends.common.aot_autograd``) functionalises it and applies
   Inductor's decomposition table plus the CPU-flash-attention decomposition, so
   ``F.scaled_dot_product_attention`` reaches us as math ops (bmm, amax, exp, sum, div, ...).
   Under ``torch.no_grad()`` (or when no output needs grad) AOTAutograd calls the
   *inference compiler*; with grads enabled it traces a joint graph, gives the forward half
   to the *forward compiler* (the same function here) and the backward half, which only
   runs if ``.backward()`` is called, runs eagerly on CPU.
2. The forward compiler asks ``fx_importer.unsupported_reason(node)`` about every node and
   partitions the graph with ``torch.fx``'s CapabilityBasedPartitioner. Every unsupported
   node stays in the outer graph as CPU code, with one warning per op kind per process
   (``SPYRE_STRICT=1``: :class:`SpyreUnsupportedError` instead).
3. Each supported partition is imported to the ``spyre`` tensor dialect
   (``fx_importer.import_graph``), lowered through the levels in ``LOWERINGS`` (dataflow, units),
   dumped when ``SPYRE_IR_DUMP=DIR`` is set, and replaced in the outer graph by a
   :class:`SpyrePartition` that runs it on the executor chosen by ``SPYRE_EXECUTOR``.

Data crossing the numpy boundary: f32, f16, int64, int32 and bool tensors go as the numpy
dtype of the same name; bf16 (not a numpy dtype) goes as float32 holding exactly the bf16
values. The importer types such values as bf16 from the FX metadata, the interpreter rounds
its results to bf16, and whatever float array comes back is cast to the dtype FX recorded
for that output (round-to-nearest-even for bf16/f16).
"""

from __future__ import annotations

import functools
import itertools
import operator
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import fx

aten = torch.ops.aten

__all__ = [
    "EXECUTORS",
    "LOWERINGS",
    "SpyreConfigError",
    "SpyrePartition",
    "SpyreUnsupportedError",
    "get_executor",
    "reset_warnings",
    "spyre_backend",
    "spyre_decompositions",
]


class SpyreUnsupportedError(RuntimeError):
    """An op cannot run on spyre and ``SPYRE_STRICT=1`` forbids the CPU fallback.

    Under ``torch.compile`` dynamo wraps it in ``torch._dynamo.exc.BackendCompilerFailed``
    (its ``inner_exception`` is this error; the message repeats ours).
    """

    def __init__(self, op: str, reason: str, others: Sequence[str] = ()) -> None:
        self.op, self.reason, self.others = op, reason, tuple(others)
        more = f" (also unsupported: {', '.join(self.others)})" if self.others else ""
        super().__init__(
            f"spyre: {op} is not supported: {reason}{more}. "
            "SPYRE_STRICT=1 forbids running it on CPU; unset SPYRE_STRICT to fall back."
        )


class SpyreConfigError(ValueError):
    """Bad SPYRE_* setting or backend option."""


# ----------------------------------------------------------------------------- settings
_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    strict: bool = False
    dump_dir: Path | None = None
    executor: str = "reference"

    @classmethod
    def resolve(cls, options: dict[str, Any] | None = None) -> Settings:
        """Environment first, then ``torch.compile(..., options={...})`` on top."""
        env = os.environ
        opts = dict(options or {})
        unknown = set(opts) - {"strict", "ir_dump", "executor"}
        if unknown:
            raise SpyreConfigError(
                f"spyre: unknown backend option(s) {sorted(unknown)}; known: executor, ir_dump, strict"
            )
        strict = opts.get("strict", env.get("SPYRE_STRICT", "").strip().lower() in _TRUE)
        dump = opts.get("ir_dump", env.get("SPYRE_IR_DUMP") or None)
        executor = opts.get("executor", env.get("SPYRE_EXECUTOR") or "reference")
        get_executor(executor)  # fail at compile time on a bad name
        return cls(bool(strict), Path(dump) if dump else None, executor)


# ---------------------------------------------------------------------------- executors
# An executor factory takes the IR of one partition ({level name: module}, in lowering
# order) and returns a function from numpy inputs to numpy outputs. ``level`` names the IR
# level it consumes; later executors (simulator, device) will consume later levels.
Runner = Callable[[list[np.ndarray]], list[np.ndarray]]


@dataclass(frozen=True)
class Executor:
    name: str
    level: str
    factory: Callable[[Any], Runner]


def _reference(module: Any) -> Runner:
    from spyre_ir.interp.tensor import run_module

    return lambda arrays: list(run_module(module, arrays, entry="main"))


def _dataflow(module: Any) -> Runner:
    from spyre_ir.interp.dataflow import run_module

    return lambda arrays: list(run_module(module, arrays, entry="main"))


def _simulator(module: Any) -> Runner:
    from spyre_ir.sim.engine import simulate

    return lambda arrays: list(simulate(module, arrays, entry="main").outputs)


EXECUTORS: dict[str, Executor] = {
    "reference": Executor("reference", "tensor", _reference),
    "dataflow": Executor("dataflow", "dataflow", _dataflow),
    "simulator": Executor("simulator", "units", _simulator),
}


def get_executor(name: str) -> Executor:
    try:
        return EXECUTORS[name]
    except KeyError:
        raise SpyreConfigError(
            f"spyre: unknown executor SPYRE_EXECUTOR={name!r}; known: {', '.join(sorted(EXECUTORS))}"
        ) from None


# IR levels after the tensor level, in order: (suffix, lowering from the previous level).
# Each level is dumped as ``<graph>_<n>.<suffix>.mlir``; e.g. ("dataflow", tensor_to_dataflow).
def _to_dataflow(module: Any) -> Any:
    from spyre_ir.pipelines import lower_to_dataflow

    return lower_to_dataflow(module.clone())


def _to_units(module: Any) -> Any:
    from spyre_ir.lowering.dataflow_to_units import ConvertDataflowToUnits
    from spyre_ir.registry import make_context

    lowered = module.clone()
    ConvertDataflowToUnits().apply(make_context(), lowered)
    lowered.verify()
    return lowered


LOWERINGS: list[tuple[str, Callable[[Any], Any]]] = [
    ("dataflow", _to_dataflow),
    ("units", _to_units),
]


def print_ir(module: Any) -> str:
    """MLIR text of a module (xDSL's str() of an op is a Python repr, not MLIR)."""
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue().rstrip("\n") + "\n"


# ------------------------------------------------------------------------ decompositions
@functools.cache
def spyre_decompositions() -> dict[Any, Callable[..., Any]]:
    """Inductor's table plus the CPU flash-attention -> math decomposition that Inductor
    deliberately excludes (torch/_inductor/decomposition.py, ``decomps_to_exclude``)."""
    from torch._decomp import get_decompositions
    from torch._inductor.decomposition import select_decomp_table

    return {
        **select_decomp_table(),
        **get_decompositions([aten._scaled_dot_product_flash_attention_for_cpu.default]),
    }


# ---------------------------------------------------------------------------- support
_WARNED: set[str] = set()  # op kinds already warned about, per process
_VIEW_LIKE = {aten.view.default, aten._unsafe_view.default, aten.alias.default, operator.getitem}


def op_name(node: fx.Node) -> str:
    t = node.target
    if isinstance(t, (torch._ops.OpOverload, torch._ops.HigherOrderOperator)):
        return str(t)
    return getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or str(t)


def _static_tensors(val: Any) -> bool:
    vals = val if isinstance(val, (tuple, list)) else (val,)
    return all(
        isinstance(v, torch.Tensor) and all(isinstance(d, int) for d in (*v.shape, *v.stride()))
        for v in vals
    )


def _unsupported_reason(node: fx.Node) -> str | None:
    if not _static_tensors(node.meta.get("val")):
        return "only tensors of static shape are supported (dynamic shape or non-tensor value)"
    if not all(_static_tensors(a.meta.get("val")) for a in node.all_input_nodes):
        return "an input is not a tensor of static shape"
    from spyre_ir.lowering.fx_importer import unsupported_reason

    return unsupported_reason(node)


class _Support(torch.fx.passes.operator_support.OperatorSupportBase):
    def __init__(self, reasons: dict[fx.Node, str | None]) -> None:
        self.reasons = reasons

    def is_node_supported(self, submodules: Any, node: fx.Node) -> bool:
        return node in self.reasons and self.reasons[node] is None


def _check_support(gm: fx.GraphModule, settings: Settings) -> dict[fx.Node, str | None]:
    inputs = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    if not all(_static_tensors(v) for v in inputs):  # dynamo made the graph shape-generic
        why = "spyre compiles static shapes only; use torch.compile(..., dynamic=False)"
        reasons: dict[fx.Node, str | None] = {n: why for n in gm.graph.nodes if n.op == "call_function"}
        bad = {"a graph with dynamic shapes": why}
    else:
        reasons = {n: _unsupported_reason(n) for n in gm.graph.nodes if n.op == "call_function"}
        bad = {}
        for node, reason in reasons.items():
            # host bookkeeping without a tensor result (asserts, ...) stays on CPU silently
            if reason is not None and (node.users or node.meta.get("val") is not None):
                bad.setdefault(op_name(node), reason)
    if bad and settings.strict:
        (op, why), *rest = bad.items()
        raise SpyreUnsupportedError(op, why, [o for o, _ in rest])
    for op, reason in bad.items():
        _warn_once(op, f"spyre: {op} is not supported ({reason}); running it on CPU")
    return reasons


def reset_warnings() -> None:
    """Forget which op kinds were warned about (for tests; normally once per process)."""
    _WARNED.clear()


def _warn_once(key: str, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, stacklevel=2)


# ---------------------------------------------------------------------- numpy boundary
def _to_numpy(x: Any) -> np.ndarray:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"spyre: partition input must be a tensor, got {type(x).__name__}")
    x = x.detach()
    if x.dtype == torch.bfloat16:  # not a numpy dtype: exact bf16 values in float32
        x = x.float()
    return x.cpu().numpy()


def _to_torch(arr: Any, like: torch.Tensor, what: str) -> torch.Tensor:
    arr = np.asarray(arr)
    if tuple(arr.shape) != tuple(like.shape):
        raise RuntimeError(f"spyre: {what} has shape {arr.shape}, expected {tuple(like.shape)}")
    t = torch.from_numpy(np.array(arr, copy=True).reshape(like.shape)).to(like.dtype)
    if t.numel() > 1 and t.stride() != like.stride():  # keep the strides FX traced with
        if 0 in like.stride():
            # An expanded view: rebuild it from its distinct elements.
            index = tuple(slice(0, 1) if s == 0 else slice(None) for s in like.stride())
            return t[index].expand(like.shape)
        t = torch.empty_strided(like.shape, like.stride(), dtype=like.dtype).copy_(t)
    return t


# --------------------------------------------------------------------------- partitions
class SpyrePartition(torch.nn.Module):
    """One supported partition: numpy in, spyre executor, torch out.

    ``cpu_graph`` keeps the FX submodule; it runs instead if the executor fails and strict mode
    is off (one warning), so an executor bug degrades to CPU speed, not to a crash.
    """

    def __init__(self, name: str, cpu: fx.GraphModule, ir: dict[str, Any], settings: Settings) -> None:
        super().__init__()
        self.name, self.cpu_graph, self.ir, self.settings = name, cpu, ir, settings
        ex = get_executor(settings.executor)
        self.run = ex.factory(ir[ex.level])
        self.outputs = [n.meta["val"] for n in cpu.graph.output_node().args[0]]
        self.failed = False

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if not self.failed:
            try:
                outs = self.run([_to_numpy(a) for a in args])
                if len(outs) != len(self.outputs):
                    raise RuntimeError(f"spyre: got {len(outs)} results, expected {len(self.outputs)}")
                return tuple(
                    _to_torch(o, like, f"result {i} of {self.name}")
                    for i, (o, like) in enumerate(zip(outs, self.outputs))
                )
            except Exception as e:
                if self.settings.strict:
                    raise
                self.failed = True
                warnings.warn(f"spyre: {self.name} failed on the {self.settings.executor} "
                              f"executor ({type(e).__name__}: {e}); running it on CPU", stacklevel=2)
        return tuple(self.cpu_graph(*args))


_graph_ids = itertools.count()


def _partition(gm: fx.GraphModule, reasons: dict[fx.Node, str | None]) -> list[str]:
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

    partitioner = CapabilityBasedPartitioner(gm, _Support(reasons), allows_single_node_partition=True)
    parts = [
        p for p in partitioner.propose_partitions()
        if any(n.target not in _VIEW_LIKE for n in p.nodes)  # a lone view is not worth a launch
    ]
    fuse_by_partitions(gm, [p.nodes for p in parts], prefix="spyre_", always_return_tuple=True)
    return [f"spyre_{i}" for i in range(len(parts))]


def _compile_partition(gm: fx.GraphModule, name: str, graph: str, settings: Settings) -> None:
    """Import one fused partition, lower it as far as needed, dump it, and swap the FX
    submodule for a SpyrePartition. Any failure leaves the partition as CPU code."""
    from spyre_ir.lowering.fx_importer import import_graph

    sub: fx.GraphModule = getattr(gm, name)
    executor = get_executor(settings.executor)
    ir: dict[str, Any] = {}  # level -> module, in lowering order
    try:
        try:
            module = ir["tensor"] = import_graph(sub)  # types come from meta["val"]
            for level, lower in LOWERINGS:
                if executor.level in ir:
                    if settings.dump_dir is None:
                        break
                    # Levels past the executor's are only dumped: their failure must not
                    # change how the graph runs.
                    try:
                        module = ir[level] = lower(module)
                    except Exception as e:  # noqa: BLE001 - reported, then ignored
                        _warn_once(f"dump:{level}:{type(e).__name__}:{e}",
                                   f"spyre: {graph} could not be lowered to the {level} level "
                                   f"for the IR dump ({type(e).__name__}: {e})")  # fmt: skip
                        break
                    continue
                module = ir[level] = lower(module)
        finally:
            if settings.dump_dir is not None and ir:
                settings.dump_dir.mkdir(parents=True, exist_ok=True)
                for level, mod in ir.items():
                    (settings.dump_dir / f"{graph}.{level}.mlir").write_text(print_ir(mod))
        part = SpyrePartition(graph, sub, ir, settings)
    except Exception as e:
        if settings.strict:
            raise
        _warn_once(f"compile:{type(e).__name__}:{e}",
                   f"spyre: could not compile {graph} ({type(e).__name__}: {e}); running it on CPU")
        return
    setattr(gm, name, part)


def compile_graph(gm: fx.GraphModule, example_inputs: Sequence[Any], settings: Settings) -> Callable:
    """Forward / inference compiler: partition, import and wire one decomposed ATen graph."""
    from torch._functorch.aot_autograd import make_boxed_func

    reasons = _check_support(gm, settings)
    graph_id = next(_graph_ids)
    names = _partition(gm, reasons)
    for n, name in enumerate(names):
        _compile_partition(gm, name, f"graph{graph_id}_{n}", settings)
    gm.recompile()
    return make_boxed_func(gm)


def _cpu_backward(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Spyre is an inference target: a backward pass, if ever run, is eager CPU code."""
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(gm)


# ------------------------------------------------------------------------------ backend
def spyre_backend(gm: fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """Dynamo backend entry point (``torch.compile(m, backend="spyre")``).

    ``kwargs`` are what ``torch.compile`` forwards: ``options`` (keys ``strict``,
    ``ir_dump``, ``executor`` override SPYRE_STRICT / SPYRE_IR_DUMP / SPYRE_EXECUTOR) and
    ``mode`` (ignored).
    """
    from torch._dynamo.backends.common import aot_autograd

    unknown = set(kwargs) - {"options", "mode"}
    if unknown:
        raise SpyreConfigError(f"spyre: unexpected backend arguments {sorted(unknown)}")
    settings = Settings.resolve(kwargs.get("options"))
    compiler = functools.partial(compile_graph, settings=settings)
    backend = aot_autograd(  # a fresh one per graph: AotAutograd mutates its kwargs
        fw_compiler=compiler,
        inference_compiler=compiler,
        bw_compiler=_cpu_backward,
        decompositions=spyre_decompositions(),
    )
    return backend(gm, example_inputs)
