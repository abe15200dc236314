"""`convert-ktir-to-dataflow`: KTIR kernels (`ktdp`, from Triton-Spyre) to L2 kernels.

A KTIR kernel `func.func @k(%ptrs: index..., %scalars...) attributes {grid = [...]}`
becomes `func.func @k(inputs...) -> (outputs...)` holding one `dataflow.kernel @k
cores(T)` over the T tiles of the grid (SPMD over the tile id, the kernel's core id):

* the pointers it loads from are the inputs, those it stores to the results (in
  argument order); each is a tensor of its memory view's shape with the default stick
  layout. A pointer whose access tiles cover part of a stick along the last dim (e.g.
  one element of a per-row statistic) gets a trailing unit dim: one element per stick,
  padded, so tiles of different cores never share a stick;
* scalar arguments take their values from the pass option `scalars` ("K=2048,eps=1e-5";
  ktir_kernel.py):
  the kernel is specialised, loop bounds become constants;
* `ktdp.get_compute_tile_id` is the core id (delinearised over the grid, first dim
  fastest, as ktir-cpu numbers tiles); index arithmetic is kept as `arith` on index;
* memory views become the kernel's DDR arguments; a rectangular access tile is a box
  (offsets from its base coordinate, extent from its set, a transpose from its order);
  `ktdp.load` / `ktdp.store` become `dataflow.load` / `dataflow.store` of LX buffers;
  an indirect tile whose first subscript reads an index view is a `dataflow.gather`;
* tile math (arith, math, linalg named ops, linalg.reduce, linalg.matmul, broadcasts,
  tensor.splat / extract) becomes `dataflow.compute` on PE or SFP (ktir_compute.py);
  an `addf` of a loop's accumulator and a matmul becomes an accumulating matmul;
* `scf.for` stays a loop (tensor iter_args live in LX buffers, updated in place),
  `scf.if` stays an `scf.if`;
* `ktdp.inter_tile_reduce` over groups of consecutive tiles is a
  `dataflow.ring_allreduce`; `ktdp.inter_tile_consume` from one producer per group (a
  broadcast) is an all-reduce where the other tiles contribute the identity.

What it does not support is a located error naming the construct.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    FileLineColLoc,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from spyre_ir.diagnostics import located_error
from spyre_ir.dialects import dataflow as D
from spyre_ir.dialects import ktdp
from spyre_ir.dialects import ktdp_intertile as kt
from spyre_ir.hardware import unit_for
from spyre_ir.interp.ktir import KtirError
from spyre_ir.interp.ktir_ops import dtype_of
from spyre_ir.lowering import ktir_lx, ktir_memory, ktir_positions
from spyre_ir.lowering.ktir_address import (
    ADDRESS_UNITS,
    bind_absolute_addresses,
    launch_grid,
    parse_grid,
)
from spyre_ir.lowering.ktir_compute import BINARY, COMPARE, UNARY, TileMath, shape_of
from spyre_ir.lowering.ktir_kernel import (
    _INDEX_OPS,
    ktir_kernels,
    parse_scalars,
    scalar_value,
    tensor_type,
)
from spyre_ir.lowering.ktir_tile_offset import rebase_tile_offsets
from spyre_ir.lowering.ktir_values import (
    Buf,
    Index,
    Lazy,
    LoweringError,
    Scalar,
    check_in_place,
    kernel_pointers,
)


class KernelLowering:
    """Lowers the body of one KTIR kernel into a dataflow.kernel's block."""

    def __init__(
        self,
        fn: func.FuncOp,
        block: Block,
        memories: dict[int, tuple[SSAValue | None, SSAValue | None]],
        pointers,
        scalars,
    ):
        self.fn = fn
        self.grid = ktdp.grid_of(fn, LoweringError)
        self.block = block
        self.top: list[Operation] = []
        self.env: dict[SSAValue, object] = {}
        self.dest: dict[Operation, SSAValue] = {}
        self.temps: dict[SSAValue, str] = {}
        self.body_shape: tuple[int, ...] | None = None
        self.body_operands: dict[SSAValue, SSAValue] = {}
        self.current: Operation | None = None
        self.lx_contents: dict[object, Buf] = {}  # LX views stored to -> their buffers
        self.math = TileMath(self)
        self.store_guard: Index | None = None
        """The condition (per core) of the stores being lowered, in a guarded scf.if."""
        self.core = block.args[0]
        self.tiles = math.prod(self.grid)
        from spyre_ir.lowering.ktir_ring import strided_order

        self.strided = strided_order(fn, self.tiles)
        """(B, S): tile g + k*S runs on core g*B + k (strided inter-tile groups)."""
        self.tile_of_core: np.ndarray | None = None
        if self.strided is not None:
            b, stride = self.strided
            cores = np.arange(self.tiles)
            self.tile_of_core = cores // b + cores % b * stride
        for k, arg in enumerate(fn.body.block.args):
            if k in pointers:
                self.env[arg] = ("pointer", pointers[k], memories.get(k), 0)
            else:
                value = scalar_value(fn, k, scalars)
                if isinstance(value, Index):
                    value = self.index_constant(value.const)  # type: ignore[arg-type]
                self.env[arg] = value

    # ------------------------------------------------------------ building

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        self.locate(op)
        return op

    def emit_at_top(self, op: Operation) -> Operation:
        self.top.append(op)
        self.locate(op)
        return op

    def locate(self, op: Operation) -> None:
        """An emitted op takes the place of the KTIR op it lowers (diagnostics and L3
        sync ops made for it point there)."""
        if self.current is not None and isinstance(self.current.location, FileLineColLoc):
            op.location = self.current.location

    def alloc(self, shape, element: Attribute, at_top: bool = True) -> SSAValue:
        return self.emit_at_top(D.AllocLxOp(D.LxType(tuple(shape), element))).results[0]

    def index_constant(self, value: int) -> Index:
        op = self.emit_at_top(arith.ConstantOp(IntegerAttr(value, IndexType())))
        return Index(op.results[0], value, np.full(self.tiles, value, np.int64))

    def index(self, v: SSAValue, op: Operation) -> Index:
        x = self.env.get(v)
        if not isinstance(x, Index):
            raise LoweringError(f"'{op.name}': expected an index value", op)
        if x.value is None:
            x = self.index_constant(x.const)  # type: ignore[arg-type]
        return x

    def get(self, v: SSAValue) -> object:
        return self.env[v]

    def finish(self) -> None:
        first = self.block.first_op
        for op in self.top:
            if first is None:
                self.block.add_op(op)
            else:
                self.block.insert_op_before(op, first)
        self.block.add_op(D.EndOp())

    # ------------------------------------------------------------ walking

    def lower_block(self, block: Block) -> list[object]:
        """Lower the ops of `block`; the terminator's operands are returned."""
        for op in block.ops:
            if op is block.last_op and (
                isinstance(op, scf.YieldOp | func.ReturnOp | kt.YieldPartialOp | kt.YieldReducedOp)
                or op.name == "linalg.yield"
            ):
                return [self.get(v) for v in op.operands]
            try:
                self.lower_op(op)
            except LoweringError:
                raise
            except KtirError as error:  # an index expression the shared evaluator refuses
                raise LoweringError(str(error), error.op or op) from None
            except (
                ValueError,
                KeyError,
                AssertionError,
                TypeError,
                AttributeError,
                IndexError,
            ) as error:
                raise LoweringError(f"'{op.name}': cannot lower this op ({error})", op) from None
        return []

    def lower_op(self, op: Operation) -> None:
        outer, self.current = self.current, op
        try:
            self.lower_one(op)
        finally:
            self.current = outer

    def lower_one(self, op: Operation) -> None:
        name = op.name
        if isinstance(op, arith.ConstantOp):
            result = self.constant(op)
        elif isinstance(op, ktdp.GetComputeTileIdOp):
            self.tile_ids(op)
            return
        elif name == "linalg.index":
            result = ktir_positions.linalg_index(self, op)
        elif ktir_positions.is_position_op(self, op):
            result = ktir_positions.position_op(self, op)
        elif (
            op.results
            and isinstance(op.results[0].type, IndexType | IntegerType)
            and name in _INDEX_OPS | {"arith.cmpi": 0, "arith.select": 0}
            and not isinstance(op.results[0].type, TensorType)
            and all(not isinstance(o.type, TensorType) for o in op.operands)
        ):
            result = self.index_op(op)
        elif ktir_lx.handles(self, op):
            result = ktir_lx.lower(self, op)
        elif name in ktir_memory.HANDLED:
            result = ktir_memory.lower(self, op)
        elif name in BINARY or name in UNARY:
            kind = BINARY.get(name) or UNARY[name]
            args = [self.get(v) for v in getattr(op, "inputs", op.operands)]
            result = self.math.elementwise(
                op, kind, args, self.dest.get(op) or self.reusable(op, kind)
            )
            if isinstance(result, Buf):
                self.temps[result.value] = unit_for(kind)
        elif name in ("arith.cmpf", "arith.cmpi"):
            predicate = (
                arith.CMPF_COMPARISON_OPERATIONS
                if name == "arith.cmpf"
                else arith.CMPI_COMPARISON_OPERATIONS
            )
            kind = COMPARE[predicate[op.predicate.value.data]]  # type: ignore[attr-defined]
            result = self.math.elementwise(op, kind, [self.get(v) for v in op.operands])
        elif name == "arith.select":
            result = self.math.elementwise(
                op, "spyre.select", [self.get(v) for v in op.operands], self.dest.get(op)
            )
        elif name in ("arith.sitofp", "arith.uitofp"):
            result = self.int_to_float(op)
        elif isinstance(op, arith.BitcastOp):
            result = self.bitcast_constant(op)
        elif isinstance(op, scf.ForOp):
            self.lower_for(op)
            return
        elif isinstance(op, scf.IfOp):
            self.lower_if(op)
            return
        elif isinstance(op, kt.InterTileProduceOp | kt.InterTileReduceOp | kt.InterTileConsumeOp):
            from spyre_ir.lowering import ktir_ring

            ktir_ring.lower(self, op)
            return
        else:
            raise LoweringError(f"'{name}' is not supported by the KTIR -> dataflow lowering", op)
        if op.results:
            self.env[op.results[0]] = result

    def reusable(self, op: Operation, kind: str) -> SSAValue | None:
        """An operand's buffer the op may overwrite: a temporary that an earlier tile op
        on the same unit wrote and this op reads last (never a load's buffer, which
        double-buffering owns, nor an accumulator; and not across units, whose queues
        would then wait on each other). Keeps the LX a chain of elementwise ops needs
        small."""
        for v in op.operands:
            x = self.env.get(v)
            # A generic body's argument stands for the generic's operand: that value's
            # other readers (outside the body) count too.
            outer = self.body_operands.get(v)
            if (
                isinstance(x, Buf)
                and self.temps.get(x.value) == unit_for(kind)
                and self.reads_last(op, v)
                and (outer is None or len(list(outer.uses)) == 1)
            ):
                return x.value
        return None

    def reads_last(self, op: Operation, v: SSAValue) -> bool:
        """`op` is the last reader of `v`: its other readers all come before it in its
        block (a softmax's exp is summed, then divided by the sum in place)."""
        block = op.parent_block()
        if not isinstance(v.owner, Operation) or v.owner.parent_block() is not block:
            return len(list(v.uses)) == 1  # made outside this block (a loop's): one reader
        for use in v.uses:
            if use.operation is op:
                continue
            reader = self.ancestor_in(use.operation, block) if block is not None else None
            if reader is None or reader is op or not reader.is_before_in_block(op):
                return False
        return True

    def constant(self, op: arith.ConstantOp) -> object:
        value, t = op.value, op.result.type
        if isinstance(t, IndexType | IntegerType) and isinstance(value, IntegerAttr):
            return self.index_constant(value.value.data)
        if isinstance(value, FloatAttr):
            return Scalar(value.value.data, t)
        if isinstance(value, DenseIntOrFPElementsAttr) and isinstance(t, TensorType):
            values = value.get_values()
            if len(set(values)) != 1:
                raise LoweringError("a non-splat dense tensor constant is not supported", op)
            return Lazy(Scalar(float(values[0]), t.element_type), shape_of(t), t.element_type)
        raise LoweringError(f"constant {value} of type {t} is not supported", op)

    def bitcast_constant(self, op: arith.BitcastOp) -> Scalar:
        """An integer constant's bits read as a float (how kernels write -inf)."""
        x = self.env.get(op.input)
        t = op.result.type
        if not (isinstance(x, Index) and x.const is not None and isinstance(t, AnyFloat)):
            raise LoweringError(
                f"'{op.name}' other than of an integer constant to a float is not supported", op
            )
        bits = np.array(x.const).astype(dtype_of(op.input.type))
        return Scalar(float(bits.view(dtype_of(t))), t)

    def tile_ids(self, op: ktdp.GetComputeTileIdOp) -> None:
        dims = op.grid_dims(list(self.grid))
        if dims is None:
            raise LoweringError(
                f"'{op.name}' returns {len(op.results)} ids but the grid is {list(self.grid)}", op
            )
        ids = np.arange(self.tiles, dtype=np.int64)
        rest: SSAValue = self.core
        if self.tile_of_core is not None:  # this core's tile: core // B + core % B * S
            ids = self.tile_of_core.astype(np.int64)
            b, stride = (self.index_constant(n).value for n in self.strided)  # type: ignore[union-attr]
            group = self.emit(arith.DivUIOp(self.core, b)).results[0]
            k = self.emit(arith.RemUIOp(self.core, b)).results[0]
            k_s = self.emit(arith.MuliOp(k, stride)).results[0]
            rest = self.emit(arith.AddiOp(group, k_s)).results[0]
        if len(self.grid) == 1:
            self.env[op.results[0]] = Index(rest, None, ids, False)
            return
        for k, n in enumerate(self.grid[: max(dims) + 1]):
            size = self.index_constant(n).value
            if k in dims:
                rem = self.emit(arith.RemUIOp(rest, size)).results[0]
                self.env[op.results[dims.index(k)]] = Index(rem, None, ids % n, False)
            ids = ids // n
            if k < max(dims):
                rest = self.emit(arith.DivUIOp(rest, size)).results[0]

    def index_op(self, op: Operation) -> Index | tuple:
        args = [self.env.get(v) for v in op.operands]
        pointer = [a for a in args if isinstance(a, tuple) and a[0] == "pointer"]
        if op.name == "arith.addi" and len(pointer) == 1:
            step = next(a for a in args if a is not pointer[0])
            if not (isinstance(step, Index) and step.const is not None):
                raise LoweringError(
                    f"'{op.name}': a pointer plus an offset other than a constant is not supported",
                    op,
                )
            kind, p, memories, offset = pointer[0]
            return (kind, p, memories, offset + step.const)
        if not all(isinstance(a, Index) for a in args):
            raise LoweringError(
                f"'{op.name}' on runtime integers other than index is not supported", op
            )
        consts = [a.const for a in args]  # type: ignore[union-attr]
        if op.name in _INDEX_OPS and all(c is not None for c in consts):
            return self.index_constant(int(_INDEX_OPS[op.name](*consts)))
        uniform = all(a.uniform for a in args)  # type: ignore[union-attr]
        per_core = self.per_core(op, args)  # type: ignore[arg-type]
        if op.name == "arith.cmpi" and all(c is not None for c in consts):
            const = int(bool(np.asarray(per_core)[0]))
            return Index(self.index_constant(const).value, const, per_core, True)
        operands = [self.index(v, op).value for v in op.operands]
        if op.name in ("arith.index_cast", "arith.index_castui") and isinstance(
            op.results[0].type, IndexType
        ):
            return Index(operands[0], None, per_core, uniform)
        if not isinstance(op.results[0].type, IndexType) and op.name != "arith.cmpi":
            raise LoweringError(
                f"'{op.name}' producing {op.results[0].type} at run time is not supported", op
            )
        clone = op.clone()
        for i, v in enumerate(operands):
            clone.operands[i] = v  # type: ignore[index]
        self.emit(clone)
        return Index(clone.results[0], None, per_core, uniform)

    def per_core(self, op: Operation, args: list[Index]):
        """The op's value on every core, when its operands' are known."""
        if any(a.per_core is None for a in args):
            return None
        values = [np.asarray(a.per_core) for a in args]
        if op.name == "arith.cmpi":
            from spyre_ir.interp.ktir_ops import _CMP

            return _CMP[arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]](*values)  # type: ignore[attr-defined]
        if op.name == "arith.select":
            return np.where(*values)
        fn = _INDEX_OPS.get(op.name)
        if fn is None:
            return None
        return np.array([fn(*(int(v[c]) for v in values)) for c in range(self.tiles)], np.int64)

    def int_to_float(self, op: Operation) -> Scalar:
        x = self.env.get(op.operands[0])
        if isinstance(x, Index) and x.const is not None:
            return Scalar(float(x.const), op.results[0].type)
        raise LoweringError(f"'{op.name}' of a run-time integer is not supported", op)

    # ------------------------------------------------------------ control flow

    def loop_bounds(self, op: scf.ForOp) -> tuple[Index, Index, Index, Index | None]:
        """(lb, ub, step, per-core start) of the loop to emit. A loop whose bounds
        differ across cores runs from 0 with the same trip count on every core (the
        most any core needs): iv = start + i * step. Extra iterations of cores with
        fewer must reach no other core's range (their loads read padding past the
        tensor's end and their stores are dropped there)."""
        lb, ub, step = (self.index(v, op) for v in (op.lb, op.ub, op.step))
        if lb.uniform and ub.uniform and step.uniform:
            return lb, ub, step, None
        if any(x.per_core is None for x in (lb, ub, step)) or not step.uniform:
            raise LoweringError(
                "an scf.for whose bounds differ across tiles and depend on an enclosing "
                "loop is not supported (the card runs the same loops on every core)",
                op,
            )
        lo, hi, st = (np.asarray(x.per_core) for x in (lb, ub, step))
        trips = np.maximum(-((lo - hi) // st), 0)
        n = int(trips.max(initial=0))
        owned_hi = lo + trips * st
        for c in np.nonzero(trips < n)[0]:
            extra_lo, extra_hi = owned_hi[c], lo[c] + n * st[c]
            clash = (trips > 0) & (lo < extra_hi) & (owned_hi > extra_lo)
            if clash.any():
                raise LoweringError(
                    "an scf.for whose trip count differs across tiles and whose extra "
                    f"iterations on tile {c} would reach tile {int(np.argmax(clash))}'s "
                    "range is not supported",
                    op,
                )
        zero, one = self.index_constant(0), self.index_constant(1)
        return zero, self.index_constant(n), one, lb

    def lower_for(self, op: scf.ForOp) -> None:
        lb, ub, step, start = self.loop_bounds(op)
        body = op.body.block
        carried: list[Buf] = []
        for k, (init, arg) in enumerate(zip(op.iter_args, body.args[1:])):
            t = arg.type
            if not isinstance(t, TensorType):
                raise LoweringError(f"an scf.for carrying {t} (iter_arg {k}) is not supported", op)
            buf = self.alloc(t.get_shape(), t.element_type)
            self.math.materialize(
                self.get(init), tuple(t.get_shape()), t.element_type, op, into=buf
            )
            carried.append(Buf(buf, tuple(t.get_shape())))
            self.env[arg] = carried[-1]
        self.plan_in_place(body, carried)
        loop_body = Block(arg_types=[IndexType()])
        outer, self.block = self.block, loop_body
        if start is None:
            self.env[body.args[0]] = Index(loop_body.args[0], uniform=lb.uniform and ub.uniform)
        else:
            step_value = self.index(op.step, op).value
            scaled = self.emit(arith.MuliOp(loop_body.args[0], step_value)).results[0]
            iv = self.emit(arith.AddiOp(start.value, scaled)).results[0]
            self.env[body.args[0]] = Index(iv, uniform=False)
        results = self.lower_block(body)
        for buf, value, t in zip(carried, results, body.args[1:]):
            if not (isinstance(value, Buf) and value.value is buf.value):
                self.math.materialize(value, buf.lx_shape, t.type.element_type, op, into=buf.value)  # type: ignore[attr-defined]
        loop_body.add_op(scf.YieldOp())
        self.block = outer
        self.emit(scf.ForOp(lb.value, ub.value, step.value, [], Region(loop_body)))
        for r, buf in zip(op.results, carried):
            self.env[r] = buf

    def plan_in_place(self, body: Block, carried: list[Buf]) -> None:
        """Write a yielded value straight into its accumulator when the op making it is
        the last reader of the accumulator in the body. (An `acc + matmul` stays an
        f16 add after the matmul, as the kernel rounds it: an accumulating matmul would
        round differently, and the add is hidden behind the loads, 14.54 vs 14.56 us
        on tests/ktir/matmul.mlir.)"""
        last = body.last_op
        assert last is not None
        order = {o: i for i, o in enumerate(body.ops)}
        for k, (v, buf) in enumerate(zip(last.operands, carried)):
            owner = v.owner
            arg = body.args[1 + k]
            if not isinstance(owner, Operation) or owner.parent_block() is not body:
                continue
            readers = [u.operation for u in arg.uses]
            tops = [self.ancestor_in(r, body) for r in readers]
            if any(t is None or order[t] > order[owner] for t in tops):
                continue
            self.dest[owner] = buf.value

    @staticmethod
    def ancestor_in(op: Operation, block: Block) -> Operation | None:
        while op is not None and op.parent_block() is not block:
            op = op.parent_op()  # type: ignore[assignment]
        return op

    def lower_if(self, op: scf.IfOp) -> None:
        cond = self.index(op.cond, op)
        if not cond.uniform and self.guarded_stores(op, cond):
            return
        if not cond.uniform:
            raise LoweringError(
                "an scf.if whose condition differs across tiles is not supported (the card "
                "runs the same program on every core; a tile's share of the work is chosen "
                "by its addresses), unless it yields nothing and its branch only stores",
                op,
            )
        if cond.const is not None:  # known once the scalars are: lower the branch taken
            region = op.true_region if cond.const else op.false_region
            values = self.lower_block(region.block) if region.blocks else []
            for r, value in zip(op.results, values):
                self.env[r] = value
            return
        outs: list[Buf] = []
        for r in op.results:
            t = r.type
            if not isinstance(t, TensorType):
                raise LoweringError(f"an scf.if yielding {t} is not supported", op)
            outs.append(Buf(self.alloc(t.get_shape(), t.element_type), tuple(t.get_shape())))
        regions = []
        outer = self.block
        for region in (op.true_region, op.false_region):
            block = Block()
            self.block = block
            if region.blocks:
                values = self.lower_block(region.block)
                for buf, value, r in zip(outs, values, op.results):
                    self.math.materialize(
                        value, buf.lx_shape, r.type.element_type, op, into=buf.value
                    )  # type: ignore[attr-defined]
            block.add_op(scf.YieldOp())
            regions.append(Region(block))
        self.block = outer
        self.emit(scf.IfOp(cond.value, [], regions[0], regions[1]))
        for r, buf in zip(op.results, outs):
            self.env[r] = buf

    def guarded_stores(self, op: scf.IfOp, cond: Index) -> bool:
        """An `scf.if` whose condition differs across tiles, yielding nothing, with no
        else branch and no loads or inter-tile ops in its branch (a `pid == 0` writer):
        lowered unconditionally, each store addressed past its tensor's end on the cores
        where the condition is false, where the card drops it. False when it is not one."""
        if op.results or (op.false_region.blocks and len(op.false_region.block.ops) > 1):
            return False
        body = list(op.true_region.block.walk())
        if any(
            isinstance(o, ktdp.LoadOp | scf.ForOp | scf.IfOp | kt.InterTileProduceOp) for o in body
        ):
            return False
        if self.store_guard is not None:
            return False
        self.store_guard = cond
        try:
            self.lower_block(op.true_region.block)
        finally:
            self.store_guard = None
        return True


def lower_kernel(fn: func.FuncOp, scalars: dict[str, float]) -> func.FuncOp:
    """The L2 function of KTIR kernel `fn` (not inserted)."""
    from spyre_ir.lowering.ktir_distributed import split_distributed_copies
    from spyre_ir.lowering.ktir_specialize import specialize_views

    specialize_views(fn, scalars)
    split_distributed_copies(fn, scalars)  # copies out of views over several pointers
    pointers = kernel_pointers(fn)
    check_in_place(fn, pointers)
    inputs = [p for p in pointers.values() if p.read]
    outputs = [p for p in pointers.values() if p.written]
    in_types = [tensor_type(p) for p in inputs]
    out_types = [tensor_type(p) for p in outputs]
    block = D.new_kernel_block(in_types, out_types)
    loads = dict(zip([p.index for p in inputs], block.args[1 : 1 + len(inputs)]))
    stores = dict(zip([p.index for p in outputs], block.args[1 + len(inputs) :]))
    memories = {k: (loads.get(k), stores.get(k)) for k in pointers}
    lowering = KernelLowering(fn, block, memories, pointers, scalars)
    lowering.lower_block(fn.body.block)
    lowering.finish()
    name = fn.sym_name.data
    body = Block(arg_types=in_types)
    for arg, p in zip(body.args, inputs):
        arg.name_hint = p.name
    kernel = D.KernelOp(
        name,
        math.prod(ktdp.grid_of(fn, LoweringError)),
        list(body.args),
        out_types,
        Region(block),
        {"plan": _plan(fn)},
    )
    body.add_ops([kernel, func.ReturnOp(*kernel.results)])
    lowered = func.FuncOp(name, (in_types, out_types), Region(body))
    # Located at the KTIR kernel: a later failure (an LX overflow, an L3 deadlock) of
    # an op without a place of its own is reported there, not at the module.
    kernel.location = lowered.location = fn.location
    return lowered


def _plan(fn: func.FuncOp) -> Attribute:
    return D.KtirPlanAttr.from_values(
        grid=ktdp.grid_of(fn, LoweringError) if "grid" in fn.attributes else None
    )


@dataclass(frozen=True)
class ConvertKtirToDataflow(ModulePass):
    """Each KTIR kernel of the module becomes an L2 function holding one
    dataflow.kernel; `scalars` gives its scalar arguments, "NAME=VALUE,..."."""

    name = "convert-ktir-to-dataflow"
    scalars: str = ""
    grid: str = ""
    """The launch grid ("32", "2,16") of kernels written without a `grid` attribute."""
    address_unit: str = "element"
    """What absolute addresses count: element (of the view's type), byte or stick
    (128 bytes); docs/ktir.md, "Views at absolute addresses"."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            values = parse_scalars(self.scalars)
        except ValueError as error:
            raise ValueError(f"convert-ktir-to-dataflow: scalars: {error}") from None
        from spyre_ir.lowering.ktir_calls import inline_calls

        try:
            inline_calls(op)
        except LoweringError as error:
            raise located_error(error.op or op, str(error)) from None
        try:
            grid = parse_grid(self.grid) if self.grid else None
        except ValueError as error:
            raise ValueError(f"convert-ktir-to-dataflow: {error}") from None
        if self.address_unit not in ADDRESS_UNITS:
            raise ValueError(
                f"convert-ktir-to-dataflow: address-unit '{self.address_unit}' is not one of "
                f"{', '.join(ADDRESS_UNITS)}"
            )
        for fn in ktir_kernels(op):
            try:
                if grid is not None:
                    launch_grid(fn, grid)
                bind_absolute_addresses(fn, self.address_unit)  # see ktir_address
                rebase_tile_offsets(
                    fn, ktdp.grid_of(fn, LoweringError)
                )  # pointer + per-tile offset: see there
                lowered = lower_kernel(fn, values)
            except (LoweringError, KtirError) as error:
                raise located_error(error.op or fn, str(error)) from None
            fn.parent_block().insert_op_before(lowered, fn)  # type: ignore[union-attr]
            fn.detach()
            fn.erase()
