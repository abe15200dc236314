"""What every ATen lowering module shares: the `LOWERINGS` and `CHECKS` tables, the
`lowers` decorator that fills them, and helpers to read an FX node's arguments and
metadata. The lowerings are in the sibling aten_*.py modules; `aten_lowerings` imports
them all (importing registers them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx

from spyre_ir.lowering.fx_importer import (
    LoweringFn,
    meta_dtype,
    scalar_overflow,
)

aten = torch.ops.aten
prims = torch.ops.prims

LOWERINGS: dict[Any, LoweringFn] = {}
CHECKS: dict[Any, Callable[[torch.fx.Node], str | None]] = {}


def lowers(*targets: Any, check: Callable[[torch.fx.Node], str | None] | None = None):
    def register(fn: LoweringFn) -> LoweringFn:
        for target in targets:
            LOWERINGS[target] = fn
            if check is not None:
                CHECKS[target] = check
        return fn

    return register


def arg(node: torch.fx.Node, index: int, name: str, default: Any = None) -> Any:
    """Positional-or-keyword FX argument."""
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def meta_shape(node: torch.fx.Node) -> tuple[int, ...]:
    return tuple(int(s) for s in node.meta["val"].shape)


def rank_of(node: torch.fx.Node, index: int = 0) -> int:
    return node.args[index].meta["val"].dim()


def scalar_only(*positions: tuple[int, str]) -> Callable[[torch.fx.Node], str | None]:
    """A check that the listed arguments are Python scalars, not tensors."""

    def check(node: torch.fx.Node) -> str | None:
        for index, name in positions:
            if isinstance(arg(node, index, name), torch.fx.Node):
                return f"{node.target} with a tensor '{name}' is not supported"
        return None

    return check


def in_range(*positions: tuple[int, str], also: Callable[[torch.fx.Node], str | None] | None = None
             ) -> Callable[[torch.fx.Node], str | None]:  # fmt: skip
    """A check that the listed scalars fit the result's dtype, as torch checks them
    (`masked_fill`, `clamp`, `alpha`): one that does not leaves the op to torch, whose
    kernel raises its own overflow error. `also`: another check to run first."""

    def check(node: torch.fx.Node) -> str | None:
        reason = also(node) if also is not None else None
        for index, name in positions:
            reason = reason or scalar_overflow(arg(node, index, name), meta_dtype(node))
        return reason

    return check


def promoted_dtype(*args: Any) -> torch.dtype:
    """torch's type promotion of FX arguments (tensors by dtype and rank, scalars by kind)."""
    samples: list[Any] = []
    for a in args:
        if isinstance(a, torch.fx.Node):
            val = a.meta["val"]
            samples.append(torch.empty((1,) * min(val.dim(), 1), dtype=val.dtype))
        else:
            samples.append(a)
    dtype = torch.result_type(samples[0], samples[1]) if len(samples) > 1 else samples[0].dtype
    return dtype
