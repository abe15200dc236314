"""Host memory stays bounded: the caches of compiled programs (the eager path's kernels)
and of replay recordings are LRUs bounded by bytes (SPYRE_HOST_CACHE_MB) and
torch.spyre.memory.empty_cache() releases them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from spyre_ir.byte_lru import ByteLRU, setting_bytes
from spyre_ir.runtime import device, eager
from spyre_ir.sim import replay

device.setup()


def test_byte_lru_evicts_least_recently_used_first() -> None:
    lru: ByteLRU[str, bytes] = ByteLRU(lambda key, value: len(value), limit_bytes=10)
    lru.put("a", b"1234")
    lru.put("b", b"1234")
    assert lru.get("a") == b"1234"  # "a" is now the most recent
    lru.put("c", b"1234")  # 12 bytes > 10: the least recent ("b") goes
    assert "b" not in lru and lru.get("a") and lru.get("c")
    assert lru.nbytes == 8 and lru.evictions == 1
    lru.put("big", b"x" * 50)  # alone over the bound: the newest entry stays
    assert list(lru.keys()) == ["big"] and lru.nbytes == 50
    lru.clear()
    assert len(lru) == 0 and lru.nbytes == 0


@pytest.mark.parametrize("cold", [False, True])
def test_a_cycle_larger_than_the_bound_hits_only_when_full_entries_come_in_cold(cold) -> None:
    """Five entries of 4 bytes walked in a cycle through a 12-byte cache: plain LRU
    evicts each just before its next use (no hit, ever); `cold_when_full` keeps two of
    the three that fit hit every cycle (the third place turns over)."""
    lru: ByteLRU[str, bytes] = ByteLRU(lambda key, value: len(value), 12, cold_when_full=cold)
    hits = 0
    for _ in range(10):
        for key in "abcde":
            if lru.get(key) is not None:
                hits += 1
            else:
                lru.put(key, b"1234")
    assert lru.nbytes <= 12
    assert hits == (18 if cold else 0)


def test_entries_nobody_uses_age_out_of_a_cache_that_takes_entries_in_cold() -> None:
    lru: ByteLRU[str, bytes] = ByteLRU(lambda key, value: len(value), 12, cold_when_full=True)
    for key in "xyz":  # a model's tiles nobody reads any more
        lru.put(key, b"1234")
    for _ in range(100):  # another model's, walked in a cycle
        for key in "abcde":
            if lru.get(key) is None:
                lru.put(key, b"1234")
    assert not any(key in lru for key in "xyz")


def test_the_setting_is_read_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPYRE_HOST_CACHE_MB", "2.5")
    assert setting_bytes() == int(2.5 * 2**20)
    monkeypatch.setenv("SPYRE_HOST_CACHE_MB", "lots")
    with pytest.raises(ValueError, match="SPYRE_HOST_CACHE_MB must be a non-negative number"):
        setting_bytes()


def test_the_eager_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    eager.clear_cache()
    monkeypatch.setattr(eager._cache, "limit_bytes", 3 * eager._KERNEL_BYTES)
    for n in range(1, 7):  # six signatures, room for about two
        x = torch.ones(n, 64, dtype=torch.float16).to("spyre")
        assert torch.equal((x * 3).cpu(), torch.full((n, 64), 3.0, dtype=torch.float16))
    info = eager.cache_info()
    assert info["compiles"] == 6 and info["entries"] <= 3 and info["evictions"] >= 3
    assert info["bytes"] <= 3 * eager._KERNEL_BYTES
    x = torch.ones(1, 64, dtype=torch.float16).to("spyre")  # evicted: compiled again, same result
    assert torch.equal((x * 3).cpu(), torch.full((1, 64), 3.0, dtype=torch.float16))
    assert eager.cache_info()["compiles"] == 7


def test_empty_cache_releases_compiled_kernels_and_recordings() -> None:
    x = torch.ones(5, 64, dtype=torch.float16).to("spyre")
    for _ in range(2):  # a first run records, the second replays
        (x + 1).cpu()
    stats = torch.spyre.memory.memory_stats()
    assert stats["host_cache_bytes"] > 0 and eager.cache_bytes() > 0 and replay.held_bytes() > 0
    torch.spyre.memory.empty_cache()
    assert torch.spyre.memory.memory_stats()["host_cache_bytes"] == 0
    assert eager.cache_info()["entries"] == 0 and len(replay._RECORDINGS) == 0
    assert torch.equal((x + 1).cpu(), torch.full((5, 64), 2.0, dtype=torch.float16))


def test_a_recording_keeps_no_memory_of_its_first_run() -> None:
    x = torch.ones(7, 64, dtype=torch.float16).to("spyre")
    (x * 5).cpu()
    assert len(replay._RECORDINGS)
    for program in replay._RECORDINGS.keys():
        recording = replay._RECORDINGS.get(program)
        for step in recording.steps:
            assert all(step.operands[i] is None for i, _ in step.memory_slots)
    assert not any(isinstance(v, np.ndarray) and v.size > 64 * 7
                   for program in replay._RECORDINGS.keys()
                   for step in replay._RECORDINGS.get(program).steps
                   for v in step.operands)  # fmt: skip


def test_a_compiled_module_dies_with_the_caches_holding_it() -> None:
    # The sealed-text cache (a WeakKeyDictionary keyed by the module) held the module's
    # plan op as its value, so no compiled module was ever freed: ~60 KiB per compile
    import gc
    import weakref

    from spyre_ir.lowering import units_to_recipe

    before = {id(m) for m in units_to_recipe._SEALED.keys()}
    for n in (3, 5, 9):  # three new signatures: three compiles
        x = torch.ones(n, 32, dtype=torch.float16).to("spyre")
        assert torch.equal((x * 7).cpu(), torch.full((n, 32), 7.0, dtype=torch.float16))
    new = [weakref.ref(m) for m in units_to_recipe._SEALED.keys() if id(m) not in before]
    assert len(new) >= 3
    torch.spyre.memory.empty_cache()
    gc.collect()
    assert [r for r in new if r() is not None] == []


RSS_SCRIPT = textwrap.dedent("""
    import gc, os, warnings
    warnings.simplefilter("ignore")
    import torch, spyre_ir
    from spyre_ir.runtime import eager

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    marks = {}
    for n in range(1, 201):  # 200 distinct shapes: 200 compiles
        x = torch.empty(n, 128, dtype=torch.float16, device="spyre").fill_(1.0)
        assert torch.equal((x * 3).cpu(), torch.full((n, 128), 3.0, dtype=torch.float16))
        if n in (50, 200):
            gc.collect()
            marks[n] = rss()
    info = eager.cache_info()
    print(marks[50], marks[200], info["compiles"], info["evictions"])
""")


@pytest.mark.slow
def test_rss_growth_over_200_distinct_compiles_stays_within_the_cache_setting() -> None:
    limit_mb = 4
    env = {**os.environ, "SPYRE_HOST_CACHE_MB": str(limit_mb)}
    out = subprocess.run([sys.executable, "-c", RSS_SCRIPT], capture_output=True, text=True,
                         env=env, timeout=900, check=True)  # fmt: skip
    at_50, at_200, compiles, evictions = (int(v) for v in out.stdout.split())
    assert compiles == 200 and evictions > 0
    # Both caches (eager kernels, replay recordings) are bounded by the setting; past the
    # warm-up (imports, first code paths: the first 50 shapes) growth stays within them.
    growth_mb = (at_200 - at_50) / 2**20
    assert growth_mb <= 2 * limit_mb, f"RSS grew {growth_mb:.1f} MiB over 150 compiles"


PEAK_SCRIPT = textwrap.dedent("""
    import gc, sys, warnings
    warnings.simplefilter("ignore")
    import torch
    from spyre_ir.runtime import device

    device.setup()

    def status(key):
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

    rows, cols, op, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    fn = {"transpose": lambda t: t.t().contiguous(), "mul": lambda t: t * 2}[op]
    f = torch.compile(fn, backend="spyre") if how == "compiled" else fn
    f(torch.ones(64, 128, dtype=torch.float16, device="spyre")).cpu()  # warm-up: code paths
    gc.collect()
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # resets the peak (VmHWM) to the current RSS
    base = status("VmRSS:")
    x = torch.empty(rows, cols, dtype=torch.float16, device="spyre").fill_(1.0)
    y = f(x)  # a new shape: traced, compiled, prepared, simulated
    torch.spyre.synchronize()
    assert float(y.flatten()[5].item()) in (1.0, 2.0)
    print(status("VmHWM:") - base)
""")

PEAK_GAP = (
    "known gap (issue 19, Deliver 7): an eager fp16 `x * 2` on 2048x8192 peaks near 217 MiB "
    "above its 64 MiB of tensors (~3.4x; was 530): the simulator holds LX as float32 and "
    "this kernel's three LX buffers span the whole tensor (96 MiB), beside x, the launch's "
    "input codes and its output, read back into the device tensor through a whole-tensor "
    "copy; a compiled transpose near 285 MiB (was 565)"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("op", "how"),
    [("transpose", "eager"),
     pytest.param("transpose", "compiled", marks=pytest.mark.xfail(strict=True, reason=PEAK_GAP)),
     pytest.param("mul", "eager", marks=pytest.mark.xfail(strict=True, reason=PEAK_GAP))],
)  # fmt: skip
def test_compiling_and_simulating_a_graph_peaks_near_its_tensors_bytes(op: str, how: str) -> None:
    """Issue 19: a 4096x49280 fp16 transpose peaked near 10 GB (12x its tensors' bytes).
    The host's peak over a new shape's compile and run, from before its input exists,
    must stay within 2x the bytes of its input and output (an eager transpose: 1.0x)."""
    rows, cols = 2048, 8192
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(rows), str(cols), op, how],
                         capture_output=True, text=True, timeout=900, check=True)  # fmt: skip
    tensors = 2 * rows * cols * 2  # input and output, fp16
    peak = int(out.stdout.split()[-1])
    assert peak <= 2 * tensors, (
        f"{op} {how}: peak {peak / 2**20:.0f} MiB, tensors {tensors / 2**20:.0f} MiB"
    )


def test_a_module_is_charged_once_over_its_programs_recordings() -> None:
    """Each recording is charged its own program's ops, so a graph of many kernels
    counts its module once: charged per recording, a decode graph's ~80 recordings
    overflowed the bound and evicted one another on every step."""
    torch._dynamo.reset()
    replay.clear()
    x = torch.randn(64, 128, dtype=torch.float16)
    f = torch.compile(lambda t: torch.softmax(t, -1) @ t.T + t.sum(), backend="spyre",
                      dynamic=False)  # fmt: skip
    f(x)
    modules: dict[int, tuple[object, list]] = {}
    for program in replay._RECORDINGS.keys():
        top = program
        while (parent := top.parent_op()) is not None:
            top = parent
        modules.setdefault(id(top), (top, []))[1].append(program)
    top, programs = max(modules.values(), key=lambda m: len(m[1]))
    assert len(programs) >= 2
    charged = sum(replay._RECORDINGS._entries[p][1] for p in programs)
    steps = sum(len(r.steps) + len(r.buffers)
                for r in (replay._RECORDINGS.get(p) for p in programs))  # fmt: skip
    module_ops = sum(1 for _ in top.walk())
    assert charged - replay._STEP_BYTES * steps <= replay._OP_BYTES * module_ops
    torch._dynamo.reset()
