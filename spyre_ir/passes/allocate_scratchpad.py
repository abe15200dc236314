"""`spyre-allocate-scratchpad`: byte offsets for the LX buffers of every kernel.

For each `dataflow.kernel`, every `dataflow.alloc_lx` without an `offset` gets one, by
liveness, and the kernel gets `lx_peak_bytes` (the end of the highest buffer):

* Program order is the pre-order walk of the kernel body. A buffer is *live* from its
  first to its last use (uses through `dataflow.slot` views count as uses of the
  buffer; a buffer never used lives at its `alloc_lx` alone). A use inside an `scf.for`
  (or `scf.while` / `scf.parallel`) that does not also contain the `alloc_lx` extends
  the range to the whole loop: the buffer may carry a value from one iteration to the
  next (an accumulator, a prefetched slot), so it is live across all of them. A buffer
  allocated inside a loop body is a fresh buffer per iteration and is not extended by
  that loop. Ranges are closed: an op's inputs and outputs are live together and never
  share bytes.
* Buffers whose ranges do not overlap may share bytes. Buffers are placed greedily by
  decreasing size (ties: earlier first use, then program order); each goes into the
  smallest gap, at a stick-aligned offset, between the buffers already placed that are
  live at the same time as it (best fit), or above all of them when no gap fits. This
  is the "greedy by size" arena planner of TFLite; it is not optimal, but the peak is
  never below the largest live set and never above the stick-rounded sum of sizes.
* Offsets are multiples of the stick (`SpyreConfig.stick_bytes`, 128 bytes).
* An `alloc_lx` that already has an offset keeps it; the others are placed around it.

The capacity is the kernel's `lx_capacity` (the default card's `lx_bytes` when it has
none), lowered to the `lx-bytes` option when that is given and smaller (the kernel
verifier holds a kernel to its own `lx_capacity`, so the option cannot raise it). A
kernel whose peak exceeds the capacity fails with a located error naming the kernel,
the bytes it needs and the capacity:

    FILE:LINE:COL: error: kernel @k0 needs 3145728 bytes of LX per core; a core has 2097152

    spyre-opt in.mlir -p spyre-allocate-scratchpad
    spyre-opt in.mlir -p 'spyre-allocate-scratchpad{lx-bytes=1048576}'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from spyre_ir.diagnostics import located_error
from spyre_ir.dialects.dataflow import AllocLxOp, KernelOp, LxType
from spyre_ir.hardware import card_of

LOOP_OPS = (scf.ForOp, scf.WhileOp, scf.ParallelOp)
"""Ops whose body runs more than once: a buffer used inside lives across all of it."""


@dataclass
class Buffer:
    """One `alloc_lx` of a kernel: its bytes, its live range and its offset."""

    alloc: AllocLxOp
    index: int
    """Program-order position of the alloc (the tie-breaker that keeps results stable)."""
    start: int
    end: int
    """The live range: program-order positions of the first and last use, inclusive."""
    size: int
    offset: int | None = None

    def overlaps(self, other: Buffer) -> bool:
        return self.start <= other.end and other.start <= self.end


def align_up(n: int, align: int) -> int:
    return -(-n // align) * align


def _aliases(value: SSAValue) -> Iterable[Operation]:
    """Every op that uses `value` or an LX view of it (`dataflow.slot` results)."""
    seen: set[SSAValue] = set()
    work = [value]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            user = use.operation
            yield user
            work.extend(r for r in user.results if isinstance(r.type, LxType))


def live_buffers(kernel: KernelOp) -> list[Buffer]:
    """The buffers of `kernel` with their live ranges (see the module docstring)."""
    order: dict[Operation, int] = {}
    for op in kernel.body.walk():
        order[op] = len(order)
    span: dict[Operation, tuple[int, int]] = {}
    for op in order:
        if isinstance(op, LOOP_OPS):
            span[op] = (order[op], max(order[o] for o in op.walk()))

    buffers: list[Buffer] = []
    for op in order:
        if not isinstance(op, AllocLxOp):
            continue
        start = end = None
        for user in _aliases(op.buffer):
            lo = hi = order[user]
            ancestor = user.parent_op()
            while ancestor is not None and ancestor is not kernel:
                if ancestor in span and not ancestor.is_ancestor(op):
                    lo, hi = min(lo, span[ancestor][0]), max(hi, span[ancestor][1])
                ancestor = ancestor.parent_op()
            start = lo if start is None else min(start, lo)
            end = hi if end is None else max(end, hi)
        if start is None or end is None:
            start = end = order[op]
        offset = op.offset_value if op.offset is not None else None
        buffers.append(Buffer(op, order[op], start, end, op.buffer.type.nbytes, offset))
    return buffers


def assign_offsets(buffers: Sequence[Buffer], align: int) -> int:
    """Give every buffer without an offset one; returns the peak (highest end).

    Greedy by size with best fit among the gaps left by the simultaneously-live buffers
    already placed (fixed ones first)."""
    placed = [b for b in buffers if b.offset is not None]
    todo = sorted(
        (b for b in buffers if b.offset is None), key=lambda b: (-b.size, b.start, b.index)
    )
    for buffer in todo:
        if buffer.size == 0:
            buffer.offset = 0
            continue
        busy = sorted(
            (p.offset, p.offset + p.size)
            for p in placed
            if p.size and p.offset is not None and p.overlaps(buffer)
        )
        best: tuple[int, int] | None = None  # (gap size, offset)
        cursor = 0
        for lo, hi in busy:
            if lo - cursor >= buffer.size and (best is None or lo - cursor < best[0]):
                best = (lo - cursor, cursor)
            cursor = max(cursor, align_up(hi, align))
        buffer.offset = cursor if best is None else best[1]
        placed.append(buffer)
    return max((b.offset + b.size for b in buffers if b.offset is not None), default=0)


def max_live_bytes(buffers: Sequence[Buffer]) -> int:
    """The largest total size of buffers live at one program point (a lower bound)."""
    points = {b.start for b in buffers}
    return max((sum(b.size for b in buffers if b.start <= p <= b.end) for p in points), default=0)


@dataclass(frozen=True)
class SpyreAllocateScratchpad(ModulePass):
    """Liveness-based, stick-aligned LX offsets for every `dataflow.alloc_lx`."""

    name = "spyre-allocate-scratchpad"

    lx_bytes: int | None = None
    """LX bytes per core; default: each kernel's `lx_capacity` (or the default card's).
    A kernel's own `lx_capacity` still applies when it is smaller."""

    def __post_init__(self) -> None:
        if self.lx_bytes is not None and self.lx_bytes <= 0:
            raise ValueError("spyre-allocate-scratchpad: lx-bytes must be positive")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, KernelOp)]:
            self.allocate(kernel)

    def allocate(self, kernel: KernelOp) -> None:
        capacity = kernel.capacity
        if self.lx_bytes is not None:
            capacity = min(capacity, self.lx_bytes)
        buffers = live_buffers(kernel)
        peak = assign_offsets(buffers, card_of(kernel).stick_bytes)
        if peak > capacity:
            message = (
                f"kernel @{kernel.sym_name.data} needs {peak} bytes of LX per core; "
                f"a core has {capacity}"
            )
            live = max_live_bytes(buffers)
            if live < peak:
                message += f" (its largest set of buffers live at once is {live} bytes)"
            raise located_error(kernel, message)
        for buffer in buffers:
            if buffer.alloc.offset is None:
                assert buffer.offset is not None
                buffer.alloc.offset = IntegerAttr(buffer.offset, i64)
        kernel.lx_peak_bytes = IntegerAttr(peak, i64)
