"""The L2 (dataflow dialect) numpy interpreter: hand-written kernels against numpy and
the L1 interpreter, the vectorisation of tile ops over cores, and the debug checks."""

from __future__ import annotations

import re

import numpy as np
import pytest

from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.hardware import unit_for
from spyre_ir.interp import dataflow as L2
from spyre_ir.interp import index_arith as IA
from spyre_ir.interp import tensor as L1
from spyre_ir.interp.dataflow import InterpreterError
from spyre_ir.interp.halves import round_to_f16
from spyre_ir.interp.numerics import round_to_bf16
from spyre_ir.registry import make_context

_CTX = make_context()


def parse(text: str):
    return parse_and_verify(_CTX, text, "test.mlir")


def run(text: str, args, **kw) -> list[np.ndarray]:
    """Run @main of L2 IR with the race checks on (the tests' default)."""
    kw.setdefault("check_races", True)
    return L2.run_module(parse(text), args, **kw)


def run_l1(text: str, args) -> list[np.ndarray]:
    return L1.run_module(parse(text), args)


def dims(shape, elt: str) -> str:
    return "".join(f"{d}x" for d in shape) + elt


def tt(shape, elt: str) -> str:
    return f"tensor<{dims(shape, elt)}>"


def ddr(shape, elt: str) -> str:
    return f"!dataflow.ddr<{dims(shape, elt)}>"


def lx(shape, elt: str) -> str:
    return f"!dataflow.lx<{dims(shape, elt)}>"


def consts(*values: int) -> str:
    return "".join(f"    %c{v} = arith.constant {v} : index\n" for v in sorted(set(values)))


def compute(
    kind: str, ins, in_types, out: str, out_type: str, attrs: str = "", extra: str = ""
) -> str:
    attr = (
        f" {{attrs = {{{attrs}}}{extra}}}"
        if attrs
        else (f" {{{extra.lstrip(', ')}}}" if extra else "")
    )
    return (
        f'dataflow.compute "{kind}" on "{unit_for(kind)}" ({", ".join(ins)}) -> ({out})'
        f"{attr} : ({', '.join(in_types)}) -> {out_type}"
    )


def kernel_func(
    inputs: list[tuple[tuple[int, ...], str]],
    outputs: list[tuple[tuple[int, ...], str]],
    body: str,
    cores: int,
) -> str:
    """`func.func @main` around one kernel; block args %core, %in0.., %out0.."""
    ins = ", ".join(f"%x{i}: {tt(s, e)}" for i, (s, e) in enumerate(inputs))
    in_t = ", ".join(tt(s, e) for s, e in inputs)
    out_t = ", ".join(tt(s, e) for s, e in outputs)
    args = ", ".join(
        [f"%in{i}: {ddr(s, e)}" for i, (s, e) in enumerate(inputs)]
        + [f"%out{i}: {ddr(s, e)}" for i, (s, e) in enumerate(outputs)]
    )
    results = ", ".join(f"%r#{i}" for i in range(len(outputs))) if len(outputs) > 1 else "%r"
    count = f":{len(outputs)}" if len(outputs) > 1 else ""
    operands = ", ".join(f"%x{i}" for i in range(len(inputs)))
    return f"""
func.func @main({ins}) -> ({out_t}) {{
  %r{count} = dataflow.kernel @k cores({cores}) ({operands}) : ({in_t}) -> ({out_t}) {{
  ^bb0(%core: index, {args}):
{body}
    dataflow.end
  }}
  func.return {results} : {out_t}
}}
"""


def normal(shape, elt: str = "f16", seed: int = 0, scale: float = 1.0) -> np.ndarray:
    x = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
    if elt == "f16":
        return x.astype(np.float16)
    return round_to_bf16(x) if elt == "bf16" else x


def f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32)


# ---------------------------------------------------------------- f16 rounding


def test_round_to_f16_is_numpys_conversion_bit_for_bit():
    h = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    h = np.unique(h[np.isfinite(h)])
    mids = ((h[1:].astype(np.float64) + h[:-1]) / 2).astype(np.float32)
    special = np.float32([65504, 65519.996, 65520, -65520, 1e38, np.inf, -np.inf, np.nan,
                          0.0, -0.0, 1e-45, -1e-45, 2**-14, 2**-24, 2**-25, 3 * 2**-26])  # fmt: skip
    rng = np.random.default_rng(0)
    random_bits = rng.integers(0, 2**32, size=2_000_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([h, np.nextafter(h, np.inf), np.nextafter(h, -np.inf), mids,
                        np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf), special,
                        random_bits.view(np.float32)])  # fmt: skip
    with np.errstate(all="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    got = round_to_f16(x)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), x[~same][:5]
    y = x.copy()
    assert round_to_f16(y, overwrite=True) is y
    np.testing.assert_array_equal(y, got)


# ---------------------------------------------------------------- kernels


def elementwise_kernel(rows: int, cols: int, tile: int, cores: int) -> str:
    """out = x * y + exp(x) over row tiles: ceil(rows / tile) work items split into
    contiguous ranges over the cores; the last tile overhangs, idle cores run past the
    end (their loads read padding, their stores fall outside)."""
    items = -(-rows // tile)
    per_core = -(-items // cores)
    t = lx((tile, cols), "f16")
    m = ddr((rows, cols), "f16")
    body = (
        consts(0, 1, per_core, tile)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %b = dataflow.alloc_lx : {t}
    %e = dataflow.alloc_lx : {t}
    %first = arith.muli %core, %c{per_core} : index
    scf.for %i = %c0 to %c{per_core} step %c1 {{
      %item = arith.addi %first, %i : index
      %row = arith.muli %item, %c{tile} : index
      dataflow.load %in0[%row, %c0] into %a : {m}, {t}
      dataflow.load %in1[%row, %c0] into %b : {m}, {t}
      {compute("spyre.mul", ["%a", "%b"], [t, t], "%b", t)}
      {compute("spyre.exp", ["%a"], [t], "%e", t)}
      {compute("spyre.add", ["%b", "%e"], [t, t], "%e", t)}
      dataflow.store %e into %out0[%row, %c0] : {t}, {m}
    }}"""
    )
    shape = ((rows, cols), "f16")
    return kernel_func([shape, shape], [shape], body, cores)


L1_ELEMENTWISE = """
func.func @main(%x: tensor<67x256xf16>, %y: tensor<67x256xf16>) -> tensor<67x256xf16> {
  %m = spyre.mul %x, %y : tensor<67x256xf16>, tensor<67x256xf16> -> tensor<67x256xf16>
  %e = spyre.exp %x : tensor<67x256xf16> -> tensor<67x256xf16>
  %r = spyre.add %m, %e : tensor<67x256xf16>, tensor<67x256xf16> -> tensor<67x256xf16>
  func.return %r : tensor<67x256xf16>
}
"""


@pytest.mark.parametrize("tile, cores", [(2, 32), (3, 32), (8, 5), (67, 1), (128, 4)])
def test_elementwise_uneven_split_matches_l1_bit_for_bit(tile, cores):
    x, y = normal((67, 256), seed=1), normal((67, 256), seed=2)
    (got,) = run(elementwise_kernel(67, 256, tile, cores), [x, y])
    (want,) = run_l1(L1_ELEMENTWISE, [x, y])
    assert got.dtype == np.float16 and got.shape == (67, 256)
    np.testing.assert_array_equal(got, want)


def row_kernel(kind: str, attrs: str, rows: int, cols: int, tile: int, cores: int, elt: str) -> str:
    per_core = -(-(-(-rows // tile)) // cores)  # noqa: B002 - two nested ceiling divisions
    t, m = lx((tile, cols), elt), ddr((rows, cols), elt)
    body = (
        consts(0, 1, per_core, tile)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %b = dataflow.alloc_lx : {t}
    %first = arith.muli %core, %c{per_core} : index
    scf.for %i = %c0 to %c{per_core} step %c1 {{
      %item = arith.addi %first, %i : index
      %row = arith.muli %item, %c{tile} : index
      dataflow.load %in0[%row, %c0] into %a : {m}, {t}
      {compute(kind, ["%a"], [t], "%b", t, attrs)}
      dataflow.store %b into %out0[%row, %c0] : {t}, {m}
    }}"""
    )
    return kernel_func([((rows, cols), elt)], [((rows, cols), elt)], body, cores)


@pytest.mark.parametrize("elt", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("dim", [-1, 1])
def test_softmax_row_kernel(elt, dim):
    x = normal((100, 512), elt, seed=3, scale=3.0)
    (got,) = run(row_kernel("spyre.softmax", f"dim = {dim} : i64", 100, 512, 4, 32, elt), [x])
    l1 = f"""
func.func @main(%x: {tt((100, 512), elt)}) -> {tt((100, 512), elt)} {{
  %r = spyre.softmax %x dim = {dim} : {tt((100, 512), elt)} -> {tt((100, 512), elt)}
  func.return %r : {tt((100, 512), elt)}
}}"""
    (want,) = run_l1(l1, [x])
    np.testing.assert_array_equal(got, want)
    assert got.dtype == (np.float16 if elt == "f16" else np.float32)
    ref = np.exp(f32(x) - f32(x).max(-1, keepdims=True))
    np.testing.assert_allclose(f32(got), ref / ref.sum(-1, keepdims=True), atol=1e-2)


def matmul_kernel(
    m: int, k: int, n: int, tm: int, tn: int, tk: int, split: tuple[int, int, int],
    elt: str, acc: str,
) -> str:  # fmt: skip
    """C = A @ B; cores split (sm, sn, sk); each core loops over M and N tiles of its
    range and its K range, accumulating into an `acc` buffer; split-K partial sums are
    combined by a ring allreduce over groups of sk consecutive cores."""
    sm, sn, sk = split
    cores = sm * sn * sk
    mt, nt, kt = -(-m // tm), -(-n // tn), -(-k // tk)
    pm, pn, pk = -(-mt // sm), -(-nt // sn), -(-kt // sk)
    ta, tb, tc = lx((tm, tk), elt), lx((tk, tn), elt), lx((tm, tn), acc)
    ma, mb, mc = ddr((m, k), elt), ddr((k, n), elt), ddr((m, n), acc)
    allreduce = (
        f'dataflow.ring_allreduce %c {{kind = "add", group_size = {sk} : i64}} : {tc}'
        if sk > 1
        else ""
    )
    body = (
        consts(0, 1, pm, pn, pk, tm, tn, tk, sk, sn * sk)
        + f"""
    %a = dataflow.alloc_lx : {ta}
    %b = dataflow.alloc_lx : {tb}
    %ks = arith.remui %core, %c{sk} : index
    %mn = arith.divui %core, %c{sk} : index
    %ns = arith.remui %mn, %c{sn} : index
    %ms = arith.divui %core, %c{sn * sk} : index
    %m0 = arith.muli %ms, %c{pm} : index
    %n0 = arith.muli %ns, %c{pn} : index
    %k0 = arith.muli %ks, %c{pk} : index
    scf.for %i = %c0 to %c{pm} step %c1 {{
      %mi = arith.addi %m0, %i : index
      %row = arith.muli %mi, %c{tm} : index
      scf.for %j = %c0 to %c{pn} step %c1 {{
        %nj = arith.addi %n0, %j : index
        %col = arith.muli %nj, %c{tn} : index
        %c = dataflow.alloc_lx : {tc}
        scf.for %l = %c0 to %c{pk} step %c1 {{
          %kl = arith.addi %k0, %l : index
          %kk = arith.muli %kl, %c{tk} : index
          dataflow.load %in0[%row, %kk] into %a : {ma}, {ta}
          dataflow.load %in1[%kk, %col] into %b : {mb}, {tb}
          {compute("spyre.matmul", ["%a", "%b"], [ta, tb], "%c", tc, extra=", accumulate")}
        }}
        {allreduce}
        dataflow.store %c into %out0[%row, %col] : {tc}, {mc}
      }}
    }}"""
    )
    return kernel_func([((m, k), elt), ((k, n), elt)], [((m, n), acc)], body, cores)


@pytest.mark.parametrize(
    "shape, tiles, split",
    [
        ((64, 256, 128), (16, 64, 64), (4, 2, 1)),
        ((67, 200, 100), (16, 64, 64), (2, 2, 1)),  # every dim overhangs
        ((64, 256, 128), (16, 64, 64), (2, 1, 4)),  # split-K, allreduce over 4 cores
        ((50, 300, 70), (16, 64, 64), (2, 2, 2)),  # split-K with ragged K
    ],
)
@pytest.mark.parametrize("elt", ["f32", "f16"])
def test_matmul_kernel_with_k_loop_and_accumulate(shape, tiles, split, elt):
    m, k, n = shape
    a, b = normal((m, k), elt, seed=4), normal((k, n), elt, seed=5)
    (got,) = run(matmul_kernel(m, k, n, *tiles, split, elt, elt), [a, b])
    ref = f32(a).astype(np.float64) @ f32(b).astype(np.float64)
    # f16 keeps each partial sum in f16 (K / tk roundings of values ~ sqrt(K)).
    tol = 1e-4 if elt == "f32" else 2e-2
    np.testing.assert_allclose(f32(got), ref, rtol=tol, atol=tol * np.sqrt(k))


def test_f16_accumulate_rounds_each_partial_sum():
    """One K tile: exactly the L1 matmul. Four: the f16 accumulator rounds after each
    tile, computed here step by step."""
    a, b = normal((16, 256), seed=6), normal((256, 64), seed=7)
    (got,) = run(matmul_kernel(16, 256, 64, 16, 64, 64, (1, 1, 1), "f16", "f16"), [a, b])
    acc = np.zeros((16, 64), np.float16)
    for kk in range(0, 256, 64):
        partial = f32(a[:, kk : kk + 64]) @ f32(b[kk : kk + 64])
        acc = (f32(acc) + partial).astype(np.float16)
    np.testing.assert_allclose(f32(got), f32(acc), rtol=2e-3, atol=2e-2)
    assert (got == acc).mean() > 0.95
    whole = (f32(a) @ f32(b)).astype(np.float16)
    assert np.abs(f32(got) - f32(whole)).max() > 0  # not one rounding at the end


def test_allreduce_gives_every_core_of_a_group_the_result():
    cores, group = 8, 4
    t = lx((2, 64), "f32")
    m = ddr((cores * 2, 64), "f32")
    body = (
        consts(0, 2)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %row = arith.muli %core, %c2 : index
    dataflow.load %in0[%row, %c0] into %a : {m}, {t}
    dataflow.ring_allreduce %a {{kind = "max", group_size = {group} : i64}} : {t}
    dataflow.store %a into %out0[%row, %c0] : {t}, {m}"""
    )
    x = normal((cores * 2, 64), "f32", seed=8)
    (got,) = run(kernel_func([((16, 64), "f32")], [((16, 64), "f32")], body, cores), [x])
    per_core = x.reshape(2, group, 2, 64)
    want = np.broadcast_to(per_core.max(axis=1, keepdims=True), per_core.shape).reshape(16, 64)
    np.testing.assert_array_equal(got, want)


def test_f16_matmul_accumulates_into_an_f32_buffer():
    """The PE array accumulates in f32: f16 tiles into an f32 buffer lose nothing but
    f32 rounding."""
    m, k, n = 64, 256, 128
    a, b = normal((m, k), seed=21), normal((k, n), seed=22)
    (got,) = run(matmul_kernel(m, k, n, 16, 64, 64, (2, 2, 2), "f16", "f32"), [a, b])
    assert got.dtype == np.float32
    ref = f32(a).astype(np.float64) @ f32(b).astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)


def test_ring_groups_with_a_stride():
    """Groups of 2 cores 2 apart ({0, 2}, {1, 3}, {4, 6}, {5, 7}): an allreduce and an
    allgather (parts stacked in group order)."""
    cores = 8
    tp, tf = lx((2, 64), "f32"), lx((4, 64), "f32")
    body = (
        consts(0, 2, 4)
        + f"""
    %p = dataflow.alloc_lx : {tp}
    %s = dataflow.alloc_lx : {tp}
    %f = dataflow.alloc_lx : {tf}
    %row = arith.muli %core, %c2 : index
    dataflow.load %in0[%row, %c0] into %p : {ddr((16, 64), "f32")}, {tp}
    dataflow.load %in0[%row, %c0] into %s : {ddr((16, 64), "f32")}, {tp}
    dataflow.ring_allreduce %s {{kind = "add", group_size = 2 : i64, stride = 2 : i64}} : {tp}
    dataflow.ring_allgather %p into %f {{group_size = 2 : i64, stride = 2 : i64}} : {tp}, {tf}
    %frow = arith.muli %core, %c4 : index
    dataflow.store %s into %out0[%row, %c0] : {tp}, {ddr((16, 64), "f32")}
    dataflow.store %f into %out1[%frow, %c0] : {tf}, {ddr((32, 64), "f32")}"""
    )
    x = normal((16, 64), "f32", seed=23)
    text = kernel_func([((16, 64), "f32")], [((16, 64), "f32"), ((32, 64), "f32")], body, cores)
    summed, gathered = run(text, [x])
    parts = x.reshape(cores, 2, 64)
    partner = np.arange(cores) ^ 2  # the other core of the group
    np.testing.assert_array_equal(summed.reshape(cores, 2, 64), parts + parts[partner])
    first = np.minimum(np.arange(cores), partner)
    want = np.concatenate([parts[first], parts[first + 2]], axis=1)
    np.testing.assert_array_equal(gathered.reshape(cores, 4, 64), want)


def test_transposed_load_with_perm_and_padding():
    """out = W^T for W [70, 128] in f16: [64, 64] tiles of out are loaded from W's
    [64, 64] boxes through perm = [1, 0]; the boxes past W's 70 rows read padding and
    the stores drop what falls past out's 70 columns."""
    n, k = 70, 128
    t = lx((64, 64), "f16")
    mw, mo = ddr((n, k), "f16"), ddr((k, n), "f16")
    body = (
        consts(0, 2, 64)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %kq = arith.remui %core, %c2 : index
    %nq = arith.divui %core, %c2 : index
    %kk = arith.muli %kq, %c64 : index
    %nn = arith.muli %nq, %c64 : index
    dataflow.load %in0[%nn, %kk] into %a {{perm = array<i64: 1, 0>, pad = -1.0 : f64}} : {mw}, {t}
    dataflow.store %a into %out0[%kk, %nn] : {t}, {mo}
    %b = dataflow.alloc_lx : {t}
    dataflow.load %in0[%nn, %kk] into %b : {mw}, {t}
    dataflow.store %b into %out1[%nn, %kk] : {t}, {ddr((128, 128), "f16")}"""
    )
    w = normal((n, k), seed=9)
    text = kernel_func([((n, k), "f16")], [((k, n), "f16"), ((128, 128), "f16")], body, 4)
    got, padded = run(text, [w])
    np.testing.assert_array_equal(got, w.T)
    np.testing.assert_array_equal(padded[:n], w)
    assert (padded[n:] == 0).all()  # pad defaults to 0


def test_load_pads_and_store_drops_past_the_end_in_every_dim():
    """Per-core row offsets before the tensor's start and a column box overhanging it
    (an offset the same on every core): loads read the pad, stores drop those parts."""
    t = lx((4, 128), "f32")
    m = ddr((6, 64), "f32")
    mo = ddr((8, 128), "f32")
    body = (
        consts(0, 4)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %r = arith.muli %core, %c4 : index
    %lo = arith.subi %r, %c4 : index
    dataflow.load %in0[%lo, %c0] into %a {{pad = 7.0 : f64}} : {m}, {t}
    dataflow.store %a into %out0[%r, %c0] : {t}, {mo}
    dataflow.store %a into %out1[%lo, %c0] : {t}, {ddr((4, 64), "f32")}"""
    )
    x = normal((6, 64), "f32", seed=10)
    text = kernel_func([((6, 64), "f32")], [((8, 128), "f32"), ((4, 64), "f32")], body, 2)
    got, dropped = run(text, [x])
    want = np.full((8, 128), 7.0, np.float32)
    want[4:8, :64] = x[0:4]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(dropped, x[0:4])


def test_gather_kernel():
    """Embedding rows picked by indices loaded per core: 31 indices in tiles of 16 over
    4 cores; the last two cores read padding (index 0) and store past the end."""
    rows, width, count, cores, tile = 1000, 128, 31, 4, 16
    ti, tr = lx((tile,), "i64"), lx((tile, width), "f16")
    body = (
        consts(0, tile)
        + f"""
    %ix = dataflow.alloc_lx : {ti}
    %e = dataflow.alloc_lx : {tr}
    %at = arith.muli %core, %c{tile} : index
    dataflow.load %in1[%at] into %ix : {ddr((count,), "i64")}, {ti}
    dataflow.gather %in0[%ix] into %e : {ddr((rows, width), "f16")}, {ti}, {tr}
    dataflow.store %e into %out0[%at, %c0] : {tr}, {ddr((count, width), "f16")}"""
    )
    table = normal((rows, width), seed=11)
    idx = np.random.default_rng(12).integers(0, rows, count).astype(np.int64)
    text = kernel_func(
        [((rows, width), "f16"), ((count,), "i64")], [((count, width), "f16")], body, cores
    )
    (got,) = run(text, [table, idx])
    np.testing.assert_array_equal(got, table[idx])
    bad = idx.copy()
    bad[20] = rows
    message = r"'dataflow.gather' \(kernel @k\): core 1: index 1000 is out of range"
    with pytest.raises(InterpreterError, match=message):
        run(text, [table, bad])


@pytest.mark.parametrize("elt", ["i64", "f16"])
def test_iota_with_offsets(elt):
    """Each core makes its [4, 64] tiles of iota along dim 0 and along dim 1 of a
    [20, 128] tensor from the tile's offsets; the sixth row of tiles is past the end."""
    shape = (20, 128)
    t, m = lx((4, 64), elt), ddr(shape, elt)

    def iota(dim: int, buf: str) -> str:
        return (
            f'dataflow.compute "spyre.iota" on "pe" () -> ({buf}) offsets [%row, %col] '
            f"{{attrs = {{dim = {dim} : i64, start = -3 : i64, step = 5 : i64}}}} : () -> {t}"
        )

    body = (
        consts(0, 1, 2, 4, 64)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %b = dataflow.alloc_lx : {t}
    %rq = arith.divui %core, %c2 : index
    %cq = arith.remui %core, %c2 : index
    %r2 = arith.muli %rq, %c2 : index
    %col = arith.muli %cq, %c64 : index
    scf.for %i = %c0 to %c2 step %c1 {{
      %r3 = arith.addi %r2, %i : index
      %row = arith.muli %r3, %c4 : index
      {iota(0, "%a")}
      {iota(1, "%b")}
      dataflow.store %a into %out0[%row, %col] : {t}, {m}
      dataflow.store %b into %out1[%row, %col] : {t}, {m}
    }}"""
    )
    got = run(kernel_func([], [(shape, elt), (shape, elt)], body, 6), [])
    for dim, g in enumerate(got):
        l1 = f"""
func.func @main() -> {tt(shape, elt)} {{
  %r = spyre.iota {{dim = {dim} : i64, start = -3 : i64, step = 5 : i64}} : {tt(shape, elt)}
  func.return %r : {tt(shape, elt)}
}}"""
        (want,) = run_l1(l1, [])
        np.testing.assert_array_equal(g, want)


def test_double_buffered_loop_with_per_core_slot():
    """Prefetch tile i+1 into slot (core + i + 1) % 2 while computing on slot
    (core + i) % 2: the slot differs between neighbouring cores in every iteration."""
    cores, tile, tiles = 4, 2, 5
    rows = cores * tile * tiles
    t, db = lx((tile, 128), "f16"), lx((2, tile, 128), "f16")
    m = ddr((rows, 128), "f16")
    body = (
        consts(0, 1, 2, tile, tiles, tile * tiles)
        + f"""
    %buf = dataflow.alloc_lx : {db}
    %o = dataflow.alloc_lx : {t}
    %base = arith.muli %core, %c{tile * tiles} : index
    %s0 = arith.remui %core, %c2 : index
    %first = dataflow.slot %buf[%s0] : {db} -> {t}
    dataflow.load %in0[%base, %c0] into %first : {m}, {t}
    scf.for %i = %c0 to %c{tiles} step %c1 {{
      %k = arith.addi %core, %i : index
      %cur = arith.remui %k, %c2 : index
      %k1 = arith.addi %k, %c1 : index
      %nxt = arith.remui %k1, %c2 : index
      %i1 = arith.addi %i, %c1 : index
      %more = arith.cmpi ult, %i1, %c{tiles} : index
      %o1 = arith.muli %i1, %c{tile} : index
      %r1 = arith.addi %base, %o1 : index
      %big = arith.constant 1000000 : index
      %r1x = arith.select %more, %r1, %big : index
      %next = dataflow.slot %buf[%nxt] : {db} -> {t}
      dataflow.load %in0[%r1x, %c0] into %next : {m}, {t}
      %now = dataflow.slot %buf[%cur] : {db} -> {t}
      {compute("spyre.tanh", ["%now"], [t], "%o", t)}
      %o0 = arith.muli %i, %c{tile} : index
      %r0 = arith.addi %base, %o0 : index
      dataflow.store %o into %out0[%r0, %c0] : {t}, {m}
    }}"""
    )
    x = normal((rows, 128), seed=13)
    (got,) = run(kernel_func([((rows, 128), "f16")], [((rows, 128), "f16")], body, cores), [x])
    np.testing.assert_array_equal(got, np.tanh(f32(x)).astype(np.float16))


def test_slot_out_of_range_is_an_error():
    t, db = lx((2, 64), "f32"), lx((2, 2, 64), "f32")
    body = (
        consts(0, 1)
        + f"""
    %buf = dataflow.alloc_lx : {db}
    %s = dataflow.slot %buf[%core] : {db} -> {t}
    dataflow.store %s into %out0[%c0, %c0] : {t}, {ddr((2, 64), "f32")}"""
    )
    message = r"'dataflow.slot' \(kernel @k\): slot 2 \(core 2\) is out of range for 2 slots"
    with pytest.raises(InterpreterError, match=message):
        run(kernel_func([], [((2, 64), "f32")], body, 3), [])


def test_group_and_kernel_at_function_level():
    """A group runs with the L1 interpreter, its result feeds a kernel, a reshape view
    sits between them, and a func.call reaches another function."""
    t, m = lx((4, 64), "f32"), ddr((16, 64), "f32")
    text = f"""
func.func @main(%x: tensor<16x64xf32>, %y: tensor<1024xf32>) -> (tensor<16x64xf32>, tensor<16x64xf32>) {{
  %g = dataflow.group @g0 (%x) {{plan = #dataflow.rows_plan<row_dims = 1, cores = 4>}} : (tensor<16x64xf32>) -> tensor<16x64xf32> {{
  ^bb0(%a: tensor<16x64xf32>):
    %e = spyre.exp %a : tensor<16x64xf32> -> tensor<16x64xf32>
    %s = spyre.sum %e dims = [1] keepdim : tensor<16x64xf32> -> tensor<16x1xf32>
    %d = spyre.div %e, %s : tensor<16x64xf32>, tensor<16x1xf32> -> tensor<16x64xf32>
    dataflow.yield %d : tensor<16x64xf32>
  }}
  %yr = spyre.reshape %y : tensor<1024xf32> -> tensor<16x64xf32>
  %k = dataflow.kernel @k0 cores(4) (%g, %yr) : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32> {{
  ^bb0(%core: index, %in0: {m}, %in1: {m}, %out0: {m}):
    %c4 = arith.constant 4 : index
    %c0 = arith.constant 0 : index
    %row = arith.muli %core, %c4 : index
    %a = dataflow.alloc_lx : {t}
    %b = dataflow.alloc_lx : {t}
    dataflow.load %in0[%row, %c0] into %a : {m}, {t}
    dataflow.load %in1[%row, %c0] into %b : {m}, {t}
    {compute("spyre.mul", ["%a", "%b"], [t, t], "%a", t)}
    dataflow.store %a into %out0[%row, %c0] : {t}, {m}
    dataflow.end
  }}
  %c = func.call @twice(%k) : (tensor<16x64xf32>) -> tensor<16x64xf32>
  func.return %k, %c : tensor<16x64xf32>, tensor<16x64xf32>
}}
func.func @twice(%v: tensor<16x64xf32>) -> tensor<16x64xf32> {{
  %r = spyre.add %v, %v : tensor<16x64xf32>, tensor<16x64xf32> -> tensor<16x64xf32>
  func.return %r : tensor<16x64xf32>
}}
"""
    x, y = normal((16, 64), "f32", seed=14), normal((1024,), "f32", seed=15)
    k, c = run(text, [x, y])
    e = np.exp(x)
    want = (e / e.sum(1, keepdims=True, dtype=np.float32)) * y.reshape(16, 64)
    np.testing.assert_allclose(k, want, rtol=1e-6)
    np.testing.assert_array_equal(c, k + k)
    assert k.flags.c_contiguous and c.flags.c_contiguous


def test_bf16_kernel_keeps_bf16_values():
    x, y = normal((67, 256), "bf16", seed=16), normal((67, 256), "bf16", seed=17)
    text = elementwise_kernel(67, 256, 8, 32).replace("f16", "bf16")
    (got,) = run(text, [x, y])
    (want,) = run_l1(L1_ELEMENTWISE.replace("f16", "bf16"), [x, y])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(round_to_bf16(got), got)


# ---------------------------------------------------------------- tile ops, op by op

# (kind, properties, inputs [(tile shape, elt, per-core?)], output (tile shape, elt), exact)
# A per-core input is a [cores * rows, ...] tensor of which each core loads its own
# rows; a shared one is loaded whole by every core. The reference runs the L1 op on
# each core's tiles.
TILE_CASES = [
    ("spyre.add", "", [((4, 128), "f16", True), ((128,), "f16", False)], ((4, 128), "f16")),
    ("spyre.sub", "", [((4, 128), "f32", True), ((4, 128), "f32", True)], ((4, 128), "f32")),
    ("spyre.div", "", [((4, 128), "bf16", True), ((4, 1), "bf16", True)], ((4, 128), "bf16")),
    ("spyre.pow", "", [((4, 128), "f16", True), ((1,), "f16", False)], ((4, 128), "f16")),
    ("spyre.max", "", [((4, 128), "f16", True), ((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.lt", "", [((4, 128), "f16", True), ((128,), "f16", False)], ((4, 128), "i1")),
    ("spyre.select", "", [((4, 128), "i1", True), ((4, 128), "f16", True), ((128,), "f16", False)], ((4, 128), "f16")),
    ("spyre.exp", "", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.erf", "", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.log1p", "", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.rsqrt", "", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.round", "", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.bitwise_and", "", [((4, 128), "i32", True), ((128,), "i32", False)], ((4, 128), "i32")),
    ("spyre.bitwise_xor", "", [((4, 128), "i64", True), ((4, 128), "i64", True)], ((4, 128), "i64")),
    ("spyre.shift_left", "", [((4, 128), "i32", True), ((128,), "i32", False)], ((4, 128), "i32")),
    ("spyre.shift_right", "", [((4, 128), "i64", True), ((4, 1), "i64", True)], ((4, 128), "i64")),
    ("spyre.bitwise_not", "", [((4, 128), "i32", True)], ((4, 128), "i32")),
    ("spyre.gelu", "", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.gelu", 'approximate = "tanh"', [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.silu", "", [((4, 128), "bf16", True)], ((4, 128), "bf16")),
    ("spyre.relu", "", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.clamp", "min = -0.5 : f64, max = 0.75 : f64", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.cast", "", [((4, 128), "f16", True)], ((4, 128), "f32")),
    ("spyre.cast", "", [((4, 128), "f32", True)], ((4, 128), "f16")),
    ("spyre.cast", "", [((4, 128), "f16", True)], ((4, 128), "i32")),
    ("spyre.matmul", "", [((4, 64), "f16", True), ((64, 64), "f16", False)], ((4, 64), "f16")),
    ("spyre.matmul", "", [((2, 4, 64), "f32", True), ((64, 64), "f32", False)], ((2, 4, 64), "f32")),
    ("spyre.matmul", "", [((32, 64), "f32", True), ((64,), "f32", False)], ((32,), "f32")),
    ("spyre.sum", "dims = array<i64: 1>, keepdim", [((4, 128), "f16", True)], ((4, 1), "f16")),
    ("spyre.sum", "dims = array<i64: -1>", [((32, 64), "i32", True)], ((32,), "i32")),
    ("spyre.mean", "dims = array<i64: 0, 1>, keepdim", [((4, 128), "f16", True)], ((1, 1), "f16")),
    ("spyre.reduce_max", "dims = array<i64: 0>", [((4, 128), "f16", True)], ((128,), "f16")),
    ("spyre.argmax", "dims = array<i64: 1>", [((16, 128), "f16", True)], ((16,), "i64")),
    ("spyre.var", "dims = array<i64: 1>, keepdim", [((4, 128), "f16", True)], ((4, 1), "f16")),
    ("spyre.cumsum", "dim = 0 : i64", [((4, 128), "f16", True)], ((4, 128), "f16")),
    ("spyre.cumsum", "dim = -1 : i64", [((4, 128), "f32", True)], ((4, 128), "f32")),
    ("spyre.softmax", "dim = 0 : i64", [((4, 128), "f16", True)], ((4, 128), "f16")),
    # issue 19: sorting (tests/test_sort_ops.py has the rest)
    ("spyre.sort", "dim = -1 : i64, k = 5 : i64, descending", [((4, 128), "f16", True)], ((4, 5), "f16")),
    ("spyre.argsort", "dim = 0 : i64", [((4, 128), "i32", True)], ((4, 128), "i64")),
    ("spyre.layer_norm", "eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1>",
     [((4, 128), "f16", True), ((128,), "f16", False), ((128,), "f16", False)], ((4, 128), "f16")),
    ("spyre.rms_norm", "eps = 1.0e-06 : f64", [((4, 128), "bf16", True), ((128,), "bf16", False)], ((4, 128), "bf16")),
    ("spyre.transpose", "perm = array<i64: 1, 0>", [((4, 128), "f16", True)], ((128, 4), "f16")),
    ("spyre.slice", "starts = array<i64: 1, 0>, stops = array<i64: 4, 128>, steps = array<i64: 2, 2>",
     [((4, 128), "f16", True)], ((2, 64), "f16")),
    ("spyre.pad", "low = array<i64: 1, 0>, high = array<i64: 0, 64>, value = 0.1 : f64", [((4, 64), "f16", True)], ((5, 128), "f16")),
    ("spyre.concat", "dim = 1 : i64", [((4, 64), "f16", True), ((4, 64), "f16", True)], ((4, 128), "f16")),
    ("spyre.broadcast_to", "", [((128,), "f16", False)], ((4, 128), "f16")),
    ("spyre.broadcast_to", "", [((4, 1), "f16", True)], ((4, 128), "f16")),
    ("spyre.reshape", "", [((4, 128), "f16", True)], ((4, 2, 64), "f16")),
    ("spyre.gather", "", [((16, 64), "f16", True), ((16,), "i64", True)], ((16, 64), "f16")),
    ("spyre.constant", "value = dense<1.5> : tensor<4x128xf16>", [], ((4, 128), "f16")),
    ("spyre.full", "value = 1.1 : f64", [], ((4, 128), "f16")),
    ("spyre.iota", "dim = 1 : i64, start = 2 : i64, step = 3 : i64", [], ((4, 128), "f32")),
]  # fmt: skip


def tile_case_data(case, cores: int) -> list[np.ndarray]:
    kind, _, inputs, _ = case
    arrays = []
    for i, (shape, elt, per_core) in enumerate(inputs):
        full = (cores * shape[0], *shape[1:]) if per_core else shape
        rng = np.random.default_rng(100 + i)
        if elt == "i1":
            arrays.append(rng.random(full) < 0.5)
        elif kind == "spyre.gather" and elt == "i64":
            arrays.append(rng.integers(0, inputs[0][0][0], full).astype(np.int64))
        elif elt in ("i32", "i64"):
            arrays.append(
                rng.integers(-50, 50, full).astype(np.int32 if elt == "i32" else np.int64)
            )
        else:
            arrays.append(normal(full, elt, seed=100 + i))
    return arrays


def tile_case_kernel(case, cores: int) -> str:
    kind, props, inputs, (out_shape, out_elt) = case
    out_full = (cores * out_shape[0], *out_shape[1:])
    lines = [consts(0, *(s[0] for s, _, _ in inputs), out_shape[0])]
    names, types = [], []
    for i, (shape, elt, per_core) in enumerate(inputs):
        full = (cores * shape[0], *shape[1:]) if per_core else shape
        t = lx(shape, elt)
        start = f"%o{i}" if per_core else "%c0"
        if per_core:
            lines.append(f"    %o{i} = arith.muli %core, %c{shape[0]} : index\n")
        offsets = ", ".join([start] + ["%c0"] * (len(shape) - 1))
        lines.append(f"    %t{i} = dataflow.alloc_lx : {t}\n")
        lines.append(f"    dataflow.load %in{i}[{offsets}] into %t{i} : {ddr(full, elt)}, {t}\n")
        names.append(f"%t{i}")
        types.append(t)
    to = lx(out_shape, out_elt)
    lines.append(f"    %res = dataflow.alloc_lx : {to}\n")
    lines.append("    " + compute(kind, names, types, "%res", to, props) + "\n")
    lines.append(f"    %oo = arith.muli %core, %c{out_shape[0]} : index\n")
    offsets = ", ".join(["%oo"] + ["%c0"] * (len(out_shape) - 1))
    lines.append(f"    dataflow.store %res into %out0[{offsets}] : {to}, {ddr(out_full, out_elt)}")
    ins = [((cores * s[0], *s[1:]) if p else s, e) for s, e, p in inputs]
    return kernel_func(ins, [(out_full, out_elt)], "".join(lines), cores)


def tile_case_reference(case, cores: int, arrays: list[np.ndarray]) -> np.ndarray:
    kind, props, inputs, (out_shape, out_elt) = case
    params = ", ".join(f"%a{i}: {tt(s, e)}" for i, (s, e, _) in enumerate(inputs))
    in_types = ", ".join(tt(s, e) for s, e, _ in inputs)
    operands = ", ".join(f"%a{i}" for i in range(len(inputs)))
    prop = f" <{{{props}}}>" if props else ""
    text = f"""
func.func @main({params}) -> {tt(out_shape, out_elt)} {{
  %r = "{kind}"({operands}){prop} : ({in_types}) -> {tt(out_shape, out_elt)}
  func.return %r : {tt(out_shape, out_elt)}
}}"""
    module = parse(text)
    results = []
    for c in range(cores):
        args = [
            a[c * s[0] : (c + 1) * s[0]] if per_core else a
            for a, (s, _, per_core) in zip(arrays, inputs)
        ]
        results.append(L1.run_module(module, args)[0])
    return np.concatenate(results, axis=0)


@pytest.mark.parametrize("case", TILE_CASES, ids=lambda c: f"{c[0][6:]}-{c[3][1]}")
def test_tile_op_matches_l1_on_each_core(case):
    """`dataflow.compute` over [cores, ...] buffers equals the L1 op run core by core,
    bit for bit (matmul: to float32 rounding; BLAS may block the batch differently)."""
    cores = 3
    arrays = tile_case_data(case, cores)
    (got,) = run(tile_case_kernel(case, cores), arrays)
    want = tile_case_reference(case, cores, arrays)
    assert got.dtype == want.dtype and got.shape == want.shape
    if case[0] == "spyre.matmul":
        rtol = 1e-3 if case[3][1] == "f16" else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol)
    else:
        np.testing.assert_array_equal(got, want)


def test_every_spyre_op_is_covered_by_a_tile_case_or_listed():
    from spyre_ir.dialects.spyre import SPYRE_OPS

    covered = {case[0] for case in TILE_CASES}
    # Same implementation family as a covered op (elementwise via one helper each).
    family = {"spyre.mul", "spyre.min", "spyre.eq", "spyre.ne", "spyre.le", "spyre.gt",
              "spyre.ge", "spyre.logical_and", "spyre.logical_or", "spyre.logical_xor",
              "spyre.neg", "spyre.abs", "spyre.sign", "spyre.log", "spyre.sqrt",
              "spyre.reciprocal", "spyre.tanh", "spyre.sigmoid", "spyre.sin", "spyre.cos",
              "spyre.floor", "spyre.ceil", "spyre.logical_not", "spyre.reduce_min",
              "spyre.argmin", "spyre.bitwise_or"}  # fmt: skip
    # Not a tile op: its result type must carry a stick layout, which LX buffers do not.
    family.add("spyre.restickify")
    # Not a tile op either: spyre-lower-scatter rewrites it into covered ops before tiling
    # (tests/test_kv_cache.py runs that form on L2 and the simulator against L1).
    family.add("spyre.scatter")
    family.add("spyre.scatter_add")  # likewise (tests/test_moe.py: L2 against L1)
    # Tiled by its own emitter (passes/tile_attention.py), not by a tile case:
    # tests/test_fuse_attention.py runs it on L2 and the simulator against L1.
    family.add("spyre.attention")
    missing = {op.name for op in SPYRE_OPS} - covered - family
    assert not missing


@pytest.mark.parametrize(
    "kind, combine",
    [("spyre.sum", np.add), ("spyre.reduce_max", np.maximum), ("spyre.reduce_min", np.minimum)],
)
def test_reductions_accumulate_over_column_tiles(kind, combine):
    """Row reductions of [8, 512] over 4 column tiles, accumulated in an f16 buffer."""
    cores, rows, cols, tc = 2, 8, 512, 128
    t, r = lx((4, tc), "f16"), lx((4, 1), "f16")
    body = (
        consts(0, 1, 4, tc, cols // tc)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %acc = dataflow.alloc_lx : {r}
    %row = arith.muli %core, %c4 : index
    dataflow.load %in0[%row, %c0] into %a : {ddr((rows, cols), "f16")}, {t}
    {compute(kind, ["%a"], [t], "%acc", r, "dims = array<i64: 1>, keepdim")}
    scf.for %j = %c1 to %c{cols // tc} step %c1 {{
      %col = arith.muli %j, %c{tc} : index
      dataflow.load %in0[%row, %col] into %a : {ddr((rows, cols), "f16")}, {t}
      {compute(kind, ["%a"], [t], "%acc", r, "dims = array<i64: 1>, keepdim", ", accumulate")}
    }}
    dataflow.store %acc into %out0[%row, %c0] : {r}, {ddr((rows, 1), "f16")}"""
    )
    x = normal((rows, cols), seed=18)
    (got,) = run(kernel_func([((rows, cols), "f16")], [((rows, 1), "f16")], body, cores), [x])
    parts = f32(x).reshape(rows, cols // tc, tc)
    reduce = {"spyre.sum": np.sum, "spyre.reduce_max": np.max, "spyre.reduce_min": np.min}[kind]
    acc = reduce(parts[:, 0], axis=1, keepdims=True).astype(np.float16)
    for j in range(1, cols // tc):
        acc = combine(f32(acc), reduce(parts[:, j], axis=1, keepdims=True)).astype(np.float16)
    np.testing.assert_allclose(f32(got), f32(acc), rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------- index arithmetic


def test_index_arithmetic_is_vectorised_per_core():
    """Signed/unsigned division and remainders, min/max, cmpi/select, index_cast, a
    loop-carried index and a uniform scf.if; each value is written out through an
    iota tile whose offset is the value."""
    cores = 8
    t, m = lx((1, 1), "i64"), ddr((cores, 1), "i64")
    body = (
        consts(0, 1, 2, 3, 5)
        + """
    %neg = arith.subi %core, %c5 : index
    %q = arith.divsi %neg, %c2 : index
    %r = arith.remsi %neg, %c3 : index
    %qu = arith.divui %core, %c3 : index
    %mn = arith.minsi %neg, %c1 : index
    %mx = arith.maxui %neg, %c1 : index
    %lt = arith.cmpi slt, %neg, %c0 : index
    %sel = arith.select %lt, %q, %r : index
    %i32 = arith.index_cast %neg : index to i32
    %back = arith.index_cast %i32 : i32 to index
    %sum = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %core) -> (index) {
      %n = arith.addi %acc, %i : index
      scf.yield %n : index
    }
    %true = arith.cmpi eq, %c1, %c1 : index
    %picked = scf.if %true -> (index) {
      scf.yield %sum : index
    } else {
      scf.yield %c0 : index
    }
"""
    )
    values = ["%q", "%r", "%qu", "%mn", "%mx", "%sel", "%back", "%picked"]
    for j, v in enumerate(values):
        body += (
            f"    %t{j} = dataflow.alloc_lx : {t}\n"
            f'    dataflow.compute "spyre.iota" on "pe" () -> (%t{j}) offsets [%c0, {v}] '
            f"{{attrs = {{dim = 1 : i64, start = 0 : i64, step = 1 : i64}}}} : () -> {t}\n"
            f"    dataflow.store %t{j} into %out{j}[%core, %c0] : {t}, {m}\n"
        )
    text = kernel_func([], [((cores, 1), "i64")] * len(values), body, cores)
    got = np.concatenate(run(text, []), axis=1)
    core = np.arange(cores)
    neg = core - 5
    q = np.trunc(neg / 2).astype(np.int64)
    r = np.fmod(neg, 3)
    want = np.stack(
        [q, r, core // 3, np.minimum(neg, 1), np.where(neg < 0, neg, np.maximum(neg, 1)),
         np.where(neg < 0, q, r), neg, core + 3],
        axis=1,
    )  # fmt: skip
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- errors and checks


def loop_kernel(bound: str) -> str:
    t, m = lx((1, 64), "f32"), ddr((4, 64), "f32")
    body = (
        consts(0, 1, 2)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %ub = {bound}
    scf.for %i = %c0 to %ub step %c1 {{
      dataflow.store %a into %out0[%core, %c0] : {t}, {m}
    }}"""
    )
    return kernel_func([], [((4, 64), "f32")], body, 4)


def test_non_uniform_loop_bound_is_a_clear_error():
    with pytest.raises(InterpreterError) as info:
        run(loop_kernel("arith.addi %core, %c1 : index"), [])
    message = str(info.value)
    assert re.match(r"test.mlir:\d+:\d+: 'scf.for' \(kernel @k\): ", message)
    assert "upper bound differs across cores (core 0: 1, core 1: 2)" in message
    assert "the same on every core" in message
    (got,) = run(loop_kernel("arith.addi %c1, %c1 : index"), [])
    np.testing.assert_array_equal(got, np.zeros((4, 64), np.float32))


def test_non_uniform_if_condition_is_an_error():
    t, m = lx((1, 64), "f32"), ddr((4, 64), "f32")
    body = (
        consts(0, 1)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %p = arith.cmpi eq, %core, %c1 : index
    scf.if %p {{
      dataflow.store %a into %out0[%core, %c0] : {t}, {m}
    }}"""
    )
    message = r"'scf.if' \(kernel @k\): the scf.if condition differs across cores"
    with pytest.raises(InterpreterError, match=message):
        run(kernel_func([], [((4, 64), "f32")], body, 4), [])


def iota_columns(buf: str, first: str, t: str) -> str:
    """Fill a tile with first + column index (first: an index value, per core)."""
    return (
        f'dataflow.compute "spyre.iota" on "pe" () -> ({buf}) offsets [%c0, {first}] '
        f"{{attrs = {{dim = 1 : i64, start = 0 : i64, step = 1 : i64}}}} : () -> {t}"
    )


def race_kernel(rows_per_core: int, value_from_core: bool) -> str:
    """Every core stores a [2, 64] tile at row core * rows_per_core: with 1 row per
    core, neighbours overlap by a row."""
    t, m = lx((2, 64), "f32"), ddr((9, 64), "f32")
    fill = "%cf" if value_from_core else "%c0"
    body = (
        consts(0, rows_per_core)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %cf = arith.addi %core, %c0 : index
    {iota_columns("%a", fill, t)}
    %row = arith.muli %core, %c{rows_per_core} : index
    dataflow.store %a into %out0[%row, %c0] : {t}, {m}"""
    )
    return kernel_func([], [((9, 64), "f32")], body, 8)


def test_store_race_is_detected():
    with pytest.raises(InterpreterError) as info:
        run(race_kernel(1, value_from_core=True), [])
    assert (
        "store race on element [1, 0] of output 0 of @k (%out0): core 0 writes 0.0 here, "
        "core 1 wrote 1.0 in this store"
    ) in str(info.value)
    # Without the check the last core wins; equal values are no race.
    (got,) = run(race_kernel(1, value_from_core=True), [], check_races=False)
    np.testing.assert_array_equal(got[:, 0], np.arange(9) - (np.arange(9) == 8))
    (same,) = run(race_kernel(1, value_from_core=False), [])
    np.testing.assert_array_equal(same, np.broadcast_to(np.arange(64.0), (9, 64)))


def test_race_between_stores_of_different_iterations_is_detected():
    t, m = lx((1, 64), "f32"), ddr((4, 64), "f32")
    body = (
        consts(0, 1, 2)
        + f"""
    %a = dataflow.alloc_lx : {t}
    {iota_columns("%a", "%core", t)}
    scf.for %i = %c0 to %c2 step %c1 {{
      %row = arith.addi %core, %i : index
      dataflow.store %a into %out0[%row, %c0] : {t}, {m}
    }}"""
    )
    message = (
        r"store race on element \[1, 0\] of output 0 of @k \(%out0\): core 0 writes 0.0 here, "
        r"core 1 wrote 1.0 earlier"
    )
    with pytest.raises(InterpreterError, match=message):
        run(kernel_func([], [((4, 64), "f32")], body, 4), [])


def test_unwritten_output_is_reported_in_check_mode():
    t, m = lx((1, 64), "f32"), ddr((5, 64), "f32")
    body = (
        consts(0)
        + f"""
    %a = dataflow.alloc_lx : {t}
    dataflow.store %a into %out0[%core, %c0] : {t}, {m}"""
    )
    text = kernel_func([], [((5, 64), "f32")], body, 4)
    message = (
        r"'dataflow.kernel': 64 of 320 elements of output 0 of @k \(%out0\) are never "
        r"written \(the first is \[4, 0\]\)"
    )
    with pytest.raises(InterpreterError, match=message):
        run(text, [])
    (got,) = run(text, [], check_races=False)
    np.testing.assert_array_equal(got, np.zeros((5, 64), np.float32))


def test_store_into_an_input_is_an_error():
    t, m = lx((1, 64), "f32"), ddr((4, 64), "f32")
    body = (
        consts(0)
        + f"""
    %a = dataflow.alloc_lx : {t}
    dataflow.store %a into %in0[%core, %c0] : {t}, {m}
    dataflow.store %a into %out0[%core, %c0] : {t}, {m}"""
    )
    with pytest.raises(
        InterpreterError, match=r"stores into input 0 of @k \(%in0\), which is read-only"
    ):
        run(
            kernel_func([((4, 64), "f32")], [((4, 64), "f32")], body, 4),
            [np.zeros((4, 64), np.float32)],
        )


@pytest.mark.parametrize(
    "args, message",
    [
        ([np.zeros((67, 256), np.float16)], "takes 2 arguments, got 1"),
        (
            [np.zeros((67, 256), np.float32)] * 2,
            r"argument 0 \(%x0\) of @main: expected tensor<67x256xf16>",
        ),
    ],
)
def test_argument_checks_are_the_l1_ones(args, message):
    with pytest.raises(InterpreterError, match=message):
        run(elementwise_kernel(67, 256, 8, 4), args)


def test_division_by_zero_in_index_arithmetic():
    body = (
        consts(0)
        + f"""
    %q = arith.divui %c0, %core : index
    %a = dataflow.alloc_lx : {lx((1, 64), "f32")}
    dataflow.store %a into %out0[%q, %c0] : {lx((1, 64), "f32")}, {ddr((1, 64), "f32")}"""
    )
    with pytest.raises(
        InterpreterError, match=r"'arith.divui' \(kernel @k\): integer division by zero"
    ):
        run(kernel_func([], [((1, 64), "f32")], body, 2), [])


# ---------------------------------------------------------------- performance


def busy_kernel(rows: int, cores: int, tiles: int) -> str:
    """Per iteration: 2 index ops, 2 loads, 6 tile ops, 1 store, on [16, 1024] f16."""
    t, m = lx((16, 1024), "f16"), ddr((rows, 1024), "f16")
    ops = [("add", "%a", "%b", "%t1"), ("mul", "%t1", "%a", "%t2"), ("exp", "%t2", None, "%t1"),
           ("sub", "%t1", "%b", "%t2"), ("relu", "%t2", None, "%t1"), ("max", "%t1", "%a", "%t2")]  # fmt: skip
    lines = "".join(
        "      "
        + compute(f"spyre.{k}", [x for x in (u, v) if x], [t] * (2 if v else 1), o, t)
        + "\n"
        for k, u, v, o in ops
    )
    body = (
        consts(0, 1, 16, tiles)
        + f"""
    %a = dataflow.alloc_lx : {t}
    %b = dataflow.alloc_lx : {t}
    %t1 = dataflow.alloc_lx : {t}
    %t2 = dataflow.alloc_lx : {t}
    %base = arith.muli %core, %c{tiles} : index
    scf.for %i = %c0 to %c{tiles} step %c1 {{
      %w = arith.addi %base, %i : index
      %row = arith.muli %w, %c16 : index
      dataflow.load %in0[%row, %c0] into %a : {m}, {t}
      dataflow.load %in1[%row, %c0] into %b : {m}, {t}
{lines}      dataflow.store %t2 into %out0[%row, %c0] : {t}, {m}
    }}"""
    )
    shape = ((rows, 1024), "f16")
    return kernel_func([shape, shape], [shape], body, cores)


@pytest.mark.slow
@pytest.mark.parametrize("check_races", [False, True])
def test_thirty_two_cores_sixty_four_tiles_match_numpy(check_races):
    """32 cores x 64 iterations x 11 ops on [16, 1024] f16 tiles (two [32768, 1024]
    inputs), with and without race checks: every sampled element as numpy computes it
    in f16. (How fast the interpreter runs is bench/kernel_bench.py's business.)"""
    rows = 32 * 64 * 16
    module = parse(busy_kernel(rows, 32, 64))
    x, y = normal((rows, 1024), seed=19), normal((rows, 1024), seed=20)
    (got,) = L2.run_module(module, [x, y], check_races=check_races)
    xs, ys = f32(x[::997]), f32(y[::997])
    h = lambda v: f32(v.astype(np.float16))  # noqa: E731
    with np.errstate(over="ignore"):  # exp overflows f16 here and there
        t1 = h(xs + ys)
        t2 = h(t1 * xs)
        want = np.maximum(np.maximum(h(h(np.exp(t2)) - ys), 0), xs).astype(np.float16)
    np.testing.assert_array_equal(got[::997], want)


def test_rank0_values_cross_kernels_at_every_level() -> None:
    # A whole-tensor reduction leaves a rank-0 tensor in LPDDR5 for the next kernel; its
    # store must land (a rank-0 numpy index copies the element out instead of viewing it).
    from spyre_ir.pipelines import lower_to_dataflow, lower_to_units
    from spyre_ir.sim.engine import simulate

    text = """
    func.func @main(%a: tensor<8x16xf32>) -> tensor<1xf32> {
      %s = spyre.sum %a dims = [0, 1] : tensor<8x16xf32> -> tensor<f32>
      %r = spyre.sqrt %s : tensor<f32> -> tensor<f32>
      %v = spyre.reshape %r : tensor<f32> -> tensor<1xf32>
      func.return %v : tensor<1xf32>
    }"""
    a = np.random.default_rng(0).random((8, 16), dtype=np.float32)
    (want,) = run_l1(text, [a])
    assert want[0] == pytest.approx(np.sqrt(a.sum()), rel=1e-5)
    (l2,) = L2.run_module(lower_to_dataflow(parse(text)), [a], check_races=True)
    (l3,) = simulate(lower_to_units(parse(text)), [a]).outputs
    np.testing.assert_allclose(l2, want, rtol=1e-6)
    np.testing.assert_allclose(l3, want, rtol=1e-6)


SCALARS = [0, 1, 2, 3, 7, 64, 4096, 2**31, 2**62, -1, -2, -7, -(2**62)]


@pytest.mark.parametrize("op", list(IA.INT_SCALAR), ids=lambda c: c.name)
def test_scalar_index_arithmetic_matches_the_vector_path(op) -> None:
    """Uniform index values take a Python-int shortcut; wherever it answers, it gives
    what the per-core numpy path gives (which handles everything else)."""
    fn, unsigned = IA.INT_BINARY[op]
    answered = 0
    for a in SCALARS:
        for b in SCALARS:
            got = IA.INT_SCALAR[op](a, b)
            if got is None or not -(2**63) <= got < 2**63:
                continue
            answered += 1
            x, y = (IA.as_int(np.array(v, dtype=np.int64), 64, unsigned) for v in (a, b))
            with np.errstate(over="ignore"):
                want = int(IA.signed(fn(x, y), 64))
            assert got == want, (op.name, a, b)
    assert answered > 0, op.name


@pytest.mark.parametrize("predicate", range(10))
def test_scalar_comparisons_match_the_vector_path(predicate: int) -> None:
    fn, unsigned = IA.CMPI[predicate]
    for a in SCALARS:
        for b in SCALARS:
            if unsigned and min(a, b) < 0:
                continue  # the shortcut leaves these to the vector path
            got = IA.CMPI_SCALAR[predicate if predicate < 6 else predicate - 4](a, b)
            x, y = (IA.as_int(np.array(v, dtype=np.int64), 64, unsigned) for v in (a, b))
            assert got == bool(fn(x, y)), (predicate, a, b)


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "max", "min", "matmul"])
def test_a_tile_ops_direct_numpy_call_is_its_l1_implementation(kind):
    """`TileOp.f32_call` (the float32 fast path) gives what the op's L1 implementation
    gives through `apply_op`, bit for bit, with NaN, infinities and signed zeros."""
    from spyre_ir.dialects import dataflow as D
    from spyre_ir.interp.tensor import apply_op
    from spyre_ir.interp.tile_ops import TileOp

    b_shape = "8x8" if kind == "matmul" else "4x8"
    a_t, b_t, o_t = "!dataflow.lx<4x8xf32>", f"!dataflow.lx<{b_shape}xf32>", "!dataflow.lx<4x8xf32>"
    text = f"""
func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {{
  %r = dataflow.kernel @k cores(1) (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {{
  ^bb0(%core: index, %in: !dataflow.ddr<4x8xf32>, %out: !dataflow.ddr<4x8xf32>):
    %a = dataflow.alloc_lx : {a_t}
    %b = dataflow.alloc_lx : {b_t}
    %o = dataflow.alloc_lx : {o_t}
    dataflow.compute "spyre.{kind}" on "pe" (%a, %b) -> (%o) : ({a_t}, {b_t}) -> {o_t}
    dataflow.end
  }}
  func.return %r : tensor<4x8xf32>
}}"""
    module = parse_and_verify(make_context(), text, "t.mlir")
    op = next(o for o in module.walk() if isinstance(o, D.ComputeBase))
    tile = TileOp(op, 2, "dlfloat16")
    assert tile.f32_call is not None
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 4, 8)).astype(np.float32)
    b = rng.standard_normal((2, *map(int, b_shape.split("x")))).astype(np.float32)
    a.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, -0.0]
    b.reshape(-1)[:4] = [1.0, np.inf, 0.0, 0.0]
    with np.errstate(invalid="ignore"):  # inf - inf, inf * 0: NaN is the answer
        want = apply_op(tile.probe, [a, b])
        got = tile.run([a, b], [], None)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
