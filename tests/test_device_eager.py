"""Eager behaviour of the "spyre" torch device, checked against CPU eager.

Float32 work is computed in float16 on the card (as with torch.compile), so float
results are compared with float16-sized tolerances; transfers, views and integer work
must be exact. Every op here must run on the card: a CPU fallback would raise its
SpyreCpuFallbackWarning as an error (pytest runs with -W error), except where a test
expects one.
"""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from card_tolerance import as_on_the_card

from spyre_ir.runtime import device, eager

device.setup()

# Float32 ops run in float16 with a once-per-process warning, checked by
# test_float32_ops_warn_once_that_they_run_in_float16; elsewhere it is expected.
F32_AS_F16 = "spyre. float32 ops run on the card in DLFloat16"
pytestmark = pytest.mark.filterwarnings(f"ignore:{F32_AS_F16}")

F16_TOL = {"atol": 2e-2, "rtol": 2e-2}


def cpu_randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def on_spyre(t: torch.Tensor) -> torch.Tensor:
    d = t.to("spyre")
    assert d.device.type == "spyre"
    return d


def close(d: torch.Tensor, ref: torch.Tensor, **tol: float) -> None:
    assert d.device.type == "spyre", f"result is on {d.device}"
    assert d.dtype == ref.dtype and d.shape == ref.shape
    torch.testing.assert_close(d.cpu(), ref, **(tol or F16_TOL))


# -------------------------------------------------------------------- creation, transfer
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.int32, torch.bool])  # fmt: skip
def test_round_trip_is_exact(dtype: torch.dtype) -> None:
    x = (cpu_randn(3, 5) * 10).to(dtype)
    d = on_spyre(x)
    assert d.shape == x.shape and d.stride() == x.stride() and d.dtype == dtype
    assert torch.equal(d.cpu(), x)


def test_non_contiguous_host_tensor_round_trips() -> None:
    x = cpu_randn(4, 6).t()[1:, ::2]
    assert torch.equal(x.to("spyre").cpu(), x)


def test_factories_match_cpu() -> None:
    assert torch.equal(torch.zeros(2, 3, device="spyre").cpu(), torch.zeros(2, 3))
    assert torch.equal(torch.ones(4, dtype=torch.float16, device="spyre").cpu(),
                       torch.ones(4, dtype=torch.float16))  # fmt: skip
    assert torch.equal(torch.full((2, 2), 3.5, device="spyre").cpu(), torch.full((2, 2), 3.5))
    assert torch.equal(torch.arange(2, 11, 3, device="spyre").cpu(), torch.arange(2, 11, 3))
    e = torch.empty(5, 7, device="spyre")
    assert e.device == torch.device("spyre", 0) and e.shape == (5, 7) and e.is_contiguous()
    assert torch.equal(torch.zeros_like(e).cpu(), torch.zeros(5, 7))


def test_randn_follows_torch_manual_seed() -> None:
    torch.manual_seed(1234)
    d = torch.randn(3, 4, device="spyre")
    torch.manual_seed(1234)
    assert torch.equal(d.cpu(), torch.randn(3, 4))
    torch.spyre.manual_seed(7)
    first = torch.rand(8, device="spyre").cpu()
    torch.spyre.manual_seed(7)
    assert torch.equal(torch.rand(8, device="spyre").cpu(), first)


def test_copy_between_devices_and_dtypes() -> None:
    x = cpu_randn(3, 4)
    d = torch.empty(3, 4, dtype=torch.float16, device="spyre")
    d.copy_(x)  # host -> card with a dtype conversion
    assert torch.equal(d.cpu(), x.half())
    e = torch.empty(3, 4, device="spyre")
    e.copy_(d)  # card -> card, f16 -> f32
    assert torch.equal(e.cpu(), x.half().float())
    host = torch.empty(3, 4, dtype=torch.float16)
    host.copy_(e)  # card -> host
    assert torch.equal(host, x.half())


# --------------------------------------------------------------------------- arithmetic
def test_tensor_tensor_arithmetic() -> None:
    a, b = cpu_randn(4, 32, seed=1), cpu_randn(4, 32, seed=2)
    da, db = on_spyre(a), on_spyre(b)
    close(da + db, a + b)
    close(da - db, a - b)
    close(da * db, a * b)
    close(da / (db.abs() + 1), a / (b.abs() + 1))


def test_tensor_scalar_arithmetic() -> None:
    a = cpu_randn(8, 16)
    da = on_spyre(a)
    close(da + 1.5, a + 1.5)
    close(2 * da - 3, 2 * a - 3)
    close(da / 4, a / 4)
    close(1 - da, 1 - a)
    close(da**2, a**2)


def test_float32_results_keep_the_cards_range() -> None:
    """An f32 op computed as 16-bit floats gave its result back through IEEE fp16, so
    values past 65,504 became inf (x * 1e5; a -1e9 attention mask became -inf). The card
    holds them as DLFloat16 (range 2^32), and they come back as its float32 values."""
    x, m = cpu_randn(8, 64), (cpu_randn(8, 64, seed=1) > 0).float()
    for got, want in (
        ((on_spyre(x) * 1e5).cpu(), x * 1e5),
        ((on_spyre(x) * m.to("spyre") + (1 - m.to("spyre")) * -1e9).cpu(), x * m + (1 - m) * -1e9),
        (((on_spyre(x) + 1e9) * 1e-9).cpu(), (x + 1e9) * 1e-9),
    ):
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, want, rtol=2**-8, atol=2e-2)  # two DLFloat16 places


def test_broadcasting() -> None:
    a, b = cpu_randn(3, 1, 16, seed=3), cpu_randn(5, 16, seed=4)
    close(on_spyre(a) + on_spyre(b), a + b)
    close(on_spyre(a) * on_spyre(b[0]), a * b[0])


def test_integer_and_comparison_ops_are_exact() -> None:
    i = torch.arange(12).reshape(3, 4)
    di = on_spyre(i)
    assert torch.equal((di + 3).cpu(), i + 3)
    assert torch.equal((di > 5).cpu(), i > 5)
    x = cpu_randn(3, 4, dtype=torch.float16)  # selection is exact, of x as the card holds it
    dx = on_spyre(x)
    held = torch.from_numpy(as_on_the_card(x.numpy()))  # DLFloat16 (docs/dlfloat16.md)
    assert torch.equal(
        torch.where(dx > 0, dx, torch.zeros_like(dx)).cpu(), torch.where(x > 0, held, 0.0)
    )
    assert torch.equal(dx.masked_fill(dx < 0, -1.0).cpu(), held.masked_fill(x < 0, -1.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_matmul(dtype: torch.dtype) -> None:
    a, b = cpu_randn(16, 64, dtype=dtype, seed=5), cpu_randn(64, 32, dtype=dtype, seed=6)
    ref = (a.float() @ b.float()).to(dtype)
    close(on_spyre(a) @ on_spyre(b), ref, atol=5e-2, rtol=2e-2)
    batched = cpu_randn(2, 8, 64, dtype=dtype, seed=7)
    close(
        on_spyre(batched) @ on_spyre(b),
        (batched.float() @ b.float()).to(dtype),
        atol=5e-2,
        rtol=2e-2,
    )


def test_linear_module_to_spyre() -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 32)
    x = cpu_randn(4, 64)
    ref = lin(x).detach()
    lin.to("spyre")
    assert lin.weight.device.type == "spyre" and isinstance(lin.weight, torch.nn.Parameter)
    with torch.no_grad():
        close(lin(on_spyre(x)), ref, atol=5e-2, rtol=2e-2)


def test_unary_functions() -> None:
    x = cpu_randn(4, 64)
    dx = on_spyre(x)
    for fn in (torch.exp, torch.tanh, torch.sigmoid, F.silu, F.gelu, F.relu, torch.abs, torch.neg):
        close(fn(dx), fn(x))
    close(torch.rsqrt(dx.abs() + 1), torch.rsqrt(x.abs() + 1))


# ------------------------------------------------------------------------------- views
def test_views_share_storage_with_cpu_strides() -> None:
    x = cpu_randn(4, 6)
    d = on_spyre(x)
    views = {
        "view": lambda t: t.view(2, 12),
        "reshape": lambda t: t.reshape(3, 8),
        "transpose": lambda t: t.transpose(0, 1),
        "permute": lambda t: t.view(2, 2, 6).permute(2, 0, 1),
        "slice": lambda t: t[1:3, ::2],
        "select": lambda t: t[2],
        "expand": lambda t: t[:, :1].expand(4, 5),
        "as_strided": lambda t: t.as_strided((3, 3), (2, 1), 1),
        "unsqueeze": lambda t: t.unsqueeze(1),
        "flatten": lambda t: t.flatten(),
    }
    for name, fn in views.items():
        v, ref = fn(d), fn(x)
        assert v.untyped_storage().data_ptr() == d.untyped_storage().data_ptr(), name
        assert (v.shape, v.stride(), v.storage_offset()) == (
            ref.shape,
            ref.stride(),
            ref.storage_offset(),
        ), name
        assert v._base is d, name
        assert torch.equal(v.cpu(), ref), name


def test_in_place_ops_are_visible_through_views() -> None:
    x = cpu_randn(4, 6)
    d = on_spyre(x)
    row, col = d[1], d[:, 2]
    row.add_(10.0)  # in-place through a view: the base sees it
    x[1].add_(10.0)
    close(d, x)
    d.mul_(2)  # in-place on the base: both views see it
    x.mul_(2)
    close(row, x[1])
    close(col, x[:, 2])
    d[0, :] = 1.0  # setitem
    x[0, :] = 1.0
    close(d, x)
    d.zero_()
    assert torch.equal(col.cpu(), torch.zeros(4))


def test_out_argument_writes_into_given_tensor() -> None:
    a, b = cpu_randn(3, 8, seed=1), cpu_randn(3, 8, seed=2)
    out = torch.empty(3, 8, device="spyre")
    alias = out[1:]
    result = torch.add(on_spyre(a), on_spyre(b), out=out)
    assert result is out
    close(alias, (a + b)[1:])


def test_ops_on_non_contiguous_inputs() -> None:
    x = cpu_randn(8, 16)
    dt = on_spyre(x).t()
    close(dt + 1, x.t() + 1)
    close(dt.contiguous(), x.t().contiguous(), atol=0, rtol=0)
    close(torch.softmax(dt, -1), torch.softmax(x.t(), -1))


# ------------------------------------------------------------------- reductions, norms
def test_softmax_and_log_softmax() -> None:
    x = cpu_randn(4, 64) * 3
    close(torch.softmax(on_spyre(x), dim=-1), torch.softmax(x, dim=-1), atol=2e-3, rtol=2e-2)
    close(torch.softmax(on_spyre(x), dim=0), torch.softmax(x, dim=0), atol=2e-3, rtol=2e-2)


def test_layer_norm_and_rms_norm() -> None:
    x = cpu_randn(4, 64)
    ln = torch.nn.LayerNorm(64)
    ref = ln(x).detach()
    ln.to("spyre")
    with torch.no_grad():
        close(ln(on_spyre(x)), ref, atol=3e-2, rtol=2e-2)
    dx = on_spyre(x)
    rms = dx * torch.rsqrt(dx.pow(2).mean(-1, keepdim=True) + 1e-6)
    close(rms, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def test_reductions_over_dims() -> None:
    x = cpu_randn(4, 6, 32)
    dx = on_spyre(x)
    close(dx.sum(-1), x.sum(-1), atol=5e-2, rtol=2e-2)
    close(dx.mean(1, keepdim=True), x.mean(1, keepdim=True))
    close(dx.amax(-1), x.amax(-1))
    close(dx.sum((0, 1, 2), keepdim=True), x.sum((0, 1, 2), keepdim=True), atol=0.5, rtol=2e-2)
    assert torch.equal(dx.argmax(-1).cpu(), x.half().float().argmax(-1))


def test_full_reductions_to_scalars() -> None:
    x = cpu_randn(4, 64)
    dx = on_spyre(x)
    assert dx.sum().shape == ()
    assert dx.sum().item() == pytest.approx(x.sum().item(), abs=0.1)
    assert dx.amax().item() == pytest.approx(x.amax().item(), abs=1e-2)
    assert dx.mean().item() == pytest.approx(x.mean().item(), abs=1e-2)


def test_norm_of_a_whole_tensor() -> None:
    x = cpu_randn(4, 8)
    assert on_spyre(x).norm().item() == pytest.approx(x.norm().item(), rel=1e-2)


def test_item_and_bool() -> None:
    x = torch.tensor([3.25, -1.0])
    d = on_spyre(x)
    assert d[0].item() == 3.25 and d[1].item() == -1.0
    assert bool(d[0] > 0) and int(on_spyre(torch.tensor(7))) == 7


def test_cat_and_embedding() -> None:
    a, b = (
        cpu_randn(2, 8, dtype=torch.float16, seed=1),
        cpu_randn(3, 8, dtype=torch.float16, seed=2),
    )
    joined = torch.from_numpy(as_on_the_card(torch.cat([a, b]).numpy()))  # moved as DLFloat16
    close(torch.cat([on_spyre(a), on_spyre(b)]), joined, atol=0, rtol=0)
    table = cpu_randn(10, 16)
    ids = torch.tensor([[1, 4, 9], [0, 0, 3]])
    close(F.embedding(on_spyre(ids), on_spyre(table)), F.embedding(ids, table))


def test_dtype_conversions() -> None:
    x = cpu_randn(4, 8)
    d = on_spyre(x)
    assert torch.equal(d.half().cpu(), x.half())
    assert torch.equal(d.to(torch.bfloat16).cpu(), x.to(torch.bfloat16))
    assert torch.equal(d.half().float().cpu(), x.half().float())


# ------------------------------------------------------------------------------ printing
def test_printing_matches_cpu_with_device_suffix() -> None:
    x = torch.tensor([[1.5, -2.0], [0.25, 4.0]])
    text = repr(on_spyre(x))
    assert text == repr(x)[:-1] + ", device='spyre:0')"
    assert "dtype=torch.float16" in repr(on_spyre(x.half()))
    assert repr(torch.empty(0, device="spyre")) == "tensor([], device='spyre:0')"
    big = repr(on_spyre(torch.arange(2000.0)))
    assert "..." in big and big.endswith("device='spyre:0')")
    param = torch.nn.Parameter(on_spyre(x))
    assert repr(param).startswith("Parameter containing:\ntensor([[ 1.5000, -2.0000],")


# ------------------------------------------------------------------- compile and fallback
def test_signatures_are_compiled_once_and_cached() -> None:
    x = on_spyre(cpu_randn(5, 24))
    x * 3.0  # the signature may already be cached from another test
    before = eager.cache_info()
    for _ in range(3):
        y = x * 3.0
    after = eager.cache_info()
    assert after["compiles"] == before["compiles"] and after["hits"] == before["hits"] + 3
    x * 4.0  # another scalar is another signature
    assert eager.cache_info()["compiles"] == after["compiles"] + 1
    close(y, x.cpu() * 3.0)


def test_unsupported_op_runs_on_cpu_warning_every_time() -> None:
    x = cpu_randn(6, 5)
    d = on_spyre(x)
    with pytest.warns(eager.SpyreCpuFallbackWarning, match=re.escape("aten.cumprod")):
        first = torch.cumprod(d, 1)
    assert first.device.type == "spyre"
    torch.testing.assert_close(first.cpu(), torch.cumprod(x, 1))
    for _ in range(2):  # a cached signature and a new one: each run warns
        with pytest.warns(eager.SpyreCpuFallbackWarning, match=re.escape("aten.cumprod")):
            second = torch.cumprod(d, 0)
    torch.testing.assert_close(second.cpu(), torch.cumprod(x, 0))


def test_user_errors_are_torch_errors_without_fallback_warning() -> None:
    a, b = on_spyre(torch.ones(3)), on_spyre(torch.ones(4))
    with pytest.raises(RuntimeError, match="must match the size"):
        a + b  # -W error: a fallback warning would surface instead of torch's error
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        on_spyre(torch.ones(2, 3)) @ on_spyre(torch.ones(2, 3))


def test_zero_element_tensors() -> None:
    e = torch.empty(0, 4, device="spyre")
    assert (e + 1).shape == (0, 4) and (e + 1).device.type == "spyre"
    assert e.sum().item() == 0.0
    assert torch.cat([e, on_spyre(torch.ones(1, 4))]).cpu().tolist() == [[1.0] * 4]


@pytest.mark.filterwarnings("default")
def test_float32_ops_warn_once_that_they_run_in_float16() -> None:
    from spyre_ir.runtime.backend import reset_warnings

    reset_warnings()
    x = on_spyre(cpu_randn(4, 8, seed=3))
    with pytest.warns(UserWarning, match=F32_AS_F16) as caught:
        (x * 3.0 + 1.0).cpu()
    assert sum(F32_AS_F16.replace(".", ":") in str(w.message) for w in caught) == 1


REDUCTION_SCRIPT = """
import torch
from spyre_ir.runtime import device
device.setup()
fns = [lambda t: (t * 3).sum(), lambda t: (t * 3).sum(0, keepdim=True),
       lambda t: (t + 1).sum(), lambda t: t.sum() * 3, lambda t: (t * 3).amax()]
x = torch.arange(1, 65, dtype=torch.float16)
for fn in fns:
    torch._dynamo.reset()
    got = torch.compile(fn, backend="spyre")(x.to("spyre")).cpu()
    print(torch.equal(got, fn(x)), got.tolist(), fn(x).tolist())
"""


def test_compiled_reductions_of_a_spyre_tensor_come_back_whole() -> None:
    """A compiled graph on a spyre tensor ending in a reduction: its result, read in
    place from the stick image into the device tensor, came back as 0 or garbage (40.0
    for 9.0). In a fresh process, as a user runs it (in this one it did not show)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", REDUCTION_SCRIPT], capture_output=True,
                         text=True, timeout=300, check=True)  # fmt: skip
    lines = out.stdout.splitlines()
    assert len(lines) == 5 and all(line.startswith("True") for line in lines), out.stdout


FAKE_MODE_SCRIPT = """
import warnings
import numpy as np
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
warnings.simplefilter("ignore")
with FakeTensorMode():  # as inside a backend's compile: the module's first import
    from spyre_ir.interp import dlfloat16, halves
    values = np.linspace(-70000, 70000, 1 << 17, dtype=np.float32)
    half = np.empty(values.shape, np.float16)
    halves.convert_into(half, values)
    same_in_mode = np.array_equal(half, values.astype(np.float16))
table = dlfloat16._DECODED.astype(np.float16).view(np.uint16)
print(np.array_equal(dlfloat16.CODE_TO_F16, table), same_in_mode)
"""


def test_half_conversions_run_under_a_torch_mode() -> None:
    """The root cause of the reductions above: halves.convert_into converted through
    torch's copy_, which dynamo's FakeTensorMode (active while our backend compiles)
    traced instead of running, leaving the np.empty destination as it was. The
    DLFloat16 -> fp16 table, built when its module was first imported inside a
    compile (a fresh process), held 0 and NaN. In a fresh process: the first import."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FAKE_MODE_SCRIPT], capture_output=True,
                         text=True, timeout=300, check=True)  # fmt: skip
    assert out.stdout.split() == ["True", "True"], out.stdout
