"""Tile ops of the L2 machine: `TileOp` runs one `dataflow.compute` (the L1 op it
names) on [cores, ...] arrays, with the rounding of the element type it is held in
(f16 / bf16 as DLFloat16 on the card: computed in f32, rounded once)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation

from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import spyre as S
from spyre_ir.interp.dlfloat16 import infinities_as_bounds
from spyre_ir.interp.halves import converted
from spyre_ir.interp.kernel_memory import FLOAT_NAMES, HALF_NAMES, held_dtype, round_held
from spyre_ir.interp.tensor import (
    InterpreterError,
    apply_op,
    iota_values,
    make_op,
)
from spyre_ir.op_facts import FACTS

SPYRE_BY_NAME: dict[str, type[Operation]] = {op.name: op for op in S.SPYRE_OPS}


CARD_HALVES = ("f16", "bf16")
"""The 16-bit float types the card stores as DLFloat16 (with `halves="dlfloat16"`)."""


def is_half(t: Attribute) -> bool:
    """Whether `t` is an f16 or bf16 tensor type (DLFloat16 on the card)."""
    return isinstance(t, TensorType) and S.element_type_name(t.element_type) in CARD_HALVES


def wide_type(t: Attribute) -> Attribute:
    """An f16/bf16 tensor type as f32 (what an op on DLFloat16 values computes in)."""
    return TensorType(Float32Type(), t.get_shape()) if is_half(t) else t


# ---------------------------------------------------------------- tile ops


def _shift_dim(d: int) -> int:
    return d + 1 if d >= 0 else d


def _lift_properties(props: dict[str, Attribute], cores: int) -> dict[str, Attribute]:
    """An L1 op's properties for operands with a leading core axis: the dim-valued
    ones (`dim`, `dims`, `perm`) shifted past it (negative dims count from the end and
    stay), the per-dim lists (`starts`, `stops`, `steps`, `low`, `high`) given an entry
    that keeps it whole. The names are those of the spyre ops' properties."""
    per_dim = {"perm": 0, "starts": 0, "stops": cores, "steps": 1, "low": 0, "high": 0}
    out = dict(props)
    for key, value in props.items():
        if key == "dim" and isinstance(value, IntegerAttr):
            out[key] = IntegerAttr(_shift_dim(value.value.data), value.type)
        elif isinstance(value, DenseArrayBase) and (key == "dims" or key in per_dim):
            values = [int(v) for v in value.get_values()]
            if key == "dims":
                values = [_shift_dim(d) for d in values]
            else:
                if key == "perm":
                    values = [p + 1 for p in values]
                values = [per_dim[key], *values]
            out[key] = DenseArrayBase.from_list(value.elt_type, values)
    return out


# L1 ops whose f16 result is their f32 result rounded to f16 (their `rounding` in
# spyre_ir/op_facts.py is "f32": they compute half types in float32 and round once): a
# tile op of these runs on the float32-held f16 buffers with float32 types and rounds with
# `round_to_f16`, bit-for-bit the L1 result. The others (float64 statistics, erf, cumsum's
# accumulator, a pad value) run with their own types, as at L1.
_ROUNDS_FROM_F32: frozenset[type[Operation]] = frozenset(
    op for op in S.SPYRE_OPS if FACTS[op.name].rounding == "f32"
)


def _rounds_from_f32(op_class: type[Operation], props: dict[str, Attribute]) -> bool:
    facts = FACTS.get(op_class.name)
    if facts is not None and facts.rounding == "f32-when-tanh":
        # gelu: the tanh form computes in float32, the erf form in float64
        approximate = props.get("approximate")
        return isinstance(approximate, StringAttr) and approximate.data == "tanh"
    return op_class in _ROUNDS_FROM_F32


_COMBINE = {"add": np.add, "max": np.maximum, "min": np.minimum}

_F32_CALLS = {S.AddOp: np.add, S.SubOp: np.subtract, S.MulOp: np.multiply,
              S.MaxOp: np.maximum, S.MinOp: np.minimum, S.MatmulOp: np.matmul}  # fmt: skip
"""Ops whose L1 implementation (interp/tensor.py) on float32 operands is this numpy
function, result included (`_arith`, `_exact`, `_matmul`: no widening, no rounding)."""


class TileOp:
    """How one `dataflow.compute` runs on [cores, ...] arrays (built once per op).

    The L1 implementation runs on a detached copy of the op (`make_op`) whose operand
    and result types carry the core axis, with dim-valued properties shifted past it.
    """

    def __init__(self, op: D.ComputeBase, cores: int, half: str):
        self.op, self.cores = op, cores
        # Asked on every run; xDSL's operand accessors are slow next to a tile of work.
        self.inputs, self.outputs = len(op.inputs), len(op.outputs)
        kind = op.kind.data
        self.op_class = SPYRE_BY_NAME[kind]
        if len(op.outputs) != 1:
            raise InterpreterError(
                f"{kind} has one result, but the tile op has {len(op.outputs)} outputs"
            )
        out_type = op.outputs[0].type
        assert isinstance(out_type, D.LxType)
        self.out_shape = out_type.get_shape()
        self.name = S.element_type_name(out_type.element_type)
        if self.name == "f16" or (self.name == "bf16" and half == "dlf16"):
            self.name = half
        self.combine = D.ACCUMULATING.get(kind) if op.accumulate is not None else None
        props = op.op_attrs()
        in_types = [v.type for v in op.inputs]
        elements = [t.element_type for t in in_types]
        if not op.inputs:  # full, constant, iota: the same on every core but for offsets
            out = TensorType(out_type.element_type, self.out_shape)
            out = wide_type(out) if half == "dlf16" else out  # rounded once, from f32
            self.probe = make_op(self.op_class, [], [out], props)
            self.constant: np.ndarray | None = None
            return
        shapes = [t.get_shape() for t in in_types]
        rank = len(self.out_shape)
        if self.op_class is S.MatmulOp:  # torch's 1-D promotion, then batch alignment
            a, b = shapes
            shapes = [(1, *a) if len(a) == 1 else a, (*b, 1) if len(b) == 1 else b]
            rank = max(len(s) for s in shapes)
        if self.op_class is S.GatherOp:
            self.lifted = [(cores, *s) for s in shapes]
        else:  # lower-rank operands broadcast right-aligned, per core
            self.lifted = [(cores, *(1,) * (rank - len(s)), *s) for s in shapes]
        lifted_props = _lift_properties(props, cores)
        # Run with float32 in place of f16 (and of bf16 when accumulating: the partial
        # result is combined before the one rounding). On DLFloat16 every op does: the
        # card's units compute in fp32 and round the result once.
        rounds_from_f32 = half == "dlf16" or _rounds_from_f32(self.op_class, props)
        widen = {"f16"} if rounds_from_f32 else set()
        if half == "dlf16":
            widen |= {"bf16"}
        if self.combine is not None:
            widen |= {"f16", "bf16"}
        f32 = Float32Type()

        def wide(t: Attribute) -> Attribute:
            return f32 if S.element_type_name(t) in widen else t

        self.widened = S.element_type_name(out_type.element_type) in widen
        self.probe = make_op(
            self.op_class,
            [TensorType(wide(e), s) for e, s in zip(elements, self.lifted)],
            [TensorType(wide(out_type.element_type), (cores, *self.out_shape))],
            lifted_props,
        )
        # Its L1 implementation on float32 operands and result is one numpy call: made
        # straight, not through the op's accessors (a decode step runs ~500 tile ops).
        all_f32 = all(isinstance(wide(t), Float32Type) for t in (*elements, out_type.element_type))
        self.f32_call = _F32_CALLS.get(self.op_class) if all_f32 else None
        # On DLFloat16 an infinity is stored as the saturation bound, so a comparison
        # with one compares with that bound (`infinities_as_bounds`).
        self.saturating = half == "dlf16" and issubclass(self.op_class, S.CompareOp)

    def run(
        self, inputs: list[np.ndarray], offsets: list[object], current: np.ndarray | None
    ) -> np.ndarray:
        full = (self.cores, *self.out_shape)
        if not self.inputs:
            if isinstance(self.probe, S.IotaOp) and offsets:
                return self._iota(offsets)
            if self.constant is None:
                constant = apply_op(self.probe, [])
                self.constant = (round_held(constant, "dlf16") if self.name == "dlf16"
                                 else constant.astype(held_dtype(self.name)))  # fmt: skip
            return np.broadcast_to(self.constant, full)
        arrays = [x.reshape(s) for x, s in zip(inputs, self.lifted)]
        if self.f32_call is not None and all(x.dtype == np.float32 for x in arrays):
            result = self.f32_call(*arrays)
        elif self.op_class is S.GatherOp:
            result = self._gather(*arrays)
        elif self.saturating:
            result = apply_op(self.probe, list(infinities_as_bounds(*arrays)))
        else:
            result = apply_op(self.probe, arrays)
        if result.shape != full:  # (a reshape to the same shape would hide ownership)
            result = result.reshape(full)
        if self.combine is not None:
            assert current is not None
            wide = np.float32 if self.name in FLOAT_NAMES else np.int64
            fn = _COMBINE[self.combine]
            if current.dtype == wide and current.flags.writeable and self.name not in HALF_NAMES:
                # Nothing to round (an f32 or i64 accumulator): combine in place.
                return fn(current, result, out=current)
            combined = fn(current.astype(wide, copy=False), result.astype(wide, copy=False))
            return round_held(combined, self.name)
        if self.widened and self.name in HALF_NAMES:  # float32 computed for a half buffer
            owned = result.base is None and not any(result is x for x in inputs)
            return round_held(result, self.name, overwrite=owned)
        held = held_dtype(self.name)
        return result if result.dtype == held else converted(result, held)

    def _gather(self, table: np.ndarray, indices: np.ndarray) -> np.ndarray:
        rows = table.shape[1]
        bad = (indices < 0) | (indices >= rows)
        if bad.any():
            core = int(np.argwhere(bad)[0][0])
            value = indices[bad].flat[0]
            raise InterpreterError(f"core {core}: index {value} is out of range for {rows} rows")
        cores = np.arange(self.cores).reshape((self.cores,) + (1,) * (indices.ndim - 1))
        return table[cores, indices]

    def _iota(self, offsets: list[object]) -> np.ndarray:
        op = self.probe
        assert isinstance(op, S.IotaOp)
        rank = len(self.out_shape)
        (dim,) = S.shape_rules.normalize_dims([op.dim.value.data], rank)
        start, step = op.start.value.data, op.step.value.data
        first = np.broadcast_to(np.asarray(offsets[dim], dtype=np.int64), (self.cores,))
        first = (start + step * first).reshape((self.cores,) + (1,) * rank)
        if self.name == "dlf16":  # computed in f32, rounded once
            values = iota_values((self.cores, *self.out_shape), dim + 1, first, step, "f32")
            return round_held(values, "dlf16")
        values = iota_values((self.cores, *self.out_shape), dim + 1, first, step, self.name)
        return values.astype(held_dtype(self.name), copy=False)
