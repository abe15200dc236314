"""Printing spyre tensors never raises: dynamo's messages and structured trace logs print
tensors with a FakeTensorMode active, and fake or meta tensors have no device memory."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from spyre_ir.runtime import device

device.setup()


def one_line(text: str) -> str:
    return " ".join(text.split())


def spyre_half(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float16).to("spyre")


def test_a_real_spyre_tensor_prints_its_values_inside_a_fake_mode() -> None:
    x = spyre_half(1.5, -2.0, 0.25)
    expected = repr(x)
    assert "1.5000" in expected
    with FakeTensorMode(allow_non_fake_inputs=True):
        assert repr(x) == expected
    with FakeTensorMode():  # strict: a real input to a fake op would be an error
        assert str(x) == expected


def test_fake_and_meta_spyre_tensors_print_without_values() -> None:
    x = spyre_half(1.0, 2.0).requires_grad_()
    fake = FakeTensorMode().from_tensor(x)
    assert one_line(repr(fake)) == (
        "FakeTensor(..., device='spyre:0', size=(2,), dtype=torch.float16, requires_grad=True)"
    )
    with FakeTensorMode():
        made = torch.empty(3, 4, device="spyre")
        assert str(made) == "FakeTensor(..., device='spyre:0', size=(3, 4))"
    assert one_line(repr(x.to("meta"))) == (
        "tensor(..., device='meta', size=(2,), dtype=torch.float16, grad_fn=<ToCopyBackward0>)"
    )


def test_a_spyre_tensor_without_device_memory_prints_dots() -> None:
    # A storage not made by the device's allocator (torch's own C++ could make one):
    # there are no bytes to read, so the values print as "...", never an error.
    storage = torch._C._construct_storage_from_data_pointer(1 << 44, torch.device("spyre", 0), 8)
    t = torch.empty(0, dtype=torch.float16, device="spyre").set_(storage, 0, (4,), (1,))
    assert repr(t) == "tensor(..., device='spyre:0', dtype=torch.float16)"


def test_compiled_code_printing_its_inputs_inside_dynamo() -> None:
    # dynamo traces a print of a spyre input with its fake mode active (a graph break)
    x = spyre_half(3.0, 0.0)
    seen: list[str] = []

    def f(a: torch.Tensor) -> torch.Tensor:
        seen.append(repr(a))
        return a * 2

    torch._dynamo.reset()
    out = torch.compile(f, backend="spyre")(x)
    assert torch.equal(out.cpu(), torch.tensor([6.0, 0.0], dtype=torch.float16))
    assert seen and all("device='spyre:0'" in s for s in seen)


def test_is_nonzero_of_spyre_tensors_answers_and_errs_as_on_cpu() -> None:
    """torch.is_nonzero formats its error with the tensor (issue 19: "tensor has no device
    memory" surfaced instead)."""
    import pytest

    for values in ((1.5,), (0.0,)):
        assert torch.is_nonzero(spyre_half(*values)) == torch.is_nonzero(torch.tensor(values))
    for make in (spyre_half, lambda *v: torch.tensor(v, dtype=torch.float16)):
        with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
            torch.is_nonzero(make(1.0, 2.0))


def test_compiled_nonzero_on_spyre_inputs_runs_and_says_it_ran_on_cpu() -> None:
    """A data-dependent nonzero under torch.compile: dynamo prints its fake spyre inputs
    while tracing (that raised before); the op itself runs on CPU, with the warning."""
    import pytest

    from spyre_ir.runtime.eager import SpyreCpuFallbackWarning

    host = torch.tensor([0.0, 1.0, 0.0, 2.0], dtype=torch.float16)
    torch._dynamo.reset()
    f = torch.compile(lambda t: torch.nonzero(t), backend="spyre")
    with pytest.warns(SpyreCpuFallbackWarning, match=r"aten\.nonzero"):
        out = f(host.to("spyre"))
    assert out.device.type == "spyre"
    assert torch.equal(out.cpu(), torch.nonzero(host))


TRACE_SCRIPT = """
import warnings
import torch
from spyre_ir.runtime import device
device.setup()
warnings.simplefilter("ignore")  # the backward's CPU fallback is not under test here
x = torch.tensor([1.0, 2.0], dtype=torch.float16).to("spyre").requires_grad_()
out = torch.compile(lambda t: (t * 3).sum(), backend="spyre")(x)
print(float(out.detach().cpu()))
"""


def test_structured_trace_logging_of_a_compile_with_requires_grad_spyre_inputs(tmp_path) -> None:
    """TORCH_TRACE (structured trace logs) of a compile whose spyre input requires grad
    prints the fake spyre tensors; it is read at import time, hence the subprocess."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TORCH_TRACE": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", TRACE_SCRIPT], capture_output=True, text=True,
                         env=env, timeout=300, check=True)  # fmt: skip
    assert float(out.stdout.split()[-1]) == 9.0
    logs = "".join(p.read_text() for p in tmp_path.iterdir())
    assert "device='spyre:0'" in logs and "tensor has no device memory" not in logs
