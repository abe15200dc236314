"""Topk over rows too long for LX, in two rounds (used by `spyre-decompose-long-rows`).

A `spyre.sort` / `spyre.argsort` is one tile op over its whole row. When the row (input
and result, `row_bytes`) needs more than the budget (half of LX) and only the first `k`
are kept, the row is cut into `m` chunks of `c` elements (`c` divides the row, so the chunks are a
view of it): the first `k` of each chunk are the only candidates, so round two sorts the
`m * k` candidates, whose row fits. Candidates stay in index
order (chunk by chunk, each chunk's sorted stably), so equal values still come out in
index order. `spyre.argsort` carries each candidate's position in the full row (its
position in the chunk plus the chunk's start) and picks the winners' positions with a
one-hot sum over the candidates. A full sort of such a row has no smaller second round,
nor has a row without a fitting divisor: they are left as they are (spyre-tile then
says that the row does not fit).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import I1, I64_T, element_of, element_type_name
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.hardware import ELEMENT_BYTES

STICK = 64  # f16 elements of a 128-byte stick


def row_bytes(op: spyre.SortingOp) -> int:
    """Bytes of one row of the op's input and result along its dim."""
    inp = ELEMENT_BYTES[element_type_name(element_of(op.input))]
    out = ELEMENT_BYTES[element_type_name(element_of(op.result))]
    return shape(op.input)[op.axis] * inp + op.kept * out


def _t(dims: tuple[int, ...] | list[int], element: Attribute) -> TensorType:
    return TensorType(element, list(dims))


@dataclass
class SplitLongTopk(RewritePattern):
    """Rewrite a topk (sort / argsort with k) whose row needs more than `budget` bytes."""

    budget: int

    def chunk(self, op: spyre.SortingOp) -> int | None:
        """The chunk length: a divisor of the row (the row reshaped into chunks is a
        view), a whole number of sticks if one fits, small enough that a chunk's sort
        fits the budget with room to spare, and leaving fewer than half as many
        candidates as the row has elements; None when there is none."""
        n, k = shape(op.input)[op.axis], op.kept
        per = ELEMENT_BYTES[element_type_name(element_of(op.input))] + ELEMENT_BYTES["i64"]
        most = min(self.budget // (4 * per), n // 2)
        fits = [c for c in range(most, k, -1) if n % c == 0 and (n // c) * k < n // 2]
        sticks = [c for c in fits if c % STICK == 0]
        return (sticks or fits or [None])[0]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, spyre.SortingOp) or op.k is None:
            return
        src = shape(op.input)
        if op.axis != len(src) - 1 or row_bytes(op) <= self.budget:
            return
        c = self.chunk(op)
        if c is None:
            return
        new: list[Operation] = []

        def emit(o: Operation) -> SSAValue:
            new.append(o)
            return o.results[0]

        built = _Rounds(op, c, emit).result()
        rewriter.replace(op, new, [built])


class _Rounds:
    """The ops of the two rounds, emitted through `emit`."""

    def __init__(self, op: spyre.SortingOp, c: int, emit) -> None:
        self.op, self.c, self.emit = op, c, emit
        self.lead = shape(op.input)[:-1]
        self.n = shape(op.input)[-1]
        self.k = op.kept
        self.down = op.descending is not None
        self.elt = element_of(op.input)

    def _sorted(self, x: SSAValue, k: int, indices: bool) -> SSAValue:
        cls = spyre.ArgsortOp if indices else spyre.SortOp
        out = _t((*shape(x)[:-1], k), I64_T if indices else element_of(x))
        return self.emit(cls(x, -1, k, self.down, out))

    def _pieces(self) -> list[tuple[SSAValue, int, int]]:
        """(the row as [..., chunks, size], size, first position): one view of chunks."""
        m, c = self.n // self.c, self.c
        return [(self.emit(spyre.ReshapeOp(self.op.input, _t((*self.lead, m, c), self.elt))), c, 0)]

    def _flat(self, x: SSAValue) -> SSAValue:
        s = shape(x)
        return self.emit(spyre.ReshapeOp(x, _t((*s[:-2], s[-2] * s[-1]), element_of(x))))

    def _concat(self, parts: list[SSAValue]) -> SSAValue:
        if len(parts) == 1:
            return parts[0]
        width = sum(shape(p)[-1] for p in parts)
        return self.emit(spyre.ConcatOp(parts, len(self.lead), _t((*self.lead, width),
                                                                   element_of(parts[0]))))  # fmt: skip

    def result(self) -> SSAValue:
        values, positions = [], []
        for piece, size, first in self._pieces():
            k1 = min(self.k, size)
            values.append(self._flat(self._sorted(piece, k1, False)))
            if self.op.INDEX_RESULT:
                local = self._sorted(piece, k1, True)
                chunks = shape(piece)[-2]
                starts = self.emit(spyre.IotaOp(0, first, size, _t((chunks, 1), I64_T)))
                positions.append(self._flat(self.emit(
                    spyre.AddOp(local, starts, _t(shape(local), I64_T)))))  # fmt: skip
        candidates = self._concat(values)
        if not self.op.INDEX_RESULT:
            return self._sorted(candidates, self.k, False)
        return self._pick(self._sorted(candidates, self.k, True), self._concat(positions))

    def _pick(self, winners: SSAValue, positions: SSAValue) -> SSAValue:
        """positions[..., winners[..., j]] as a one-hot sum over the candidates."""
        count = shape(positions)[-1]
        column = self.emit(spyre.ReshapeOp(winners, _t((*self.lead, self.k, 1), I64_T)))
        ids = self.emit(spyre.IotaOp(0, 0, 1, _t((count,), I64_T)))
        grid = (*self.lead, self.k, count)
        hot = self.emit(spyre.EqOp(column, ids, _t(grid, I1)))
        row = self.emit(spyre.ReshapeOp(positions, _t((*self.lead, 1, count), I64_T)))
        zero = self.emit(spyre.FullOp(0, _t((), I64_T)))
        picked = self.emit(spyre.SelectOp(hot, row, zero, _t(grid, I64_T)))
        rank = len(grid)
        return self.emit(spyre.SumOp(picked, [rank - 1], False, _t((*self.lead, self.k), I64_T)))
