"""The calibrated memory system (spyre_ir/sim/lpddr.py): each effect against cycles
computed by hand from the default card's numbers (hardware.py, CALIBRATED fields):

    LPDDR5 151.27 B per cycle (166.4e9 B/s at 1.1 GHz), the card's bus, shared by all
    cores and both directions; reads sustain 96.3 % of it (145.68 B/cycle), writes
    44.5 % (67.32 B/cycle); one core keeps 22,400 B in flight in each direction over the
    550-cycle latency (40.73 B/cycle, 44.8 GB/s in and as much out, concurrently), and
    every member of a multicast cohort takes its copy in through its own channel.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_sim_engine import STREAM_ADD, lower, random_args

from spyre_ir.hardware import DEFAULT_CONFIG, UNCALIBRATED_CONFIG
from spyre_ir.sim import lpddr
from spyre_ir.sim.engine import simulate

C = DEFAULT_CONFIG
READ = 166.4e9 / 1.1e9 * 0.963  # B per cycle, the card's reads
WRITE = 166.4e9 / 1.1e9 * 0.445
CORE = 22_400 / 550


def boxes(offsets: list, extents: tuple, shape: tuple, cores: int) -> lpddr.BoxMoves:
    return lpddr.box_moves(offsets, extents, shape, 1, 64, cores)


def test_one_core_cannot_reach_the_cards_bandwidth() -> None:
    # One core loads a 1 MiB box: the card's bus could serve it in 1048576 / 145.68 =
    # 7198 cycles, but the core's read channel takes 1048576 / 40.73 = 25746.
    one = boxes([0, 0], (512, 1024), (512, 1024), 1)
    bus, channel, which = lpddr.move_cycles(one, one.largest, True, 1, C)
    assert (bus, channel, which) == (pytest.approx(1048576 / READ),
                                     pytest.approx(1048576 / CORE), lpddr.READ)  # fmt: skip
    assert channel > 3 * bus
    # 32 cores loading 32 KiB each share the bus: 32 x 32768 / 145.68 = 7198 cycles,
    # more than each one's channel needs (32768 / 40.73 = 804.6).
    rows = np.arange(32) * 16
    many = boxes([rows, 0], (16, 1024), (512, 1024), 32)
    assert many.unique == many.total == 32 * 256  # distinct boxes: no multicast
    bus, channel, _ = lpddr.move_cycles(many, many.largest, True, 32, C)
    assert bus == pytest.approx(32 * 32768 / READ) and channel == pytest.approx(32768 / CORE)


def test_one_core_reads_and_writes_at_once() -> None:
    # 4096 x 1024 f16 + the same: 16 MiB read, 8 MiB written. One core reads at 40.73
    # B/cycle: 16777216 / 40.73 = 411,941 cycles = 374.5 us at least, and writes the
    # 8 MiB meanwhile on its write channel (one channel for both: 561.7 us). 32 cores
    # share the bus: 16 MiB / 145.68 + 8 MiB / 67.32 = 239,783 cycles = 218.0 us.
    one = simulate(lower(STREAM_ADD, "spyre-to-units{cores=1}"), random_args(STREAM_ADD)).report
    many = simulate(lower(STREAM_ADD, "spyre-to-units{cores=32}"), random_args(STREAM_ADD)).report
    assert one["kernels"][0]["cores"] == 1 and many["kernels"][0]["cores"] == 32
    alone = 2**24 / CORE / 1.1e3
    shared = (16 * 2**20 / READ + 8 * 2**20 / WRITE) / 1.1e3
    assert alone <= one["simulated_us"] <= 1.05 * alone
    assert one["simulated_us"] < 0.75 * (2**24 + 2**23) / CORE / 1.1e3
    assert shared <= many["simulated_us"] <= 1.1 * shared
    # On the uncalibrated card one core alone has the whole bandwidth: no gain at all.
    flat = simulate(lower(STREAM_ADD, "spyre-to-units{cores=1}"), random_args(STREAM_ADD),
                    config=UNCALIBRATED_CONFIG).report  # fmt: skip
    assert one["simulated_us"] > 1.6 * many["simulated_us"]
    assert flat["simulated_us"] < 0.6 * one["simulated_us"]


def test_a_multicast_operand_is_read_from_lpddr5_once() -> None:
    # 32 cores in 8 cohorts of 4 (cores 4j .. 4j + 3 load the same 64 x 512 box, 64 KiB):
    # the bus reads 8 boxes, 8 x 65536 / 145.68 = 3599.0 cycles; each core takes its
    # copy in at its own rate, 65536 / 40.73 = 1609.1 cycles, under the bus time.
    cols = (np.arange(32) // 4) * 512
    shared = boxes([0, cols], (64, 512), (64, 4096), 32)
    assert (shared.cohort, shared.span) == (4, 3)
    assert shared.unique == 8 * 512 and shared.total == 32 * 512
    bus, channel, _ = lpddr.move_cycles(shared, shared.largest, True, 32, C)
    assert bus == pytest.approx(8 * 65536 / READ) and channel == pytest.approx(65536 / CORE)
    # Without multicast every core's load is its own read: 32 x 65536 / 145.68.
    unicast = C.with_options(lpddr_multicast=False)
    bus, _, _ = lpddr.move_cycles(shared, shared.largest, True, 32, unicast)
    assert bus == pytest.approx(32 * 65536 / READ)
    # One box for all 32 cores: read once (449.9 cycles), but every core's channel
    # takes the whole box in: 1609.1 cycles, the move's time.
    same = boxes([0, 0], (64, 512), (64, 4096), 32)
    assert (same.cohort, same.span, same.unique) == (32, 31, 512)
    bus, channel, _ = lpddr.move_cycles(same, same.largest, True, 32, C)
    assert bus == pytest.approx(65536 / READ) and channel == pytest.approx(65536 / CORE)


def test_read_and_write_is_slower_than_read() -> None:
    # 32 cores each move a 64 x 64 f16 tile (8 KiB): a load of them all holds the bus
    # for 32 x 8192 / 145.68 = 1799.5 cycles, a store 32 x 8192 / 67.32 = 3894.2.
    rows = np.arange(32) * 64
    tiles = boxes([rows, 0], (64, 64), (2048, 64), 32)
    load, _, to = lpddr.move_cycles(tiles, tiles.largest, True, 32, C)
    store, _, back = lpddr.move_cycles(tiles, tiles.largest, False, 32, C)
    assert (to, back) == (lpddr.READ, lpddr.WRITE)
    assert load == pytest.approx(32 * 8192 / READ)
    assert store == pytest.approx(32 * 8192 / WRITE)
    # A copy (read + write) of 32 MiB: 32 MiB / 145.68 + 32 MiB / 67.32 = 728,795
    # cycles = 662.5 us (the card, copy_sizes.csv: 662.6 us); the reads alone 209.4 us.
    copy = 2**25 / READ + 2**25 / WRITE
    assert copy / 1.1e3 == pytest.approx(662.5, rel=1e-3)
    assert copy > 2.5 * 2**25 / READ


def test_bus_and_channel_are_reserved_each_in_its_order() -> None:
    # A core's K loop over 1x32x1x1 (every core takes all of B): per step a load of the
    # core's own A slice (32 distinct boxes: the bus 450 cycles, the channel 50) and a
    # load of the B tile all cores share (read once: the bus 450, each channel 1610).
    # Held for max(bus, channel) from one start, a step took 450 + 1610 = 2060 cycles;
    # the two limits reserved each in order, the stream runs at the channel's sum.
    bus_free = channel_free = 0.0
    ends = []
    for bus, own in [(450, 50), (450, 1610)] * 3:
        start, end, own_start = lpddr.reserve(bus_free, bus, own, channel_free)
        bus_free, channel_free = start + bus, own_start + own
        ends.append(end)
    # A1 on the bus at 0 (channel 0-50); B1 on the bus at 450, its channel 450-2060;
    # A2's bus waits to 2060 - 450 = 1610 (one move ahead of the channel), its channel
    # 2060-2110; B2's channel 2110-3720; A3 3720-3770; B3 3770-5380.
    assert ends == [450, 2060, 2110, 3720, 3770, 5380]
    assert ends[-1] == 450 - 50 + 3 * (50 + 1610)  # the channel's sum after the first bus
    # One move ends as it did when it waited for both: a bus-bound one behind a free
    # channel its bus time after it is ready, a channel-bound one behind a busy channel
    # its channel time after the channel frees (2000 + 1610).
    assert lpddr.reserve(100.0, 450, 50, 80.0) == (100.0, 550.0, 100.0)
    assert lpddr.reserve(100.0, 450, 1610, 2000.0) == (1550.0, 3610.0, 2000.0)
