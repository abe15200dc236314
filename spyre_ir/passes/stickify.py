"""`spyre-stickify`: give every tensor a device stick layout, and make every byte move
that a layout change needs an explicit `spyre.restickify`.

The first pass of `spyre-to-dataflow` (docs/dataflow.md). Input and output are L1
(`spyre` ops in `func.func`s); afterwards every tensor type carries
`#spyre.stick<...>` (spyre_ir/dialects/stick_layout.py), except as listed below. The
values do not change: the L1 interpreter ignores layouts and runs `spyre.restickify`
as the identity, so the IR computes the same bits before and after.

    spyre-opt in.mlir -p spyre-stickify

The rules (the layout rules of torch-spyre as summarised in /work/shared/spyre-hardware.md,
"Layout rules used by torch-spyre"; the layouts are `spyre_ir.layout`'s, which follow
torch-spyre's SpyreTensorLayout):

1. Every tensor gets the default layout of its shape and element type
   (`layout.default_layout`): "the innermost host dimension is the stick dimension,
   padded up to whole sticks". That covers function arguments and results, op results
   and constants (a `spyre.constant`/`arith.constant` gets the layout on its value's
   type as well, which is where its printed form keeps the type). A type that already
   carries a `#spyre.stick` keeps it: an argument's layout is its caller's, and a
   second run of the pass changes nothing.
   Not annotated: rank-0 tensors (scalars are broadcast constants, held in no stick)
   and tensors with a zero-size dim (no bytes; `spyre_ir.layout` has no layout for
   them).
2. Every op reads its operands in the default layout of their shapes, and a function
   returns (and a `func.call` passes) exactly its signature's types. Where a value
   arrives in another layout a `spyre.restickify` to the needed one is inserted ("where
   layouts conflict, a re-stickify is inserted"), once per value and layout. Since every
   value the pass annotates is in its default layout, this happens only for values
   that came with a layout (arguments, or ops already annotated).
   What the defaults give the rules of spyre-hardware.md:
   * pointwise ops: "all operands share the stick dimension (unless broadcast along
     it)". Broadcasting aligns dims from the right and every default layout sticks on
     the last dim, so operands share it; an operand of size 1 there (broadcast along
     it) sticks on that size-1 dim, one element per stick.
   * matmul: "A is sticked on k; B and C on n". For A `[.., m, k]`, B `[.., k, n]` and
     C `[.., m, n]` the last dims are k, n and n, so the defaults hold; a 1-D B `[k]`
     (torch promotes it to `[k, 1]`, n squeezed away) and a 1-D A `[k]` stick on k. An
     operand that comes in another layout (e.g. a weight argument sticked on k) gets a
     restickify. (A transpose feeding B is data movement of its own, rule 4, which
     `spyre-fuse` may turn into a `perm` load.)
   * reductions: "a reduction over the stick dimension yields a sparse result (one
     element per stick)". With `keepdim` the result `[.., 1]` has default layout
     sticked on its size-1 last dim: one element padded to one whole stick
     (`pad = elements per stick - 1`), which is that sparse result. Without `keepdim`
     the reduced dim is gone and the result's default layout sticks on its new last
     dim (dense); the reduction's store writes it in that layout.
3. `spyre.reshape` is a *view* (moves no byte) when its source's layout and its
   result's layout place every element at the same device offset. Such a reshape gets
   the result's default layout (or the one it already carried). Otherwise its bytes
   must move, and the representation is:

       %r = spyre.reshape %x : tensor<4x100xf16, #spyre.stick<...>> -> tensor<400xf16>
       %s = spyre.restickify %r : tensor<400xf16> -> tensor<400xf16, #spyre.stick<...>>

   the reshape's result carries NO layout (it is the logical row-major reinterpretation,
   never stored) and its only users are `spyre.restickify` ops to the layout the result
   needs (its default), which every other user reads. Why: a layout of the reshaped
   shape that reinterprets the source's bytes does in general not exist (a padded row
   of the source would need padding in the middle of a stick dim of the result), and
   neither does one of the source shape that matches the result's bytes, so there is no
   encoded "view" to put on either side. So after this pass
   * a `spyre.reshape` with an encoded result is always a view (`spyre-fuse` leaves it
     outside kernels), and
   * every byte move that a layout mismatch causes is a `spyre.restickify` (a `copy`
     kernel); a reshape feeding one is that copy's index map.
   A reshape to or from a rank-0 tensor follows the same rule: a scalar has no layout,
   so it is no view; a reshape to rank 0 (or to an empty tensor) needs no restickify.
4. `spyre.transpose` (any permutation, also one that moves the stick dim) produces the
   default layout of its result and reads its input in whatever layout it has: the
   transpose itself is the data movement. (spyre-hardware.md states no transpose rule;
   this one is ours: a transpose that moves the stick dim can be no view between
   default layouts, and one that keeps it in general still reorders whole sticks.) `spyre.restickify` too reads any layout.
5. Ops of other dialects that touch tensors (other than `func.call`, `func.return`,
   `arith.constant`) are a located error: their layout needs are unknown.

How the view test (`reshape_is_view`) works. Both layouts, as functions of the
row-major linear index of the tensor, are sums over a mixed-radix split of that index:
digit times device stride. The split of each host dim is given by the device dims that
walk it (`StickLayout.walkers`), truncated to the host extent; a stick dim padded to
whole sticks (extent not a multiple of the stick, more than one stick) is no such
digit and is kept as one opaque term. Coalescing neighbouring digits whose strides
chain (stride_outer = size_inner * stride_inner) and dropping size-1 digits gives a
canonical form; equal forms (and equal allocation sizes) mean equal offsets for every
element, so the test never calls a reshape a view that is not one. That it also never
misses a view was checked against the definition (`offsets_agree`: every element's
offset from `layout.host_to_device_offsets`) on all 77 million pairs of layouts
(default, sticked on each dim, one generic order) of all shapes of rank <= 4 holding
1..69 elements and some up to 1024 elements, with f16, f32 and i64 elements (64, 32 and
16 per stick); tests/test_stickify.py repeats a smaller sweep (a larger one is marked
slow) and a random one. The test costs O(rank) whatever the shape, so the pass uses it
for every reshape, small or large, and never materialises offsets: one rule for all
sizes, none of the memory `host_to_device_offsets` needs for a large tensor.

Not this pass's business: which value the padding of a stick holds. Consumers need
different fills (0 for a matmul's k or a sum, -inf for a max, ...); `spyre-tile` picks
them as the `pad` of each `dataflow.load`, so a layout says where padding is, never
what it holds.

No options: the layout choice is fixed by the rules above.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FunctionType,
    ModuleOp,
    NoneAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue, Use
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from spyre_ir.diagnostics import located_error
from spyre_ir.dialects.spyre import (
    ConstantOp,
    ReshapeOp,
    RestickifyOp,
    SpyreOp,
    TransposeOp,
    element_type_name,
)
from spyre_ir.dialects.stick_layout import StickLayoutAttr, tensor_layout
from spyre_ir.layout import StickLayout, default_layout, host_to_device_offsets

# ------------------------------------------------------------------ layouts of types


def _needs_layout(t: TensorType) -> bool:
    """Rank >= 1, static and non-empty: the tensors a stick layout can describe."""
    shape = t.get_shape()
    return len(shape) > 0 and min(shape) >= 1


def default_type(t: Attribute, where: Operation) -> Attribute:
    """`t` with the default stick layout of its shape, if it is a tensor that takes one
    and carries none; otherwise `t` itself. `where` locates errors."""
    if not isinstance(t, TensorType) or isinstance(t.encoding, StickLayoutAttr):
        return t
    if not isinstance(t.encoding, NoneAttr):
        raise located_error(
            where, f"spyre-stickify: {t} carries an encoding that is no #spyre.stick layout"
        )
    if not _needs_layout(t):
        return t
    try:
        return _with_default_layout(t)
    except ValueError as error:
        raise located_error(where, f"spyre-stickify: no stick layout for {t}: {error}") from None


@functools.lru_cache(maxsize=1024)
def _with_default_layout(t: TensorType) -> TensorType:
    """A plain tensor type in its shape's default layout. Types are immutable values, so
    each is laid out once (a long graph repeats a few; issue 18: compile time)."""
    layout = default_layout(t.get_shape(), element_type_name(t.element_type))
    return TensorType(t.element_type, t.get_shape(), StickLayoutAttr.from_layout(layout))


def _plain(t: TensorType) -> TensorType:
    return TensorType(t.element_type, t.get_shape())


def _default_of(t: Attribute, where: Operation) -> Attribute:
    """`t` in the default layout of its shape, whatever layout it carries now."""
    if isinstance(t, TensorType) and isinstance(t.encoding, StickLayoutAttr):
        t = _plain(t)
    return default_type(t, where)


# ------------------------------------------------------------------ reshape views


def _dim_terms(layout: StickLayout, h: int) -> list[tuple]:
    """Host dim h as (size, device stride) digits, finest first, or one opaque
    ("padded", ...) term for a stick dim padded across more than one stick."""
    merged: list[tuple[int, int]] = []
    for j in layout.walkers(h):
        size, stride = layout.device_sizes[j], layout.device_strides[j]
        if size == 1:
            continue
        if merged and stride == merged[-1][0] * merged[-1][1]:
            merged[-1] = (merged[-1][0] * size, merged[-1][1])
        else:
            merged.append((size, stride))
    terms: list[tuple] = []
    rest = layout.host_shape[h]
    for k, (size, stride) in enumerate(merged):
        if rest == 1:
            break
        if rest <= size:  # the host extent ends inside this digit
            terms.append((rest, stride))
            rest = 1
        elif rest % size == 0:
            terms.append((size, stride))
            rest //= size
        else:  # whole sticks padded in the middle: not a mixed-radix digit
            terms.append(("padded", rest, tuple(merged[k:])))
            rest = 1
    return terms


def _canonical(layout: StickLayout) -> list[tuple]:
    """The offset function over the row-major linear index, outermost digit first."""
    out: list[tuple] = []
    for h in range(len(layout.host_shape)):
        for term in reversed(_dim_terms(layout, h)):
            plain = term[0] != "padded"
            if plain and out and out[-1][0] != "padded" and out[-1][1] == term[0] * term[1]:
                out[-1] = (out[-1][0] * term[0], term[1])
            else:
                out.append(term)
    return out


def reshape_is_view(source: StickLayout, result: StickLayout) -> bool:
    """Whether a row-major reshape from `source` to `result` moves no byte: every
    element at the same device offset (and allocations of one size). O(rank); see the
    module docstring for why it agrees with `offsets_agree`."""
    if source.elem_bytes != result.elem_bytes:
        return False
    if source.device_elements != result.device_elements:
        return False
    return _canonical(source) == _canonical(result)


def offsets_agree(source: StickLayout, result: StickLayout) -> bool:
    """The definition `reshape_is_view` implements, element by element (costs memory
    and time in the element count; for tests)."""
    return (
        source.elem_bytes == result.elem_bytes
        and source.device_elements == result.device_elements
        and np.array_equal(host_to_device_offsets(source), host_to_device_offsets(result))
    )


def _layout_of(t: Attribute) -> StickLayout | None:
    return tensor_layout(t) if isinstance(t, TensorType) else None


# ------------------------------------------------------------------ the pass


class _FunctionStickifier:
    """Annotates one function body, in order; a value's type is final before its users
    are reached (defs dominate uses in the single-block bodies of L1)."""

    def __init__(self, fn: func.FuncOp, signatures: dict[str, FunctionType]):
        self.fn = fn
        self.signatures = signatures
        self.rewriter = PatternRewriter(fn)
        self.restickified: dict[tuple[SSAValue, Attribute], SSAValue] = {}

    def run(self) -> None:
        if len(self.fn.body.blocks) != 1:
            raise located_error(
                self.fn, "spyre-stickify: expects a function body of one block (L1)"
            )
        block = self.fn.body.block
        signature = self.signatures[self.fn.sym_name.data]
        for arg, t in zip(block.args, signature.inputs.data):
            if arg.type != t:
                self.rewriter.replace_value_with_new_type(arg, t)
        for op in list(block.ops):
            self.visit(op)

    # ---- operands

    def required_types(self, op: Operation) -> Sequence[Attribute | None]:
        """The type each operand must have; None: any layout."""
        if isinstance(op, (ReshapeOp, TransposeOp, RestickifyOp)):
            return [None]
        if isinstance(op, func.ReturnOp):
            return self.signatures[self.fn.sym_name.data].outputs.data
        if isinstance(op, func.CallOp):
            callee = self.signatures.get(op.callee.root_reference.data)
            if callee is None:
                raise located_error(op, f"spyre-stickify: no function {op.callee} in the module")
            return callee.inputs.data
        return [_default_of(v.type, op) for v in op.operands]

    def restickify(self, value: SSAValue, target: Attribute, before: Operation) -> SSAValue:
        key = (value, target)
        if key not in self.restickified:
            new = RestickifyOp(value, target)
            new.location = before.location
            self.rewriter.insert(new, InsertPoint.before(before))
            if value.name_hint:
                new.result.name_hint = f"{value.name_hint}_restick"
            self.restickified[key] = new.result
        return self.restickified[key]

    def fix_operands(self, op: Operation) -> None:
        for index, (value, needed) in enumerate(zip(op.operands, self.required_types(op))):
            if needed is None or value.type == needed:
                continue
            if _layout_of(needed) is None:
                # Only a layout may differ; anything else is the IR's own error.
                continue
            new = self.restickify(value, needed, op)

            def this_operand(use: Use, op: Operation = op, index: int = index) -> bool:
                return use.operation is op and use.index == index

            self.rewriter.replace_uses_with_if(value, new, this_operand)

    # ---- results

    def visit(self, op: Operation) -> None:
        self.fix_operands(op)
        if isinstance(op, func.ReturnOp):
            return
        if isinstance(op, ReshapeOp):
            self.visit_reshape(op)
        elif isinstance(op, ConstantOp):
            self.retype_constant(op, lambda v: ConstantOp(v))
        elif isinstance(op, arith.ConstantOp):
            self.retype_constant(op, lambda v: arith.ConstantOp(v))
        elif isinstance(op, func.CallOp):
            callee = self.signatures[op.callee.root_reference.data]
            for result, t in zip(op.results, callee.outputs.data):
                if result.type != t:
                    self.rewriter.replace_value_with_new_type(result, t)
        elif isinstance(op, SpyreOp):
            for result in op.results:
                t = default_type(result.type, op)
                if t != result.type:
                    self.rewriter.replace_value_with_new_type(result, t)
        elif any(isinstance(v.type, TensorType) for v in (*op.operands, *op.results)):
            raise located_error(op, f"spyre-stickify: cannot give layouts to '{op.name}'")

    def retype_constant(self, op: Operation, build) -> None:
        value = op.properties["value"]
        t = op.results[0].type
        if not isinstance(value, DenseIntOrFPElementsAttr):
            return
        new_t = default_type(t, op)
        if new_t == t:
            return
        new = build(DenseIntOrFPElementsAttr(new_t, value.data))
        new.location = op.location
        self.rewriter.replace(op, new)

    def visit_reshape(self, op: ReshapeOp) -> None:
        t = op.result.type
        assert isinstance(t, TensorType)
        encoded = _layout_of(t) is not None
        target = t if encoded else default_type(t, op)
        target_layout = _layout_of(target)
        if target_layout is None:  # to rank 0 or an empty tensor: no layout to honour
            return
        source_layout = _layout_of(op.input.type)
        if source_layout is not None and reshape_is_view(source_layout, target_layout):
            if target != t:
                self.rewriter.replace_value_with_new_type(op.result, target)
            return
        # Bytes move: the result stays the plain reinterpretation, and whoever reads
        # it reads a restickify to `target` (an existing restickify reads it directly).
        result = op.result
        if encoded:
            result = self.rewriter.replace_value_with_new_type(result, _plain(t))
        if all(isinstance(use.operation, RestickifyOp) for use in result.uses):
            return
        next_op = op.next_op
        assert next_op is not None  # a function body ends with func.return
        moved = self.restickify(result, target, next_op)
        self.rewriter.replace_uses_with_if(
            result, moved, lambda use: not isinstance(use.operation, RestickifyOp)
        )


@dataclass(frozen=True)
class SpyreStickify(ModulePass):
    """Stick layouts on every tensor; `spyre.restickify` where bytes must move."""

    name = "spyre-stickify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # The layouts of one module's types: a process compiling many shapes would
        # otherwise keep ~2.6 KiB per shape (issue 19: host memory)
        _with_default_layout.cache_clear()
        functions = [f for f in op.walk() if isinstance(f, func.FuncOp)]
        # Signatures first, so that calls see their callee's final types.
        signatures: dict[str, FunctionType] = {}
        for fn in functions:
            old = fn.function_type
            signature = FunctionType.from_lists(
                [default_type(t, fn) for t in old.inputs.data],
                [default_type(t, fn) for t in old.outputs.data],
            )
            if signature != old:
                fn.function_type = signature
            signatures[fn.sym_name.data] = signature
        for fn in functions:
            if fn.body.blocks:
                _FunctionStickifier(fn, signatures).run()
