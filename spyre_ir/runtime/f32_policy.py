"""Where the float32 parts of a graph run, on a card without fp32 compute.

The card executor compiles f32 tensors as 16-bit floats (`passes/compute_in_f16.py`),
which the card holds as DLFloat16 (docs/dlfloat16.md). For the f32 ops of a graph that
means one of two things, decided per FX node before partitioning (`place_f32`):

1. **Exactly on the host.** An f32 value computed (by arithmetic, not only a factory,
   view or cast) from integer tensors, factory ops (arange, full) and small constant inputs - parameters and buffers of at most
   `CONSTANT_ELEMENTS` elements, such as rotary's `inv_freq` - does not depend on the
   activations: rotary angles and their cos/sin from positions, masks from positions.
   Such ops (with the constant-only ops feeding them) stay in the FX graph as CPU code,
   torch computes them in f32, and their results enter the card at the transfer,
   rounded once to DLFloat16. On the card the angle of position 8,000 would be rounded
   to a multiple of 16 before its cos is taken.
2. **On the card, in DLFloat16.** Every other f32 op (an RMSNorm's statistics of the
   activations, a softmax computed in f32) runs on the card: its units compute in fp32,
   its results are stored as DLFloat16 (9 fraction bits; the range of 2^+-32 keeps an
   RMSNorm's sum of squares finite where fp16's 65,504 does not).

Both warn, every time a graph is compiled, naming the ops (`SpyreF32Warning`).
`SPYRE_EXACT_F32=1` keeps f32 exact on the simulator instead, and the other executors
(reference, dataflow, simulator) compute f32 as f32: then nothing moves and nothing warns.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import fx

__all__ = [
    "CONSTANT_ELEMENTS",
    "HOST_REASON",
    "SpyreF32Warning",
    "host_exact_nodes",
    "place_f32",
    "reduced_precision_message",
]

CONSTANT_ELEMENTS = 4096
"""A parameter or buffer this small counts as a constant (a table such as rotary's
`inv_freq`, not a weight matrix): f32 computed from it and integers runs on the host."""

_CASTS = (torch.ops.prims.convert_element_type.default, torch.ops.aten._to_copy.default)
_aten = torch.ops.aten
_PASSIVE = frozenset({
    *_CASTS, _aten.view.default, _aten._unsafe_view.default, _aten.unsqueeze.default,
    _aten.expand.default, _aten.permute.default, _aten.clone.default, _aten.alias.default,
    _aten.slice.Tensor, _aten.select.int, _aten.squeeze.dim, _aten.reshape.default,
})  # fmt: skip
"""Ops that move or retype values without arithmetic."""

HOST_REASON = "float32 computed from integer inputs and constants: exactly on the host"


class SpyreF32Warning(UserWarning):
    """f32 ops moved to the host, or computed in DLFloat16 on the card."""


def _tensor(node: fx.Node) -> torch.Tensor | None:
    val = node.meta.get("val")
    return val if isinstance(val, torch.Tensor) else None


def _is_f32(node: fx.Node) -> bool:
    val = _tensor(node)
    return val is not None and val.dtype == torch.float32


def _static_inputs() -> set[int]:
    """Indices of the graph's placeholders that are parameters or buffers (AOTAutograd
    records them for the compiler it calls; none known outside of it)."""
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None)
    return set(getattr(metadata, "static_input_indices", None) or ())


def _constant_like(gm: fx.GraphModule, static: set[int]) -> dict[fx.Node, bool]:
    """Whether each node depends only on integer tensors, small constants and factories."""
    known: dict[fx.Node, bool] = {}
    index = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            val = _tensor(node)
            small_constant = (
                index in static and val is not None and val.numel() <= CONSTANT_ELEMENTS
            )
            known[node] = val is not None and (not val.dtype.is_floating_point or small_constant)
            index += 1
        elif node.op == "call_function":
            known[node] = all(known.get(a, False) for a in node.all_input_nodes)
    return known


def host_exact_nodes(gm: fx.GraphModule, reasons: dict[fx.Node, str | None],
                     static: set[int]) -> list[fx.Node]:  # fmt: skip
    """The supported nodes to compute on the host: f32 values that depend only on
    integers and constants, the constant-only nodes feeding them and their casts
    (graph order)."""
    known = _constant_like(gm, static)
    # Only values that arithmetic made: a factory, view or cast alone (a `full` of the
    # mask value) loses nothing on the card that its transfer would not lose too.
    computed: set[fx.Node] = set()
    for node in gm.graph.nodes:
        if node.op == "call_function" and (
            any(a in computed for a in node.all_input_nodes)
            or (node.all_input_nodes and node.target not in _PASSIVE)
        ):
            computed.add(node)
    chosen = {n for n, ok in known.items() if ok and n in computed and _is_f32(n)
              and reasons.get(n) is None}  # fmt: skip
    stack = list(chosen)
    while stack:
        for source in stack.pop().all_input_nodes:
            if (
                source.op == "call_function"
                and source not in chosen
                and reasons.get(source) is None
            ):
                chosen.add(source)  # constant-like too: every input of a chosen node is
                stack.append(source)
    # Their casts to 16 bits too, so the card receives 16-bit data, not f32 inputs.
    chosen |= {user for node in list(chosen) for user in node.users
               if user.target in _CASTS and reasons.get(user) is None and known.get(user)}  # fmt: skip
    return [n for n in gm.graph.nodes if n in chosen]


def _names(nodes: list[fx.Node]) -> str:
    from spyre_ir.runtime.backend import op_name

    return ", ".join(sorted({op_name(n) for n in nodes}))


def place_f32(gm: fx.GraphModule, reasons: dict[fx.Node, str | None], settings: Any) -> None:
    """Apply the policy of the module docstring to one graph about to be partitioned:
    host-exact nodes get `HOST_REASON` in `reasons` (so they stay CPU code), and both
    kinds of f32 op are named in a `SpyreF32Warning`."""
    if settings.executor != "card" or settings.exact_f32:
        return
    host = host_exact_nodes(gm, reasons, _static_inputs())
    for node in host:
        reasons[node] = HOST_REASON
    if any(_is_f32(n) for n in host):
        warnings.warn(
            "spyre: float32 ops that depend only on integer inputs and constants run exactly "
            f"on the host, not on the card (no fp32 compute): {_names([n for n in host if _is_f32(n)])}",
            SpyreF32Warning, stacklevel=3,
        )  # fmt: skip
    on_card = [n for n, why in reasons.items() if why is None and _is_f32(n)]
    if on_card:
        warnings.warn(reduced_precision_message(_names(on_card)), SpyreF32Warning, stacklevel=3)


def reduced_precision_message(ops: str) -> str:
    """The one warning for f32 work at reduced precision on the card, naming the ops
    (compiled graphs: every compile, here; eager ops: once, runtime/backend.py)."""
    return (
        "spyre: float32 ops run on the card in DLFloat16 (fp32 arithmetic in the units, "
        "results stored with 9 fraction bits; set SPYRE_EXACT_F32=1 for exact float32): "
        f"{ops}"
    )
