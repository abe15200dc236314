"""Compiled artifacts: an L1 graph compiled to L4 text, cached on disk.

    artifact = compile_artifact(l1_module, config, name="graph0_0")
    artifact.text            # MLIR: the L3 entry + its recipe.plan (spyre-opt reads it)
    artifact.content_hash    # the plan's SHA-256 of the text
    module = load_artifact(artifact.text)   # parsed, verified, hash checked

The artifact is MLIR text, never a pickle: it can be read, diffed, re-verified and run by
the tools. `compile_artifact` runs the compile driver (`spyre_ir/driver.py`: stages timed
with `telemetry.stage`, verified, ops counted per level), after retyping an f32 graph to
f16 unless `exact_f32` (the card has no f32 compute; see `passes/compute_in_f16.py`). Compiled text
is kept in the on-disk `ArtifactCache`, keyed by the graph's text, the config, the
numerics choice and the compiler (package version and a hash of its sources, so an
edited compiler never reuses stale artifacts). A damaged or forged cache entry is
reported once by the cache, deleted and rebuilt (see `runtime/cache.py`); so is one that
does not parse, verify or match its own content hash: a hit is loaded here, and its
module handed on, so nothing later finds it broken.
"""

from __future__ import annotations

import functools
import gc
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from spyre_ir import registry
from spyre_ir.diagnostics import DiagnosticError, parse_and_verify
from spyre_ir.dialects.recipe import content_hash, stored_hash
from spyre_ir.hardware import DEFAULT_CONFIG, SpyreConfig
from spyre_ir.runtime import telemetry
from spyre_ir.runtime.cache import ArtifactCache

__all__ = [
    "Artifact",
    "ArtifactError",
    "compile_artifact",
    "gc_paused",
    "load_artifact",
    "print_module",
]


class ArtifactError(ValueError):
    """An artifact text that does not parse, verify or match its content hash."""


@dataclass(frozen=True)
class Artifact:
    """One compiled graph. When this process compiled it, `levels` holds the text of the
    intermediate levels ("dataflow", "units") if asked for (empty for a cache hit), and
    `module` the compiled or loaded module (`text` is its printout), so preparing it
    needs no parse. Nobody may change `module`: it is shared."""

    name: str
    text: str
    content_hash: str
    from_cache: bool = False
    levels: dict[str, str] = field(default_factory=dict)
    module: ModuleOp | None = field(default=None, compare=False, repr=False)


def print_module(module: ModuleOp) -> str:
    """MLIR text of a module, ending in one newline."""
    from io import StringIO

    from xdsl.printer import Printer

    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue().rstrip("\n") + "\n"


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: building IR allocates objects by the hundred
    thousand, and under torch (~400k live objects) each collection they trigger rescans
    them all, a third of an 8B layer's compile. The garbage goes at the next collection."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def count_ops(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk()) - 1  # the module itself is no op of the graph


@functools.cache
def compiler_fingerprint() -> str:
    """Package version + hash of the compiler's sources: what made an artifact."""
    try:
        version = metadata.version("spyre-ir")
    except metadata.PackageNotFoundError:
        version = "unknown"
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if (
            "runtime" in path.relative_to(root).parts[:1]
            or "tools" in path.relative_to(root).parts[:1]
        ):
            continue  # the runtime and tools do not shape the artifact text
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return f"{version}+{digest.hexdigest()[:16]}"


def cache_key(graph_text: str, config: SpyreConfig, exact_f32: bool) -> str:
    numerics = "exact-f32" if exact_f32 else "f32-as-f16"
    return f"{compiler_fingerprint()}\n{config!r}\n{numerics}\n{graph_text}"


def load_artifact(text: str, name: str = "<artifact>") -> ModuleOp:
    """Parse and verify an artifact and check its content hash. Raises ArtifactError
    (located diagnostics in its message) on any problem."""
    claimed = stored_hash(text)
    if claimed is None:
        raise ArtifactError(f"{name}: not an artifact: it holds no single recipe.plan with a hash")
    if claimed != content_hash(text):
        raise ArtifactError(f"{name}: content hash mismatch: the artifact was changed or damaged")
    try:
        return parse_and_verify(registry.make_context(), text, name)
    except DiagnosticError as error:
        raise ArtifactError(str(error)) from None


def compile_artifact(
    l1_module: ModuleOp,
    config: SpyreConfig = DEFAULT_CONFIG,
    name: str = "main",
    *,
    cache: ArtifactCache | None = None,
    use_cache: bool = True,
    exact_f32: bool = False,
    keep_levels: bool = False,
    record: telemetry.CompileRecord | None = None,
) -> Artifact:
    """Compile an L1 module (left unchanged) to an artifact, through the disk cache.

    `keep_levels` keeps the text of the intermediate levels (for IR dumps; a cache hit
    has none). `record` collects stage times and op counts (the caller reports it);
    without one, a record is made and reported with `telemetry.record_compile` here."""
    own_record = record is None
    rec = telemetry.CompileRecord(graph=name) if record is None else record
    graph_text = print_module(l1_module)
    rec.ir_ops["tensor"] = count_ops(l1_module)
    key = cache_key(graph_text, config, exact_f32)
    store = (cache or ArtifactCache()) if use_cache else None
    artifact = _from_cache(store, key, name, rec) if store is not None else None
    if artifact is None:
        with gc_paused():
            artifact = _compile(l1_module.clone(), config, name, exact_f32, keep_levels, rec)
        if store is not None:
            store.put(key, artifact.text)
    if own_record:
        telemetry.record_compile(rec)
    return artifact


def _from_cache(
    store: ArtifactCache, key: str, name: str, rec: telemetry.CompileRecord
) -> Artifact | None:
    """The cached artifact of `key`, parsed and verified; an entry that does not load
    is deleted (reported once by the cache) and rebuilt, never used again."""
    with telemetry.stage(name, "cache") as timer:
        text = store.get(key)
        module = None
        if text is not None:
            try:
                module = load_artifact(text, name)
            except ArtifactError as error:
                store.discard(key, f"it does not load: {' '.join(str(error).split())[:300]}")
                text = None
    rec.stage_seconds["cache"] = timer.seconds
    if text is None:
        return None
    rec.kernels = text.count("core.program @")
    return Artifact(name, text, stored_hash(text) or "", from_cache=True, module=module)


def _compile(module: ModuleOp, config: SpyreConfig, name: str, exact_f32: bool,
             keep_levels: bool, rec: telemetry.CompileRecord) -> Artifact:  # fmt: skip
    from spyre_ir import driver

    kept = driver.KeepText(only=("dataflow", "units"))
    hooks = [driver.verify, driver.RecordOps(rec), *([kept] if keep_levels else [])]
    text = driver.lower(module, config=config, f16=not exact_f32, graph=name, hooks=hooks)
    digest = stored_hash(text) if text is not None else None
    assert digest is not None and digest == content_hash(text), (
        "sealed hash does not match the text"
    )
    return Artifact(name, text, digest, levels=kept.levels, module=module)
