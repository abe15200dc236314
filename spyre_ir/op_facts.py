"""The facts of every `spyre` (L1) op, in one table: which unit of a corelet runs it,
its cost class (the cost-model formula the simulator times it by), how its f16 result
rounds, and how it goes past L1.

The tables that used to hold these facts separately derive from `FACTS`:
`hardware.SFP_OPS` / `LS_OPS` (and so `unit_for`), the cost classes of
`cost_model` (`SFP_SPECIAL`, `SFP_REDUCTIONS`, ..., `cost_class`) and the L2
interpreter's `tile_ops._ROUNDS_FROM_F32`. The L1 implementation of each op is its entry
in `interp/tensor.IMPLS`. tests/test_op_facts.py checks that every op of the `spyre`
dialect has an entry here, an L1 implementation, and a cost class its unit can time.

This module imports nothing of spyre-ir (the hardware model, the cost model and the
dialects import it), so ops are named by their names ("spyre.add").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Unit = Literal["pe", "sfp", "ls"]
Rounding = Literal["f32", "own", "f32-when-tanh"]

COST_CLASSES: dict[str, tuple[Unit, str]] = {
    # the PE array
    "elementwise": ("pe", "pe_elementwise_cycles: 512 elements per cycle plus the fill"),
    "matmul": ("pe", "pe_matmul_cycles (plan_matmul for the work division)"),
    "fill": ("pe", "pe_elementwise_cycles of its result, no flops (full, iota, constant)"),
    "attention": ("pe", "its pipeline's matmuls and softmax (attention_plan.choose_plan)"),
    # the special-function pipeline: sfp_cycles, passes per sfp_cost_factor
    "simple": ("sfp", "sfp_cost_simple passes"),
    "special": ("sfp", "sfp_cost_special passes (transcendental functions, div)"),
    "activation": ("sfp", "sfp_cost_special + sfp_cost_simple passes (gelu, silu)"),
    "reduction": ("sfp", "sfp_cost_reduction passes"),
    "variance": ("sfp", "2 * sfp_cost_reduction passes"),
    "softmax": ("sfp", "sfp_cost_softmax passes"),
    "norm": ("sfp", "sfp_cost_norm passes"),
    "sort": ("sfp", "sort_cycles: a bitonic network or k extractions per row"),
    # the load/store unit
    "rearrange": ("ls", "ls_rearrange_cycles: one stick written per cycle"),
    "row-gather": ("ls", "ls.gather: a row of the table per index (sim/lpddr.gather_cycles)"),
    "one-hot-matmul": (
        "ls",
        "the selects and matmuls spyre-lower-scatter rewrites it to; "
        "a scatter it leaves in place: a row-store kernel (passes/row_store_kernel.py: ls loads and stores)",
    ),
}
"""Cost class -> (the unit whose ops it times, the formula: a function of cost_model
unless said otherwise)."""

TILE_OP = "tile-op"
"""`OpFacts.lowering` of an op that runs as a tile op (`dataflow.compute`) of its unit."""


@dataclass(frozen=True)
class OpFacts:
    """One `spyre` op's facts."""

    name: str
    """The op's name, "spyre.add"."""
    unit: Unit
    """The unit of a corelet that runs its tiles (torch-spyre docs,
    architecture/spyre_accelerator): the PE array matmuls and plain elementwise
    arithmetic, the special-function pipeline transcendental functions, reductions and
    conversions, the load/store unit moves and rearrangements."""
    cost: str
    """Its cost class, a key of `COST_CLASSES`."""
    rounding: Rounding
    """How its f16 (half) result rounds: "f32", its float32 result rounded once to f16
    (a tile op on f16 data held in float32 runs with float32 types and rounds with
    `round_to_f16`, bit for bit the L1 result); "own", with its own types as at L1
    (float64 statistics, erf, cumsum's accumulator, a pad value); "f32-when-tanh", as
    "f32" for the tanh form (gelu: the erf form computes in float64)."""
    lowering: str = TILE_OP
    """How it goes past L1: `TILE_OP`, an L3 instruction of its unit ("ls.gather"), or
    the pass that rewrites it into other ops ("spyre-lower-scatter")."""

    @property
    def short(self) -> str:
        return self.name.removeprefix("spyre.")


def _op(name: str, unit: Unit, cost: str, rounding: Rounding, lowering: str = TILE_OP) -> OpFacts:
    return OpFacts(f"spyre.{name}", unit, cost, rounding, lowering)


_TABLE = (
    # elementwise arithmetic, comparisons, logic and integer ops: the PE array
    _op("add", "pe", "elementwise", "f32"),
    _op("sub", "pe", "elementwise", "f32"),
    _op("mul", "pe", "elementwise", "f32"),
    _op("max", "pe", "elementwise", "f32"),
    _op("min", "pe", "elementwise", "f32"),
    _op("eq", "pe", "elementwise", "f32"),
    _op("ne", "pe", "elementwise", "f32"),
    _op("lt", "pe", "elementwise", "f32"),
    _op("le", "pe", "elementwise", "f32"),
    _op("gt", "pe", "elementwise", "f32"),
    _op("ge", "pe", "elementwise", "f32"),
    _op("logical_and", "pe", "elementwise", "f32"),
    _op("logical_or", "pe", "elementwise", "f32"),
    _op("logical_xor", "pe", "elementwise", "f32"),
    _op("logical_not", "pe", "elementwise", "f32"),
    _op("select", "pe", "elementwise", "f32"),
    _op("bitwise_and", "pe", "elementwise", "f32"),
    _op("bitwise_or", "pe", "elementwise", "f32"),
    _op("bitwise_xor", "pe", "elementwise", "f32"),
    _op("bitwise_not", "pe", "elementwise", "f32"),
    _op("shift_left", "pe", "elementwise", "f32"),
    _op("shift_right", "pe", "elementwise", "f32"),
    _op("neg", "pe", "elementwise", "f32"),
    _op("abs", "pe", "elementwise", "f32"),
    _op("sign", "pe", "elementwise", "f32"),
    _op("relu", "pe", "elementwise", "f32"),
    _op("clamp", "pe", "elementwise", "f32"),
    _op("matmul", "pe", "matmul", "f32"),
    _op("full", "pe", "fill", "own"),
    _op("constant", "pe", "fill", "own"),
    _op("iota", "pe", "fill", "own"),
    _op("attention", "pe", "attention", "own", "spyre-tile"),  # passes/tile_attention.py
    # functions, conversions and reductions: the special-function pipeline
    _op("div", "sfp", "special", "f32"),
    _op("pow", "sfp", "special", "f32"),
    _op("exp", "sfp", "special", "f32"),
    _op("log", "sfp", "special", "f32"),
    _op("sqrt", "sfp", "special", "f32"),
    _op("rsqrt", "sfp", "special", "f32"),
    _op("reciprocal", "sfp", "special", "f32"),
    _op("tanh", "sfp", "special", "f32"),
    _op("sigmoid", "sfp", "special", "f32"),
    _op("erf", "sfp", "special", "own"),
    _op("log1p", "sfp", "special", "f32"),
    _op("sin", "sfp", "special", "f32"),
    _op("cos", "sfp", "special", "f32"),
    _op("silu", "sfp", "activation", "f32"),
    _op("gelu", "sfp", "activation", "f32-when-tanh"),
    _op("floor", "sfp", "simple", "f32"),
    _op("ceil", "sfp", "simple", "f32"),
    _op("round", "sfp", "simple", "f32"),  # as floor and ceil
    _op("cast", "sfp", "simple", "f32"),
    _op("sum", "sfp", "reduction", "f32"),
    _op("mean", "sfp", "reduction", "f32"),
    _op("reduce_max", "sfp", "reduction", "f32"),
    _op("reduce_min", "sfp", "reduction", "f32"),
    _op("argmax", "sfp", "reduction", "f32"),
    _op("argmin", "sfp", "reduction", "f32"),
    _op("cumsum", "sfp", "reduction", "own"),
    _op("var", "sfp", "variance", "own"),
    _op("softmax", "sfp", "softmax", "f32"),
    _op("layer_norm", "sfp", "norm", "own"),
    _op("rms_norm", "sfp", "norm", "own"),
    # issue 19: sorting moves values, it never rounds them; one row in LX
    _op("sort", "sfp", "sort", "f32"),
    _op("argsort", "sfp", "sort", "f32"),
    # data movement: the load/store unit
    _op("reshape", "ls", "rearrange", "f32"),
    _op("transpose", "ls", "rearrange", "f32"),
    _op("broadcast_to", "ls", "rearrange", "f32"),
    _op("slice", "ls", "rearrange", "f32"),
    _op("concat", "ls", "rearrange", "f32"),
    _op("pad", "ls", "rearrange", "own"),
    _op("restickify", "ls", "rearrange", "own"),
    _op("gather", "ls", "row-gather", "f32", "ls.gather"),
    _op("scatter", "ls", "one-hot-matmul", "own", "spyre-lower-scatter"),
    _op("scatter_add", "ls", "one-hot-matmul", "own", "spyre-lower-scatter"),
)

FACTS: dict[str, OpFacts] = {facts.name: facts for facts in _TABLE}
"""Op name ("spyre.add") -> its facts."""


def facts_of(op_name: str) -> OpFacts | None:
    """The facts of the op `op_name` ("spyre.exp" or "exp"), None for no `spyre` op."""
    return FACTS.get(op_name if op_name.startswith("spyre.") else f"spyre.{op_name}")


def names(*, unit: str | None = None, cost: str | None = None, rounding: str | None = None,
          prefixed: bool = True) -> frozenset[str]:  # fmt: skip
    """Names of the ops with these facts, "spyre.x" (or "x" without `prefixed`)."""
    return frozenset(
        f.name if prefixed else f.short
        for f in _TABLE
        if (unit is None or f.unit == unit)
        and (cost is None or f.cost == cost)
        and (rounding is None or f.rounding == rounding)
    )


MOVES_ELEMENTS = names(cost="rearrange", rounding="f32")
"""Ops that only move elements (reshape, transpose, broadcast_to, slice, concat): their
half results are values their inputs hold, so rounding them is the identity, and they
move the card's DLFloat16 codes as they move values."""
