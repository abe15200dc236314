"""The matmul kernel's prologue hook: an RMSNorm on the A rows (marked by
spyre-fuse-norm-prologue) computed inside the kernel.

Per M tile the rows of the norm's input x have their squares summed (each chunk's f32
mean, zero-padded past the row's end, then the sum of the means times cs / K, cs the
chunk's columns: the mean square of the whole row), and each row gets its factor
rsqrt(mean square + eps). Each A tile is x's tile times the weight's K slice (loaded
beside it), and since a row factor commutes with the matmul, the f32 accumulator of
each output tile is multiplied by its rows' factors before the cast. The chunks are
(tile_matmul.py) the A tiles of an A_RESIDENT fill loop, which scales each into the
resident block once per M tile (`chunk`, `resident`); the A tiles of a K loop that
loads each once (one N tile per core, `chunk`); or else tiles of a K loop of their own
over x before the N loop (`stats`).
(L1 rounds x times the factor to f16 before the weight; here x times the weight is: the
two differ by f16 rounding.) The normalised activation is never written.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from spyre_ir import cost_model, matmul_plan
from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow, spyre
from spyre_ir.lowering.dataflow_to_units import CORELET
from spyre_ir.passes.fuse_norm_prologue import match_rms_norm
from spyre_ir.passes.tile_kernel import BodyBuilder


def stats_columns(tk: int) -> int:
    """Columns of x the statistics' loop reads at a time (`matmul_plan.STATS_COLUMNS`;
    the loop runs once per M tile)."""
    return min(tk, matmul_plan.STATS_COLUMNS)


def prologue_bytes(rows: int, tk: int, blocks: int) -> int:
    """LX the prologue's tiles take beside the matmul's: per row block an f16 tile of
    the A tile's shape (x times the weight), an f16 and an f32 chunk of the statistics'
    loop and four f32 row statistics; the weight's K slice and three scalars."""
    return blocks * rows * (2 * tk + 6 * stats_columns(tk) + 20) + 2 * tk + 12


def resident_prologue_bytes(rows: int, tk: int, share: int) -> int:
    """LX a prologue over a resident A block takes beside the matmul's tiles (whose A
    tiles are the block of scaled slots): two slots each of the A tile x is loaded into
    before its scaling and of this core's slice of it, an f32 copy of the slice for the
    statistics, four f32 row statistics, two slots of the weight's K slice and three
    scalars (f16 tiles, as `prologue_bytes`)."""
    mine = rows // share
    return 4 * rows * tk + 4 * mine * tk + 4 * mine * tk + 20 * rows + 4 * tk + 12


F64 = Float64Type()


def compute(b: BodyBuilder, kind: str, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue],
            attrs: dict[str, Attribute] | None = None) -> None:  # fmt: skip
    """A prologue tile op, on corelet 0: the ops of one chain pass their tiles along
    one corelet's PE and SFP (spread over both, their waits could form a cycle with
    the matmul's)."""
    op = dataflow.ComputeOp(kind, inputs, outputs, attrs, False, ())
    op.attributes[CORELET] = IntegerAttr(0, i64)
    b.emit(op)


class Prologue:
    """The tiles and ops of one kernel's norm prologue (see the module docstring).

    Each buffer has one writing unit (convert-dataflow-to-units): the load/store unit
    loads `raw`; the vector unit (SFP) writes `wide` (the f32 tile, squared in place),
    `part` and `factor`; the PE's elementwise ops write `total`, `mean_sq` and `scaled`
    (x times the weight)."""

    def __init__(self, chain: Sequence[Operation], b: BodyBuilder, memory: dict[SSAValue, SSAValue],
                 rows: int, tk: int, blocks: int, k: int, share: int = 1,
                 chunk: int | None = None, resident: bool = False) -> None:  # fmt: skip
        norm = match_rms_norm(chain[-1].results[0])
        x = norm.x if norm is not None else None
        if x is not None and isinstance(x.owner, spyre.RestickifyOp) and x.owner in chain:
            x = x.owner.input  # its loads change the layout
        if norm is None or not isinstance(norm.ops[0], spyre.CastOp) or x not in memory or \
                (norm.weight is not None and norm.weight not in memory):  # fmt: skip
            raise located_error(chain[-1], "spyre-tile: a matmul prologue must be an RMSNorm of a "
                                           "group input (spyre-fuse-norm-prologue's chain)")  # fmt: skip
        self.norm, self.tk, self.k = norm, tk, k
        self.cs = stats_columns(tk) if chunk is None else chunk
        # The `share` cores of an N group read the same rows: each computes the factors
        # of 1 / share of them, and the ring all-gathers them.
        self.share_n = share if share > 1 and rows % share == 0 else 1
        mine = rows // self.share_n
        self.x_mem = memory[x]
        self.w_mem = memory[norm.weight] if norm.weight is not None else None
        f32, out = Float32Type(), spyre.element_of(norm.result)

        def tiles(shape: list[int], element: Attribute) -> list[SSAValue]:
            return [b.alloc(shape, element) for _ in range(blocks)]

        # Resident (`chunk`): the statistics read the A tiles the fill loads, no tile
        # of their own.
        self.raw = tiles([mine, self.cs], spyre.element_of(x)) if chunk is None else []
        self.wide = tiles([mine, self.cs], f32)
        self.scaled = tiles([rows, tk], out) if norm.weight is not None and not resident else []
        self.part, self.total = tiles([mine, 1], f32), tiles([mine, 1], f32)
        self.mean_sq, self.factor = tiles([mine, 1], f32), tiles([rows, 1], f32)
        self.own = tiles([mine, 1], f32) if self.share_n > 1 else self.factor
        self.w_tile = b.alloc([tk], spyre.element_of(norm.weight)) if norm.weight else None
        self.two, self.share, self.eps = (b.alloc([], f32) for _ in range(3))

    def stats(self, lb: BodyBuilder, tops: Sequence[SSAValue], cn: SSAValue, stride: int) -> None:
        """Each row block's rsqrt(mean square + eps), for the rows from `tops[j]`, in a
        loop of its own over x; `cn` is the core's place in its N group, whose cores
        are `stride` apart."""
        mine = self.raw[0].type.get_shape()[0]
        if self.share_n > 1:
            tops = [lb.add(top, lb.mul(cn, mine)) for top in tops]
        self.begin(lb)
        kk, kb = lb.loop(cost_model.ceil_div(self.k, self.cs))
        k0 = kb.mul(kk, self.cs)
        for top, raw in zip(tops, self.raw):
            kb.emit(dataflow.LoadOp(self.x_mem, [top, k0], raw, pad=0.0))
        self.accumulate(kb, self.raw)
        self.end(lb, stride)

    def begin(self, lb: BodyBuilder) -> None:
        """The statistics' constants and zeroed sums, before the loop over K."""
        eps = self.norm.eps.owner.value.value.data
        for tile, value in ((self.two, 2.0), (self.share, self.cs / self.k), (self.eps, eps)):
            compute(lb, "spyre.full", [], [tile], {"value": FloatAttr(value, F64)})
        for total in self.total:
            compute(lb, "spyre.full", [], [total], {"value": FloatAttr(0.0, F64)})

    def accumulate(self, kb: BodyBuilder, chunks: Sequence[SSAValue]) -> None:
        """One K step: each row block's chunk of x (this core's rows, `cs` columns,
        zero past the row's end) added to its sums."""
        mean = {"dims": DenseArrayBase.from_list(i64, [-1]), "keepdim": UnitAttr()}
        for raw, wide, part, total in zip(chunks, self.wide, self.part, self.total):
            compute(kb, "spyre.cast", [raw], [wide])
            compute(kb, "spyre.pow", [wide, self.two], [wide])
            # A chunk's mean, zero-padded past the row's end: its sum / cs.
            compute(kb, "spyre.mean", [wide], [part], mean)
            compute(kb, "spyre.add", [total, part], [total])

    def end(self, lb: BodyBuilder, stride: int) -> None:
        """After the loop over K: the row factors, all-gathered over the N group."""
        for total, mean_sq, own in zip(self.total, self.mean_sq, self.own):
            compute(lb, "spyre.mul", [total, self.share], [mean_sq])
            compute(lb, "spyre.add", [mean_sq, self.eps], [mean_sq])
            compute(lb, "spyre.rsqrt", [mean_sq], [own])
        if self.share_n > 1:
            for own, factor in zip(self.own, self.factor):
                lb.emit(dataflow.RingAllgatherOp(own, factor, self.share_n, stride))

    def load_weight(self, kb: BodyBuilder, k0: SSAValue) -> None:
        if self.w_mem is not None and self.w_tile is not None:
            kb.emit(dataflow.LoadOp(self.w_mem, [k0], self.w_tile, pad=0.0))

    def scale(self, kb: BodyBuilder, j: int, a_tile: SSAValue) -> SSAValue:
        """Row block j's A tile: x's rows (loaded in `a_tile`) times the weight."""
        if self.w_tile is None:
            return a_tile
        compute(kb, "spyre.mul", [self.w_tile, a_tile], [self.scaled[j]])
        return self.scaled[j]

    def scale_into(self, kb: BodyBuilder, a_tile: SSAValue, dest: SSAValue) -> None:
        """x's rows (loaded in `a_tile`) times the weight, into `dest` (a slot of the
        resident A block: scaled once per M tile, not once per N tile)."""
        assert self.w_tile is not None
        compute(kb, "spyre.mul", [self.w_tile, a_tile], [dest])

    def scale_rows(self, fb: BodyBuilder, j: int, acc: SSAValue) -> None:
        """Row block j's f32 accumulator times each row's rsqrt(mean square + eps): the
        row factor commutes with the matmul, so it is applied once per output tile."""
        fb.compute_named("spyre.mul", [acc, self.factor[j]], [acc])
