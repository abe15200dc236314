"""Contiguous runs of LPDDR5 a tile covers, and what they cost a core whose requests in
flight are limited: one model the tile planners (spyre_ir/matmul_plan.py, passes/row_tiles.py) and the
simulator (spyre_ir/sim/lpddr.py) share, so a plan is costed as it will be timed.

"Memory access requests are limited in Spyre, so contiguous stick layout is required for
full bandwidth utilization" (torch-spyre docs/source/user_guide/tensors_and_layouts.md,
Access Patterns): a request never spans two runs, so a move of many short runs is bound
by its requests, not its bytes (`SpyreConfig.lpddr_core_requests_in_flight`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from spyre_ir.hardware import SpyreConfig
from spyre_ir.layout import StickLayout


def box_runs(extents: Sequence[int], layout: StickLayout) -> int:
    """Contiguous runs of device memory a box of `extents` (host coordinates, starting
    at a stick boundary and on a tile boundary of every tiled host dim) covers, clipped
    to the tensor.

    Device memory is a row-major array of `layout.device_sizes`; a box covers a run of
    its innermost device dims as long as it takes them whole, and the first device dim
    (from the inside) it takes in part ends the run: the box is the product of its
    extents on the device dims outside that one runs. E.g. a 3-D `[b, m, k]` f16 tensor in the
    default layout is `[m, k/64, b, 64]`: a box of one batch is one run per stick, a box
    of every batch and every k-stick of its rows is one run."""
    n = len(layout.device_sizes) - 1  # the last device dim is the element in a stick
    ext = [1] * n
    for h, e in enumerate(extents):
        inside = min(e, layout.host_shape[h])
        remaining = -(-inside // layout.elems_per_stick) if h == layout.stick_dim else inside
        for j in layout.walkers(h):  # finest step first
            if j == n:
                continue  # the element in a stick
            size = layout.device_sizes[j]
            ext[j] = min(remaining, size)
            remaining = -(-remaining // size)
    run = 1
    for j in range(n - 1, -1, -1):
        run *= ext[j]
        if ext[j] < layout.device_sizes[j]:
            break
    return math.prod(ext) // run


def core_channel_cycles(nbytes: float, runs: int, config: SpyreConfig) -> float:
    """Cycles one core's LPDDR5 channel takes for `nbytes` in `runs` contiguous pieces:
    its bytes in flight over the latency, or, on a card that limits a core's requests in
    flight (`lpddr_core_requests_in_flight`), its requests over the latency (a request
    never spans two runs, so one per run at least), whichever binds:

        max(nbytes / lpddr_core_bytes_per_cycle,
            runs x lpddr_latency_cycles / lpddr_core_requests_in_flight)"""
    own = nbytes / config.lpddr_core_bytes_per_cycle
    requests = config.lpddr_core_requests_in_flight
    if requests:
        by_requests = runs * config.lpddr_latency_cycles / requests
        return by_requests if by_requests > own else own
    return own


def channel_seconds(nbytes: float, runs: int, config: SpyreConfig) -> float:
    """`core_channel_cycles` in seconds: one core's move of `nbytes` in `runs` runs."""
    return core_channel_cycles(nbytes, runs, config) / config.clock_hz


@dataclass(frozen=True)
class MatmulLayouts:
    """The stick layouts of a matmul's A, B and C in LPDDR5, so that its planner counts
    the runs of each tile it weighs (a row-major A cut along K is a run per row)."""

    a: StickLayout
    b: StickLayout
    c: StickLayout

    def move_seconds(
        self,
        a_rows: int,
        tk: int,
        tn: int,
        c_rows: int,
        elem: int,
        pieces: tuple[int, int],
        config: SpyreConfig,
    ) -> tuple[float, float, float]:
        """Channel seconds of one core's A tile (a_rows x tk), B tile (tk x tn) and C
        tile (c_rows x tn) of one batch, each moved as spyre-tile moves it: A in
        `pieces[0]` row blocks, B and C in `pieces[1]` column pieces (one a corelet)."""
        blocks, halves = pieces
        a = _one_batch(self.a, a_rows // blocks, tk)
        b = _one_batch(self.b, tk, tn // halves)
        c = _one_batch(self.c, c_rows, tn // halves)
        a_s = blocks * channel_seconds(math.prod(a) * elem, box_runs(a, self.a), config)
        b_s = halves * channel_seconds(math.prod(b) * elem, box_runs(b, self.b), config)
        c_s = halves * channel_seconds(math.prod(c) * elem, box_runs(c, self.c), config)
        return a_s, b_s, c_s


def _one_batch(layout: StickLayout, rows: int, columns: int) -> tuple[int, ...]:
    """The host extents of a rows x columns box of one batch of `layout`'s tensor."""
    return (1,) * (len(layout.host_shape) - 2) + (rows, columns)
