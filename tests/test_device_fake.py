"""Fake tensors on the spyre device: what dynamo and AOTAutograd trace with never runs a
spyre kernel, so ``torch.tensor(..., device="spyre")`` and ``new_tensor`` (which
transformers' caches call) trace, and a model moved to the card compiles and generates."""

from __future__ import annotations

import models
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from spyre_ir.runtime import device, eager

device.setup()

pytestmark = [
    pytest.mark.filterwarnings("ignore:spyre. float32 ops run on the card in DLFloat16"),
    pytest.mark.filterwarnings("ignore::spyre_ir.runtime.f32_policy.SpyreF32Warning"),
]


def test_tensor_factories_from_data_make_fake_spyre_tensors() -> None:
    with FakeTensorMode():
        empty = torch.tensor([], device="spyre")
        data = torch.tensor([1.0, 2.0], device="spyre")
        like = torch.empty(3, device="spyre").new_tensor([1, 2, 3])
        moved = torch.ones(2).to("spyre")
    for t, shape in ((empty, (0,)), (data, (2,)), (like, (3,)), (moved, (2,))):
        assert isinstance(t, FakeTensor) and t.device.type == "spyre" and tuple(t.shape) == shape
    assert like.dtype == torch.float32  # new_tensor keeps the dtype of the tensor it is called on
    assert "FakeTensor" in repr(data)  # printing a fake spyre tensor reads no device memory


# a constant's move to the card (prims.device_put) stays host code in the graph, with a warning
@pytest.mark.filterwarnings("ignore:spyre. prims.device_put")
def test_compiled_function_building_a_tensor_on_the_card() -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        scale = torch.tensor([2.0, 3.0, 4.0, 5.0], device=x.device, dtype=x.dtype)
        return x * scale + x.new_tensor([1.0, 1.0, 1.0, 1.0])

    x = models.randn(8, 4)
    out = torch.compile(f, backend="spyre", dynamic=False)(x.to("spyre"))
    assert out.device.type == "spyre"
    torch.testing.assert_close(out.cpu(), f(x), atol=2e-2, rtol=2e-2)
    torch._dynamo.reset()


@pytest.mark.slow
# generate()'s own bookkeeping on spyre tensors includes ops the device runs on CPU copies
@pytest.mark.filterwarnings("ignore::spyre_ir.runtime.eager.SpyreCpuFallbackWarning")
@pytest.mark.filterwarnings("ignore:spyre. .* not supported")
@pytest.mark.parametrize("cache", ["dynamic", "static"])
def test_model_on_the_card_compiled_generates_like_eager(cache: str) -> None:
    model = models.tiny_llama("sdpa", torch.float16)
    ids = models.llama_inputs(1, 16)
    options = {"max_new_tokens": 3, "do_sample": False, "use_cache": True}
    if cache == "static":
        options["cache_implementation"] = "static"
    with torch.no_grad():
        want = model.generate(ids, **options)
        model.to("spyre")
        model.forward = torch.compile(model.forward, backend="spyre", dynamic=False)
        got = model.generate(ids.to("spyre"), **options)
    assert got.device.type == "spyre"
    assert got.cpu().tolist() == want.tolist()
    eager.clear_cache()
    torch._dynamo.reset()
