"""Named pass pipelines, as data shared by spyre-opt, spyre-run and the backend.

Each pipeline is a list of pass specs; `-p spyre-to-dataflow{cores=8 lx-bytes=1048576}`
runs the whole list with those options handed to the passes that take them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_spec

from spyre_ir import registry
from spyre_ir.hardware import DEFAULT_CONFIG, SpyreConfig, set_card

PIPELINES: dict[str, list[str]] = {
    "spyre-to-dataflow": [
        "spyre-fold-broadcast-matmul",
        "spyre-stickify",
        "spyre-fuse",
        "spyre-partition-cores",
        "spyre-tile",
        "spyre-double-buffer",
        "spyre-allocate-scratchpad",
    ],
    "spyre-to-units": ["spyre-to-dataflow", "convert-dataflow-to-units"],
    "spyre-compile": ["spyre-to-units", "convert-units-to-recipe"],
}


def build_passes(name: str, **options: object) -> list[ModulePass]:
    """The passes of pipeline `name`, each given the options it declares."""
    from xdsl.transforms import get_all_passes

    available = {**get_all_passes(), **registry.PASSES}
    passes = []
    for spec_text in PIPELINES[name]:
        spec = parse_spec(spec_text)
        cls = available[spec.name]()
        known = {f.name for f in fields(cls)}
        passes.append(cls(**{k: v for k, v in options.items() if k in known}))
    return passes


@dataclass(frozen=True)
class _Pipeline(ModulePass):
    """A named pipeline as one pass: its passes from PIPELINES, each given the options
    it declares."""

    cores: int = DEFAULT_CONFIG.cores
    lx_bytes: int = DEFAULT_CONFIG.lx_bytes
    split: tuple[int, ...] = ()
    """Forced b, m, n, k split of every matmul (spyre-partition-cores)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = {"cores": self.cores, "lx_bytes": self.lx_bytes, "split": self.split}
        for p in build_passes(self.name, **options):
            p.apply(ctx, op)


@dataclass(frozen=True)
class SpyreToDataflow(_Pipeline):
    """L1 -> L2: stickify, fuse, partition over `cores`, tile for `lx-bytes` of LX,
    double-buffer, allocate the scratchpad."""

    name = "spyre-to-dataflow"


@dataclass(frozen=True)
class SpyreToUnits(_Pipeline):
    """L1 -> L3: spyre-to-dataflow, then per-unit programs with their queues."""

    name = "spyre-to-units"


@dataclass(frozen=True)
class SpyreCompile(_Pipeline):
    """L1 -> L4: spyre-to-units, then the recipe plan that makes the module an artifact."""

    name = "spyre-compile"


def lower_to_units(
    module: ModuleOp,
    cores: int = DEFAULT_CONFIG.cores,
    lx_bytes: int = DEFAULT_CONFIG.lx_bytes,
    split: tuple[int, ...] = (),
    config: SpyreConfig | None = None,
) -> ModuleOp:
    """Python entry point: lower an L1 module to L3 in place and return it; `split`
    forces the (b, m, n, k) split of every matmul; `config` makes the module target
    that card (its `spyre.card` attribute, which every pass reads)."""
    if config is not None:
        set_card(module, config)
    SpyreToUnits(cores, lx_bytes, tuple(split)).apply(registry.make_context(), module)
    module.verify()
    return module


def lower_to_dataflow(
    module: ModuleOp, cores: int = DEFAULT_CONFIG.cores, lx_bytes: int = DEFAULT_CONFIG.lx_bytes
) -> ModuleOp:
    """Python entry point: lower an L1 module to L2 in place and return it."""
    SpyreToDataflow(cores, lx_bytes).apply(registry.make_context(), module)
    module.verify()
    return module
