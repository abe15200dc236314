"""Models moved to the "spyre" device: eager forward and torch.compile(backend="spyre"),
compared with CPU eager. Parameters and inputs stay on the card; results come back there."""

from __future__ import annotations

import models
import pytest
import torch

from spyre_ir.runtime import device, eager

device.setup()

# The card computes float32 graphs in float16 (see the backend's one-time warning), and
# says where each graph's f32 ops ran (tests/test_f32_policy.py checks those warnings).
pytestmark = [
    pytest.mark.filterwarnings("ignore:spyre. float32 ops run on the card in DLFloat16"),
    pytest.mark.filterwarnings("ignore::spyre_ir.runtime.f32_policy.SpyreF32Warning"),
]


def test_compiled_mlp_keeps_parameters_inputs_and_outputs_on_the_card() -> None:
    model = models.mlp(dim=64, hidden=128)
    x = models.randn(4, 64)
    with torch.no_grad():
        ref = model(x)
        model.to("spyre")
        compiled = torch.compile(model, backend="spyre")
        out = compiled(x.to("spyre"))
    assert out.device.type == "spyre"
    assert all(p.device.type == "spyre" for p in model.parameters())
    torch.testing.assert_close(out.cpu(), ref, atol=2e-2, rtol=2e-2)
    torch._dynamo.reset()


def test_compiled_on_a_host_executor_returns_results_on_the_card() -> None:
    x = models.randn(4, 16)
    compiled = torch.compile(lambda t: torch.relu(t) + 1, backend="spyre",
                             options={"executor": "reference"})  # fmt: skip
    out = compiled(x.to("spyre"))
    assert out.device.type == "spyre"
    torch.testing.assert_close(out.cpu(), torch.relu(x) + 1)
    torch._dynamo.reset()


def test_compiled_graph_mixes_with_eager_device_ops() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        y = torch.tanh(x) * 2
        return torch.cumprod(y, 0)  # no spyre lowering: stays CPU code inside the graph

    x = models.randn(4, 8)
    with pytest.warns(UserWarning, match="cumprod"):
        out = torch.compile(f, backend="spyre")(x.to("spyre"))
    assert out.device.type == "spyre"
    torch.testing.assert_close(out.cpu(), f(x), atol=2e-2, rtol=2e-2)
    torch._dynamo.reset()


def llama_and_reference() -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    model = models.tiny_llama("sdpa")
    ids = models.llama_inputs(1, 16)
    with torch.no_grad():
        ref = model(input_ids=ids, use_cache=False).logits
    return model.to("spyre"), ids.to("spyre"), ref


def test_tiny_llama_eager_on_the_card_matches_cpu() -> None:
    model, ids, ref = llama_and_reference()
    assert all(p.device.type == "spyre" for p in model.parameters())
    before = eager.cache_info()["cpu_fallbacks"]
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits
    assert eager.cache_info()["cpu_fallbacks"] == before  # every op ran on the card
    assert logits.device.type == "spyre"
    torch.testing.assert_close(logits.cpu(), ref, atol=1e-2, rtol=2e-2)


def test_tiny_llama_compiled_on_the_card_matches_cpu() -> None:
    model, ids, ref = llama_and_reference()
    with torch.no_grad():
        logits = torch.compile(models.LogitsOnly(model), backend="spyre")(ids)
    assert logits.device.type == "spyre"
    torch.testing.assert_close(logits.cpu(), ref, atol=1e-2, rtol=2e-2)
    torch._dynamo.reset()
