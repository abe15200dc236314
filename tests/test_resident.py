"""Inputs kept on the card by compiled graphs (spyre_ir/runtime/resident.py): weights cross
the link once, a weight the user changes is seen, buffers the graph updates and caches it
grows stay on the card. Bytes moved come from the card's stream steps (telemetry)."""

from __future__ import annotations

import models
import pytest
import torch
from torch import nn

from spyre_ir.runtime import device, resident
from spyre_ir.runtime.card import get_card

device.setup()

# GELU and the sums upcast to float32 inside the graph (the card warns it runs them in DLFloat16)
pytestmark = pytest.mark.filterwarnings("ignore::spyre_ir.runtime.f32_policy.SpyreF32Warning")

F16 = torch.float16


def moved(fn, *args):
    """Run fn(*args); return (result, bytes per engine moved meanwhile)."""
    with get_card().timeline.recording_steps() as log:
        result = fn(*args)
    return result, {e: sum(s.nbytes for s in log if s.engine == e) for e in ("h2d", "d2h", "dma")}


def nbytes(*tensors: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


@pytest.fixture(autouse=True)
def _fresh():
    yield
    torch._dynamo.reset()


def test_weights_cross_the_link_once() -> None:
    model = models.mlp(dim=64, hidden=128).to(F16)
    x, y = models.randn(4, 64, dtype=F16), models.randn(4, 64, dtype=F16, seed=2)
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    with torch.no_grad():
        first, cold = moved(compiled, x)
        again, warm = moved(compiled, x)
        other, fresh = moved(compiled, y)
        torch.testing.assert_close(other, model(y), atol=2e-2, rtol=2e-2)
    weights = nbytes(*model.parameters())
    assert cold["h2d"] >= weights + nbytes(x)
    assert warm["h2d"] == 0  # the same input, unchanged: nothing crosses
    assert fresh["h2d"] == nbytes(y)  # a new input: only it crosses (64 f16 = whole sticks)
    assert cold["d2h"] == warm["d2h"] == fresh["d2h"] == nbytes(first)
    torch.testing.assert_close(first, again)


@pytest.mark.parametrize("change", ["mul_", "copy_", "assign_data"])
def test_a_weight_changed_between_calls_is_seen(change: str) -> None:
    model = models.mlp(dim=64, hidden=128).to(F16)
    x = models.randn(4, 64, dtype=F16)
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    weight = model[2].weight
    with torch.no_grad():
        before = compiled(x)
        if change == "mul_":
            weight.mul_(-2)
        elif change == "copy_":
            weight.copy_(torch.randn_like(weight))
        else:
            weight.data = torch.randn_like(weight)
        after, traffic = moved(compiled, x)
        torch.testing.assert_close(after, model(x), atol=3e-2, rtol=3e-2)
    assert not torch.allclose(before, after, atol=0.1)
    assert traffic["h2d"] == nbytes(weight)  # the changed weight alone crosses again


class Decay(nn.Module):
    """A buffer the graph updates as a whole: state <- state / 2 + x."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.zeros(8, 64, dtype=F16))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.state.mul_(0.5).add_(x)
        return self.state.sum(-1)


def test_a_buffer_the_graph_updates_stays_on_the_card() -> None:
    model, reference = Decay(), Decay()
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    xs = [models.randn(8, 64, dtype=F16, seed=s) for s in range(4)]
    traffic = []
    with torch.no_grad():
        for x in xs:
            out, moves = moved(compiled, x)
            traffic.append(moves)
            torch.testing.assert_close(out, reference(x), atol=5e-2, rtol=2e-2)
            torch.testing.assert_close(model.state, reference.state, atol=2e-2, rtol=2e-2)
    # after the first call the buffer never crosses in again; its new value comes back whole
    assert all(m["h2d"] == nbytes(xs[0]) for m in traffic[1:]), traffic
    # (the 8 sums come back as a whole stick of 64 halves)
    assert all(m["d2h"] == nbytes(model.state) + 64 * 2 for m in traffic), traffic


def test_a_grown_cache_passed_back_in_does_not_round_trip() -> None:
    def step(cache: torch.Tensor, new: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        grown = torch.cat([cache, new], dim=1)
        return grown, grown.sum(1)

    compiled = torch.compile(step, backend="spyre", dynamic=False)
    cache = models.randn(2, 8, 64, dtype=F16)
    want = cache.clone()
    traffic = []
    for s in range(3):
        new = models.randn(2, 1, 64, dtype=F16, seed=10 + s)
        old = cache
        (cache, sums), moves = moved(compiled, cache, new)
        want = torch.cat([want, new], dim=1)
        traffic.append(moves)
        assert torch.equal(cache[:, :-1], old)  # the old part is the host's own, exact
        torch.testing.assert_close(
            cache, want, atol=1e-2, rtol=1e-2
        )  # the new row went through the card
        torch.testing.assert_close(sums, want.sum(1), atol=0.1, rtol=1e-2)
    row = nbytes(new)
    for moves in traffic[1:]:  # in: only the new row; back: only the new row and the sums
        assert moves["h2d"] == row, traffic
        assert moves["d2h"] == row + nbytes(sums), traffic


def test_a_model_on_the_device_restickifies_its_weights_once() -> None:
    model = models.mlp(dim=64, hidden=128).to(F16)
    x = models.randn(4, 64, dtype=F16)
    with torch.no_grad():
        want = model(x)
        model.to("spyre")
        compiled = torch.compile(model, backend="spyre", dynamic=False)
        xs = x.to("spyre")
        torch.spyre.synchronize()
        _, cold = moved(compiled, xs)
        out, warm = moved(compiled, xs)
    torch.testing.assert_close(out.cpu(), want, atol=2e-2, rtol=2e-2)
    assert cold["dma"] >= nbytes(*model.parameters())
    assert warm["dma"] == nbytes(out) and warm["h2d"] == 0  # only the result is laid out


def test_kept_images_go_with_their_tensors() -> None:
    model = models.mlp(dim=64, hidden=128).to(F16)
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    kept = resident.images()
    before = kept.nbytes
    with torch.no_grad():
        compiled(models.randn(4, 64, dtype=F16))
    assert kept.nbytes >= before + nbytes(*model.parameters())
    del compiled, model
    torch._dynamo.reset()
    import gc

    gc.collect()
    assert kept.nbytes <= before + nbytes(models.randn(4, 64, dtype=F16))


class WrittenCache(nn.Module):
    """A StaticCache-like buffer written at a position each call (index_copy_)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 64, 64, dtype=F16))

    def forward(self, new: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        self.cache.index_copy_(1, position, new)
        return self.cache.sum(1)


def test_an_index_written_cache_moves_only_the_written_rows() -> None:
    model, reference = WrittenCache(), WrittenCache()
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    traffic = []
    with torch.no_grad():
        for step in range(4):
            new = models.randn(1, 1, 64, dtype=F16, seed=20 + step)
            position = torch.tensor([step])
            out, moves = moved(compiled, new, position)
            traffic.append(moves)
            torch.testing.assert_close(out, reference(new, position), atol=5e-2, rtol=1e-2)
            # the host copy holds every write (rounded as the card stores halves)
            torch.testing.assert_close(model.cache, reference.cache, atol=1e-2, rtol=1e-2)
    row = nbytes(new)
    for moves in traffic[1:]:  # the cache stays on the card: in, the row and its position
        assert moves["h2d"] <= row + 128, traffic
        assert moves["d2h"] == row + 64 * 2, traffic  # back: the written row and the sums


def test_an_index_written_host_cache_is_written_in_place(monkeypatch) -> None:
    """The partition writes the new row into the host buffer itself and returns it, so
    AOTAutograd's write-back is a copy onto itself, not a copy of the whole cache."""
    results = []
    call = resident.CardPartition.__call__

    def spy(self, args):
        out = call(self, args)
        results.append([any(o is a for a in args) for o in out])
        return out

    monkeypatch.setattr(resident.CardPartition, "__call__", spy)
    model, reference = WrittenCache(), WrittenCache()
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    with torch.no_grad():
        for step in range(3):
            new = models.randn(1, 1, 64, dtype=F16, seed=30 + step)
            position = torch.tensor([step])
            out, moves = moved(compiled, new, position)
            torch.testing.assert_close(out, reference(new, position), atol=5e-2, rtol=1e-2)
            torch.testing.assert_close(model.cache, reference.cache, atol=1e-2, rtol=1e-2)
            if step:  # the kept image is still the cache's: only the row crosses
                assert moves["h2d"] <= nbytes(new) + 128, moves
    assert all(any(r) for r in results), results  # the cache itself came back


class FunctionalWrite(nn.Module):
    """index_copy as a value: the buffer it starts from must not change."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 64, 64, dtype=F16))

    def forward(self, new: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return self.cache.index_copy(1, position, new)


def test_a_functional_index_put_leaves_its_input_alone() -> None:
    model = FunctionalWrite()
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    with torch.no_grad():
        for step in range(2):
            new = models.randn(1, 1, 64, dtype=F16, seed=40 + step)
            out = compiled(new, torch.tensor([step]))
            assert torch.equal(model.cache, torch.zeros(1, 64, 64, dtype=F16))
            torch.testing.assert_close(out, model(new, torch.tensor([step])), atol=1e-2, rtol=1e-2)
            assert out.data_ptr() != model.cache.data_ptr()


def test_a_failed_launch_keeps_nothing(monkeypatch) -> None:
    from spyre_ir.runtime.recipe import PreparedRecipe

    def broken(self, launch, step):
        def run() -> float:
            raise RuntimeError("the card fell over")

        return run

    model = models.mlp(dim=64, hidden=128).to(F16)
    x = models.randn(4, 64, dtype=F16)
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    kept = resident.images()
    before = kept.nbytes
    monkeypatch.setattr(PreparedRecipe, "_compute", broken)
    with torch.no_grad(), pytest.warns(UserWarning, match="the card fell over"):
        out = compiled(x)  # the partition falls back to CPU, with a warning
        torch.testing.assert_close(out, model(x))
    # neither the staged weights nor the results stay (earlier tests' images may go meanwhile)
    assert kept.nbytes <= before


def test_small_inputs_and_results_cross_as_one_transfer_each_way() -> None:
    """A decode step's few small inputs (token, positions, mask) go over the link as one
    transfer and its results come back as one: the link's fixed cost is paid once per
    direction, not once per tensor."""
    from spyre_ir import cost_model

    def step(cache: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor):
        grown = torch.cat([cache, a * b + c], dim=1)
        return grown, grown.sum(1), (a - c).sum(1)

    compiled = torch.compile(step, backend="spyre", dynamic=False)
    cache = models.randn(2, 8, 64, dtype=F16)
    card = get_card()
    for s in range(2):
        a, b, c = (models.randn(2, 1, 64, dtype=F16, seed=20 + 3 * s + i) for i in range(3))
        with card.timeline.recording_steps() as log:
            grown, sums, diffs = compiled(cache, a, b, c)
        want = step(cache, a, b, c)
        for g, w in zip((grown, sums, diffs), want):
            torch.testing.assert_close(g, w, atol=0.1, rtol=1e-2)
        cache = grown
        links = {e: [x for x in log if x.engine == e] for e in ("h2d", "d2h")}
        assert len(links["h2d"]) == 1 and len(links["d2h"]) == 1, log
        for (x,) in links.values():  # the fixed cost once, on all the bytes together
            want_s = cost_model.host_transfer_s(x.nbytes, card.config)
            assert x.end_s - x.start_s == pytest.approx(want_s)
        if s:  # the grown cache stayed on the card: only the three new rows crossed in
            assert links["h2d"][0].nbytes == nbytes(a, b, c)


def test_a_host_index_made_on_the_spyre_device_is_evaluated_on_the_host() -> None:
    # StaticCache's write positions on a model moved to "spyre": the graph builds the
    # index on the device (arange(..., device="spyre") + a spyre input), and the host
    # evaluates it to pick the rows a launch writes.
    graph = torch.fx.Graph()
    start = graph.placeholder("start")
    steps = graph.call_function(torch.arange, (3,), {"device": torch.device("spyre")})
    index = graph.call_function(torch.add, (steps, start))
    position = {start: 0}
    got = resident.evaluate_index(index, [torch.tensor(5).to("spyre")], position)
    assert got.tolist() == [5, 6, 7]
