"""Artifacts and prepared recipes (spyre_ir/runtime/artifact.py, runtime/recipe.py).

An L1 graph is compiled to an artifact (MLIR text with the L3 programs and the recipe
plan), parsed once into a PreparedRecipe and launched on the simulated card. Results are
compared with the L1 interpreter; stick images with spyre_ir.layout; simulated time with
the cost model's transfer times plus the simulator's report.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import TensorType

from spyre_ir import cost_model
from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects.recipe import SlotOp, content_hash, stored_hash, with_hash
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.interp import dlfloat16
from spyre_ir.interp.tensor import run_module
from spyre_ir.layout import stickify
from spyre_ir.registry import make_context
from spyre_ir.runtime import telemetry
from spyre_ir.runtime.artifact import (
    ArtifactError,
    cache_key,
    compile_artifact,
    load_artifact,
    print_module,
)
from spyre_ir.runtime.cache import ArtifactCache, ArtifactCacheWarning
from spyre_ir.runtime.card import Card, DeviceArray
from spyre_ir.runtime.recipe import LaunchError, PreparedRecipe, Slot
from spyre_ir.runtime.streams import Stream

# x @ w with a k of 100 (padded to two 64-element sticks), then exp and a row sum.
GRAPH = """
func.func @main(%x: tensor<64x100xf16>, %w: tensor<100x32xf16>) -> (tensor<64x32xf16>, tensor<64x1xf16>) {
  %y = spyre.matmul %x, %w : tensor<64x100xf16>, tensor<100x32xf16> -> tensor<64x32xf16>
  %z = spyre.exp %y : tensor<64x32xf16> -> tensor<64x32xf16>
  %s = spyre.sum %z dims = [1] keepdim : tensor<64x32xf16> -> tensor<64x1xf16>
  func.return %z, %s : tensor<64x32xf16>, tensor<64x1xf16>
}
"""


def l1(text: str = GRAPH):
    return parse_and_verify(make_context(), text, "graph.mlir")


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return compile_artifact(l1(), name="g", cache=ArtifactCache(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def card() -> Card:
    return Card()


def inputs(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((64, 100)) / 10).astype(np.float16),
            (rng.standard_normal((100, 32)) / 10).astype(np.float16)]  # fmt: skip


def reference(args: list[np.ndarray]) -> list[np.ndarray]:
    return list(run_module(l1(), args))


# ----------------------------------------------------------------------- artifacts
def test_artifact_is_verified_mlir_with_its_content_hash(artifact) -> None:
    assert artifact.content_hash == stored_hash(artifact.text) == content_hash(artifact.text)
    module = load_artifact(artifact.text)
    names = [op.name for op in module.body.block.ops]
    assert names == ["func.func", "recipe.plan"]
    assert artifact.text.count("core.program @") >= 2  # the matmul and the row kernels


def test_tampered_artifact_is_refused(artifact) -> None:
    tampered = artifact.text.replace("size 16384", "size 16385", 1)
    assert tampered != artifact.text
    with pytest.raises(ArtifactError, match="content hash mismatch"):
        load_artifact(tampered, "g.mlir")
    with pytest.raises(ArtifactError, match="holds no single recipe.plan"):
        load_artifact("func.func @main() {\n  func.return\n}\n")


def test_artifact_that_does_not_verify_is_a_located_error(artifact) -> None:
    # Valid hash, broken plan: the slot size no longer matches its layout.
    broken = artifact.text.replace("size 16384", "size 16000", 1)
    broken = with_hash(broken, content_hash(broken))
    with pytest.raises(
        ArtifactError, match=r"g\.mlir:\d+:\d+: error: 'recipe.slot' @in0: size 16000 bytes"
    ):
        load_artifact(broken, "g.mlir")


def test_compile_records_stages_and_ops(tmp_path: Path) -> None:
    with telemetry.recording() as rec:
        compile_artifact(l1(), name="g", cache=ArtifactCache(tmp_path))
    (record,) = rec.compiles
    assert {"dataflow", "units", "recipe"} <= set(record.stage_seconds)
    assert record.ir_ops["tensor"] == 5  # func.func, matmul, exp, sum, return
    assert (
        record.ir_ops["tensor"]
        < record.ir_ops["dataflow"]
        < record.ir_ops["units"]
        < record.ir_ops["recipe"]
    )
    assert record.kernels >= 2


def test_disk_cache_hit_miss_and_corruption(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    first = compile_artifact(l1(), name="g", cache=cache)
    second = compile_artifact(l1(), name="g", cache=cache)
    assert (first.from_cache, second.from_cache) == (False, True)
    assert second.text == first.text and (cache.hits, cache.misses) == (1, 1)
    # Another config is another key.
    small = compile_artifact(l1(), config=cache_config(), name="g", cache=cache)
    assert not small.from_cache and small.text != first.text

    entry = cache.path_for(default_key())
    entry.write_bytes(entry.read_bytes()[:-40])  # a torn write
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rebuilt = compile_artifact(l1(), name="g", cache=cache)
        again = compile_artifact(l1(), name="g", cache=cache)
    assert [w.category for w in caught] == [ArtifactCacheWarning]
    assert str(entry) in str(caught[0].message)
    assert not rebuilt.from_cache and rebuilt.text == first.text and again.from_cache


def test_cache_entry_failing_the_artifact_hash_is_rebuilt(tmp_path: Path) -> None:
    cache = ArtifactCache(tmp_path)
    first = compile_artifact(l1(), name="g", cache=cache)
    cache.put(
        default_key(), first.text.replace("size 16384", "size 16000", 1)
    )  # sound entry, wrong artifact
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rebuilt = compile_artifact(l1(), name="g", cache=cache)
    assert [w.category for w in caught] == [ArtifactCacheWarning]
    assert "it does not load: g: content hash mismatch" in str(caught[0].message)
    assert not rebuilt.from_cache and rebuilt.text == first.text


def test_cache_entry_that_does_not_parse_is_deleted_and_rebuilt(tmp_path: Path) -> None:
    """Sound hashes, the cache's own mac, but text that does not parse: deleted on the
    first load (it used to stay, sending every later process to the CPU)."""
    cache = ArtifactCache(tmp_path)
    first = compile_artifact(l1(), name="g", cache=cache)
    broken = first.text.replace("core.program", "core.progrm", 1)
    cache.put(default_key(), with_hash(broken, content_hash(broken)))
    with pytest.warns(
        ArtifactCacheWarning, match="it does not load: .*core.progrm is not registered"
    ):
        rebuilt = compile_artifact(l1(), name="g", cache=cache)
    assert not rebuilt.from_cache and rebuilt.text == first.text
    again = compile_artifact(l1(), name="g", cache=cache)  # the rebuilt entry was stored
    assert again.from_cache and again.module is not None and again.text == first.text


def cache_config():
    return DEFAULT_CONFIG.with_options(cores=8)


def default_key() -> str:
    """The cache key compile_artifact uses for GRAPH with the default config."""
    return cache_key(print_module(l1()), DEFAULT_CONFIG, False)


# --------------------------------------------------------------------- stick images
@pytest.mark.parametrize("element", ["f16", "bf16", "f32", "i64", "i1"])
def test_slot_stick_image_matches_layout_maths(element: str) -> None:
    shape = (3, 5, 70)
    t = parse_and_verify(make_context(), f"func.func @f(%a: tensor<3x5x70x{element}>) {{\n func.return\n}}",
                         "t.mlir").body.block.first_op.function_type.inputs.data[0]  # fmt: skip
    assert isinstance(t, TensorType)
    slot = Slot.from_op(SlotOp("in0", "input", 0, t))
    rng = np.random.default_rng(1)
    values = (rng.standard_normal(shape) * 4).astype(slot.host_dtype)
    if element == "bf16":  # bf16 values in float32, as the interpreters hold them
        values = (values.view(np.uint32) & 0xFFFF0000).view(np.float32)
    if element == "f16":  # DLFloat16 values in float32, as the simulator holds them
        values = dlfloat16.round_to_dlf16(values)
    image = slot.stick_image(values, pad=7.0)
    assert image.size == slot.size
    stored = image.view(slot.device_dtype)
    if element in ("f16", "bf16"):  # DLFloat16 codes; 7.0 = 2^(33-31) x (1 + 384/512)
        # (bf16 values are DLFloat16 values: 7 fraction bits fit in 9, the range in 2^+-32)
        want = stickify(dlfloat16.encode(values), slot.layout, pad_value=33 << 9 | 384)
    else:
        want = stickify(values.astype(slot.device_dtype), slot.layout, pad_value=7)
    np.testing.assert_array_equal(stored, want)
    np.testing.assert_array_equal(slot.read_image(image), values)


# --------------------------------------------------------------------- launching
def test_launch_to_host_matches_the_interpreter(artifact, card: Card) -> None:
    recipe = PreparedRecipe.from_artifact(artifact, card)
    args = inputs()
    outs = recipe.launch_to_host(args)
    card.synchronize()
    for got, want in zip(outs, reference(args), strict=True):
        np.testing.assert_allclose(
            got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3
        )
    assert card.memory_stats().allocated_bytes == 0  # the launch freed its slot blocks


def test_launch_only_enqueues(artifact, card: Card) -> None:
    recipe = PreparedRecipe.from_artifact(artifact, card)
    with telemetry.recording() as rec:
        outs = recipe.launch_to_host(inputs())
        assert card.timeline.pending() > 0 and not rec.launches
        card.synchronize()
    (launch,) = rec.launches
    assert launch.graph == "g" and launch.trace is None and launch.report["simulated_us"] > 0
    assert np.isfinite(outs[0]).all()


def test_simulated_time_is_transfers_plus_compute(artifact, card: Card) -> None:
    recipe = PreparedRecipe.from_artifact(artifact, card)
    with telemetry.recording(trace=True) as rec:
        recipe.launch_to_host(inputs())
        card.synchronize()
    (launch,) = rec.launches
    assert launch.trace is not None and launch.trace["traceEvents"]
    # One stream: the uploads (one transfer), compute, the downloads (one transfer).
    link = sum(
        cost_model.host_transfer_s(sum(s.size for s in slots), card.config)
        for slots in (recipe.inputs, recipe.outputs)
    )
    assert len(recipe.inputs) > 1  # so the fixed cost paid once is what is tested
    assert card.now_s == pytest.approx(link + launch.report["simulated_us"] * 1e-6)


def test_device_arrays_in_and_out(artifact, card: Card) -> None:
    recipe = PreparedRecipe.from_artifact(artifact, card)
    x, w = inputs(3)
    # w held transposed on the card (a strided view, as torch's w.t() would be).
    wt = card.upload(np.ascontiguousarray(w.T))
    w_view = DeviceArray(card, wt.block, (100, 32), (1, 100), 0, np.float16)
    outs = recipe.launch([card.upload(x), w_view])
    card.synchronize()
    assert all(isinstance(o, DeviceArray) and o.is_contiguous() for o in outs)
    for got, want in zip(outs, reference([x, w]), strict=True):
        np.testing.assert_allclose(
            got.to_host().astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3
        )
    # Everything stayed on the card: no d2h, two on-card restickifies per direction.
    assert card.timeline.engine_busy_s["d2h"] == 0.0
    assert card.timeline.engine_busy_s["dma"] == pytest.approx(
        sum(
            cost_model.device_copy_s(s.size, card.config) for s in (*recipe.inputs, *recipe.outputs)
        )
    )
    for o in outs:
        card.free(o.block)


def test_f32_host_arrays_are_converted_at_the_transfer(artifact, card: Card) -> None:
    """f32 host data for f16 slots is rounded on the way in: the same bits as f16 data."""
    recipe = PreparedRecipe.from_artifact(artifact, card)
    args = inputs(5)
    wide = recipe.launch_to_host([a.astype(np.float32) for a in args])
    narrow = recipe.launch_to_host(args)
    card.synchronize()
    for a, b in zip(wide, narrow, strict=True):
        assert a.dtype == np.float32  # DLFloat16 values, exactly
        np.testing.assert_array_equal(a, b)


def test_two_streams_overlap_uploads_with_compute(artifact) -> None:
    def run(streams: int) -> float:
        card = Card()
        recipe = PreparedRecipe.from_artifact(artifact, card)
        lanes = [card.default_stream] + [Stream(card) for _ in range(streams - 1)]
        for i in range(4):
            recipe.launch_to_host(inputs(i), lanes[i % streams])
        card.synchronize()
        return card.now_s

    assert run(2) < run(1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (lambda: inputs()[:1], "1 arguments, the recipe takes 2"),
        (
            lambda: [inputs()[0].T, inputs()[1]],
            r"argument 0 has shape \[100, 64\], slot @in0 takes \[64, 100\]",
        ),
        (
            lambda: [inputs()[0].astype(np.int32), inputs()[1]],
            "argument 0 is int32, slot @in0 holds f16",
        ),
    ],
)
def test_bad_arguments_are_clear_errors(artifact, card: Card, args, message: str) -> None:
    recipe = PreparedRecipe.from_artifact(artifact, card)
    for launch in (recipe.launch_to_host, recipe.launch):
        with pytest.raises(LaunchError, match=message):
            launch(args())
    assert card.timeline.pending() == 0 and card.memory_stats().allocated_bytes == 0


def test_stream_of_another_card_is_refused(artifact, card: Card) -> None:
    recipe = PreparedRecipe.from_artifact(artifact, card)
    with pytest.raises(LaunchError, match="belongs to another card"):
        recipe.launch(inputs(), Card().default_stream)
    assert card.memory_stats().allocated_bytes == 0


def test_bf16_graph_runs_on_the_card(tmp_path: Path, card: Card) -> None:
    text = GRAPH.replace("f16", "bf16")
    art = compile_artifact(l1(text), name="b", cache=ArtifactCache(tmp_path))
    assert re.search(r"recipe.slot @in0 \"input\" 0 : tensor<64x100xbf16", art.text)
    recipe = PreparedRecipe.from_artifact(art, card)
    args = [a.astype(np.float32) for a in inputs(7)]
    outs = recipe.launch_to_host(args)
    card.synchronize()
    for got, want in zip(outs, run_module(l1(text), args), strict=True):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


def test_the_runtime_doc_recipe_example_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The example of docs/runtime.md, "Recipes and artifacts", on a fresh card."""
    from spyre_ir.runtime import card as card_module

    monkeypatch.setattr(card_module, "_card", None)
    monkeypatch.setenv("SPYRE_CACHE_DIR", str(tmp_path))
    text = (Path(__file__).resolve().parent.parent / "docs" / "runtime.md").read_text()
    (example,) = [
        b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "PreparedRecipe" in b
    ]
    namespace: dict = {}
    exec(example, namespace)
    assert namespace["on_host"][0].tolist() == [[50.0] * 32] * 64
    assert namespace["card"].memory_stats().allocated_bytes == 0


def test_failed_launch_frees_its_blocks_and_the_card_goes_on(
    artifact, card: Card, monkeypatch
) -> None:
    from spyre_ir.runtime.streams import StepError
    from spyre_ir.sim import engine

    recipe = PreparedRecipe.from_artifact(artifact, card)

    def broken(*args, **kwargs):
        raise RuntimeError("simulated fault")

    monkeypatch.setattr(engine, "simulate", broken)
    recipe.launch_to_host(inputs())
    with pytest.raises(StepError, match="g: compute @main.*simulated fault"):
        card.synchronize()
    assert card.memory_stats().allocated_bytes == 0
    monkeypatch.undo()
    outs = recipe.launch_to_host(inputs())
    card.synchronize()
    np.testing.assert_allclose(outs[0].astype(np.float32), reference(inputs())[0].astype(np.float32),
                               rtol=2e-3, atol=2e-3)  # fmt: skip
