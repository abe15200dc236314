"""Stores through indirect access tiles (scatters, spyre_ir/lowering/ktir_scatter.py):
tests/ktir/row_scatter.mlir and element_scatter.mlir on the simulated card, checked
bit for bit against the KTIR reference interpreter, which is itself checked against
numpy here; an element written twice with different values is a located race, the
same value twice is not."""

from pathlib import Path

import numpy as np
import pytest

from spyre_ir.diagnostics import parse_file
from spyre_ir.interp.ktir import KtirError, run_kernel
from spyre_ir.lowering.ktir_values import kernel_pointers
from spyre_ir.registry import make_context
from spyre_ir.tools.ktir_inputs import distinct_positions, scatter_indices
from spyre_ir.tools.spyre_run import main

KERNELS = Path(__file__).parent / "ktir"


def kernel(name: str):
    module = parse_file(make_context(), str(KERNELS / name))
    return next(op for op in module.walk() if op.name == "func.func")


def f16(*shape: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float16)


def card_run(capsys, tmp_path, name: str, arrays: dict[str, np.ndarray], *extra: str):
    """spyre-run NAME --check on the given inputs: (status, stdout, stderr, result)."""
    for key, value in arrays.items():
        np.save(tmp_path / f"{key}.npy", value)
    inputs = ",".join(str(tmp_path / f"{key}.npy") for key in arrays)
    out_npz = tmp_path / "out.npz"
    argv = [str(KERNELS / name), "--inputs", inputs, "--output", str(out_npz), "--check", *extra]
    status = main(argv)
    out = capsys.readouterr()
    result = next(iter(np.load(out_npz).values())) if status == 0 else None
    return status, out.out, out.err, result


def element_case(seed: int = 0):
    """element_scatter.mlir's inputs, distinct (row, col) pairs, two of them at the
    table's far corner, and numpy's result."""
    x, before = f16(16, 64, seed=seed), f16(32, 64, seed=seed + 1)
    flat = np.random.default_rng(seed + 2).permutation(32 * 64)[: 16 * 64]
    flat[np.argmax(flat == 32 * 64 - 1)] = flat[0]  # 2047 moves to the front
    flat[0] = 32 * 64 - 1
    rows, cols = (c.reshape(16, 64).astype(np.int32) for c in np.unravel_index(flat, (32, 64)))
    want = before.copy()
    want[rows, cols] = (2 * x.astype(np.float32)).astype(np.float16)
    return {"x": x, "rows": rows, "cols": cols, "out": before}, want


def row_case(seed: int = 0):
    """row_scatter.mlir's inputs: 16 distinct rows of 64, the last among them."""
    x, before = f16(16, 32, seed=seed), f16(64, 32, seed=seed + 1)
    idx = np.random.default_rng(seed + 2).permutation(63)[:16].astype(np.int32)
    idx[5] = 63
    want = before.copy()
    want[idx] = (x.astype(np.float32) * 0.5).astype(np.float16)
    return {"x": x, "idx": idx, "out": before}, want


@pytest.mark.parametrize("level", ["sim", "dataflow"])
@pytest.mark.parametrize(
    "name, case, out", [("element_scatter.mlir", "element", 3), ("row_scatter.mlir", "row", 2)]
)
def test_a_scatter_against_numpy(capsys, tmp_path, level, name, case, out):
    arrays, want = {"element": element_case, "row": row_case}[case]()
    got = run_kernel(kernel(name), dict(enumerate(arrays.values())), {})
    np.testing.assert_array_equal(got[out], want)
    status, text, err, card = card_run(capsys, tmp_path, name, arrays, "--level", level)
    assert status == 0, text + err
    assert "check: ok (max abs error 0 against the KTIR interpreter" in text, text
    # The card holds f16 as DLFloat16: its result is the interpreter's at the card's
    # rounding (checked bit for bit above), within DLFloat16's precision of numpy's.
    np.testing.assert_allclose(card.astype(np.float32), want.astype(np.float32), rtol=4e-3)


def test_a_position_scattered_twice_with_different_values_is_a_located_race(capsys, tmp_path):
    arrays, _ = row_case()
    arrays["idx"][9] = arrays["idx"][2]  # tile 2's row 1 and tile 0's row 2: one row
    status, out, err, _ = card_run(capsys, tmp_path, "row_scatter.mlir", arrays)
    assert status == 1
    row = int(arrays["idx"][2])
    assert (
        f"row_scatter.mlir:40:5: error: KTIR interpreter: 'ktdp.store' through an indirect "
        f"tile writes element {row * 32} of %out_ptr twice with different values"
    ) in err, err
    assert "on tiles 0 and 2), 32 such writes in all: a race" in err
    assert "Traceback" not in err
    arrays, _ = element_case()
    arrays["rows"][3, 7], arrays["cols"][3, 7] = arrays["rows"][0, 0], arrays["cols"][0, 0]
    with pytest.raises(KtirError, match="writes element 2047 of %out_ptr twice .* on tile 0"):
        run_kernel(kernel("element_scatter.mlir"), dict(enumerate(arrays.values())), {})


def test_a_position_scattered_twice_with_one_value_is_one_write(capsys, tmp_path):
    arrays, _ = row_case()
    arrays["idx"][9] = arrays["idx"][2]
    arrays["x"][9] = arrays["x"][2]  # the same row written twice
    status, out, err, card = card_run(capsys, tmp_path, "row_scatter.mlir", arrays)
    assert status == 0 and "check: ok (max abs error 0" in out, out + err
    row = int(arrays["idx"][2])
    np.testing.assert_allclose(
        card[row].astype(np.float32), arrays["x"][2].astype(np.float32) * 0.5, rtol=4e-3
    )


def test_spyre_run_draws_a_scatters_positions_without_repeats():
    fn = kernel("element_scatter.mlir")
    pointers = kernel_pointers(fn)
    ((ks, dims),) = scatter_indices(fn, pointers)
    assert ks == [1, 2] and dims == (32, 64)
    rows, cols = distinct_positions(np.random.default_rng(0), [(16, 64)] * 2, dims)
    assert np.unique(rows * 64 + cols).size == 16 * 64
    assert rows.max() < 32 and cols.max() < 64
    assert distinct_positions(np.random.default_rng(0), [(33, 64)] * 2, dims) is None
    fn = kernel("row_scatter.mlir")
    assert scatter_indices(fn, kernel_pointers(fn)) == [([1], (64,))]
    # a gather's index view is drawn as before (bounded, repeats allowed)
    fn = kernel("element_gather.mlir")
    assert scatter_indices(fn, kernel_pointers(fn)) == []


def test_element_scatter_into_a_view_at_an_offset(capsys, tmp_path):
    # The table view two rows into its pointer's tensor (%out_ptr + 128): the flat
    # positions count from the tensor's start (random distinct pairs, --check).
    text = (KERNELS / "element_scatter.mlir").read_text()
    text = text.replace(
        "    %c0 = arith.constant 0 : index\n",
        "    %c0 = arith.constant 0 : index\n    %c128 = arith.constant 128 : index\n"
        "    %at = arith.addi %out_ptr, %c128 : index\n",
    ).replace("construct_memory_view %out_ptr,", "construct_memory_view %at,")
    path = tmp_path / "offset_scatter.mlir"
    path.write_text(text)
    status = main([str(path), "--check", "--seed", "5"])
    out = capsys.readouterr()
    assert status == 0, out.out + out.err
    assert "%out_ptr: tensor<34x64xf16>" in out.out
    assert "check: ok (max abs error 0 against the KTIR interpreter" in out.out
