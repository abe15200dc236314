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


def _ktdp() -> Dialect:
    from spyre_ir.dialects.ktdp import Ktdp

    return Ktdp


def _scf() -> Dialect:
    from spyre_ir.dialects.ktir_scf import Scf  # xDSL's, parsing `-> T` as MLIR does

    return Scf


def _upstream(name: str) -> Callable[[], Dialect]:
    """The upstream dialects of KTIR kernels, loaded only when a file uses them."""

    def load() -> Dialect:
        from spyre_ir.dialects import ktir_upstream

        return getattr(ktir_upstream, f"{name}_dialect")()

    return load


DIALECTS: dict[str, Callable[[], Dialect]] = {
    "spyre": _spyre,
    "dataflow": _dataflow,
    "core": _core,
    "ls": _ls,
    "pe": _pe,
    "sfp": _sfp,
    "recipe": _recipe,
    "ktdp": _ktdp,
    "scf": _scf,
    **{name: _upstream(name) for name in ("linalg", "tensor", "math", "memref", "affine")},
}


def _decompose() -> type[ModulePass]:
    from spyre_ir.passes.decompose import SpyreDecompose

    return SpyreDecompose


def _decompose_long_rows() -> type[ModulePass]:
    from spyre_ir.passes.decompose_long_rows import SpyreDecomposeLongRows

    return SpyreDecomposeLongRows


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


def _row_store_kernels() -> type[ModulePass]:
    from spyre_ir.passes.row_store_kernel import SpyreRowStoreKernels

    return SpyreRowStoreKernels


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


def _fuse_norm_prologue() -> type[ModulePass]:
    from spyre_ir.passes.fuse_norm_prologue import SpyreFuseNormPrologue

    return SpyreFuseNormPrologue


def _sink_matmul_reshapes() -> type[ModulePass]:
    from spyre_ir.passes.sink_matmul_reshapes import SpyreSinkMatmulReshapes

    return SpyreSinkMatmulReshapes


def _fuse_rotary() -> type[ModulePass]:
    from spyre_ir.passes.fuse_rotary import SpyreFuseRotary

    return SpyreFuseRotary


def _fold_layouts() -> type[ModulePass]:
    from spyre_ir.passes.fold_layouts import SpyreFoldLayouts

    return SpyreFoldLayouts


def _fold_broadcast_matmul() -> type[ModulePass]:
    from spyre_ir.passes.fold_broadcast_matmul import SpyreFoldBroadcastMatmul

    return SpyreFoldBroadcastMatmul


def _schedule_chains() -> type[ModulePass]:
    from spyre_ir.passes.schedule_chains import SpyreScheduleChains

    return SpyreScheduleChains


def _fuse_attention() -> type[ModulePass]:
    from spyre_ir.passes.fuse_attention import SpyreFuseAttention

    return SpyreFuseAttention


def _ktir_to_dataflow() -> type[ModulePass]:
    from spyre_ir.lowering.ktir_to_dataflow import ConvertKtirToDataflow

    return ConvertKtirToDataflow


def _ktir_pipeline(name: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        from spyre_ir import pipelines

        return {
            "ktir-to-dataflow": pipelines.KtirToDataflow,
            "ktir-to-units": pipelines.KtirToUnits,
        }[name]

    return load


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
    "spyre-fold-layouts": _fold_layouts,
    "spyre-fuse-rotary": _fuse_rotary,
    "spyre-sink-matmul-reshapes": _sink_matmul_reshapes,
    "spyre-fuse-norm-prologue": _fuse_norm_prologue,
    "spyre-fuse-attention": _fuse_attention,
    "spyre-lower-scatter": _lower_scatter,
    "spyre-schedule-chains": _schedule_chains,
    "spyre-fuse": _fuse,
    "spyre-partition-cores": _partition_cores,
    "spyre-tile": _tile,
    "spyre-row-store-kernels": _row_store_kernels,
    "spyre-decompose": _decompose,
    "spyre-decompose-long-rows": _decompose_long_rows,
    "spyre-stickify": _stickify,
    "spyre-allocate-scratchpad": _allocate_scratchpad,
    "spyre-double-buffer": _double_buffer,
    "convert-ktir-to-dataflow": _ktir_to_dataflow,
    "ktir-to-dataflow": _ktir_pipeline("ktir-to-dataflow"),
    "ktir-to-units": _ktir_pipeline("ktir-to-units"),
}


def make_context() -> Context:
    """A context with the upstream dialects our IR uses and every spyre dialect."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx = Context()
    for dialect in (Builtin, Func, Arith):
        ctx.load_dialect(dialect)
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


# ------------------------------------------------------------ pass option ranges

INT64_MAX = 2**63 - 1


def option_range(option: str, config: object | None = None) -> tuple[int, int, str] | None:
    """(low, high, why) for the pass options with a physical range on the card
    `config` (the default card when None); None for the others."""
    from spyre_ir.hardware import DEFAULT_CONFIG, SpyreConfig

    card = config if isinstance(config, SpyreConfig) else DEFAULT_CONFIG
    if option == "cores":
        return 1, card.cores, f"the card has {card.cores} cores"
    if option == "lx_bytes":
        return (
            card.stick_bytes,
            card.lx_bytes,
            f"a core's LX holds {card.lx_bytes} bytes; one stick is {card.stick_bytes}",
        )
    return None


def option_problem(option: str, value: object, config: object | None = None) -> str | None:
    """Why `value` is not a valid `option` (ints: within their range on the card, and
    within 64 bits, as every size is an i64 in the IR), or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    bounds = option_range(option, config)
    if bounds is not None:
        low, high, why = bounds
        if not low <= value <= high:
            return f"is out of range [{low}, {high}] ({why})"
    elif not -INT64_MAX - 1 <= value <= INT64_MAX:
        return "does not fit in 64 bits"
    return None


def check_pass_options(p: ModulePass, config: object | None = None) -> None:
    """A ValueError naming the pass and option when one of `p`'s options is invalid."""
    from dataclasses import fields, is_dataclass

    if not is_dataclass(p):
        return
    for f in fields(p):
        value = getattr(p, f.name, None)
        problem = option_problem(f.name, value, config)
        if problem:
            raise ValueError(f"{p.name}: {f.name.replace('_', '-')}={value} {problem}")
