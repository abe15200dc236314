"""``torch.compile(model, backend="spyre")`` on the card executor (the default): the whole
road - L1 -> artifact (disk cache) -> prepared recipe -> launches on the simulated card.

Compared with eager: f16 models at rtol = atol = 1e-2; f32 models, which the card
computes in f16, within 2e-2 of the output's largest magnitude (and exactly as f32 with
SPYRE_EXACT_F32=1). Also: per-stage compile telemetry, the one-time f32 warning, the
disk cache (hit, miss, corrupted entry rebuilt) and the IR dump's recipe level.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from spyre_ir.runtime import telemetry
from spyre_ir.runtime.backend import Settings, reset_warnings
from spyre_ir.runtime.cache import ArtifactCacheWarning
from spyre_ir.runtime.f32_policy import SpyreF32Warning

sys.path.insert(0, str(Path(__file__).parent))
import models  # noqa: E402

F32, F16 = torch.float32, torch.float16
F32_AS_F16 = "float32 ops run on the card in DLFloat16"


@pytest.fixture
def env(card: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The card executor with its own artifact cache, strict mode, fresh dynamo and warnings
    (conftest's `card`)."""
    return card


def run(model, inputs, **options):
    """(compiled result, eager result, warnings, telemetry recorder)."""
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="spyre", dynamic=False, options=options or None)
    with torch.no_grad(), warnings.catch_warnings(record=True) as caught, \
            telemetry.recording() as rec:  # fmt: skip
        warnings.simplefilter("always")
        got = compiled(*inputs)
        want = model(*inputs)
    leaf = lambda out: out.logits if hasattr(out, "logits") else out  # noqa: E731
    # f32 placement warnings are tests/test_f32_policy.py's subject
    return (
        leaf(got),
        leaf(want),
        [w for w in caught if not issubclass(w.category, SpyreF32Warning)],
        rec,
    )


def assert_f32_close(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype == F32
    err = (got - want).abs().max().item()
    assert err <= 2e-2 * want.abs().max().item(), (
        f"max error {err}, largest |output| {want.abs().max().item()}"
    )


MODELS = ["mlp", "rmsnorm_swiglu", "attention_is_causal", "tiny_llama_sdpa"]


def test_card_is_the_default_executor(env) -> None:
    assert Settings.resolve().executor == "card"
    env.setenv("SPYRE_EXECUTOR", "reference")
    assert Settings.resolve().executor == "reference"


@pytest.mark.parametrize("dtype", [F16, F32], ids=["f16", "f32"])
@pytest.mark.parametrize("name", MODELS)
def test_model_on_the_card_matches_eager(name: str, dtype: torch.dtype, env) -> None:
    model, inputs = models.build(name, dtype)
    got, want, caught, rec = run(model, inputs)
    if dtype == F16:
        torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    else:
        assert_f32_close(got, want)
    assert [str(w.message) for w in caught if F32_AS_F16 not in str(w.message)] == []
    # It really ran on the card: one compile through every stage, one launch.
    (compiled,) = rec.compiles
    assert {"import", "dataflow", "units", "recipe", "prepare"} <= set(compiled.stage_seconds)
    assert set(compiled.ir_ops) == {"fx", "tensor", "dataflow", "units", "recipe"}
    assert compiled.kernels >= 1
    (launch,) = rec.launches
    assert launch.report["simulated_us"] > 0


def test_f32_warns_once_per_compile_naming_ops_and_exact_f32_opt_out(env) -> None:
    model, inputs = models.build("mlp", F32)
    for _ in range(2):  # each compile: one warning, the ops named, no other
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="spyre", dynamic=False)
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled(*inputs)
        (warning,) = [str(w.message) for w in caught if "float32" in str(w.message)]
        assert F32_AS_F16 in warning and "aten.addmm" in warning, warning
    got, want, caught, _ = run(model, inputs)
    f16_err = (got - want).abs().max().item()

    reset_warnings()
    env.setenv("SPYRE_EXACT_F32", "1")
    got, want, caught, _ = run(model, inputs)
    assert not caught
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert (got - want).abs().max().item() < f16_err / 10


def test_disk_cache_hit_miss_and_corruption(env, tmp_path: Path) -> None:
    model, inputs = models.build("rmsnorm_swiglu", F16)

    def compile_once():
        got, want, caught, rec = run(model, inputs)
        torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
        (record,) = rec.compiles
        caught = [w for w in caught if F32_AS_F16 not in str(w.message)]  # RMSNorm's f32 statistics
        return "dataflow" in record.stage_seconds, caught  # compiled, not read from disk

    assert compile_once() == (True, [])  # miss: compiled and stored
    assert compile_once() == (False, [])  # hit: dynamo's tables cleared, the disk remains
    (entry,) = (tmp_path / "cache").glob("*.artifact")
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0x20  # one flipped bit in the middle of the artifact
    entry.write_bytes(bytes(data))
    compiled, caught = compile_once()
    assert compiled and [w.category for w in caught] == [ArtifactCacheWarning]
    assert str(entry) in str(caught[0].message)
    assert compile_once() == (False, [])  # rebuilt and stored again


def test_cache_hit_in_a_new_process(env, tmp_path: Path) -> None:
    script = (
        f"import sys, torch; sys.path.insert(0, {str(Path(__file__).parent)!r}); import models\n"
        "from spyre_ir.runtime import telemetry\n"
        "model, inputs = models.build('mlp', torch.float16)\n"
        "with torch.no_grad(), telemetry.recording() as rec:\n"
        "    got = torch.compile(model, backend='spyre', dynamic=False)(*inputs)\n"
        "torch.testing.assert_close(got, model(*inputs), rtol=1e-2, atol=1e-2)\n"
        "print(sorted(rec.compiles[0].stage_seconds))\n"
    )
    first, second = (subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                    timeout=300) for _ in range(2))  # fmt: skip
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "'dataflow'" in first.stdout and "'dataflow'" not in second.stdout, (
        first.stdout,
        second.stdout,
    )
    assert "'cache'" in second.stdout


def test_ir_dump_holds_the_recipe_level(env, tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    env.setenv("SPYRE_IR_DUMP", str(dump))
    model, inputs = models.build("mlp", F16)
    got, want, _, _ = run(model, inputs)
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
    files = sorted(p.name for p in dump.glob("*.mlir"))
    assert [f.split(".")[1] for f in files] == ["dataflow", "recipe", "tensor", "units"], files
    recipe = next(dump.glob("*.recipe.mlir"))
    result = subprocess.run([sys.executable, "-m", "spyre_ir.tools.spyre_opt", str(recipe)],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "recipe.plan @main_recipe for @main" in result.stdout and "core.program" in result.stdout


@pytest.mark.filterwarnings("ignore::spyre_ir.runtime.f32_policy.SpyreF32Warning")  # RMSNorm's f32
def test_a_second_call_replays_the_recorded_programs(env) -> None:
    """The recipe's compute step simulates the same program ops on every launch: the
    second call replays them (no scheduler run) and still matches eager on new data."""
    from spyre_ir.sim import scheduler

    model = models.rmsnorm_swiglu().to(F16)
    compiled = torch.compile(model, backend="spyre", dynamic=False)
    with torch.no_grad():
        compiled(models.randn(2, models.DIM, dtype=F16, seed=1))
        runs = []
        original = scheduler.Scheduler.run
        env.setattr(scheduler.Scheduler, "run", lambda self: runs.append(original(self)))
        x = models.randn(2, models.DIM, dtype=F16, seed=2)
        got, want = compiled(x), model(x)
    assert runs == [], "a launch of the same recipe scheduled its programs again"
    torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)
