"""Affine evaluation and the coordinate sets of access tiles, for the KTIR reference
interpreter (spyre_ir/interp/ktir.py) and the lowering, which share them; light enough
for the `ktdp` dialect's own checks to import (`ConstructAccessTileOp.compat_warnings`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import AffineSetAttr
from xdsl.ir import Attribute, Operation
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)


class KtirError(Exception):
    """A KTIR construct the interpreter cannot run; `op` locates it."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


def eval_affine(expr: AffineExpr, dims: Sequence, symbols: Sequence = ()) -> np.ndarray:
    """`expr` on numpy arrays (broadcasting), with MLIR's floordiv/ceildiv/mod."""
    if isinstance(expr, AffineDimExpr):
        return np.asarray(dims[expr.position], dtype=np.int64)
    if isinstance(expr, AffineSymExpr):
        return np.asarray(symbols[expr.position], dtype=np.int64)
    if isinstance(expr, AffineConstantExpr):
        if not -(2**63) <= expr.value < 2**63:
            raise KtirError(f"affine constant {expr.value} does not fit in 64 bits")
        return np.asarray(expr.value, dtype=np.int64)
    assert isinstance(expr, AffineBinaryOpExpr)
    a, b = eval_affine(expr.lhs, dims, symbols), eval_affine(expr.rhs, dims, symbols)
    kind = expr.kind
    if kind == AffineBinaryOpKind.Add:
        return a + b
    if kind == AffineBinaryOpKind.Mul:
        return a * b
    if kind == AffineBinaryOpKind.FloorDiv:
        return np.floor_divide(a, b)
    if kind == AffineBinaryOpKind.CeilDiv:
        return -np.floor_divide(-a, b)
    return np.mod(a, b)


def in_set(attr: AffineSetAttr, dims: Sequence, symbols: Sequence = ()) -> np.ndarray:
    """Which points (broadcast arrays of dims) satisfy every constraint of the set."""
    ok = np.asarray(True)
    for c in attr.data.constraints:
        value = eval_affine(c.lhs - c.rhs, dims, symbols)
        ok = ok & (value == 0 if c.kind.value == "==" else value >= 0)
    return ok


def linear_form(expr: AffineExpr, dims: int, symbols: int) -> tuple[list[int], list[int], int]:
    """(dim coefficients, symbol coefficients, constant) of a linear affine expression."""
    zero_d, zero_s = [0] * dims, [0] * symbols
    constant = int(eval_affine(expr, zero_d, zero_s))

    def unit(n: int, i: int) -> list[int]:
        return [1 if k == i else 0 for k in range(n)]

    cd = [int(eval_affine(expr, unit(dims, i), zero_s)) - constant for i in range(dims)]
    cs = [int(eval_affine(expr, zero_d, unit(symbols, i))) - constant for i in range(symbols)]
    return cd, cs, constant


def set_box(attr: AffineSetAttr, op: Operation) -> list[tuple[int, int]]:
    """Per dim, the [lo, hi] that the set's constant single-dim constraints give."""
    s = attr.data
    lo: list[int | None] = [None] * s.num_dims
    hi: list[int | None] = [None] * s.num_dims
    for c in s.constraints:
        cd, cs, k = linear_form(c.lhs - c.rhs, s.num_dims, s.num_symbols)
        used = [d for d, a in enumerate(cd) if a]
        if len(used) != 1 or any(cs) or cd[used[0]] not in (1, -1):
            continue
        d = used[0]
        if cd[d] == 1 or c.kind.value == "==":  # d + k >= 0 (or == 0)
            bound = -k * cd[d]
            lo[d] = bound if lo[d] is None else max(lo[d], bound)
        if cd[d] == -1 or c.kind.value == "==":  # -d + k >= 0 (or == 0)
            bound = k * -cd[d] if cd[d] == -1 else -k
            hi[d] = bound if hi[d] is None else min(hi[d], bound)
    box = []
    for d in range(s.num_dims):
        if lo[d] is None or hi[d] is None:
            raise KtirError(f"'{op.name}': dim {d} of {attr} has no constant bounds", op)
        box.append((lo[d], hi[d]))
    return box


def order_perm(order: Attribute, op: Operation) -> list[int]:
    """The permutation an access order map is (result j is set dim perm[j])."""
    m = order.data
    perm = []
    for r in m.results:
        if not isinstance(r, AffineDimExpr):
            raise KtirError(f"'{op.name}': order {order} is not a permutation of dims", op)
        perm.append(r.position)
    if sorted(perm) != list(range(m.num_dims)):
        raise KtirError(f"'{op.name}': order {order} is not a permutation of dims", op)
    return perm


def type_clipped_box(
    box: list[tuple[int, int]], perm: list[int], shape: Sequence[int]
) -> list[tuple[int, int]] | None:
    """torch-spyre/ktir-cpu's reading of an access tile whose set holds more than its
    type: the tile is the set's points in [0, shape) of its type (its
    `AffineSet.enumerate(shape)`), which is the type's whole box when the set contains
    it. That box, or None when the reading does not apply (a permuted order, or a set
    not containing the type's box)."""
    if perm != sorted(perm) or len(box) != len(shape):
        return None
    if all(lo <= 0 and hi >= n - 1 for (lo, hi), n in zip(box, shape)):
        return [(0, n - 1) for n in shape]
    return None


def tile_box(
    space: AffineSetAttr,
    order: Attribute,
    shape: Sequence[int],
    op: Operation,
    error: type[Exception] | None = None,
) -> list[tuple[int, int]]:
    """Per set dim, the [lo, hi] a tile of `shape` covers: its set's box, which KTDP.td
    says is the tile's shape; a set holding more than the tile's type is clipped to the
    type as ktir-cpu reads it (`type_clipped_box`; the op warns, its
    `compat_warnings`). Any other mismatch is a located `error` (KtirError)."""
    box = set_box(space, op)
    perm = order_perm(order, op)
    extents = [box[perm[j]][1] - box[perm[j]][0] + 1 for j in range(len(perm))]
    if list(extents) == list(shape):
        return box
    clipped = type_clipped_box(box, perm, shape)
    if clipped is not None and op.name == "ktdp.construct_access_tile":
        return clipped
    raise (error or KtirError)(
        f"'{op.name}': the set spans {extents} but the tile is {list(shape)} "
        "(KTDP.td: a tile's shape is that of its coordinate set)",
        op,
    )


def tile_points(
    space: AffineSetAttr, order: Attribute, shape: Sequence[int], op: Operation
) -> list[np.ndarray]:
    """The set's points laid out in the tile's shape: one array of shape `shape` per set
    dim (the point's coordinate), from the set's box (`tile_box`) through the order."""
    box = tile_box(space, order, shape, op)
    perm = order_perm(order, op)
    grids = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij") if shape else []
    points: list[np.ndarray] = [np.zeros(shape, np.int64)] * len(perm)
    for j, d in enumerate(perm):
        points[d] = grids[j] + box[d][0]
    return points
