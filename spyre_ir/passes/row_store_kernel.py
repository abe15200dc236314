"""spyre-row-store-kernels: each in-place `spyre.scatter` (a KV cache write that
spyre-lower-scatter left between the kernels) becomes a kernel of its own that stores
only the new rows into the cache's buffer, at runtime positions.

For `spyre.scatter %dest[%indices], %source dim = d {in_place}` with n positions, the
kernel `@store_rows_<k>` (on min(n, cores) cores: a decode step's one row on one, a
prefill's rows dealt round the cores) takes (dest, indices, source) and gives one result
tied to dest (`tied = [0]`: the result is dest's buffer, written in place), and does

    for j in the core's rows:
        load source[.., j, ..]                 (the j-th row: a box of extent 1 along d)
        p = dataflow.position indices[j]       (a runtime scalar, patched at launch)
        store it into dest[.., p, ..]          (base + p * stride along d)

so the LS unit reads the n rows and writes them once, and dest is neither read nor
written whole: the simulator times it as any program (its LPDDR5 bytes are the rows',
twice). The positions are never loaded: `dataflow.position` is the value the host
writes into the program's scalar table with the addresses; it is checked there against
dest's size along d (a negative one counts from the end unless the scatter is
`no_wrap`, index_copy's rule). The ops after the kernel read its result, which is
dest's buffer with the rows in place.

It runs after spyre-tile (which leaves the in-place scatters alone) and before the
double-buffer and scratchpad passes, which treat its kernels as any other.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from spyre_ir.dialects import dataflow, spyre
from spyre_ir.hardware import DEFAULT_CONFIG, card_of
from spyre_ir.passes.tile_kernel import BodyBuilder, hoist_definitions


def row_store_kernel(op: spyre.ScatterOp, name: str, lx_bytes: int,
                     cores: int) -> dataflow.KernelOp:  # fmt: skip
    """The kernel storing `op`'s source rows into its dest in place (module docstring),
    on at most `cores` cores."""
    dest, indices, source = op.dest, op.indices, op.source
    shape, axis = spyre.shape_of(dest), op.axis
    count = spyre.shape_of(indices)[0]
    cores = max(1, min(count, cores))
    in_types = [dest.type, indices.type, source.type]
    block = dataflow.new_kernel_block(in_types, [dest.type])
    kernel = dataflow.KernelOp(
        name, cores, [dest, indices, source], [dest.type], Region(block),
        {"lx_capacity": IntegerAttr(lx_bytes, i64), "tied": dataflow.dense([0])},
    )  # fmt: skip
    kernel.location = op.location
    block.add_op(dataflow.EndOp())
    top = Builder(InsertPoint.before(block.last_op))
    b = BodyBuilder(top, top)
    core, _, index_memory, source_memory, out_memory = block.args
    row = tuple(1 if d == axis else n for d, n in enumerate(shape))
    buffer = b.alloc(row, spyre.element_of(source))
    step, lb = b.loop(-(-count // cores))
    # core c stores rows c, c + cores, ..; a core past the last row wraps round to an
    # early one and stores the same row again (same values), so every core runs the
    # same trip count
    j = lb.rem(lb.add(lb.mul(step, cores), core), count)
    buffer.name_hint, step.name_hint, j.name_hint = "row", "step", "j"
    zeros = [lb.const(0)] * len(shape)
    lb.emit(dataflow.LoadOp(source_memory, [j if d == axis else z for d, z in enumerate(zeros)],
                            buffer))  # fmt: skip
    wrap = op.no_wrap is None
    position = lb.emit(dataflow.PositionOp(index_memory, j, axis, shape[axis], wrap)).results[0]
    position.name_hint = "position"
    lb.emit(dataflow.StoreOp(buffer, out_memory,
                             [position if d == axis else z for d, z in enumerate(zeros)]))  # fmt: skip
    hoist_definitions(kernel)  # the constants made inside the loop, before it
    return kernel


@dataclass(frozen=True)
class SpyreRowStoreKernels(ModulePass):
    """Each in-place spyre.scatter as a row-store kernel tied to its dest (module
    docstring)."""

    name = "spyre-row-store-kernels"

    cores: int = DEFAULT_CONFIG.cores
    """Most cores a kernel runs on (at most the module's card's)."""
    lx_bytes: int = 0
    """LX per core the kernels are built for (0: the module's card's)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        card = card_of(op)
        cores = min(self.cores, card.cores)
        lx_bytes = self.lx_bytes or card.lx_bytes
        scatters = [o for o in op.walk() if isinstance(o, spyre.ScatterOp) and o.in_place]
        for k, scatter in enumerate(scatters):
            kernel = row_store_kernel(scatter, f"store_rows_{k}", lx_bytes, cores)
            Rewriter.replace_op(scatter, kernel)
