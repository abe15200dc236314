"""Load a bench/ script as a module by its path.

bench/ is never put on sys.path: its scripts have plain names (kernels, layer, eager) that
would shadow installed packages of the same name (transformers 5.25 imports HF's `kernels`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str) -> ModuleType:
    """bench/NAME.py as the module `bench_NAME`, loaded once per process."""
    module_name = f"bench_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, BENCH_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses look their module up while defined
    spec.loader.exec_module(module)
    return module
