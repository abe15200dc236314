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


def _core() -> Dialect:
    from spyre_ir.dialects.core import Core

    return Core


def _ls() -> Dialect:
    from spyre_ir.dialects.ls import Ls

    return Ls


def _pe() -> Dialect:
    from spyre_ir.dialects.pe import Pe

    return Pe


def _sfp() -> Dialect:
    from spyre_ir.dialects.sfp import Sfp

    return Sfp


def _recipe() -> Dialect:
    from spyre_ir.dialects.recipe import Recipe

    return Recipe


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "spyre": _spyre,
    "dataflow": _dataflow,
    "core": _core,
    "ls": _ls,
    "pe": _pe,
    "sfp": _sfp,
    "recipe": _recipe,
}


def _decompose() -> type[ModulePass]:
    from spyre_ir.passes.decompose import SpyreDecompose

    return SpyreDecompose


def _stickify() -> type[ModulePass]:
    from spyre_ir.passes.stickify import SpyreStickify

    return SpyreStickify


def _allocate_scratchpad() -> type[ModulePass]:
    from spyre_ir.passes.allocate_scratchpad import SpyreAllocateScratchpad

    return SpyreAllocateScratchpad


def _double_buffer() -> type[ModulePass]:
    from spyre_ir.passes.double_buffer import SpyreDoubleBuffer

    return SpyreDoubleBuffer


def _fuse() -> type[ModulePass]:
    from spyre_ir.passes.fuse import SpyreFuse

    return SpyreFuse


def _partition_cores() -> type[ModulePass]:
    from spyre_ir.passes.partition_cores import SpyrePartitionCores

    return SpyrePartitionCores


def _tile() -> type[ModulePass]:
    from spyre_ir.passes.tile import SpyreTile

    return SpyreTile


def _to_dataflow() -> type[ModulePass]:
    from spyre_ir.pipelines import SpyreToDataflow

    return SpyreToDataflow


def _dataflow_to_units() -> type[ModulePass]:
    from spyre_ir.lowering.dataflow_to_units import ConvertDataflowToUnits

    return ConvertDataflowToUnits


def _to_units() -> type[ModulePass]:
    from spyre_ir.pipelines import SpyreToUnits

    return SpyreToUnits


def _units_to_recipe() -> type[ModulePass]:
    from spyre_ir.lowering.units_to_recipe import ConvertUnitsToRecipe

    return ConvertUnitsToRecipe


def _compute_in_f16() -> type[ModulePass]:
    from spyre_ir.passes.compute_in_f16 import SpyreComputeInF16

    return SpyreComputeInF16


def _fold_broadcast_matmul() -> type[ModulePass]:
    from spyre_ir.passes.fold_broadcast_matmul import SpyreFoldBroadcastMatmul

    return SpyreFoldBroadcastMatmul


def _lower_scatter() -> type[ModulePass]:
    from spyre_ir.passes.lower_scatter import SpyreLowerScatter

    return SpyreLowerScatter


def _compile() -> type[ModulePass]:
    from spyre_ir.pipelines import SpyreCompile

    return SpyreCompile


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "spyre-compile": _compile,
    "convert-units-to-recipe": _units_to_recipe,
    "spyre-compute-in-f16": _compute_in_f16,
    "spyre-to-units": _to_units,
    "convert-dataflow-to-units": _dataflow_to_units,
    "spyre-to-dataflow": _to_dataflow,
    "spyre-fold-broadcast-matmul": _fold_broadcast_matmul,
    "spyre-lower-scatter": _lower_scatter,
    "spyre-fuse": _fuse,
    "spyre-partition-cores": _partition_cores,
    "spyre-tile": _tile,
    "spyre-decompose": _decompose,
    "spyre-stickify": _stickify,
    "spyre-allocate-scratchpad": _allocate_scratchpad,
    "spyre-double-buffer": _double_buffer,
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
