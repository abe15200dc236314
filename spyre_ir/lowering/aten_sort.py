"""Sorting ops: `aten.sort`, `aten.topk` (and `argsort`, which Inductor's decompositions
turn into `sort`), `aten.histc` and `aten.div.Tensor_mode` (floor and trunc division).

`sort` and `topk` are `spyre.sort` (the values) and `spyre.argsort` (their i64 positions),
the same order twice: the first `k` along the dim, descending for `largest`, NaN the
largest value, equal values in index order (a stable sort; torch.sort(stable=True) gives
the same indices, torch's unstable sort and topk may order ties otherwise). Each is one
row op over the sorted dim, whole in LX (docs/passes.md, "Sorting"). `histc` counts the
elements at or above each bin edge (a compare against the edges and a sum) and takes the
differences; the edges are torch.linspace(min, max, bins + 1) in the input's dtype, as
torch's kernel finds each element's bin against them.
"""

from __future__ import annotations

import torch
import torch.fx
from xdsl.ir import SSAValue

from spyre_ir import shape_rules
from spyre_ir.dialects import spyre
from spyre_ir.dialects.spyre import shape_of as shape
from spyre_ir.lowering.aten_lowerings import arg, lowers, promoted_dtype
from spyre_ir.lowering.aten_remainder import div_floor
from spyre_ir.lowering.fx_importer import Importer, meta_dtype, meta_type, tensor_type

aten = torch.ops.aten


def _sorted_pair(imp: Importer, node: torch.fx.Node, dim: int, k: int | None,
                 descending: bool) -> tuple[SSAValue, SSAValue]:  # fmt: skip
    x = imp.value(node.args[0])
    values, indices = node.meta["val"]
    if not shape(x):  # a 0-d tensor: itself, at position 0
        return x, imp.full(0, (), torch.int64)
    return (
        imp.emit(spyre.SortOp(x, dim, k, descending, tensor_type(values.shape, values.dtype))),
        imp.emit(spyre.ArgsortOp(x, dim, k, descending,
                                 tensor_type(indices.shape, torch.int64))),
    )  # fmt: skip


@lowers(aten.sort.default)
def lower_sort(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    dim = int(arg(node, 1, "dim", -1))
    return _sorted_pair(imp, node, dim, None, bool(arg(node, 2, "descending", False)))


@lowers(aten.sort.stable)
def lower_sort_stable(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    # sort.stable(self, *, stable, dim=-1, descending=False): all but self are keywords
    dim = int(node.kwargs.get("dim", -1))
    return _sorted_pair(imp, node, dim, None, bool(node.kwargs.get("descending", False)))


@lowers(aten.topk.default)
def lower_topk(imp: Importer, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    """`sorted=False` lets torch return the k in any order; they come sorted here."""
    k, dim = int(arg(node, 1, "k")), int(arg(node, 2, "dim", -1))
    return _sorted_pair(imp, node, dim, k, bool(arg(node, 3, "largest", True)))


# ---------------------------------------------------------------- div with a rounding mode


def lower_div_mode(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """rounding_mode None: true division; "floor": spyre.div on integers (floor division
    there), floor of the quotient on floats; "trunc": the floored integer quotient plus one
    where the remainder is not zero and the signs differ, sign(q) * floor(|q|) on floats."""
    mode = node.kwargs.get("rounding_mode")
    out = meta_type(node)
    dtype = meta_dtype(node) if mode is None else promoted_dtype(node.args[0], node.args[1])
    by_scalar = not isinstance(node.args[1], torch.fx.Node)
    if mode is not None and by_scalar and dtype in (torch.float16, torch.bfloat16):
        # torch's CPU kernels (div_floor_kernel, div_trunc_kernel) divide 16-bit floats by
        # a Python scalar at f32, rounding only the result; rounding the scalar and the
        # quotient to 16 bits was off by one on 2-23 of 320 elements (by experiment).
        # By a tensor they compute in 16 bits (trunc: of the 16-bit quotient, as below)
        a, b = (imp.cast(imp.scalar_or_tensor(imp.value(x), dtype, opmath=True), torch.float32)
                for x in node.args[:2])  # fmt: skip
        if mode == "floor":
            return div_floor(imp, a, b, dtype, torch.float32)
        f32 = tensor_type(shape(out), torch.float32)
        return imp.cast(_float_rounded(imp, imp.emit(spyre.DivOp(a, b, f32)), mode), dtype)
    a = imp.as_tensor(imp.value(node.args[0]), dtype)
    b = imp.as_tensor(imp.value(node.args[1]), dtype)
    if mode == "floor" and dtype.is_floating_point:
        return div_floor(imp, a, b, dtype, dtype)  # torch's algorithm, in the dtype
    quotient = imp.emit(spyre.DivOp(a, b, out))
    if mode is None:
        return quotient
    if dtype.is_floating_point:
        return _float_rounded(imp, quotient, mode)
    if mode == "floor":
        return quotient
    remainder = imp.emit(spyre.SubOp(a, imp.emit(spyre.MulOp(b, quotient, out)), out))
    zero = imp.full(0, (), dtype)

    def test(op_cls: type[spyre.CompareOp], x: SSAValue) -> SSAValue:
        return imp.emit(op_cls(x, zero, tensor_type(shape(x), torch.bool)))

    both = tensor_type(shape_rules.broadcast_shapes(shape(a), shape(b)), torch.bool)
    signs_differ = imp.emit(spyre.LogicalXorOp(test(spyre.LtOp, a), test(spyre.LtOp, b), both))
    fix = imp.emit(spyre.LogicalAndOp(signs_differ, test(spyre.NeOp, remainder),
                                      tensor_type(shape(out), torch.bool)))  # fmt: skip
    one = imp.full(1, (), dtype)
    return imp.emit(spyre.SelectOp(fix, imp.emit(spyre.AddOp(quotient, one, out)), quotient, out))


def _float_rounded(imp: Importer, quotient: SSAValue, mode: str) -> SSAValue:
    out = quotient.type
    if mode == "floor":
        return imp.emit(spyre.FloorOp(quotient, out))
    magnitude = imp.emit(spyre.FloorOp(imp.emit(spyre.AbsOp(quotient, out)), out))
    return imp.emit(spyre.MulOp(imp.emit(spyre.SignOp(quotient, out)), magnitude, out))


def _rounding_mode(node: torch.fx.Node) -> str | None:
    mode = node.kwargs.get("rounding_mode")
    if mode not in (None, "floor", "trunc"):
        return f"{node.target} with rounding_mode={mode!r} is not supported"
    if meta_dtype(node) == torch.bool:
        return f"{node.target} on bool tensors is not supported"
    return None


lowers(aten.div.Tensor_mode, aten.div.Scalar_mode, check=_rounding_mode)(lower_div_mode)


# ---------------------------------------------------------------- histc


def _range(imp: Importer, x: SSAValue, low: float, high: float,
           dtype: torch.dtype) -> tuple[SSAValue, SSAValue]:  # fmt: skip
    """The outer bin edges as rank-0 tensors of `dtype`: the given range, or the data's
    min and max when it is (0, 0); 1 apart each way when they are equal, as torch."""
    scalar = tensor_type((), dtype)
    if low != 0 or high != 0:
        if low == high:
            low, high = low - 1, high + 1
        return imp.full(low, (), dtype), imp.full(high, (), dtype)
    flat = imp.reshape(x, (shape_rules.numel(shape(x)),))
    start = imp.emit(spyre.ReduceMinOp(flat, [0], False, scalar))
    end = imp.emit(spyre.ReduceMaxOp(flat, [0], False, scalar))
    same = imp.emit(spyre.EqOp(start, end, tensor_type((), torch.bool)))
    one = imp.full(1, (), dtype)
    start = imp.emit(spyre.SelectOp(same, imp.emit(spyre.SubOp(start, one, scalar)), start, scalar))
    end = imp.emit(spyre.SelectOp(same, imp.emit(spyre.AddOp(end, one, scalar)), end, scalar))
    return start, end


def _not_float(node: torch.fx.Node) -> str | None:
    if not meta_dtype(node).is_floating_point:
        return f"{node.target} on {meta_dtype(node)} tensors is not supported (nor in torch)"
    return None


@lowers(aten.histc.default, check=_not_float)
def lower_histc(imp: Importer, node: torch.fx.Node) -> SSAValue:
    """torch's CPU kernel for histc: an element x in [lo, hi] falls in bin
    trunc((x - lo) * bins / (hi - lo)), the last bin closed, each step rounded to the
    dtype as torch's Half arithmetic rounds it; NaN and elements outside fall in none.
    The count of bin j sums a compare of the bin numbers with j (a [bins, numel] row op).
    Counts are exact integers, then cast (torch adds ones in the dtype: an f16 bin stops
    counting at 2048)."""
    x = imp.value(node.args[0])
    bins = int(arg(node, 1, "bins", 100))
    low, high = float(arg(node, 2, "min", 0)), float(arg(node, 3, "max", 0))
    dtype = meta_dtype(node)
    lo, hi = _range(imp, x, low, high, dtype)
    n = shape_rules.numel(shape(x))
    row = imp.reshape(x, (1, n))
    row_t, flag_t = tensor_type((1, n), dtype), tensor_type((1, n), torch.bool)
    scaled = imp.emit(spyre.MulOp(imp.emit(spyre.SubOp(row, lo, row_t)),
                                  imp.full(bins, (), dtype), row_t))  # fmt: skip
    width = imp.emit(spyre.SubOp(hi, lo, tensor_type((), dtype)))
    position = imp.emit(spyre.FloorOp(imp.emit(spyre.DivOp(scaled, width, row_t)), row_t))
    index = imp.emit(spyre.MinOp(imp.cast(position, torch.int64),
                                 imp.full(bins - 1, (), torch.int64),
                                 tensor_type((1, n), torch.int64)))  # fmt: skip
    inside = imp.emit(spyre.LogicalAndOp(imp.emit(spyre.GeOp(row, lo, flag_t)),
                                         imp.emit(spyre.LeOp(row, hi, flag_t)), flag_t))  # fmt: skip
    index = imp.emit(spyre.SelectOp(inside, index, imp.full(-1, (), torch.int64),
                                    tensor_type((1, n), torch.int64)))  # fmt: skip
    bin_ids = imp.emit(spyre.IotaOp(0, 0, 1, tensor_type((bins, 1), torch.int64)))
    hits = imp.emit(spyre.EqOp(index, bin_ids, tensor_type((bins, n), torch.bool)))
    counts = imp.emit(spyre.SumOp(imp.cast(hits, torch.int64), [1], False,
                                  tensor_type((bins,), torch.int64)))  # fmt: skip
    return imp.cast(counts, dtype)
