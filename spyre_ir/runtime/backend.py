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
   node stays in the outer graph as CPU code, with a warning per op kind in every compiled
   graph (``SPYRE_STRICT=1``: :class:`SpyreUnsupportedError` instead). A partition that
   fails to compile leaves only the op to blame on CPU (``_isolate_failure``).
3. Each supported partition is imported to the ``spyre`` tensor dialect
   (``fx_importer.import_graph``), compiled for the executor chosen by ``SPYRE_EXECUTOR``,
   dumped when ``SPYRE_IR_DUMP=DIR`` is set, and replaced in the outer graph by a
   :class:`SpyrePartition` that runs it. Executors:

   * ``card`` (the default): the whole road. ``runtime.artifact.compile_artifact`` lowers
     the graph to an artifact (L3 programs + recipe plan, cached on disk), which is
     prepared once into a ``runtime.recipe.PreparedRecipe``; each call launches it on the
     simulated card's current stream (inputs H2D, compute on the simulator, outputs D2H)
     and synchronizes.
   * ``reference`` (the L1 interpreter), ``dataflow`` (the L2 interpreter) and
     ``simulator`` (the L3 module run on the simulator directly, no runtime): the compile
     driver (``spyre_ir/driver.py``) as far as the executor needs.

   Every compiled partition reports a ``telemetry.CompileRecord`` (seconds per stage, ops
   per IR level, kernels).

float32 on the card: the card has no fp32 compute (fp32 tensors are converted; see
docs/spyre-hardware.md), so the ``card`` executor compiles an f32 graph in f16
(``passes/compute_in_f16.py``) and converts the data at the transfer boundary, with one
warning per process. ``SPYRE_EXACT_F32=1`` (or ``options={"exact_f32": True}``) keeps the
graph in f32 on the simulator instead: exact numbers for debugging, not what a card does.

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

from spyre_ir.runtime import fallbacks

aten = torch.ops.aten

__all__ = [
    "EXECUTORS",
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
    executor: str = "card"
    exact_f32: bool = False

    @classmethod
    def resolve(cls, options: dict[str, Any] | None = None) -> Settings:
        """Environment first, then ``torch.compile(..., options={...})`` on top."""
        env = os.environ
        opts = dict(options or {})
        unknown = set(opts) - {"strict", "ir_dump", "executor", "exact_f32"}
        if unknown:
            raise SpyreConfigError(
                f"spyre: unknown backend option(s) {sorted(unknown)}; "
                "known: exact_f32, executor, ir_dump, strict"
            )
        strict = opts.get("strict", env.get("SPYRE_STRICT", "").strip().lower() in _TRUE)
        dump = opts.get("ir_dump", env.get("SPYRE_IR_DUMP") or None)
        executor = opts.get("executor", env.get("SPYRE_EXECUTOR") or "card")
        exact = opts.get("exact_f32", env.get("SPYRE_EXACT_F32", "").strip().lower() in _TRUE)
        get_executor(executor)  # fail at compile time on a bad name
        return cls(bool(strict), Path(dump) if dump else None, executor, bool(exact))


# ---------------------------------------------------------------------------- executors
# An executor factory takes the IR of one partition at the level it consumes (``level``:
# a module, or for "recipe" the compiled Artifact) and returns a function from numpy
# inputs to numpy outputs.
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


def _card(artifact: Any) -> Runner:
    from spyre_ir.runtime.recipe import PreparedRecipe

    recipe = PreparedRecipe.from_artifact(artifact)  # once, at compile time (a cache hit is parsed)

    def run(arrays: list[np.ndarray]) -> list[np.ndarray]:
        stream = recipe.card.current_stream()
        outs = recipe.launch_to_host(arrays, stream)
        stream.synchronize()
        return outs

    return run


EXECUTORS: dict[str, Executor] = {
    "card": Executor("card", "recipe", _card),
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
    deliberately excludes (torch/_inductor/decomposition.py, ``decomps_to_exclude``),
    less ``im2col`` (F.unfold), which lowering/aten_conv.py takes as strided slices
    rather than as Inductor's gather by computed index tensors, and ``round.decimals``,
    whose decomposition multiplies by 10**-d where torch's kernel divides by 10**d,
    and ``lerp.Scalar``, whose decomposition rounds each step to 16 bits, and
    ``index_copy``, whose decomposition (index_put) would count a negative position from
    the end where torch's kernel refuses it, and ``isposinf`` / ``isneginf``, whose
    decompositions compare at f32 (an exact widening that warns of f32 work)."""
    from torch._decomp import get_decompositions
    from torch._inductor.decomposition import select_decomp_table

    table = {
        **select_decomp_table(),
        **get_decompositions([aten._scaled_dot_product_flash_attention_for_cpu.default]),
    }
    table.pop(aten.im2col.default, None)
    table.pop(aten.round.decimals, None)  # lowering/aten_bitwise.py: torch's kernel, exactly
    table.pop(aten.lerp.Scalar, None)  # lowering/aten_lowerings.py: at f32, as torch's kernel
    table.pop(aten.index_copy.default, None)  # lowering/aten_scatter.py: no negative positions
    table.pop(aten.isposinf.default, None)  # lowering/aten_bitwise.py: in x's dtype, not f32
    table.pop(aten.isneginf.default, None)
    return table


# ---------------------------------------------------------------------------- support
_WARNED: set[str] = set()  # once-per-process warnings already given (f32 as f16, dumps)
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


def _check_support(gm: fx.GraphModule, graph: str, settings: Settings) -> dict[fx.Node, str | None]:
    reasons = {n: _unsupported_reason(n) for n in gm.graph.nodes if n.op == "call_function"}
    bad: dict[str, str] = {}
    for node, reason in reasons.items():
        # host bookkeeping without a tensor result (asserts, ...) stays on CPU silently
        if reason is not None and (node.users or node.meta.get("val") is not None):
            bad.setdefault(op_name(node), reason)
    if bad and settings.strict:
        (op, why), *rest = bad.items()
        raise SpyreUnsupportedError(op, why, [o for o, _ in rest])
    for op, reason in bad.items():  # every graph: a fallback is never silent
        fallbacks.record(op, reason, "unsupported", "compiled")
        warnings.warn(f"spyre: {op} is not supported ({reason}); running it on CPU in {graph}",
                      stacklevel=2)  # fmt: skip
    return reasons


def reset_warnings() -> None:
    """Forget the once-per-process warnings given (for tests)."""
    _WARNED.clear()


def warn_f32_as_f16(ops: str) -> None:
    """Once per process: eager float32 ops run in DLFloat16 on the card, the first
    named. (A compiled graph's f32 ops are named by f32_policy.place_f32 every compile,
    in the same words.)"""
    from spyre_ir.runtime.f32_policy import SpyreF32Warning, reduced_precision_message

    message = reduced_precision_message(f"{ops} (eager ops: said once per process)")
    _warn_once("f32-as-f16", message, SpyreF32Warning)


def _warn_once(key: str, message: str, category: type[Warning] = UserWarning) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, category, stacklevel=2)


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

    def __init__(
        self, name: str, cpu: fx.GraphModule, ir: dict[str, Any], settings: Settings,
        write_backs: dict[int, int] | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.name, self.cpu_graph, self.ir, self.settings = name, cpu, ir, settings
        ex = get_executor(settings.executor)
        self.card = None
        if settings.executor == "card":  # inputs kept on the card between calls
            from spyre_ir.runtime.resident import CardPartition

            self.card = CardPartition(name, ir["recipe"], cpu, write_backs)
        else:
            self.run = ex.factory(ir[ex.level])
        self.outputs = [n.meta["val"] for n in cpu.graph.output_node().args[0]]

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # A failed launch costs that call only: it runs on CPU, says why, and the next
        # call tries the executor again (issue 19: no partition is disabled for good).
        try:
            return self._run(args)
        except Exception as e:
            if self.settings.strict:
                raise
            why = f"{type(e).__name__}: {e}; the next call tries the executor again"
            fallbacks.record(self.name, why, "launch-error", "compiled")
            warnings.warn(f"spyre: {self.name} failed on the {self.settings.executor} "
                          f"executor ({why}); running it on CPU", stacklevel=2)  # fmt: skip
        return tuple(self.cpu_graph(*args))

    def _run(self, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        if self.card is not None:
            return self.card(args)
        outs = self.run([_to_numpy(a) for a in args])
        if len(outs) != len(self.outputs):
            raise RuntimeError(f"spyre: got {len(outs)} results, expected {len(self.outputs)}")
        return tuple(
            _to_torch(o, like, f"result {i} of {self.name}").to(like.device)
            for i, (o, like) in enumerate(zip(outs, self.outputs))
        )


_graph_ids = itertools.count()


def _partition(gm: fx.GraphModule, reasons: dict[fx.Node, str | None]) -> list[str]:
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

    partitioner = CapabilityBasedPartitioner(
        gm, _Support(reasons), allows_single_node_partition=True
    )
    parts = [
        p
        for p in partitioner.propose_partitions()
        if any(n.target not in _VIEW_LIKE for n in p.nodes)  # a lone view is not worth a launch
    ]
    fuse_by_partitions(gm, [p.nodes for p in parts], prefix="spyre_", always_return_tuple=True)
    return [f"spyre_{i}" for i in range(len(parts))]


def _compile_artifact(module: Any, graph: str, settings: Settings, rec: Any) -> dict[str, Any]:
    """The card's levels: {"dataflow": text, "units": text, "recipe": Artifact}. With an
    IR dump the disk cache is bypassed, so the intermediate levels exist to be dumped."""
    from spyre_ir.runtime.artifact import compile_artifact

    # f32 ops at reduced precision: f32_policy.place_f32 warned, naming them
    dumping = settings.dump_dir is not None
    artifact = compile_artifact(module, name=graph, exact_f32=settings.exact_f32,
                                use_cache=not dumping, keep_levels=dumping, record=rec)  # fmt: skip
    return {**artifact.levels, "recipe": artifact}


def _lower(module: Any, ir: dict[str, Any], executor: Executor, graph: str, settings: Settings,
           rec: Any) -> None:  # fmt: skip
    """The debugging executors' road: the compile driver down to the executor's level, each
    level kept (a clone) in ``ir``; with an IR dump on to the recipe level, whose failure
    past the executor's level must not change how the graph runs (reported, then ignored)."""
    from spyre_ir import driver

    def keep(stage: driver.Stage, lowered: Any, seconds: float) -> None:
        if stage.name == stage.level:
            ir[stage.level] = lowered.clone()

    hooks = [driver.verify, driver.RecordOps(rec), keep]
    if executor.level != "tensor":
        module = module.clone()
        driver.lower(module, target=executor.level, graph=graph, hooks=hooks)
    if settings.dump_dir is None or executor.level == "recipe":
        return
    try:
        driver.lower(
            module.clone(), source=executor.level, graph=graph, hooks=[driver.verify, keep]
        )
    except Exception as e:  # noqa: BLE001 - reported, then ignored
        _warn_once(f"dump:{type(e).__name__}:{e}",
                   f"spyre: {graph} could not be lowered past the {executor.level} level "
                   f"for the IR dump ({type(e).__name__}: {e})")  # fmt: skip


def _dump_text(ir: Any) -> str:
    from spyre_ir.runtime.artifact import Artifact

    return ir if isinstance(ir, str) else ir.text if isinstance(ir, Artifact) else print_ir(ir)


def _compile_partition(sub: fx.GraphModule, graph: str, settings: Settings, *,
                       probe: bool = False,
                       write_backs: dict[int, int] | None = None) -> SpyrePartition:  # fmt: skip
    """Import one fused partition, compile it for the executor and dump it. Raises on any
    failure. A ``probe`` (failure isolation's trial compile) is neither dumped nor reported.
    ``write_backs`` are the partition's results that only write an input back (see
    :func:`_write_back_outputs`)."""
    from spyre_ir.lowering.fx_importer import import_graph
    from spyre_ir.runtime import telemetry
    from spyre_ir.runtime.artifact import count_ops
    from spyre_ir.runtime.row_store import rows_graph

    executor = get_executor(settings.executor)
    ir: dict[str, Any] = {}  # level -> module (text, Artifact), in lowering order
    fx_ops = sum(n.op == "call_function" for n in sub.graph.nodes)
    rec = telemetry.CompileRecord(graph=graph, ir_ops={"fx": fx_ops})
    dump_dir = None if probe else settings.dump_dir
    try:
        with telemetry.stage(graph, "import") as timer:
            # on the card a KV cache write is compiled as its new rows (runtime/row_store.py)
            card_graph = rows_graph(sub) if settings.executor == "card" else sub
            module = ir["tensor"] = import_graph(card_graph)  # types come from meta["val"]
        rec.stage_seconds["import"] = timer.seconds
        rec.ir_ops["tensor"] = count_ops(module)
        if executor.level == "recipe":
            ir.update(_compile_artifact(module, graph, settings, rec))
        else:
            _lower(module, ir, executor, graph, settings, rec)
    finally:
        if dump_dir is not None and ir:
            dump_dir.mkdir(parents=True, exist_ok=True)
            for level, mod in ir.items():
                (dump_dir / f"{graph}.{level}.mlir").write_text(_dump_text(mod))
    with telemetry.stage(graph, "prepare") as timer:
        part = SpyrePartition(graph, sub, ir, settings, write_backs)
    rec.stage_seconds["prepare"] = timer.seconds
    if not probe:
        telemetry.record_compile(rec)
    return part


def _compile_partitions(gm: fx.GraphModule, reasons: dict[fx.Node, str | None], graph: str,
                        settings: Settings, mutated: dict[int, int] | None = None) -> None:  # fmt: skip
    """Partition ``gm`` by ``reasons`` and swap each partition for a SpyrePartition named
    ``<graph>_<n>``; one that fails to compile is isolated (see :func:`_isolate_failure`).
    ``mutated``: gm's outputs that AOTAutograd copies into inputs ({output: input})."""
    names = _partition(gm, reasons)
    write_backs = _write_back_outputs(gm, mutated or {})
    for n, name in enumerate(names):
        sub: fx.GraphModule = getattr(gm, name)
        try:
            setattr(gm, name, _compile_partition(sub, f"{graph}_{n}", settings,
                                                 write_backs=write_backs.get(name)))  # fmt: skip
        except Exception as e:
            if settings.strict:
                raise
            setattr(gm, name, _isolate_failure(sub, f"{graph}_{n}", settings, e))


def _mutated_inputs(n_outputs: int) -> dict[int, int]:
    """{output: input} for the graph AOTAutograd is compiling now: the outputs that are
    only the new data of a mutated input, which its runtime wrapper copies into that
    input after the call (its `fw_metadata`, on the tracing context while it compiles)."""
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None)
    if meta is None or meta.num_mutated_inp_runtime_indices > n_outputs:
        return {}
    return {k: i for k, i in enumerate(meta.mutated_inp_runtime_indices)
            if meta.input_info[i].mutates_data and not meta.input_info[i].mutates_metadata
            and not meta.input_info[i].mutates_storage_metadata}  # fmt: skip


def _write_back_outputs(gm: fx.GraphModule, mutated: dict[int, int]) -> dict[str, dict[int, int]]:
    """{partition: {its result: its input}} for each result that is only the new value of
    an input of gm (``mutated``), where that input is the partition's argument and read by
    nothing else: the partition may write that input in place and return it, so the
    wrapper's copy is a copy onto itself (a KV cache is not copied whole every step)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    outputs = list(gm.graph.output_node().args[0])
    found: dict[str, dict[int, int]] = {}
    for k, i in mutated.items():
        node, source = outputs[k], placeholders[i]
        if node.target is not operator.getitem or len(node.users) != 1 or outputs.count(node) != 1:
            continue
        call, j = node.args
        if call.op == "call_module" and list(source.users) == [call]:
            found.setdefault(call.target, {})[j] = call.args.index(source)
    return found


def _isolate_failure(sub: fx.GraphModule, graph: str, settings: Settings,
                     error: Exception) -> fx.GraphModule:  # fmt: skip
    """A partition that failed to compile: find the op to blame (runtime/isolation.py),
    leave it on CPU with a warning naming it, and compile the rest of the partition again
    (recursively, so every further culprit is found the same way). ``sub`` becomes an FX
    graph of CPU ops and smaller spyre partitions named ``<graph>_<n>``."""
    from spyre_ir.runtime.isolation import first_failing_node

    def fails(candidate: fx.GraphModule) -> BaseException | None:
        try:
            _compile_partition(candidate, f"{graph}_probe", settings, probe=True)
        except Exception as e:  # noqa: BLE001 - the probe's answer
            return e
        return None

    found = first_failing_node(sub, fails)
    if found is None:
        fallbacks.record(graph, f"{type(error).__name__}: {error}", "compile-error", "compiled")
        warnings.warn(f"spyre: could not compile {graph} ({type(error).__name__}: {error}); "
                      "running it on CPU", stacklevel=3)  # fmt: skip
        return sub
    culprit, why = found
    fallbacks.record(op_name(culprit), f"{type(why).__name__}: {why}", "compile-error", "compiled")
    warnings.warn(f"spyre: {op_name(culprit)} ({culprit.name}) in {graph} failed to compile "
                  f"({type(why).__name__}: {why}); running it on CPU, the rest of {graph} on spyre",
                  stacklevel=3)  # fmt: skip
    reasons: dict[fx.Node, str | None] = {
        n: None for n in sub.graph.nodes if n.op == "call_function"
    }
    reasons[culprit] = f"failed to compile: {why}"
    _compile_partitions(sub, reasons, graph, settings)
    sub.recompile()
    return sub


def compile_graph(
    gm: fx.GraphModule, example_inputs: Sequence[Any], settings: Settings
) -> Callable:
    """Forward / inference compiler: partition, import and wire one decomposed ATen graph;
    a graph with symbolic sizes runs through shape buckets (runtime/dynamic.py)."""
    from torch._functorch.aot_autograd import make_boxed_func

    from spyre_ir.runtime.dynamic import BucketedGraph, is_dynamic

    graph = f"graph{next(_graph_ids)}"
    if not is_dynamic(gm):  # a bucketed graph's inputs are padded copies: not written back
        mutated = _mutated_inputs(len(gm.graph.output_node().args[0]))
        return make_boxed_func(_compile_static(gm, graph, settings, mutated=mutated))
    buckets = itertools.count()

    def compile_bucket(static: fx.GraphModule, examples: list[Any], bucket: str) -> Callable:
        return _compile_static(static, f"{graph}_b{next(buckets)}", settings, bucket)

    runner = BucketedGraph(gm, graph, compile_bucket)
    return make_boxed_func(lambda *args: runner(list(args)))


def _compile_static(gm: fx.GraphModule, graph: str, settings: Settings,
                    bucket: str | None = None,
                    mutated: dict[int, int] | None = None) -> fx.GraphModule:  # fmt: skip
    """Partition a static ATen graph, compile its partitions and wire them in (in place);
    ``mutated`` as for :func:`_compile_partitions`."""
    from spyre_ir.runtime import telemetry
    from spyre_ir.runtime.artifact import gc_paused
    from spyre_ir.runtime.f32_policy import place_f32

    with gc_paused():  # see gc_paused: collections would rescan torch's objects often
        reasons = _check_support(gm, graph, settings)
        place_f32(gm, reasons, settings)  # f32 from integers and constants: on the host
        _compile_partitions(gm, reasons, graph, settings, mutated)
    gm.recompile()
    telemetry.record_graph(telemetry.GraphRecord(graph, bucket))
    return gm


def _cpu_backward(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """Spyre is an inference target: a backward pass, if ever run, is eager CPU code."""
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(gm)


# ------------------------------------------------------------------------------ backend
def spyre_backend(gm: fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
    """Dynamo backend entry point (``torch.compile(m, backend="spyre")``).

    ``kwargs`` are what ``torch.compile`` forwards: ``options`` (keys ``strict``,
    ``ir_dump``, ``executor``, ``exact_f32`` override SPYRE_STRICT / SPYRE_IR_DUMP /
    SPYRE_EXECUTOR / SPYRE_EXACT_F32) and ``mode`` (ignored).
    """
    from torch._dynamo.backends.common import aot_autograd

    from spyre_ir.lowering.aten_constants import fold_fractional_aranges

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
    fold_fractional_aranges(gm)  # computed at f64 by torch, which the card has not
    return backend(gm, example_inputs)
