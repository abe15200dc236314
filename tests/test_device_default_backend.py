"""``torch.compile(f)`` with the default backend compiles spyre graphs with the spyre backend
(spyre_ir/runtime/default_backend.py) and leaves CPU graphs to Inductor."""

from __future__ import annotations

import warnings

import pytest
import torch

from spyre_ir.runtime import backend, device

device.setup()

with warnings.catch_warnings():  # torch.compile's default imports Inductor, which imports
    warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script_method users
    import torch._inductor.compile_fx  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore:spyre. float32")


def f16_randn(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float16)


def attention_like(a: torch.Tensor) -> torch.Tensor:
    return torch.softmax(a @ a.t(), dim=-1) * 2


def test_default_backend_on_spyre_tensors_equals_backend_spyre(card, monkeypatch) -> None:
    calls: list[int] = []
    real = backend.spyre_backend

    def counting(gm, inputs, **kwargs):
        calls.append(len(inputs))
        return real(gm, inputs, **kwargs)

    monkeypatch.setattr(backend, "spyre_backend", counting)
    x = f16_randn(8, 64)
    default = torch.compile(attention_like)(x.to("spyre"))
    assert calls, "the default backend did not reach the spyre backend"
    assert default.device.type == "spyre"
    torch._dynamo.reset()
    named = torch.compile(attention_like, backend="spyre")(x.to("spyre"))
    assert torch.equal(default.cpu(), named.cpu())  # one compiler behind both spellings
    torch.testing.assert_close(default.cpu().float(), attention_like(x.float()),
                               atol=2e-2, rtol=2e-2)  # fmt: skip


def test_default_backend_compiles_a_model_on_the_card(card) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.GELU(), torch.nn.Linear(32, 16))
    model = model.half().eval()
    x = f16_randn(4, 64, seed=1)
    with torch.no_grad():
        expected = model.float()(x.float())
        model = model.half().to("spyre")
        out = torch.compile(model)(x.to("spyre"))
    assert out.device.type == "spyre"
    torch.testing.assert_close(out.cpu().float(), expected, atol=3e-2, rtol=3e-2)


def test_cpu_graphs_still_go_to_inductor(monkeypatch) -> None:
    def no_spyre(*args, **kwargs):
        raise AssertionError("a CPU graph reached the spyre backend")

    monkeypatch.setattr(backend, "spyre_backend", no_spyre)
    torch._dynamo.reset()
    x = f16_randn(4, 8).float()
    graphs: list[torch.fx.GraphModule] = []
    from spyre_ir.runtime import default_backend

    real = default_backend.is_spyre_graph

    def seen(gm, inputs):
        graphs.append(gm)
        return real(gm, inputs)

    monkeypatch.setattr(default_backend, "is_spyre_graph", seen)
    try:
        out = torch.compile(lambda a: a.sin() + 1)(x)
    except torch._dynamo.exc.BackendCompilerFailed as error:  # no C++ compiler on the host
        assert "inductor" in str(error) and "spyre" not in str(error)
    else:
        torch.testing.assert_close(out, x.sin() + 1)
    assert graphs and not real(graphs[0], [x])
