"""Shape rules of torch semantics, shared by the verifiers, the FX importer and the
interpreters so all three agree on what a shape means.

Every function raises `ShapeError` with a sentence a user can act on.
"""

from __future__ import annotations

from collections.abc import Sequence

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """A shape that torch would reject."""


def broadcast_shapes(*shapes: Sequence[int]) -> Shape:
    """torch/numpy broadcasting: right-aligned, each dim equal or 1."""
    rank = max((len(s) for s in shapes), default=0)
    result = []
    for axis in range(-rank, 0):
        sizes = {s[axis] for s in shapes if len(s) >= -axis} - {1}
        if len(sizes) > 1:
            listed = " and ".join(str(list(s)) for s in shapes)
            raise ShapeError(f"shapes {listed} do not broadcast (dim {axis})")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def can_broadcast_to(source: Sequence[int], target: Sequence[int]) -> bool:
    """Whether `expand`/`broadcast_to` may take `source` to `target`."""
    if len(source) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(reversed(source), reversed(target)))


def matmul_shape(lhs: Sequence[int], rhs: Sequence[int]) -> Shape:
    """torch.matmul: 1-D promotion, batch broadcasting, and inner sizes that agree."""
    if not lhs or not rhs:
        raise ShapeError("matmul operands must have rank >= 1")
    a = (1, *lhs) if len(lhs) == 1 else tuple(lhs)
    b = (*rhs, 1) if len(rhs) == 1 else tuple(rhs)
    if a[-1] != b[-2]:
        raise ShapeError(
            f"matmul inner sizes differ: {list(lhs)} @ {list(rhs)} ({a[-1]} != {b[-2]})"
        )
    batch = broadcast_shapes(a[:-2], b[:-2])
    out = [*batch]
    if len(lhs) > 1:
        out.append(a[-2])
    if len(rhs) > 1:
        out.append(b[-1])
    return tuple(out)


def normalize_dims(dims: Sequence[int], rank: int) -> tuple[int, ...]:
    """Negative dims counted from the end; each dim in range and listed once."""
    out = []
    for d in dims:
        if not -max(rank, 1) <= d < max(rank, 1):
            raise ShapeError(f"dim {d} is out of range for rank {rank}")
        out.append(d % max(rank, 1))
    if len(set(out)) != len(out):
        raise ShapeError(f"dims {list(dims)} name a dimension twice")
    return tuple(out)


def reduce_shape(shape: Sequence[int], dims: Sequence[int], keepdim: bool) -> Shape:
    reduced = set(normalize_dims(dims, len(shape)))
    if keepdim:
        return tuple(1 if i in reduced else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in reduced)


def transpose_shape(shape: Sequence[int], perm: Sequence[int]) -> Shape:
    if sorted(perm) != list(range(len(shape))):
        raise ShapeError(f"{list(perm)} is not a permutation of {len(shape)} dims")
    return tuple(shape[p] for p in perm)


def slice_length(size: int, start: int, stop: int, step: int) -> int:
    if step <= 0:
        raise ShapeError(f"slice step must be positive, got {step}")
    if not (0 <= start <= size and start <= stop <= size):
        raise ShapeError(f"slice [{start}:{stop}] is outside a dim of size {size}")
    return (stop - start + step - 1) // step


def slice_shape(
    shape: Sequence[int],
    starts: Sequence[int],
    stops: Sequence[int],
    steps: Sequence[int],
) -> Shape:
    if not len(shape) == len(starts) == len(stops) == len(steps):
        raise ShapeError("slice needs one start, stop and step per dim")
    return tuple(slice_length(*args) for args in zip(shape, starts, stops, steps, strict=True))


def concat_shape(shapes: Sequence[Sequence[int]], dim: int) -> Shape:
    if not shapes:
        raise ShapeError("concat needs at least one input")
    rank = len(shapes[0])
    (axis,) = normalize_dims([dim], rank)
    for s in shapes:
        if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, shapes[0])) if i != axis):
            raise ShapeError(f"concat inputs {[list(x) for x in shapes]} differ outside dim {axis}")
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return tuple(out)


def pad_shape(shape: Sequence[int], low: Sequence[int], high: Sequence[int]) -> Shape:
    if not len(shape) == len(low) == len(high):
        raise ShapeError("pad needs one low and one high amount per dim")
    out = tuple(s + lo + hi for s, lo, hi in zip(shape, low, high))
    if any(d < 0 for d in out):
        raise ShapeError(f"padding {list(low)}/{list(high)} makes a negative size")
    return out


def gather_shape(table: Sequence[int], indices: Sequence[int]) -> Shape:
    """Rows of `table` (dim 0) picked by `indices`, as an embedding lookup does."""
    if not table:
        raise ShapeError("gather needs a table of rank >= 1")
    return (*indices, *table[1:])


def numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
