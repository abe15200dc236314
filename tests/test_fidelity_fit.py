"""The CALIBRATED LPDDR5 efficiencies reproduce the rows they were fitted to
(hardware.py names them; bench/fidelity.py's FITTED lists them): the fit is of the
simulated times, pipelines' start and end included, not of bytes over time."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from bench_module import load_bench  # noqa: E402

from spyre_ir.hardware import DEFAULT_CONFIG  # noqa: E402

fidelity = load_bench("fidelity")


def fitted(label: str) -> fidelity.Case:
    assert label in fidelity.FITTED
    (case,) = [c for c in fidelity.cases() if c.label == label]
    return case


def test_read_efficiency_fits_its_two_rows() -> None:
    # Least squares on log(simulated / measured) over the two rows: their errors have
    # opposite signs and are each within 3 %.
    rows = ["matmul 1x64x4096x12800 1x4x8x1", "mean_rows 2048x8192 32 cores"]
    errors = [math.log(fidelity.simulate_case(fitted(r), DEFAULT_CONFIG) / fitted(r).measured_us)
              for r in rows]  # fmt: skip
    assert errors[0] < 0 < errors[1]
    assert max(abs(e) for e in errors) < 0.03


def test_write_efficiency_fits_the_32_mib_copy() -> None:
    # 32 MiB read at 145.68 B/cycle and written at 67.32 B/cycle: 662.5 us by hand; the
    # card 662.6 us (copy_sizes.csv), the simulated kernel within 0.5 % of it.
    case = fitted("y = x*2 32 MiB")
    by_hand = (2**25 / (166.4e9 / 1.1e9 * 0.963) + 2**25 / (166.4e9 / 1.1e9 * 0.445)) / 1.1e3
    assert by_hand == pytest.approx(case.measured_us, rel=1e-3)
    assert fidelity.simulate_case(case, DEFAULT_CONFIG) == pytest.approx(case.measured_us, rel=5e-3)


def _shared_real_card() -> Path | None:
    for parent in Path(__file__).resolve().parents[1:4]:
        candidate = parent / "shared" / "real-card"
        if candidate.is_dir():
            return candidate
    return None


def test_the_copied_measurements_equal_the_shared_ones() -> None:
    shared = _shared_real_card()
    if shared is None:
        pytest.skip("no ../shared/real-card beside this checkout to compare the copy with")
    names = sorted(p.name for p in shared.iterdir() if p.suffix in {".csv", ".md"})
    for name in names:
        assert (fidelity.REAL_CARD / name).read_bytes() == (shared / name).read_bytes(), name


def test_a_card_file_times_the_calibrated_column(tmp_path: Path, capsys) -> None:
    # --card: an unreadable or malformed card is a located error and exit 1, before any
    # row is compiled; a card's rows are timed on it (plans and timing together).
    assert fidelity.main(["--card", str(tmp_path / "none.json")]) == 1
    assert "none.json: cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"lx_bytes": "large"}')
    assert fidelity.main(["--card", str(bad)]) == 1
    assert "lx_bytes" in capsys.readouterr().err
    (case,) = [c for c in fidelity.cases() if c.label == "add 4096x4096 1 cores"]
    limited = DEFAULT_CONFIG.with_options(lpddr_core_requests_in_flight=2.2)
    (row,) = fidelity.fidelity([case], limited)
    # The box tiles keep the add at the card's bytes in flight (1,498.9 us measured).
    assert row["calibrated"] == pytest.approx(1498.9, rel=0.02)
    assert row["calibrated"] == pytest.approx(fidelity.simulate_case(case, limited))
