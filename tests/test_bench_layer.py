"""bench/layer.py: the decoder-layer benchmark runs end to end on a small layer, its
simulated outputs match torch eager (the bench asserts it), its JSON holds what the
table prints, and user mistakes give a clear error and a non-zero exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bench_module  # tests/, on sys.path under pytest
import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "layer.py"


def run_bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)  # fmt: skip


def load_bench():
    return bench_module.load_bench("layer")


def check_cases(proc: subprocess.CompletedProcess, out: Path, names: list[str]) -> None:
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert [c["case"]["name"] for c in data["cases"]] == names
    for case in data["cases"]:
        assert case["match"] and all(o["ok"] for o in case["outputs"])
        assert len(case["outputs"]) == 3  # the layer's output, new keys, new values
        kernels, layer = case["kernels"], case["layer"]
        assert kernels and all(0 < k["fraction"] <= 1 for k in kernels)
        # The layer's roofline is the sum of its kernels' (as the simulator defines it).
        assert layer["roofline_us"] == pytest.approx(sum(k["roofline_us"] for k in kernels))
        assert layer["simulated_us"] == pytest.approx(sum(k["simulated_us"] for k in kernels))
        assert layer["roofline_fraction"] == pytest.approx(
            layer["roofline_us"] / layer["simulated_us"]
        )
        assert 0 < layer["ideal_us"] <= layer["simulated_us"]
        # The roofline targets are the 8B layer's, not judged on the small one.
        assert layer["target"] is None and layer["met"] is None
        assert case["compile"]["inductor_torch_compile_s"] is None
        assert case["compile"]["ours_units_s"] > 0
        assert len(case["compile"]["runs"]["ours"]) == 1
        assert case["compile"]["ours_torch_compile_s"] == min(case["compile"]["runs"]["ours"])
        assert case["wall"]["simulator_s"] > 0 and case["wall"]["eager_s"] > 0
        assert f"== {case['case']['name']}" in proc.stdout
    assert "no target for the --quick layer" in proc.stdout


def test_quick_decode_case_writes_consistent_json(tmp_path: Path) -> None:
    out = tmp_path / "layer.json"
    proc = run_bench("--quick", "--case", "decode b4", "--no-inductor", "--compile-repeat", "1",
                     "--json", str(out))  # fmt: skip
    check_cases(proc, out, ["decode b4 ctx64"])


@pytest.mark.slow  # about 25 s alone, more on a busy machine
def test_quick_run_writes_consistent_json(tmp_path: Path) -> None:
    out = tmp_path / "layer.json"
    proc = run_bench("--quick", "--no-inductor", "--compile-repeat", "1", "--json", str(out))
    check_cases(proc, out, ["prefill 64", "decode b1 ctx64", "decode b4 ctx64"])


@pytest.mark.slow  # a cold Inductor compile: 10-60 s on a shared 2-core machine
def test_inductor_compile_ratio_is_measured(tmp_path: Path) -> None:
    out = tmp_path / "layer.json"
    proc = run_bench("--quick", "--case", "decode b1", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    (case,) = json.loads(out.read_text())["cases"]
    comp = case["compile"]
    assert comp["inductor_torch_compile_s"] > 0
    ratio = comp["ours_torch_compile_s"] / comp["inductor_torch_compile_s"]
    assert comp["ratio"] == pytest.approx(ratio)
    assert "Inductor" in proc.stdout and "ratio" in proc.stdout


def test_unwritable_json_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_bench("--quick", "--json", str(tmp_path / "missing" / "x.json"), timeout=120)
    assert proc.returncode == 2
    assert "layer.py: error: cannot write --json" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_compile_repeat_is_a_clear_error() -> None:
    proc = run_bench("--quick", "--compile-repeat", "0", timeout=120)
    assert proc.returncode == 2
    assert "--compile-repeat must be at least 1, got 0" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_case_is_a_clear_error() -> None:
    proc = run_bench("--quick", "--case", "no such case", timeout=120)
    assert proc.returncode == 2
    assert "no case matches --case 'no such case'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_output_check_flags_a_wrong_result() -> None:
    bench = load_bench()
    want = [torch.tensor([[1.0, -2.0, 3.0]], dtype=torch.float16)]
    close = [np.array([[1.004, -2.0, 3.0]], dtype=np.float16)]
    assert bench.check_outputs(close, want)[0]["ok"]
    wrong = [np.array([[1.0, -2.0, 3.5]], dtype=np.float16)]
    assert not bench.check_outputs(wrong, want)[0]["ok"]
    nan = [np.array([[1.0, np.nan, 3.0]], dtype=np.float16)]
    assert not bench.check_outputs(nan, want)[0]["ok"]
    shape = [np.zeros((3, 1), dtype=np.float16)]
    assert not bench.check_outputs(shape, want)[0]["ok"]


def test_layer_matches_a_hand_computed_decode_step() -> None:
    """The bench's layer is a Llama layer: with the cache, the new token attends to
    every cached position (the mask hides nothing) and GQA shares each KV head."""
    bench = load_bench()
    shape = bench.LayerShape(hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=96)
    case = bench.Case("t", "decode", 1, 1, 5)
    layer = bench.build_layer(shape).float()
    x, cos, sin, mask, kc, vc = (t.float() for t in bench.make_inputs(shape, case))
    assert torch.all(mask == 0)
    with torch.no_grad():
        out, k, v = layer(x, cos, sin, mask, kc, vc)
        h = layer.input_norm(x)
        q = layer.q_proj(h).view(1, 1, 4, 16).transpose(1, 2)
        q = q * cos + bench.rotate_half(q) * sin
        keys = torch.cat((kc, k), 2).repeat_interleave(2, dim=1)
        values = torch.cat((vc, v), 2).repeat_interleave(2, dim=1)
        attn = torch.nn.functional.scaled_dot_product_attention(q, keys, values)
        x1 = x + layer.o_proj(attn.transpose(1, 2).reshape(1, 1, 64))
        h2 = layer.post_norm(x1)
        gate = torch.nn.functional.silu(layer.gate_proj(h2))
        want = x1 + layer.down_proj(gate * layer.up_proj(h2))
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)


def test_loading_the_bench_leaves_bench_off_sys_path() -> None:
    """bench/ on sys.path lets its plain-named scripts shadow installed packages (bench's
    old kernels.py hid HF's `kernels`, which transformers 5.25 imports: 47 failures)."""
    load_bench()
    bench_dir = BENCH.parent.resolve()
    assert all(Path(p or ".").resolve() != bench_dir for p in sys.path)
