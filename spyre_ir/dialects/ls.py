"""The `ls` dialect (L3): instructions of a core's load/store unit.

The LS unit moves data: whole sticks between LPDDR5 and LX (`ls.load`, `ls.store`,
`ls.gather`), rearranges tiles inside LX (`ls.compute` for transposes, slices, pads,
concats, broadcasts), and exchanges partial results over the ring
(`ls.ring_allreduce`, `ls.ring_allgather`). The ops mean what their `dataflow` counterparts mean; here they
stand in the core's "ls" unit program.
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition
from xdsl.utils.exceptions import VerifyException

from spyre_ir.dialects import dataflow
from spyre_ir.dialects.core import enclosing_unit


def _check_unit(op, unit: str) -> None:
    found = enclosing_unit(op)
    if found is not None and not found.startswith(unit):
        raise VerifyException(f"'{op.name}' belongs in the {unit} unit, not {found}")


@irdl_op_definition
class LoadOp(dataflow.LoadBase):
    name = "ls.load"

    def verify_(self) -> None:
        super().verify_()
        _check_unit(self, "ls")


@irdl_op_definition
class StoreOp(dataflow.StoreBase):
    name = "ls.store"

    def verify_(self) -> None:
        super().verify_()
        _check_unit(self, "ls")


@irdl_op_definition
class GatherOp(dataflow.GatherBase):
    name = "ls.gather"

    def verify_(self) -> None:
        super().verify_()
        _check_unit(self, "ls")


@irdl_op_definition
class ScatterOp(dataflow.ScatterBase):
    name = "ls.scatter"

    def verify_(self) -> None:
        super().verify_()
        _check_unit(self, "ls")


@irdl_op_definition
class RingAllreduceOp(dataflow.RingAllreduceBase):
    name = "ls.ring_allreduce"

    def verify_(self) -> None:
        super().verify_()
        _check_unit(self, "ls")


@irdl_op_definition
class RingAllgatherOp(dataflow.RingAllgatherBase):
    name = "ls.ring_allgather"

    def verify_(self) -> None:
        super().verify_()
        _check_unit(self, "ls")


@irdl_op_definition
class ComputeOp(dataflow.ComputeBase):
    name = "ls.compute"

    def unit_allowed(self) -> bool:
        _check_unit(self, "ls")
        return self.unit.data == "ls"


LS_OPS = (LoadOp, StoreOp, GatherOp, ScatterOp, RingAllreduceOp, RingAllgatherOp, ComputeOp)
Ls = Dialect("ls", list(LS_OPS), [])
