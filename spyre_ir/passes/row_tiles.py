"""Box tiles of a rows kernel, for a card that limits a core's LPDDR5 requests in flight.

A rows kernel's tile is `t` rows of the innermost row dim with every other row dim 1
(`tile_rows.rows_tile`). Where a request never spans two contiguous runs of device
memory (`SpyreConfig.lpddr_core_requests_in_flight`, spyre_ir/lpddr_runs.py), such a
tile can be many short runs: a 2-D `[R, C]` tensor lives as `[C / 64, R, 64]` (sticks
of its last dim, its first dim just outside them), so `t` whole rows are C / 64 runs of
`t` sticks, and a `[4, 1, C]` tensor's row of one batch is a run per stick. Here a tile
takes any extent along each row dim - and along the last dim too, in whole sticks, when
the group's ops are row-local there (elementwise) - and the one that the card's model
times fastest wins: the shared bus for every tile's bytes, each core's read and write
channel for its tiles' moves (bytes or requests, whichever binds), its PE and SFP work,
the chain of two tiles' loads behind the latency (two slots a buffer), and the first
tile's loads and the last one's stores, which nothing overlaps."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from spyre_ir import cost_model, op_facts
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.dialects.stick_layout import layout_or_default
from spyre_ir.hardware import ELEMENT_BYTES, SpyreConfig, card_of
from spyre_ir.layout import StickLayout
from spyre_ir.lpddr_runs import box_runs, channel_seconds
from spyre_ir.passes import row_model


@dataclass(frozen=True)
class BoxTile:
    """A rows kernel's tiles: `extents` along the analysis' row dims, walked by `cores`
    cores `per_core` tiles each; `estimate_s` its time on the card's model."""

    analysis: row_model.RowAnalysis
    extents: tuple[int, ...]
    cores: int
    per_core: int
    estimate_s: float

    @property
    def counts(self) -> list[int]:
        """Tiles along each row dim."""
        return [cost_model.ceil_div(r, e) for r, e in zip(self.analysis.rows, self.extents)]


@dataclass(frozen=True)
class _Move:
    value: SSAValue
    layout: StickLayout
    elem: int
    load: bool


def limits_requests(group: dataflow.GroupOp) -> bool:
    """Whether the group's card limits a core's requests in flight (tiles cost runs)."""
    return bool(card_of(group).lpddr_core_requests_in_flight)


def best_box_tile(group: dataflow.GroupOp, ops: Sequence[Operation],
                  analyses: Sequence[row_model.RowAnalysis], values: Sequence[SSAValue],
                  default: BoxTile, cores: int, lx_bytes: int) -> BoxTile:  # fmt: skip
    """The fastest box tile of the group over `analyses` (each a row analysis the group
    allows), or `default` (the rows kernel's own tile, its estimate set) unless one
    ranks before it (`_rank`)."""
    best = default
    for analysis in analyses:
        moves = _moves(group, analysis)
        for extents in _candidate_extents(group, analysis, moves, values, lx_bytes):
            tile = _estimate(group, ops, analysis, moves, extents, cores)
            if _rank(tile) < _rank(best):
                best = tile
    return best


def _rank(tile: BoxTile) -> tuple[float, int]:
    """Faster first (to 0.1 %), then fewer tiles (each has costs the model leaves out:
    instruction issue, the PE array's fill)."""
    return round(math.log(tile.estimate_s) / math.log(1.001)), math.prod(tile.counts)


def estimated(group: dataflow.GroupOp, ops: Sequence[Operation], analysis: row_model.RowAnalysis,
              extents: Sequence[int], cores: int) -> BoxTile:  # fmt: skip
    """The tile of `extents` with its estimate (the rows kernel's own, to compare)."""
    return _estimate(group, ops, analysis, _moves(group, analysis), tuple(extents), cores)


def _moves(group: dataflow.GroupOp, analysis: row_model.RowAnalysis) -> list[_Move]:
    """The tile moves of every tile: each row-dependent input loaded, each result stored,
    with where it lives in LPDDR5."""
    yielded = group.body.block.last_op
    assert isinstance(yielded, dataflow.YieldOp)
    out = []
    for arg, outer in zip(group.body.block.args, group.inputs):
        if any(a is not None for a in analysis.axes.get(arg, ())):
            out.append(_Move(arg, layout_or_default(outer.type), _elem(arg), True))
    for value, outer in zip(yielded.values, group.outputs):
        out.append(_Move(value, layout_or_default(outer.type), _elem(value), False))
    return out


def _elem(value: SSAValue) -> int:
    return ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(value))]


def _candidate_extents(group: dataflow.GroupOp, analysis: row_model.RowAnalysis,
                       moves: Sequence[_Move], values: Sequence[SSAValue], lx_bytes: int):  # fmt: skip
    """Extents along each row dim - the whole dim or a power of two below it, whole
    sticks along a dim that walks a moved tensor's stick dim - whose buffers fit half
    of LX (the other half double-buffers)."""
    options = []
    moved = [m.value for m in moves]
    for d, size in enumerate(analysis.rows):
        stick = row_model.stick_of(group, analysis, moved, d)
        powers = [1 << i for i in range(size.bit_length()) if (1 << i) < size]
        options.append([size] + [e for e in powers if e % stick == 0])
    budget = lx_bytes // 2
    for extents in itertools.product(*options):
        tile_bytes = sum(math.prod(analysis.tile_shape(v, extents)) * _elem(v) for v in values)
        if tile_bytes <= budget:
            yield extents


def _estimate(group: dataflow.GroupOp, ops: Sequence[Operation], analysis: row_model.RowAnalysis,
              moves: Sequence[_Move], extents: tuple[int, ...], cores: int) -> BoxTile:  # fmt: skip
    config = card_of(group)
    items = math.prod(cost_model.ceil_div(r, e) for r, e in zip(analysis.rows, extents))
    per_core = cost_model.ceil_div(items, max(1, min(cores, items)))
    used = cost_model.ceil_div(items, per_core)
    channel = [0.0, 0.0]  # a tile's read and write channel seconds
    card_bytes = [0.0, 0.0]
    for m in moves:
        box = analysis.tile_shape(m.value, extents)
        nbytes = math.prod(box) * m.elem
        side = 0 if m.load else 1
        channel[side] += channel_seconds(nbytes, box_runs(box, m.layout), config)
        card_bytes[side] += items * nbytes
    bus = (card_bytes[0] / config.sustained_read_bandwidth
           + card_bytes[1] / config.sustained_write_bandwidth)  # fmt: skip
    compute = _compute_seconds(ops, analysis, extents, config)
    # Two slots per buffer: tile i + 2's loads wait for tile i's compute to free one,
    # so two tiles take at least the LPDDR5 latency, a tile's loads and its compute.
    chain = config.lpddr_latency_s + channel[0] + compute
    steady = max(bus, per_core * max(channel[0], channel[1], compute, chain / 2))
    edges = channel[0] + channel[1] + 2 * config.lpddr_latency_s
    return BoxTile(analysis, extents, used, per_core, steady + edges)


def _compute_seconds(
    ops: Sequence[Operation],
    analysis: row_model.RowAnalysis,
    extents: tuple[int, ...],
    config: SpyreConfig,
) -> float:
    """A tile's PE and SFP work on one corelet (its ops one after another)."""
    cycles = 0
    for op in ops:
        facts = op_facts.facts_of(op.name)
        if facts is None or not op.results:
            continue
        n = max(math.prod(analysis.tile_shape(v, extents))
                for v in (*op.operands, *op.results))  # fmt: skip
        if facts.unit == "pe":
            cycles += cost_model.pe_elementwise_cycles(n, config)
        elif facts.unit == "sfp":
            cycles += cost_model.sfp_cycles(op.name, n, config)
    return cycles / config.clock_hz
