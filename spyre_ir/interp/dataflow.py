"""A numpy interpreter for the `dataflow` dialect (level L2).

    results = run_module(module, [x, w], entry="main", check_races=True)

Same contract as `spyre_ir.interp.tensor.run_module` (argument checks, dtypes: bf16 is
a float32 array of bf16 values, numerics), and built on it: the function level is the
L1 interpreter extended with two ops.

* `spyre` ops, `func.call`/`func.return`, `arith.constant`: as at L1.
* `dataflow.group`: its body is run by the L1 interpreter on the group's inputs; the
  results are the yielded values.
* `dataflow.kernel`: run SPMD over its `cores`, see below.

Kernels: the body is interpreted ONCE with every value vectorised across the cores.

* An `index` (or integer) value is an int64 array of shape [cores], or a 0-d value when
  it is the same on every core (constants, loop counters); `i1` values are bool.
* An LX buffer is an `LxBuffer` handle on an array [cores, *shape]. A multi-buffer
  `!dataflow.lx<2x...>` is one array [cores, 2, ...]; `dataflow.slot %buf[%i]` is a
  handle (same array, per-core slot index), read and written through with advanced
  indexing, so the slot may differ per core.
* A DDR memory is the kernel's input array (shared, read-only) or an output array,
  zero-initialised and padded by one trash element along every dim: a vectorised
  store sends the elements past the tensor's end there instead of masking them.
* `dataflow.load`/`store` build index arrays [cores, box] per dim (per-core offsets) and
  move the whole box of every core in one numpy indexing operation; dims whose offset
  is the same on every core are sliced instead, and a load whose boxes step regularly
  over the cores (inside the tensor) reads one strided view. Elements past the end read
  as `pad`.
  When several cores store the same element the last core wins.
* `dataflow.compute` applies the L1 implementation of the named op (`IMPLS`) to the
  [cores, ...] arrays, through a detached copy of the op whose types carry the core
  axis and whose dim-valued properties are shifted past it; lower-rank operands are
  reshaped to [cores, 1.., *shape] so broadcasting stays right-aligned per core.
* `ring_allreduce` / `ring_allgather` reshape [cores, ...] into [blocks, group_size,
  stride, ...] and combine or stack along the group axis.
* `scf.for` runs in Python, one iteration at a time, for all cores at once: its bounds
  must be the same on every core (so must an `scf.if` condition), else
  `InterpreterError`. Index arithmetic: `arith` integer ops, `cmpi`, `select`,
  `index_cast`, `constant`.
* Kernel-body ops are dispatched by class, falling back to base classes
  (`dataflow.LoadBase` ...), so a lower level's subclasses run too.

Numerics: an LX buffer holds values of its element type, rounded after every op, and
tile ops compute as their L1 op does (half types in float32), bit for bit. An f16
buffer is held as a float32 array of f16 values (like bf16 at L1): most tile ops then
run in float32 and round with `round_to_f16`, skipping numpy's slow half conversions;
loads and stores convert. With `accumulate`, the op's result is computed in float32
(f16/bf16) or int64 and combined with the buffer's contents before one rounding, so a
K loop accumulating into an f16 buffer rounds each partial sum, as the hardware's f16
storage does; an f32 buffer stays f32. `ring_allreduce` combines in float32 and rounds
once. Results and DDR tensors use the L1 storage dtypes (f16 -> float16).

`halves="dlfloat16"` computes as the card does (docs/dlfloat16.md; the simulator's
numerics): an f16 or bf16 tensor is DLFloat16, held in float32 in LX and in DDR alike
(loads and stores copy), every tile op computes in float32 (the L1 op with f16/bf16
widened to f32) and rounds its result to DLFloat16 once, and an L1 op between kernels
does the same. f16 arguments (IEEE float16) and bf16 ones (bf16 values in float32) are
converted to DLFloat16 on entry (rounded, saturated) and results back to float16 / bf16
(round to nearest even), or, with `card_format`, taken and given as float32 arrays of
DLFloat16 values. The default, "ieee", stays bit for bit with the L1 interpreter.

`check_races=True` (a debug mode, used by the tests) raises `InterpreterError` when two
cores write the same in-range element with different values, within one store or
across stores, and when a kernel leaves an element of an output unwritten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import spyre as S
from spyre_ir.interp.dlfloat16 import decode, encode, from_user, round_to_dlf16, to_user
from spyre_ir.interp.machine import KernelMachine
from spyre_ir.interp.numerics import storage_dtype
from spyre_ir.interp.tensor import (
    InterpreterError,
    _Interpreter,
    apply_op,
    check_value,
    make_op,
    op_label,
    run_entry,
)
from spyre_ir.interp.tile_ops import TileOp, is_half, wide_type
from spyre_ir.op_facts import MOVES_ELEMENTS

__all__ = ["DataflowInterpreter", "InterpreterError", "run_module"]


def run_module(
    module: ModuleOp,
    args: Sequence[np.ndarray],
    entry: str = "main",
    *,
    check_races: bool = False,
    halves: str = "ieee",
    card_format: bool = False,
    output_contents: dict[str, Sequence[np.ndarray]] | None = None,
) -> list[np.ndarray]:
    """Run `func.func @entry` of an L2 `module` on `args`; returns its results.

    Arguments are checked as by the L1 interpreter. `check_races` turns on the debug
    checks of kernel stores (see the module docstring). `halves`: "ieee" computes f16
    as L1 does, bit for bit; "dlfloat16" as the card does (see the module docstring;
    the simulator's numerics), where `card_format` takes and gives f16 tensors as
    float32 arrays of DLFloat16 values instead of float16. Raises `InterpreterError`
    with the failing op's location. `output_contents` (kernel name -> one array per
    output): the outputs of that kernel start with these contents instead of zeros, so
    elements the kernel does not store keep them (and are not reported as unwritten)."""
    interp = DataflowInterpreter(module, check_races, halves, card_format)
    interp.output_contents = dict(output_contents or {})
    return run_entry(interp, args, entry)


HALVES = {"ieee": "f16", "dlfloat16": "dlf16"}
"""The `halves` choices -> the name the interpreter holds f16 tensors under."""


def _user_dtype(t: Attribute) -> np.dtype | str:
    """The host format of an f16/bf16 tensor type: IEEE float16, or "bf16" (bf16
    values held in float32, as the interpreters take and give them)."""
    assert isinstance(t, TensorType)
    return np.dtype(np.float16) if S.element_type_name(t.element_type) == "f16" else "bf16"


class DataflowInterpreter(_Interpreter):
    """The L2 interpreter's function level (public: the simulator drives it). Besides
    the L1 interpreter's interface (`run_entry`, `take_argument`, `give_result`) a
    driver may use `runners` (see `__init__`), `check_result`, `held_name` /
    `storage` (how an element type is held) and `share_caches`; `tiles` maps each
    `dataflow.compute` op run so far to its `TileOp` (a replay installs its own)."""

    TERMINATORS = (*_Interpreter.TERMINATORS, D.YieldOp)

    def __init__(
        self,
        module: ModuleOp,
        check_races: bool = False,
        halves: str = "ieee",
        card_format: bool = False,
        *,
        runners: Mapping[type[Operation], Callable[[Operation, list], list]] | None = None,
        codes: bool = False,
    ) -> None:
        """`runners`: function-level ops (by exact class) that a driver runs itself
        (the simulator: `core.program`), each called with the op and its operand
        values and returning its results; every other op runs as described above.
        `codes` (with `card_format`): f16/bf16 tensors between kernels (DDR) are held as
        the card's 16-bit DLFloat16 codes (uint16, `dlfloat16.encode`), as LPDDR5 holds
        them, instead of float32 values: half the bytes; loads decode their boxes into
        LX (float32 values, as before), stores encode, an L1 op between kernels decodes
        its operands and encodes its result. Values are the same, bit for bit."""
        super().__init__(module)
        self.runners = dict(runners or {})
        if halves not in HALVES:
            raise ValueError(f"halves={halves!r}: expected one of {', '.join(HALVES)}")
        self.check_races = check_races
        self.half = HALVES[halves]
        self.card_format = card_format and self.half == "dlf16"
        self.codes = codes and self.card_format
        self.tiles: dict[Operation, TileOp] = {}
        self.loads: dict[Operation, tuple[tuple[int, ...], object, object, tuple[int, ...]]] = {}
        self.widened: dict[Operation, Operation] = {}
        # Kernel name -> the contents its outputs start with (memory the kernel does not
        # store keeps them, as on the card); an output given none starts as zeros.
        self.output_contents: dict[str, Sequence[np.ndarray]] = {}
        # Bytes copied into the buffer of a tied result because its input was not one
        # (an entry argument given unpadded or read-only): host work, not card time.
        self.tied_copy_bytes = 0

    def held_name(self, element: Attribute) -> str:
        """The name tensors and buffers of `element` are held under: "dlf16" for f16
        and bf16 on the card, else the element type's name."""
        name = S.element_type_name(element)
        if name == "f16" or (name == "bf16" and self.half == "dlf16"):
            return self.half
        return name

    def storage(self, element: Attribute) -> np.dtype:
        """The numpy dtype of a tensor of `element` between kernels (DDR)."""
        if self.held_name(element) == "dlf16":
            return np.dtype(np.uint16 if self.codes else np.float32)
        return storage_dtype(element)

    def take_argument(self, value: object, t: Attribute, what: str) -> np.ndarray:
        if self.half == "f16" or not is_half(t):
            return super().take_argument(value, t, what)
        if self.card_format:  # already DLFloat16 values (decoded from the card's codes)
            return check_value(value, t, what, self.storage)
        # IEEE fp16, or bf16 values in float32: the h2d conversion (round, saturate)
        return from_user(check_value(value, t, what))

    def take_argument_into(self, out: np.ndarray, value: object, t: Attribute, what: str) -> None:
        """`out[...] = take_argument(value, t, what)`: fp16 converted straight into `out`
        (a kernel output's padded memory), without a scratch as large as the tensor."""
        if self.half == "dlf16" and is_half(t) and not self.card_format:
            value = check_value(value, t, what)
            if value.dtype == np.float16:
                from_user(value, out=out)
                return
        out[...] = self.take_argument(value, t, what)

    def give_result(self, value: np.ndarray, t: Attribute) -> np.ndarray:
        if self.half == "dlf16" and is_half(t) and not self.card_format:
            return to_user(value, _user_dtype(t))  # the d2h conversion
        return value

    def check_result(self, value: object, op: Operation, result: SSAValue, who: str) -> None:
        """An InterpreterError unless `value` is what `result` holds here."""
        # the message is made only on a mismatch (a decode step checks ~80 results)
        check_value(value, result.type, lambda: f"{op_label(op)}: result ({who} bug)",
                    self.storage)  # fmt: skip

    def run_tensor_op(self, op: Operation, operands: list) -> list:
        """An L1 op between kernels. On DLFloat16 values (held in float32) it computes
        in f32 and rounds to DLFloat16, as a tile op does; else as at L1."""
        if (
            self.half == "f16"
            or isinstance(op, func.CallOp)
            or not any(is_half(v.type) for v in (*op.operands, *op.results))
        ):
            return super().run_op(op, operands)
        if self.codes and op.name in MOVES_ELEMENTS:  # codes move as their values would
            result = apply_op(op, operands)
            self.check_result(result, op, op.results[0], "interpreter")
            return [result]
        wide = self.widened.get(op)
        if wide is None:
            wide = make_op(type(op), [wide_type(v.type) for v in op.operands],
                           [wide_type(r.type) for r in op.results], dict(op.properties))  # fmt: skip
            self.widened[op] = wide
        if self.codes:  # the card's codes of half tensors -> their values
            operands = [decode(x) if is_half(v.type) else x for x, v in zip(operands, op.operands)]
        result = apply_op(wide, operands)
        if is_half(op.results[0].type):
            result = round_to_dlf16(result)
            if self.codes:
                result = encode(result)
        self.check_result(result, op, op.results[0], "interpreter")
        return [result]

    def share_caches(self, shared: dict) -> None:
        """Keep the per-op facts this interpreter derives from a module that never
        changes (load pads and permutations, widened L1 ops) in `shared`, so later
        interpreters of the same module reuse them (tile ops stay per interpreter)."""
        self.loads = shared.setdefault("loads", self.loads)
        self.widened = shared.setdefault("widened", self.widened)

    def run_op(self, op: Operation, operands: list) -> list:
        runner = self.runners.get(type(op))
        if runner is not None:
            return runner(op, operands)
        if isinstance(op, D.GroupOp):
            results = self.run_block(
                op.body.block, operands, f"{op_label(op)}: the group has no dataflow.yield"
            )
        elif isinstance(op, D.KernelOp):
            results = KernelMachine(self, op).run(operands)
        else:
            return self.run_tensor_op(op, operands)
        for value, result in zip(results, op.results):
            self.check_result(value, op, result, "interpreter")
        return results
