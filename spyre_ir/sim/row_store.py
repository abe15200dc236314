"""The simulator's row store: an `in_place` `spyre.scatter` between kernels
(spyre-lower-scatter), run as one on-card copy of the source's slices into the slices
of dest's buffer at the runtime positions.

Its cost is what it moves: the source's sticks read and written once
(`cost_model.device_copy_s`, the model of every on-card copy); dest is neither read nor
written whole. It reports like a program (`run_report` sums it with them) under the
name `store_rows_<n>`, with no flops and the LPDDR5 port as its bottleneck.

The result is dest's buffer with the slices replaced. Dest is an argument of the entry
(the verifier's rule), which the caller still owns: the simulator writes a copy of it
once per run (host memory, not card time) and passes that buffer on, so every later
op reads the written cache, not a new array per reader.
"""

from __future__ import annotations

import numpy as np

from spyre_ir import cost_model as cm
from spyre_ir.dialects import core, spyre
from spyre_ir.dialects import dataflow as D
from spyre_ir.hardware import SpyreConfig
from spyre_ir.interp.tensor import scatter_positions
from spyre_ir.sim.report import tensor_bytes
from spyre_ir.sim.scheduler import RESOURCES


def store_rows(op: spyre.ScatterOp, operands: list, config: SpyreConfig, index: int,
               ) -> tuple[np.ndarray, dict]:  # fmt: skip
    """The written buffer and the report of one row store."""
    dest, indices, source = operands
    written = np.array(dest, copy=True)  # the L1 scatter's positions, checked and wrapped
    written[scatter_positions(op.axis, written, np.asarray(indices))] = source
    moved = tensor_bytes(D.DdrType.of_tensor(op.source.type), config)
    seconds = cm.device_copy_s(moved, config)
    us = seconds * 1e6
    cycles = us * config.clock_hz * 1e-6
    roofline = 2 * moved / config.lpddr_bandwidth * 1e6
    busy = {r: (cycles if r == "lpddr" else 0.0) for r in RESOURCES}
    units = dict.fromkeys(core.UNITS, 0.0)
    units.update({"pe": 0.0, "sfp": 0.0, "lpddr": cycles, "ring": 0.0})
    return written, {
        "name": f"store_rows_{index}",
        "cores": 1,
        "simulated_us": us,
        "roofline_us": min(roofline, us),
        "roofline_fraction": min(roofline, us) / us if us else 1.0,
        "flops": 0,
        "lpddr_bytes": 2 * moved,
        "lpddr_card_bytes": 2 * moved,
        "ring_bytes": 0,
        "lx_peak_bytes": 0,
        "bottleneck": "lpddr",
        "utilization": {k: (1.0 if k == "lpddr" else 0.0) for k in units},
        "busy_us": {k: (us if k == "lpddr" else 0.0) for k in busy},
        "_busy_cycles": busy,
        "_unit_busy": units,
        "_cycles": cycles,
    }
