"""Capture the tensor-level (L1) IR of torch callables, with their example inputs as
numpy arrays, for differential tests of the lower levels."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch._dynamo.backends.common import aot_autograd

from spyre_ir.lowering.fx_importer import import_graph
from spyre_ir.runtime.backend import spyre_decompositions


def to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return t.numpy().copy()


def capture(fn: Callable, args: Sequence[torch.Tensor]) -> list[tuple[object, list[np.ndarray]]]:
    """Every graph `fn` compiles to, as (L1 module, numpy inputs)."""
    graphs: list[tuple[object, list[np.ndarray]]] = []

    def compiler(gm: torch.fx.GraphModule, example_inputs: Sequence[torch.Tensor]):
        module = import_graph(gm)

        def run(*args: torch.Tensor):
            graphs.append((module, [to_numpy(x) for x in args]))
            return gm(*args)

        return run

    backend = aot_autograd(fw_compiler=compiler, decompositions=spyre_decompositions())
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(fn, backend=backend, dynamic=False)(*args)
    return graphs
