"""Multi-function KTIR: a kernel that sequences other kernels with top-level
`func.call`s (ktir-cpu's softmax_lx_fused_calls.ktir: five stages over one grid, each a
grid-wide step, passing tiles through per-core LX) is the kernel with each call
replaced by its callee's body, the stages in order. Kernels only called are removed.
The interpreter and the lowering then see one kernel."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from spyre_ir.lowering.ktir_values import LoweringError


def inline_calls(module: ModuleOp) -> None:
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    called: set[str] = set()
    for fn in funcs.values():
        if not fn.body.blocks:
            continue
        for call in [op for op in fn.walk() if isinstance(op, func.CallOp)]:
            name = call.callee.string_value()
            callee = funcs.get(name)
            if callee is None or not callee.body.blocks or callee is fn:
                raise LoweringError(f"'func.call' of @{name}: no kernel of that name", call)
            if call.parent_op() is not fn:
                raise LoweringError(
                    "'func.call' inside a region is not supported: calls sequence "
                    "grid-wide stages at the top level of a kernel",
                    call,
                )
            if call.results:
                raise LoweringError(f"'func.call' of @{name} with results is not supported", call)
            if callee.attributes.get("grid") != fn.attributes.get("grid"):
                raise LoweringError(
                    f"'func.call' of @{name}, whose grid is not the caller's, is not supported",
                    call,
                )
            if any(isinstance(op, func.CallOp) for op in callee.walk()):
                raise LoweringError(
                    f"'func.call' of @{name}, which calls again, is not supported", call
                )
            body = callee.clone().body.block
            for arg, value in zip(body.args, call.arguments):
                arg.replace_all_uses_with(value)
            for op in list(body.ops):
                if isinstance(op, func.ReturnOp):
                    break
                op.detach()
                call.parent_block().insert_op_before(op, call)  # type: ignore[union-attr]
            call.detach()
            call.erase()
            called.add(name)
    for name in called:
        funcs[name].detach()
        funcs[name].erase()
