"""Attention fused (spyre-fuse-attention: one flash-attention kernel) against unfused
(the decomposition's kernels: q k^T, mask + softmax, p v), in one run on the simulated card.

Cases:
* `ibm`: one head, 512 queries against 4,096 keys, head dim 128, f16: the attention row
  of ../shared/real-card/ibm_kernels.csv, `attention,"q [1,512,128], k,v [1,4096,128]",
  f16,269,63,device` (torch-spyre 269 us, sendnn 63 us; source: AdnanHoque/torch-spyre
  (history) docs/pr-mlp-prefill-explained/.../kernel_report.txt, June 2026). Target: fused
  no slower than sendnn's 63 us.
* `decode-512`, `decode-2048`: a Llama-3.1-8B layer's decode attention, one query row,
  32 query heads on 8 KV heads (repeat_kv), head dim 128, against 512 and 2,048 keys;
  `decode-b4-512` the same for a batch of 4 against 512 keys. Target (issue 16, decode
  b1 and b4 against a 512-token cache): fused no slower than unfused, and its LPDDR5
  traffic at most 1.05x the minimal bytes (Q, K, V and the output once each).

Traffic is what LPDDR5 serves, the simulator's `lpddr_bytes`: a box several cores
load at once is read once (the card multicasts it; each core still takes its copy in
through its own read channel, which the time accounts for). `delivered_bytes` counts every
core's copy, so a plan putting two cores on one key/value head doubles it without
reading a byte more; the table gives both (`card/min`, `copies/min`).

Graphs come from torch's scaled_dot_product_attention through the frontend's
decompositions (tests/capture.py's path), so "unfused" is what the compiler ran before.
Outputs are checked against torch eager (f16 tolerance 2e-2); a mismatch exits 1.

    python bench/attention.py [--json out.json] [--case NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import capture  # noqa: E402

from spyre_ir.pipelines import lower_to_units  # noqa: E402
from spyre_ir.sim.engine import simulate  # noqa: E402

IBM_SENDNN_US = 63.0
DECODE_TRAFFIC = 1.05  # fused decode's LPDDR5 bytes over the minimal bytes, at most
CASES = {  # name: (batch, query heads, kv heads, queries, keys, head dim)
    "ibm": (1, 1, 1, 512, 4096, 128),
    "decode-512": (1, 32, 8, 1, 512, 128),
    "decode-b4-512": (4, 32, 8, 1, 512, 128),
    "decode-2048": (1, 32, 8, 1, 2048, 128),
}
TARGETED_DECODE = ("decode-512", "decode-b4-512")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    b, kvh, t, d = k.shape
    g = q.shape[1] // kvh
    k = k[:, :, None].expand(b, kvh, g, t, d).reshape(b, kvh * g, t, d)
    v = v[:, :, None].expand(b, kvh, g, t, d).reshape(b, kvh * g, t, d)
    return F.scaled_dot_product_attention(q, k, v)


def run(name: str, shape: tuple[int, ...] | None = None) -> dict:
    """The case's row of the table; `shape` (batch, query heads, kv heads, queries,
    keys, head dim) runs it at another size (tests), without its target."""
    b, h, kvh, s, t, d = shape or CASES[name]
    gen = torch.Generator().manual_seed(0)
    args = [torch.randn(b, n, length, d, generator=gen).half()
            for n, length in ((h, s), (kvh, t), (kvh, t))]  # fmt: skip
    with torch.no_grad():
        want = attention(*(a.float() for a in args)).numpy()
    # Inputs and output once each (head dims are whole 128-byte sticks here).
    minimal = sum(a.numel() * a.element_size() for a in args) + want.size * 2
    row = {"case": name, "shape": f"q [{b},{h},{s},{d}], k,v [{b},{kvh},{t},{d}]",
           "minimal_bytes": minimal}  # fmt: skip
    for label, fuse in (("fused", True), ("unfused", False)):
        ((module, arrays),) = capture.capture(attention, args)
        lower_to_units(module, fuse_attention=fuse)
        result = simulate(module, arrays)
        error = float(np.abs(result.outputs[0].astype(np.float64) - want).max())
        if error > 2e-2 * max(1.0, float(np.abs(want).max())):
            raise SystemExit(f"{name} {label}: max error {error} against eager")
        kernels = sum(op.name == "core.program" for op in module.walk())
        row[label] = {"us": result.report["simulated_us"], "kernels": kernels,
                      "lpddr_bytes": result.report["lpddr_bytes"],
                      "delivered_bytes": result.report["delivered_bytes"],
                      "max_error": error}  # fmt: skip
    row["speedup"] = row["unfused"]["us"] / row["fused"]["us"]
    row["traffic_vs_minimal"] = row["fused"]["lpddr_bytes"] / minimal
    row["copies_vs_minimal"] = row["fused"]["delivered_bytes"] / minimal
    if shape is not None and tuple(shape) != CASES[name]:
        return row  # the targets are the case's own size's
    if name == "ibm":
        row["fused_vs_sendnn"] = row["fused"]["us"] / IBM_SENDNN_US
        row["target_met"] = row["fused"]["us"] <= IBM_SENDNN_US
    if name in TARGETED_DECODE:
        row["target_met"] = (row["fused"]["us"] <= row["unfused"]["us"]
                             and row["traffic_vs_minimal"] <= DECODE_TRAFFIC)  # fmt: skip
    return row


def target(row: dict) -> str:
    """The case's target and whether this run meets it."""
    if "target_met" not in row:
        return ""
    goal = ("<= IBM sendnn 63 us" if row["case"] == "ibm"
            else f"<= unfused, traffic <= {DECODE_TRAFFIC}x minimal")  # fmt: skip
    return f"{goal}: {'met' if row['target_met'] else 'MISSED'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="write the table as JSON here")
    parser.add_argument("--case", choices=list(CASES), action="append")
    options = parser.parse_args()
    rows = [run(name) for name in options.case or CASES]
    print(f"{'case':<14} {'fused us':>9} {'kernels':>7} {'unfused us':>10} {'kernels':>7} "
          f"{'speedup':>7} {'card/min':>9} {'copies/min':>10} {'vs sendnn':>9}  target")  # fmt: skip
    for r in rows:
        ibm = f"{r['fused_vs_sendnn']:.2f}x" if "fused_vs_sendnn" in r else ""
        print(f"{r['case']:<14} {r['fused']['us']:>9.1f} {r['fused']['kernels']:>7} "
              f"{r['unfused']['us']:>10.1f} {r['unfused']['kernels']:>7} "
              f"{r['speedup']:>6.2f}x {r['traffic_vs_minimal']:>8.3f}x "
              f"{r['copies_vs_minimal']:>9.3f}x {ibm:>9}  {target(r)}")  # fmt: skip
    print(
        "card/min: fused LPDDR5 bytes served (lpddr_bytes, a multicast box once) over "
        "the minimal bytes; copies/min: delivered_bytes (every core's copy) over them"
    )
    if options.json:
        with open(options.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
