"""One lowering per ATen op (family): FX node -> `spyre` ops.

`LOWERINGS` maps an ATen/prims overload to a function of (importer, node). `CHECKS` maps
an overload to a predicate that names what it cannot handle (a tensor bound where only a
scalar is supported, say); the backend runs such nodes on CPU instead.

The tables and the `lowers` decorator are in aten_base.py, the lowerings by family in
aten_elementwise.py, aten_reductions.py, aten_shapes.py, aten_constants.py and the
modules imported at the end; this module imports them all (which registers them) and
re-exports every name they define.
"""

# ruff: noqa: F405 - the ops come from the star imports

from __future__ import annotations

from collections.abc import Sequence

# isort: off
from spyre_ir.lowering.aten_base import *  # noqa: F403
from spyre_ir.lowering.aten_elementwise import *  # noqa: F403
from spyre_ir.lowering.aten_elementwise import (  # noqa: F401
    _ALPHA,
    _binary,
    _compare,
    _eval_dropout,
    _float_result,
    _logical,
    _rounding,
    _unary,
)
from spyre_ir.lowering.aten_reductions import *  # noqa: F403
from spyre_ir.lowering.aten_reductions import (  # noqa: F401
    _arg_reduction,
    _dims,
    _integral_correction,
    _reduce,
    _reduce_all,
    _reduction,
    _truth_reduction,
    _value_and_index,
    _variance,
)
from spyre_ir.lowering.aten_shapes import *  # noqa: F403
from spyre_ir.lowering.aten_shapes import (  # noqa: F401
    _broadcast_in_dim,
    _copy_check,
    _flat_index,
    _index_put_check,
    _index_select_dim0,
    _non_negative_pad,
    _positive_step,
    _scatter_positions,
    _slice,
    _tensor_indices,
    _wrap_negative,
)
from spyre_ir.lowering.aten_constants import *  # noqa: F403
from spyre_ir.lowering.aten_constants import (  # noqa: F401
    _fill_value,
    _static_range,
    _iota,
)
# isort: on

# Families kept in modules of their own register into LOWERINGS when imported.
from spyre_ir.lowering import aten_bitwise, aten_remainder, aten_scatter  # noqa: E402, F401

# isort: split
from spyre_ir.lowering import aten_conv  # noqa: E402, F401  (convolutions, windows)

# isort: off
from spyre_ir.lowering import aten_sort  # noqa: E402, F401  (issue 19: sorting ops)
# isort: on


def supported_targets() -> Sequence[str]:
    """Every ATen/prims overload the importer lowers, for docs and the CLI."""
    return sorted({str(t) for t in LOWERINGS} | set(aten_scatter.LIBRARY_OPS))
