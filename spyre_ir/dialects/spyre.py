"""The `spyre` dialect (level L1): value-semantics tensor ops with torch semantics.

Operands and results are builtin ranked tensors with static shapes. A tensor may carry
its device stick layout as the type's encoding (`tensor<4x64xf16, #spyre.stick<...>>`).
Binary ops broadcast as torch does and take only their operands, so the generic form
`"spyre.add"(%a, %b) : (...) -> ...` is valid IR.

The ops are defined by family in spyre_base.py (`SpyreOp`, the element type helpers),
spyre_elementwise.py, spyre_reduce.py, spyre_shape.py and spyre_composite.py; this
module re-exports every name of those and builds the dialect from `SPYRE_OPS`.
"""

# ruff: noqa: F405 - the ops come from the star imports

from __future__ import annotations

from xdsl.ir import Dialect, Operation

from spyre_ir.dialects.stick_layout import StickLayoutAttr

# isort: off
from spyre_ir.dialects.spyre_base import *  # noqa: F403
from spyre_ir.dialects.spyre_elementwise import *  # noqa: F403
from spyre_ir.dialects.spyre_elementwise import (  # noqa: F401
    _binary,
    _define,
    _unary,
)
from spyre_ir.dialects.spyre_reduce import *  # noqa: F403
from spyre_ir.dialects.spyre_reduce import (  # noqa: F401
    _reduction,
)
from spyre_ir.dialects.spyre_shape import *  # noqa: F403
from spyre_ir.dialects.spyre_composite import *  # noqa: F403
# isort: on

SPYRE_OPS: tuple[type[Operation], ...] = (
    AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp,
    EqOp, NeOp, LtOp, LeOp, GtOp, GeOp,
    LogicalAndOp, LogicalOrOp, LogicalXorOp, SelectOp,
    BitwiseAndOp, BitwiseOrOp, BitwiseXorOp, ShiftLeftOp, ShiftRightOp, BitwiseNotOp, RoundOp,
    NegOp, AbsOp, SignOp, ReluOp, ExpOp, LogOp, SqrtOp, RsqrtOp, ReciprocalOp, TanhOp,
    SigmoidOp, ErfOp, Log1pOp, SiluOp, SinOp, CosOp, FloorOp, CeilOp, LogicalNotOp, GeluOp,
    ClampOp, CastOp,
    MatmulOp,
    SumOp, MeanOp, ReduceMaxOp, ReduceMinOp, ArgmaxOp, ArgminOp, VarOp, CumsumOp,
    ReshapeOp, TransposeOp, BroadcastToOp, SliceOp, ConcatOp, PadOp, GatherOp, ScatterOp,
    ScatterAddOp,  # issue 19: MoE routing (index_add, scatter_add)
    FullOp, ConstantOp, IotaOp,
    SoftmaxOp, LayerNormOp, RmsNormOp, AttentionOp,
    RestickifyOp,
    *SORTING_OPS,
)  # fmt: skip

Spyre = Dialect("spyre", list(SPYRE_OPS), [StickLayoutAttr])
