"""Device memory of spyre tensors: one allocator block per storage, freed when the last
tensor or view on it dies; out-of-memory is torch's error and the card keeps working."""

from __future__ import annotations

import gc

import pytest
import torch

from spyre_ir.runtime import device

device.setup()

# Float32 tensors are computed in float16, with a once-per-process warning that
# tests/test_device_eager.py checks; here it is expected.
pytestmark = pytest.mark.filterwarnings("ignore:spyre. float32 ops run on the card in DLFloat16")


def settled_allocated() -> int:
    """Allocated bytes once pending work (which keeps its blocks) has run."""
    gc.collect()
    torch.spyre.synchronize()
    return torch.spyre.memory_allocated()


def test_each_storage_holds_one_rounded_block() -> None:
    base = settled_allocated()
    a = torch.empty(1000, dtype=torch.float16, device="spyre")  # 2000 B -> 2048 B blocks
    assert torch.spyre.memory_allocated() - base == 2048
    b = torch.empty(10, 10, device="spyre")  # 400 B -> 512 B
    assert torch.spyre.memory_allocated() - base == 2048 + 512
    views = [a[1:], a.view(10, 100).t(), b.reshape(100), b[3]]
    assert torch.spyre.memory_allocated() - base == 2048 + 512  # views allocate nothing
    assert all(v.untyped_storage().nbytes() in (2000, 400) for v in views)
    del a, b, views
    assert settled_allocated() == base


def test_a_view_keeps_its_storage_alive() -> None:
    base = settled_allocated()
    a = torch.arange(4096, dtype=torch.float32, device="spyre")
    tail = a[4000:]
    del a
    assert settled_allocated() - base == 4096 * 4
    assert torch.equal(tail.cpu(), torch.arange(4000, 4096, dtype=torch.float32))
    del tail
    assert settled_allocated() == base


def test_memory_returns_to_baseline_after_ops_and_modules() -> None:
    base = settled_allocated()
    torch.spyre.reset_peak_memory_stats()
    with torch.no_grad():
        lin = torch.nn.Linear(64, 64).to("spyre")
        x = torch.randn(8, 64, device="spyre")
        y = torch.softmax(lin(x) * 2 + 1, -1)
        y.add_(1)
        total = y.sum().item()
    assert total == pytest.approx(8 + 8 * 64, abs=0.5)  # 8 softmax rows of sum 1, then +1 each
    assert torch.spyre.max_memory_allocated() > base
    del lin, x, y
    assert settled_allocated() == base


def test_out_of_memory_raises_torch_error_and_device_recovers() -> None:
    base = settled_allocated()
    capacity = torch.spyre.memory_stats()["reserved_bytes"] + 10 * 2**40  # far beyond the card
    with pytest.raises(torch.OutOfMemoryError, match=r"tried to allocate \d+ bytes .* bytes free"):
        torch.empty(capacity // 2, dtype=torch.float16, device="spyre")
    assert torch.spyre.memory_allocated() == base
    x = torch.ones(256, device="spyre") * 2  # allocation and compute still work
    assert x.sum().item() == 512.0
    del x
    assert settled_allocated() == base


def test_growing_out_tensor_keeps_working() -> None:
    a = torch.arange(12.0).reshape(3, 4).half()
    out = torch.empty(0, dtype=torch.float16, device="spyre")
    torch.mul(a.to("spyre"), 2, out=out)  # resizes the empty out= tensor
    assert out.shape == (3, 4) and torch.equal(out.cpu(), a * 2)


def test_eager_kernels_follow_a_replaced_card() -> None:
    from spyre_ir.runtime.card import get_card, reset_card

    x = torch.arange(8.0, dtype=torch.float16)
    before = (x.to("spyre") * 2).cpu()  # compiled for the current card
    fresh = reset_card(get_card().config)
    y = x.to("spyre") * 2  # the same signature, prepared again for the new card
    assert device.device_array(y).card is fresh
    assert torch.equal(y.cpu(), before)


def test_save_and_load_keep_values_views_and_device(tmp_path) -> None:
    x = torch.arange(6.0).reshape(2, 3).to("spyre")
    torch.save({"x": x, "row": x[1]}, tmp_path / "t.pt")
    on_host = torch.load(tmp_path / "t.pt", map_location="cpu")
    assert torch.equal(on_host["row"], torch.tensor([3.0, 4.0, 5.0]))
    loaded = torch.load(tmp_path / "t.pt")  # back onto the card, as saved
    assert loaded["x"].device == torch.device("spyre", 0)
    assert loaded["row"].untyped_storage().data_ptr() == loaded["x"].untyped_storage().data_ptr()
    loaded["x"][1, 0] = 9.0
    assert loaded["row"].cpu().tolist() == [9.0, 4.0, 5.0]


def test_mem_get_info_tracks_allocations() -> None:
    free, total = torch.spyre.mem_get_info()
    assert 0 < free <= total
    block = torch.empty(2**20, dtype=torch.uint8, device="spyre")
    assert torch.spyre.mem_get_info()[0] == free - 2**20
    del block
