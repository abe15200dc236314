"""Dynamic shapes: shape buckets with length masks, an FX -> FX transform before the
static pipeline (docs/dynamic-shapes.md).

Dynamo hands the backend a graph whose sizes are symbols (``s0``) once a length has varied
(or always, with ``dynamic=True``). :class:`BucketedGraph` runs such a graph: at each call it
binds every symbol from the input shapes, rounds each symbolic size up to a *capacity*
(:func:`capacity`) and runs a *static* graph built for those capacities, once per bucket and
cached. The static graph is traced with ``make_fx`` from :class:`_PaddedInterpreter`, which
runs the symbolic graph on tensors padded to capacity and implements each op in padded form:

* elementwise and layout ops pass through (what lies in the padding is never read as data);
* a reduction over a padded dim masks its input with the neutral element
  (``where(arange(C) < length, x, neutral)``), a mean divides by the true count;
* a matmul that contracts a padded dim masks both operands to zero;
* a cat along a padded dim places each operand at its runtime offset (where + index_select);
* a slice that keeps the tail of a padded dim becomes an index_select at runtime positions;
* sizes given as symbols (view, expand, full, ...) become the capacity, and symbolic scalars
  (``s0``, ``s0 + 1``) become one-element int64 inputs the host computes per call.

The lengths are data, not kernel parameters, so the static road (L1..L4, replay) is
unchanged. Outputs are sliced to their true sizes. An op that has no padded form (a view
merging a padded dim with another one, say) makes the graph *unbucketable*: it is then
specialised per shape, with a warning.
"""

from __future__ import annotations

import operator
import os
import warnings
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sympy
import torch
from torch import fx

aten = torch.ops.aten

__all__ = ["BucketedGraph", "Unbucketable", "capacity", "is_dynamic"]

# Smallest capacity of a padded size, and how capacities grow (doubling): a generate() that
# stays below the floor compiles its decode graph once. Overridden by SPYRE_BUCKET_MIN.
DEFAULT_BUCKET_MIN = 256


class Unbucketable(Exception):
    """An op of a symbolic graph has no padded form."""


def capacity(length: int, floor: int) -> int:
    """The bucket a length falls in: the floor, then powers of two."""
    cap = max(floor, 1)
    while cap < length:
        cap *= 2
    return cap


def bucket_floor() -> int:
    text = os.environ.get("SPYRE_BUCKET_MIN", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_BUCKET_MIN


def _expr(size: Any) -> sympy.Expr | int:
    if isinstance(size, torch.SymInt):
        node = size.node
        return int(node.expr) if node.expr.is_number else node.expr
    return int(size)


def _shape(val: Any) -> list[sympy.Expr | int] | None:
    return [_expr(s) for s in val.shape] if isinstance(val, torch.Tensor) else None


def is_dynamic(gm: fx.GraphModule) -> bool:
    """Whether any placeholder is a symbolic int or a tensor of symbolic shape."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        val = node.meta.get("val")
        if isinstance(val, torch.SymInt) or (
            isinstance(val, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in val.shape)
        ):
            return True
    return False


def _padded_dims(val: Any) -> dict[int, sympy.Expr]:
    shape = _shape(val) or []
    return {d: s for d, s in enumerate(shape) if not isinstance(s, int)}


@dataclass(frozen=True)
class Bucket:
    """Capacities chosen for one call: one per group of free symbols."""

    caps: tuple[tuple[frozenset, int], ...]

    def of(self, expr: sympy.Expr) -> int:
        return dict(self.caps)[frozenset(expr.free_symbols)]


class BucketedGraph:
    """The runtime of one symbolic graph: binds, buckets, pads, runs, slices.

    ``compile_static(gm, example_inputs)`` compiles a static ATen graph (the backend's
    static path) and returns a callable on the graph's inputs."""

    def __init__(self, gm: fx.GraphModule, name: str,
                 compile_static: Callable[[fx.GraphModule, list[Any], str], Callable]) -> None:  # fmt: skip
        self.gm, self.name, self.compile_static = gm, name, compile_static
        self.placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.sources = self._symbol_sources()
        self.exprs = self._symbolic_exprs()
        self.groups = sorted({frozenset(e.free_symbols) for e in self.exprs}, key=str)
        self.outputs = list(gm.graph.output_node().args[0])
        self.floor = bucket_floor()
        self.compiled: dict[Any, Callable] = {}
        self.specialise = False
        # id(an unpadded result) -> (a weak reference to it, its version, the padded result
        # it was cut from): passed back in, the padded one is bound again, so a cache whose
        # image the card keeps is not padded and uploaded anew at every step
        self.padded_results: dict[int, tuple[weakref.ref, int, torch.Tensor]] = {}

    # ------------------------------------------------------------------ analysis
    def _symbol_sources(self) -> dict[sympy.Symbol, tuple[int, int | None]]:
        """Where each symbol's value is read at a call: (input index, dim or None)."""
        sources: dict[sympy.Symbol, tuple[int, int | None]] = {}
        for i, node in enumerate(self.placeholders):
            val = node.meta.get("val")
            if isinstance(val, torch.SymInt) and isinstance(_expr(val), sympy.Symbol):
                sources.setdefault(_expr(val), (i, None))
            for d, s in enumerate(_shape(val) or []):
                if isinstance(s, sympy.Symbol):
                    sources.setdefault(s, (i, d))
        return sources

    def _symbolic_exprs(self) -> list[sympy.Expr]:
        """Every symbolic size or scalar of the graph, each once, in graph order."""
        found: dict[sympy.Expr, None] = {}
        for node in self.gm.graph.nodes:
            val = node.meta.get("val")
            vals = val if isinstance(val, (tuple, list)) else (val,)
            for v in vals:
                if isinstance(v, torch.SymInt) and not isinstance(_expr(v), int):
                    found.setdefault(_expr(v), None)
                for s in _shape(v) or []:
                    if not isinstance(s, int):
                        found.setdefault(s, None)
        missing = {s for e in found for s in e.free_symbols} - set(self.sources)
        if missing:
            raise Unbucketable(f"symbols {sorted(map(str, missing))} are not input sizes")
        return list(found)

    # ------------------------------------------------------------------- calling
    def bind(self, args: Sequence[Any]) -> dict[sympy.Symbol, int]:
        values = {}
        for sym, (i, d) in self.sources.items():
            values[sym] = int(args[i]) if d is None else int(args[i].shape[d])
        return values

    def bucket(self, values: dict[sympy.Symbol, int]) -> Bucket:
        caps = []
        for group in self.groups:
            longest = max(
                int(e.xreplace(values)) for e in self.exprs if frozenset(e.free_symbols) == group
            )
            caps.append((group, capacity(longest, self.floor)))
        return Bucket(tuple(caps))

    def __call__(self, args: list[Any]) -> list[Any]:
        values = self.bind(args)
        if self.specialise:
            return self._run_specialised(args, values)
        bucket = self.bucket(values)
        fn = self.compiled.get(bucket)
        if fn is None:
            try:
                fn = self.compiled[bucket] = self._build(bucket)
            except Unbucketable as e:
                warnings.warn(f"spyre: {self.name} has dynamic shapes but cannot be bucketed ({e}); "
                              "compiling it once per shape instead", stacklevel=2)  # fmt: skip
                self.specialise = True
                return self._run_specialised(args, values)
        padded = [self._pad(a, n, bucket) for a, n in zip(args, self.placeholders)]
        lengths = [torch.tensor([int(e.xreplace(values))], dtype=torch.int64) for e in self.exprs]
        outs = fn(*padded, *lengths)
        results = [self._unpad(o, n, values) for o, n in zip(outs, self.outputs)]
        for out, result in zip(outs, results):
            if isinstance(result, torch.Tensor) and result is not out:
                self._remember(result, out)
        return results

    def _remember(self, result: torch.Tensor, padded: torch.Tensor) -> None:
        key = id(result)
        drop = lambda _, key=key: self.padded_results.pop(key, None)  # noqa: E731
        self.padded_results[key] = (weakref.ref(result, drop), result._version, padded)

    def _pad(self, arg: Any, node: fx.Node, bucket: Bucket) -> Any:
        if not isinstance(arg, torch.Tensor):
            return torch.tensor([int(arg)], dtype=torch.int64)  # a symbolic int input: data
        if arg.dtype == torch.float64:
            arg = arg.float()
        pads = _padded_dims(node.meta["val"])
        if not pads:
            return arg
        shape = list(arg.shape)
        for d, e in pads.items():
            shape[d] = bucket.of(e)
        if shape == list(arg.shape):  # the bucket fits it exactly: no padded copy
            return arg
        known = self.padded_results.get(id(arg))
        fresh = known is not None and known[0]() is arg and known[1] == arg._version
        if fresh and list(known[2].shape) == shape and known[2].dtype == arg.dtype:
            return known[2]  # a result of this graph, unchanged since: already padded
        out = arg.new_zeros(shape)
        out[tuple(slice(0, s) for s in arg.shape)] = arg
        if fresh and known[2].dtype == arg.dtype and arg.device.type == "cpu":
            # outgrew its bucket: the card makes the larger image by copying the smaller
            # one it keeps (resident.ResidentImages.grown), nothing crosses the link
            from spyre_ir.runtime.resident import images

            images().grown(out, known[2], tuple(arg.shape))
        return out

    def _unpad(self, out: Any, node: Any, values: dict[sympy.Symbol, int]) -> Any:
        val = node.meta.get("val") if isinstance(node, fx.Node) else None
        if isinstance(val, torch.SymInt):
            return (
                int(_expr(val).xreplace(values)) if not isinstance(_expr(val), int) else _expr(val)
            )
        pads = _padded_dims(val)
        if not pads:
            return out
        index = tuple(slice(0, int(pads[d].xreplace(values))) if d in pads else slice(None)
                      for d in range(out.dim()))  # fmt: skip
        view = out[index]
        # the strides dynamo traced (its guards check them, size-1 dims included)
        strides = [int(e.xreplace(values)) if not isinstance(e, int) else e
                   for e in (_expr(s) for s in val.stride())]  # fmt: skip
        return torch.empty_strided(view.shape, strides, dtype=view.dtype).copy_(view)

    # ---------------------------------------------------------------- building
    def _example_inputs(self, bucket: Bucket) -> list[torch.Tensor]:
        examples = []
        for node in self.placeholders:
            val = node.meta.get("val")
            if not isinstance(val, torch.Tensor):
                examples.append(torch.zeros(1, dtype=torch.int64))
                continue
            shape = [bucket.of(s) if not isinstance(s, int) else s for s in _shape(val)]
            dtype = torch.float32 if val.dtype == torch.float64 else val.dtype
            examples.append(torch.zeros(shape, dtype=dtype))
        return examples + [torch.zeros(1, dtype=torch.int64) for _ in self.exprs]

    def _build(self, bucket: Bucket) -> Callable:
        from torch.fx.experimental.proxy_tensor import make_fx

        interp = _PaddedInterpreter(self, bucket)
        n = len(self.placeholders)

        def padded(*args: torch.Tensor) -> list[torch.Tensor]:
            return interp.run(list(args[:n]), dict(zip(self.exprs, args[n:])))

        examples = self._example_inputs(bucket)
        static = make_fx(padded, tracing_mode="fake")(*examples)
        static.graph.eliminate_dead_code()
        static.recompile()
        caps = ", ".join(f"{','.join(sorted(map(str, g)))}->{c}" for g, c in bucket.caps)
        return self.compile_static(static, examples, f"bucket {caps}")

    def _run_specialised(self, args: list[Any], values: dict[sympy.Symbol, int]) -> list[Any]:
        from torch.fx.experimental.proxy_tensor import make_fx

        key = tuple(sorted((str(s), v) for s, v in values.items()))
        fn = self.compiled.get(key)
        if fn is None:
            examples = [a if isinstance(a, torch.Tensor) else torch.tensor(int(a)) for a in args]
            ints = [not isinstance(a, torch.Tensor) for a in args]

            def concrete(*xs: torch.Tensor) -> Any:
                return self.gm(*[int(v) if i else x for x, v, i in zip(xs, args, ints)])

            static = make_fx(concrete, tracing_mode="fake")(*examples)
            fn = self.compiled[key] = self.compile_static(static, examples, f"shape {key}")
        outs = fn(*[a if isinstance(a, torch.Tensor) else torch.tensor(int(a)) for a in args])
        return list(outs)


# ------------------------------------------------------------------ padded ops
_INT_MAX = 2**63 - 1
_STRUCTURAL = {
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.expand.default,
    aten.permute.default, aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims,
    aten.clone.default, aten.alias.default, aten._to_copy.default, aten.transpose.int,
    aten.t.default, aten.detach.default, aten.full.default, aten.zeros.default,
    aten.ones.default, aten.empty.memory_format, aten.new_zeros.default, aten.new_ones.default,
    aten.new_full.default, aten.new_empty.default, aten.full_like.default,
    aten.zeros_like.default, aten.ones_like.default, aten.embedding.default,
    torch.ops.prims.convert_element_type.default, aten.cumsum.default, aten.arange.default,
    torch.ops.prims.iota.default,
}  # fmt: skip
_SCATTERS = {aten.index_put.default, aten.index_put_.default, aten.index_copy.default,
             aten.index_copy_.default}  # fmt: skip
_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}
# Host arithmetic on symbolic ints (a sliding window's offset is a sym_max): the value is
# the expression, computed on the host per call like any other length.
_SYM_OPS = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.neg,
            torch.sym_max, torch.sym_min, aten.sym_size.int, aten.sym_numel.default,
            aten.sym_stride.int}  # fmt: skip


def _neutral(target: Any, dtype: torch.dtype) -> Any:
    if dtype == torch.bool:
        big: Any = True
    else:
        big = float("inf") if dtype.is_floating_point else torch.iinfo(dtype).max
    return {
        aten.sum.dim_IntList: 0, aten.sum.default: 0, aten.mean.dim: 0, aten.mean.default: 0,
        aten.amax.default: -big, aten.max.dim: -big, aten.argmax.default: -big,
        aten.amin.default: big, aten.min.dim: big, aten.argmin.default: big,
        aten.any.dim: False, aten.any.dims: False, aten.any.default: False,
        aten.all.dim: True, aten.all.dims: True, aten.all.default: True,
        aten._softmax.default: -big, aten._log_softmax.default: -big,
    }[target]  # fmt: skip


_REDUCTIONS = {
    aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default, aten.amax.default,
    aten.max.dim, aten.argmax.default, aten.amin.default, aten.min.dim, aten.argmin.default,
    aten.any.dim, aten.any.dims, aten.any.default, aten.all.dim, aten.all.dims, aten.all.default,
    aten._softmax.default, aten._log_softmax.default,
}  # fmt: skip


def _reduced_dims(node: fx.Node, rank: int) -> list[int]:
    if node.target in (aten.sum.default, aten.mean.default, aten.any.default, aten.all.default):
        return list(range(rank))
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if dims is None:
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return [d % rank for d in dims] if rank else []


class _PaddedInterpreter:
    """Runs a symbolic graph on padded tensors (under make_fx: traces the static graph)."""

    def __init__(self, graph: BucketedGraph, bucket: Bucket) -> None:
        self.graph, self.bucket = graph, bucket
        self.lengths: dict[sympy.Expr, torch.Tensor] = {}

    def run(self, args: list[torch.Tensor], lengths: dict[sympy.Expr, torch.Tensor]) -> list[Any]:
        self.lengths = lengths
        env: dict[fx.Node, Any] = {}
        for node, arg in zip(self.graph.placeholders, args):
            val = node.meta.get("val")
            env[node] = self.length(_expr(val)) if isinstance(val, torch.SymInt) else arg
        for node in self.graph.gm.graph.nodes:
            if node.op == "call_function":
                env[node] = self.call(node, env)
            elif node.op == "get_attr":
                env[node] = getattr(self.graph.gm, node.target)
        return [env[o] if isinstance(o, fx.Node) else o for o in self.graph.outputs]

    # The value of a symbolic scalar is a 1-element int64 tensor (a card tensor has at least
    # one dim); as a size it is the capacity.
    def length(self, expr: sympy.Expr | int) -> Any:
        return expr if isinstance(expr, int) else self.lengths[expr]

    def size(self, node: fx.Node) -> int:
        e = _expr(node.meta["val"])
        return e if isinstance(e, int) else self.bucket.of(e)

    def call(self, node: fx.Node, env: dict[fx.Node, Any]) -> Any:
        target = node.target
        if target in _SYM_OPS:
            e = _expr(node.meta["val"])
            return e if isinstance(e, int) else self.lengths[e]
        ins = [a for a in node.all_input_nodes if isinstance(a.meta.get("val"), torch.Tensor)]
        padded_in = any(_padded_dims(a.meta["val"]) for a in ins)
        padded_out = any(_padded_dims(v) for v in _tensors(node.meta.get("val")))
        if target in _STRUCTURAL or target is operator.getitem:
            if target in _VIEWS and padded_in:
                _check_view(node)
            return self.apply(node, env, sizes=True)
        if target in _REDUCTIONS:
            return self.reduction(node, env)
        if target in (aten.mm.default, aten.bmm.default):
            return self.matmul(node, env)
        if target is aten.cat.default:
            return self.cat(node, env)
        if target is aten.slice.Tensor:
            return self.slice(node, env)
        if target in _SCATTERS and not any(_padded_dims(a.meta["val"]) for a in ins[1:]):
            # indices and values unpadded (a decode step's write into a padded cache):
            # every write lands at a true position, inside the data
            return self.apply(node, env, sizes=False)
        if isinstance(target, torch._ops.OpOverload) and torch.Tag.pointwise in target.tags:
            return self.apply(node, env, sizes=False)
        if target in (aten.where.self, aten.masked_fill.Scalar, aten.masked_fill.Tensor):
            return self.apply(node, env, sizes=False)
        if padded_in or padded_out or any(isinstance(a, fx.Node) and isinstance(a.meta.get("val"), torch.SymInt)
                                          for a in node.args):  # fmt: skip
            raise Unbucketable(f"{target} on a padded size")
        return self.apply(node, env, sizes=False)

    def apply(self, node: fx.Node, env: dict[fx.Node, Any], sizes: bool) -> Any:
        """Run the op itself; symbolic ints in its arguments become capacities (``sizes``)
        or their runtime values (one-element tensors)."""

        def value(a: Any) -> Any:
            if isinstance(a, fx.Node):
                if sizes and isinstance(a.meta.get("val"), torch.SymInt):
                    return self.size(a)
                return env[a]
            if isinstance(a, (list, tuple)):
                return type(a)(value(x) for x in a)
            return a

        args, kwargs = value(node.args), {k: value(v) for k, v in node.kwargs.items()}
        args, kwargs = _no_f64(args), {k: _no_f64(v) for k, v in kwargs.items()}
        if node.target is operator.getitem:
            return args[0][args[1]]
        return node.target(*args, **kwargs)

    def mask(self, x: torch.Tensor, dim: int, length: sympy.Expr, fill: Any) -> torch.Tensor:
        cap = x.shape[dim]
        shape = [1] * x.dim()
        shape[dim] = cap
        keep = torch.arange(cap, dtype=torch.int64).view(shape) < self.length(length)
        return torch.where(keep, x, torch.full((), fill, dtype=x.dtype))

    def reduction(self, node: fx.Node, env: dict[fx.Node, Any]) -> Any:
        src = node.args[0]
        x = env[src]
        pads = _padded_dims(src.meta["val"])
        dims = [d for d in _reduced_dims(node, x.dim()) if d in pads]
        for d in dims:
            x = self.mask(x, d, pads[d], _neutral(node.target, x.dtype))
        if node.target in (aten.mean.dim, aten.mean.default) and dims:
            rest = [a for i, a in enumerate(node.args) if i != 0]
            target = aten.sum.dim_IntList if node.target is aten.mean.dim else aten.sum.default
            total = target(x, *rest, **node.kwargs)
            count = 1
            for d in _reduced_dims(node, x.dim()):
                count = count * (self.length(pads[d]) if d in pads else x.shape[d])
            return torch.div(total, count).to(total.dtype).reshape(total.shape)
        args = [x, *(self.apply_arg(a, env) for a in node.args[1:])]
        return node.target(*args, **node.kwargs)

    def apply_arg(self, a: Any, env: dict[fx.Node, Any]) -> Any:
        return env[a] if isinstance(a, fx.Node) else a

    def matmul(self, node: fx.Node, env: dict[fx.Node, Any]) -> torch.Tensor:
        a, b = node.args[0], node.args[1]
        x, y = env[a], env[b]
        ka, kb = x.dim() - 1, y.dim() - 2  # the contracted dims
        length = _padded_dims(a.meta["val"]).get(ka) or _padded_dims(b.meta["val"]).get(kb)
        if length is not None:
            x, y = self.mask(x, ka, length, 0), self.mask(y, kb, length, 0)
        return node.target(x, y)

    def cat(self, node: fx.Node, env: dict[fx.Node, Any]) -> torch.Tensor:
        parts = list(node.args[0])
        rank = len(_shape(node.meta["val"]))
        dim = (node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)) % rank
        out_len = _shape(node.meta["val"])[dim]
        if isinstance(out_len, int):  # not along a padded dim: capacities agree
            return torch.cat([env[p] for p in parts], dim)
        cap = self.bucket.of(out_len)
        grown = self.growth(parts, env, dim, cap)
        if grown is not None:
            return grown
        shape = [1] * rank
        shape[dim] = cap
        position = torch.arange(cap, dtype=torch.int64)
        out = None
        offset: Any = 0
        for p in parts:
            x, n = env[p], _shape(p.meta["val"])[dim]
            if x.shape[dim] == 1:
                taken = x.expand(*[cap if i == dim else -1 for i in range(rank)])
            elif out is None and x.shape[dim] == cap:  # the first part, where it already is
                taken = x
            else:  # where each output position reads from this part, clamped inside it
                taken = _take(x, dim, torch.clamp(position - offset, 0, x.shape[dim] - 1))
            if out is None:
                out = taken
            else:
                inside = (position >= offset).view(shape)
                out = torch.where(inside, taken, out)
            offset = offset + self.length(n)
        return out

    def growth(self, parts: list[fx.Node], env: dict[fx.Node, Any], dim: int,
               cap: int) -> torch.Tensor | None:  # fmt: skip
        """cat([cache, new]) of a padded cache input at full capacity and a few new rows
        (DynamicCache growth): the rows written at their runtime positions, an index_put
        into the cache, which the card stores in place (runtime/row_store.py)."""
        if len(parts) != 2 or parts[0].op != "placeholder":
            return None
        cache, new = env[parts[0]], env[parts[1]]
        rows = _shape(parts[1].meta["val"])[dim]
        if cache.shape[dim] != cap or not isinstance(rows, int) or not 0 < rows <= cap:
            return None
        if new.dtype != cache.dtype or new.shape[dim] != rows:
            return None
        start = self.length(_shape(parts[0].meta["val"])[dim])
        index = torch.arange(rows, dtype=torch.int64) + start
        return aten.index_put.default(cache, [None] * dim + [index.reshape(-1)], new)

    def slice(self, node: fx.Node, env: dict[fx.Node, Any]) -> torch.Tensor:
        src = node.args[0]
        x = env[src]
        dim = (node.args[1] if len(node.args) > 1 else 0) % x.dim()
        start = node.args[2] if len(node.args) > 2 else 0
        end = node.args[3] if len(node.args) > 3 else _INT_MAX
        step = node.args[4] if len(node.args) > 4 else 1
        length = _padded_dims(src.meta["val"]).get(dim)
        symbolic = any(isinstance(a, fx.Node) for a in (start, end))
        if length is None and not symbolic:
            return self.apply(node, env, sizes=False)
        if length is None or symbolic or step != 1:
            raise Unbucketable("a slice with symbolic bounds")
        if start == 0 and (end == _INT_MAX or end >= x.shape[dim]):
            return x
        out_len = _shape(node.meta["val"])[dim]
        if end != _INT_MAX or not isinstance(start, int):
            raise Unbucketable("a slice of a padded dim that does not keep its tail")
        count = out_len if isinstance(out_len, int) else self.bucket.of(out_len)
        first = (self.length(length) + start) if start < 0 else start
        at = torch.clamp(torch.arange(count, dtype=torch.int64) + first, 0, x.shape[dim] - 1)
        return _take(x, dim, at)


def _take(x: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """index_select along ``dim`` as the card has it: along dim 0."""
    if dim == 0:
        return torch.index_select(x, 0, index)
    return torch.index_select(x.transpose(0, dim), 0, index).transpose(0, dim)


def _no_f64(a: Any) -> Any:
    """float64 (dynamo's 0-d tensors for Python floats under ``dynamic=True``) as float32:
    the card has no f64; the scalars are fed as f32 (see BucketedGraph._pad)."""
    if a is torch.float64:
        return torch.float32
    if isinstance(a, (list, tuple)):
        return type(a)(_no_f64(x) for x in a)
    return a


def _tensors(val: Any) -> list[torch.Tensor]:
    vals = val if isinstance(val, (tuple, list)) else (val,)
    return [v for v in vals if isinstance(v, torch.Tensor)]


def _check_view(node: fx.Node) -> None:
    """A view keeps each padded dim as a dim of its own (merging static dims around it is
    fine): the padding of a merged dim would sit between the data, not after it."""
    src, out = _shape(node.args[0].meta["val"]), _shape(node.meta["val"])
    ins = [s for s in src if s != 1]
    outs = [s for s in out if s != 1]
    i = j = 0
    while i < len(ins) and j < len(outs):
        group_in, group_out = [ins[i]], [outs[j]]
        i, j = i + 1, j + 1
        while sympy.simplify(sympy.Mul(*group_in) - sympy.Mul(*group_out)) != 0:
            if i < len(ins) and (j >= len(outs) or _smaller(group_in, group_out)):
                group_in.append(ins[i])
                i += 1
            elif j < len(outs):
                group_out.append(outs[j])
                j += 1
            else:
                break
        symbolic = [s for s in group_in + group_out if not isinstance(s, int)]
        if symbolic and (len(group_in) > 1 or len(group_out) > 1):
            raise Unbucketable(f"{node.target} merges a padded dim with another dim")


def _smaller(a: list[Any], b: list[Any]) -> bool:
    """Whether the product of ``a`` is the smaller one, symbols taken as large (a size
    symbol is at least 2: dynamo specialises 0 and 1)."""
    large = dict.fromkeys(sympy.Mul(*a, *b).free_symbols, 10**6)
    return bool(sympy.Mul(*a).subs(large) < sympy.Mul(*b).subs(large))
