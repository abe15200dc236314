"""The `pe` dialect (L3): instructions of a corelet's PE array.

`pe.compute` applies a matmul or elementwise `spyre` op to LX tiles (a matmul tile
with `accumulate` adds into its f32 output). Each corelet has its own PE program
("pe0", "pe1").
"""

from __future__ import annotations

from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition

from spyre_ir.dialects import dataflow
from spyre_ir.dialects.ls import _check_unit


@irdl_op_definition
class ComputeOp(dataflow.ComputeBase):
    name = "pe.compute"

    def unit_allowed(self) -> bool:
        _check_unit(self, "pe")
        return self.unit.data == "pe"


PE_OPS = (ComputeOp,)
Pe = Dialect("pe", list(PE_OPS), [])
