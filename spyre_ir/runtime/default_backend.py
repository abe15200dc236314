"""``torch.compile(f)`` with no backend named compiles spyre graphs with the spyre backend.

PyTorch code for an accelerator names no backend (``torch.compile(model)``, as for cuda, xpu
or mps): dynamo then hands every graph to Inductor (``torch._TorchCompileInductorWrapper``),
which has no code generator for "spyre" and fails (``BackendCompilerFailed:
backend='inductor'``). :func:`install` (run by ``device.setup()``) routes a graph whose
inputs (including lifted parameters and buffers) include a spyre tensor to
:func:`spyre_ir.runtime.backend.spyre_backend`, exactly what ``backend="spyre"`` runs; any
other graph goes to Inductor unchanged.

Why route rather than register "spyre" with Inductor's per-device hooks
(``torch._inductor.codegen.common.register_backend_for_device``): those hooks plug a
code generator into Inductor's loop-level IR (a ``Scheduling`` emitting kernels per fused
node, and a wrapper code generator), after Inductor's own lowering and fusion. The spyre
compiler takes the ATen graph itself (after AOTAutograd and the spyre decompositions),
partitions it by what the card supports, and compiles whole partitions to recipes with its
own fusion, tiling and cost model; it has no per-kernel loop IR to receive. Routing keeps
one compiler behind both spellings, with the same results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

__all__ = ["install", "is_spyre_graph"]

BACKEND = "spyre"


def is_spyre_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    """Whether a dynamo graph computes on spyre tensors (an input or a graph constant)."""
    values = list(example_inputs)
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            values.append(node.meta.get("example_value", node.meta.get("val")))
    values.extend([*gm.parameters(), *gm.buffers()])
    return any(isinstance(v, torch.Tensor) and v.device.type == BACKEND for v in values)


def install() -> None:
    """Route Inductor's spyre graphs to the spyre backend (idempotent)."""
    wrapper = torch._TorchCompileInductorWrapper
    inductor_call = wrapper.__call__
    if getattr(inductor_call, "routes_spyre", False):
        return

    def __call__(self: Any, model_: torch.fx.GraphModule, inputs_: Sequence[Any]) -> Callable:
        if is_spyre_graph(model_, inputs_):
            from spyre_ir.runtime.backend import spyre_backend

            return spyre_backend(model_, inputs_)
        return inductor_call(self, model_, inputs_)

    __call__.routes_spyre = True  # type: ignore[attr-defined]
    wrapper.__call__ = __call__
