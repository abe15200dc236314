"""The process-wide card: device arrays over LPDDR5 bytes, uploads, downloads and
on-card copies timed by the cost model (hand-computed here), memory modes, and
out-of-memory recovery through the card."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from spyre_ir import cost_model
from spyre_ir.hardware import DEFAULT_CONFIG
from spyre_ir.runtime import card as card_module
from spyre_ir.runtime.allocator import SpyreOutOfMemoryError
from spyre_ir.runtime.card import Card, DeviceArray, get_card, reset_card
from spyre_ir.runtime.streams import Stream


@pytest.fixture
def card() -> Card:
    return Card()


def test_host_link_is_pcie_gen5_x16() -> None:
    # 32 GT/s x 16 lanes x 128/130 encoding / 8 bits = 63.015... GB/s per direction.
    assert DEFAULT_CONFIG.host_link_bandwidth == pytest.approx(63.0153846e9)


def test_host_transfer_time_by_hand() -> None:
    # 1e6 bytes: 2 us latency + 1e6 * 130 * 8 / (16 * 32e9 * 128) = 15.869140625 us.
    assert cost_model.host_transfer_s(10**6, DEFAULT_CONFIG) == pytest.approx(17.869140625e-6)
    assert cost_model.host_transfer_s(0, DEFAULT_CONFIG) == 0.0
    slow = DEFAULT_CONFIG.with_options(host_link_lanes=4, host_transfer_latency_s=1e-5)
    # 4 lanes: 1e6 * 130 * 8 / (4 * 32e9 * 128) = 63.4765625 us, plus 10 us.
    assert cost_model.host_transfer_s(10**6, slow) == pytest.approx(73.4765625e-6)


def test_device_copy_time_by_hand() -> None:
    # 204.8 MB read at 160.2432 GB/s (166.4 x 0.963) and written at 74.048 GB/s
    # (166.4 x 0.445): 1.2781 ms + 2.7658 ms.
    assert cost_model.device_copy_s(204_800_000, DEFAULT_CONFIG) == pytest.approx(
        4.04383e-3, rel=1e-5
    )


def test_upload_round_trip_and_timing(card: Card) -> None:
    host = np.arange(250_000, dtype=np.float32)  # 1e6 bytes
    array = card.upload(host)
    assert array.shape == (250_000,) and array.is_contiguous() and array.nbytes == 10**6
    host[0] = -1.0  # the upload took its copy when enqueued
    card.synchronize()
    assert card.now_s == pytest.approx(17.869140625e-6)
    result = array.to_host()
    assert result[0] == 0.0 and np.array_equal(result[1:], host[1:])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int8, np.int64, np.bool_])
def test_round_trip_keeps_every_dtype(card: Card, dtype: type) -> None:
    host = (np.arange(24).reshape(2, 3, 4) % 7).astype(dtype)
    array = card.upload(host)
    card.synchronize()
    out = array.to_host()
    assert out.dtype == host.dtype and np.array_equal(out, host)


def test_download_is_filled_when_the_host_waits(card: Card) -> None:
    host = np.arange(12, dtype=np.float16).reshape(3, 4)
    array = card.upload(host)
    out = card.download(array)
    assert card.timeline.pending() == 2
    card.synchronize()
    assert np.array_equal(out, host)
    assert card.now_s == pytest.approx(2 * cost_model.host_transfer_s(24, DEFAULT_CONFIG))


def test_strided_views_and_on_card_copy(card: Card) -> None:
    host = np.arange(12, dtype=np.float16).reshape(3, 4)
    src = card.upload(host)
    transposed = DeviceArray(card, src.block, (4, 3), (1, 4), 0, np.float16)
    row = DeviceArray(card, src.block, (4,), (1,), 4, np.float16)
    assert not transposed.is_contiguous() and row.is_contiguous()
    dst = card.empty((4, 3), np.float16)
    card.copy(dst, transposed)
    card.synchronize()
    assert np.array_equal(dst.to_host(), host.T)
    assert np.array_equal(row.to_host(), host[1])
    # h2d of 24 bytes, then the copy reads 24 bytes at LPDDR5's sustained read rate
    # (160.2432 GB/s) and writes them at its write rate (74.048 GB/s).
    expected = (cost_model.host_transfer_s(24, DEFAULT_CONFIG)
                + 24 / 160.2432e9 + 24 / 74.048e9)  # fmt: skip
    assert card.now_s == pytest.approx(expected)
    row.write_host(np.full(4, 7, np.float16))
    assert np.array_equal(src.to_host()[1], [7, 7, 7, 7])


def test_contiguity_ignores_extents_of_one(card: Card) -> None:
    array = card.empty((1, 4), np.float32)
    assert DeviceArray(card, array.block, (1, 4), (99, 1), 0, np.float32).is_contiguous()
    assert not DeviceArray(card, array.block, (2, 2), (1, 2), 0, np.float32).is_contiguous()


def test_bad_views_and_writes(card: Card) -> None:
    array = card.empty((4,), np.float32)  # one 128-byte block: 32 float32
    with pytest.raises(ValueError, match="past the 128-byte block"):
        DeviceArray(card, array.block, (33,), (1,), 0, np.float32)
    with pytest.raises(ValueError, match="differ in rank"):
        DeviceArray(card, array.block, (4,), (1, 1), 0, np.float32)
    with pytest.raises(ValueError, match=r"writing shape \(3,\) into a device array of \(4,\)"):
        array.write_host(np.zeros(3))
    with pytest.raises(ValueError, match="copy between shapes"):
        card.copy(array, card.empty((5,), np.float32))
    with pytest.raises(ValueError, match="belongs to another card"):
        card.upload(np.zeros(4), stream=Stream(Card()))


def test_empty_of_no_elements(card: Card) -> None:
    array = card.empty((0, 5), np.float16)
    assert array.nbytes == 0 and array.to_host().shape == (0, 5)


@pytest.mark.parametrize("mode", ["vf", "pf"])
def test_out_of_memory_through_the_card_leaves_it_usable(mode: str) -> None:
    config = DEFAULT_CONFIG.with_options(
        vf_segments=1, vf_segment_bytes=4096, pf_region_limit=1, lpddr_usable_bytes=4096
    )
    card = Card(config, mode)
    held = card.upload(np.zeros(1024, np.float32))  # 4096 bytes: the whole card
    with pytest.raises(SpyreOutOfMemoryError, match="tried to allocate 4 bytes; 0 bytes free"):
        card.empty((1,), np.float32)
    card.synchronize()
    card.free(held.block)
    again = card.upload(np.ones(3, np.float32))
    card.synchronize()
    assert again.to_host().tolist() == [1.0, 1.0, 1.0]
    assert card.memory_stats().num_ooms == 1


def test_process_wide_card(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(card_module, "_card", None)
    first = get_card()
    assert get_card() is first and first.allocator.mode == "vf"
    small = DEFAULT_CONFIG.with_options(cores=8)
    fresh = reset_card(small, mode="pf")
    assert get_card() is fresh and fresh is not first
    assert (fresh.config.cores, fresh.allocator.mode, fresh.now_s) == (8, "pf", 0.0)
    assert Stream().card is fresh  # streams default to the process-wide card


def test_memory_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(card_module, "_card", None)
    monkeypatch.setenv("SPYRE_MEMORY_MODE", "pf")
    assert get_card().allocator.mode == "pf"
    monkeypatch.setattr(card_module, "_card", None)
    monkeypatch.setenv("SPYRE_MEMORY_MODE", "xf")
    with pytest.raises(ValueError, match="SPYRE_MEMORY_MODE='xf': expected 'vf' or 'pf'"):
        get_card()


def test_the_runtime_doc_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(card_module, "_card", None)
    text = (Path(__file__).resolve().parent.parent / "docs" / "runtime.md").read_text()
    namespace: dict = {}
    exec(re.findall(r"```python\n(.*?)```", text, re.S)[0], namespace)
    assert namespace["start"].elapsed_time(namespace["end"]) == pytest.approx(1.0)
    assert namespace["card"].memory_stats().allocated_bytes == 0
