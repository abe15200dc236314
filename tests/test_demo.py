"""`make demo` runs end to end and shows every level, the simulated card and the
torch.compile path with a small error against eager."""

from __future__ import annotations

import re

from spyre_ir.tools import demo


def test_demo_runs(capsys, monkeypatch) -> None:
    monkeypatch.delenv("SPYRE_IR_DUMP", raising=False)
    monkeypatch.delenv("SPYRE_EXECUTOR", raising=False)
    try:
        assert demo.main() == 0
    finally:
        # The demo sets these for its own torch.compile run.
        import os

        os.environ.pop("SPYRE_IR_DUMP", None)
        os.environ.pop("SPYRE_EXECUTOR", None)
    out = capsys.readouterr().out
    for line in ("L1 spyre", "L2 dataflow", "L3 units", "simulated card:", "IR dump"):
        assert line in out
    errors = [float(x) for x in re.findall(r"max \|error\|(?: vs eager| vs L1:)? ([0-9.e+-]+)", out)]
    assert len(errors) >= 3 and max(errors) < 1e-2, out
