"""Decoded tiles of declared tensors kept between replays (spyre_ir/sim/replay.py
`cached_tile`, spyre_ir/interp/versions.py): a replay that takes kept tiles gives exactly
what a first run on the same data gives, sees a declared change (decoding again only
the rows a change of a few rows touched), and leaves the kept tiles alone when it
writes into the LX buffers they landed in."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_engine import TO_UNITS, lower, matmul_bias, random_args

from spyre_ir.interp import dlfloat16, versions
from spyre_ir.interp import machine as machine_module
from spyre_ir.interp.kernel_memory import LxBuffer, LxRoot
from spyre_ir.sim import replay
from spyre_ir.sim.engine import simulate

MATMUL = matmul_bias(67, 320, 256)


def _codes(args: list[np.ndarray]) -> list[np.ndarray]:
    return [dlfloat16.encode(a) for a in args]


def _run(module, args: list[np.ndarray]) -> np.ndarray:
    (out,) = simulate(module, args, card_format=True, codes=True).outputs
    return np.array(out)


def _case(seed: int, declare: bool = True, writable: bool = False) -> tuple:
    """A fresh recording cache, the matmul lowered, and its arguments as codes with the
    weight b read-only unless `writable` (and declared, unless not `declare`)."""
    replay.clear()
    a, b, c = _codes(random_args(MATMUL, seed=seed))
    b.flags.writeable = writable
    if declare:
        versions.declare(b)
    return lower(MATMUL, TO_UNITS), [a, b, c]


def _decodes_per_run(monkeypatch: pytest.MonkeyPatch, module, args, want=None) -> list[int]:
    """The decodes of each of three runs (recorded; replayed, keeping what it may;
    replayed again), each run's result checked against `want` when given."""
    calls = [0]
    real = machine_module.decode

    def counted(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(machine_module, "decode", counted)
    counts = []
    for _ in range(3):
        before = calls[0]
        out = _run(module, args)
        if want is not None:
            np.testing.assert_array_equal(out, want)
        counts.append(calls[0] - before)
    return counts


def test_replays_take_kept_tiles_of_a_constant_weight_and_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module, args = _case(seed=3)
    want = _run(lower(MATMUL, TO_UNITS), args)  # a fresh module: a first run
    counts = _decodes_per_run(monkeypatch, module, args, want)
    # the last run decodes only the tiles of a and c, not the constant weight's
    assert counts[0] == counts[1] > counts[2] > 0


def test_a_declared_change_is_seen_by_the_next_replay() -> None:
    module, args = _case(seed=4)
    for _ in range(2):
        _run(module, args)  # recorded, then replayed with its tiles kept
    b = args[1]
    b.flags.writeable = True  # as the runtime's row store writes a kept image
    b[5:9] = dlfloat16.encode(np.full((4, b.shape[1]), 0.75, np.float32))
    b.flags.writeable = False
    versions.changed(b)
    np.testing.assert_array_equal(_run(module, args), _run(lower(MATMUL, TO_UNITS), args))


def test_a_change_of_a_few_rows_decodes_only_those_rows_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module, args = _case(seed=7, writable=True)  # a KV cache: written in place, announced
    b = args[1]
    for _ in range(2):
        _run(module, args)  # recorded, then replayed with b's tiles kept
    b[5:9] = dlfloat16.encode(np.full((4, b.shape[1]), -1.25, np.float32))
    versions.changed(b, ((5, 9), (0, b.shape[1])))
    decoded = [0]
    real = replay.decode

    def counted(codes: np.ndarray) -> np.ndarray:
        decoded[0] += codes.size
        return real(codes)

    monkeypatch.setattr(replay, "decode", counted)
    np.testing.assert_array_equal(_run(module, args), _run(lower(MATMUL, TO_UNITS), args))
    # 4 of b's 256 rows changed: only they are decoded again (an element as often as
    # the tiles that hold it; decoding the tiles again would be b.size at least)
    assert 0 < decoded[0] < b.size // 16


def test_a_version_knows_the_changes_since_or_says_it_does_not() -> None:
    version = versions.Version()
    version.change(((0, 1), (4, 8)))
    version.change(((2, 3), (0, 8)))
    assert version.changes_since(0, ((0, 4), (0, 2))) == [((2, 3), (0, 8))]
    assert version.changes_since(0, ((1, 2), (0, 8))) == []
    assert version.changes_since(2, ((0, 4), (0, 8))) == []
    version.change(None)  # anything may have changed
    assert version.changes_since(2, ((5, 6), (0, 1))) is None
    for row in range(versions._KEPT_CHANGES + 1):
        version.change(((row, row + 1), (0, 8)))
    assert version.changes_since(3, ((99, 100), (0, 8))) is None  # forgotten
    assert version.changes_since(version.number - 1, ((99, 100), (0, 8))) == []


def test_the_bounds_of_an_index_and_of_every_cores_box() -> None:
    assert versions.index_bounds((slice(None), np.array([[3], [7]])), (4, 10, 2)) == (
        (0, 4), (3, 8), (0, 2))  # fmt: skip
    assert versions.index_bounds((np.array([-1]),), (4,)) is None  # counts from the end
    assert versions.index_bounds((np.array([True, False]),), (2,)) is None  # a mask
    assert versions.box_bounds([np.array([0, 64]), 3], [64, 2], [100, 4]) == ((0, 100), (3, 4))


def test_an_undeclared_read_only_input_is_decoded_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module, args = _case(seed=5, declare=False)  # read-only, but nobody promised it stays so
    counts = _decodes_per_run(monkeypatch, module, args)
    assert counts[0] == counts[1] == counts[2]


def test_a_kept_tile_is_copied_before_a_buffer_is_written_over_it() -> None:
    tile = np.arange(2 * 3, dtype=np.float32).reshape(2, 3)
    tile.flags.writeable = False
    root = LxRoot(np.zeros((2, 3), np.float32))
    whole = LxBuffer(root, (), (3,), "f32", 2)
    whole.write(tile, shared=True)
    assert root.array is tile  # taken as it is, no copy
    whole.write(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(tile, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(root.array, 1.0)
    slots = LxRoot(np.zeros((2, 2, 3), np.float32))
    slot0 = LxBuffer(slots, (0,), (3,), "f32", 2)
    slots.array = np.broadcast_to(tile[:, None], (2, 2, 3))  # read-only, as a kept tile
    slot0.write(np.full((2, 3), 7.0, np.float32))
    np.testing.assert_array_equal(slots.array[:, 0], 7.0)
    np.testing.assert_array_equal(slots.array[:, 1], tile)
    np.testing.assert_array_equal(tile, np.arange(6, dtype=np.float32).reshape(2, 3))


def test_a_slot_takes_a_kept_tile_until_it_is_written_or_read_whole() -> None:
    tile = np.arange(2 * 3, dtype=np.float32).reshape(2, 3)
    tile.flags.writeable = False
    root = LxRoot(np.zeros((2, 2, 3), np.float32))  # two slots of [3] per core
    whole = LxBuffer(root, (), (2, 3), "f32", 2)
    slot0, slot1 = whole.slot(0, 2), whole.slot(1, 2)
    slot0.write(tile, shared=True)
    assert slot0.read() is tile  # no copy into the slot
    slot1.write(np.full((2, 3), 5.0, np.float32))
    np.testing.assert_array_equal(whole.read()[:, 0], tile)  # read whole: copied in
    np.testing.assert_array_equal(whole.read()[:, 1], 5.0)
    slot0.write(tile, shared=True)
    slot0.write(np.full((2, 3), 9.0, np.float32))  # written over: the kept tile leaves
    np.testing.assert_array_equal(slot0.read(), 9.0)
    np.testing.assert_array_equal(tile, np.arange(6, dtype=np.float32).reshape(2, 3))
    per_core = whole.slot(np.array([1, 0]), 2)  # core 0 reads slot 1, core 1 slot 0
    slot0.write(tile, shared=True)
    np.testing.assert_array_equal(per_core.read(), [[5.0] * 3, tile[1]])


def test_kept_tiles_count_as_host_cache_and_empty_cache_drops_them() -> None:
    from spyre_ir.runtime import spyre_memory

    module, args = _case(seed=6)
    _run(module, args)  # recorded
    recorded = replay.held_bytes()
    _run(module, args)  # replayed: b's tiles kept
    assert replay.held_bytes() >= recorded + args[1].size * 4  # b's decoded tiles: float32
    spyre_memory.empty_cache()
    assert replay.held_bytes() == 0
