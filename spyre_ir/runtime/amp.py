"""``torch.autocast("spyre")``: the AutocastPrivateUse1 dispatch key of the spyre device.

Torch's C++ registers autocast kernels for cuda, cpu, xpu, mps and a fallthrough for the
other ops of those keys; nothing for an out-of-tree backend, so with autocast on, every op
on a spyre tensor stopped at AutocastPrivateUse1 ("Could not run 'aten::t' with arguments
from the 'Autocastspyre' backend", and under ``torch.compile`` "aten.detach.default at
AutocastPrivateUse1"). :func:`install` registers what torch does for cuda: a fallthrough for
every op, and for the ops of torch's lower-precision list (matmuls, linear, convolutions,
attention; ``aten/src/ATen/autocast_mode.h``, ``AT_FORALL_LOWER_PRECISION_FP``) a kernel
that casts floating spyre arguments to the autocast dtype (``torch.get_autocast_dtype
("spyre")``, float16 unless set) and runs the op below autocast. Torch's float32 list
(softmax, norms, losses) is not applied: the card computes float32 in 16-bit floats anyway
(docs/device.md), so promoting would only move bytes.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_map

__all__ = ["LOWER_PRECISION_OPS", "install"]

_KEY = "AutocastPrivateUse1"

LOWER_PRECISION_OPS = (
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d.input",
    "conv_transpose3d.input", "convolution", "_convolution", "addmm", "addmv", "addr",
    "matmul", "einsum", "mm", "mv", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul",
    "linalg_multi_dot", "prelu", "scaled_dot_product_attention",
)  # fmt: skip
"""torch's lower_precision_fp policy (aten/src/ATen/autocast_mode.h), by overload packet
or ``name.overload``."""

_libraries: list[torch.library.Library] = []  # keep the registrations alive


def _lower_precision_kernel(op: torch._ops.OpOverload) -> Any:
    excluded = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        dtype = torch.get_autocast_dtype("spyre")

        def cast(value: Any) -> Any:
            if (isinstance(value, torch.Tensor) and value.device.type == "spyre"
                    and value.is_floating_point() and value.dtype != torch.float64):  # fmt: skip
                return value.to(dtype)
            return value

        with torch._C._ExcludeDispatchKeyGuard(excluded):
            return op(*tree_map(cast, args), **tree_map(cast, kwargs))

    return kernel


def install() -> None:
    """Register the spyre autocast kernels (once per process)."""
    if _libraries:
        return
    fallthrough = torch.library.Library("_", "IMPL")  # noqa: TOR901 - a global fallback
    fallthrough.fallback(torch.library.fallthrough_kernel, _KEY)
    casts = torch.library.Library("aten", "IMPL")  # noqa: TOR901
    for name in LOWER_PRECISION_OPS:
        packet_name, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, packet_name)
        overloads = [overload] if overload else packet.overloads()
        for overload_name in overloads:
            op = getattr(packet, overload_name)
            casts.impl(op, _lower_precision_kernel(op), _KEY)
    _libraries.extend([fallthrough, casts])
