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
from spyre_ir.hardware import DEFAULT_CONFIG, SpyreConfig, card_of


def _stage(name: str) -> list[str]:
    return next(list(s.passes) for s in STAGES if s.name == name)


# The stages of the compile driver (spyre_ir/driver.py), named for spyre-opt's -p.
PIPELINES: dict[str, list[str]] = {
    "spyre-to-dataflow": _stage("dataflow"),
    "spyre-to-units": ["spyre-to-dataflow", *_stage("units")],
    "spyre-compile": ["spyre-to-units", *_stage("recipe")],
    "ktir-to-dataflow": [
        "convert-ktir-to-dataflow",
        "spyre-double-buffer",
        "spyre-allocate-scratchpad",
    ],
    "ktir-to-units": ["ktir-to-dataflow", "convert-dataflow-to-units"],
}


UNFUSED: dict[str, object] = {
    "fuse_attention": False,
    "sink_reshapes": False,
    "fuse_bias": False,
    "fuse_residual": False,
    "fuse_scale": False,
    "fuse_activation": False,
    "fuse_cast": False,
    "fuse_matmul_pairs": False,
    "trim_epilogues": False,
    "schedule_chains": False,
    "fuse_mask_layout": False,
    "fuse_relayout_pairs": False,
    "fuse_norm_prologue": False,
    "fold_layouts": False,
    "fuse_rotary": False,
    "fuse_projection_segments": False,
}
"""Every fusion switch of spyre-to-dataflow off (bench/layer.py's unfused layer)."""


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
    fuse_attention: bool = True
    """spyre-fuse-attention's switch (false: attention runs unfused)."""
    sink_reshapes: bool = True
    """spyre-sink-matmul-reshapes' switch (false: a linear layer's epilogue on 3-D
    activations runs in kernels of its own)."""
    fuse_bias: bool = True
    """spyre-fuse's matmul epilogue switches (false: that kind of op after a matmul
    runs in a kernel of its own); so are the four below."""
    fuse_residual: bool = True
    fuse_scale: bool = True
    fuse_activation: bool = True
    fuse_cast: bool = True
    fuse_matmul_pairs: bool = True
    """spyre-fuse's switch for a second matmul sharing A (SwiGLU's gate and up in one
    kernel; false: one kernel each)."""
    trim_epilogues: bool = True
    """spyre-fuse's switch for giving back epilogue ops that only add bytes a matmul
    kernel writes (an RMSNorm's square after a residual add)."""
    fuse_relayout_pairs: bool = True
    """spyre-fuse's switch for a rows group taking a restickify together with the
    transpose reading it (k's head split beside v's: one kernel)."""
    fuse_mask_layout: bool = True
    """spyre-fuse's switch for reading an attention mask through its restickify in the
    attention kernel (false: the restickify is a kernel of its own)."""
    fuse_norm_prologue: bool = True
    """spyre-fuse-norm-prologue's and spyre-fuse's switch for an RMSNorm computed in the
    matmul kernels reading it, as a prologue on their A tiles (false: a kernel of its
    own writing the normalised activation)."""
    fuse_rotary: bool = True
    """spyre-fuse-rotary's and spyre-fuse's switch: rotary embedding on a projection's
    heads runs as its matmul's epilogue (false: a rows kernel of its own)."""
    fold_layouts: bool = True
    """spyre-fold-layouts' switch: a kernel stores its result in the layout its
    relayout reader needs, so that relayout (a head split or merge, a [s, h] result
    returned as [1, s, h]) is a view (false: a kernel of its own)."""
    a_resident: bool = False
    """spyre-tile's switch for A_RESIDENT matmul tilings (off by default: see
    docs/passes.md)."""
    prologue_resident: bool = True
    """spyre-tile's switch for A_RESIDENT tilings of a matmul under a norm prologue
    (docs/passes.md)."""
    schedule_chains: bool = True
    """spyre-schedule-chains' switch (false: spyre-fuse sees the ops in torch's order, so
    a chain split by unrelated ops runs in several kernels)."""
    stream_softmax: bool = True
    """spyre-decompose-long-rows' switch: a softmax over the last dim whose row does not
    fit LX runs as one streaming kernel (false: decomposed into several kernels)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = {f.name: getattr(self, f.name) for f in fields(self)}
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


@dataclass(frozen=True)
class _KtirPipeline(ModulePass):
    """A KTIR pipeline as one pass: `scalars` ("NAME=VALUE,...") for the kernels' scalar
    arguments goes to convert-ktir-to-dataflow, `lx_bytes` to the scratchpad passes."""

    scalars: str = ""
    lx_bytes: int = DEFAULT_CONFIG.lx_bytes
    grid: str = ""
    """The launch grid ("32", "2,16") of kernels without a `grid` attribute."""
    address_unit: str = "element"
    """What absolute addresses count (convert-ktir-to-dataflow's option)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = {"scalars": self.scalars, "lx_bytes": self.lx_bytes, "grid": self.grid}
        options["address_unit"] = self.address_unit
        for p in build_passes(self.name, **options):
            p.apply(ctx, op)


@dataclass(frozen=True)
class KtirToDataflow(_KtirPipeline):
    """KTIR (ktdp) -> L2: convert-ktir-to-dataflow, double-buffer, allocate the
    scratchpad."""

    name = "ktir-to-dataflow"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        """As the pipeline, but a kernel whose double-buffered tiles overflow LX is
        compiled without the prefetch (a tile as wide as ktir-cpu's softmax_wide.mlir
        rows fits only once), before the scratchpad is declared too small."""
        from spyre_ir.diagnostics import DiagnosticError

        convert, double_buffer, allocate = build_passes(
            self.name,
            scalars=self.scalars,
            lx_bytes=self.lx_bytes,
            grid=self.grid,
            address_unit=self.address_unit,
        )
        convert.apply(ctx, op)
        single = op.clone()
        try:
            double_buffer.apply(ctx, op)
            allocate.apply(ctx, op)
        except DiagnosticError as error:
            if "bytes of LX per core" not in str(error):
                raise
            allocate.apply(ctx, single)
            op.body.detach_block(0)
            op.body.add_block(single.body.detach_block(0))


@dataclass(frozen=True)
class KtirToUnits(_KtirPipeline):
    """KTIR (ktdp) -> L3: ktir-to-dataflow, then per-unit programs."""

    name = "ktir-to-units"


def lower_to_units(
    module: ModuleOp,
    cores: int | None = None,
    lx_bytes: int | None = None,
    split: tuple[int, ...] = (),
    config: SpyreConfig | None = None,
    **pass_options: object,
) -> ModuleOp:
    """Python entry point: lower an L1 module to L3 in place and return it; `split`
    forces the (b, m, n, k) split of every matmul; `config` makes the module target
    that card (its `spyre.card` attribute, which every pass reads; by default the card
    the module already names), `cores` and `lx_bytes` change it; `pass_options` go to
    the passes that declare them (`fuse_attention=False`)."""
    card = _config(config or card_of(module), cores, lx_bytes)
    driver.lower(module, target="units", config=card, split=tuple(split), pass_options=pass_options)
    return module


def lower_to_dataflow(
    module: ModuleOp,
    cores: int | None = None,
    lx_bytes: int | None = None,
    **pass_options: object,
) -> ModuleOp:
    """Python entry point: lower an L1 module to L2 in place and return it; `pass_options`
    go to the passes that declare them (`fuse_attention=False`)."""
    driver.lower(module, target="dataflow", config=_config(card_of(module), cores, lx_bytes),
                 pass_options=pass_options)  # fmt: skip
    return module


def _config(card: SpyreConfig, cores: int | None, lx_bytes: int | None) -> SpyreConfig:
    from dataclasses import replace

    return replace(card, cores=card.cores if cores is None else cores,
                   lx_bytes=card.lx_bytes if lx_bytes is None else lx_bytes)  # fmt: skip
