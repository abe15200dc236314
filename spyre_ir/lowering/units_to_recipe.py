"""`convert-units-to-recipe` (L3 -> L4): add the host plan that turns the module into an artifact.

For the entry function (`main` unless told otherwise) of a module at L3 (its device work
in `core.program`s), the pass appends one `recipe.plan`: a slot per argument and result,
typed as the entry's signature (so the stick layouts the compiler chose travel with
them; an input a program writes in place, a KV cache under a row store, is `written`,
and an output that is such an input's buffer returned is `tied` to it),
the address-patch callback, both ways in for each input (h2d transfer, on-card
restickify), the compute, both ways out for each output, and the content hash of the
whole text. The module then is the artifact: MLIR text that `spyre-opt` reads back and
`spyre_ir.runtime.recipe.PreparedRecipe` runs.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.traits import SymbolTable

from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import recipe as R

PAD_VALUE = 0.0
"""What h2d transfers write into padding slots: zero, which a matmul over a padded k needs."""


def build_plan(entry: FuncOp) -> R.PlanOp:
    """The plan for `entry` with a blank hash (`seal` fills it in)."""
    name = entry.sym_name.data
    written = R.written_inputs(entry)
    ins = [
        R.SlotOp(f"in{i}", "input", i, _tensor(entry, t), i in written)
        for i, t in enumerate(entry.function_type.inputs.data)
    ]
    # an output that is a written input's buffer is that input's block (`tied`; the
    # first such output of each input only)
    tied: dict[int, int] = {}
    for o, i in R.tied_outputs(entry).items():
        same = entry.function_type.outputs.data[o] == entry.function_type.inputs.data[i]
        if i in written and same and i not in tied.values():
            tied[o] = i
    outs = [
        R.SlotOp(f"out{i}", "output", i, _tensor(entry, t), tied=tied.get(i))
        for i, t in enumerate(entry.function_type.outputs.data)
    ]
    steps: list[Operation] = [R.PatchAddressesOp([s.sym_name.data for s in ins + outs])]
    for s in ins:
        steps += [R.TransferOp("h2d", s.sym_name.data, PAD_VALUE), R.RestickifyOp(s.sym_name.data)]
    steps.append(R.ComputeOp(name))
    for s in outs:
        steps += [R.TransferOp("d2h", s.sym_name.data), R.RestickifyOp(s.sym_name.data)]
    return R.PlanOp(f"{name}_recipe", name, [*ins, *outs, *steps])


# The text each sealed module was printed as, with the plan it was sealed with: a tool
# that prints the module right after sealing it (spyre-opt -p spyre-compile) reuses it
# rather than print a long artifact twice (issue 18: compile time). The plan is held
# weakly: it is an op of the module, so a strong reference in the value would keep the
# key alive, and every module compiled in the process with it (issue 19: host memory).
_SEALED: weakref.WeakKeyDictionary[ModuleOp, tuple[weakref.ref[R.PlanOp], StringAttr, str]] = (
    weakref.WeakKeyDictionary()
)


def seal(module: ModuleOp, plan: R.PlanOp) -> str:
    """Set `plan`'s hash from the module's text; return the final text."""
    out = StringIO()
    Printer(stream=out).print_op(module)
    text = out.getvalue().rstrip("\n") + "\n"
    digest = R.content_hash(text)
    plan.properties["hash"] = StringAttr(digest)
    sealed = R.with_hash(text, digest)
    _SEALED[module] = (weakref.ref(plan), plan.properties["hash"], sealed)
    return sealed


def sealed_text(module: ModuleOp) -> str | None:
    """The text `module` was sealed as, if it was and its plan is still its last op with
    the hash it was sealed with (the caller knows no pass ran after the sealing one)."""
    entry = _SEALED.get(module)
    if entry is None:
        return None
    plan_ref, digest, text = entry
    plan = plan_ref()
    if (
        plan is None
        or module.body.block.last_op is not plan
        or plan.properties.get("hash") is not digest
    ):
        return None
    return text


def _tensor(entry: FuncOp, t: object) -> TensorType:
    if not isinstance(t, TensorType):
        raise located_error(entry, f"convert-units-to-recipe: @{entry.sym_name.data} passes a {t}; "
                                   "only tensors can live in device memory")  # fmt: skip
    return t


@dataclass(frozen=True)
class ConvertUnitsToRecipe(ModulePass):
    """L3 -> L4: append the `recipe.plan` of function `entry` and seal its content hash."""

    name = "convert-units-to-recipe"

    entry: str = "main"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        plan_module(op, self.entry)


def plan_module(module: ModuleOp, entry: str = "main") -> str:
    """Append the sealed plan of function `entry` to an L3 module; return the module's text
    (the artifact)."""
    func = SymbolTable.lookup_symbol(module, entry)
    if not isinstance(func, FuncOp):
        raise located_error(module, f"convert-units-to-recipe: no func.func @{entry} to plan")
    for inner in module.walk():
        if isinstance(inner, R.PlanOp):
            raise located_error(
                inner, "convert-units-to-recipe: the module already holds a recipe.plan"
            )
        if isinstance(inner, (D.KernelOp, D.GroupOp)):
            raise located_error(
                inner, f"convert-units-to-recipe: {inner.name} is L2; lower to units first "
                "(-p convert-dataflow-to-units, or -p spyre-compile from L1)"
            )  # fmt: skip
    plan = build_plan(func)
    module.body.block.add_op(plan)
    return seal(module, plan)
