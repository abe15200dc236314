"""KTIR kernels of our own (tests/ktir/) through spyre-run: lowered to L3 and run on
the simulated card, checked against the KTIR reference interpreter, which is itself
checked against numpy here; and the located errors of bad input."""

from pathlib import Path

import numpy as np
import pytest

from spyre_ir.diagnostics import parse_file
from spyre_ir.interp.ktir import run_kernel
from spyre_ir.registry import make_context
from spyre_ir.tools.spyre_run import main

KERNELS = Path(__file__).parent / "ktir"

CASES = {
    "vector_add.mlir": "",
    "softmax.mlir": "",
    "layernorm.mlir": "eps=1e-5",
    "matmul.mlir": "K=512,BM=32,BN=256,BK=128",
    "cross_tile_sum.mlir": "",
    "broadcast.mlir": "",
    "paged_gather.mlir": "",
    "branchy_relu.mlir": "relu=1",
    "generic_gelu.mlir": "",
    "block_sums.mlir": "",
    "transpose_scale.mlir": "",
    "row_min_shift.mlir": "",
    "sharded_matvec.mlir": "",
    "strided_sum.mlir": "",
    "window_gather.mlir": "off=5",
    "clamp_bits.mlir": "",
    "causal_rows.mlir": "shift=3",
    "online_softmax_rows.mlir": "shift=3",
    "squeeze_slices.mlir": "",
    "dynamic_rows.mlir": "n=16,width=64",
    "wide_softmax_numerator.mlir": "",
    "outer_weight_inner_rows.mlir": "",
    "staged_calls.mlir": "",
    "absolute_add.mlir": "",
    "absolute_scale_in_place.mlir": "",
    "partial_store.mlir": "",
    "slice_store.mlir": "",
    "tile_pointer_offset.mlir": "",
    "ring_sum_loop.mlir": "",
    "unit_dim_reduce.mlir": "",
    "group_ring_sums.mlir": "",
    "local_slab_sum.mlir": "",
    "delivered_broadcast.mlir": "",
    "element_gather.mlir": "",
    "distributed_two_pointers.mlir": "n=128",
    "distributed_lx_partitions.mlir": "",
    "iota_after_allgather.mlir": "",
    "offset_gather.mlir": "",
    "paged_copy.mlir": "",
    "paged_write.mlir": "",
    "row_scatter.mlir": "",
    "element_scatter.mlir": "",
}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main([*argv])
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("name", sorted(CASES))
def test_simulator_matches_the_ktir_interpreter(capsys, name):
    argv = [str(KERNELS / name), "--check", "--seed", "3"]
    if CASES[name]:
        argv += ["--scalars", CASES[name]]
    status, out, err = run(capsys, *argv)
    assert status == 0, out + err
    assert "check: ok" in out and "simulated" in out and "wall: parse" in out


def test_branch_on_the_loop_counter_at_l2(capsys):
    # An scf.if on the loop counter that stores, at L2 (at L3: the test below).
    for relu in ("0", "1"):
        status, out, err = run(
            capsys,
            str(KERNELS / "branchy_sum.mlir"),
            "--check",
            "--level",
            "dataflow",
            "--scalars",
            f"relu={relu}",
        )
        assert status == 0 and "check: ok" in out, out + err


def kernel(name: str):
    module = parse_file(make_context(), str(KERNELS / name))
    return next(op for op in module.walk() if op.name == "func.func")


def f16(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float16)


def test_interpreter_layernorm_against_numpy():
    x, w, b = f16(100, 1024), f16(1024, seed=1), f16(1024, seed=2)
    zeros = [
        np.zeros((100, 1024), np.float16),
        np.zeros(100, np.float16),
        np.zeros(100, np.float16),
    ]
    out = run_kernel(
        kernel("layernorm.mlir"),
        {0: x, 1: zeros[0], 2: w, 3: b, 4: zeros[1], 5: zeros[2]},
        {6: 1e-5},
    )
    xf = x.astype(np.float32)
    mean, var = xf.mean(1), xf.var(1)
    y = (xf - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * w + b
    np.testing.assert_allclose(out[4], mean, atol=2e-3)
    np.testing.assert_allclose(out[5], 1 / np.sqrt(var + 1e-5), rtol=5e-3)
    np.testing.assert_allclose(out[1], y, atol=5e-2)


def test_interpreter_matmul_cross_tile_broadcast_and_gather_against_numpy():
    a, b = f16(64, 512), f16(512, 1024, seed=1)
    out = run_kernel(
        kernel("matmul.mlir"),
        {0: a, 1: b, 2: np.zeros((64, 1024), np.float16)},
        {3: 512, 4: 32, 5: 256, 6: 128},
    )
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.abs(out[2] - ref).max() < 0.25  # f16 accumulation over 4 K steps
    x = f16(256, 64)
    sums = run_kernel(kernel("cross_tile_sum.mlir"), {0: x, 1: np.zeros((8, 64), np.float16)}, {})
    np.testing.assert_allclose(sums[1], np.tile(x.astype(np.float32).sum(0), (8, 1)), atol=0.1)
    x, scale = f16(128, 64), f16(2, 64, seed=1)
    scaled = run_kernel(kernel("broadcast.mlir"), {0: x, 1: scale, 2: np.zeros_like(x)}, {})
    np.testing.assert_array_equal(scaled[2], x * np.repeat(scale, 64, axis=0))
    pages = f16(16, 64, 128)
    table = np.array([3, 0, 15, 7, 7, 1, 9, 2], np.int32)
    got = run_kernel(
        kernel("paged_gather.mlir"), {0: pages, 1: table, 2: np.zeros((8, 64, 128), np.float16)}, {}
    )
    np.testing.assert_array_equal(got[2], pages[table])
    blocks, ids = f16(12, 16, 4, 64), np.array([[11, 0, 4, 4]], np.int32)
    got = run_kernel(
        kernel("window_gather.mlir"),
        {0: blocks, 1: ids, 2: np.zeros((4, 8, 4, 64), np.float16)},
        {3: 5},
    )
    np.testing.assert_array_equal(got[2], blocks[ids[0], 5:13])


def test_element_gather_against_numpy(capsys, tmp_path):
    """element_gather.mlir: out[m, k] = 2 * table[rows[m, k], cols[m, k]], in the
    interpreter and on the card (given inputs; every row and column of the table
    reachable, a repeated position among them)."""
    table = f16(32, 64, seed=9)
    rng = np.random.default_rng(10)
    rows = rng.integers(0, 32, (16, 64)).astype(np.int32)
    cols = rng.integers(0, 64, (16, 64)).astype(np.int32)
    rows[0, :2], cols[0, :2] = (31, 31), (63, 63)
    want = 2 * table[rows, cols].astype(np.float32)
    got = run_kernel(
        kernel("element_gather.mlir"),
        {0: table, 1: rows, 2: cols, 3: np.zeros((16, 64), np.float16)},
        {},
    )
    np.testing.assert_array_equal(got[3].astype(np.float32), want)
    names = {"table": table, "rows": rows, "cols": cols, "out": np.zeros((16, 64), np.float16)}
    for name, value in names.items():
        np.save(tmp_path / f"{name}.npy", value)
    inputs = ",".join(str(tmp_path / f"{name}.npy") for name in names)
    out_npz = tmp_path / "out.npz"
    argv = [str(KERNELS / "element_gather.mlir"), "--inputs", inputs, "--output", str(out_npz)]
    status, out, err = run(capsys, *argv, "--check")
    assert status == 0, out + err
    (card,) = np.load(out_npz).values()
    np.testing.assert_allclose(card.astype(np.float32), want, rtol=1e-2, atol=1e-2)


def test_interpreter_generic_against_numpy():
    x, b = f16(128, 256), f16(256, seed=1)
    out = run_kernel(kernel("generic_gelu.mlir"), {0: x, 1: b, 2: np.zeros_like(x)}, {})
    xf = x.astype(np.float32)
    np.testing.assert_allclose(out[2], xf / (1 + np.exp(-1.702 * xf)) + b, atol=2e-2)


def test_interpreter_bitcast_and_linalg_index_against_numpy():
    x = f16(512)
    out = run_kernel(kernel("clamp_bits.mlir"), {0: x, 1: np.zeros_like(x)}, {})
    np.testing.assert_array_equal(out[1], np.maximum(x, -1))
    x = np.random.default_rng(0).standard_normal((16, 64)).astype(np.float32)
    out = run_kernel(kernel("causal_rows.mlir"), {0: x, 1: np.zeros_like(x)}, {2: 3})
    rows, cols = np.arange(16)[:, None], np.arange(64)[None]
    np.testing.assert_array_equal(out[1], np.where(cols <= rows + 3, x, -np.inf))


def test_unsupported_position_arithmetic_is_a_located_lowering_error(capsys, tmp_path):
    text = (KERNELS / "causal_rows.mlir").read_text()
    text = text.replace("%last = arith.addi %row, %shift", "%last = arith.remui %row, %shift")
    path = tmp_path / "causal_rem.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path), "--scalars", "shift=3")
    assert status == 1
    assert "causal_rem.mlir:34:9: error: 'arith.remui' on element positions is not supported" in err
    assert "Traceback" not in err


def test_interpreter_slices_against_numpy():
    x = f16(2, 8, 64)
    out = run_kernel(kernel("squeeze_slices.mlir"), {0: x, 1: np.zeros_like(x)}, {})
    np.testing.assert_array_equal(out[1], x + x)


def test_a_dynamic_slice_is_a_located_lowering_error(capsys, tmp_path):
    """A slice of part of a tile lowers (ktir_slice); one with SSA offsets does not."""
    text = (KERNELS / "squeeze_slices.mlir").read_text()
    old = "[0, 0, 0] [1, 8, 64] [1, 1, 1] : tensor<1x8x64xf16> to tensor<8x64xf16>"
    assert old in text
    text = text.replace(
        old, "[%c0, 0, 0] [1, 8, 64] [1, 1, 1] : tensor<1x8x64xf16> to tensor<8x64xf16>", 1
    )
    path = tmp_path / "dynamic_slice.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path))
    assert status == 1
    want = "dynamic_slice.mlir:17:5: error: 'tensor.extract_slice' with dynamic offsets is not"
    assert want in err, err
    assert "Traceback" not in err


def test_views_sized_by_scalars_are_specialized():
    from spyre_ir.lowering.ktir_specialize import specialize_views

    fn = kernel("dynamic_rows.mlir")
    specialize_views(fn, {"n": 16, "width": 64})
    views = [op for op in fn.walk() if op.name == "ktdp.construct_memory_view"]
    assert [str(v.result.type) for v in views] == ["memref<16x64xf16>"] * 2
    assert all(not v.sizes and not v.strides for v in views)
    assert all(v.coordinate_set.data.num_symbols == 0 for v in views)
    x = f16(16, 64)
    out = run_kernel(fn, {0: x, 1: np.zeros_like(x)}, {2: 16, 3: 64})
    np.testing.assert_array_equal(out[1], (x * np.float16(3)).astype(np.float16))


def test_views_sized_by_missing_scalars_are_a_located_error(capsys):
    status, out, err = run(capsys, str(KERNELS / "dynamic_rows.mlir"), "--scalars", "width=64")
    assert status == 1
    assert "dynamic_rows.mlir:15:5: error: 'ktdp.construct_memory_view' with dynamic sizes" in err
    assert "Traceback" not in err


def test_tiles_too_wide_to_prefetch_are_loaded_once():
    from spyre_ir.pipelines import KtirToDataflow

    module = parse_file(make_context(), str(KERNELS / "wide_softmax_numerator.mlir"))
    KtirToDataflow().apply(make_context(), module)
    text = str(module)
    assert "dataflow.kernel" in text and "lx_peak_bytes" in text
    assert "!dataflow.lx<2x1x196608xf16>" not in text  # no two-slot (prefetched) rows
    assert "!dataflow.lx<1x196608xf16>" in text


def test_a_kernel_too_big_for_lx_is_located_at_the_kernel(capsys, tmp_path):
    # Rows of 393216 halves: the row, x - max and the result need 2.25 MiB even
    # loaded once. The failure of a pass after the lowering names the KTIR kernel.
    text = (KERNELS / "wide_softmax_numerator.mlir").read_text()
    text = text.replace("196608", "393216").replace("196607", "393215")
    path = tmp_path / "too_wide.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path), "--check")
    assert status == 1 and "Traceback" not in err
    assert "too_wide.mlir:5:3: error: kernel @wide_softmax_numerator needs" in err, err
    assert ":1:1:" not in err


def test_a_store_on_the_last_iteration_runs_at_l3(capsys):
    # The store under `scf.if` on the loop counter: its version is taken and its
    # credit handed back every iteration, stored or not.
    for relu in ("0", "1"):
        argv = [str(KERNELS / "branchy_sum.mlir"), "--check", "--scalars", f"relu={relu}"]
        status, out, err = run(capsys, *argv)
        assert status == 0 and "check: ok" in out and "simulated" in out, out + err


def test_missing_scalar_is_named(capsys):
    status, out, err = run(capsys, str(KERNELS / "matmul.mlir"), "--scalars", "K=512")
    assert status == 1
    assert "needs --scalars for its scalar arguments: BM (index), BN (index), BK (index)" in err
    assert "Traceback" not in err


def test_inputs_are_checked_against_the_views(capsys, tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros(100, np.float16))
    status, out, err = run(capsys, str(KERNELS / "vector_add.mlir"), "--inputs", f"{x},{x},{x}")
    assert status == 1
    assert "is (100,) float16; the memory view is (2048,) float16" in err
    status, out, err = run(capsys, str(KERNELS / "vector_add.mlir"), "--inputs", str(x))
    assert status == 1 and "has 3 pointer arguments, but --inputs names 1 files" in err


def test_given_inputs_give_the_results(capsys, tmp_path):
    x, y = f16(2048), f16(2048, seed=1)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "o.npy", np.zeros(2048, np.float16))
    inputs = ",".join(str(tmp_path / n) for n in ("x.npy", "y.npy", "o.npy"))
    status, out, err = run(
        capsys,
        str(KERNELS / "vector_add.mlir"),
        "--inputs",
        inputs,
        "--output",
        str(tmp_path / "r.npz"),
    )
    assert status == 0, err
    # The card adds in DLFloat16: the interpreter rounding as the card does gives it.
    want = run_kernel(
        kernel("vector_add.mlir"), {0: x, 1: y, 2: np.zeros_like(x)}, {}, card_halves=True
    )[2]
    got = np.load(tmp_path / "r.npz")["result_0"]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, (x + y).astype(np.float32), atol=2e-2, rtol=2e-2)


def test_interpreter_syntax_variants_in_place_and_sharded_against_numpy():
    # Tile ids asked one grid dim at a time, a loop result type without parentheses.
    x = f16(32, 512)
    out = run_kernel(kernel("block_sums.mlir"), {0: x, 1: np.zeros((32, 256), np.float16)}, {})
    blocks = x.astype(np.float32).reshape(32, 4, 2, 64)
    np.testing.assert_allclose(out[1], blocks.sum(2).reshape(32, 256), atol=2e-3)
    a = f16(64, 128)
    out = run_kernel(kernel("transpose_scale.mlir"), {0: a, 1: np.zeros((128, 64), np.float16)}, {})
    np.testing.assert_array_equal(out[1], 2 * a.T)
    # In place, the minimum's combiner written as compare-and-select.
    m = f16(8, 64)
    out = run_kernel(kernel("row_min_shift.mlir"), {0: m.copy()}, {})
    np.testing.assert_array_equal(out[0], m - m.min(1, keepdims=True))
    # A distributed view at an element offset, a tensor combiner, a tile-0 store.
    xv, w = f16(1, 128), f16(128, 64, seed=1)
    out = run_kernel(
        kernel("sharded_matvec.mlir"), {0: xv, 1: w, 2: np.zeros((1, 64), np.float16)}, {}
    )
    ref = xv.astype(np.float32) @ w.astype(np.float32)
    np.testing.assert_allclose(out[2], ref, atol=0.05)
    # Strided inter-tile groups (tiles {i, i+2, i+4, i+6}).
    x = f16(4, 128)
    out = run_kernel(kernel("strided_sum.mlir"), {0: x, 1: np.zeros((1, 128), np.float16)}, {})
    np.testing.assert_allclose(out[1], x.astype(np.float32).sum(0, keepdims=True), atol=1e-2)


def test_in_place_kernel_reading_what_it_wrote_is_refused(capsys, tmp_path):
    text = (KERNELS / "row_min_shift.mlir").read_text()
    again = "    %again = ktdp.load %t : !ktdp.access_tile<4x64xindex> -> tensor<4x64xf16>\n"
    text = text.replace("    return\n", again + "    return\n")
    path = tmp_path / "reread.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path), "--level", "dataflow")
    assert status == 1
    assert "reread.mlir:30:5: error: pointer %m_ptr is loaded after it is stored" in err


def test_views_at_absolute_addresses_are_buffers_of_the_address_space(capsys, tmp_path):
    """A view at a constant address is a buffer the run allocates and fills, listed as
    a pointer argument %mem<ADDRESS>; the reference interpreter sees the same."""
    text = (KERNELS / "transpose_scale.mlir").read_text()
    text = text.replace(
        "    %c0 = arith.constant 0 : index\n",
        "    %c0 = arith.constant 0 : index\n    %at = arith.constant 4096 : index\n",
    ).replace("construct_memory_view %a_ptr,", "construct_memory_view %at,")
    path = tmp_path / "absolute.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path), "--check", "--scalars", "a_ptr=0")
    assert status == 0, out + err
    assert "check: ok" in out


def test_absolute_buffers_alias_and_take_inputs_in_address_order(capsys, tmp_path):
    """absolute_add.mlir: the views at 0 and 2048 are one 96x64 buffer, so the result
    is rows r and r + 32 of the one input added (checked against numpy)."""
    buffer = f16(96, 64, seed=5)
    np.save(tmp_path / "mem0.npy", buffer)
    np.save(tmp_path / "mem8192.npy", np.zeros((64, 64), np.float16))
    out_npz = tmp_path / "out.npz"
    inputs = f"{tmp_path / 'mem0.npy'},{tmp_path / 'mem8192.npy'}"
    argv = [str(KERNELS / "absolute_add.mlir"), "--inputs", inputs]
    status, out, err = run(capsys, *argv, "--output", str(out_npz), "--check")
    assert status == 0, out + err
    assert "%mem8192: tensor<64x64xf16>" in out
    (got,) = np.load(out_npz).values()
    want = buffer[:64].astype(np.float32) + buffer[32:].astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, atol=2e-2, rtol=1e-2)


def test_grid_launches_a_kernel_without_one(capsys, tmp_path):
    text = (KERNELS / "absolute_add.mlir").read_text().replace(" attributes {grid = [4]}", "")
    path = tmp_path / "nogrid.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path), "--check", "--grid", "4")
    assert status == 0, out + err
    assert "check: ok" in out
    # Without it the kernel runs on one tile: the 3/4 of its output it does not store
    # keep their contents (as in the reference), so the result differs from the grid's.
    grid_npz, one_npz = tmp_path / "grid.npz", tmp_path / "one.npz"
    assert run(capsys, str(path), "--grid", "4", "--output", str(grid_npz))[0] == 0
    status, out, err = run(capsys, str(path), "--check", "--output", str(one_npz))
    assert status == 0 and "check: ok" in out, out + err
    (on_grid,), (on_one,) = np.load(grid_npz).values(), np.load(one_npz).values()
    quarter = on_grid.size // 4
    np.testing.assert_array_equal(on_one.reshape(-1)[:quarter], on_grid.reshape(-1)[:quarter])
    assert not np.array_equal(on_one.reshape(-1)[quarter:], on_grid.reshape(-1)[quarter:])
    status, out, err = run(capsys, str(KERNELS / "absolute_add.mlir"), "--grid", "2")
    assert status == 1
    assert "declares grid = [4], not the launch grid [2]" in err
    status, out, err = run(capsys, str(path), "--grid", "two")
    assert status != 0
    assert "--grid: grid 'two' is not a list of tile counts" in err


def test_views_of_two_types_that_share_memory_run_and_match(capsys, tmp_path):
    # tests/ktir/alias_copy.mlir: an f16 and an i32 view over one region, each tile
    # copying its own rows: aliasing without a race runs, and the region is drawn once.
    out_npz = tmp_path / "out.npz"
    argv = [str(KERNELS / "alias_copy.mlir"), "--check", "--output", str(out_npz)]
    status, out, err = run(capsys, *argv)
    assert status == 0, out + err
    assert "views alias" in out and "check: ok (max abs error 0" in out, out


def test_a_race_between_tiles_through_aliasing_views_is_a_located_error(capsys):
    # tests/ktir/alias_race.mlir: the same kernel with each tile storing the other
    # tile's rows, which that tile loads through the other type's view.
    status, out, err = run(capsys, str(KERNELS / "alias_race.mlir"), "--check")
    assert status == 1
    assert (
        "alias_race.mlir:50:5: error: KTIR interpreter: 'ktdp.store' on tile 1 stores byte 0 "
        "of the memory %mem0_f16, %mem0_i32 share"
    ) in err, err
    assert "which 'ktdp.load' at 40:5 on tile 0 loads" in err
    assert "a data race between tiles" in err and "Traceback" not in err


def test_absolute_buffer_updated_in_place_doubles_its_input(capsys, tmp_path):
    x = f16(32, 64, seed=2)
    np.save(tmp_path / "x.npy", x)
    out_npz = tmp_path / "out.npz"
    argv = [str(KERNELS / "absolute_scale_in_place.mlir"), "--inputs", str(tmp_path / "x.npy")]
    status, out, err = run(capsys, *argv, "--output", str(out_npz), "--check")
    assert status == 0, out + err
    (got,) = np.load(out_npz).values()
    np.testing.assert_allclose(got.astype(np.float32), 2 * x.astype(np.float32), rtol=1e-2)


@pytest.mark.parametrize("level", ["sim", "dataflow"])
def test_memory_a_kernel_does_not_store_keeps_its_contents(capsys, tmp_path, level):
    # The kernel stores the even rows of out only: its odd rows keep the given contents
    # (on the simulator and the L2 interpreter as in the KTIR interpreter).
    x, before = f16(8, 64, seed=4), f16(8, 64, seed=5)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", before)
    out_npz = tmp_path / "result.npz"
    inputs = f"{tmp_path / 'x.npy'},{tmp_path / 'out.npy'}"
    argv = [str(KERNELS / "partial_store.mlir"), "--inputs", inputs, "--level", level]
    status, out, err = run(capsys, *argv, "--output", str(out_npz), "--check")
    assert status == 0, out + err
    (got,) = np.load(out_npz).values()
    # On the card f16 memory holds DLFloat16 (9 fraction bits): the kept rows round once.
    kept_rtol = 2.0**-9 if level == "sim" else 0.0
    np.testing.assert_allclose(got[1::2], before[1::2], rtol=kept_rtol, atol=0)
    np.testing.assert_allclose(
        got[::2].astype(np.float32), 2 * x[::2].astype(np.float32), rtol=1e-2
    )


def test_a_store_tile_whose_set_holds_more_than_its_type_is_read_as_ktir_cpu_does(capsys, tmp_path):
    # partial_store.mlir with its output tile's set spanning rows 2t and 2t + 1 while
    # its type (and the stored tensor) is one row, as ktir-mlir-frontend's
    # tensor-extract-slice.mlir writes it: KTDP.td's shapes disagree; ktir-cpu stores
    # the set's points in the type's box (row 2t). A located warning, then that result.
    text = (KERNELS / "partial_store.mlir").read_text()
    one_row = "(d0 >= 0, -d0 >= 0, d1 >= 0, -d1 + 63 >= 0)"
    at = text.rindex(one_row)
    text = text[:at] + "(d0 >= 0, -d0 + 1 >= 0, d1 >= 0, -d1 + 63 >= 0)" + text[at + len(one_row) :]
    path = tmp_path / "wide_set.mlir"
    path.write_text(text)
    x, before = f16(8, 64, seed=4), f16(8, 64, seed=5)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", before)
    out_npz = tmp_path / "result.npz"
    inputs = f"{tmp_path / 'x.npy'},{tmp_path / 'out.npy'}"
    argv = [str(path), "--inputs", inputs, "--level", "dataflow", "--output", str(out_npz)]
    status, out, err = run(capsys, *argv, "--check")
    assert status == 0, out + err
    assert "wide_set.mlir:24:5: warning: 'ktdp.construct_access_tile' access_tile_set spans" in err
    assert "[2, 64] but the tile type is [1, 64]" in err and "check: ok" in out
    (got,) = np.load(out_npz).values()
    want = before.copy()
    want[::2] = (2 * x[::2].astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(got, want)


def test_strided_slice_stored_to_part_of_an_absolute_buffer_against_numpy(capsys, tmp_path):
    # Buffers in address order: A (%mem0), C (%mem1024). Row 2t of C gets the even
    # columns of A[2t + 1] squared; the odd rows of C keep their contents.
    a, before = f16(8, 64, seed=6), f16(8, 32, seed=7)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "c.npy", before)
    out_npz = tmp_path / "result.npz"
    inputs = f"{tmp_path / 'a.npy'},{tmp_path / 'c.npy'}"
    argv = [str(KERNELS / "slice_store.mlir"), "--inputs", inputs, "--level", "dataflow"]
    status, out, err = run(capsys, *argv, "--output", str(out_npz), "--check")
    assert status == 0, out + err
    (got,) = np.load(out_npz).values()
    want = before.copy()
    want[::2] = (a[1::2, ::2].astype(np.float32) ** 2).astype(np.float16)
    np.testing.assert_array_equal(got, want)


def test_pointer_plus_a_per_tile_offset_against_numpy(capsys, tmp_path):
    # Tile t views rows 2t, 2t+1 of x and out at pointer + t * 128 elements.
    x = f16(8, 64, seed=8)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", np.zeros_like(x))
    out_npz = tmp_path / "result.npz"
    inputs = f"{tmp_path / 'x.npy'},{tmp_path / 'out.npy'}"
    argv = [str(KERNELS / "tile_pointer_offset.mlir"), "--inputs", inputs]
    status, out, err = run(capsys, *argv, "--level", "dataflow", "--output", str(out_npz))
    assert status == 0, out + err
    assert "%out_ptr: tensor<8x64xf16>" in out
    (got,) = np.load(out_npz).values()
    np.testing.assert_array_equal(got, (x.astype(np.float32) + 1).astype(np.float16))


def test_ring_reduce_in_a_loop_keeps_its_partial_against_numpy(capsys, tmp_path):
    # Two trips each add the sum of the 4 rows: the ring reduces a copy of the row.
    x = f16(4, 64, seed=9)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", np.zeros((1, 64), np.float16))
    out_npz = tmp_path / "result.npz"
    inputs = f"{tmp_path / 'x.npy'},{tmp_path / 'out.npy'}"
    argv = [str(KERNELS / "ring_sum_loop.mlir"), "--inputs", inputs, "--level", "dataflow"]
    status, out, err = run(capsys, *argv, "--output", str(out_npz))
    assert status == 0, out + err
    (got,) = np.load(out_npz).values()
    want = 2 * x.astype(np.float32).sum(axis=0, keepdims=True)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-2, atol=2e-2)


def opt(capsys, *argv: str) -> tuple[int, str, str]:
    from spyre_ir.tools import spyre_opt

    with pytest.raises(SystemExit) as done:
        spyre_opt.main(list(argv))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return int(done.value.code or 0), out, err


def test_unit_dim_reduce_warns_in_spyre_opt_and_spyre_run(capsys):
    # The compatibility with ktir-cpu is a located warning on stderr, exit 0, every tool.
    path = str(KERNELS / "unit_dim_reduce.mlir")
    warning = f"{path}:34:5: warning: 'ktdp.inter_tile_reduce' result types (tensor<64xf16>)"
    status, out, err = opt(capsys, path, "-p", "ktir-to-units")
    assert status == 0 and warning in err and "error" not in err
    assert "dataflow" in out or "spyre" in out
    status, out, err = run(capsys, path, "--check")
    assert status == 0 and warning in err and "check: ok" in out


def test_warnings_are_checked_under_verify_diagnostics(capsys, tmp_path):
    # An unannotated warning is unexpected; an annotation of one not produced is missing.
    text = (KERNELS / "unit_dim_reduce.mlir").read_text()
    bare = tmp_path / "bare.mlir"
    bare.write_text(text + "\n// -----\nfunc.func @g() {\n  // expected-error @+1 {{x}}\n}\n")
    status, _, err = opt(capsys, str(bare), "--split-input-file", "--verify-diagnostics")
    assert status == 1 and "warning: 'ktdp.inter_tile_reduce'" in err
    assert "(unexpected warning)" in err
    wanted = tmp_path / "wanted.mlir"
    wanted.write_text("// expected-warning @+1 {{by unit dims only}}\nfunc.func @g() {\n}\n")
    status, _, err = opt(capsys, str(wanted), "--verify-diagnostics")
    assert status == 1 and 'expected warning "by unit dims only" was not produced' in err


def test_own_memory_at_absolute_addresses_is_per_tile_input(capsys, tmp_path):
    """local_slab_sum.mlir: the ct_local view at 0 and the LX view at 4096 are each
    tile's own memory, one slab per tile after the kernel's arguments (%local0,
    %local4096); out[t] = the sum of every tile's slab over its rows + tile t's bias
    (checked against numpy)."""
    slabs, bias = f16(4 * 32, 64, seed=7), f16(4, 64, seed=8)
    names = {"out": np.zeros((4, 64), np.float16), "local0": slabs, "local4096": bias}
    for name, value in names.items():
        np.save(tmp_path / f"{name}.npy", value)
    inputs = ",".join(str(tmp_path / f"{name}.npy") for name in names)
    out_npz = tmp_path / "out.npz"
    argv = [str(KERNELS / "local_slab_sum.mlir"), "--inputs", inputs, "--output", str(out_npz)]
    status, out, err = run(capsys, *argv, "--check")
    assert status == 0, out + err
    assert "check: ok" in out
    (got,) = np.load(out_npz).values()
    want = slabs.astype(np.float32).sum(axis=0) + bias.astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, atol=0.1, rtol=2e-2)


def test_a_store_to_own_memory_at_an_absolute_address_is_a_located_error(capsys, tmp_path):
    text = (KERNELS / "local_slab_sum.mlir").read_text()
    text = text.replace(
        "ktdp.store %y, %out_tile",
        "ktdp.store %x, %own_tile : tensor<32x64xf16>, !ktdp.access_tile<32x64xindex>\n"
        "    ktdp.store %y, %out_tile",
    )
    path = tmp_path / "store_local.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path), "--check")
    assert status == 1
    assert "store_local.mlir:22:5: error: 'ktdp.construct_memory_view': a store to" in err


def _without_store(tmp_path, name: str, store: str) -> Path:
    text = (KERNELS / "local_slab_sum.mlir").read_text()
    assert store in text
    path = tmp_path / name
    path.write_text(text.replace(store, ""))
    return path


def test_inter_tile_results_of_a_kernel_storing_nothing_are_observed(capsys, tmp_path):
    """local_slab_sum.mlir without its store (as the spec's kt07a leaves its
    all-reduce unstored): spyre-run stores each tile's reduced row to %delivered0,
    row t for tile t, on the card and in the interpreter; every row is the sum of all
    four slabs (checked against numpy)."""
    store = "    ktdp.store %y, %out_tile : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>\n"
    path = _without_store(tmp_path, "no_store.mlir", store)
    slabs, bias = f16(4 * 32, 64, seed=3), f16(4, 64, seed=4)
    zeros = np.zeros((4, 64), np.float16)  # %out_ptr, now unstored, and %delivered0
    names = {"out": zeros, "local0": slabs, "local4096": bias, "delivered0": zeros}
    for name, value in names.items():
        np.save(tmp_path / f"{name}.npy", value)
    inputs = ",".join(str(tmp_path / f"{name}.npy") for name in names)
    out_npz = tmp_path / "out.npz"
    status, out, err = run(
        capsys, str(path), "--inputs", inputs, "--output", str(out_npz), "--check"
    )
    assert status == 0, out + err
    assert "the kernel stores nothing: %delivered0 holds each tile's result" in out
    assert "check: ok" in out and "nothing to compare" not in out
    (got,) = np.load(out_npz).values()
    want = np.broadcast_to(slabs.astype(np.float32).sum(axis=0), (4, 64))
    np.testing.assert_allclose(got.astype(np.float32), want, atol=0.1, rtol=2e-2)


def test_a_broadcast_of_a_kernel_storing_nothing_reaches_every_tile(capsys, tmp_path):
    """delivered_broadcast.mlir: tile 2's row maximum, consumed by all four tiles,
    is every row of %delivered0 (checked against numpy)."""
    slabs = f16(4 * 16, 64, seed=5)
    np.save(tmp_path / "slabs.npy", slabs)
    np.save(tmp_path / "delivered.npy", np.zeros((4, 64), np.float16))
    inputs = f"{tmp_path / 'slabs.npy'},{tmp_path / 'delivered.npy'}"
    out_npz = tmp_path / "out.npz"
    argv = [str(KERNELS / "delivered_broadcast.mlir"), "--inputs", inputs, "--output", str(out_npz)]
    status, out, err = run(capsys, *argv, "--check")
    assert status == 0, out + err
    (got,) = np.load(out_npz).values()
    want = np.broadcast_to(slabs[32:48].astype(np.float32).max(axis=0), (4, 64))
    np.testing.assert_allclose(got.astype(np.float32), want, atol=1e-2, rtol=1e-2)


def test_a_kernel_storing_nothing_and_delivering_nothing_has_nothing_to_compare(capsys, tmp_path):
    """No store and no inter-tile op: nothing to observe, so the check says there was
    nothing to compare rather than `ok`."""
    text = (KERNELS / "local_slab_sum.mlir").read_text()
    start = text.index("    %future = ktdp.inter_tile_produce")
    end = text.index("    return")
    path = tmp_path / "no_delivery.mlir"
    path.write_text(text[:start] + text[end:])
    status, out, err = run(capsys, str(path), "--check")
    assert status == 0, out + err
    assert "check: nothing to compare (the kernel stores nothing" in out + err
    assert "check: ok" not in out + err


def test_distributed_view_over_two_pointers_on_the_card(capsys, tmp_path):
    """distributed_two_pointers.mlir: the copy of [a0 | a1] in 32-column tiles, one
    of them straddling both partitions, on the simulated card (checked against numpy;
    the card's host copy rounds f16 to DLFloat16)."""
    a0, a1 = f16(32, 48, seed=1), f16(32, 80, seed=2)
    names = {"a0": a0, "a1": a1, "b": np.zeros((32, 128), np.float16)}
    for name, value in names.items():
        np.save(tmp_path / f"{name}.npy", value)
    inputs = ",".join(str(tmp_path / f"{name}.npy") for name in names)
    out_npz = tmp_path / "out.npz"
    argv = [str(KERNELS / "distributed_two_pointers.mlir"), "--inputs", inputs]
    status, out, err = run(capsys, *argv, "--scalars", "n=128", "--output", str(out_npz), "--check")
    assert status == 0, out + err
    (got,) = np.load(out_npz).values()
    want = np.concatenate([a0, a1], axis=1)
    # The card holds f16 as DLFloat16: compare what its host copy keeps.
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3)


def test_a_distributed_view_over_two_pointers_with_an_unfixed_loop_is_a_located_error(
    capsys, tmp_path
):
    text = (KERNELS / "distributed_two_pointers.mlir").read_text()
    path = tmp_path / "unfixed.mlir"
    path.write_text(text)
    # A bound of 4096 is 128 iterations to unroll: more than the lowering takes.
    status, out, err = run(capsys, str(path), "--scalars", "n=4096")
    assert status == 1
    assert "unfixed.mlir:" in err and "(at most 64)" in err


def test_distributed_view_over_hbm_and_two_cores_lx(capsys, tmp_path):
    """distributed_lx_partitions.mlir: core 0's column-major LX partition is the
    transpose of a 64x16 input (%core0_lx0), core 1's a 48x64 one; both tiles copy
    the 96x64 global view to %mem8192 (checked against numpy)."""
    hbm, lx0, lx1 = f16(32, 64, seed=1), f16(64, 16, seed=2), f16(48, 64, seed=3)
    names = {
        "mem0": hbm,
        "mem8192": np.zeros((96, 64), np.float16),
        "core0_lx0": lx0,
        "core1_lx1024": lx1,
    }
    for name, value in names.items():
        np.save(tmp_path / f"{name}.npy", value)
    inputs = ",".join(str(tmp_path / f"{name}.npy") for name in names)
    out_npz = tmp_path / "out.npz"
    argv = [str(KERNELS / "distributed_lx_partitions.mlir"), "--inputs", inputs]
    status, out, err = run(capsys, *argv, "--output", str(out_npz), "--check")
    assert status == 0, out + err
    assert "%mem8192: tensor<96x64xf16>" in out
    (got,) = np.load(out_npz).values()
    want = np.concatenate([hbm, lx0.T, lx1]).astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3)


@pytest.mark.parametrize(("unit", "scale"), [("byte", 2), ("stick", 1 / 64)])
def test_address_units_place_views_as_the_element_addresses_do(capsys, tmp_path, unit, scale):
    """absolute_add.mlir's addresses (elements: 0, 2048, 8192) written in bytes or
    128-byte sticks and run with --address-unit give the same buffers and result."""
    text = (KERNELS / "absolute_add.mlir").read_text()
    for old in (2048, 8192):
        text = text.replace(
            f"arith.constant {old} : index", f"arith.constant {int(old * scale)} : index"
        )
    path = tmp_path / f"in_{unit}s.mlir"
    path.write_text(text)
    buffer = f16(96, 64, seed=5)
    np.save(tmp_path / "mem0.npy", buffer)
    np.save(tmp_path / "mem8192.npy", np.zeros((64, 64), np.float16))
    inputs = f"{tmp_path / 'mem0.npy'},{tmp_path / 'mem8192.npy'}"
    out_npz = tmp_path / "out.npz"
    argv = [str(path), "--inputs", inputs, "--address-unit", unit, "--output", str(out_npz)]
    status, out, err = run(capsys, *argv, "--check")
    assert status == 0, out + err
    assert "%mem8192: tensor<64x64xf16>" in out  # buffers are named by element address
    (got,) = np.load(out_npz).values()
    want = buffer[:64].astype(np.float32) + buffer[32:].astype(np.float32)
    np.testing.assert_allclose(got.astype(np.float32), want, atol=2e-2, rtol=1e-2)
    # Read as elements, those addresses place the views elsewhere (the stick ones
    # then overlap the output with the input: an in-place kernel the lowering refuses).
    status, out, err = run(capsys, str(path), "--address-unit", "element", "--check")
    assert "%mem8192: tensor" not in out
    assert status == 0 or "error:" in err


def test_address_unit_applies_to_ktir_kernels_only(capsys, tmp_path):
    path = tmp_path / "l1.mlir"
    path.write_text(
        "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = spyre.exp %x : tensor<4xf32> -> tensor<4xf32>\n"
        "  func.return %0 : tensor<4xf32>\n}\n"
    )
    status, out, err = run(capsys, str(path), "--address-unit", "byte")
    assert status != 0
    assert "--address-unit applies to KTIR kernels only" in out + err


def test_spyre_run_refuses_a_grid_of_no_tiles_and_a_mistyped_tile(capsys, tmp_path):
    """The interpreter's side of two rules (the lowering's: *_invalid.mlir): a grid
    dim below one tile, and an access tile whose type is not its set's shape."""
    path = tmp_path / "grid0.mlir"
    path.write_text(
        "func.func @k(%x: index) attributes {grid = [2, 0]} {\n"
        "  %t = ktdp.get_compute_tile_id : index\n"
        "  return\n"
        "}\n"
    )
    status, out, err = run(capsys, str(path), "--check")
    assert status == 1
    assert "grid0.mlir:1:1: error: the kernel's grid [2, 0] must have at least one dim" in err
    assert "Traceback" not in err
    rows = "affine_set<(d0, d1) : (d0 >= 0, -d0 + {} >= 0, d1 >= 0, -d1 + 63 >= 0)>"
    # Rows 1..2 typed as one row (a set holding the type's box from the base, rows 0..1,
    # is ktir-cpu's reading instead: a warning, test_a_store_tile_whose_set_holds_...).
    past_base = "affine_set<(d0, d1) : (d0 - 1 >= 0, -d0 + 2 >= 0, d1 >= 0, -d1 + 63 >= 0)>"
    path = tmp_path / "mistyped.mlir"
    path.write_text(
        "func.func @k(%x: index, %y: index) attributes {grid = [1]} {\n"
        "  %c0 = arith.constant 0 : index\n"
        "  %v = ktdp.construct_memory_view %x, sizes: [4, 64], strides: [64, 1] "
        f"{{coordinate_set = {rows.format(3)}, memory_space = #ktdp.spyre_memory_space<HBM>}}"
        " : memref<4x64xf16>\n"
        f"  %t = ktdp.construct_access_tile %v[%c0, %c0] {{access_tile_set = {past_base}, "
        "access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<4x64xf16> "
        "-> !ktdp.access_tile<1x64xindex>\n"
        "  %a = ktdp.load %t : !ktdp.access_tile<1x64xindex> -> tensor<1x64xf16>\n"
        "  %w = ktdp.construct_memory_view %y, sizes: [1, 64], strides: [64, 1] "
        f"{{coordinate_set = {rows.format(0)}, memory_space = #ktdp.spyre_memory_space<HBM>}}"
        " : memref<1x64xf16>\n"
        f"  %s = ktdp.construct_access_tile %w[%c0, %c0] {{access_tile_set = {rows.format(0)}, "
        "access_tile_order = affine_map<(d0, d1) -> (d0, d1)>} : memref<1x64xf16> "
        "-> !ktdp.access_tile<1x64xindex>\n"
        "  ktdp.store %a, %s : tensor<1x64xf16>, !ktdp.access_tile<1x64xindex>\n"
        "  return\n"
        "}\n"
    )
    status, out, err = run(capsys, str(path), "--check")
    assert status == 1, out + err
    assert "mistyped.mlir:4:3: error: KTIR interpreter:" in err
    assert "(KTDP.td: a tile's shape is that of its coordinate set)" in err


def test_a_row_gather_from_part_of_each_row_is_a_located_lowering_error(capsys, tmp_path):
    """offset_gather's table view narrowed to 32 of its pointer's 64 columns: the row
    gather moves whole rows of the pointer's tensor, so the lowering says so (not a
    failed ls.gather verification)."""
    text = (KERNELS / "offset_gather.mlir").read_text()
    rows, idx = text.index("%rows = ktdp"), text.index("%idx = ktdp")
    narrowed = text[rows:idx].replace("sizes: [4, 64]", "sizes: [4, 32]")
    narrowed = narrowed.replace("-d1 + 63", "-d1 + 31").replace("4x64xf16", "4x32xf16")
    out = text.index("%out = ktdp")
    rest = text[out:].replace("[4, 64], strides: [64, 1]", "[4, 32], strides: [32, 1]")
    rest = rest.replace("-d1 + 63", "-d1 + 31").replace("x64x", "x32x").replace("x64x", "x32x")
    text = text[:rows] + narrowed + text[idx:out] + rest
    path = tmp_path / "narrow_gather.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path))
    assert status == 1
    want = (
        "narrow_gather.mlir:34:5: error: 'ktdp.construct_indirect_access_tile': a row gather "
        "from a view (origin [2, 0], sizes [4, 32]) that is not whole rows of its pointer's"
    )
    assert want in err
    assert "Traceback" not in err


def test_an_element_gather_through_offset_views_matches_the_interpreter(capsys, tmp_path):
    """element_gather.mlir with its table view at row 16 of a 48-row tensor and its row
    index view at row 16 of a 32-row one (pointer + 1024): ktir_elements loads both
    from their origins (each origin ignored alone mismatches the interpreter)."""
    text = (KERNELS / "element_gather.mlir").read_text()
    old = "    %table = ktdp.construct_memory_view %table_ptr, sizes: [32, 64]"
    assert old in text
    whole = (
        "    %c1024 = arith.constant 1024 : index\n"
        "    %table_at = arith.addi %table_ptr, %c1024 : index\n"
        "    %rows_at = arith.addi %rows_ptr, %c1024 : index\n"
        "    %table_whole = ktdp.construct_memory_view %table_ptr, sizes: [48, 64], "
        "strides: [64, 1] {\n      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, "
        "-d0 + 47 >= 0, d1 >= 0, -d1 + 63 >= 0)>,\n"
        "      memory_space = #ktdp.spyre_memory_space<HBM>\n    } : memref<48x64xf16>\n"
        "    %rows_whole = ktdp.construct_memory_view %rows_ptr, sizes: [32, 64], "
        "strides: [64, 1] {\n      coordinate_set = affine_set<(d0, d1) : (d0 >= 0, "
        "-d0 + 31 >= 0, d1 >= 0, -d1 + 63 >= 0)>,\n"
        "      memory_space = #ktdp.spyre_memory_space<HBM>\n    } : memref<32x64xi32>\n"
    )
    text = text.replace(old, whole + old.replace("%table_ptr", "%table_at"))
    old = "%rows = ktdp.construct_memory_view %rows_ptr,"
    assert old in text
    text = text.replace(old, "%rows = ktdp.construct_memory_view %rows_at,")
    path = tmp_path / "offset_element_gather.mlir"
    path.write_text(text)
    status, out, err = run(capsys, str(path), "--check", "--seed", "3")
    assert status == 0, out + err
    assert "check: ok" in out


def test_interpreter_paged_copy_and_write_against_numpy():
    """paged_copy.mlir's Y[b, t, h, d] = X[I[b, t // 64], h, t % 64, d] and its dual
    paged_write.mlir's Y[I[b, t // 64], h, t % 64, d] = X[b, t, h, d] (the pages a
    page table does not name keep their contents)."""
    pages, table = f16(40, 8, 64, 128), np.random.default_rng(1).permutation(40)[:32]
    table = table.reshape(2, 16).astype(np.int32)
    out = run_kernel(
        kernel("paged_copy.mlir"),
        {0: pages, 1: table, 2: np.zeros((2, 1024, 8, 128), np.float16)},
        {},
    )
    # pages[table]: [b, page, h, token in page, d] -> Y's [b, token, h, d]
    want = pages[table].transpose(0, 1, 3, 2, 4).reshape(2, 1024, 8, 128)
    np.testing.assert_array_equal(out[2], want)
    x, before = f16(2, 1024, 8, 128, seed=2), f16(40, 8, 64, 128, seed=3)
    got = run_kernel(kernel("paged_write.mlir"), {0: x, 1: table, 2: before}, {})
    want = before.copy()
    want[table] = x.reshape(2, 16, 64, 8, 128).transpose(0, 1, 3, 2, 4)
    np.testing.assert_array_equal(got[2], want)


def test_a_paged_write_with_a_page_named_twice_is_a_located_race(capsys, tmp_path):
    """paged_write.mlir with page 5 named by entries (0, 3) and (1, 9) of the table:
    two token blocks written to one page, an order KTDP.td leaves undefined ("The
    `store` op does not define an ordering among writes"), so the reference
    interpreter stops at a located race, as for any scatter (test_ktir_scatter.py)."""
    x, before = f16(2, 1024, 8, 128, seed=4), f16(40, 8, 64, 128, seed=5)
    pages = [p for p in np.random.default_rng(6).permutation(40) if p != 5][:32]
    table = np.array(pages, np.int32).reshape(2, 16)
    table[0, 3] = table[1, 9] = 5
    paths = []
    for name, value in (("x", x), ("idx", table), ("y", before)):
        paths.append(str(tmp_path / f"{name}.npy"))
        np.save(paths[-1], value)
    status, out, err = run(
        capsys, str(KERNELS / "paged_write.mlir"), "--inputs", ",".join(paths), "--check"
    )
    assert status == 1, out + err
    assert (
        "paged_write.mlir:31:5: error: KTIR interpreter: 'ktdp.store' through an indirect "
        f"tile writes element {5 * 8 * 64 * 128} of %y_ptr twice with different values"
    ) in err, err
    assert "Traceback" not in err


def test_card_halves_lookup_rounds_every_f16_as_dlfloat16():
    """run_kernel's f16 inputs on the card: the bit lookup (card_halves_of) equals
    rounding each value through float32 to DLFloat16, on all 65536 bit patterns."""
    from spyre_ir.interp.dlfloat16 import round_to_dlf16

    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        want = round_to_dlf16(every.astype(np.float32)).astype(np.float16)
    from spyre_ir.interp.ktir import card_halves_of

    got = card_halves_of(every)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_a_paged_copy_with_its_page_table_at_a_pointer_offset(capsys, tmp_path):
    """paged_copy.mlir with its page table view a row into its pointer's tensor
    (`%idx_ptr + 16`: rows 1 and 2 of a 3x16 table): the page-table loads start at the
    view's origin (from row 0 the copy reads the wrong pages and the check fails)."""
    text = (KERNELS / "paged_copy.mlir").read_text()
    old = "    %idx = ktdp.construct_memory_view %idx_ptr,"
    assert old in text
    new = (
        "    %c16 = arith.constant 16 : index\n"
        "    %idx_at = arith.addi %idx_ptr, %c16 : index\n"
        "    %idx = ktdp.construct_memory_view %idx_at,"
    )
    path = tmp_path / "offset_page_table.mlir"
    path.write_text(text.replace(old, new))
    status, out, err = run(capsys, str(path), "--check", "--seed", "3")
    assert status == 0 and "check: ok" in out, out + err
