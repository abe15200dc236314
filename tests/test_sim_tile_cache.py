"""Decoded tiles of constant tensors kept between replays (spyre_ir/sim/replay.py,
`declare_constant` / `cached_tile`): a replay that takes kept tiles gives exactly what a
first run on the same data gives, sees a declared change, and leaves the kept tiles
alone when it writes into the LX buffers they landed in."""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_engine import TO_UNITS, lower, matmul_bias, random_args

from spyre_ir.interp import dlfloat16
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


def _counting_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls = [0]
    real = machine_module.decode

    def counted(*a, **k):
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(machine_module, "decode", counted)
    return calls


def test_replays_take_kept_tiles_of_a_constant_weight_and_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replay.clear()
    module = lower(MATMUL, TO_UNITS)
    a, b, c = _codes(random_args(MATMUL, seed=3))
    want = _run(lower(MATMUL, TO_UNITS), [a, b, c])  # a fresh module: a first run
    b.flags.writeable = False
    replay.declare_constant(b)
    calls = _counting_decodes(monkeypatch)
    counts = []
    for _ in range(3):  # recorded; replayed (its tiles kept); replayed (kept tiles taken)
        before = calls[0]
        np.testing.assert_array_equal(_run(module, [a, b, c]), want)
        counts.append(calls[0] - before)
    # the last run decodes only the tiles of a and c, not the constant weight's
    assert counts[0] == counts[1] > counts[2] > 0


def test_a_declared_change_is_seen_by_the_next_replay() -> None:
    replay.clear()
    module = lower(MATMUL, TO_UNITS)
    a, b, c = _codes(random_args(MATMUL, seed=4))
    b.flags.writeable = False
    replay.declare_constant(b)
    for _ in range(2):
        _run(module, [a, b, c])  # recorded, then replayed with its tiles kept
    b.flags.writeable = True  # as the runtime's row store writes a kept image
    b[5:9] = dlfloat16.encode(np.full((4, b.shape[1]), 0.75, np.float32))
    b.flags.writeable = False
    replay.changed(b)
    np.testing.assert_array_equal(_run(module, [a, b, c]), _run(lower(MATMUL, TO_UNITS), [a, b, c]))


def test_an_undeclared_read_only_input_is_decoded_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replay.clear()
    module = lower(MATMUL, TO_UNITS)
    a, b, c = _codes(random_args(MATMUL, seed=5))
    b.flags.writeable = False  # read-only, but nobody promised it stays so
    calls = _counting_decodes(monkeypatch)
    counts = []
    for _ in range(3):
        before = calls[0]
        _run(module, [a, b, c])
        counts.append(calls[0] - before)
    assert counts[0] == counts[1] == counts[2]


def test_only_a_read_only_array_can_be_declared_constant() -> None:
    with pytest.raises(ValueError, match="read-only"):
        replay.declare_constant(np.zeros(4, np.uint16))


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

    replay.clear()
    module = lower(MATMUL, TO_UNITS)
    a, b, c = _codes(random_args(MATMUL, seed=6))
    b.flags.writeable = False
    replay.declare_constant(b)
    recorded = 0
    for run in range(2):
        _run(module, [a, b, c])
        if run == 0:
            recorded = replay.held_bytes()
    assert replay.held_bytes() >= recorded + b.size * 4  # b's decoded tiles: float32
    spyre_memory.empty_cache()
    assert replay.held_bytes() == 0
