"""`tensor.extract_slice` in the KTIR interpreter: static offsets, sizes and strides of
each tile's tensor (values carry the tiles as their first dim)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import tensor


def extract_slice(it, op: tensor.ExtractSliceOp) -> list:
    from spyre_ir.interp.ktir import KtirError

    if len(op.offsets) or len(op.sizes) or len(op.strides):
        raise KtirError(f"'{op.name}' with dynamic offsets, sizes or strides is not supported", op)
    v = np.asarray(it.get(op.source))
    window = [
        slice(o, o + (n - 1) * s + 1, s)
        for o, n, s in zip(
            op.static_offsets.get_values(),
            op.static_sizes.get_values(),
            op.static_strides.get_values(),
        )
    ]
    part = v[(slice(None), *window)]
    return [part.reshape((v.shape[0], *op.result.type.get_shape())).copy()]
