"""What the compile-time shortcuts must not change.

* A freshly compiled artifact carries its module, so preparing it parses nothing; it must
  run exactly like the same artifact parsed from its text (a cache hit), and recipes
  prepared from one artifact share that module without changing it.
* Slots stage tensors by `spyre_ir.layout.stickify` (numpy reshapes of the stick layout,
  no index per element); the bytes must put every element at the offset
  `host_to_device_offsets` gives it, for every layout.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, TensorType

from spyre_ir.diagnostics import parse_and_verify
from spyre_ir.dialects.recipe import SlotOp
from spyre_ir.dialects.stick_layout import StickLayoutAttr
from spyre_ir.interp import dlfloat16
from spyre_ir.layout import generic_layout, host_to_device_offsets
from spyre_ir.registry import make_context
from spyre_ir.runtime import recipe as recipe_module
from spyre_ir.runtime.artifact import compile_artifact, print_module
from spyre_ir.runtime.cache import ArtifactCache
from spyre_ir.runtime.card import Card
from spyre_ir.runtime.recipe import PreparedRecipe, Slot

# A matmul with a padded k (100 -> two sticks), a softmax-like row kernel and a transpose.
GRAPH = """
func.func @main(%x: tensor<64x100xf16>, %w: tensor<100x32xf16>) -> (tensor<64x32xf16>, tensor<32x64xf16>) {
  %y = spyre.matmul %x, %w : tensor<64x100xf16>, tensor<100x32xf16> -> tensor<64x32xf16>
  %z = spyre.exp %y : tensor<64x32xf16> -> tensor<64x32xf16>
  %t = spyre.transpose %z perm = [1, 0] : tensor<64x32xf16> -> tensor<32x64xf16>
  func.return %z, %t : tensor<64x32xf16>, tensor<32x64xf16>
}
"""


def l1():
    return parse_and_verify(make_context(), GRAPH, "graph.mlir")


def inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [(rng.standard_normal((64, 100)) / 10).astype(np.float16),
            (rng.standard_normal((100, 32)) / 10).astype(np.float16)]  # fmt: skip


def run(recipe: PreparedRecipe, card: Card) -> list[np.ndarray]:
    outs = recipe.launch_to_host(inputs())
    card.synchronize()
    return outs


def test_fresh_artifact_is_prepared_without_parsing(tmp_path, monkeypatch) -> None:
    fresh = compile_artifact(l1(), name="g", cache=ArtifactCache(tmp_path))
    hit = compile_artifact(l1(), name="g", cache=ArtifactCache(tmp_path))
    assert not fresh.from_cache and fresh.module is not None
    # A hit is parsed and verified when it is loaded (runtime/cache.py) and brings its module.
    assert hit.from_cache and hit.text == fresh.text
    assert hit.module is not None and print_module(hit.module) == hit.text
    assert print_module(fresh.module) == fresh.text  # the module is what the text says

    card = Card()
    parsed = run(PreparedRecipe.from_artifact(hit, card), card)

    def no_parse(*args, **kwargs):
        raise AssertionError("a freshly compiled artifact was parsed")

    monkeypatch.setattr(recipe_module, "load_artifact", no_parse)
    first = PreparedRecipe.from_artifact(fresh, card)
    second = PreparedRecipe.from_artifact(fresh, card)  # shares the module with `first`
    for outs in (run(first, card), run(second, card)):
        for got, want in zip(outs, parsed, strict=True):
            np.testing.assert_array_equal(got, want)
    assert print_module(fresh.module) == fresh.text  # preparing and launching changed nothing
    with pytest.raises(AssertionError, match="was parsed"):
        PreparedRecipe.from_artifact(fresh.text, card)  # text alone is always parsed


def layouts():
    """Every generic layout (each dim order) of shapes with padded and exact sticks,
    size-1 dims and ranks 1 to 4."""
    for shape in [(70,), (64,), (3, 70), (128, 5), (1, 5, 64), (2, 3, 1, 130), (2, 1, 3, 4)]:
        for order in itertools.permutations(range(len(shape))):
            yield shape, order


@pytest.mark.parametrize("element", [Float16Type(), Float32Type(), IntegerType(1)], ids=str)
def test_slot_staging_matches_layout_maths_for_every_layout(element) -> None:
    rng = np.random.default_rng(5)
    for shape, order in layouts():
        elem_bytes = 1 if isinstance(element, IntegerType) else element.bitwidth // 8
        layout = generic_layout(shape, elem_bytes, order)
        t = TensorType(element, shape, StickLayoutAttr.from_layout(layout))
        slot = Slot.from_op(SlotOp("in0", "input", 0, t))
        assert slot.layout == layout
        values = (rng.standard_normal(shape) * 4).astype(slot.host_dtype)
        image = slot.stick_image(values, pad=3.0)
        # The card's codes of each element (f16: DLFloat16), placed by the layout maths.
        codes = slot.to_device_elements(values.reshape(-1))
        want = np.full(layout.device_elements, slot.to_device_elements(np.float32(3.0))[()],
                       dtype=slot.device_dtype)  # fmt: skip
        want[host_to_device_offsets(layout)] = codes
        np.testing.assert_array_equal(
            image.view(slot.device_dtype), want, err_msg=f"{shape} {order}"
        )
        read = slot.read_image(image)
        if slot.element == "f16":
            np.testing.assert_array_equal(read, dlfloat16.decode(codes).reshape(shape))
        else:
            np.testing.assert_array_equal(
                read, values.astype(slot.device_dtype).astype(slot.host_dtype)
            )
        assert not np.may_share_memory(read, image)  # device bytes get reused by later launches


def test_gc_paused_restores_the_collector_even_on_error() -> None:
    import gc

    from spyre_ir.runtime.artifact import gc_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError("a failing compile")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


CHAIN = """\
func.func @main(%a: tensor<64x100xf16>, %b: tensor<64x100xf16>) -> tensor<64x100xf16> {
  %0 = spyre.add %a, %b : tensor<64x100xf16>, tensor<64x100xf16> -> tensor<64x100xf16>
  %1 = spyre.mul %0, %b : tensor<64x100xf16>, tensor<64x100xf16> -> tensor<64x100xf16>
  %2 = spyre.exp %1 : tensor<64x100xf16> -> tensor<64x100xf16>
  func.return %2 : tensor<64x100xf16>
}
"""


def _compile_counting_prints(tmp_path, monkeypatch, pipeline: str) -> tuple[str, int]:
    """spyre-opt's output for `pipeline` on CHAIN, and how often a module was printed."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.printer import Printer

    from spyre_ir.tools import spyre_opt

    source, out = tmp_path / "chain.mlir", tmp_path / f"out{len(pipeline)}.mlir"
    source.write_text(CHAIN)
    printed = []
    original = Printer.print_op

    def print_op(self, op, *args, **kwargs):
        if isinstance(op, ModuleOp):
            printed.append(op)
        return original(self, op, *args, **kwargs)

    monkeypatch.setattr(Printer, "print_op", print_op)
    spyre_opt.main([str(source), "-p", pipeline, "-o", str(out)])
    return out.read_text(), len(printed)


def test_spyre_compile_output_is_the_sealed_text_printed_once(tmp_path, monkeypatch) -> None:
    # The artifact is printed once, by the sealing; its text is the output. With a pass
    # after the sealing one (a no-op here: the graph has no f32), the output is printed
    # afresh: the two must be the same bytes, and the artifact must parse back.
    sealed, prints = _compile_counting_prints(tmp_path, monkeypatch, "spyre-compile")
    fresh, fresh_prints = _compile_counting_prints(
        tmp_path, monkeypatch, "spyre-compile,spyre-compute-in-f16"
    )
    assert (prints, fresh_prints) == (1, 2)
    assert sealed == fresh
    assert "recipe.plan" in sealed
    module = parse_and_verify(make_context(), sealed, "artifact.mlir")
    assert print_module(module).strip() == sealed.strip()


def test_parser_reuses_a_repeated_type_and_parses_what_xdsl_parses() -> None:
    # Types read again from their text must be the types xDSL's own parser makes, for
    # every lit input (layouts, LX and DDR types, aliases), and a repeated type's text
    # gives the same object.
    import io
    from pathlib import Path

    from xdsl.parser import Parser
    from xdsl.printer import Printer

    from spyre_ir.diagnostics import LocatedParser

    def text_of(module) -> str:
        out = io.StringIO()
        Printer(stream=out).print_op(module)
        return out.getvalue()

    ctx = make_context()
    files = sorted(Path(__file__).parent.glob("filecheck/**/*.mlir"))
    compared = 0
    for path in files:
        for chunk in path.read_text().split("// -----"):
            try:
                want = text_of(Parser(ctx, chunk, "x").parse_module())
            except Exception:  # noqa: BLE001 - invalid inputs: not this test's business
                continue
            assert text_of(LocatedParser(ctx, chunk, "x").parse_module()) == want, path
            compared += 1
    assert compared > 50
    module = LocatedParser(ctx, CHAIN, "chain.mlir").parse_module()
    add, mul = list(module.body.block.first_op.body.block.ops)[:2]
    assert add.results[0].type is mul.results[0].type
