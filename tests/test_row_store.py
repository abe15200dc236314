"""KV cache writes stored in place as their new rows (spyre_ir/runtime/row_store.py).

A StaticCache-style write (``cache.index_copy_(2, positions, rows)``) compiled for the card
stores only the rows, into the cache's kept stick image at the runtime positions: its
LPDDR5 bytes do not grow with the cache, and the cache's block is the same at every step.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from spyre_ir.runtime import telemetry
from spyre_ir.runtime.resident import images
from spyre_ir.runtime.row_store import find_row_writes, rows_graph

sys.path.insert(0, str(Path(__file__).parent))
from card_tolerance import as_on_the_card  # noqa: E402

HEADS, DIM = 2, 32


def _write_doubled(cache: torch.Tensor, pos: torch.Tensor, x: torch.Tensor) -> None:
    cache.index_copy_(2, pos, x * 2.0)


def _write_as_is(cache: torch.Tensor, pos: torch.Tensor, x: torch.Tensor) -> None:
    cache.index_copy_(2, pos, x)


def _steps(fn, length: int, positions=(3, 5, 9)):
    """Run compiled `fn` on a cache of `length` rows at each position; the card's and
    eager's caches, each launch's LPDDR5 bytes, and the cache's kept blocks after each."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="spyre")
    cache = torch.zeros(1, HEADS, length, DIM, dtype=torch.float16)
    want = cache.clone()
    blocks = []
    gen = torch.Generator().manual_seed(length)
    with telemetry.recording() as rec:
        for p in positions:
            x = torch.randn(1, HEADS, 1, DIM, generator=gen).half()
            pos = torch.tensor([p])
            compiled(cache, pos, x)
            fn(want, pos, x)
            entry = images()._valid_entry(cache)
            blocks.append(
                sorted((i.block.region, i.block.offset) for i in entry.images.values())
                if entry
                else None
            )
    return cache, want, [launch.report["lpddr_bytes"] for launch in rec.launches], blocks


def test_a_cache_write_stores_only_its_rows_in_place(card) -> None:
    # hand-computed: the kernel loads x and stores x * 2, each [1, 2, 1, 32] f16, whose
    # stick image is 2 sticks of 64 elements (128 bytes each): 256 bytes in, 256 out,
    # whatever the cache's length
    stick_bytes = 128
    want_bytes = 2 * HEADS * stick_bytes
    for length in (16, 256):
        cache, want, lpddr, blocks = _steps(_write_doubled, length)
        assert np.array_equal(cache.numpy(), as_on_the_card(want.numpy()))
        assert lpddr == [want_bytes] * 3, (length, lpddr)
        # the cache's image: one block, the same at every step (written in place)
        assert blocks[0] is not None and len(blocks[0]) == 1
        assert blocks == [blocks[0]] * 3, blocks


def test_the_kept_image_holds_the_written_cache(card) -> None:
    from spyre_ir.interp import dlfloat16
    from spyre_ir.layout import unstickify
    from spyre_ir.runtime.card import get_card

    cache, want, _, _ = _steps(_write_doubled, 16)
    (image,) = images()._valid_entry(cache).images.values()
    raw = get_card().memory.view(image.block.region, image.block.offset, image.size)
    codes = unstickify(raw.view(np.uint16), image.layout).reshape(cache.shape)
    on_card = np.asarray(dlfloat16.decode(codes)).astype(np.float16)
    assert np.array_equal(on_card, as_on_the_card(want.numpy()))


def test_rows_that_are_an_input_are_stored_in_place_too(card) -> None:
    """Rows passed in as they are (a graph input) are no row-store output: the write
    itself is the graph's result. spyre-lower-scatter stores it in place into the cache
    argument (a row-store kernel tied to it), so its LPDDR5 bytes do not grow with the
    cache either, and the cache is eager's."""
    lpddr = {}
    for length in (16, 256):
        cache, want, lpddr[length], _ = _steps(_write_as_is, length, positions=(3,))
        assert np.array_equal(cache.numpy(), as_on_the_card(want.numpy()))
    # the same bytes at both lengths, less than the smaller cache's image (16 positions x
    # 2 heads x one 128-byte stick): the cache is neither read nor written whole
    assert lpddr[16] == lpddr[256], lpddr
    assert lpddr[16][0] < 16 * HEADS * 128, lpddr


def test_rows_graph_returns_the_rows_in_the_writes_place() -> None:
    def f(cache, pos, x):
        return (torch.ops.aten.index_copy.default(cache, 2, pos, x * 2.0),)

    gm = torch.fx.experimental.proxy_tensor.make_fx(f, tracing_mode="fake")(
        torch.zeros(1, 2, 8, 4), torch.tensor([1]), torch.ones(1, 2, 1, 4)
    )
    writes = find_row_writes(gm.graph)
    assert list(writes) == [0] and writes[0].source == 0 and writes[0].dim == 2
    rows = rows_graph(gm)
    (out,) = rows.graph.output_node().args[0]
    assert out.target is torch.ops.aten.mul.Tensor
    assert not any(n.target is torch.ops.aten.index_copy.default for n in rows.graph.nodes)
    # the original stays whole (the CPU fallback)
    assert any(n.target is torch.ops.aten.index_copy.default for n in gm.graph.nodes)


def _grow(cache: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.cat([cache, x * 2.0], dim=2)


def test_a_bucketed_cache_grows_on_the_card(card) -> None:
    """DynamicCache-style growth under bucketing: after the bucket's first step the cache
    neither crosses the link nor moves on the card; only the new rows are written (and
    fetched), and the result fed back in is the same padded tensor with the same block."""
    from spyre_ir.runtime.card import get_card

    card.setenv("SPYRE_BUCKET_MIN", "32")
    torch._dynamo.reset()
    compiled = torch.compile(_grow, backend="spyre")  # dynamic after the 2nd length
    gen = torch.Generator().manual_seed(0)
    cache = torch.randn(1, HEADS, 4, DIM, generator=gen).half()
    want = torch.from_numpy(as_on_the_card(cache.numpy()))
    cache = want.clone()
    moved, blocks = [], []
    for _ in range(5):
        x = torch.randn(1, HEADS, 1, DIM, generator=gen).half()
        with get_card().timeline.recording_steps() as log:
            cache = compiled(cache, x)
            get_card().synchronize()
        want = torch.from_numpy(as_on_the_card(_grow(want, x).numpy()))
        assert torch.equal(cache, want)
        moved.append(
            {e: sum(s.nbytes for s in log if s.engine == e) for e in ("h2d", "d2h", "dma")}
        )
        # the padded tensor `cache` was cut from (none while the graph is static, the first
        # length; other tests' graphs may still be alive)
        cut = [
            g.padded_results[id(cache)] for g in _bucketed_graphs() if id(cache) in g.padded_results
        ]
        cut = [padded for ref, _, padded in cut if ref() is cache]
        if cut:
            (padded,) = cut
            entry = images()._valid_entry(padded)
            blocks.append([(i.block.region, i.block.offset) for i in entry.images.values()])
    rows_bytes = HEADS * 128  # the new rows' stick image: 2 sticks of 128 bytes
    cache_bytes = HEADS * 32 * 128  # the padded cache's image (capacity 32)
    for step in moved[3:]:  # static first, then the bucket compiled and uploaded
        assert step["dma"] == 0 and step["d2h"] == rows_bytes, moved
        assert step["h2d"] < cache_bytes // 4, moved  # x and the lengths only
    assert len(blocks) == 4 and all(b == blocks[0] and len(b) == 1 for b in blocks), blocks


def _bucketed_graphs():
    import gc

    from spyre_ir.runtime.dynamic import BucketedGraph

    return [o for o in gc.get_objects() if type(o) is BucketedGraph]


def test_a_bucketed_cache_outgrowing_its_bucket_is_copied_on_the_card(card) -> None:
    """When the length passes the bucket's capacity (8 here), the next bucket's padded
    cache is made on the card by copying the kept image into a larger block (a dma): the
    cache crosses the link neither way, at the growth nor after it, and the values stay
    those of eager."""
    from spyre_ir.runtime.card import get_card

    card.setenv("SPYRE_BUCKET_MIN", "8")
    torch._dynamo.reset()
    compiled = torch.compile(_grow, backend="spyre")
    gen = torch.Generator().manual_seed(1)
    want = torch.from_numpy(
        as_on_the_card(torch.randn(1, HEADS, 4, DIM, generator=gen).half().numpy())
    )
    cache = want.clone()
    moved = {}
    for _ in range(8):  # lengths 5 .. 12: the static graph, then buckets of 8 and 16
        x = torch.randn(1, HEADS, 1, DIM, generator=gen).half()
        with get_card().timeline.recording_steps() as log:
            cache = compiled(cache, x)
            get_card().synchronize()
        want = torch.from_numpy(as_on_the_card(_grow(want, x).numpy()))
        assert torch.equal(cache, want), cache.shape[2]
        moved[cache.shape[2]] = {
            e: sum(s.nbytes for s in log if s.engine == e) for e in ("h2d", "d2h", "dma")
        }
    rows_bytes = HEADS * 128  # the new rows' stick image: 2 sticks of 128 bytes
    small, large = HEADS * 8 * 128, HEADS * 16 * 128  # the padded caches' images
    # length 9 is the first step in the bucket of 16: its image is grown on the card
    assert moved[9]["dma"] == large, moved
    assert moved[9]["d2h"] == rows_bytes, moved
    # in: the new rows and the lengths only, as at any other step (the cache: none of it)
    assert moved[9]["h2d"] == moved[10]["h2d"] < small // 4, moved
    for length in (7, 8, 10, 11, 12):  # within a bucket: only the rows move
        assert moved[length]["dma"] == 0 and moved[length]["d2h"] == rows_bytes, moved
        assert moved[length]["h2d"] < small // 4, moved


def test_a_cache_on_the_device_catches_up_only_when_read(card) -> None:
    """A spyre-tensor cache written by row stores: each step writes the rows into its kept
    image only, and its own (row-major) bytes are not touched; when something reads the
    tensor (here `.cpu()`), the rows written since catch up first (an on-card copy of
    those rows only), and the values are eager's."""
    from spyre_ir.runtime import device
    from spyre_ir.runtime.card import get_card
    from spyre_ir.runtime.row_store import lagging_rows

    device.setup()
    compiled = torch.compile(_write_doubled, backend="spyre", dynamic=False)
    want = torch.zeros(1, HEADS, 64, DIM, dtype=torch.float16)
    cache = want.to("spyre")
    gen = torch.Generator().manual_seed(2)
    steps = []
    for p in (3, 5, 9, 5):  # 5 twice: a row written again
        x = torch.randn(1, HEADS, 1, DIM, generator=gen).half()
        pos = torch.tensor([p])
        xs, ps = x.to("spyre"), pos.to("spyre")
        get_card().synchronize()
        with get_card().timeline.recording_steps() as log:
            compiled(cache, ps, xs)
            get_card().synchronize()
        _write_doubled(want, pos, x)
        steps.append({e: sum(s.nbytes for s in log if s.engine == e) for e in ("dma", "d2h")})
    rows_bytes = HEADS * DIM * 2  # one position of the row-major f16 cache
    image_bytes = HEADS * 64 * 128  # the cache's stick image: a stick per position and head
    # the first step lays the cache out on the card; later ones restickify x and the
    # position only (the cache's kept image stays valid through AOTAutograd's write-back)
    assert steps[0]["dma"] > image_bytes, steps
    assert all(s["dma"] == steps[1]["dma"] < image_bytes // 32 for s in steps[1:]), steps
    assert lagging_rows(cache) == 4
    with get_card().timeline.recording_steps() as log:
        got = cache.cpu()
    assert lagging_rows(cache) == 0
    caught = [s for s in log if s.engine == "dma"]
    assert len(caught) == 1 and caught[0].nbytes == 4 * rows_bytes, [
        (s.label, s.nbytes) for s in log
    ]
    assert [s.engine for s in log if s.engine == "d2h"] == ["d2h"]  # the read itself
    assert np.array_equal(got.numpy(), as_on_the_card(want.numpy()))
    torch._dynamo.reset()


D64 = 64


def _decode_step(ck, cv, pos, x, wq, wk, wv):
    """One layer's decode step: q, k, v projections, both caches written at `pos`, and
    attention over the written caches (in f16 on the card)."""
    q = (x @ wq).view(1, 1, HEADS, D64).transpose(1, 2)
    k = (x @ wk).view(1, 1, HEADS, D64).transpose(1, 2)
    v = (x @ wv).view(1, 1, HEADS, D64).transpose(1, 2)
    ck.index_copy_(2, pos, k)
    cv.index_copy_(2, pos, v)
    return torch.softmax((q @ ck.transpose(-1, -2)) * 0.125, dim=-1) @ cv


def _decode_bytes(length: int):
    """One compiled decode step at position 3: its output, the caches and its report."""
    outs, caches, (report,) = _decode_steps(length, steps=1)
    return outs[0], caches, report


def test_attention_reads_the_caches_once_in_a_decode_step(card, tmp_path) -> None:
    """The KV writes that attention reads are row stores into the cache inputs (in
    place): a step's LPDDR5 bytes grow with the cache by one read of each cache (the
    attention's), and its results and caches are those of the one-hot select, bit for bit."""
    from spyre_ir.passes import lower_scatter

    reports, results = {}, {}
    for length in (16, 256):
        out, caches, reports[length] = _decode_bytes(length)
        results[length] = (out, caches)
        names = [k["name"] for k in reports[length]["kernels"]]
        assert sum(n.startswith("store_rows") for n in names) == 2, names
    grown = reports[256]["lpddr_bytes"] - reports[16]["lpddr_bytes"]
    once = 2 * HEADS * (256 - 16) * D64 * 2  # both caches' added positions, read once
    assert once <= grown < 1.01 * once, (grown, once)
    card.setattr(lower_scatter, "stores_in_place", lambda op: False)
    card.setenv("SPYRE_CACHE_DIR", str(tmp_path / "one-hot"))  # compiled anew
    out, caches, one_hot = _decode_bytes(256)
    assert torch.equal(out, results[256][0])
    assert all(torch.equal(a, b) for a, b in zip(caches, results[256][1]))
    # the select read each old cache and wrote the new one: two images more per cache
    # (its broadcast row computed in its kernel since spyre-schedule-chains defers it);
    # counted as the cores move them (delivered_bytes): the served bytes of the two runs
    # also differ by the other kernels' multicast boxes (a few sticks fewer one-hot)
    image = HEADS * 256 * D64 * 2
    assert one_hot["delivered_bytes"] - reports[256]["delivered_bytes"] >= 2 * 2 * image, (
        one_hot["delivered_bytes"], reports[256]["delivered_bytes"])  # fmt: skip
    torch._dynamo.reset()


def _put_as_is(cache: torch.Tensor, pos: torch.Tensor, x: torch.Tensor) -> None:
    cache[:, :, pos] = x


def _launches(fn, positions):
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="spyre")
    cache = torch.zeros(1, HEADS, 16, DIM, dtype=torch.float16)
    want = cache.clone()
    gen = torch.Generator().manual_seed(3)
    with telemetry.recording() as rec:
        for p in positions:
            x = torch.randn(1, HEADS, 1, DIM, generator=gen).half()
            compiled(cache, torch.tensor([p]), x)
            fn(want, torch.tensor([p]), x)
    assert np.array_equal(cache.numpy(), as_on_the_card(want.numpy()))
    return [[k["name"] for k in launch.report["kernels"]] for launch in rec.launches]


def test_the_position_wrap_is_left_to_the_row_store(card) -> None:
    """The frontend's wrap of index_copy_'s positions (i < 0 ? i + S : i) is left to the
    row store, which wraps a position itself: each launch is the row store alone, no
    kernel for the wrap. A negative position (slice assignment) still counts from the end."""
    assert _launches(_write_as_is, (3, 9)) == [["store_rows_0"]] * 2
    names = _launches(_put_as_is, (-3, 4))
    assert all(launch[-1] == "store_rows_0" for launch in names), names


def _eager_error(fn, length: int, position: int) -> str:
    cache = torch.zeros(1, HEADS, length, DIM, dtype=torch.float16)
    x = torch.ones(1, HEADS, 1, DIM, dtype=torch.float16)
    try:
        fn(cache, torch.tensor([position]), x)
    except IndexError as error:
        return str(error)
    raise AssertionError(f"eager accepts position {position}")


@pytest.mark.parametrize("fn", [_write_doubled, _write_as_is, _put_as_is])
@pytest.mark.parametrize("position", [-1, 16, -17])
def test_a_position_eager_refuses_raises_on_the_card(card, fn, position) -> None:
    """index_copy_ refuses a negative position and any position past the cache, as
    eager does (index_put counts -1 from the end, so only 16 and -17 are refused there):
    the compiled call raises eager's IndexError, on the host-stored rows (`x * 2`) and on
    the row-store kernel (the rows an input), and a good position after it still works."""
    if fn is _put_as_is and position == -1:
        return  # a position index_put accepts: test_the_position_wrap_is_left_to_the_row_store
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="spyre")
    cache = torch.zeros(1, HEADS, 16, DIM, dtype=torch.float16)
    x = torch.ones(1, HEADS, 1, DIM, dtype=torch.float16)
    want = _eager_error(fn, 16, position)
    with pytest.raises(IndexError, match=re.escape(want.split(": ")[-1])):
        compiled(cache, torch.tensor([position]), x)
    compiled(cache, torch.tensor([3]), x)
    expected = torch.zeros_like(cache)
    fn(expected, torch.tensor([3]), x)
    assert np.array_equal(cache.numpy(), as_on_the_card(expected.numpy()))
    torch._dynamo.reset()


def _decode_steps(length: int, steps: int = 3):
    """`steps` compiled decode steps at positions 3, 4, ..: the outputs, the caches, and
    each launch's report."""
    torch._dynamo.reset()
    gen = torch.Generator().manual_seed(length)
    weights = [torch.randn(HEADS * D64, HEADS * D64, generator=gen).half() * 0.1 for _ in range(3)]
    ck = torch.randn(1, HEADS, length, D64, generator=gen).half()
    cv = torch.randn(1, HEADS, length, D64, generator=gen).half()
    compiled = torch.compile(_decode_step, backend="spyre", dynamic=False)
    outs = []
    with telemetry.recording() as rec:
        for step in range(steps):
            x = torch.randn(1, 1, HEADS * D64, generator=gen).half()
            outs.append(compiled(ck, cv, torch.tensor([3 + step]), x, *weights))
    torch._dynamo.reset()
    return outs, (ck, cv), [launch.report for launch in rec.launches]


def test_a_decode_step_writes_the_kept_caches_without_copying_them(card, tmp_path) -> None:
    """The caches' slots are `written` (a row-store kernel's result is tied to them), so
    each launch hands the kept caches' buffers to the simulator, which stores the new rows
    into them: no byte of a cache is copied in (the report's tied_copy_bytes). Without the
    tie in the recipe each launch copies both caches in (DLFloat16 codes, 2 bytes an
    element, as a card launch hands them to the simulator); the outputs and caches are the same bits over several steps."""
    from spyre_ir.dialects import recipe as R

    length = 64
    outs, caches, reports = _decode_steps(length)
    assert [r["tied_copy_bytes"] for r in reports] == [0, 0, 0]
    card.setattr(R, "written_inputs", lambda entry: set())
    card.setenv("SPYRE_CACHE_DIR", str(tmp_path / "untied"))  # compiled anew
    untied_outs, untied_caches, untied = _decode_steps(length)
    cache_bytes = 2 * HEADS * length * D64 * 2  # both caches, as the simulator holds them
    assert [r["tied_copy_bytes"] for r in untied] == [cache_bytes] * 3
    assert all(torch.equal(a, b) for a, b in zip(outs, untied_outs))
    assert all(torch.equal(a, b) for a, b in zip(caches, untied_caches))
    # the step's card work is the same: the tie saves host copies, not LPDDR5 traffic
    assert [r["lpddr_bytes"] for r in reports] == [r["lpddr_bytes"] for r in untied]


def _write_and_sum(cache: torch.Tensor, pos: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    cache.index_copy_(2, pos, x)
    return cache.sum(dim=2)


def _per_launch(fn, length: int, positions=(3, 5, 9, 3)):
    """Per compiled call of `fn` on a host cache: the timeline's bytes by engine, the
    simulator's tied_copy_bytes, the stick-image bytes the recipe writes into and reads
    out of the card's memory on the host (whole images: `Slot.write_image`/`read_into`),
    and the cache's kept blocks after the call; the cache is eager's at the end."""
    from spyre_ir.runtime import recipe
    from spyre_ir.runtime.card import get_card

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="spyre")
    cache = torch.zeros(1, HEADS, length, DIM, dtype=torch.float16)
    want = cache.clone()
    gen = torch.Generator().manual_seed(4)
    moved = {"write": 0, "read": 0}
    write_image, read_into = recipe.Slot.write_image, recipe.Slot.read_into

    def counted(name, method):
        def run(slot, *args, **kwargs):
            moved[name] += slot.size
            return method(slot, *args, **kwargs)

        return run

    steps = []
    recipe.Slot.write_image = counted("write", write_image)
    recipe.Slot.read_into = counted("read", read_into)
    try:
        for p in positions:
            x = torch.randn(1, HEADS, 1, DIM, generator=gen).half()
            pos = torch.tensor([p])
            get_card().synchronize()
            moved.update(write=0, read=0)
            with telemetry.recording() as rec, get_card().timeline.recording_steps() as log:
                got = compiled(cache, pos, x)
                get_card().synchronize()
            expected = fn(want, pos, x)
            if expected is not None:
                # The sum of the card's cache (its rows held as DLFloat16), accumulated in
                # f32 and rounded once: within one DLFloat16 step (2^-9) of its exact value.
                held = torch.from_numpy(as_on_the_card(want.numpy()).astype(np.float32))
                np.testing.assert_allclose(
                    got.float().numpy(), held.sum(dim=2).numpy(), rtol=2**-9, atol=2**-14
                )
            step = {e: sum(s.nbytes for s in log if s.engine == e) for e in ("h2d", "d2h", "dma")}
            step["tied"] = [launch.report["tied_copy_bytes"] for launch in rec.launches]
            entry = images()._valid_entry(cache)
            step["blocks"] = entry and sorted(
                (i.block.region, i.block.offset) for i in entry.images.values()
            )
            steps.append({**step, **moved})
    finally:
        recipe.Slot.write_image, recipe.Slot.read_into = write_image, read_into
    assert np.array_equal(cache.numpy(), as_on_the_card(want.numpy()))
    torch._dynamo.reset()
    return steps


@pytest.mark.parametrize("fn", [_write_as_is, _write_and_sum, _put_as_is])
def test_a_returned_cache_is_the_inputs_image(card, fn) -> None:
    """A graph whose result is the written cache itself (AOTAutograd returns a mutated
    input; the rows a graph input, so the row-store kernel's tied result is that output):
    the output slot is tied to the cache's input slot (`recipe.slot ... tied 0`), bound to
    its kept image's block, so per call nothing cache-sized is copied, restickified or
    read again, on the card or on the host, and the cache keeps one block."""
    length = 256
    image = HEADS * length * 128  # the cache's stick image: a stick per position and head
    steps = _per_launch(fn, length)
    assert steps[0]["h2d"] > image, steps  # the first call stages the cache
    for step in steps[1:]:
        assert step["tied"] == [0], steps
        assert step["dma"] == 0 and step["h2d"] < image // 64 and step["d2h"] < image // 64, steps
        # x, the position and the rows (and the sum) only: no whole image of the cache
        assert step["write"] < image // 64 and step["read"] < image // 64, steps
    assert all(s["blocks"] == steps[0]["blocks"] and len(s["blocks"]) == 1 for s in steps), steps


def test_a_row_store_is_replayed_at_each_launchs_positions(card, monkeypatch) -> None:
    """A row store's later launches replay its first run's recording (spyre_ir/sim/replay.py
    `replayable`) with the stores' boxes cut at the new positions: the cache matches eager
    at every step, and a bad position between them raises as eager does."""
    from spyre_ir.sim import engine

    replays = []
    real = engine._Program._replay

    def counted(self, recording, memories):
        replays.append(self.op.sym_name.data)
        return real(self, recording, memories)

    monkeypatch.setattr(engine._Program, "_replay", counted)
    torch._dynamo.reset()
    compiled = torch.compile(_write_as_is, backend="spyre")
    cache = torch.zeros(1, HEADS, 16, DIM, dtype=torch.float16)
    want = cache.clone()
    gen = torch.Generator().manual_seed(7)
    for p in (3, 5, 16, 9):
        x = torch.randn(1, HEADS, 1, DIM, generator=gen).half()
        if p == 16:
            message = _eager_error(_write_as_is, 16, p)
            with pytest.raises(IndexError, match=re.escape(message.split(": ")[-1])):
                compiled(cache, torch.tensor([p]), x)
            continue
        compiled(cache, torch.tensor([p]), x)
        _write_as_is(want, torch.tensor([p]), x)
        assert np.array_equal(cache.numpy(), as_on_the_card(want.numpy()))
    # positions 5 and 9 replay (16 is refused on the host, before the launch)
    assert [name for name in replays if name.startswith("store_rows")] == ["store_rows_0"] * 2
    torch._dynamo.reset()
