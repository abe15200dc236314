"""spyre-fold-layouts: layouts as access patterns - a kernel stores its result in the
layout its reader needs, so a relayout between kernels becomes a view.

After spyre-stickify every op result is in the default layout of its shape, and a
layout change is data movement: a `spyre.restickify` of a row-major reshape (a
projection's [s, heads * d] result viewed as [1, s, heads, d], a layer's [s, h] result
returned as [1, s, h]), or a `spyre.transpose` (attention's [b, heads, s, d] output read
as [b, s, heads, d]), each a kernel that reads and writes the whole tensor. But the
kernel producing the value writes it box by box anyway; it can write those boxes into
any layout. This pass picks, for a value whose only reader is such a relayout, the
layout in which the relayout moves no byte, and gives it to the value:

* `restickify(reshape(x))` to a layout T: x gets the layout of its own shape whose
  row-major reshape is a view of T (`merged_layout`); the reshape then carries T and the
  restickify goes. Only reshapes that merge consecutive dims of the result into one dim
  of x (x coarser: [s, heads * d] -> [1, s, heads, d]) have such a layout in general.
* `transpose(x)` with the default layout T of its result: x gets `transposed_layout(T)`,
  the layout in which every element already sits where T puts the transposed one. The
  transpose stays in the IR (its value semantics are a transpose) but moves no byte:
  `is_view_transpose` holds, and spyre-fuse leaves it between kernels as a free view,
  as it leaves a reshape view.

The value must be computed by a kernel (no function argument: its layout is the
caller's; no constant) and read only by the relayout; through a chain of reshape views
(v's head split: reshape, restickify, transpose) the layout is carried back to the
producer. Every layout chosen is checked: `layout.validate` accepts it, the stick dim
stays the value's last dim with whole sticks (what matmul and row kernels store), and a
reshape's view is confirmed by stickify's exact `reshape_is_view`.

Option `fold-layouts` (default true; false: the relayouts stay kernels of their own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter

from spyre_ir.dialects import spyre
from spyre_ir.dialects.stick_layout import StickLayoutAttr, tensor_layout
from spyre_ir.layout import StickLayout, contiguous_strides, default_layout, validate
from spyre_ir.passes.stickify import reshape_is_view

# ------------------------------------------------------------------ layouts


def _groups(coarse: Sequence[int], fine: Sequence[int]) -> list[int] | None:
    """For each dim of `fine`, the dim of `coarse` it merges into (a row-major reshape
    whose every coarse dim is the product of consecutive fine dims), or None."""
    owner: list[int] = []
    j = 0
    for i, size in enumerate(coarse):
        product = 1
        while j < len(fine) and (product < size or fine[j] == 1 and product == size):
            if product * fine[j] > size:
                return None
            product *= fine[j]
            owner.append(i)
            j += 1
        if product != size:
            return None
    return owner if j == len(fine) else None


def merged_layout(target: StickLayout, shape: Sequence[int]) -> StickLayout | None:
    """The layout of `shape` whose row-major reshape to `target.host_shape` is a view of
    `target` (each dim of `shape` a product of consecutive target dims), or None."""
    fine = target.host_shape
    owner = _groups(shape, fine)
    if owner is None:
        return None
    inner = [1] * len(fine)  # the fine dims inside each one's coarse dim
    for h in range(len(fine) - 2, -1, -1):
        inner[h] = inner[h + 1] * fine[h + 1] if owner[h + 1] == owner[h] else 1
    strides = contiguous_strides(shape)
    sizes, dims, steps = [], [], []
    for k, h in enumerate(target.dim_map):
        if target.device_sizes[k] == 1 and k != len(target.dim_map) - 1:
            continue  # a size-1 device dim walks nothing
        sizes.append(target.device_sizes[k])
        dims.append(owner[h])
        steps.append(target.tile_factor(k) * inner[h] * strides[owner[h]])
    walked = set(dims)
    lead = [d for d in range(len(shape)) if d not in walked]
    if any(shape[d] != 1 for d in lead):
        return None
    layout = StickLayout(tuple(shape), target.elem_bytes, owner[target.stick_dim],
                         (1,) * len(lead) + tuple(sizes), tuple(lead) + tuple(dims),
                         tuple(strides[d] for d in lead) + tuple(steps))  # fmt: skip
    return layout if _storable(layout) else None


def transposed_layout(target: StickLayout, perm: Sequence[int]) -> StickLayout:
    """The layout of x in which `transpose(x, perm)` has `target` and moves no byte:
    the same device dims, each walking the x dim the result dim it walked came from."""
    result = target.host_shape
    shape = [0] * len(result)
    for j, p in enumerate(perm):
        shape[p] = result[j]
    strides = contiguous_strides(shape)
    dims = tuple(perm[h] for h in target.dim_map)
    steps = tuple(target.tile_factor(k) * strides[d] for k, d in enumerate(dims))
    return StickLayout(tuple(shape), target.elem_bytes, perm[target.stick_dim],
                       target.device_sizes, dims, steps)  # fmt: skip


def _storable(layout: StickLayout) -> bool:
    """A layout kernels store into: valid, sticked on the last dim in whole sticks."""
    shape = layout.host_shape
    if validate(layout, shape, layout.elem_bytes):
        return False
    last = len(shape) - 1
    return layout.stick_dim == last and shape[last] % layout.elems_per_stick == 0


def _layout(value: SSAValue) -> StickLayout | None:
    t = value.type
    return tensor_layout(t) if isinstance(t, TensorType) else None


def is_view_transpose(op: Operation) -> bool:
    """A transpose whose input's layout places every element where its result's layout
    places the transposed one: it moves no byte (spyre-fuse leaves it between kernels)."""
    if not isinstance(op, spyre.TransposeOp):
        return False
    source, result = _layout(op.input), _layout(op.result)
    if source is None or result is None:
        return False
    return source == transposed_layout(result, spyre.ints(op.perm))


# ------------------------------------------------------------------ the rewrite


def _typed(value: SSAValue, layout: StickLayout) -> TensorType:
    t = value.type
    assert isinstance(t, TensorType)
    return TensorType(t.element_type, t.get_shape(), StickLayoutAttr.from_layout(layout))


@dataclass
class _Folder:
    rewriter: PatternRewriter

    def settable(self, value: SSAValue, layout: StickLayout) -> bool:
        """Whether `value` may take `layout`: a kernel's result read only by the relayout
        being folded, or a reshape view of one (its input takes the merged layout)."""
        owner = value.owner
        if not isinstance(owner, Operation) or not value.has_one_use():
            return False
        if not _storable(layout):
            return False
        if isinstance(owner, spyre.ReshapeOp):
            inner = merged_layout(layout, spyre.shape_of(owner.input))
            return inner is not None and self.settable(owner.input, inner)
        if isinstance(owner, (spyre.ConstantOp, spyre.FullOp)) or is_view_transpose(owner):
            return False
        return isinstance(owner, spyre.SpyreOp) and _layout(value) is not None

    def set(self, value: SSAValue, layout: StickLayout) -> None:
        owner = value.owner
        if isinstance(owner, spyre.ReshapeOp):
            inner = merged_layout(layout, spyre.shape_of(owner.input))
            assert inner is not None
            self.set(owner.input, inner)
        self.rewriter.replace_value_with_new_type(value, _typed(value, layout))

    def fold_restickify(self, op: spyre.RestickifyOp) -> None:
        reshape = op.input.owner
        target = _layout(op.result)
        if not isinstance(reshape, spyre.ReshapeOp) or target is None:
            return
        if _layout(reshape.result) is not None:
            return  # a typed reshape is a view already
        readers = [u.operation for u in reshape.result.uses]
        if any(not isinstance(r, spyre.RestickifyOp) or r.result.type != op.result.type
               for r in readers):  # fmt: skip
            return
        inner = merged_layout(target, spyre.shape_of(reshape.input))
        if inner is None or not self.settable(reshape.input, inner):
            return
        self.set(reshape.input, inner)
        self.rewriter.replace_value_with_new_type(reshape.result, op.result.type)
        source = _layout(reshape.input)
        assert source is not None and reshape_is_view(source, target)
        for reader in readers:
            self.rewriter.replace_all_uses_with(reader.results[0], reshape.result)
            self.rewriter.erase(reader)

    def fold_transpose(self, op: spyre.TransposeOp) -> None:
        target = _layout(op.result)
        if target is None or is_view_transpose(op):
            return
        if target != default_layout(target.host_shape, target.elem_bytes):
            return
        inner = transposed_layout(target, spyre.ints(op.perm))
        if self.settable(op.input, inner):
            self.set(op.input, inner)
            assert is_view_transpose(op)


@dataclass(frozen=True)
class SpyreFoldLayouts(ModulePass):
    """Kernels store their results in the layout their relayout reader needs, so the
    relayout is a view (see the module docstring)."""

    name = "spyre-fold-layouts"

    fold_layouts: bool = True
    """false: every restickify of a reshape and every transpose stays a byte move."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.fold_layouts:
            return
        for fn in [f for f in op.walk() if isinstance(f, func.FuncOp) and f.body.blocks]:
            folder = _Folder(PatternRewriter(fn))
            for inner in list(fn.body.block.ops):
                if inner.parent is None:
                    continue  # erased by an earlier fold
                if isinstance(inner, spyre.RestickifyOp):
                    folder.fold_restickify(inner)
                elif isinstance(inner, spyre.TransposeOp):
                    folder.fold_transpose(inner)
