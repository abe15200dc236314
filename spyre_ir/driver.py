"""The compile driver: L1 -> L4 as one list of stages, with hooks.

Every road from the tensor level down goes through :func:`lower`: the torch.compile
backend (its debugging executors), the artifact compiler (``runtime/artifact.py``), the
named pipelines of spyre-opt (``pipelines.py`` builds them from :data:`STAGES`) and
spyre-run. A stage is a named list of registered passes that takes the IR one level down;
each runs inside ``telemetry.stage(graph, name)`` (so its time reaches any active
recording), and then every hook sees the module::

    lower(module, target="units", hooks=[verify, RecordOps(record), KeepText(levels)])

Hooks do what each caller needs at the stage boundaries: verification (:func:`verify`),
op counts into a telemetry record (:class:`RecordOps`), IR text kept for dumps
(:class:`KeepText`). A stage's failure propagates; the caller decides what it means.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from spyre_ir import registry
from spyre_ir.hardware import SpyreConfig, card_of, set_card

if TYPE_CHECKING:
    from spyre_ir.runtime.telemetry import CompileRecord

__all__ = ["LEVELS", "STAGES", "KeepText", "RecordOps", "Stage", "lower", "stage_passes", "verify"]

# IR levels in lowering order (L1 .. L4), named as the dumps and telemetry name them.
LEVELS = ("tensor", "dataflow", "units", "recipe")


@dataclass(frozen=True)
class Stage:
    """Passes (registered names, run in order) that produce IR level ``level``."""

    name: str
    level: str
    passes: tuple[str, ...]


# The f32 -> f16 retyping is a stage of its own, within L1: only the card's artifacts take
# it (the card has no f32 compute; see passes/compute_in_f16.py).
F16_STAGE = Stage("f16", "tensor", ("spyre-compute-in-f16",))

STAGES: tuple[Stage, ...] = (
    Stage("dataflow", "dataflow", (
        "spyre-lower-scatter",
        "spyre-fuse-attention",
        "spyre-sink-matmul-reshapes",
        "spyre-fuse-rotary",
        "spyre-fuse-norm-prologue",
        "spyre-fold-broadcast-matmul",
        "spyre-decompose-long-rows",
        "spyre-stickify",
        "spyre-fold-layouts",
        "spyre-schedule-chains",
        "spyre-fuse",
        "spyre-partition-cores",
        "spyre-tile",
        "spyre-row-store-kernels",
        "spyre-double-buffer",
        "spyre-allocate-scratchpad",
    )),
    Stage("units", "units", ("convert-dataflow-to-units",)),
    Stage("recipe", "recipe", ("convert-units-to-recipe",)),
)  # fmt: skip


def stage_passes(stage: Stage, **options: object) -> list[ModulePass]:
    """The passes of ``stage``, each given the options among ``options`` it declares."""
    available = registry.PASSES
    passes = []
    for name in stage.passes:
        cls = available[name]()
        known = {f.name for f in fields(cls)}
        passes.append(cls(**{k: v for k, v in options.items() if k in known}))
    return passes


# A hook: called after each stage with the stage, the module and the stage's seconds.
Hook = Callable[[Stage, ModuleOp, float], None]


def verify(stage: Stage, module: ModuleOp, seconds: float = 0.0) -> None:
    """Hook: verify the module after each stage (after the recipe stage only the plan it
    appended, the rest was verified at the units level)."""
    if stage.level == "recipe":
        module.body.block.last_op.verify()
    else:
        module.verify()


@dataclass
class RecordOps:
    """Hook: seconds per stage, op counts per level and kernels (L3) into a telemetry
    CompileRecord."""

    record: CompileRecord

    def __call__(self, stage: Stage, module: ModuleOp, seconds: float) -> None:
        from spyre_ir.dialects.core import ProgramOp

        self.record.stage_seconds[stage.name] = seconds
        if stage.name != stage.level:  # a stage within a level (f16) counts nothing new
            return
        self.record.ir_ops[stage.level] = sum(1 for _ in module.walk()) - 1
        if stage.level == "units":
            self.record.kernels = sum(isinstance(op, ProgramOp) for op in module.walk())


@dataclass
class KeepText:
    """Hook: the MLIR text of each level reached, into ``levels`` (for IR dumps)."""

    levels: dict[str, str] = field(default_factory=dict)
    only: tuple[str, ...] = LEVELS

    def __call__(self, stage: Stage, module: ModuleOp, seconds: float) -> None:
        from spyre_ir.runtime.artifact import print_module

        if stage.name == stage.level and stage.level in self.only:
            self.levels[stage.level] = print_module(module)


def stages_between(source: str, target: str, f16: bool = False) -> list[Stage]:
    """The stages from level ``source`` (exclusive) down to ``target`` (inclusive)."""
    start, end = LEVELS.index(source), LEVELS.index(target)
    chosen = [s for s in STAGES if start < LEVELS.index(s.level) <= end]
    return ([F16_STAGE] if f16 and source == "tensor" else []) + chosen


def lower(
    module: ModuleOp,
    *,
    source: str = "tensor",
    target: str = "recipe",
    config: SpyreConfig | None = None,
    f16: bool = False,
    graph: str = "main",
    hooks: Sequence[Hook] = (verify,),
    pass_options: Mapping[str, object] | None = None,
    split: tuple[int, ...] = (),
) -> str | None:
    """Lower ``module`` in place from level ``source`` to level ``target``; return the
    artifact text (the sealed L4 module) if the recipe level was reached.

    ``f16`` retypes an f32 graph to f16 first (the card's numerics; a graph without f32
    skips the stage). Each stage is timed as ``telemetry.stage(graph, stage.name)``, then
    each hook is called with the stage, the module and its seconds. ``config`` is the
    card to compile for, recorded on the module (``spyre.card``, which every pass
    reads); None keeps the card the module names. ``split`` forces the (b, m, n, k)
    split of every matmul. ``pass_options``
    go to the passes that declare them (``{"fuse_attention": False}``)."""
    from spyre_ir.lowering.units_to_recipe import plan_module
    from spyre_ir.passes.compute_in_f16 import has_f32
    from spyre_ir.runtime import telemetry

    ctx = registry.make_context()
    if config is None:
        config = card_of(module)
    elif source == "tensor":
        set_card(module, config)
    options = {
        "cores": config.cores,
        "lx_bytes": config.lx_bytes,
        "split": split,
        **(pass_options or {}),
    }
    text = None
    for stage in stages_between(source, target, f16=f16 and has_f32(module)):
        with telemetry.stage(graph, stage.name) as timer:
            if stage.level == "recipe":  # its one pass, run here to keep the sealed text
                text = plan_module(module)
            else:
                for p in stage_passes(stage, **options):
                    p.apply(ctx, module)
        for hook in hooks:
            hook(stage, module, timer.seconds)
    return text
