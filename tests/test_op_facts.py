"""spyre_ir/op_facts.py, the one table of each `spyre` op's unit, cost class, rounding and
lowering: complete for the dialect, and what the hardware model, the cost model, the
simulator and the L2 interpreter use (issue 19, Deliver 2: a cost-model entry for every
op; the brief: an op's facts in one place, checked for completeness)."""

from __future__ import annotations

import pytest
import test_op_coverage_differential as coverage

from spyre_ir import cost_model as cm
from spyre_ir import op_facts
from spyre_ir.dialects.spyre import SPYRE_OPS
from spyre_ir.hardware import DEFAULT_CONFIG as C
from spyre_ir.hardware import unit_for
from spyre_ir.interp.tensor import IMPLS
from spyre_ir.interp.tile_ops import _rounds_from_f32
from spyre_ir.pipelines import lower_to_units


def test_every_spyre_op_has_its_facts_an_implementation_and_a_cost_entry() -> None:
    """The completeness test: an op added to the dialect without its facts (or facts of
    an op that is gone) fails here, as does a cost class no formula stands for or one
    of another unit, and an op without an L1 implementation."""
    dialect = {op.name for op in SPYRE_OPS}
    assert sorted(dialect - set(op_facts.FACTS)) == [], "ops without facts"
    assert sorted(set(op_facts.FACTS) - dialect) == [], "facts of no spyre op"
    for op in SPYRE_OPS:
        facts = op_facts.FACTS[op.name]
        assert facts.name == op.name
        assert cm.cost_class(op.name) == facts.cost, op.name
        assert facts.cost in op_facts.COST_CLASSES, (op.name, facts.cost)
        assert op_facts.COST_CLASSES[facts.cost][0] == facts.unit, (op.name, facts.cost)
        assert facts.rounding in ("f32", "own", "f32-when-tanh"), op.name
        assert op in IMPLS, f"{op.name} has no L1 implementation"
    assert {unit for unit, _ in op_facts.COST_CLASSES.values()} == {"pe", "sfp", "ls"}


def test_each_lowering_names_a_pass_or_an_instruction() -> None:
    from spyre_ir import registry
    from spyre_ir.dialects import ls

    instructions = {op.name for op in ls.Ls.operations}
    for facts in op_facts.FACTS.values():
        lowering = facts.lowering
        assert (lowering == op_facts.TILE_OP or lowering in registry.PASSES
                or lowering in instructions and lowering.startswith(facts.unit + ".")), facts  # fmt: skip


def test_ops_without_facts_have_no_cost_class() -> None:
    assert cm.cost_class("spyre.something_new") is None
    assert cm.cost_class("exp") == cm.cost_class("spyre.exp") == "special"


# What each SFP cost class costs on the default config: 64 lanes, a simple pass 1 cycle, a
# special function 5, a reduction 8, a softmax 5 and a norm 4 (hardware.py).
SFP_PASSES = {"simple": 1, "special": 5, "activation": 6, "reduction": 8, "variance": 16,
              "softmax": 5, "norm": 4, "sort": 1}  # fmt: skip


@pytest.mark.parametrize("name", sorted(op_facts.names(unit="sfp")))
def test_each_sfp_op_costs_its_class(name: str) -> None:
    facts = op_facts.FACTS[name]
    assert cm.sfp_cost_factor(name, C) == SFP_PASSES[facts.cost]
    assert cm.sfp_cycles(name, 640, C) == 10 * SFP_PASSES[facts.cost]  # 640 / 64 lanes


def test_units_follow_the_facts() -> None:
    assert {op.name for op in SPYRE_OPS if unit_for(op.name) == "sfp"} == op_facts.names(unit="sfp")
    assert {op.name for op in SPYRE_OPS if unit_for(op.name) == "ls"} == op_facts.names(unit="ls")
    # what the units do (torch-spyre docs): integer arithmetic on the PE array, as add;
    # round a conversion on the SFP, as floor; gather and pad moves of the LS unit
    assert unit_for("spyre.bitwise_and") == unit_for("spyre.add") == "pe"
    assert unit_for("spyre.round") == unit_for("spyre.floor") == "sfp"
    assert unit_for("spyre.gather") == unit_for("spyre.pad") == "ls"


def test_rounding_follows_the_facts() -> None:
    from xdsl.dialects.builtin import StringAttr

    from spyre_ir.dialects import spyre as S

    for op in SPYRE_OPS:
        rounding = op_facts.FACTS[op.name].rounding
        if rounding != "f32-when-tanh":
            assert _rounds_from_f32(op, {}) == (rounding == "f32"), op.name
    assert _rounds_from_f32(S.GeluOp, {"approximate": StringAttr("tanh")})
    assert not _rounds_from_f32(S.GeluOp, {"approximate": StringAttr("none")})
    assert not _rounds_from_f32(S.ErfOp, {})  # erf computes in float64


# The ops issue 19 lists, lowered to per-unit programs: every instruction the simulator
# times has a cost class of its unit (gather's rows, histc's compares and sums, a pad's
# rearrangement included).
_UNIT_OF_STREAM = {"pe.compute": "pe", "sfp.compute": "sfp", "ls.compute": "ls"}


@pytest.mark.parametrize("case", coverage.ALL, ids=[case.name for case in coverage.ALL])
def test_every_instruction_of_the_listed_ops_has_a_cost_entry(case) -> None:
    module, _ = coverage.lowered(case, case.inputs(case.dtypes[0]))
    l1_ops = {op.name for op in module.walk() if op.name.startswith("spyre.")}
    lower_to_units(module)
    seen = set()
    for op in module.walk():
        if op.name in _UNIT_OF_STREAM:
            kind, unit = op.kind.data, _UNIT_OF_STREAM[op.name]
            facts = op_facts.facts_of(kind)
            assert facts is not None, f"{kind} on {unit} has no facts"
            assert facts.unit == unit and facts.lowering == op_facts.TILE_OP, (kind, unit)
            assert op_facts.COST_CLASSES[facts.cost][0] == unit
            seen.add(kind)
        elif op.name == "ls.gather":
            seen.add("spyre.gather")  # op_facts: gather's lowering, a row-gather's cost
            assert op_facts.FACTS["spyre.gather"].lowering == "ls.gather"
    assert seen, "the case runs on the units"
    # every L1 op either runs as a tile op of that kind or is rewritten into others
    for name in l1_ops - seen:
        facts = op_facts.FACTS[name]
        assert facts.lowering != op_facts.TILE_OP or facts.cost in ("rearrange", "fill"), name
