"""How the "spyre" device comes to exist, and the torch.spyre module (streams, events,
synchronize, seeds). Registration is process-global, so the ways it can happen are each
checked in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from spyre_ir.runtime import device

device.setup()

# Float32 tensors are computed in float16, with a once-per-process warning that
# tests/test_device_eager.py checks; here it is expected.
pytestmark = pytest.mark.filterwarnings("ignore:spyre. float32 ops run on the card in DLFloat16")


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        capture_output=True, text=True, timeout=300, env={**os.environ, **env},
    )  # fmt: skip


def test_import_torch_autoloads_the_device_through_the_entry_point() -> None:
    result = run_python(
        """
        import sys
        import torch
        assert "spyre_ir.runtime.device" in sys.modules, "the entry point did not run"
        assert torch._C._get_privateuse1_backend_name() == "spyre"
        x = torch.arange(3.0).to("spyre")
        print(x.device, x.cpu().tolist(), torch.spyre.is_available())
        """,
        TORCH_DEVICE_BACKEND_AUTOLOAD="1",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["spyre:0", "[0.0,", "1.0,", "2.0]", "True"]


def test_importing_spyre_ir_without_torch_stays_light() -> None:
    result = run_python("import sys, spyre_ir; print('torch' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_importing_spyre_ir_after_torch_sets_the_device_up_without_autoload() -> None:
    result = run_python(
        """
        import torch
        assert torch._C._get_privateuse1_backend_name() == "privateuseone"
        import spyre_ir
        print(torch.zeros(2, device="spyre").device)
        """,
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "spyre:0"


def test_setup_refuses_a_privateuse1_already_taken() -> None:
    result = run_python(
        """
        import torch
        torch.utils.rename_privateuse1_backend("other")
        from spyre_ir.runtime import device
        try:
            device.setup()
        except RuntimeError as error:
            print(error)
        """,
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    assert result.returncode == 0, result.stderr
    assert "already registered as 'other'" in result.stdout


def test_setup_is_idempotent_and_device_names_parse() -> None:
    device.setup()
    assert torch.device("spyre").type == "spyre"
    assert torch.empty(1, device="spyre:0").device == torch.device("spyre", 0)
    assert torch.empty(1).spyre().is_spyre


def test_a_second_card_index_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match=r"device index 1 does not exist \(one card: spyre:0\)"):
        torch.zeros(3, device="spyre:1")
    with pytest.raises(RuntimeError, match="device index 1 does not exist"):
        torch.ones(2).to("spyre:1")


def test_device_module_mirrors_torch_cuda() -> None:
    assert torch.spyre.is_available() and torch.spyre.device_count() == 1
    assert torch.spyre.current_device() == 0
    with pytest.raises(ValueError, match="device index 1 does not exist"):
        torch.spyre.set_device(1)
    stats = torch.spyre.memory_stats()
    assert {"allocated_bytes", "reserved_bytes", "peak_allocated_bytes"} <= stats.keys()


def test_streams_events_and_synchronize_use_simulated_time() -> None:
    x = torch.randn(256, 256, device="spyre")
    start, end = torch.spyre.Event(enable_timing=True), torch.spyre.Event(enable_timing=True)
    start.record()
    y = x @ x
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0  # simulated milliseconds of the matmul
    side = torch.spyre.Stream()
    with torch.spyre.stream(side):
        assert torch.spyre.current_stream() is side
        side.wait_stream(torch.spyre.default_stream())
        z = y + 1
    assert torch.spyre.current_stream() is torch.spyre.default_stream()
    torch.spyre.synchronize()
    torch.testing.assert_close(z.cpu(), (x.cpu() @ x.cpu()) + 1, atol=0.5, rtol=2e-2)


def test_docs_example_runs() -> None:
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "device.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    result = run_python(example)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["spyre:0", "torch.Size([4,", "32])", "True", "True"]


def test_dynamo_sees_the_users_ops_only_not_the_devices_kernels() -> None:
    # The device's kernels run below the dispatcher: tracing code on spyre tensors gives
    # one graph of the user's own three ops, with no graph break inside our Python.
    import torch._dynamo as dynamo

    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x @ w, dim=-1) * 2

    x = torch.randn(4, 64, dtype=torch.float16, device="spyre")
    w = torch.randn(64, 32, dtype=torch.float16, device="spyre")
    explained = dynamo.explain(f)(x, w)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    calls = [n for n in explained.graphs[0].graph.nodes if n.op == "call_function"]
    assert len(calls) == 3
    assert all("spyre_ir" not in str(getattr(n.target, "__module__", "")) for n in calls)
