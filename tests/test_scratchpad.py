"""The LX scratchpad passes: `spyre-allocate-scratchpad` and `spyre-double-buffer`.

* A property test over random kernels (random buffer sizes, random live ranges made of
  computes in straight-line code and in loops) checks the allocator against an
  independent liveness oracle: no two buffers live at the same time share a byte,
  every offset is stick-aligned, and the peak lies between the largest live set and
  the stick-rounded sum of the sizes. Offsets given beforehand are kept.
* A located error for a kernel that does not fit.
* Double buffering does not change what a kernel computes, bit for bit, run by the L2
  interpreter (`spyre_ir.interp.dataflow.run_module`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp

from spyre_ir.diagnostics import DiagnosticError, parse_and_verify
from spyre_ir.dialects.dataflow import AllocLxOp, KernelOp
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.passes.allocate_scratchpad import SpyreAllocateScratchpad
from spyre_ir.passes.double_buffer import SpyreDoubleBuffer
from spyre_ir.registry import make_context

STICK = DEFAULT_CONFIG.stick_bytes


def parse(text: str, name: str = "test.mlir") -> ModuleOp:
    return parse_and_verify(make_context(), text, name)


def allocs(module: ModuleOp) -> dict[str, AllocLxOp]:
    return {op.buffer.name_hint or "": op for op in module.walk() if isinstance(op, AllocLxOp)}


def kernel(module: ModuleOp) -> KernelOp:
    return next(op for op in module.walk() if isinstance(op, KernelOp))


# ------------------------------------------------------------ random kernels


@dataclass(frozen=True)
class Program:
    """Buffers of `sizes[i]` f16 elements, used by `items` in order: an item is one
    buffer written by a compute (straight line) or a loop whose body writes each of a
    list of buffers in turn."""

    sizes: tuple[int, ...]
    items: tuple[int | tuple[int, ...], ...]

    def text(self) -> str:
        lines = [
            "func.func @main() {",
            "  dataflow.kernel @k cores(1) () : () -> () {",
            "  ^bb0(%core: index):",
            "    %c0 = arith.constant 0 : index",
            "    %c1 = arith.constant 1 : index",
            "    %c3 = arith.constant 3 : index",
        ]
        for i, n in enumerate(self.sizes):
            lines.append(f"    %b{i} = dataflow.alloc_lx : !dataflow.lx<{n}xf16>")

        def use(i: int, indent: str) -> str:
            t = f"!dataflow.lx<{self.sizes[i]}xf16>"
            return (
                f'{indent}dataflow.compute "spyre.full" on "pe" () -> (%b{i}) '
                f"{{attrs = {{value = 1.0 : f64}}}} : () -> {t}"
            )

        for item in self.items:
            if isinstance(item, int):
                lines.append(use(item, "    "))
            else:
                lines.append("    scf.for %i = %c0 to %c3 step %c1 {")
                lines.extend(use(i, "      ") for i in item)
                lines.append("    }")
        lines += ["    dataflow.end", "  }", "  func.return", "}"]
        return "\n".join(lines) + "\n"

    def live_ranges(self) -> dict[int, tuple[int, int]]:
        """The oracle: a buffer lives from the first to the last item that uses it,
        a loop being one item (what it uses lives across all its iterations)."""
        ranges: dict[int, tuple[int, int]] = {}
        for k, item in enumerate(self.items):
            for i in (item,) if isinstance(item, int) else item:
                lo, hi = ranges.get(i, (k, k))
                ranges[i] = (min(lo, k), max(hi, k))
        return ranges


@st.composite
def programs(draw: st.DrawFn) -> Program:
    # Sizes in f16 elements: 2 to 4000 bytes, most of them not whole sticks.
    sizes = tuple(draw(st.lists(st.integers(1, 2000), min_size=1, max_size=8)))
    buffer = st.integers(0, len(sizes) - 1)
    item = st.one_of(buffer, st.lists(buffer, min_size=1, max_size=4).map(tuple))
    items = tuple(draw(st.lists(item, min_size=0, max_size=12)))
    return Program(sizes, items)


def aligned(n: int) -> int:
    return -(-n // STICK) * STICK


def check_allocation(program: Program, module: ModuleOp) -> None:
    found = allocs(module)
    offset = {i: found[f"b{i}"].offset_value for i in range(len(program.sizes))}
    size = {i: 2 * n for i, n in enumerate(program.sizes)}
    ranges = program.live_ranges()

    for i in offset:
        assert offset[i] % STICK == 0, f"b{i} at {offset[i]} is not stick-aligned"
    for i in ranges:
        for j in ranges:
            if i >= j:
                continue
            (a, b), (c, d) = ranges[i], ranges[j]
            if a <= d and c <= b:  # live at the same time
                assert offset[i] + size[i] <= offset[j] or offset[j] + size[j] <= offset[i], (
                    f"b{i} and b{j} are live together but share bytes"
                )

    peak = kernel(module).lx_peak_bytes
    assert peak is not None
    peak_bytes = peak.value.data
    assert peak_bytes == max(offset[i] + size[i] for i in offset)
    assert peak_bytes <= sum(aligned(s) for s in size.values())
    if all(s % STICK == 0 for s in size.values()):
        assert peak_bytes <= sum(size.values())
    live_sets = [
        sum(size[i] for i, (a, b) in ranges.items() if a <= k <= b)
        for k in range(len(program.items))
    ]
    assert peak_bytes >= max(live_sets, default=0)


@settings(max_examples=150, deadline=None)
@given(programs())
def test_allocation_properties(program: Program) -> None:
    module = parse(program.text())
    SpyreAllocateScratchpad().apply(make_context(), module)
    module.verify()
    check_allocation(program, module)


@settings(max_examples=60, deadline=None)
@given(programs(), st.data())
def test_given_offsets_are_kept(program: Program, data: st.DataObject) -> None:
    """Allocate, forget some offsets, allocate again: the kept ones do not move and the
    result is still a valid allocation."""
    module = parse(program.text())
    SpyreAllocateScratchpad().apply(make_context(), module)
    found = allocs(module)
    keep = data.draw(st.sets(st.sampled_from(sorted(found))))
    kept = {name: found[name].offset_value for name in keep}
    for name, op in found.items():
        if name not in keep:
            op.offset = None
    SpyreAllocateScratchpad().apply(make_context(), module)
    module.verify()
    assert {name: found[name].offset_value for name in keep} == kept
    check_allocation(program, module)


def test_allocation_is_idempotent() -> None:
    program = Program((64, 100, 640, 64), (0, (1, 2), 3, 0, 2))
    module = parse(program.text())
    SpyreAllocateScratchpad().apply(make_context(), module)
    once = str(module)
    SpyreAllocateScratchpad().apply(make_context(), module)
    assert str(module) == once


def test_overflow_is_a_located_error() -> None:
    program = Program((1024, 1024, 1024), ((0, 1, 2),))
    module = parse(program.text(), "big.mlir")
    with pytest.raises(DiagnosticError) as caught:
        SpyreAllocateScratchpad(lx_bytes=4096).apply(make_context(), module)
    assert str(caught.value) == (
        "big.mlir:2:3: error: kernel @k needs 6144 bytes of LX per core; a core has 4096"
    )


def test_bad_option() -> None:
    with pytest.raises(ValueError, match="lx-bytes must be positive"):
        SpyreAllocateScratchpad(lx_bytes=0)


# ------------------------------------------------------------ double buffering

# exp over 67 rows on 4 cores in tiles of 8 rows: 9 tiles, 3 per core, so the last
# tile overhangs the tensor and core 3 works entirely past its end (its loads read
# padding, its stores are dropped). The loop bounds are the same on every core.
EXP_KERNEL = """
func.func @main(%x: tensor<67x256xf16>) -> tensor<67x256xf16> {
  %r = dataflow.kernel @exp cores(4) (%x) : (tensor<67x256xf16>) -> tensor<67x256xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<67x256xf16>, %out: !dataflow.ddr<67x256xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %first = arith.muli %core, %c3 : index
    %a = dataflow.alloc_lx : !dataflow.lx<8x256xf16>
    %b = dataflow.alloc_lx : !dataflow.lx<8x256xf16>
    scf.for %t = %c0 to %c3 step %c1 {
      %tile = arith.addi %first, %t : index
      %row = arith.muli %tile, %c8 : index
      dataflow.load %in[%row, %c0] into %a : !dataflow.ddr<67x256xf16>, !dataflow.lx<8x256xf16>
      dataflow.compute "spyre.exp" on "sfp" (%a) -> (%b) : (!dataflow.lx<8x256xf16>) -> !dataflow.lx<8x256xf16>
      dataflow.store %b into %out[%row, %c0] : !dataflow.lx<8x256xf16>, !dataflow.ddr<67x256xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<67x256xf16>
}
"""

# x @ w.T with w stored [N, K]: 2 cores split M; a K loop (lb 1, step 2: iterations 1,
# 3, 5, 7 cover K chunks 0..3 via (k - 1) / 2) loads an x tile and a transposed w tile
# and accumulates into an f16 buffer, rounding every partial sum, so any change in the
# order or the data of the accumulation would show in the bits.
MATMUL_KERNEL = """
func.func @main(%x: tensor<32x256xf16>, %w: tensor<64x256xf16>) -> tensor<32x64xf16> {
  %r = dataflow.kernel @mm cores(2) (%x, %w) : (tensor<32x256xf16>, tensor<64x256xf16>) -> tensor<32x64xf16> {
  ^bb0(%core: index, %in: !dataflow.ddr<32x256xf16>, %wt: !dataflow.ddr<64x256xf16>, %out: !dataflow.ddr<32x64xf16>):
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %base = arith.muli %core, %c16 : index
    %xa = dataflow.alloc_lx : !dataflow.lx<8x64xf16>
    %wb = dataflow.alloc_lx : !dataflow.lx<64x64xf16>
    %acc = dataflow.alloc_lx : !dataflow.lx<8x64xf16>
    scf.for %m = %c0 to %c2 step %c1 {
      %mrow = arith.muli %m, %c8 : index
      %row = arith.addi %base, %mrow : index
      dataflow.compute "spyre.full" on "pe" () -> (%acc) {attrs = {value = 0.0 : f64}} : () -> !dataflow.lx<8x64xf16>
      scf.for %k = %c1 to %c8 step %c2 {
        %kk = arith.subi %k, %c1 : index
        %chunk = arith.divui %kk, %c2 : index
        %col = arith.muli %chunk, %c64 : index
        dataflow.load %in[%row, %col] into %xa : !dataflow.ddr<32x256xf16>, !dataflow.lx<8x64xf16>
        dataflow.load %wt[%c0, %col] into %wb {perm = array<i64: 1, 0>} : !dataflow.ddr<64x256xf16>, !dataflow.lx<64x64xf16>
        dataflow.compute "spyre.matmul" on "pe" (%xa, %wb) -> (%acc) {accumulate} : (!dataflow.lx<8x64xf16>, !dataflow.lx<64x64xf16>) -> !dataflow.lx<8x64xf16>
      }
      dataflow.store %acc into %out[%row, %c0] : !dataflow.lx<8x64xf16>, !dataflow.ddr<32x64xf16>
    }
    dataflow.end
  }
  func.return %r : tensor<32x64xf16>
}
"""


def _run(module: ModuleOp, args: list[np.ndarray]) -> list[np.ndarray]:
    from spyre_ir.interp.dataflow import run_module

    return [np.asarray(r) for r in run_module(module, args, check_races=True)]


@pytest.mark.parametrize(
    ("text", "shapes", "reference"),
    [
        (EXP_KERNEL, [(67, 256)], lambda x: np.exp(x.astype(np.float32))),
        (
            MATMUL_KERNEL,
            [(32, 256), (64, 256)],
            lambda x, w: x.astype(np.float32) @ w.astype(np.float32).T,
        ),
    ],
    ids=["exp", "matmul"],
)
def test_double_buffering_keeps_the_numerics(text, shapes, reference) -> None:
    rng = np.random.default_rng(0)
    args = [rng.uniform(-1, 1, size=s).astype(np.float16) for s in shapes]
    plain = parse(text)
    buffered = parse(text)
    SpyreDoubleBuffer().apply(make_context(), buffered)
    buffered.verify()
    # The pass did apply (every loaded buffer now has two slots) ...
    assert str(buffered) != str(plain)
    assert all(
        op.buffer.type.get_shape()[0] == 2
        for op in allocs(buffered).values()
        if op.buffer.name_hint in ("a", "xa", "wb")
    )
    # ... and computes exactly what the single-buffered kernel computes.
    before, after = _run(plain, args), _run(buffered, args)
    assert len(before) == len(after)
    for x, y in zip(before, after):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
    # (And that is the right answer, to f16 accuracy.)
    np.testing.assert_allclose(before[0].astype(np.float32), reference(*args), rtol=2e-2, atol=5e-2)
    # The double-buffered kernel still allocates, with both slots counted.
    SpyreAllocateScratchpad().apply(make_context(), buffered)
    buffered.verify()


def test_disabled_double_buffering_changes_nothing() -> None:
    module = parse(EXP_KERNEL)
    before = str(module)
    SpyreDoubleBuffer(enable=False).apply(make_context(), module)
    assert str(module) == before
