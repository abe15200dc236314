"""The `sfp` dialect (L3): instructions of a corelet's special-function pipeline.

`sfp.compute` applies a transcendental, reduction, normalisation or conversion `spyre`
op to LX tiles. Each corelet has its own SFP program ("sfp0", "sfp1").
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition

from spyre_ir.dialects import dataflow
from spyre_ir.dialects.ls import _check_unit


@irdl_op_definition
class ComputeOp(dataflow.ComputeBase):
    name = "sfp.compute"

    def unit_allowed(self) -> bool:
        _check_unit(self, "sfp")
        return self.unit.data == "sfp"


SFP_OPS = (ComputeOp,)
Sfp = Dialect("sfp", list(SFP_OPS), [])
