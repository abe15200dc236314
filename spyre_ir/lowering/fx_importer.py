"""ATen FX graphs -> `func.func` of `spyre` ops.

The importer reads shapes and dtypes from each node's `meta["val"]` (the fake tensors
AOTAutograd leaves), so it never runs the graph. One function per ATen op family lives in
`aten_lowerings.py`; this module holds the walk, typing and scalar handling they share.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from xdsl.builder import Builder, InsertPoint
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from spyre_ir.dialects import spyre

TORCH_TO_ELEMENT: dict[torch.dtype, Callable[[], Attribute]] = {
    torch.float16: Float16Type,
    torch.bfloat16: BFloat16Type,
    torch.float32: Float32Type,
    torch.bool: lambda: IntegerType(1),
    torch.int32: lambda: IntegerType(32),
    torch.int64: lambda: IntegerType(64),
}


class UnsupportedNode(Exception):
    """A node the importer cannot express; the backend falls back to CPU for it."""


def element_type(dtype: torch.dtype) -> Attribute:
    try:
        return TORCH_TO_ELEMENT[dtype]()
    except KeyError:
        raise UnsupportedNode(f"dtype {dtype} is not supported on spyre") from None


def tensor_type(shape: Sequence[int], dtype: torch.dtype) -> TensorType:
    return TensorType(element_type(dtype), [int(s) for s in shape])


def static_shape(value: torch.Tensor) -> tuple[int, ...]:
    shape = tuple(value.shape)
    if not all(isinstance(s, int) for s in shape):
        raise UnsupportedNode(f"symbolic shape {list(shape)} (compile with dynamic=False)")
    return shape


def meta_type(node: torch.fx.Node) -> TensorType:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise UnsupportedNode(f"node {node.name} has no tensor metadata")
    return tensor_type(static_shape(val), val.dtype)


def meta_dtype(node: torch.fx.Node) -> torch.dtype:
    val = node.meta["val"]
    return val.dtype


@dataclass
class Importer:
    """Builds one `func.func` while walking an FX graph in order."""

    builder: Builder
    values: dict[torch.fx.Node, Any] = field(default_factory=dict)

    # -- emitting

    def emit(self, op: Operation) -> SSAValue:
        self.builder.insert(op)
        return op.results[0]

    def value(self, arg: Any) -> Any:
        """The SSA value (or tuple of values, or Python scalar) an FX argument stands for."""
        if isinstance(arg, torch.fx.Node):
            return self.values[arg]
        if isinstance(arg, (list, tuple)):
            return type(arg)(self.value(a) for a in arg)
        return arg

    def full(self, value: float | int | bool, shape: Sequence[int], dtype: torch.dtype) -> SSAValue:
        if dtype.is_floating_point:
            value = float(value)
        elif dtype == torch.bool:
            value = bool(value)
        else:
            value = int(value)
        return self.emit(spyre.FullOp(value, tensor_type(shape, dtype)))

    def as_tensor(self, arg: Any, dtype: torch.dtype) -> SSAValue:
        """A tensor operand of `dtype`: scalars become rank-0 fulls, tensors are cast."""
        if isinstance(arg, SSAValue):
            return self.cast(arg, dtype)
        if isinstance(arg, (bool, int, float)):
            return self.full(arg, (), dtype)
        raise UnsupportedNode(f"unsupported operand {arg!r}")

    def scalar_or_tensor(self, arg: Any, dtype: torch.dtype, *, opmath: bool) -> SSAValue:
        """An operand of arithmetic computing in `dtype`. A Python number beside 16-bit
        floats becomes a rank-0 f32 full (spyre.is_opmath_scalar): the op computes in
        f32 and rounds only its result, as torch's CPU kernels do. Those take the scalar
        at f32 (`opmath`: mul, div) or first rounded to `dtype` (add, sub, pow); either
        way the card must not round it again to DLFloat16. Else `as_tensor`'s operand."""
        if dtype in (torch.float16, torch.bfloat16) and isinstance(arg, (int, float)) \
                and not isinstance(arg, bool):  # fmt: skip
            value = float(arg) if opmath else float(torch.tensor(float(arg)).to(dtype))
            return self.full(value, (), torch.float32)
        return self.as_tensor(arg, dtype)

    def compare_operand(self, arg: Any, dtype: torch.dtype) -> SSAValue:
        """An operand of a comparison, `where` or a fill beside `dtype` tensors: a Python
        number is first rounded to `dtype` as torch's CPU kernels do (`x >= 2050.5` compares
        with fp16's 2050, `x == 1e9` with inf), then held like the tensor beside it."""
        return self.as_tensor(rounded_scalar(arg, dtype), dtype)

    def is_bool(self, value: SSAValue) -> bool:
        assert isinstance(value.type, TensorType)
        return value.type.element_type == IntegerType(1)

    def cast(self, value: SSAValue, dtype: torch.dtype) -> SSAValue:
        want = element_type(dtype)
        assert isinstance(value.type, TensorType)
        if value.type.element_type == want:
            return value
        return self.emit(spyre.CastOp(value, TensorType(want, value.type.get_shape())))

    def reshape(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        assert isinstance(value.type, TensorType)
        if tuple(value.type.get_shape()) == tuple(shape):
            return value
        return self.emit(spyre.ReshapeOp(value, TensorType(value.type.element_type, list(shape))))


def rounded_scalar(arg: Any, dtype: torch.dtype) -> Any:
    """A Python float beside 16-bit float tensors rounded to their dtype (out of range:
    +-inf), as torch's CPU kernels take the scalar of a comparison, `where`, `masked_fill`,
    `clamp` and `alpha`; anything else as it is."""
    if dtype in (torch.float16, torch.bfloat16) and isinstance(arg, (int, float)) \
            and not isinstance(arg, bool):  # fmt: skip
        return float(torch.tensor(float(arg), dtype=torch.float64).to(dtype))
    return arg


def scalar_overflow(value: Any, dtype: torch.dtype) -> str | None:
    """Torch's error when a checked scalar (`masked_fill`'s value, `clamp`'s bounds,
    `alpha`) is finite and outside `dtype`'s range; None when it fits."""
    if (
        not dtype.is_floating_point
        or isinstance(value, bool)
        or not isinstance(value, (int, float))
    ):
        return None
    value = float(value)
    if math.isfinite(value) and abs(value) > torch.finfo(dtype).max:
        name = {torch.float16: "c10::Half", torch.bfloat16: "c10::BFloat16"}.get(dtype, str(dtype))
        return f"value cannot be converted to type {name} without overflow"
    return None


LoweringFn = Callable[[Importer, torch.fx.Node], Any]


def _lowerings() -> dict[Any, LoweringFn]:
    from spyre_ir.lowering.aten_lowerings import LOWERINGS
    from spyre_ir.lowering.aten_scatter import register_library_ops

    register_library_ops()  # custom ops of libraries imported since (transformers')
    return LOWERINGS


def _overload_name(target: Any) -> str:
    return str(target)


def unsupported_reason(node: torch.fx.Node) -> str | None:
    """None when `node` can run on spyre; otherwise why not (for warnings and errors)."""
    if node.op in ("placeholder", "output"):
        return None
    if node.op != "call_function":
        return f"{node.op} nodes are not supported"
    if node.target not in _lowerings():
        return f"{_overload_name(node.target)} has no spyre lowering"
    from spyre_ir.lowering.aten_lowerings import CHECKS

    try:
        check = CHECKS.get(node.target)
        if check is not None:
            problem = check(node)
            if problem:
                return problem
        for val in _meta_tensors(node.meta.get("val")):
            element_type(val.dtype)
            static_shape(val)
        for arg in node.all_input_nodes:
            for val in _meta_tensors(arg.meta.get("val")):
                element_type(val.dtype)
                static_shape(val)
    except UnsupportedNode as error:
        return str(error)
    return None


def _meta_tensors(val: Any) -> list[torch.Tensor]:
    if isinstance(val, torch.Tensor):
        return [val]
    if isinstance(val, (list, tuple)):
        return [v for v in val if isinstance(v, torch.Tensor)]
    return []


def import_graph(gm: torch.fx.GraphModule, name: str = "main") -> ModuleOp:
    """Import a whole ATen graph; every node must be supported (see `unsupported_reason`)."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    arg_types = [meta_type(n) for n in placeholders]
    block = Block(arg_types=arg_types)
    importer = Importer(Builder(InsertPoint.at_end(block)))
    for node, arg in zip(placeholders, block.args, strict=True):
        arg.name_hint = _ssa_name(node.name)
        importer.values[node] = arg

    lowerings = _lowerings()
    results: list[SSAValue] = []
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            outputs = node.args[0]
            outputs = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
            for out in outputs:
                value = importer.value(out)
                if not isinstance(value, SSAValue):
                    raise UnsupportedNode(f"graph output {out} is not a tensor")
                results.append(value)
            continue
        reason = unsupported_reason(node)
        if reason:
            raise UnsupportedNode(f"{node.name}: {reason}")
        produced = lowerings[node.target](importer, node)
        if isinstance(produced, SSAValue):
            produced = importer.cast(produced, meta_dtype(node))
            expected = meta_type(node)
            if produced.type != expected:
                raise AssertionError(
                    f"lowering of {node.target} made {produced.type}, FX says {expected}"
                )
            produced.name_hint = _ssa_name(node.name)
        importer.values[node] = produced

    importer.builder.insert(func.ReturnOp(*results))
    # Values nothing reads (functionalisation leaves e.g. the old slice of a tensor
    # written by slice_scatter): tensor ops without effects, so they are dropped.
    for op in reversed(list(block.ops)):
        if op.results and not any(r.uses for r in op.results) and not isinstance(op, func.ReturnOp):
            block.erase_op(op)
    fn = func.FuncOp(
        name,
        ([a.type for a in block.args], [r.type for r in results]),
        Region(block),
    )
    return ModuleOp([fn])


def _ssa_name(name: str) -> str | None:
    """The FX node name as an SSA name hint. xDSL's printer treats a `_N` suffix as its
    own uniquing counter, so `getitem_1` becomes `getitem1` to keep names faithful."""
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    clean = re.sub(r"_(\d+)$", r"\1", clean)
    return clean if clean and not clean[0].isdigit() else None
