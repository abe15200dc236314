"""Dynamic memory views fixed by the scalar arguments: a view whose sizes or strides
are SSA values (`sizes: [%n]` with `%n = arith.index_cast %n_elements`, a
`memref<?xf32>`, a coordinate set `(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)` over its
dynamic sizes) becomes the static view those values give, once the kernel's scalars are
known. This is how a KTIR kernel with run-time sizes compiles: once per set of scalar
values (the shapes it is run at), as spyre-run and `ktir-to-dataflow{scalars=...}` give
them; the interpreter and the lowering then see static views."""

from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import AffineSetAttr, DenseArrayBase, IntegerAttr, MemRefType, i64
from xdsl.ir import BlockArgument, SSAValue
from xdsl.ir.affine import AffineConstraintExpr, AffineExpr, AffineSet

from spyre_ir.dialects import ktdp
from spyre_ir.dialects import ktdp_syntax as syntax
from spyre_ir.dialects.ktdp_types import DYNAMIC

_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci")


def fold_index(value: SSAValue, fn: func.FuncOp, scalars: dict[str, float]) -> int | None:
    """The integer `value` has for these scalars (None: not known before run time)."""
    from spyre_ir.lowering.ktir_kernel import _INDEX_OPS

    if isinstance(value, BlockArgument):
        if value.owner is not fn.body.block:
            return None
        name = value.name_hint or f"arg{value.index}"
        v = scalars.get(name)
        return int(v) if v is not None and v == int(v) else None
    op = value.owner
    if isinstance(op, arith.ConstantOp):
        return op.value.value.data if isinstance(op.value, IntegerAttr) else None
    args = [fold_index(v, fn, scalars) for v in op.operands]
    if any(a is None for a in args):
        return None
    if op.name in _CASTS:
        return args[0]
    step = _INDEX_OPS.get(op.name)
    return int(step(*args)) if step is not None else None


def specialize_views(fn: func.FuncOp, scalars: dict[str, float]) -> None:
    """Make static every dynamic view of `fn` whose sizes and strides the scalars fix
    (in place; the others are left for the lowering and interpreter to refuse)."""
    for op in list(fn.walk()):
        if isinstance(op, ktdp.ConstructMemoryViewOp) and (op.sizes or op.strides):
            _specialize(op, fn, scalars)


def _filled(static: tuple[int, ...], values: list[int]) -> list[int]:
    it = iter(values)
    return [next(it) if d == DYNAMIC else d for d in static]


def _specialize(op: ktdp.ConstructMemoryViewOp, fn: func.FuncOp, scalars: dict[str, float]):
    sizes = [fold_index(v, fn, scalars) for v in op.sizes]
    strides = [fold_index(v, fn, scalars) for v in op.strides]
    if any(v is None for v in (*sizes, *strides)):
        return
    static_sizes = _filled(op.sizes_static(), sizes)  # type: ignore[arg-type]
    static_strides = _filled(op.strides_static(), strides)  # type: ignore[arg-type]
    props = dict(op.properties)
    props["static_sizes"] = DenseArrayBase.from_list(i64, static_sizes)
    props["static_strides"] = DenseArrayBase.from_list(i64, static_strides)
    props["operandSegmentSizes"] = syntax.segments(1, 0, 0)
    coords = op.coordinate_set.data
    if coords.num_symbols:  # the set's symbols are the view's dynamic sizes, in order
        if coords.num_symbols != len(sizes):
            return
        symbols = [AffineExpr.constant(int(s)) for s in sizes]  # type: ignore[arg-type]
        dims = [AffineExpr.dimension(i) for i in range(coords.num_dims)]
        constraints = tuple(
            AffineConstraintExpr(
                c.kind,
                c.lhs.replace_dims_and_symbols(dims, symbols),
                c.rhs.replace_dims_and_symbols(dims, symbols),
            )
            for c in coords.constraints
        )
        props["coordinate_set"] = AffineSetAttr(AffineSet(coords.num_dims, 0, constraints))
    memref = op.result.type
    assert isinstance(memref, MemRefType)
    new = ktdp.ConstructMemoryViewOp.create(
        operands=[op.offset],
        result_types=[
            MemRefType(memref.element_type, static_sizes, memref.layout, memref.memory_space)
        ],
        properties=props,
        attributes=dict(op.attributes),
    )
    new.result.name_hint = op.result.name_hint
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(new, op)
    op.result.replace_all_uses_with(new.result)
    block.erase_op(op)
