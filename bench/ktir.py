"""KTIR kernels on the simulated card (`make bench`): spyre-run on KTIR kernels of the
public examples' kinds and sizes (torch-spyre/ktir-cpu examples/triton-ktir: softmax
4096x1024, layernorm 1151x8192, matmul 64x2048x8192 over 32 tiles), written by us.

For each kind, three rows measured in this one run:

* `ktir`: the kernel in the public example's work division (one row per softmax and
  layernorm step, 32x512 matmul tiles on a 2x16 grid): spyre-run's wall time, first
  run included (a fresh process), and its CPU time (user + system: the wall time on an
  idle machine, less the waits), split into parse, lowering and simulation as
  spyre-run reports them; the simulated time and its bottleneck;
* `ktir-l1-division`: the same computation in KTIR with the work division our L1
  compiler picks for it (the tile rows its L2 kernel loads);
* `l1`: the same computation written in our L1 IR, compiled by spyre-run.

Targets (issue 17): spyre-run < 2 s wall on each `ktir` row; `ktir-l1-division`
within 10 % of `l1` in simulated time.

    python bench/ktir.py [--json out.json] [--only softmax|layernorm|matmul]

`--public DIR` instead runs every `*.mlir` file of DIR (the public example kernels,
fetched by the user: their code is not ours to ship) through `spyre-opt` (parse and
print), `spyre-opt -p ktir-to-units` (lower) and `spyre-run FILE --check` (simulate and
compare with the reference interpreter), and prints per file each step's status, the
check's largest error and the simulated time; a step that fails shows the first line
of its error (`no-out`: the kernel ran but stores nothing, so nothing was compared;
not counted as a match). Scalar arguments come from a sidecar `NAME.scalars` file next to the
kernel (`K=2048,BM=32`), as spyre-run's `--scalars` takes them, and the launch grid
of a kernel written without a `grid` attribute from `NAME.grid` (`32`, as `--grid`),
what its absolute addresses count from `NAME.unit` (`byte`, as `--address-unit`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent

HBM = "memory_space = #ktdp.spyre_memory_space<HBM>"


def view(name: str, ptr: str, shape: tuple[int, ...]) -> str:
    dims = ", ".join(f"d{i}" for i in range(len(shape)))
    bounds = ", ".join(f"d{i} >= 0, -d{i} + {n - 1} >= 0" for i, n in enumerate(shape))
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    t = "x".join(map(str, shape))
    return (
        f"    %{name} = ktdp.construct_memory_view %{ptr}, sizes: {list(shape)}, strides: "
        f"{strides} {{\n      coordinate_set = affine_set<({dims}) : ({bounds})>, {HBM}\n"
        f"    }} : memref<{t}xf16>\n"
    )


def tile(name: str, view_name: str, view_shape, at: list[str], shape) -> str:
    dims = ", ".join(f"d{i}" for i in range(len(shape)))
    bounds = ", ".join(f"d{i} >= 0, -d{i} + {n - 1} >= 0" for i, n in enumerate(shape))
    vt = "x".join(map(str, view_shape))
    tt = "x".join(map(str, shape))
    return (
        f"      %{name} = ktdp.construct_access_tile %{view_name}[{', '.join(at)}] {{\n"
        f"        access_tile_set = affine_set<({dims}) : ({bounds})>,\n"
        f"        access_tile_order = affine_map<({dims}) -> ({dims})>\n"
        f"      }} : memref<{vt}xf16> -> !ktdp.access_tile<{tt}xindex>\n"
    )


def softmax_ktir(rows: int, cols: int, tiles: int, block: int) -> str:
    per = rows // tiles
    t = f"tensor<{block}x{cols}xf16>"
    r = f"tensor<{block}xf16>"
    return f"""module {{
  func.func @softmax(%out_ptr: index, %in_ptr: index) attributes {{grid = [{tiles}]}} {{
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %step = arith.constant {block} : index
    %per = arith.constant {per} : index
    %start = arith.muli %tile, %per : index
    %end = arith.addi %start, %per : index
{view("in", "in_ptr", (rows, cols))}{view("out", "out_ptr", (rows, cols))}    scf.for %row = %start to %end step %step {{
{tile("ia", "in", (rows, cols), ["%row", "%c0"], (block, cols))}      %x = ktdp.load %ia : !ktdp.access_tile<{block}x{cols}xindex> -> {t}
      %ninf = arith.constant 0xFC00 : f16
      %mi = tensor.splat %ninf : {r}
      %m = linalg.reduce {{ arith.maxnumf }} ins(%x : {t}) outs(%mi : {r}) dimensions = [1]
      %mb = linalg.broadcast ins(%m : {r}) outs(%x : {t}) dimensions = [1]
      %d = arith.subf %x, %mb : {t}
      %e = math.exp %d : {t}
      %zero = arith.constant 0.0 : f16
      %si = tensor.splat %zero : {r}
      %s = linalg.reduce {{ arith.addf }} ins(%e : {t}) outs(%si : {r}) dimensions = [1]
      %sb = linalg.broadcast ins(%s : {r}) outs(%x : {t}) dimensions = [1]
      %y = arith.divf %e, %sb : {t}
{tile("oa", "out", (rows, cols), ["%row", "%c0"], (block, cols))}      ktdp.store %y, %oa : {t}, !ktdp.access_tile<{block}x{cols}xindex>
    }}
    return
  }}
}}
"""


def softmax_l1(rows: int, cols: int) -> str:
    t, r = f"tensor<{rows}x{cols}xf16>", f"tensor<{rows}x1xf16>"
    return f"""func.func @main(%x: {t}) -> {t} {{
  %m = spyre.reduce_max %x dims = [1] keepdim : {t} -> {r}
  %d = spyre.sub %x, %m : {t}, {r} -> {t}
  %e = spyre.exp %d : {t} -> {t}
  %s = spyre.sum %e dims = [1] keepdim : {t} -> {r}
  %y = spyre.div %e, %s : {t}, {r} -> {t}
  func.return %y : {t}
}}
"""


def layernorm_ktir_blocks(rows: int, cols: int, tiles: int, block: int) -> str:
    """The public example's structure: one row at a time, three passes over 1-row
    blocks of `block` columns (sum, variance, normalise)."""
    per = -(-rows // tiles)
    b = f"tensor<1x{block}xf16>"

    def x_tile(name: str) -> str:
        return tile(name, "xv", (rows, cols), ["%row", "%col"], (1, block))

    return f"""module {{
  func.func @layer_norm(%X: index, %Y: index, %W: index, %B: index, %eps: f16) attributes {{grid = [{tiles}]}} {{
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %per = arith.constant {per} : index
    %nrows = arith.constant {rows} : index
    %ncols = arith.constant {cols} : index
    %bc = arith.constant {block} : index
    %one = arith.constant 1.0 : f16
    %start = arith.muli %tile, %per : index
    %end0 = arith.addi %start, %per : index
    %lt = arith.cmpi slt, %end0, %nrows : index
    %end = arith.select %lt, %end0, %nrows : index
{view("xv", "X", (rows, cols))}{view("yv", "Y", (rows, cols))}{view("wv", "W", (cols,))}{view("bv", "B", (cols,))}    %zb = arith.constant dense<0.0> : {b}
    %ni = arith.index_cast %ncols : index to i32
    %nf = arith.sitofp %ni : i32 to f16
    %nt = tensor.splat %nf : tensor<1xf16>
    %zero = arith.constant 0.0 : f16
    %init = tensor.splat %zero : tensor<1xf16>
    scf.for %row = %start to %end step %c1 {{
      %sb = scf.for %col = %c0 to %ncols step %bc iter_args(%acc = %zb) -> ({b}) {{
{x_tile("t")}        %a = ktdp.load %t : !ktdp.access_tile<1x{block}xindex> -> {b}
        %n = arith.addf %acc, %a : {b}
        scf.yield %n : {b}
      }}
      %sum = linalg.reduce {{ arith.addf }} ins(%sb : {b}) outs(%init : tensor<1xf16>) dimensions = [1]
      %mean = arith.divf %sum, %nt : tensor<1xf16>
      %ms = tensor.extract %mean[%c0] : tensor<1xf16>
      %mb = tensor.splat %ms : {b}
      %vb = scf.for %col = %c0 to %ncols step %bc iter_args(%acc = %zb) -> ({b}) {{
{x_tile("t")}        %a = ktdp.load %t : !ktdp.access_tile<1x{block}xindex> -> {b}
        %d = arith.subf %a, %mb : {b}
        %d2 = arith.mulf %d, %d : {b}
        %n = arith.addf %acc, %d2 : {b}
        scf.yield %n : {b}
      }}
      %vs = linalg.reduce {{ arith.addf }} ins(%vb : {b}) outs(%init : tensor<1xf16>) dimensions = [1]
      %var = arith.divf %vs, %nt : tensor<1xf16>
      %et = tensor.splat %eps : tensor<1xf16>
      %ve = arith.addf %var, %et : tensor<1xf16>
      %sq = math.sqrt %ve : tensor<1xf16>
      %ot = tensor.splat %one : tensor<1xf16>
      %rstd = arith.divf %ot, %sq : tensor<1xf16>
      %rs = tensor.extract %rstd[%c0] : tensor<1xf16>
      %rb = tensor.splat %rs : {b}
      scf.for %col = %c0 to %ncols step %bc {{
{x_tile("t")}{tile("wt", "wv", (cols,), ["%col"], (block,))}{tile("bt", "bv", (cols,), ["%col"], (block,))}        %x = ktdp.load %t : !ktdp.access_tile<1x{block}xindex> -> {b}
        %w1 = ktdp.load %wt : !ktdp.access_tile<{block}xindex> -> tensor<{block}xf16>
        %b1 = ktdp.load %bt : !ktdp.access_tile<{block}xindex> -> tensor<{block}xf16>
        %w = tensor.expand_shape %w1 [[0, 1]] output_shape [1, {block}] : tensor<{block}xf16> into {b}
        %bb = tensor.expand_shape %b1 [[0, 1]] output_shape [1, {block}] : tensor<{block}xf16> into {b}
        %xm = arith.subf %x, %mb : {b}
        %xh = arith.mulf %xm, %rb : {b}
        %xw = arith.mulf %xh, %w : {b}
        %y = arith.addf %xw, %bb : {b}
{tile("yt", "yv", (rows, cols), ["%row", "%col"], (1, block))}        ktdp.store %y, %yt : {b}, !ktdp.access_tile<1x{block}xindex>
      }}
    }}
    return
  }}
}}
"""


def layernorm_ktir_rows(rows: int, cols: int, tiles: int, block: int) -> str:
    """Whole rows, `block` of them per step, each loaded once (L1's division)."""
    per = -(-rows // tiles)
    per = -(-per // block) * block
    t = f"tensor<{block}x{cols}xf16>"
    r = f"tensor<{block}xf16>"
    return f"""module {{
  func.func @layer_norm(%X: index, %Y: index, %W: index, %B: index, %eps: f16) attributes {{grid = [{tiles}]}} {{
    %tile = ktdp.get_compute_tile_id : index
    %c0 = arith.constant 0 : index
    %step = arith.constant {block} : index
    %per = arith.constant {per} : index
    %start = arith.muli %tile, %per : index
    %end = arith.addi %start, %per : index
    %inv_n = arith.constant {1.0 / cols:.10e} : f16
    %one = arith.constant 1.0 : f16
{view("xv", "X", (rows, cols))}{view("yv", "Y", (rows, cols))}{view("wv", "W", (cols,))}{view("bv", "B", (cols,))}    %zero = arith.constant 0.0 : f16
    %init = tensor.splat %zero : {r}
{tile("wt", "wv", (cols,), ["%c0"], (cols,)).replace("      ", "    ")}{tile("bt", "bv", (cols,), ["%c0"], (cols,)).replace("      ", "    ")}    %w1 = ktdp.load %wt : !ktdp.access_tile<{cols}xindex> -> tensor<{cols}xf16>
    %b1 = ktdp.load %bt : !ktdp.access_tile<{cols}xindex> -> tensor<{cols}xf16>
    %shape = tensor.empty() : {t}
    %w = linalg.broadcast ins(%w1 : tensor<{cols}xf16>) outs(%shape : {t}) dimensions = [0]
    %bb = linalg.broadcast ins(%b1 : tensor<{cols}xf16>) outs(%shape : {t}) dimensions = [0]
    scf.for %row = %start to %end step %step {{
{tile("t", "xv", (rows, cols), ["%row", "%c0"], (block, cols))}      %x = ktdp.load %t : !ktdp.access_tile<{block}x{cols}xindex> -> {t}
      %s = linalg.reduce {{ arith.addf }} ins(%x : {t}) outs(%init : {r}) dimensions = [1]
      %invt = tensor.splat %inv_n : {r}
      %mean = arith.mulf %s, %invt : {r}
      %mb = linalg.broadcast ins(%mean : {r}) outs(%x : {t}) dimensions = [1]
      %d = arith.subf %x, %mb : {t}
      %d2 = arith.mulf %d, %d : {t}
      %vs = linalg.reduce {{ arith.addf }} ins(%d2 : {t}) outs(%init : {r}) dimensions = [1]
      %var = arith.mulf %vs, %invt : {r}
      %et = tensor.splat %eps : {r}
      %ve = arith.addf %var, %et : {r}
      %rstd = math.rsqrt %ve : {r}
      %rb = linalg.broadcast ins(%rstd : {r}) outs(%x : {t}) dimensions = [1]
      %xh = arith.mulf %d, %rb : {t}
      %xw = arith.mulf %xh, %w : {t}
      %y = arith.addf %xw, %bb : {t}
{tile("yt", "yv", (rows, cols), ["%row", "%c0"], (block, cols))}      ktdp.store %y, %yt : {t}, !ktdp.access_tile<{block}x{cols}xindex>
    }}
    return
  }}
}}
"""


def layernorm_l1(rows: int, cols: int) -> str:
    t, v = f"tensor<{rows}x{cols}xf16>", f"tensor<{cols}xf16>"
    return f"""func.func @main(%x: {t}, %w: {v}, %b: {v}) -> {t} {{
  %y = spyre.layer_norm %x weight(%w : {v}) bias(%b : {v}) {{eps = 1.0e-05 : f64}} : {t} -> {t}
  func.return %y : {t}
}}
"""


def matmul_ktir(m: int, k: int, n: int, grid: tuple[int, int], bm: int, bn: int, bk: int) -> str:
    acc = f"tensor<{bm}x{bn}xf16>"
    ids = "%pid_m, %pid_n = ktdp.get_compute_tile_id : index, index"
    if grid[0] == 1:
        ids = "%pid_n = ktdp.get_compute_tile_id : index\n    %pid_m = arith.constant 0 : index"
    g = f"[{grid[0]}, {grid[1]}]" if grid[0] > 1 else f"[{grid[1]}]"
    return f"""module {{
  func.func @matmul(%a_ptr: index, %b_ptr: index, %c_ptr: index, %K: index, %BM: index,
                    %BN: index, %BK: index) attributes {{grid = {g}}} {{
    {ids}
    %c0 = arith.constant 0 : index
{view("av", "a_ptr", (m, k))}{view("bv", "b_ptr", (k, n))}{view("cv", "c_ptr", (m, n))}    %row = arith.muli %pid_m, %BM : index
    %col = arith.muli %pid_n, %BN : index
    %zero = arith.constant dense<0.0> : {acc}
    %c = scf.for %kk = %c0 to %K step %BK iter_args(%it = %zero) -> ({acc}) {{
{tile("at", "av", (m, k), ["%row", "%kk"], (bm, bk))}{tile("bt", "bv", (k, n), ["%kk", "%col"], (bk, bn))}      %a = ktdp.load %at : !ktdp.access_tile<{bm}x{bk}xindex> -> tensor<{bm}x{bk}xf16>
      %b = ktdp.load %bt : !ktdp.access_tile<{bk}x{bn}xindex> -> tensor<{bk}x{bn}xf16>
      %e = tensor.empty() : {acc}
      %p = linalg.matmul ins(%a, %b : tensor<{bm}x{bk}xf16>, tensor<{bk}x{bn}xf16>) outs(%e : {acc}) -> {acc}
      %nx = arith.addf %it, %p : {acc}
      scf.yield %nx : {acc}
    }}
{tile("ct", "cv", (m, n), ["%row", "%col"], (bm, bn)).replace("      ", "    ")}    ktdp.store %c, %ct : {acc}, !ktdp.access_tile<{bm}x{bn}xindex>
    return
  }}
}}
"""


def matmul_l1(m: int, k: int, n: int) -> str:
    return f"""func.func @main(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>) -> tensor<{m}x{n}xf16> {{
  %c = spyre.matmul %a, %b : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16> -> tensor<{m}x{n}xf16>
  func.return %c : tensor<{m}x{n}xf16>
}}
"""


def l1_tile_rows(text: str) -> int:
    """The rows of the first 2-d tile our L1 compiler loads for `text` (its work
    division)."""
    from spyre_ir import registry
    from spyre_ir.diagnostics import parse_and_verify
    from spyre_ir.dialects import dataflow as D
    from spyre_ir.pipelines import lower_to_dataflow

    module = parse_and_verify(registry.make_context(), text, "l1.mlir")
    lower_to_dataflow(module)
    loads = [op for op in module.walk() if isinstance(op, D.LoadOp)]
    rank2 = next(op for op in loads if len(op.source.type.get_shape()) == 2)
    return rank2.dest.type.get_shape()[0]


def spyre_run(path: Path, scalars: str = "") -> dict:
    """spyre-run in a fresh process: its report, wall time and stage split."""
    argv = [str(BIN / "spyre-run"), str(path), "--report", "json", "--seed", "0"]
    if scalars:
        argv += ["--scalars", scalars]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"spyre-run {path.name} failed:\n{done.stderr}")
    report = json.loads(done.stdout)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "split": report.get("wall_seconds"),
        "simulated_us": report["simulated_us"],
        "bottleneck": report["bottleneck"],
    }


def cases(only: str | None) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Per kind: (row name, file text, scalars) for ktir, ktir-l1-division, l1."""
    out = []
    if only in (None, "softmax"):
        rows = l1_tile_rows(softmax_l1(4096, 1024))
        out.append(("softmax 4096x1024", [
            ("ktir", softmax_ktir(4096, 1024, 32, 1), ""),
            ("ktir-l1-division", softmax_ktir(4096, 1024, 32, rows), ""),
            ("l1", softmax_l1(4096, 1024), ""),
        ]))  # fmt: skip
    if only in (None, "layernorm"):
        rows = l1_tile_rows(layernorm_l1(1151, 8192))
        out.append(("layernorm 1151x8192", [
            ("ktir", layernorm_ktir_blocks(1151, 8192, 32, 1024), "eps=1e-5"),
            ("ktir-l1-division", layernorm_ktir_rows(1151, 8192, 32, rows), "eps=1e-5"),
            ("l1", layernorm_l1(1151, 8192), ""),
        ]))  # fmt: skip
    if only in (None, "matmul"):
        s = "K=2048,BM=32,BN=512,BK=128"
        out.append(("matmul 64x2048x8192", [
            ("ktir", matmul_ktir(64, 2048, 8192, (2, 16), 32, 512, 128), s),
            ("ktir-l1-division", matmul_ktir(64, 2048, 8192, (1, 32), 64, 256, 128),
             "K=2048,BM=64,BN=256,BK=128"),
            ("l1", matmul_l1(64, 2048, 8192), ""),
        ]))  # fmt: skip
    return out


def first_error(stderr: str) -> str:
    """The first diagnostic line of a failed step, without the directory."""
    lines = [line for line in stderr.splitlines() if "error" in line.lower()]
    line = (lines or stderr.splitlines() or ["(no output)"])[0]
    return line.split("/")[-1] if line.startswith("/") else line


def public_row(path: Path) -> dict:
    """Parse, lower and check one KTIR file in fresh processes."""
    sidecar = path.with_suffix(".scalars")
    scalars = sidecar.read_text().strip() if sidecar.exists() else ""
    grid_file = path.with_suffix(".grid")  # the launch grid of a kernel without one
    grid = grid_file.read_text().strip() if grid_file.exists() else ""
    unit_file = path.with_suffix(".unit")  # what its absolute addresses count
    unit = unit_file.read_text().strip() if unit_file.exists() else ""
    opt = [str(BIN / "spyre-opt"), str(path)]
    row: dict = {"file": path.name}
    options = ",".join(
        [f'scalars="{scalars}"'] * bool(scalars)
        + [f'grid="{grid}"'] * bool(grid)
        + [f"address-unit={unit}"] * bool(unit)
    )
    steps = {
        "parse": opt,
        "lower": opt + ["-p", f"ktir-to-units{{{options}}}" if options else "ktir-to-units"],
    }
    for step, argv in steps.items():
        done = subprocess.run(argv, capture_output=True, text=True)
        row[step] = "ok" if done.returncode == 0 else "FAIL"
        if done.returncode != 0:
            row["error"] = first_error(done.stderr)
            return row
    argv = [str(BIN / "spyre-run"), str(path), "--check", "--seed", "0", "--report", "json"]
    if scalars:
        argv += ["--scalars", scalars]
    if grid:
        argv += ["--grid", grid]
    if unit:
        argv += ["--address-unit", unit]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    row["wall_s"] = time.perf_counter() - start
    errors = [float(e) for e in re.findall(r"max abs error ([0-9.eE+-]+|inf|nan)", done.stderr)]
    row["max_error"] = max(errors) if errors else None
    if done.returncode != 0:
        row["check"] = "MISMATCH" if "MISMATCH" in done.stderr else "FAIL"
        row["error"] = first_error(done.stderr)
        return row
    # A kernel that stores nothing (the spec's kt07a / kt07b) runs, but there is no
    # result to compare: not counted as a match.
    row["check"] = "no-out" if "check: nothing to compare" in done.stderr else "ok"
    row["simulated_us"] = json.loads(done.stdout)["simulated_us"]
    return row


def run_public(directory: Path, json_out: str | None) -> int:
    # Triton-Spyre's examples use both extensions for the same textual IR.
    files = sorted([*directory.glob("*.mlir"), *directory.glob("*.ktir")])
    if not files:
        raise SystemExit(f"{directory}: no .mlir or .ktir files")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus")
    print(
        f"{'file':44} {'parse':>5} {'lower':>5} {'check':>8} {'max err':>9} {'sim us':>9} {'wall s':>6}"
    )
    rows = []
    for path in files:
        r = public_row(path)
        rows.append(r)
        err = f"{r['max_error']:.2e}" if r.get("max_error") is not None else "-"
        sim = f"{r['simulated_us']:.2f}" if "simulated_us" in r else "-"
        wall = f"{r['wall_s']:.2f}" if "wall_s" in r else "-"
        print(f"{r['file']:44} {r.get('parse', '-'):>5} {r.get('lower', '-'):>5} "
              f"{r.get('check', '-'):>8} {err:>9} {sim:>9} {wall:>6}")  # fmt: skip
        if "error" in r:
            print(f"    {r['error']}")
    passed = sum(r.get("check") == "ok" for r in rows)
    empty = sum(r.get("check") == "no-out" for r in rows)
    print(f"{passed} of {len(rows)} files parse, lower and match the reference on the card")
    if empty:
        print(f"{empty} more parse, lower and run on the card but store nothing to compare")
    if json_out:
        Path(json_out).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="OUT.json")
    parser.add_argument("--only", choices=("softmax", "layernorm", "matmul"))
    parser.add_argument("--public", metavar="DIR", type=Path)
    args = parser.parse_args()
    if args.public is not None:
        return run_public(args.public, args.json)
    results = []
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus (wall times "
        "stretch with it; cpu s is the process's own user + system time)"
    )
    print(f"{'kernel':22} {'row':18} {'wall s':>7} {'cpu s':>6} {'parse':>6} {'lower':>6} {'sim':>6} "
          f"{'sim us':>9} {'bottleneck':>10} {'vs l1':>7}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for kind, rows in cases(args.only):
            measured = {}
            for name, text, scalars in rows:
                path = Path(tmp) / f"{kind.split()[0]}_{name}.mlir"
                path.write_text(text)
                measured[name] = spyre_run(path, scalars)
            l1 = measured["l1"]["simulated_us"]
            for name, r in measured.items():
                split = r["split"] or {}
                ratio = r["simulated_us"] / l1
                print(f"{kind:22} {name:18} {r['wall_s']:7.2f} {r['cpu_s']:6.2f} "
                      f"{split.get('parse', float('nan')):6.2f} {split.get('lowering', float('nan')):6.2f} "
                      f"{split.get('run', float('nan')):6.2f} {r['simulated_us']:9.2f} "
                      f"{r['bottleneck']:>10} {ratio:7.3f}")  # fmt: skip
                results.append({"kernel": kind, "row": name, **r, "ratio_to_l1": ratio})
    misses = [r for r in results if r["row"] == "ktir" and r["wall_s"] >= 2.0]
    misses += [
        r for r in results if r["row"] == "ktir-l1-division" and abs(r["ratio_to_l1"] - 1) > 0.10
    ]
    for r in misses:
        what = "wall time >= 2 s" if r["row"] == "ktir" else "simulated time not within 10 % of l1"
        print(f"MISS: {r['kernel']} {r['row']}: {what}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
