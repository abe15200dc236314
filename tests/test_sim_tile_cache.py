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


def _case(seed: int, declare: bool = True) -> tuple:
    """A fresh recording cache, the matmul lowered, and its arguments as codes with the
    weight b read-only (and declared constant, unless not `declare`)."""
    replay.clear()
    a, b, c = _codes(random_args(MATMUL, seed=seed))
    b.flags.writeable = False
    if declare:
        replay.declare_constant(b)
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
    replay.changed(b)
    np.testing.assert_array_equal(_run(module, args), _run(lower(MATMUL, TO_UNITS), args))


def test_an_undeclared_read_only_input_is_decoded_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module, args = _case(seed=5, declare=False)  # read-only, but nobody promised it stays so
    counts = _decodes_per_run(monkeypatch, module, args)
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

    module, args = _case(seed=6)
    _run(module, args)  # recorded
    recorded = replay.held_bytes()
    _run(module, args)  # replayed: b's tiles kept
    assert replay.held_bytes() >= recorded + args[1].size * 4  # b's decoded tiles: float32
    spyre_memory.empty_cache()
    assert replay.held_bytes() == 0
