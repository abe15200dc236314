"""spyre-fuse: group L1 ops into `dataflow.group`s that become one kernel each.

Fusion keeps intermediates in LX: an elementwise chain, a softmax or normalisation
pattern, or a matmul with its epilogue becomes one group, so only group inputs and
results travel through LPDDR5. A matmul also takes in the weight transposes and the
restickifies that feed only it: its tile loads read through them. Ops join the open
group while the group stays tileable by rows (see row_model) with no fewer row dims
than it had, and while one row of every value fits in half the scratchpad (the other
half is for double buffering).

A lone `spyre.concat` or `spyre.restickify` whose single row does not fit (a concat
along its outermost dim, the restickify of a flattening reshape) becomes a "copy"
group instead: pure data movement in boxes of any shape (passes/tile_copy.py), split
over the cores. Its `dataflow.row_dims` is 1 so that spyre-partition-cores offers it
min(cores, outermost dim) cores.

Reshapes that no group can take stay between groups as free views; rank-0 constants
are copied into every group that uses them. A reshape of a value from before a matmul
or rows group (a residual flattened to the matmul's rows) does not end the group: it
moves before the group, whose ops may then read it. A restickify that several matmuls
read as A (one activation flattened for several projections) is read through by each:
a pair shares it, any other matmul reads through a copy of its own.

A second matmul reading the same A with a B of the same shape joins a matmul group
(`pairs_with`; option `fuse-matmul-pairs`): SwiGLU's gate and up projections become one
kernel writing silu(g) * u. A closing matmul group gives back its last epilogue ops
while that lessens the bytes it writes (`trimmed_tail`; option `trim-epilogues`): the
square of a residual sum belongs to the RMSNorm that reads the sum anyway.

Matmul groups reading one norm prologue (the q projection and the k/v pair) merge into
one group of segments that computes it once (passes/fuse_segments.py; option
`fuse-projection-segments`).

A rows group takes a restickify together with the transpose reading it when alone it
could not (`Fuser.try_extend_pair`; option `fuse-relayout-pairs`), and an attention
group reads its mask through the mask's restickify (option `fuse-mask-layout`).

Each kind of matmul epilogue op has a switch (`EpilogueKind`, options `fuse-bias`,
`fuse-residual`, `fuse-scale`, `fuse-activation`, `fuse-cast`; default true): an op of
a kind switched off ends the matmul group and runs in a kernel of its own (or with the
ops after it).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, TensorType, i64
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import DEFAULT_CONFIG, ELEMENT_BYTES, card_of
from spyre_ir.passes import fuse_norm_prologue as norm_prologue
from spyre_ir.passes import row_model
from spyre_ir.passes.fold_layouts import is_view_transpose
from spyre_ir.passes.fuse_heads import head_view_op, layout_view_of
from spyre_ir.passes.tile_copy import is_copy_op

MAX_GROUP_OPS = 128
"""Ops in one group at most. Whether an op joins a group is checked against the whole
group (its row analysis and LX need), so without a bound a chain of n ops would cost
n^2 at compile time; past this many ops, another kernel's extra LPDDR5 round trip is
small next to the group's own work."""


def is_scalar_constant(op: Operation) -> bool:
    return isinstance(op, (spyre.FullOp, spyre.ConstantOp)) and row_model.shape(op.results[0]) == ()


def value_bytes(value: SSAValue, shape: Sequence[int]) -> int:
    n = ELEMENT_BYTES[spyre.element_type_name(spyre.element_of(value))]
    for d in shape:
        n *= d
    return n


class EpilogueKind(enum.Enum):
    """What an elementwise op after a matmul is, for the switches that fuse it."""

    BIAS = "bias"
    """A binary op with a tensor broadcast over the rows (a bias add)."""
    RESIDUAL = "residual"
    """A binary op with another tensor of the result's shape (a residual add)."""
    SCALE = "scale"
    """A mul or div by a scalar constant."""
    ACTIVATION = "activation"
    """A unary op, or a binary op on the epilogue's own values and scalar constants
    (silu decomposed: neg, exp, add 1, div)."""
    CAST = "cast"
    LAYOUT = "layout"
    """A restickify: read in place, never switched off."""


def epilogue_kind(op: Operation, inside: set[SSAValue]) -> EpilogueKind:
    """The kind of epilogue op `op`; `inside` holds the values the group computes."""
    if isinstance(op, spyre.RestickifyOp):
        return EpilogueKind.LAYOUT
    if isinstance(op, spyre.CastOp):
        return EpilogueKind.CAST
    outside = [o for o in op.operands if o not in inside]
    scalars = [o for o in outside if isinstance(o.owner, Operation) and is_scalar_constant(o.owner)]
    tensors = [o for o in outside if o not in scalars]
    if not isinstance(op, spyre.BinaryOp):
        return EpilogueKind.ACTIVATION
    if tensors:
        same = all(row_model.shape(t) == row_model.shape(op.results[0]) for t in tensors)
        return EpilogueKind.RESIDUAL if same else EpilogueKind.BIAS
    if scalars and isinstance(op, (spyre.MulOp, spyre.DivOp)):
        return EpilogueKind.SCALE
    return EpilogueKind.ACTIVATION


@dataclass
class RowState:
    """A rows candidate's row analysis and the bytes one row of its values needs."""

    analysis: row_model.RowAnalysis
    values: set[SSAValue]
    need: int


@dataclass
class Candidate:
    """A group being formed: its ops in program order and its kind."""

    kind: str  # "rows", "matmul", "gather", "copy" or "attention"
    ops: list[Operation] = field(default_factory=list)
    row_dims: int = 0
    rows: RowState | None = None  # a rows candidate's, to extend it op by op
    hoisted: list[Operation] = field(default_factory=list)
    """Reshapes of values from before the group, met while it was open: they move
    before the group."""
    deferred: list[Operation] = field(default_factory=list)
    """Layout views of the group's values met while it was open (see
    `layout_view_of`): they stay after the group, which stays open."""

    _seen: tuple[int, set[Operation], list[SSAValue]] = field(
        default=(0, set(), []), init=False, repr=False, compare=False
    )
    """(len(ops), their set, their outputs) when last asked: ops are only ever appended,
    so a question costs the ops added since, not the whole group (issue 18: compile time)."""

    def _known(self) -> tuple[set[Operation], list[SSAValue]]:
        count, members, outputs = self._seen
        if count != len(self.ops):
            added = self.ops[count:] if count and count < len(self.ops) else self.ops
            if added is self.ops:  # first question, or ops were not only appended
                members, outputs = set(), []
            members = members | set(added)
            outputs = _escaping([*outputs, *(r for op in added for r in op.results)], members)
            self._seen = (len(self.ops), members, outputs)
        return members, outputs

    def outputs(self, extra: Operation | None = None) -> list[SSAValue]:
        members, outputs = self._known()
        if extra is None:
            return list(outputs)
        return _escaping([*outputs, *extra.results], members | {extra})


def _escaping(values: list[SSAValue], members: set[Operation]) -> list[SSAValue]:
    """The values used by some op outside `members`."""
    return [r for r in values if any(use.operation not in members for use in r.uses)]


def swaps_last_two(op: Operation) -> bool:
    """A transpose that only exchanges the last two dims (a weight read as [K, N])."""
    if not isinstance(op, spyre.TransposeOp):
        return False
    perm = list(spyre.ints(op.perm))
    rank = len(perm)
    return rank >= 2 and perm == [*range(rank - 2), rank - 1, rank - 2]


def operand_transposes(op: Operation) -> list[Operation]:
    """Transposes feeding only this matmul: the matmul reads their input through a
    transposed load instead of a transposing kernel (every nn.Linear's weight)."""
    if not isinstance(op, spyre.MatmulOp):
        return []
    found = []
    for operand in (op.lhs, op.rhs):
        owner = operand.owner
        if swaps_last_two(owner) and operand.has_one_use() and owner not in found:
            found.append(owner)
    return found


def operand_restickifies(op: Operation) -> list[Operation]:
    """Restickifies feeding only this matmul: its tile loads read their input's bytes
    instead of a kernel that only moves them (a layout change happens between LPDDR5
    and LX, as in row kernels) - the [b, s, d] -> [b * s, d] before every nn.Linear."""
    if isinstance(op, spyre.AttentionOp) and op.mask is not None:
        # The mask's restickify (a [s, t] mask viewed as [1, 1, s, t]): the attention
        # kernel's mask loads read its input.
        owner = op.mask.owner
        fold = isinstance(owner, spyre.RestickifyOp) and op.mask.has_one_use()
        return [owner] if fold else []
    if not isinstance(op, spyre.MatmulOp):
        return []
    found = []
    for operand in (op.lhs, op.rhs):
        owner = operand.owner
        if isinstance(owner, spyre.RestickifyOp) and owner not in found and (
                operand.has_one_use() or only_matmul_lhs(operand)):  # fmt: skip
            found.append(owner)
    return found


def only_matmul_lhs(value: SSAValue) -> bool:
    """Every use of `value` is the A operand of a matmul (one activation flattened for
    several projections): the first matmul's group reads through its restickify, and
    a matmul paired with it shares the tile loads; another reads the group's result."""
    return all(isinstance(u.operation, spyre.MatmulOp) and u.index == 0 for u in value.uses)


def folded_operands(op: Operation, mask_layout: bool = True) -> list[Operation]:
    """The ops a matmul or attention group reads through instead of running them (an
    attention's mask restickify only with `mask_layout`)."""
    if isinstance(op, spyre.AttentionOp) and not mask_layout:
        return []
    return [*operand_transposes(op), *operand_restickifies(op)]


def _anchor(candidate: Candidate) -> Operation | None:
    if candidate.kind in ("rows", "copy", "attention"):
        return None
    return next(op for op in candidate.ops if isinstance(op, (spyre.MatmulOp, spyre.GatherOp)))


@dataclass
class Fuser:
    lx_bytes: int
    epilogues: frozenset[EpilogueKind] = frozenset(EpilogueKind)
    """The kinds of matmul epilogue ops that may join a matmul group."""
    pairs: bool = True
    """A second matmul sharing the anchor's A may join its group (see `pairs_with`)."""
    trim: bool = True
    """A closing matmul group gives back epilogue ops that only add bytes it writes
    (see `trimmed_tail`)."""

    lookahead: bool = True
    """A rows group may take a restickify with its reader (see `try_extend_pair`)."""
    mask_layout: bool = True
    """An attention group reads its mask through the mask's restickify (see
    `operand_restickifies`)."""
    prologues: bool = True
    """A matmul group takes in the norm chain marked as its A's prologue (see
    passes/fuse_norm_prologue.py)."""
    rotary: bool = True
    """A matmul group takes a rotary embedding on its result's head view (see
    `head_view_op`, passes/fuse_rotary.py)."""
    placed: set[Operation] = field(default_factory=set)
    """Folded operand ops already in a group (a restickify several matmuls read)."""
    segments: bool = True
    """A matmul group whose prologue is a copy runs as a segment of the group holding
    the original (see passes/fuse_segments.py)."""
    prologue_copies: dict[Operation, tuple[Operation, list[Operation]]] = field(
        default_factory=dict)  # fmt: skip
    """A copied prologue chain's last op -> (the original's last op, the copy)."""

    def unplaced_folds(self, op: Operation, paired: bool = False) -> list[Operation]:
        """`op`'s folded operands for its group, taken now: a restickify another group
        took already is shared with it when `op` joins that group as a pair, else `op`
        reads through a copy of its own (the restickify stays a load's layout change)."""
        new = []
        for f in folded_operands(op, self.mask_layout):
            if f in self.placed:
                if paired:
                    continue
                (f,) = self.copy_for_later_readers([f], op)
            new.append(f)
        self.placed.update(new)
        return new

    def unplaced_prologue(self, op: Operation) -> list[Operation]:
        """The marked norm chain computing matmul `op`'s A, for its group: a copy of its
        own when another group took the chain already."""
        if not self.prologues or not isinstance(op, spyre.MatmulOp):
            return []
        chain = norm_prologue.prologue_chain(op.lhs)
        if chain and chain[-1] in self.placed:
            original = chain[-1]
            chain = self.copy_for_later_readers(chain, op)
            self.prologue_copies[chain[-1]] = (original, chain)
        self.placed.update(chain)
        return chain

    @staticmethod
    def copy_for_later_readers(chain: list[Operation], op: Operation) -> list[Operation]:
        """A copy of `chain` (a folded operand, or a prologue's ops in program order)
        before `op`, whose last result `op` and every later reader of it read (a matmul
        after `op` may pair with it and share the copy)."""
        remap: dict[SSAValue, SSAValue] = {}
        copies = []
        for original in chain:
            copy = original.clone()
            copy.operands = [remap.get(o, o) for o in original.operands]
            remap.update(zip(original.results, copy.results))
            copies.append(copy)
        Rewriter.insert_op(copies, InsertPoint.before(op))
        block = op.parent
        assert block is not None
        at = block.get_operation_index(op)
        result = chain[-1].results[0]
        for use in list(result.uses):
            user = use.operation
            if user.parent is block and block.get_operation_index(user) >= at:
                user.operands[use.index] = remap[result]
        return copies

    def row_state(self, ops: Sequence[Operation], outputs: Sequence[SSAValue],
                  p: int) -> RowState | None:  # fmt: skip
        """The ops' row state with `p` row dims when one row of every value fits in at
        most half the scratchpad, else None."""
        try:
            analysis = row_model.analyse(ops, outputs, p)
        except row_model.NotRowLocal:
            return None
        values = {v for op in ops for v in (*op.operands, *op.results)}
        need = sum(value_bytes(v, analysis.tile_shape(v, [1] * p)) for v in values)
        return RowState(analysis, values, need) if need <= self.lx_bytes // 2 else None

    def fits(self, ops: Sequence[Operation], outputs: Sequence[SSAValue], p: int) -> bool:
        return self.row_state(ops, outputs, p) is not None

    def extended(self, candidate: Candidate, op: Operation,
                 outputs: Sequence[SSAValue]) -> RowState | None:  # fmt: skip
        """The candidate's row state with `op` appended, derived from the last one
        (row_model.extend) in time independent of the group's size; None when that
        does not decide it (the whole group is analysed again)."""
        state = candidate.rows
        assert state is not None
        try:
            analysis = row_model.extend(state.analysis, set(candidate.ops), op, outputs)
        except row_model.NotRowLocal:
            return None
        new = [v for v in (*op.operands, *op.results) if v not in state.values]
        unit = [1] * analysis.row_dims
        need = state.need + sum(value_bytes(v, analysis.tile_shape(v, unit)) for v in set(new))
        if need > self.lx_bytes // 2:
            return None
        return RowState(analysis, state.values | set(new), need)

    def try_extend(self, candidate: Candidate, op: Operation) -> bool:
        if candidate.kind in ("copy", "attention") or len(candidate.ops) >= MAX_GROUP_OPS:
            return False
        if any(o.owner in candidate.deferred for o in op.operands):
            return False  # the view stands after the group
        ops = [*candidate.ops, op]
        outputs = candidate.outputs(op)
        if not outputs:
            return False
        if candidate.kind == "rows":
            highest = len(row_model.shape(outputs[0])) - 1
            # At the highest row dims, the only ones the loop below would try, the
            # state follows from the last one unless that cannot decide.
            state = None
            if candidate.rows is not None and candidate.row_dims == highest:
                state = self.extended(candidate, op, outputs)
            for p in range(highest, candidate.row_dims - 1, -1):
                state = state or self.row_state(ops, outputs, p)
                if state is not None:
                    candidate.row_dims, candidate.rows = p, state
                    candidate.ops.append(op)
                    return True
            return False
        anchor = _anchor(candidate)
        if isinstance(op, spyre.MatmulOp) and self.pairs and pairs_with(candidate, anchor, op):
            candidate.ops.extend([*self.unplaced_folds(op, paired=True), op])
            return True
        # matmul / gather: only an elementwise epilogue on the anchor's rows, or (a
        # rotary embedding) ops on the head view of a matmul's result.
        heads = self.rotary and isinstance(anchor, spyre.MatmulOp) and \
            head_view_op(candidate, anchor, op)  # fmt: skip
        if not heads and not isinstance(op, row_model.ELEMENTWISE):
            return False
        if isinstance(anchor, spyre.MatmulOp) and not heads:
            inside = {r for o in candidate.ops for r in o.results}
            if epilogue_kind(op, inside) not in self.epilogues:
                return False
            # The epilogue runs on the accumulator's tiles: an op whose result is wider
            # than the matmul's (an [m, 1] product broadcast against an [m, n] tensor,
            # Qwen2-MoE's shared-expert gate) has no tile of its own there.
            if any(row_model.shape(r) != row_model.shape(anchor.results[0]) for r in op.results):
                return False
        matmuls = [o for o in ops if isinstance(o, spyre.MatmulOp)]
        folded = [f for mm in matmuls for f in folded_operands(mm)]
        epilogue = [o for o in ops if o not in matmuls and o not in folded
                    and not norm_prologue.is_prologue(o)]  # fmt: skip
        p = candidate.row_dims
        if all(
            row_model.shape(o)[:p] == row_model.shape(anchor.results[0])[:p] for o in outputs
        ) and self.fits(epilogue, outputs, p):
            candidate.ops.append(op)
            return True
        return False

    def start(self, op: Operation) -> Candidate:
        rank = len(row_model.shape(op.results[0]))
        if isinstance(op, spyre.MatmulOp):
            ops = [*self.unplaced_prologue(op), *self.unplaced_folds(op), op]
            return Candidate("matmul", ops, max(rank - 1, 0))
        if isinstance(op, spyre.GatherOp):
            return Candidate("gather", [op], len(row_model.shape(op.indices)))
        if isinstance(op, spyre.AttentionOp):  # one kernel of its own (tile_attention)
            return Candidate("attention", [*self.unplaced_folds(op), op], 0)
        candidate = Candidate("rows", [op], 0)
        for p in range(rank - 1, -1, -1):
            state = self.row_state([op], candidate.outputs(), p)
            if state is not None:
                candidate.row_dims, candidate.rows = p, state
                return candidate
        if is_copy_op(op):
            # No row fits in LX: move the bytes in boxes of any shape (tile_copy).
            return Candidate("copy", [op], 1)
        return candidate

    def plan_groups(self, ops: Sequence[Operation]) -> list[Candidate]:
        groups: list[Candidate] = []
        current: Candidate | None = None
        folded = {t for op in ops for t in folded_operands(op, self.mask_layout)}
        if self.prologues:  # taken in by the matmul reading them (`unplaced_prologue`)
            folded |= norm_prologue.mark_layout_changes(list(ops))
            block = ops[0].parent if ops else None
            ops = list(block.ops) if block is not None else ops
        taken: set[Operation] = set()
        for i, op in enumerate(ops):
            if isinstance(op, func.ReturnOp) or is_scalar_constant(op) or op in folded:
                continue
            if op in taken:
                continue
            if current is not None and self.lookahead and i + 1 < len(ops) and \
                    self.try_extend_pair(current, op, ops[i + 1]):  # fmt: skip
                taken.add(ops[i + 1])
                continue
            if not op.results or not all(isinstance(r.type, TensorType) for r in op.results):
                from spyre_ir.diagnostics import located_error

                raise located_error(op, f"spyre-fuse: '{op.name}' does not compute tensors: "
                                        "only L1 tensor ops lower to dataflow")  # fmt: skip
            current = self.place(groups, current, op)
        if current is not None:
            self.place_tail(groups, current)
        if self.segments:
            from spyre_ir.passes.fuse_segments import merge_segments

            groups = merge_segments(groups, self.prologue_copies)
        return groups

    def try_extend_pair(self, candidate: Candidate, op: Operation, following: Operation) -> bool:
        """A rows group takes a restickify together with the one op reading it, when
        alone it could not: the restickified value (k before its head split transpose)
        has other rows than the group's outputs, the transpose's result has them."""
        if candidate.kind != "rows" or not isinstance(op, spyre.RestickifyOp):
            return False
        if not isinstance(following, spyre.TransposeOp) or \
                [u.operation for u in op.result.uses] != [following]:  # fmt: skip
            return False
        if self.fits_with(candidate, op):
            return False  # it joins alone (place)
        saved = (candidate.rows, candidate.row_dims)
        candidate.ops.append(op)
        candidate.rows = None
        if self.try_extend(candidate, following):
            return True
        candidate.ops.pop()
        candidate.rows, candidate.row_dims = saved
        return False

    def fits_with(self, candidate: Candidate, op: Operation) -> bool:
        """Whether `op` alone could join rows group `candidate` (asked, not done)."""
        ops = [*candidate.ops, op]
        outputs = candidate.outputs(op)
        return bool(outputs) and self.fits(ops, outputs, candidate.row_dims)

    def place(self, groups: list[Candidate], current: Candidate | None,
              op: Operation) -> Candidate | None:  # fmt: skip
        """Put `op` in the open group `current` or a new one; returns the open group."""
        moves = not is_view_transpose(op)  # spyre-fold-layouts made it a view
        if moves and current is not None and self.try_extend(current, op):
            return current
        if isinstance(op, spyre.ScatterOp) and op.in_place is not None:
            return None  # a row store between groups (spyre-row-store-kernels)
        if isinstance(op, spyre.ReshapeOp) or not moves:
            if current is not None and reads_before(current, op.input):
                current.hoisted.append(op)
                return current
            if current is not None and layout_view_of(current, op):
                current.deferred.append(op)
                return current
            return None  # a free view between groups
        if current is not None and self.place_tail(groups, current):
            current = None
            # The ops trimmed off the group formed new ones, which `op` may join.
            current = groups[-1]
            if self.try_extend(current, op):
                return current
        current = self.start(op)
        groups.append(current)
        return current

    def place_tail(self, groups: list[Candidate], closing: Candidate) -> bool:
        """Trim `closing` (see `trimmed_tail`) and place the trimmed ops in new groups
        after it; whether any were."""
        tail = trimmed_tail(closing) if self.trim else []
        current: Candidate | None = None
        for op in tail:
            current = self.place(groups, current, op)
        return bool(tail)


def output_bytes(candidate: Candidate) -> int:
    return sum(value_bytes(v, row_model.shape(v)) for v in candidate.outputs())


def trimmed_tail(candidate: Candidate) -> list[Operation]:
    """Take the last epilogue ops off a closing matmul group while that lessens the
    bytes it writes: an op whose result only leaves the group, while its input leaves
    too (the f32 square of an RMSNorm's input after a residual add), is better computed
    by the group reading that input, which then need not read the square."""
    if candidate.kind != "matmul":
        return []
    anchor = _anchor(candidate)
    kept = {o for mm in candidate.ops if isinstance(mm, spyre.MatmulOp)
            for o in (mm, *folded_operands(mm))}  # fmt: skip
    tail: list[Operation] = []
    while candidate.ops and candidate.ops[-1] not in kept and anchor is not None:
        outputs = candidate.outputs()
        before = output_bytes(candidate)
        last = candidate.ops.pop()
        # Only an op whose inputs from the group leave it anyway: the group taking it
        # reads them instead (a cast of the result alone stays: its kernel would read
        # the result and write the cast, more than the cast written here).
        members = set(candidate.ops)
        inputs_leave = all(o in outputs for o in last.operands
                           if isinstance(o.owner, Operation) and o.owner in members)  # fmt: skip
        if not inputs_leave or output_bytes(candidate) >= before:
            candidate.ops.append(last)
            break
        tail.insert(0, last)
    return tail


def pairs_with(candidate: Candidate, anchor: Operation | None, op: spyre.MatmulOp) -> bool:
    """`op` may join matmul group `candidate` as its second matmul: it reads the
    anchor's A with a B of the same shape (SwiGLU's gate and up projections, or K and V),
    both 2-D, and the group has no second matmul yet. Its B tiles then stream beside the
    anchor's (one corelet each) while the A tile is loaded once, and an elementwise
    combine of the two results (silu(g) * u) runs in the epilogue."""
    if not isinstance(anchor, spyre.MatmulOp) or op.lhs is not anchor.lhs:
        return False
    if any("spyre.split" in mm.attributes for mm in (anchor, op)):
        return False  # a split forced on one matmul (spyre-partition-cores) is its own
    if sum(isinstance(o, spyre.MatmulOp) for o in candidate.ops) != 1:
        return False
    shapes = [spyre.shape_of(v) for v in (anchor.lhs, anchor.rhs, op.rhs, op.result)]
    if any(len(s) != 2 for s in shapes) or shapes[1] != shapes[2]:
        return False
    same_type = spyre.element_of(op.result) == spyre.element_of(anchor.result)
    # Either both B operands are read through a weight transpose, or neither is.
    folded = [swaps_last_two(mm.rhs.owner) for mm in (anchor, op)]
    if not same_type or folded[0] != folded[1]:
        return False
    # The group stands where the anchor stood: op's B must exist there already.
    b = op.rhs.owner.input if folded[1] else op.rhs
    return reads_before(candidate, b)


def reads_before(candidate: Candidate, value: SSAValue) -> bool:
    """`value` exists before group `candidate` starts (a function argument, or a result
    of an op before a matmul group's anchor or a rows group's first op): a reshape of it
    may move before the group instead of closing it (the k projection's head split
    reshape, met while the v projection's transpose is open)."""
    anchor = _anchor(candidate) if candidate.kind == "matmul" else \
        candidate.ops[0] if candidate.kind == "rows" and candidate.ops else None  # fmt: skip
    if anchor is None:
        return False
    if isinstance(value, BlockArgument):
        return value.block is anchor.parent
    owner = value.owner
    block = anchor.parent
    return (
        owner.parent is block
        and block is not None
        and block.get_operation_index(owner) < block.get_operation_index(anchor)
    )


def build_group(candidate: Candidate, index: int) -> None:
    """Move the candidate's ops into a new dataflow.group in place of their uses."""
    members = set(candidate.ops)
    # Afresh, not candidate.outputs(): a later group may have taken a copy of a shared
    # restickify since (Fuser.unplaced_folds), so its result no longer leaves this one.
    outputs = _escaping([r for op in candidate.ops for r in op.results], members)
    inputs: list[SSAValue] = []
    constants: list[Operation] = []
    for op in candidate.ops:
        for operand in op.operands:
            owner = operand.owner
            if owner in members:
                continue
            if isinstance(owner, Operation) and is_scalar_constant(owner):
                if owner not in constants:
                    constants.append(owner)
            elif operand not in inputs:
                inputs.append(operand)

    block = Block(arg_types=[v.type for v in inputs])
    # The group stands where its anchor stood: a folded weight transpose may come long
    # before the matmul, ahead of the matmul's other operand.
    first = _anchor(candidate) or candidate.ops[0]
    for view in candidate.hoisted:
        view.detach()
        Rewriter.insert_op(view, InsertPoint.before(first))
    group = dataflow.GroupOp(
        f"{candidate.kind}_{index}",
        inputs,
        [v.type for v in outputs],
        Region(block),
    )
    group.attributes["dataflow.kind"] = StringAttr(candidate.kind)
    group.attributes["dataflow.row_dims"] = IntegerAttr(candidate.row_dims, i64)
    group.location = first.location
    Rewriter.insert_op(group, InsertPoint.before(first))

    remap: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
    for const in constants:
        clone = const.clone()
        block.add_op(clone)
        remap[const.results[0]] = clone.results[0]
    for op in candidate.ops:
        op.detach()
        for i, operand in enumerate(op.operands):
            if operand in remap:
                op.operands[i] = remap[operand]
        block.add_op(op)
    for out, result in zip(outputs, group.outputs):
        for use in list(out.uses):
            if use.operation.parent_op() is not group:
                use.operation.operands[use.index] = result
    block.add_op(dataflow.YieldOp(*outputs))
    for const in constants:
        if not const.results[0].uses:
            const.detach()
            const.erase()


@dataclass(frozen=True)
class SpyreFuse(ModulePass):
    """Group L1 ops into dataflow.group regions, one per future kernel."""

    name = "spyre-fuse"

    lx_bytes: int = DEFAULT_CONFIG.lx_bytes
    fuse_bias: bool = True
    """false: a bias add after a matmul runs in a kernel of its own."""
    fuse_residual: bool = True
    """false: so does a residual add (any binary op with a tensor of the result's shape)."""
    fuse_scale: bool = True
    """false: so does a mul or div by a scalar."""
    fuse_activation: bool = True
    """false: so does an activation (unary ops, silu's decomposition)."""
    fuse_cast: bool = True
    """false: so does a cast."""
    fuse_matmul_pairs: bool = True
    """false: a second matmul sharing A (SwiGLU's up projection) runs in a kernel of its
    own instead of beside the first in one kernel."""
    trim_epilogues: bool = True
    """false: a matmul group keeps epilogue ops that only add bytes it writes (see
    `trimmed_tail`)."""
    fuse_relayout_pairs: bool = True
    """false: a rows group takes a restickify only if it fits alone, not with the
    transpose reading it (`Fuser.try_extend_pair`)."""
    fuse_norm_prologue: bool = True
    """false: the norm chains spyre-fuse-norm-prologue marked run as rows kernels of
    their own instead of in the matmul kernels reading them."""
    fuse_mask_layout: bool = True
    """false: the restickify of an attention's mask (a [s, t] mask viewed as [1, 1, s,
    t]) runs as a kernel of its own instead of in the attention kernel's mask loads."""
    fuse_rotary: bool = True
    """false: ops on a matmul result's head view (a rotary embedding, see
    passes/fuse_rotary.py) run in a kernel of their own."""
    fuse_projection_segments: bool = True
    """false: matmul groups reading one norm prologue (the q projection and the k/v
    pair) each compute it from x, in kernels of their own (passes/fuse_segments.py)."""

    def epilogues(self) -> frozenset[EpilogueKind]:
        switches = {
            EpilogueKind.BIAS: self.fuse_bias,
            EpilogueKind.RESIDUAL: self.fuse_residual,
            EpilogueKind.SCALE: self.fuse_scale,
            EpilogueKind.ACTIVATION: self.fuse_activation,
            EpilogueKind.CAST: self.fuse_cast,
            EpilogueKind.LAYOUT: True,
        }
        return frozenset(kind for kind, on in switches.items() if on)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuser = Fuser(min(self.lx_bytes, card_of(op).lx_bytes), self.epilogues(),
                      self.fuse_matmul_pairs, self.trim_epilogues,
                      self.fuse_relayout_pairs, self.fuse_mask_layout,
                      self.fuse_norm_prologue, self.fuse_rotary,
                      segments=self.fuse_projection_segments)  # fmt: skip
        index = 0
        for fn in op.walk():
            if not isinstance(fn, func.FuncOp) or not fn.body.blocks:
                continue
            for candidate in fuser.plan_groups(list(fn.body.block.ops)):
                build_group(candidate, index)
                index += 1
