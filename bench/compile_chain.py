"""Compile time against graph size: a chain of N elementwise adds (64x128 f16) through
`spyre-compile` (parse, verify, every pass, print), for N = 1000, 2000 and 4000.

It prints the wall time of each and the time per op relative to N = 1000: a ratio near
1 is linear, 4 at N = 4000 would be quadratic. Issue 18's target: 4,000 ops in under
10 s. Run it on a quiet machine (the figures are wall time).

    python bench/compile_chain.py [--sizes 1000,2000,4000] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time

from spyre_ir.tools import spyre_opt

TARGET_SECONDS = {4000: 10.0}


def chain(n: int) -> str:
    t = "tensor<64x128xf16>"
    lines = [f"func.func @main(%a: {t}, %b: {t}) -> {t} {{"]
    prev = "%a"
    for i in range(n):
        lines.append(f"  %v{i} = spyre.add {prev}, %b : {t}, {t} -> {t}")
        prev = f"%v{i}"
    lines += [f"  func.return {prev} : {t}", "}"]
    return "\n".join(lines) + "\n"


def compile_seconds(n: int, tmp: str) -> float:
    source = os.path.join(tmp, f"chain{n}.mlir")
    with open(source, "w") as f:
        f.write(chain(n))
    out = os.path.join(tmp, f"chain{n}.out.mlir")
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            spyre_opt.main([source, "-p", "spyre-compile", "-o", out])
        except SystemExit as done:
            if done.code:
                raise RuntimeError(f"spyre-compile failed on {n} ops: {err.getvalue()}") from None
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,2000,4000")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        compile_seconds(10, tmp)  # imports and first-use costs out of the figures
        for n in sizes:
            rows.append({"ops": n, "seconds": compile_seconds(n, tmp)})
    base = rows[0]["seconds"] / rows[0]["ops"]
    print(f"{'ops':>6}  {'seconds':>8}  {'per op vs first':>15}  target")
    missed = False
    for row in rows:
        row["per_op_ratio"] = row["seconds"] / row["ops"] / base
        target = TARGET_SECONDS.get(row["ops"])
        verdict = ""
        if target is not None:
            verdict = f"< {target:g} s: {'met' if row['seconds'] < target else 'MISSED'}"
            missed |= row["seconds"] >= target
        print(f"{row['ops']:>6}  {row['seconds']:>8.2f}  {row['per_op_ratio']:>15.2f}  {verdict}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
