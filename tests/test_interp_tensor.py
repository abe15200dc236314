"""The L1 (spyre dialect) numpy interpreter against torch eager, op by op."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects.spyre import SPYRE_OPS
from spyre_ir.interp.numerics import erf, round_to_bf16
from spyre_ir.interp.tensor import IMPLS, InterpreterError, run_module
from spyre_ir.layout import layout_sticked_on, padding_elements
from spyre_ir.registry import make_context

TORCH = {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "i1": torch.bool, "i32": torch.int32, "i64": torch.int64,
}  # fmt: skip
ELT_OF = {v: k for k, v in TORCH.items()}
TOL = {"f32": 1e-5, "f16": 1e-2, "bf16": 1e-2}
FLOATS = ["f32", "f16", "bf16"]

_CTX = make_context()


def ttype(shape, elt: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + elt + ">"


def make(shape, elt: str, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    """Random storage array for `elt`: normal floats (rounded to the type), small ints."""
    rng = np.random.default_rng(seed)
    if elt == "i1":
        return rng.random(shape) < 0.5
    if elt in ("i32", "i64"):
        return rng.integers(-20, 20, size=shape).astype(np.int32 if elt == "i32" else np.int64)
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    return x.astype(np.float16) if elt == "f16" else round_to_bf16(x) if elt == "bf16" else x


def to_torch(x: np.ndarray, elt: str) -> torch.Tensor:
    return torch.from_numpy(np.array(x, copy=True)).to(TORCH[elt])


def from_torch(t: torch.Tensor) -> np.ndarray:
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def run_ir(body: str, inputs: list[tuple[np.ndarray, str]], result: str) -> np.ndarray:
    """Run `%r = <body>` where %a0, %a1... are the inputs; `{T0}`.. and `{R}` in `body`
    are replaced by the input and result types."""
    types = {f"T{i}": ttype(x.shape, elt) for i, (x, elt) in enumerate(inputs)}
    params = ", ".join(f"%a{i}: {types[f'T{i}']}" for i in range(len(inputs)))
    line = body.replace("{R}", result)
    for key, t in types.items():
        line = line.replace("{" + key + "}", t)
    text = (
        f"func.func @main({params}) -> {result} {{\n  %r = {line}\n"
        f"  func.return %r : {result}\n}}\n"
    )
    module = parse_and_verify(_CTX, text, "test.mlir")
    (out,) = run_module(module, [x for x, _ in inputs])
    return out


def check(body, inputs, ref: torch.Tensor, elt: str | None = None, tol: str | None = None):
    """Run the op and compare with the torch result `ref` (cast to `elt` if given)."""
    elt = elt or ELT_OF[ref.dtype]
    ref = ref.to(TORCH[elt])
    got = run_ir(body, inputs, ttype(ref.shape, elt))
    want = from_torch(ref)
    assert got.shape == want.shape
    assert got.dtype == (np.float32 if elt == "bf16" else want.dtype)
    if elt in TOL or tol:
        t = TOL[tol or elt]
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=t, atol=t, equal_nan=True
        )
    else:
        np.testing.assert_array_equal(got, want)
    return got


# ------------------------------------------------------------------ binary ops

BIN_SHAPES = [((67, 71), (67, 71)), ((3, 7, 9), (9,)), ((3, 1, 9), (7, 1)),
              ((63, 129), (1, 129)), ((), (5,))]  # fmt: skip
ARITH = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "max": torch.maximum, "min": torch.minimum, "pow": torch.pow,
}  # fmt: skip


def _binary_inputs(name, sa, sb, elt):
    a, b = make(sa, elt, 1, 2.0), make(sb, elt, 2, 2.0)
    if name == "div" and elt in FLOATS:  # keep away from 0 so f16 results stay finite
        b = (np.sign(b) * (np.abs(b) + 0.5)).astype(b.dtype)
    if name == "div" and elt in ("i32", "i64"):
        b[b == 0] = 3
    if name == "pow":
        a, b = (np.abs(a) + 0.5).astype(a.dtype), (b / 2).astype(b.dtype)
        if elt == "bf16":
            a, b = round_to_bf16(a), round_to_bf16(b)
    return a, b


@pytest.mark.parametrize("sa,sb", BIN_SHAPES)
@pytest.mark.parametrize(
    "name,elt",
    [(n, e) for n in ARITH for e in FLOATS + ["i32", "i64"] if n != "pow" or e in FLOATS],
)
def test_binary_arith(name, elt, sa, sb):
    a, b = _binary_inputs(name, sa, sb, elt)
    ta, tb = to_torch(a, elt), to_torch(b, elt)
    if name == "div" and elt not in FLOATS:
        ref = torch.div(ta, tb, rounding_mode="floor")
    else:
        ref = ARITH[name](ta, tb)
    check(f"spyre.{name} %a0, %a1 : {{T0}}, {{T1}} -> {{R}}", [(a, elt), (b, elt)], ref)


def test_bool_arith_is_int_then_nonzero():
    a, b = np.array([0, 0, 1, 1], bool), np.array([0, 1, 0, 1], bool)
    ins = [(a, "i1"), (b, "i1")]
    r = "tensor<4xi1>"
    assert run_ir("spyre.add %a0, %a1 : {T0}, {T1} -> {R}", ins, r).tolist() == [0, 1, 1, 1]
    assert run_ir("spyre.sub %a0, %a1 : {T0}, {T1} -> {R}", ins, r).tolist() == [0, 1, 1, 0]
    assert run_ir("spyre.mul %a0, %a1 : {T0}, {T1} -> {R}", ins, r).tolist() == [0, 0, 0, 1]
    assert run_ir("spyre.max %a0, %a1 : {T0}, {T1} -> {R}", ins, r).tolist() == [0, 1, 1, 1]


def test_nan_propagates_through_max_min():
    a = np.array([np.nan, 1.0, 2.0], np.float32)
    b = np.array([0.0, np.nan, 1.0], np.float32)
    for name in ("max", "min"):
        got = run_ir(f"spyre.{name} %a0, %a1 : {{T0}}, {{T1}} -> {{R}}",
                     [(a, "f32"), (b, "f32")], "tensor<3xf32>")  # fmt: skip
        assert np.isnan(got[:2]).all() and not np.isnan(got[2])


def test_integer_division_by_zero_is_an_error():
    a, b = np.array([1, 2], np.int32), np.array([1, 0], np.int32)
    with pytest.raises(InterpreterError, match="division by zero"):
        run_ir("spyre.div %a0, %a1 : {T0}, {T1} -> {R}", [(a, "i32"), (b, "i32")],
               "tensor<2xi32>")  # fmt: skip


COMPARE = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
           "gt": torch.gt, "ge": torch.ge}  # fmt: skip


@pytest.mark.parametrize("sa,sb", BIN_SHAPES[1:4])
@pytest.mark.parametrize("elt", FLOATS + ["i32", "i1"])
@pytest.mark.parametrize("name", list(COMPARE))
def test_compare(name, elt, sa, sb):
    a, b = make(sa, elt, 1), make(sb, elt, 2)
    if elt in FLOATS:  # rounded values so that equality happens
        a, b = np.round(a * 2).astype(a.dtype), np.round(b * 2).astype(b.dtype)
    ref = COMPARE[name](to_torch(a, elt), to_torch(b, elt))
    check(f"spyre.{name} %a0, %a1 : {{T0}}, {{T1}} -> {{R}}", [(a, elt), (b, elt)], ref)


LOGICAL = ["logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("name", LOGICAL)
def test_logical(name):
    a, b = make((3, 7, 9), "i1", 1), make((7, 1), "i1", 2)
    ref = getattr(torch, name)(to_torch(a, "i1"), to_torch(b, "i1"))
    check(f"spyre.{name} %a0, %a1 : {{T0}}, {{T1}} -> {{R}}", [(a, "i1"), (b, "i1")], ref)


BITWISE = {"bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or,
           "bitwise_xor": torch.bitwise_xor, "shift_left": torch.bitwise_left_shift,
           "shift_right": torch.bitwise_right_shift}  # fmt: skip


@pytest.mark.parametrize("elt", ["i32", "i64"])
@pytest.mark.parametrize("name", list(BITWISE))
def test_bitwise(name, elt):
    """Large values (shifts that wrap) and shift counts below 0 and past the width."""
    a = make((3, 7, 9), elt, 1) * (1 << 26)
    b = make((7, 1), elt, 2) * 4  # -80 .. 76
    ref = BITWISE[name](to_torch(a, elt), to_torch(b, elt))
    check(f"spyre.{name} %a0, %a1 : {{T0}}, {{T1}} -> {{R}}", [(a, elt), (b, elt)], ref)


@pytest.mark.parametrize("elt", ["i32", "i64"])
def test_bitwise_not(elt):
    x = make((3, 7, 9), elt, 5) * 12345
    check("spyre.bitwise_not %a0 : {T0} -> {R}", [(x, elt)], torch.bitwise_not(to_torch(x, elt)))


@pytest.mark.parametrize("elt", FLOATS + ["i64", "i1"])
def test_select_broadcasts_all_three(elt):
    c, a, b = make((3, 1, 9), "i1", 3), make((7, 1), elt, 1), make((9,), elt, 2)
    ref = torch.where(to_torch(c, "i1"), to_torch(a, elt), to_torch(b, elt))
    check("spyre.select %a0, %a1, %a2 : {T0}, {T1}, {T2} -> {R}",
          [(c, "i1"), (a, elt), (b, elt)], ref)  # fmt: skip


# ------------------------------------------------------------------ unary ops

POS = lambda x: np.abs(x) + 0.1  # noqa: E731
UNARY = {  # name: (torch fn, input transform, attr-dict text)
    "neg": (torch.neg, None, ""),
    "abs": (torch.abs, None, ""),
    "sign": (torch.sign, None, ""),
    "relu": (torch.relu, None, ""),
    "exp": (torch.exp, None, ""),
    "log": (torch.log, POS, ""),
    "log1p": (torch.log1p, POS, ""),
    "sqrt": (torch.sqrt, POS, ""),
    "rsqrt": (torch.rsqrt, POS, ""),
    "reciprocal": (torch.reciprocal, POS, ""),
    "tanh": (torch.tanh, None, ""),
    "sigmoid": (torch.sigmoid, None, ""),
    "erf": (torch.erf, None, ""),
    "silu": (F.silu, None, ""),
    "sin": (torch.sin, None, ""),
    "cos": (torch.cos, None, ""),
    "floor": (torch.floor, None, ""),
    "ceil": (torch.ceil, None, ""),
    "round": (torch.round, lambda x: np.round(x * 4) / 4, ""),  # ties at every half
    "gelu": (F.gelu, None, ""),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), None, '{approximate = "tanh"}'),
    "clamp_min": (lambda t: torch.clamp(t, min=-0.3), None, "{min = -3.0e-01 : f64}"),
    "clamp_max": (lambda t: torch.clamp(t, max=0.7), None, "{max = 7.0e-01 : f64}"),
    "clamp": (lambda t: torch.clamp(t, -0.3, 0.7), None, "{min = -3.0e-01 : f64, max = 7.0e-01 : f64}"),
}  # fmt: skip
INT_UNARY = ["neg", "abs", "sign", "relu", "clamp_min", "clamp_max", "clamp"]


@pytest.mark.parametrize("shape", [(67, 71), (3, 7, 9), ()])
@pytest.mark.parametrize(
    "name,elt",
    [(n, e) for n in UNARY for e in FLOATS + ["i32", "i64"] if e in FLOATS or n in INT_UNARY],
)
def test_unary(name, elt, shape):
    fn, transform, attrs = UNARY[name]
    x = make(shape, elt, 4, 2.0)
    if transform is not None:
        x = transform(x).astype(x.dtype)
    if elt == "bf16":
        x = round_to_bf16(x)
    if elt not in FLOATS and name.startswith("clamp"):  # bounds that are integers
        attrs = attrs.replace("-3.0e-01", "-3.0").replace("7.0e-01", "7.0")
        fn = {"clamp_min": lambda t: torch.clamp(t, min=-3),
              "clamp_max": lambda t: torch.clamp(t, max=7),
              "clamp": lambda t: torch.clamp(t, -3, 7)}[name]  # fmt: skip
    op = name.split("_")[0] if name.startswith(("clamp", "gelu")) else name
    check(f"spyre.{op} %a0 {attrs} : {{T0}} -> {{R}}", [(x, elt)], fn(to_torch(x, elt)))


def test_unary_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30], np.float32)
    # (not gelu: torch's kernel gives NaN for gelu(+inf); we give +inf)
    for name in ("sign", "erf", "sigmoid", "tanh", "silu", "relu"):
        fn = UNARY[name][0]
        check(f"spyre.{name} %a0 : {{T0}} -> {{R}}", [(x, "f32")], fn(to_torch(x, "f32")))


def test_logical_not():
    x = make((3, 7, 9), "i1", 5)
    check("spyre.logical_not %a0 : {T0} -> {R}", [(x, "i1")], torch.logical_not(to_torch(x, "i1")))


def test_erf_matches_math_erf():
    x = np.concatenate([np.linspace(-8, 8, 20001), [0.46875, 4.0, -4.0, 27.0, 1e-300]])
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(erf(x), want, rtol=1e-14, atol=1e-16)


def test_round_to_bf16_matches_torch():
    x = make((4096,), "f32", 6, 100.0)
    x = np.concatenate([x, np.array([np.inf, -np.inf, np.nan, 3.4e38, 1e-40, 0.0], np.float32)])
    want = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    np.testing.assert_array_equal(round_to_bf16(x), want)


CASTS = [
    (s, d) for s in FLOATS + ["i32", "i64", "i1"] for d in FLOATS + ["i32", "i64", "i1"] if s != d
]


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast(src, dst):
    x = make((67, 71), src, 7, 10.0)
    check("spyre.cast %a0 : {T0} -> {R}", [(x, src)], to_torch(x, src).to(TORCH[dst]))


# ------------------------------------------------------------------ matmul

MATMUL_SHAPES = [((67, 71), (71, 63)), ((71,), (71, 63)), ((67, 71), (71,)), ((71,), (71,)),
                 ((2, 1, 5, 7), (3, 7, 4)), ((5, 7), (3, 7, 4)), ((3, 5, 7), (7,)),
                 ((63, 129), (129, 1))]  # fmt: skip


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
@pytest.mark.parametrize("elt", FLOATS + ["i64"])
def test_matmul(elt, sa, sb):
    a, b = make(sa, elt, 8), make(sb, elt, 9)
    ref = torch.matmul(to_torch(a, elt), to_torch(b, elt))
    check("spyre.matmul %a0, %a1 : {T0}, {T1} -> {R}", [(a, elt), (b, elt)], ref)


# ------------------------------------------------------------------ reductions

REDUCE = ["sum", "mean", "reduce_max", "reduce_min"]
ARG_REDUCE = ["argmax", "argmin"]
RED_CASES = [((67, 71), [1], False), ((67, 71), [0], True), ((3, 7, 9), [0, 2], False),
             ((3, 7, 9), [-1], True), ((63, 129), [0, 1], False)]  # fmt: skip


def _red_text(name, dims, keepdim, attrs=""):
    kd = " keepdim" if keepdim else ""
    return f"spyre.{name} %a0 dims = {list(dims)}{kd} {attrs} : {{T0}} -> {{R}}"


@pytest.mark.parametrize("shape,dims,keepdim", RED_CASES)
@pytest.mark.parametrize(
    "name,elt",
    [(n, e) for n in REDUCE
     for e in FLOATS + ["i32", "i64"] if n != "mean" or e in FLOATS],
)  # fmt: skip
def test_reductions(name, elt, shape, dims, keepdim):
    x = make(shape, elt, 10)
    t = to_torch(x, elt)
    fn = {"sum": torch.sum, "mean": torch.mean, "reduce_max": torch.amax,
          "reduce_min": torch.amin}[name]  # fmt: skip
    # torch sums integers in int64; the result type is the operand's, so cast back.
    check(_red_text(name, dims, keepdim), [(x, elt)], fn(t, dim=dims, keepdim=keepdim), elt)


@pytest.mark.parametrize("shape,dims,keepdim", RED_CASES)
@pytest.mark.parametrize("elt", FLOATS + ["i32"])
@pytest.mark.parametrize("name", ARG_REDUCE)
def test_arg_reductions(name, elt, shape, dims, keepdim):
    x = make(shape, elt, 11)
    if elt in FLOATS:
        x = np.round(x * 4).astype(x.dtype)  # ties: the first index wins
    t = to_torch(x, elt)
    nd = [d % t.dim() for d in dims]
    rest = [d for d in range(t.dim()) if d not in nd]
    # Reference: the reduced dims flattened (ascending order) into one.
    flat = t.permute(*rest, *nd).reshape(*[t.shape[d] for d in rest], -1)
    ref = getattr(torch, name)(flat, dim=-1)
    if keepdim:
        ref = ref.reshape([1 if i in nd else s for i, s in enumerate(t.shape)])
    check(_red_text(name, dims, keepdim), [(x, elt)], ref)


def test_argmax_single_dim_matches_torch_with_nan():
    x = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 5.0]], np.float32)
    for name in ("argmax", "argmin"):
        ref = getattr(torch, name)(to_torch(x, "f32"), dim=1)
        check(_red_text(name, [1], False), [(x, "f32")], ref)


@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("shape,dims,keepdim", RED_CASES)
@pytest.mark.parametrize("elt", FLOATS)
def test_var(elt, shape, dims, keepdim, correction):
    x = make(shape, elt, 12)
    ref = torch.var(to_torch(x, elt), dim=dims, correction=correction, keepdim=keepdim)
    check(_red_text("var", dims, keepdim, f"{{correction = {correction} : i64}}"), [(x, elt)], ref)


@pytest.mark.parametrize(
    "shape,dim", [((67, 71), 1), ((67, 71), 0), ((3, 7, 9), -1), ((63, 129), 1)]
)
@pytest.mark.parametrize("elt", FLOATS + ["i32", "i64"])
def test_cumsum(elt, shape, dim):
    x = make(shape, elt, 32)
    ref = torch.cumsum(to_torch(x, elt), dim=dim)  # ints: int64 in torch, cast back
    check(f"spyre.cumsum %a0 dim = {dim} : {{T0}} -> {{R}}", [(x, elt)], ref, elt)


# issue 19: sorting ops (more in tests/test_sort_ops.py: ties, NaN, k, every dtype)
@pytest.mark.parametrize("shape,dim", [((67, 71), 1), ((3, 7, 9), 0), ((63, 129), -1)])
@pytest.mark.parametrize("elt", FLOATS + ["i32", "i64"])
def test_sort_and_argsort(elt, shape, dim):
    x = make(shape, elt, 33)
    ref = torch.sort(to_torch(x, elt), dim=dim, descending=True, stable=True)
    check(f"spyre.sort %a0 dim = {dim} descending : {{T0}} -> {{R}}", [(x, elt)], ref.values, elt)
    check(
        f"spyre.argsort %a0 dim = {dim} k = 2 : {{T0}} -> {{R}}",
        [(x, elt)],
        torch.sort(to_torch(x, elt), dim=dim, stable=True).indices.narrow(dim, 0, 2),
        "i64",
    )


def test_var_default_correction_is_one():
    x = make((67, 71), "f32", 13)
    check(_red_text("var", [1], False), [(x, "f32")], torch.var(to_torch(x, "f32"), dim=1))


# ------------------------------------------------------------------ shape ops

SHAPE_ELTS = ["f32", "f16", "bf16", "i64", "i1"]


@pytest.mark.parametrize("elt", SHAPE_ELTS)
def test_reshape_transpose_broadcast(elt):
    x, y, z = make((67, 71), elt, 14), make((3, 7, 9), elt, 15), make((7, 1), elt, 16)
    check("spyre.reshape %a0 : {T0} -> {R}", [(x, elt)], to_torch(x, elt).reshape(71, 67))
    check("spyre.transpose %a0 perm = [2, 0, 1] : {T0} -> {R}", [(y, elt)],
          to_torch(y, elt).permute(2, 0, 1))  # fmt: skip
    check("spyre.broadcast_to %a0 : {T0} -> {R}", [(z, elt)], to_torch(z, elt).expand(3, 7, 9))


@pytest.mark.parametrize("elt", SHAPE_ELTS)
def test_restickify_is_the_identity(elt):
    # A layout change (here onto stick dim 0) moves bytes on the device only: the values
    # are torch's x itself, bit for bit.
    x = make((67, 71), elt, 18)
    lay = layout_sticked_on(x.shape, elt, 0)
    stick = (
        f"#spyre.stick<dim = {lay.stick_dim}, device = {list(lay.device_sizes)},"
        f" map = {list(lay.dim_map)}, strides = {list(lay.stride_map)},"
        f" pad = {padding_elements(lay)}>"
    )
    result = f"{ttype(x.shape, elt)[:-1]}, {stick}>"
    got = run_ir("spyre.restickify %a0 : {T0} -> {R}", [(x, elt)], result)
    want = from_torch(to_torch(x, elt).clone())
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("elt", SHAPE_ELTS)
def test_slice_with_steps(elt):
    x = make((63, 129), elt, 17)
    ref = to_torch(x, elt)[1:62:3, 5:129:7]
    check("spyre.slice %a0 starts = [1, 5] stops = [62, 129] steps = [3, 7] : {T0} -> {R}",
          [(x, elt)], ref)  # fmt: skip


@pytest.mark.parametrize("dim", [1, -1, 0])
@pytest.mark.parametrize("elt", SHAPE_ELTS)
def test_concat(elt, dim):
    shapes = (
        [(3, 7, 9), (3, 2, 9), (3, 5, 9)]
        if dim == 1
        else [(3, 7, 9), (3, 7, 4)]
        if dim == -1
        else [(3, 7, 9), (1, 7, 9)]
    )
    xs = [make(s, elt, 18 + i) for i, s in enumerate(shapes)]
    ref = torch.cat([to_torch(x, elt) for x in xs], dim=dim)
    types = ", ".join(f"{{T{i}}}" for i in range(len(xs)))
    names = ", ".join(f"%a{i}" for i in range(len(xs)))
    check(f"spyre.concat {names} dim = {dim} : {types} -> {{R}}", [(x, elt) for x in xs], ref)


@pytest.mark.parametrize("elt", SHAPE_ELTS)
def test_pad(elt):
    x = make((3, 7, 9), elt, 21)
    value = 1.0 if elt == "i1" else 2.0 if elt == "i64" else 2.5
    # torch's pad list runs from the last dim: (last_lo, last_hi, ..., first_lo, first_hi)
    ref = F.pad(to_torch(x, elt), (2, -3, 0, 4, 1, 0), value=value)
    check(f"spyre.pad %a0 low = [1, 0, 2] high = [0, 4, -3] value = {value} : {{T0}} -> {{R}}",
          [(x, elt)], ref)  # fmt: skip


@pytest.mark.parametrize("ishape", [(5,), (2, 3), ()])
@pytest.mark.parametrize("ielt", ["i32", "i64"])
@pytest.mark.parametrize("elt", ["f32", "f16", "bf16", "i64"])
def test_gather(elt, ielt, ishape):
    table = make((67, 71), elt, 22)
    idx = (
        np.random.default_rng(23)
        .integers(0, 67, size=ishape)
        .astype(np.int32 if ielt == "i32" else np.int64)
    )
    ref = to_torch(table, elt)[torch.from_numpy(np.array(idx, copy=True)).long()]
    check("spyre.gather %a0[%a1] : {T0}, {T1} -> {R}", [(table, elt), (idx, ielt)], ref)


def test_gather_out_of_range_is_an_error():
    table, idx = make((4, 3), "f32"), np.array([1, 4], np.int64)
    with pytest.raises(InterpreterError, match=r"test.mlir:2:\d+: 'spyre.gather': index 4"):
        run_ir("spyre.gather %a0[%a1] : {T0}, {T1} -> {R}", [(table, "f32"), (idx, "i64")],
               "tensor<2x3xf32>")  # fmt: skip


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16", "i64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter(elt, dim):
    dest = make((7, 9), elt, 24)
    size = dest.shape[dim]
    idx = np.array([2, -1, 0], np.int64)  # a negative position counts from the end
    src_shape = [3 if d == dim % 2 else n for d, n in enumerate(dest.shape)]
    src = make(tuple(src_shape), elt, 25)
    ref = to_torch(dest, elt).clone()
    where = [slice(None)] * 2
    where[dim % 2] = torch.from_numpy(idx % size)
    ref[tuple(where)] = to_torch(src, elt)
    check(f"spyre.scatter %a0[%a1], %a2 dim = {dim} : {{T0}}, {{T1}}, {{T2}} -> {{R}}",
          [(dest, elt), (idx, "i64"), (src, elt)], ref)  # fmt: skip


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16", "i64", "i32"])
@pytest.mark.parametrize("dim", [0, -1])
def test_scatter_add(elt, dim):
    """torch.index_add: a repeated position (2 and -5 on dim 0 of 7) sums its slices."""
    dest = make((7, 9), elt, 26)
    idx = np.array([2, -5, 6, 2], np.int64)
    src_shape = [4 if d == dim % 2 else n for d, n in enumerate(dest.shape)]
    src = make(tuple(src_shape), elt, 27)
    ref = to_torch(dest, elt).index_add(dim, torch.from_numpy(idx % dest.shape[dim]),
                                        to_torch(src, elt))  # fmt: skip
    check(f"spyre.scatter_add %a0[%a1], %a2 dim = {dim} : {{T0}}, {{T1}}, {{T2}} -> {{R}}",
          [(dest, elt), (idx, "i64"), (src, elt)], ref)  # fmt: skip


# ------------------------------------------------------------------ constants


@pytest.mark.parametrize(
    "elt,value,torch_value",
    [("f32", "1.5 : f64", 1.5), ("f16", "0.1 : f64", 0.1), ("bf16", "0.1 : f64", 0.1),
     ("i32", "7 : i64", 7), ("i64", "-3 : i64", -3), ("i1", "1 : i64", True)],
)  # fmt: skip
def test_full(elt, value, torch_value):
    ref = torch.full((3, 7, 9), torch_value, dtype=TORCH[elt])
    check(f"spyre.full {{value = {value}}} : {{R}}", [], ref)


@pytest.mark.parametrize("elt", ["f32", "f16", "bf16", "i32", "i64", "i1"])
def test_constant(elt):
    values = [[1, 0, 3], [-2, 5, 0]] if elt != "i1" else [[1, 0, 1], [0, 0, 1]]
    text = (
        str(values)
        if elt.startswith("i")
        else str(values).replace(",", ".0,").replace("]", ".0]").replace("].0", "]")
    )
    if elt == "i1":
        text = text.replace("1", "true").replace("0", "false")
    ref = torch.tensor(values, dtype=TORCH[elt])
    check(f"spyre.constant dense<{text}> : {{R}}", [], ref)
    splat = check(f"spyre.constant dense<{'true' if elt == 'i1' else 3}> : {{R}}", [],
                  torch.full((2, 3), 3, dtype=TORCH[elt]))  # fmt: skip
    assert splat.shape == (2, 3)


@pytest.mark.parametrize("elt", ["f32", "f16", "i32", "i64"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_iota(elt, dim):
    shape = (5, 7)
    n = shape[dim]
    line = (2 + 3 * torch.arange(n)).to(TORCH[elt])
    ref = line.reshape([-1 if i == dim % 2 else 1 for i in range(2)]).expand(*shape)
    check(f"spyre.iota {{dim = {dim} : i64, start = 2 : i64, step = 3 : i64}} : {{R}}", [], ref)


# ------------------------------------------------------------------ composites


@pytest.mark.parametrize(
    "shape,dim", [((67, 71), 1), ((67, 71), 0), ((3, 7, 9), -1), ((3, 7, 9), 1)]
)
@pytest.mark.parametrize("elt", FLOATS)
def test_softmax(elt, shape, dim):
    x = make(shape, elt, 24, 3.0)
    ref = torch.softmax(to_torch(x, elt), dim=dim)
    check(f"spyre.softmax %a0 dim = {dim} : {{T0}} -> {{R}}", [(x, elt)], ref)


@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("shape,ndim", [((67, 71), 1), ((3, 7, 9), 2), ((63, 129), 1)])
@pytest.mark.parametrize("elt", FLOATS)
def test_layer_norm(elt, shape, ndim, affine):
    x = make(shape, elt, 25, 2.0)
    norm = shape[-ndim:]
    w, b = make(norm, elt, 26), make(norm, elt, 27)
    inputs, text = [(x, elt)], "spyre.layer_norm %a0"
    if affine != "none":
        inputs.append((w, elt))
        text += " weight(%a1 : {T1})"
    if affine == "both":
        inputs.append((b, elt))
        text += " bias(%a2 : {T2})"
    text += f" {{eps = 1.0e-05 : f64, normalized_ndim = {ndim} : i64}} : {{T0}} -> {{R}}"
    ref = F.layer_norm(
        to_torch(x, elt), norm,
        to_torch(w, elt) if affine != "none" else None,
        to_torch(b, elt) if affine == "both" else None, eps=1e-5,
    )  # fmt: skip
    check(text, inputs, ref)


def test_layer_norm_bias_only():
    x, b = make((3, 7, 9), "f32", 28), make((9,), "f32", 29)
    ref = F.layer_norm(to_torch(x, "f32"), (9,), None, to_torch(b, "f32"), eps=1e-5)
    check("spyre.layer_norm %a0 bias(%a1 : {T1}) {eps = 1.0e-05 : f64} : {T0} -> {R}",
          [(x, "f32"), (b, "f32")], ref)  # fmt: skip


@pytest.mark.parametrize("weight", [False, True])
@pytest.mark.parametrize("shape", [(67, 71), (3, 7, 9)])
@pytest.mark.parametrize("elt", FLOATS)
def test_rms_norm(elt, shape, weight):
    x, w = make(shape, elt, 30), make(shape[-1:], elt, 31)
    ref = F.rms_norm(to_torch(x, elt), shape[-1:], to_torch(w, elt) if weight else None, eps=1e-6)
    text = "spyre.rms_norm %a0" + (" weight(%a1 : {T1})" if weight else "")
    text += " {eps = 1.0e-06 : f64} : {T0} -> {R}"
    check(text, [(x, elt), (w, elt)] if weight else [(x, elt)], ref)


# ------------------------------------------------------------------ driver

PROGRAM = """
func.func @helper(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = arith.constant dense<2.0> : tensor<4x8xf32>
  %y = spyre.mul %x, %c : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
func.func @main(%a: tensor<4x8xf32>, %idx: tensor<3xi64>) -> (tensor<4x8xf32>, tensor<3x8xf32>) {
  %0 = func.call @helper(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = spyre.gather %0[%idx] : tensor<4x8xf32>, tensor<3xi64> -> tensor<3x8xf32>
  func.return %0, %1 : tensor<4x8xf32>, tensor<3x8xf32>
}
"""


def test_call_constant_and_several_results():
    module = parse_and_verify(_CTX, PROGRAM, "prog.mlir")
    a = make((4, 8), "f32")
    y, g = run_module(module, [a, np.array([3, 0, 3])])
    np.testing.assert_array_equal(y, a * 2)
    np.testing.assert_array_equal(g, (a * 2)[[3, 0, 3]])
    (y2,) = run_module(module, [a], entry="helper")
    np.testing.assert_array_equal(y2, a * 2)


@pytest.mark.parametrize(
    "args,message",
    [
        ([np.zeros((4, 8), np.float32)], r"@main takes 2 arguments, got 1"),
        ([np.zeros((4, 7), np.float32), np.zeros(3, np.int64)],
         r"argument 0 \(%a\) of @main: expected tensor<4x8xf32> .* got shape \(4, 7\)"),
        ([np.zeros((4, 8), np.float64), np.zeros(3, np.int64)],
         r"argument 0 \(%a\).*dtype float32\), got shape \(4, 8\), dtype float64"),
        ([np.zeros((4, 8), np.float32), np.zeros(3, np.int32)],
         r"argument 1 \(%idx\) of @main: expected tensor<3xi64>"),
        ([np.zeros((4, 8), np.float32), [1, 2, 3]], r"argument 1 .*expected a numpy array"),
    ],
)  # fmt: skip
def test_argument_checks(args, message):
    module = parse_and_verify(_CTX, PROGRAM, "prog.mlir")
    with pytest.raises(InterpreterError, match=message):
        run_module(module, args)


def test_unknown_entry():
    module = parse_and_verify(_CTX, PROGRAM, "prog.mlir")
    with pytest.raises(InterpreterError, match=r"no function @nope .*@helper, @main"):
        run_module(module, [], entry="nope")


def test_bf16_arguments_are_rounded_and_results_stay_bf16():
    x = np.array([1.0 + 2**-10, 3.0], np.float32)  # not representable in bf16
    got = run_ir("spyre.add %a0, %a0 : {T0}, {T0} -> {R}", [(x, "bf16")], "tensor<2xbf16>")
    np.testing.assert_array_equal(got, [2.0, 6.0])


def test_every_op_has_an_implementation():
    assert not [op.name for op in SPYRE_OPS if op not in IMPLS]


@pytest.mark.parametrize("masked", [False, True])
def test_attention(masked):
    """spyre.attention (grouped-query: 4 query heads on 2 KV heads) against torch's SDPA."""
    q, k, v = (
        make((1, 4, 5, 16), "f32", 31),
        make((1, 2, 7, 16), "f32", 32),
        make((1, 2, 7, 16), "f32", 33),
    )
    keep = np.random.default_rng(34).random((1, 1, 5, 7)) < 0.6
    keep[..., 0] = True  # no row fully masked: torch gives NaN there, the op's flag decides
    tq, tk, tv = (torch.from_numpy(x) for x in (q, k, v))
    mask = torch.from_numpy(keep) if masked else None
    ref = torch.nn.functional.scaled_dot_product_attention(
        tq,
        tk.repeat_interleave(2, dim=1),
        tv.repeat_interleave(2, dim=1),
        attn_mask=mask,
        scale=0.25,
    )
    if masked:
        body = (
            "spyre.attention %a0, %a1, %a2 mask(%a3 : {T3}) scale = 0.25 : {T0}, {T1}, {T2} -> {R}"
        )
        inputs = [(q, "f32"), (k, "f32"), (v, "f32"), (keep, "i1")]
    else:
        body = "spyre.attention %a0, %a1, %a2 scale = 0.25 : {T0}, {T1}, {T2} -> {R}"
        inputs = [(q, "f32"), (k, "f32"), (v, "f32")]
    check(body, inputs, ref)


def test_every_op_is_tested_against_torch():
    source = Path(__file__).read_text()
    tabled = {*ARITH, *COMPARE, *UNARY, *LOGICAL, *BITWISE, *REDUCE, *ARG_REDUCE, "var"}
    untested = [
        op.name for op in SPYRE_OPS
        if op.name + " " not in source and op.name.removeprefix("spyre.") not in tabled
    ]  # fmt: skip
    assert not untested


def test_empty_tensors_follow_torch():
    x = np.zeros((0, 4), np.float32)
    t = to_torch(x, "f32")
    check(_red_text("mean", [0], False), [(x, "f32")], torch.mean(t, dim=0))
    check(_red_text("sum", [0], False), [(x, "f32")], torch.sum(t, dim=0))
    check("spyre.softmax %a0 dim = 1 : {T0} -> {R}", [(x, "f32")], torch.softmax(t, dim=1))
    with pytest.raises(InterpreterError, match="empty"):
        run_ir(_red_text("reduce_max", [0], False), [(x, "f32")], "tensor<4xf32>")
