"""Devices mix as torch allows, every call; a launch that fails for want of memory does
not send a compiled partition to CPU for good."""

from __future__ import annotations

import warnings

import pytest
import torch

from spyre_ir.runtime import device, fallbacks

device.setup()

SAME_DEVICE = "Expected all tensors to be on the same device"


def spyre_randn(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float16).to("spyre")


def test_a_spyre_and_a_cpu_tensor_do_not_mix_in_eager_ops_on_any_call() -> None:
    a = spyre_randn(3)
    b = torch.randn(3, dtype=torch.float16)
    for _ in range(3):  # the first call is traced and compiled, later ones hit the cache
        with pytest.raises(RuntimeError, match=SAME_DEVICE):
            a * b
        with pytest.raises(RuntimeError, match=SAME_DEVICE):
            torch.mm(a.view(1, 3), b.view(3, 1))


def test_cpu_scalars_and_cpu_indices_mix_as_in_torch() -> None:
    a = spyre_randn(4)
    host = a.cpu()
    scale = torch.tensor(2.0, dtype=torch.float16)  # a rank-0 CPU tensor is a scalar
    for _ in range(2):
        assert torch.equal((a * scale).cpu(), host * scale)
        index = torch.tensor([3, 0])
        assert torch.equal(a[index].cpu(), host[index])


def test_compiled_code_mixing_devices_raises_on_every_call() -> None:
    torch._dynamo.reset()
    f = torch.compile(lambda x, y: x * y, backend="spyre")
    a = spyre_randn(3)
    for _ in range(3):
        with pytest.raises(Exception, match=SAME_DEVICE):
            f(a, torch.randn(3, dtype=torch.float16))


def test_an_out_of_memory_launch_runs_on_cpu_once_then_the_card_again(card, monkeypatch) -> None:
    from spyre_ir.runtime import allocator, resident

    card.delenv("SPYRE_STRICT")
    x = spyre_randn(8, 64)
    f = torch.compile(lambda t: torch.relu(t) * 3, backend="spyre")
    expected = torch.relu(x.cpu()) * 3
    torch.testing.assert_close(f(x).cpu(), expected, atol=2e-2, rtol=2e-2)

    real_call = resident.CardPartition.__call__
    launches: list[str] = []

    def short_of_memory_once(self, args):
        launches.append("card")
        if len(launches) == 1:
            raise allocator.SpyreOutOfMemoryError(1 << 30, 0, "test: card full")
        return real_call(self, args)

    monkeypatch.setattr(resident.CardPartition, "__call__", short_of_memory_once)
    with pytest.warns(
        UserWarning, match="(?s)out of memory.*tries the executor again.*running it on CPU"
    ):
        out = f(x)
    torch.testing.assert_close(out.cpu(), expected, atol=2e-2, rtol=2e-2)
    out = f(x)  # no warning (-W error): the partition ran on the card
    assert launches == ["card", "card"]
    torch.testing.assert_close(out.cpu(), expected, atol=2e-2, rtol=2e-2)


def test_a_failed_partition_launch_costs_that_call_only(card, monkeypatch) -> None:
    """Any executor failure (not only out-of-memory) runs that call on CPU with a warning
    naming it; every later call tries the card again (issue 19: a failed launch does not
    disable a partition for good)."""
    from spyre_ir.runtime import resident

    card.delenv("SPYRE_STRICT")
    x = spyre_randn(8, 64)
    f = torch.compile(lambda t: torch.relu(t) + 1, backend="spyre")
    real = resident.CardPartition.__call__
    calls = {"card": 0}

    def broken_twice(self, args):
        calls["card"] += 1
        if calls["card"] <= 2:
            raise ValueError("test: an executor bug")
        return real(self, args)

    monkeypatch.setattr(resident.CardPartition, "__call__", broken_twice)
    for _ in range(2):
        with pytest.warns(UserWarning, match="failed on the card executor .*executor bug.*"
                          "the next call tries the executor again"):  # fmt: skip
            out = f(x)
        torch.testing.assert_close(out.cpu(), torch.relu(x.cpu()) + 1, atol=2e-2, rtol=2e-2)
    fallbacks.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the card again: no warning
        out = f(x)
    assert calls["card"] == 3 and fallbacks.records() == []
    assert out.device.type == "spyre"
    torch.testing.assert_close(out.cpu(), torch.relu(x.cpu()) + 1, atol=2e-2, rtol=2e-2)


# ------------------------------------------------------------------------ CPU fallbacks
def test_conv2d_runs_on_the_card_and_its_backward_falls_back_with_a_warning() -> None:
    import torch.nn.functional as F

    from spyre_ir.runtime.eager import SpyreCpuFallbackWarning

    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 3, 8, 8, generator=g, dtype=torch.float16)
    w = torch.randn(4, 3, 3, 3, generator=g, dtype=torch.float16)
    expected = F.conv2d(x.float(), w.float(), padding=1)
    xs, ws = x.to("spyre").requires_grad_(), w.to("spyre").requires_grad_()
    for _ in range(2):  # compiled for the card (lowering/aten_conv.py): no warning
        out = F.conv2d(xs, ws, padding=1)
        assert out.device.type == "spyre"
        torch.testing.assert_close(out.cpu().float(), expected, atol=2e-2, rtol=2e-2)
    with pytest.warns(SpyreCpuFallbackWarning, match=r"aten\.convolution_backward\.default"):
        out.sum().backward()
    assert xs.grad.device.type == "spyre" and xs.grad.shape == xs.shape
    x_ref, w_ref = x.float().requires_grad_(), w.float().requires_grad_()
    F.conv2d(x_ref, w_ref, padding=1).sum().backward()
    torch.testing.assert_close(ws.grad.cpu().float(), w_ref.grad, atol=5e-2, rtol=2e-2)


def test_compiled_conv_transpose_runs_on_cpu_with_warnings_every_call() -> None:
    import torch.nn.functional as F

    from spyre_ir.runtime.eager import SpyreCpuFallbackWarning

    torch._dynamo.reset()
    g = torch.Generator().manual_seed(2)
    x = torch.randn(1, 3, 8, 8, generator=g, dtype=torch.float16)
    w = torch.randn(3, 4, 3, 3, generator=g, dtype=torch.float16)
    f = torch.compile(lambda a, b: torch.relu(F.conv_transpose2d(a, b)), backend="spyre")
    with pytest.warns(UserWarning) as caught:
        out = f(x.to("spyre"), w.to("spyre"))
    assert any("aten.convolution.default is not supported (transposed" in str(c.message)
               for c in caught)  # fmt: skip
    with pytest.warns(SpyreCpuFallbackWarning, match=r"aten\.convolution\.default"):
        out = f(x.to("spyre"), w.to("spyre"))  # each call's CPU run warns again
    expected = torch.relu(F.conv_transpose2d(x.float(), w.float()))
    torch.testing.assert_close(out.cpu().float(), expected, atol=2e-2, rtol=2e-2)


def test_a_refused_eager_launch_runs_that_call_on_cpu_and_the_next_on_the_card(
    monkeypatch,
) -> None:
    """A ``LaunchError`` in eager once cached a reason that sent the signature to CPU for
    good; now it costs that call only (with the warning) and the kernel is kept."""
    from spyre_ir.runtime import eager
    from spyre_ir.runtime.recipe import LaunchError

    x = spyre_randn(8, 64, seed=3)
    expected = torch.relu(x.cpu()) * 3
    torch.testing.assert_close((torch.relu(x) * 3).cpu(), expected, atol=2e-2, rtol=2e-2)

    real_launch = eager._launch
    launches: list[str] = []

    def refused_once(kernel, flat):
        launches.append("card")
        if len(launches) == 1:
            raise LaunchError("test: the recipe refused these arguments")
        return real_launch(kernel, flat)

    monkeypatch.setattr(eager, "_launch", refused_once)
    # relu's signature is cached: its launch is refused this once
    with pytest.warns(
        eager.SpyreCpuFallbackWarning, match="(?s)aten.relu.*refused.*tries the card again"
    ):
        y = torch.relu(x)
    assert y.device.type == "spyre" and launches == ["card"]
    torch.testing.assert_close(y.cpu(), torch.relu(x.cpu()))
    before = eager.cache_info()
    y = torch.relu(x)  # no warning (-W error): the card again, and no recompile
    assert launches == ["card", "card"]
    assert eager.cache_info()["compiles"] == before["compiles"]
    assert eager.cache_info()["cpu_fallbacks"] == before["cpu_fallbacks"]
    torch.testing.assert_close(y.cpu(), torch.relu(x.cpu()))
