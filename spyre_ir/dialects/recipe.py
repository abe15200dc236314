"""The `recipe` dialect (level L4): the host-side plan that runs a compiled graph.

An artifact is one MLIR module: the L3 entry function (`core.program`s between L1 views)
and one `recipe.plan` that says how the host runs it:

    recipe.plan @main_recipe for @main hash "<sha256 of the artifact text>" {
      recipe.slot @in0 input 0 : tensor<64x128xf16, #spyre.stick<...>> size 16384
      recipe.slot @out0 output 0 : tensor<64x128xf16, #spyre.stick<...>> size 16384
      recipe.patch_addresses [@in0, @out0]
      recipe.transfer "h2d" @in0 pad 0.000000e+00
      recipe.restickify @in0
      recipe.compute @main
      recipe.transfer "d2h" @out0
      recipe.restickify @out0
    }

* A slot is one argument of the entry in device memory: its symbol is its *symbolic
  address*, its tensor type gives shape, element type and stick layout (the encoding;
  the default layout when there is none), `size` the bytes of its device image, padding
  included.
* `recipe.patch_addresses` is a host callback: at launch it writes the device address of
  each listed slot, for this launch, into the address table the compute reads.
* Each input slot has two ways in, chosen per launch by where the argument lives: a host
  array crosses the link (`recipe.transfer "h2d"`: stickify, padding slots filled with
  `pad`); an argument already on the card in row-major bytes is rearranged on the card
  (`recipe.restickify`: row-major -> stick layout). Each output slot likewise has two
  ways out: `recipe.transfer "d2h"` (to the host, unstickified there) or
  `recipe.restickify` (to a row-major device array).
* `recipe.compute` launches the entry function once.
* An input slot marked `written` is a block the compute writes in place: a program of
  the entry has its result tied to that argument (`tied` on `core.program`, a KV cache's
  row store). A launch hands the slot's block (and the values it holds) to the compute
  as they are, which writes the rows into them, instead of giving it a copy.
* An output slot `tied N` is that written input's block: the entry returns the tied
  result itself (a graph that returns the cache it writes, as AOTAutograd does for a
  mutated input), so the result has no block of its own; a launch binds the output slot
  to the block input N is bound to, and nothing is copied into a second block.

The `hash` is the SHA-256 of the artifact text with the hash itself blanked
(`spyre_ir.runtime.artifact.content_hash`), so a damaged artifact is detected on load.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Dialect, Operation, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.traits import HasParent, NoTerminator, SymbolTable
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects.stick_layout import layout_or_default, verify_tensor_layout
from spyre_ir.layout import device_size_bytes

ROLES = ("input", "output")
DIRECTIONS = {"h2d": "input", "d2h": "output"}  # transfer direction -> role of its slot
HASH_PATTERN = re.compile(r"[0-9a-f]{64}")
# The hash as printed in `recipe.plan @x for @y hash "..."`; blanked before hashing.
_PRINTED_HASH = re.compile(r'(recipe\.plan @[\w$.-]+ for @[\w$.-]+ hash )"([0-9a-f]*)"')


def content_hash(text: str) -> str:
    """SHA-256 of an artifact's text with its plan's hash blanked, so the text can hold it."""
    blanked = _PRINTED_HASH.sub(r'\1""', text).strip()  # whitespace at the ends is no content
    return hashlib.sha256(blanked.encode()).hexdigest()


def with_hash(text: str, digest: str) -> str:
    """`text` with its plan's hash set to `digest`."""
    return _PRINTED_HASH.sub(lambda m: f'{m.group(1)}"{digest}"', text)


def stored_hash(text: str) -> str | None:
    """The hash the artifact text claims (None if it holds no single plan)."""
    found = _PRINTED_HASH.findall(text)
    return found[0][1] if len(found) == 1 else None


@irdl_op_definition
class SlotOp(IRDLOperation):
    """One argument or result of the entry in device memory (see the module docstring)."""

    name = "recipe.slot"
    sym_name = prop_def(SymbolNameConstraint())
    role = prop_def(StringAttr)
    index = prop_def(IntegerAttr[I64])
    slot_type = prop_def(TensorType)
    size = prop_def(IntegerAttr[I64])
    written = opt_prop_def(UnitAttr)
    """An input the compute writes in place (see the module docstring)."""
    tied = opt_prop_def(IntegerAttr[I64])
    """An output that is the block of this written input (see the module docstring)."""
    traits = lazy_traits_def(lambda: (HasParent(PlanOp),))
    assembly_format = (
        "$sym_name $role $index `:` $slot_type `size` $size (`written` $written^)?"
        " (`tied` $tied^)? attr-dict"
    )

    def __init__(self, name: str, role: str, index: int, slot_type: TensorType,
                 written: bool = False, tied: int | None = None):  # fmt: skip
        props = {
            "sym_name": StringAttr(name),
            "role": StringAttr(role),
            "index": IntegerAttr(index, i64),
            "slot_type": slot_type,
            "size": IntegerAttr(device_size_bytes(layout_or_default(slot_type)), i64),
        }
        if written:
            props["written"] = UnitAttr()
        if tied is not None:
            props["tied"] = IntegerAttr(tied, i64)
        super().__init__(properties=props)

    def verify_(self) -> None:
        where = f"'{self.name}' @{self.sym_name.data}"
        if self.role.data not in ROLES:
            raise VerifyException(
                f"{where}: role must be one of {', '.join(ROLES)}, not '{self.role.data}'"
            )
        if self.index.value.data < 0:
            raise VerifyException(f"{where}: index must be >= 0")
        if self.written is not None and self.role.data != "input":
            raise VerifyException(f"{where}: only an input slot is written in place")
        if self.tied is not None and self.role.data != "output":
            raise VerifyException(f"{where}: only an output slot is tied to an input")
        if any(d < 0 for d in self.slot_type.get_shape()):
            raise VerifyException(f"{where}: a slot needs a static shape")
        try:
            verify_tensor_layout(self.slot_type)
            layout = layout_or_default(self.slot_type)
        except (VerifyException, ValueError) as e:
            raise VerifyException(f"{where}: {e}") from None
        want = device_size_bytes(layout)
        if self.size.value.data != want:
            raise VerifyException(
                f"{where}: size {self.size.value.data} bytes, but its stick layout needs {want}"
            )


@irdl_op_definition
class PatchAddressesOp(IRDLOperation):
    """Host callback: write this launch's device address of each slot into the address table."""

    name = "recipe.patch_addresses"
    slots = prop_def(ArrayAttr[SymbolRefAttr])
    traits = lazy_traits_def(lambda: (HasParent(PlanOp),))
    assembly_format = "$slots attr-dict"

    def __init__(self, slots: Sequence[str]):
        super().__init__(properties={"slots": ArrayAttr(SymbolRefAttr(s) for s in slots)})


@irdl_op_definition
class TransferOp(IRDLOperation):
    """Copy a slot across the host link: "h2d" stickifies a host array (padding slots get
    `pad`), "d2h" brings a result back and unstickifies it on the host."""

    name = "recipe.transfer"
    direction = prop_def(StringAttr)
    slot = prop_def(SymbolRefAttr)
    pad = opt_prop_def(FloatAttr[Float64Type])
    traits = lazy_traits_def(lambda: (HasParent(PlanOp),))
    assembly_format = "$direction $slot (`pad` $pad^)? attr-dict"

    def __init__(self, direction: str, slot: str, pad: float | None = None):
        props = {"direction": StringAttr(direction), "slot": SymbolRefAttr(slot)}
        if pad is not None:
            props["pad"] = FloatAttr(pad, Float64Type())
        super().__init__(properties=props)

    def verify_(self) -> None:
        direction = self.direction.data
        if direction not in DIRECTIONS:
            raise VerifyException(f"'{self.name}': direction must be h2d or d2h, not '{direction}'")
        if direction == "d2h" and self.pad is not None:
            raise VerifyException(f"'{self.name}': only an h2d transfer writes padding")


@irdl_op_definition
class RestickifyOp(IRDLOperation):
    """On-card copy for a device-resident argument: an input's row-major bytes into its
    stick layout, or an output's stick layout into a row-major device array."""

    name = "recipe.restickify"
    slot = prop_def(SymbolRefAttr)
    traits = lazy_traits_def(lambda: (HasParent(PlanOp),))
    assembly_format = "$slot attr-dict"

    def __init__(self, slot: str):
        super().__init__(properties={"slot": SymbolRefAttr(slot)})


@irdl_op_definition
class ComputeOp(IRDLOperation):
    """Launch the entry function once on the card."""

    name = "recipe.compute"
    callee = prop_def(SymbolRefAttr)
    traits = lazy_traits_def(lambda: (HasParent(PlanOp),))
    assembly_format = "$callee attr-dict"

    def __init__(self, callee: str):
        super().__init__(properties={"callee": SymbolRefAttr(callee)})


@irdl_op_definition
class PlanOp(IRDLOperation):
    """The host plan of one artifact: slots, then steps (see the module docstring)."""

    name = "recipe.plan"
    sym_name = prop_def(SymbolNameConstraint())
    entry = prop_def(SymbolRefAttr)
    content_hash = prop_def(StringAttr, prop_name="hash")
    body = region_def("single_block")
    traits = traits_def(NoTerminator(), HasParent(ModuleOp))
    assembly_format = "$sym_name `for` $entry `hash` $hash attr-dict-with-keyword $body"

    def __init__(self, name: str, entry: str, ops: Sequence[Operation], content_hash: str = ""):
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "entry": SymbolRefAttr(entry),
                "hash": StringAttr(content_hash),
            },
            regions=[Region(Block(ops))],
        )

    def slots(self) -> list[SlotOp]:
        return [op for op in self.body.block.ops if isinstance(op, SlotOp)]

    def steps(self) -> list[Operation]:
        return [op for op in self.body.block.ops if not isinstance(op, SlotOp)]

    def verify_(self) -> None:
        where = f"'{self.name}' @{self.sym_name.data}"
        for op in self.body.block.ops:
            try:
                op.verify()
            except VerifyException:
                return  # reported for that op; the plan's rules assume sound steps
        if not HASH_PATTERN.fullmatch(self.content_hash.data):
            raise VerifyException(f"{where}: hash must be 64 lowercase hex digits (SHA-256)")
        slots = self._verify_slots(where)
        self._verify_steps(where, slots)
        self._verify_entry(where, slots)

    def _verify_slots(self, where: str) -> dict[str, SlotOp]:
        slots: dict[str, SlotOp] = {}
        seen: set[tuple[str, int]] = set()
        for slot in self.slots():
            name, key = slot.sym_name.data, (slot.role.data, slot.index.value.data)
            if name in slots:
                raise VerifyException(f"{where}: slot @{name} is declared twice")
            if key in seen:
                raise VerifyException(f"{where}: two slots are {key[0]} {key[1]}")
            slots[name] = slot
            seen.add(key)
        for role in ROLES:
            indices = sorted(i for r, i in seen if r == role)
            if indices != list(range(len(indices))):
                raise VerifyException(
                    f"{where}: {role} slots must be numbered 0..n-1, have {indices}"
                )
        return slots

    def _verify_steps(self, where: str, slots: dict[str, SlotOp]) -> None:
        steps = self.steps()
        if any(isinstance(op, SlotOp) for op in list(self.body.block.ops)[len(slots) :]):
            raise VerifyException(f"{where}: slots must come before the steps")
        computes = [i for i, op in enumerate(steps) if isinstance(op, ComputeOp)]
        if len(computes) != 1:
            raise VerifyException(f"{where}: needs exactly one recipe.compute, has {len(computes)}")
        (at,) = computes
        if not steps or not isinstance(steps[0], PatchAddressesOp):
            raise VerifyException(f"{where}: the first step must be recipe.patch_addresses")
        patched = [s.root_reference.data for s in steps[0].slots.data]
        if sorted(patched) != sorted(slots):
            raise VerifyException(f"{where}: recipe.patch_addresses must name every slot once")
        ways: dict[tuple[str, str], int] = {}
        for i, op in enumerate(steps[1:], start=1):
            if isinstance(op, (PatchAddressesOp, ComputeOp)):
                if isinstance(op, PatchAddressesOp):
                    raise VerifyException(f"{where}: only one recipe.patch_addresses")
                continue
            assert isinstance(op, (TransferOp, RestickifyOp))
            name = op.slot.root_reference.data
            if name not in slots:
                raise VerifyException(f"{where}: {op.name} names unknown slot @{name}")
            role = slots[name].role.data
            if isinstance(op, TransferOp) and DIRECTIONS[op.direction.data] != role:
                raise VerifyException(
                    f"{where}: {op.direction.data} transfer of @{name}, an {role} slot"
                )
            if (role == "input") != (i < at):
                when = "before" if role == "input" else "after"
                raise VerifyException(f"{where}: @{name} ({role}) must be moved {when} the compute")
            way = "transfer" if isinstance(op, TransferOp) else "restickify"
            ways[(name, way)] = ways.get((name, way), 0) + 1
        for name in slots:
            for way in ("transfer", "restickify"):
                if ways.get((name, way)) != 1:
                    raise VerifyException(
                        f"{where}: slot @{name} needs exactly one {way} step, has {ways.get((name, way), 0)}"
                    )

    def _verify_entry(self, where: str, slots: dict[str, SlotOp]) -> None:
        callee = next(op for op in self.steps() if isinstance(op, ComputeOp)).callee
        if callee != self.entry:
            raise VerifyException(
                f"{where}: recipe.compute calls {callee}, the plan is for {self.entry}"
            )
        module = self.parent_op()
        func = SymbolTable.lookup_symbol(module, self.entry) if module is not None else None
        if not isinstance(func, FuncOp):
            raise VerifyException(f"{where}: entry {self.entry} is no func.func of this module")
        want = {"input": list(func.function_type.inputs.data),
                "output": list(func.function_type.outputs.data)}  # fmt: skip
        for role, types in want.items():
            have = sorted(
                (s for s in slots.values() if s.role.data == role), key=lambda s: s.index.value.data
            )
            if len(have) != len(types):
                raise VerifyException(
                    f"{where}: {len(have)} {role} slots, but {self.entry} has {len(types)} {role}s"
                )
            for slot, t in zip(have, types):
                if slot.slot_type != t:
                    raise VerifyException(
                        f"{where}: slot @{slot.sym_name.data} is {slot.slot_type}, but "
                        f"{role} {slot.index.value.data} of {self.entry} is {t}"
                    )
        written = written_inputs(func)
        for slot in slots.values():
            if slot.written is not None and slot.index.value.data not in written:
                raise VerifyException(
                    f"{where}: slot @{slot.sym_name.data} is written, but no program of "
                    f"{self.entry} writes input {slot.index.value.data} in place"
                )
        self._verify_tied(where, slots, func)

    def _verify_tied(self, where: str, slots: dict[str, SlotOp], func: FuncOp) -> None:
        """An output slot tied to input N: N is a written slot, and the entry returns, at
        that output, a program result tied to argument N (so the two slots have one type:
        each slot has its entry value's, and a tied result its input's)."""
        inputs = {s.index.value.data: s for s in slots.values() if s.role.data == "input"}
        returned = tied_outputs(func)
        for slot in slots.values():
            if slot.tied is None:
                continue
            n, out = slot.tied.value.data, slot.index.value.data
            source = inputs.get(n)
            if source is None or source.written is None:
                raise VerifyException(f"{where}: slot @{slot.sym_name.data} is tied to input "
                                      f"{n}, which is no written input slot")  # fmt: skip
            if returned.get(out) != n:
                raise VerifyException(
                    f"{where}: slot @{slot.sym_name.data} is tied to input {n}, but output "
                    f"{out} of {self.entry} is no result written in place into it"
                )


def written_inputs(entry: FuncOp) -> set[int]:
    """The arguments of `entry` that a program of it writes in place: the tied input
    (`tied`, spyre_ir/dialects/dataflow.py) of a result of a kernel or core program."""
    args = {arg: i for i, arg in enumerate(entry.body.block.args)}
    written = set()
    for op in entry.body.block.ops:
        tied = getattr(op, "tied_inputs", None)
        if tied is None:
            continue
        for i in tied().values():
            if op.operands[i] in args:
                written.add(args[op.operands[i]])
    return written


def tied_outputs(entry: FuncOp) -> dict[int, int]:
    """Output index -> argument index, for each output of `entry` that is a program's
    result tied to an argument of `entry` (that argument's buffer, written in place)."""
    args = {arg: i for i, arg in enumerate(entry.body.block.args)}
    ret = entry.body.block.last_op
    found = {}
    for out, value in enumerate(ret.operands if ret is not None else ()):
        op = getattr(value, "op", None)
        tied = getattr(op, "tied_inputs", None)
        if tied is None:
            continue
        source = tied().get(value.index)
        if source is not None and op.operands[source] in args:
            found[out] = args[op.operands[source]]
    return found


RECIPE_OPS = (PlanOp, SlotOp, PatchAddressesOp, TransferOp, RestickifyOp, ComputeOp)
Recipe = Dialect("recipe", list(RECIPE_OPS), [])
