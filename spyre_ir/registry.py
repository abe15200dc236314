"""Every dialect and pass of spyre-ir, by name, loaded lazily.

spyre-opt, spyre-run and the Python API share these tables, so a pass registered here is
usable everywhere. Factories import on first use to keep start-up fast.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass


def _spyre() -> Dialect:
    from spyre_ir.dialects.spyre import Spyre

    return Spyre


def _dataflow() -> Dialect:
    from spyre_ir.dialects.dataflow import Dataflow

    return Dataflow


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "spyre": _spyre,
    "dataflow": _dataflow,
}


def _decompose() -> type[ModulePass]:
    from spyre_ir.passes.decompose import SpyreDecompose

    return SpyreDecompose


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "spyre-decompose": _decompose,
}


def make_context() -> Context:
    """A context with the upstream dialects our IR uses and every spyre dialect."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.scf import Scf

    ctx = Context()
    for dialect in (Builtin, Func, Arith, Scf):
        ctx.load_dialect(dialect)
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx
