"""bench/attention.py (part of `make bench`) at reduced sizes: both sides compile and
simulate, their outputs match torch eager (the bench exits otherwise), and fused
attention is one kernel. The ibm case keeps more than 2,340 keys, so its unfused K side is the
group whose stick-wide tile overflowed LX (tests/test_split_group.py)."""

from __future__ import annotations

import bench_module  # tests/, on sys.path under pytest
import pytest


def load_bench():
    return bench_module.load_bench("attention")


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("ibm", (1, 1, 1, 16, 2560, 128)),  # 16 queries, 2,560 keys: K tiles still overflow
        ("decode-512", (1, 4, 2, 1, 256, 128)),  # GQA decode, 2 query heads per KV head
    ],
)
def test_attention_bench_runs_reduced(name: str, shape: tuple[int, ...]) -> None:
    row = load_bench().run(name, shape)
    assert row["fused"]["kernels"] == 1 < row["unfused"]["kernels"]
    for side in ("fused", "unfused"):
        assert row[side]["max_error"] < 2e-2 and row[side]["us"] > 0
    assert row["fused"]["us"] < row["unfused"]["us"]
    assert "target_met" not in row  # targets are for the full-size cases
