"""Candidate mechanisms for the card's batched matmuls (issue 15), fitted and held out.

The card runs the bmm rows of matmul_splits.csv (IBM's attention shapes, real-card/) 2-6x
slower than the simulator when K is not split, with no order among the splits that the
calibrated model reproduces (docs/simulator.md, "The batched matmuls"). This script tests
candidate mechanisms, each as one parameter c >= 0 on top of the simulated time, fitted
by least squares on log(time / measured) to one set of bmm rows and scored on the others
(three hold-outs: shape A -> shape B, B -> A, even -> odd rows), with its effect on the
plain matmul rows of the same file beside it (a mechanism of the hardware acts on them
too: a plain matmul is a bmm of one batch).

Per core, with b_core x m_core x n_core x k_core its share of the batch and dims:

- restart: c x b_core (a fixed cost per batch: the core's program restarted per batch)
- PT passes: c x b_core x ceil(m_core / 8) x n-sticks (PE array fill per pass of 8 rows)
- B reload, A reload: c x the operand's elements per core (reloaded once per batch)
- K per core: c x b_core x k_core; MACs: c x b_core x m_core x n_core x k_core
- requests (runs): max(simulated, c x runs), runs = the contiguous pieces of device
  memory the core's slices of A, B and C cover in torch-spyre's default layout (a 3-D
  `[b, m, k]` lives as `[m, k/64, b, 64]`: the batch just outside the stick, so a slice
  of b_core batches is runs of b_core sticks), as `spyre_ir.sim.lpddr.box_runs` counts
  them: a core with R requests in flight, each within one run, takes at least
  runs x latency / R. The slices are the card's per-core shares, not our tiles (ours
  take as many of a core's batches per move as LX allows, MatmulTiling.batch_tile:
  `--in-sim` simulates our own moves with the limit on).

    python bench/bmm_mechanisms.py [--in-sim R ...]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity  # noqa: E402

from spyre_ir.hardware import DEFAULT_CONFIG  # noqa: E402
from spyre_ir.layout import default_layout  # noqa: E402
from spyre_ir.sim.lpddr import box_runs  # noqa: E402


def dims(label: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """((b, m, n, k), (split_b, split_m, split_n, split_k)) of a matmul_splits.csv row."""
    _, shape, split = label.split()
    return tuple(map(int, shape.split("x"))), tuple(map(int, split.split("x")))


def slice_runs(label: str) -> int:
    """Contiguous runs of device memory one core's slices of A, B and C cover."""
    (b, m, n, k), (sb, sm, sn, sk) = dims(label)
    bc, mc, nc, kc = b // sb, m // sm, n // sn, k // sk
    if b > 1:
        parts = [((b, m, k), (bc, mc, kc)), ((b, k, n), (bc, kc, nc)), ((b, m, n), (bc, mc, nc))]
    else:
        parts = [((m, k), (mc, kc)), ((k, n), (kc, nc)), ((m, n), (mc, nc))]
    return sum(box_runs(box, default_layout(shape, "f16")) for shape, box in parts)


def per_core(label: str) -> dict[str, float]:
    (b, m, n, k), (sb, sm, sn, sk) = dims(label)
    bc, mc, nc, kc = b // sb, m // sm, n // sn, k // sk
    return {"bc": bc, "mc": mc, "nc": nc, "kc": kc}


def additive(term: Callable[[dict], float]) -> Callable[[dict, float], float]:
    return lambda r, c: r["calibrated"] + c * term(per_core(r["row"]))


MECHANISMS: dict[str, Callable[[dict, float], float]] = {
    "restart per batch": additive(lambda f: f["bc"]),
    "PT passes per batch": additive(
        lambda f: f["bc"] * math.ceil(f["mc"] / 8) * math.ceil(f["nc"] / 64)
    ),
    "B reload per batch": additive(lambda f: f["bc"] * f["kc"] * f["nc"]),
    "A reload per batch": additive(lambda f: f["bc"] * f["mc"] * f["kc"]),
    "K per core": additive(lambda f: f["bc"] * f["kc"]),
    "MACs per core": additive(lambda f: f["bc"] * f["mc"] * f["nc"] * f["kc"]),
    "requests (runs)": lambda r, c: max(r["calibrated"], c * r["runs"]),
}


def errors(rows: list[dict], model: Callable[[dict, float], float], c: float) -> np.ndarray:
    return np.array([abs(model(r, c) / r["measured_us"] - 1) for r in rows])


def fit(rows: list[dict], model: Callable[[dict, float], float]) -> float:
    """The c >= 0 of least squared log error over `rows` (a grid over 13 decades)."""
    grid = np.concatenate([[0.0], np.geomspace(1e-9, 1e4, 4000)])
    loss = [sum(math.log(model(r, c) / r["measured_us"]) ** 2 for r in rows) for c in grid]
    return float(grid[int(np.argmin(loss))])


def figures(e: np.ndarray) -> str:
    return f"{100 * np.median(e):5.1f} / {100 * np.percentile(e, 90):5.1f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-sim", type=float, nargs="*", default=[], metavar="R",
                        help="also simulate every row with R requests in flight per core")  # fmt: skip
    args = parser.parse_args(argv)
    cases = [c for c in fidelity.cases() if c.file == "matmul_splits.csv"]
    rows = [r for r in fidelity.fidelity(cases) if not r["cliff"]]
    for r in rows:
        r["runs"] = slice_runs(r["row"])
    bmm = [r for r in rows if r["row"].startswith("bmm")]
    plain = [r for r in rows if not r["row"].startswith("bmm")]
    first = [r for r in bmm if r["shape"] == "bmm 32x512x128x512"]
    second = [r for r in bmm if r["shape"] == "bmm 64x32x576x128"]
    splits = {"A -> B": (first, second), "B -> A": (second, first),
              "even -> odd": (bmm[::2], bmm[1::2])}  # fmt: skip
    none = MECHANISMS["restart per batch"]
    print(f"simulated now (median / p90 |error|): bmm {figures(errors(bmm, none, 0))}, "
          f"plain matmuls {figures(errors(plain, none, 0))}")  # fmt: skip
    print("held out: before -> after the fit, median / p90 |error|; plain: the plain rows after")
    print(f"{'mechanism':22} {'fit -> held out':13} {'c':>10} {'train':>15} "
          f"{'held out before':>17} {'held out after':>16} {'plain after':>15}")  # fmt: skip
    for name, model in MECHANISMS.items():
        for split, (train, test) in splits.items():
            c = fit(train, model)
            print(f"{name:22} {split:13} {c:10.3g} {figures(errors(train, model, c)):>15} "
                  f"{figures(errors(test, none, 0)):>17} {figures(errors(test, model, c)):>16} "
                  f"{figures(errors(plain, model, c)):>15}")  # fmt: skip
    latency_us = DEFAULT_CONFIG.lpddr_latency_s * 1e6
    fitted = [fit(train, MECHANISMS["requests (runs)"]) for train, _ in splits.values()]
    print(f"\nrequests: us per run {', '.join(f'{t:.3f}' for t in fitted)} -> requests in "
          f"flight per core (latency {latency_us:.2f} us / that) "
          f"{', '.join(f'{latency_us / t:.1f}' for t in fitted)}")  # fmt: skip
    for shape, subset in (("A", first), ("B", second)):
        measured = [r["measured_us"] for r in subset]
        rho = [fidelity.spearman(measured, [MECHANISMS["requests (runs)"](r, t) for r in subset])
               for t in fitted]  # fmt: skip
        before = fidelity.spearman(measured, [r["calibrated"] for r in subset])
        print(f"Spearman within shape {shape}: {before:.3f} -> "
              f"{', '.join(f'{x:.3f}' for x in rho)} (requests, the three fits)")  # fmt: skip
    for requests in args.in_sim:
        card = DEFAULT_CONFIG.with_options(lpddr_core_requests_in_flight=requests)
        timed = [{**r, "calibrated": fidelity.simulate_case(c, card)}
                 for c in cases for r in rows if r["row"] == c.label]  # fmt: skip
        sb = [r for r in timed if r["row"].startswith("bmm")]
        sp = [r for r in timed if not r["row"].startswith("bmm")]
        print(f"in the simulator (our tiles), {requests:g} requests in flight: bmm "
              f"{figures(errors(sb, none, 0))}, plain matmuls {figures(errors(sp, none, 0))}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
