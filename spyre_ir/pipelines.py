"""Named pass pipelines for spyre-opt, built from the compile driver's stages.

Each pipeline is a list of pass specs; `-p spyre-to-dataflow{cores=8 lx-bytes=1048576}`
runs the whole list with those options handed to the passes that take them. The stages
themselves (which passes take L1 to L4) live in one place, `spyre_ir/driver.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_spec

from spyre_ir import driver, registry
from spyre_ir.driver import STAGES
from spyre_ir.hardware import DEFAULT_CONFIG, SpyreConfig

def _stage(name: str) -> list[str]:
    return next(list(s.passes) for s in STAGES if s.name == name)


# The stages of the compile driver (spyre_ir/driver.py), named for spyre-opt's -p.
PIPELINES: dict[str, list[str]] = {
    "spyre-to-dataflow": _stage("dataflow"),
    "spyre-to-units": ["spyre-to-dataflow", *_stage("units")],
    "spyre-compile": ["spyre-to-units", *_stage("recipe")],
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
    fuse_attention: bool = True  # spyre-fuse-attention's switch

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for p in build_passes(self.name, cores=self.cores, lx_bytes=self.lx_bytes,
                              fuse_attention=self.fuse_attention):  # fmt: skip
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
    module: ModuleOp, cores: int = DEFAULT_CONFIG.cores, lx_bytes: int = DEFAULT_CONFIG.lx_bytes,
    **pass_options: object,
) -> ModuleOp:
    """Python entry point: lower an L1 module to L3 in place and return it; `pass_options`
    go to the passes that declare them (`fuse_attention=False`)."""
    driver.lower(module, target="units", config=_config(cores, lx_bytes),
                 pass_options=pass_options)  # fmt: skip
    return module


def lower_to_dataflow(
    module: ModuleOp, cores: int = DEFAULT_CONFIG.cores, lx_bytes: int = DEFAULT_CONFIG.lx_bytes,
    **pass_options: object,
) -> ModuleOp:
    """Python entry point: lower an L1 module to L2 in place and return it; `pass_options`
    go to the passes that declare them (`fuse_attention=False`)."""
    driver.lower(module, target="dataflow", config=_config(cores, lx_bytes),
                 pass_options=pass_options)  # fmt: skip
    return module


def _config(cores: int, lx_bytes: int) -> SpyreConfig:
    from dataclasses import replace

    return replace(DEFAULT_CONFIG, cores=cores, lx_bytes=lx_bytes)
