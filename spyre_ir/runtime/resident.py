"""Tensors that stay on the card between launches of compiled graphs.

A compiled partition (``torch.compile(..., backend="spyre")``, card executor) runs through
:class:`CardPartition`. Each input's stick image, once staged, is kept on the card in
:data:`images` (one :class:`ResidentImages` per card) under the tensor it came from, and
later launches bind it to their slot instead of moving the data again. A kept image is
valid while its tensor is the same object (a weak reference), on the same memory
(``data_ptr``: ``param.data = other`` changes it) and at the same version
(``t._version``: ``mul_``, ``copy_`` and every in-place op bump it); it is freed when the
tensor dies or changes. So weights and buffers cross the link once, and a decode step
moves only what changed: token ids and positions in, logits out.

Results that are a new version of an input (read from the partition's FX graph):

- ``cat([input, new], dim)`` (DynamicCache growth): the result's image stays on the card
  under the result tensor, which the next step passes back in; on the host only the new
  part crosses the link (the rest is the input the host already has);
- ``index_put(input, indices, values)`` / ``index_copy`` (StaticCache writes), with
  indices that are partition inputs: only the written elements cross the link, into a
  copy of the host input. AOTAutograd then copies that result into the mutated input
  (its epilogue ``copy_``); the image is kept for the input, valid once the input holds
  exactly that value (checked against the result on the host, which costs no transfer).
  On the device (the input a spyre tensor) the written elements go straight into the
  input's memory on the card and the input itself is the result, so the epilogue's copy
  is a copy onto itself, which the device skips;
- any other result of an input's shape and dtype (a whole-tensor ``copy_`` or ``mul_`` of
  a buffer): it crosses whole, and its image is kept for that input as above.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import fx

from spyre_ir.runtime.recipe import Fetch, PreparedRecipe, Slot, StickImage
from spyre_ir.runtime.row_store import (
    RowStore,
    RowWrite,
    find_row_writes,
    graph_writes,
    mark_lagging,
)

aten = torch.ops.aten

__all__ = ["CardPartition", "ResidentImages", "images", "note_copy_onto_itself"]


# ----------------------------------------------------------------------------- images
def _image_key(slot: Slot, pad: float) -> tuple:
    return (slot.layout, slot.element, slot.size, repr(float(pad)))


class _Entry:
    """The images of one tensor, valid at (data_ptr, version); and maybe a `pending` image,
    valid instead once the tensor equals its mirror (a host tensor, unchanged since)."""

    __slots__ = ("ref", "data_ptr", "version", "images", "pending", "self_copy")

    def __init__(self, ref: weakref.ref, t: torch.Tensor) -> None:
        self.ref = ref
        self.data_ptr, self.version = t.data_ptr(), t._version
        self.images: dict[tuple, StickImage] = {}
        self.pending: tuple[StickImage, torch.Tensor, int] | None = None
        # a spyre tensor a launch wrote in place: AOTAutograd's write-back `t.copy_(t)`
        # is due, which bumps the version without reaching the device (torch returns
        # early for a copy onto itself), so one bump is taken as that copy
        self.self_copy = False

    def free(self) -> None:
        for image in self.images.values():
            image.free()
        self.images.clear()
        self.drop_pending()

    def drop_pending(self) -> None:
        if self.pending is not None:
            self.pending[0].free()
            self.pending = None


class ResidentImages:
    """Stick images of tensors kept on one card, by tensor (see the module docstring)."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        # id(t) -> (weak t, t's version, source, region): t holds source's elements
        # [0, region) and zeros elsewhere (a bucketed cache moved to a larger capacity)
        self._grown: dict[int, tuple[weakref.ref, int, torch.Tensor, tuple[int, ...]]] = {}

    @property
    def nbytes(self) -> int:
        """Bytes of the card held by kept images (pending ones included)."""
        return sum(sum(i.size for i in e.images.values()) + (e.pending[0].size if e.pending else 0)
                   for e in self._entries.values())  # fmt: skip

    def _valid_entry(self, t: torch.Tensor) -> _Entry | None:
        entry = self._entries.get(id(t))
        if entry is None or entry.ref() is not t:
            return None
        if t.data_ptr() == entry.data_ptr and t._version == entry.version:
            return entry
        if t.data_ptr() == entry.data_ptr and entry.self_copy and t._version == entry.version + 1:
            entry.version, entry.self_copy = t._version, False
            return entry
        if entry.pending is not None and t.data_ptr() == entry.data_ptr:
            image, mirror, version = entry.pending
            if mirror._version == version and t.device.type != "spyre" and torch.equal(t, mirror):
                entry.pending = None  # the expected write-back happened: the image is t now
                for old in entry.images.values():
                    old.free()
                entry.images = {_image_key_of(image): image}
                entry.version = t._version
                return entry
        self._drop(id(t))
        return None

    def lookup(self, t: torch.Tensor, slot: Slot, pad: float) -> StickImage | None:
        entry = self._valid_entry(t)
        return None if entry is None else entry.images.get(_image_key(slot, pad))

    def store(
        self, t: torch.Tensor, image: StickImage, *, expect: torch.Tensor | None = None
    ) -> None:
        """Keep `image` for `t` as it is now; with `expect`, for `t` once it equals the host
        tensor `expect` (a value someone may copy into `t`, as AOTAutograd's epilogue does)."""
        entry = self._valid_entry(t)
        if entry is None:
            key = id(t)
            self._drop(key)  # a stale entry under a reused id
            entry = _Entry(weakref.ref(t, lambda _, key=key: self._drop(key)), t)
            self._entries[key] = entry
        if expect is not None:
            entry.drop_pending()
            entry.pending = (image, expect, expect._version)
            return
        old = entry.images.pop(_image_key_of(image), None)
        if old is not None and old is not image:
            old.free()
        entry.images[_image_key_of(image)] = image

    def written_in_place(self, t: torch.Tensor, image: StickImage, result: torch.Tensor) -> None:
        """`image`, `t`'s and bound to a launch, had rows written in place (row_store.py):
        it holds `result` now (a host tensor), no longer `t`. It is kept for `result` (a
        bucketed graph passes its padded result back in) and for `t` once `t` equals
        `result` (AOTAutograd copies it into `t`); whoever else held it, or held another
        image of `t`, holds an old value: dropped."""
        image.share()  # this method's holds, taken before the old holders let go
        image.share()
        self._drop_holders(image)
        self.forget(t)
        self.store(result, image)
        key = id(t)
        entry = _Entry(weakref.ref(t, lambda _, key=key: self._drop(key)), t)
        self._entries[key] = entry
        entry.pending = (image, result, result._version)

    def _drop_holders(self, image: StickImage, sparing: torch.Tensor | None = None) -> None:
        """Drop the entry of every tensor but `sparing` that holds `image`, kept or
        pending: after an in-place write its value is old."""
        for key, entry in list(self._entries.items()):
            held = list(entry.images.values()) + ([entry.pending[0]] if entry.pending else [])
            if (sparing is None or entry.ref() is not sparing) and any(i is image for i in held):
                self._drop(key)

    def grown(self, t: torch.Tensor, source: torch.Tensor, region: Sequence[int]) -> None:
        """`t`, as it is now, is `source`'s elements [0, region) with zeros elsewhere (the
        host built it so): a launch that needs `t`'s image may copy it on the card from an
        image of `source` (`grown_from`) instead of staging `t` over the link."""
        key = id(t)
        drop = lambda _, key=key: self._grown.pop(key, None)  # noqa: E731
        self._grown[key] = (weakref.ref(t, drop), t._version, source, tuple(region))

    def grown_from(
        self, t: torch.Tensor, slot: Slot, pad: float
    ) -> tuple[StickImage, tuple] | None:
        """A kept image to copy `t`'s image for `slot` from, and the region to copy (see
        `grown`); None if `t` was not grown, has changed since, or its source has no
        valid image of that element type and padding. Found once: the source tensor is
        let go (the caller shares the image it copies from)."""
        found = self._grown.get(id(t))
        if found is None or found[0]() is not t or found[1] != t._version:
            return None
        entry = self._valid_entry(found[2])
        images = [] if entry is None else list(entry.images.values())
        for image in images:
            if image.element == slot.element and repr(float(image.pad)) == repr(float(pad)):
                del self._grown[id(t)]
                return image, found[3]
        return None

    def written_on_both(self, t: torch.Tensor, image: StickImage) -> None:
        """Host tensor `t` and `image`, its kept image bound to a launch, had the same rows
        written in place: the image is still `t`'s, through AOTAutograd's write-back of `t`
        onto itself (`_Entry.self_copy`); whoever else held it holds an old value: dropped."""
        self._drop_holders(image, sparing=t)
        entry = self._entries.get(id(t))
        mine = entry is not None and entry.ref() is t
        if not mine or entry.images.get(_image_key_of(image)) is not image:
            self.forget(t)  # its images (if any) were not the one written
            return
        for key in [k for k, i in entry.images.items() if i is not image]:
            entry.images.pop(key).free()  # other layouts of t hold its old rows
        entry.drop_pending()
        entry.version, entry.self_copy = t._version, True

    def written_on_device(self, t: torch.Tensor) -> None:
        """Spyre tensor `t`'s kept image was written in place by a launch: still `t`'s,
        through AOTAutograd's write-back of `t` onto itself (see `_Entry.self_copy`)."""
        entry = self._valid_entry(t)
        if entry is not None:
            entry.self_copy = True

    def copied_onto_itself(self, t: torch.Tensor) -> None:
        """`t.copy_(t)` is about to bump `t`'s version without changing it."""
        entry = self._valid_entry(t)
        if entry is not None:
            entry.version += 1

    def forget(self, t: torch.Tensor) -> None:
        """Drop `t`'s images (a launch that staged them failed)."""
        if id(t) in self._entries and self._entries[id(t)].ref() is t:
            self._drop(id(t))

    def _drop(self, key: int) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry.free()

    def clear(self) -> None:
        """Free every kept image (the tensors cross the link again on their next use)."""
        for key in list(self._entries):
            self._drop(key)
        self._grown.clear()


def _image_key_of(image: StickImage) -> tuple:
    return (image.layout, image.element, image.size, repr(float(image.pad)))


_images: dict[int, tuple[weakref.ref, ResidentImages]] = {}


def images(card: Any = None) -> ResidentImages:
    """The kept images of `card` (the process-wide card by default)."""
    from spyre_ir.runtime.card import get_card

    card = card or get_card()
    found = _images.get(id(card))
    if found is None or found[0]() is not card:
        found = _images[id(card)] = (weakref.ref(card), ResidentImages())
    return found[1]


def note_copy_onto_itself(t: torch.Tensor) -> None:
    """The device's ``copy_`` of a tensor onto itself (a no-op) calls this."""
    for _, kept in list(_images.values()):
        kept.copied_onto_itself(t)


# --------------------------------------------------------------------- what results are
@dataclass(frozen=True)
class Growth:
    """Result = cat([input `source`, new], `dim`): the first `prefix` along dim are the input."""

    source: int
    dim: int
    prefix: int


@dataclass(frozen=True)
class IndexWrite:
    """Result = input `source` with the elements at `index` written; `index` holds, per
    leading dim, None (all of it) or the FX node of the indices, which the host computes
    from the partition's integer inputs (`evaluate_index`)."""

    source: int
    index: tuple[fx.Node | None, ...]


@dataclass(frozen=True)
class WholeWrite:
    """A result of input `source`'s shape and dtype: maybe a new value for it."""

    source: int


@dataclass(frozen=True)
class Fresh:
    """A new cache-like tensor (built by an index write, cat or scatter of no input): the
    next call may pass it back in."""


Write = Growth | IndexWrite | WholeWrite | Fresh | None
_CACHE_BUILDERS = {aten.index_put.default, aten.index_copy.default, aten.cat.default,
                   aten.slice_scatter.default, aten.select_scatter.default, aten.copy.default}  # fmt: skip


def analyse_results(graph: fx.Graph) -> list[Write]:
    """What each result of a partition graph is, in terms of its inputs."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    position = {n: i for i, n in enumerate(placeholders)}
    results = []
    for node in graph.output_node().args[0]:
        results.append(_write_of(node, position) if isinstance(node, fx.Node) else None)
    return results


def _host_index(node: Any, position: dict[fx.Node, int]) -> bool:
    """Whether the host can compute index `node` from integer inputs of the partition."""
    if node is None:
        return True
    if not isinstance(node, fx.Node):
        return False
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor) or val.dtype.is_floating_point or val.numel() > 1 << 16:
        return False
    if node in position:
        return True
    return node.op == "call_function" and all(
        _host_index(a, position) for a in node.all_input_nodes
    )


def _write_of(node: fx.Node, position: dict[fx.Node, int]) -> Write:
    target, args = node.target, node.args
    if target is aten.cat.default and len(args[0]) == 2 and args[0][0] in position:
        val = args[0][0].meta.get("val")
        dim = (args[1] if len(args) > 1 else 0) % val.dim()
        return Growth(position[args[0][0]], dim, int(val.shape[dim]))
    if (target is aten.index_put.default and args[0] in position and not (len(args) > 3 and args[3])
            and not node.kwargs.get("accumulate") and all(_host_index(i, position) for i in args[1])):  # fmt: skip
        return IndexWrite(position[args[0]], tuple(args[1]))
    if target is aten.index_copy.default and args[0] in position and _host_index(args[2], position):
        return IndexWrite(
            position[args[0]], (None,) * (args[1] % args[0].meta["val"].dim()) + (args[2],)
        )
    val = node.meta.get("val")
    candidates = [args[0]] if args and isinstance(args[0], fx.Node) else []
    for source in [*candidates, *position]:
        other = source.meta.get("val")
        if (source in position and isinstance(val, torch.Tensor) and isinstance(other, torch.Tensor)
                and val.shape == other.shape and val.dtype == other.dtype):  # fmt: skip
            return WholeWrite(position[source])
    return Fresh() if target in _CACHE_BUILDERS else None


def evaluate_index(node: fx.Node | None, args: Sequence[torch.Tensor],
                   position: dict[fx.Node, int]) -> Any:  # fmt: skip
    """The host's numpy value of index `node` (see `_host_index`), or a full slice."""
    if node is None:
        return slice(None)
    values: dict[fx.Node, Any] = {}

    def value(n: Any) -> Any:
        if not isinstance(n, fx.Node):
            return n
        if n not in values:
            if n in position:
                t = args[position[n]]
                values[n] = t.cpu() if t.device.type == "spyre" else t.detach()
            else:
                call_args, call_kwargs = torch.fx.node.map_arg((n.args, n.kwargs), value)
                if "device" in call_kwargs:  # the index is computed on the host
                    call_kwargs = {**call_kwargs, "device": torch.device("cpu")}
                values[n] = n.target(*call_args, **call_kwargs)
        return values[n]

    result = value(node)
    return (result.cpu() if result.device.type == "spyre" else result).numpy()


# ---------------------------------------------------------------------------- running
_HOST_NUMPY = {torch.float16: np.float16, torch.float32: np.float32, torch.int64: np.int64,
               torch.int32: np.int32, torch.bool: np.bool_}  # fmt: skip


class CardPartition:
    """One compiled partition on the card, its inputs kept there between calls."""

    def __init__(self, name: str, artifact: Any, graph: fx.GraphModule,
                 write_backs: dict[int, int] | None = None) -> None:  # fmt: skip
        self.name, self.artifact = name, artifact
        self.outputs = [n.meta["val"] for n in graph.graph.output_node().args[0]]
        self.writes = analyse_results(graph.graph)
        # results compiled as their new rows (backend: row_store.rows_graph), stored in place
        self.row_writes = find_row_writes(graph.graph)
        # index writes whose result the caller only copies back into their input
        # (backend._write_back_outputs): a host input takes the rows in place and is the result
        sources = {i: w.source for i, w in enumerate(self.writes) if isinstance(w, IndexWrite)}
        sources.update({i: w.source for i, w in self.row_writes.items()})
        self.in_place = {i for i, a in (write_backs or {}).items() if sources.get(i) == a}
        self.graph_writes = graph_writes(graph.graph)  # positions checked before a launch
        self.only_writes = _only_writes(graph.graph, self.graph_writes)
        self.position = {
            n: i for i, n in enumerate(n for n in graph.graph.nodes if n.op == "placeholder")
        }
        self._prepared: PreparedRecipe | None = None
        self.prepared()  # at compile time (the backend times it as its "prepare" stage)

    def prepared(self) -> PreparedRecipe:
        from spyre_ir.runtime.card import get_card

        card = get_card()
        if self._prepared is None or self._prepared.card is not card:
            from spyre_ir.sim import replay

            self._prepared = PreparedRecipe.from_artifact(self.artifact, card=card)
            replay.freeze(self._prepared.module)  # launched as compiled, never rewritten
        return self._prepared

    def __call__(self, args: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        recipe = self.prepared()
        args = list(args)  # the callers' tensors themselves: images are kept by identity
        if len(args) != len(recipe.inputs) or len(recipe.outputs) != len(self.outputs):
            raise RuntimeError(f"spyre: {self.name} takes {len(recipe.inputs)} inputs and gives "
                               f"{len(recipe.outputs)} results; called with {len(args)}")  # fmt: skip
        for w in self.graph_writes:
            w.checked(tuple(evaluate_index(n, args, self.position) for n in w.indices),
                      tuple(args[w.source].shape))  # fmt: skip
        kept = images(recipe.card)
        bound, staged = self._bind(recipe, kept, args)
        on_card = any(t.device.type == "spyre" for t in args)
        stores = {i: RowStore(bound[w.source], recipe.inputs[w.source],
                              tuple(evaluate_index(n, args, self.position) for n in w.indices))
                  for i, w in self.row_writes.items()}  # fmt: skip
        plans = [
            self._row_plan(slot, self.row_writes[i], stores[i], args)
            if i in stores
            else self._plan(recipe, slot, i, args, on_card)
            for i, slot in enumerate(recipe.outputs)
        ]
        stream = recipe.card.current_stream()
        written_rows = {w.source: [tuple(evaluate_index(n, args, self.position) for n in w.indices)]
                        for w in self.only_writes}  # fmt: skip
        made = recipe.launch_resident(
            bound, [p.fetch for p in plans], [p.keep for p in plans], stream, stores, written_rows
        )
        tied = {slot.index: slot.tied for slot in recipe.outputs
                if recipe.tied_source(slot, bound) is not None}  # fmt: skip
        try:
            stream.synchronize()
        except Exception:  # nothing of this launch may be taken for data later
            for t in staged:
                kept.forget(t)
            for source in [w.source for w in self.row_writes.values()] + list(tied.values()):
                kept.forget(args[source])  # maybe written in part
            for image in made:
                if image is not None:
                    image.free()
            raise
        results = []
        for i, (plan, image) in enumerate(zip(plans, made)):
            result = plan.finish()
            if image is not None:
                self._keep(kept, i, args, result, image)
            elif i in tied:  # the source's bound image, written in place, holds it
                source = args[tied[i]]
                if result is source:
                    kept.written_on_device(result)
                else:
                    kept.written_in_place(source, bound[tied[i]], result)
            elif i in stores and result is not args[self.row_writes[i].source]:
                kept.written_in_place(args[self.row_writes[i].source], stores[i].image, result)
            elif i in stores and result.device.type != "spyre":  # rows written on both sides
                kept.written_on_both(result, stores[i].image)
            elif i in stores:  # a spyre tensor: its kept image holds the rows, it lags
                mark_lagging(result, stores[i])
                kept.written_on_device(result)
            results.append(result)
        return tuple(results)

    def _bind(self, recipe: PreparedRecipe, kept: ResidentImages,
              args: list[torch.Tensor]) -> tuple[list[StickImage], list[torch.Tensor]]:  # fmt: skip
        """Each input's kept image for its slot; those without one are staged now, all in
        one transfer, and kept. Also returns the tensors staged."""
        bound: list[StickImage | None] = []
        missing: dict[tuple, tuple[int, torch.Tensor]] = {}  # one staging per tensor and image
        wants: list[tuple] = []
        for slot, t in zip(recipe.inputs, args):
            pad = recipe.input_pads.get(slot.name, 0.0)
            image = kept.lookup(t, slot, pad)
            bound.append(image)
            key = (id(t), _image_key(slot, pad))
            wants.append(key)
            if image is None:
                missing.setdefault(key, (slot.index, t))
        stream = recipe.card.current_stream()
        grown = {}  # grown on the card from a kept image of a smaller tensor, no transfer
        for key, (index, t) in list(missing.items()):
            slot = recipe.inputs[index]
            source = kept.grown_from(t, slot, recipe.input_pads.get(slot.name, 0.0))
            if source is not None:
                grown[key] = recipe.stage_grown(index, *source, stream)
                kept.store(t, grown[key])
        uploads = {k: v for k, v in missing.items() if k not in grown}
        new = recipe.stage_many([(index, _runtime_value(t)) for index, t in uploads.values()],
                                stream)  # fmt: skip
        staged = {**grown, **dict(zip(uploads, new))}
        for (_, t), image in zip(uploads.values(), new):
            kept.store(t, image)
        bound = [image or staged[key] for image, key in zip(bound, wants)]
        return bound, [t for _, t in missing.values()]

    def _keep(self, kept: ResidentImages, i: int, args: list[torch.Tensor], result: torch.Tensor,
              image: StickImage) -> None:  # fmt: skip
        """Keep result i's image for whoever holds that value next: the result itself (a
        grown or new cache, the next call's input) and, for a new value of an input, that
        input once it holds it (AOTAutograd copies the result into it)."""
        write = self.writes[i]
        source = args[write.source] if isinstance(write, (Growth, IndexWrite, WholeWrite)) else None
        if result is source:  # the input was written in place on the card
            kept.store(result, image)
            kept.written_on_device(result)
            return
        kept.store(result, image)
        if isinstance(write, (IndexWrite, WholeWrite)) and source.device.type != "spyre":
            kept.store(source, image.share(), expect=result)

    def _plan(self, recipe: PreparedRecipe, slot: Slot, i: int, args: list[torch.Tensor],
              on_card: bool) -> _ResultPlan:  # fmt: skip
        like, write = self.outputs[i], self.writes[i]
        keep = write is not None
        if isinstance(write, Fresh) or write is None:
            return self._whole(recipe, slot, like, on_card, keep)
        source = args[write.source]
        exact = like.dtype in _HOST_NUMPY and not on_card  # a host array of like's dtype exists
        if isinstance(write, IndexWrite) and source.dtype == like.dtype:
            index = tuple(evaluate_index(n, args, self.position) for n in write.index)
            if source.device.type == "spyre":
                from spyre_ir.runtime import device

                return _ResultPlan(Fetch(device.device_array(source), index), True, lambda: source)
            if exact and source.device.type == "cpu" and i in self.in_place:
                plan = _region_plan(slot, source.detach(), index, like)  # fills source's memory

                def in_source() -> torch.Tensor:
                    plan.finish()
                    return source

                return _ResultPlan(plan.fetch, plan.keep, in_source)
            if exact and source.device.type == "cpu":
                host = source.detach().clone(memory_format=torch.contiguous_format)
                return _region_plan(slot, host, index, like)
        if isinstance(write, Growth) and exact and source.device.type == "cpu":
            host = torch.empty(like.shape, dtype=like.dtype)
            prefix = (slice(None),) * write.dim
            host[prefix + (slice(0, write.prefix),)] = source.detach()
            return _region_plan(slot, host, prefix + (slice(write.prefix, None),), like)
        return self._whole(recipe, slot, like, on_card, keep)

    def _row_plan(self, slot: Slot, write: RowWrite, store: RowStore,
                  args: list[torch.Tensor]) -> _ResultPlan:  # fmt: skip
        """A row write's result: its rows cross back (the cache's image keeps them); on the
        device they land in the input's memory, which is the result; on the host in a
        copy of the input (AOTAutograd copies it into the input)."""
        source, like = args[write.source], self.outputs[write.output]
        if source.device.type == "spyre":  # its row-major bytes catch up when reached
            return _ResultPlan(None, False, lambda: source)
        from spyre_ir.runtime.backend import _to_torch

        stage = np.empty(slot.shape, slot.host_dtype)
        rows_like = write.rows.meta["val"]
        in_place = write.output in self.in_place and source.dtype == like.dtype

        def finish() -> torch.Tensor:
            host = (source.detach() if in_place
                    else source.detach().clone(memory_format=torch.contiguous_format))  # fmt: skip
            rows = _to_torch(stage, rows_like, f"the written rows of {self.name}")
            host[tuple(torch.from_numpy(np.asarray(x)) if not isinstance(x, slice) else x
                       for x in store.index)] = rows  # fmt: skip
            return source if in_place else _restride(host, like)

        return _ResultPlan(Fetch(stage), False, finish)

    def _whole(self, recipe: PreparedRecipe, slot: Slot, like: torch.Tensor, on_card: bool,
               keep: bool) -> _ResultPlan:  # fmt: skip
        if on_card:
            from spyre_ir.runtime import device
            from spyre_ir.runtime.eager import _with_strides

            array = recipe.card.empty(slot.shape, slot.array_dtype)  # f16: IEEE, as on the device

            def on_device() -> torch.Tensor:
                bits_of_bf16 = like.dtype == torch.bfloat16 and array.dtype == np.uint16
                result = device.tensor_from_array(array, torch.bfloat16 if bits_of_bf16 else None)
                return _with_strides(
                    result if result.dtype == like.dtype else result.to(like.dtype), like
                )

            return _ResultPlan(Fetch(array), keep, on_device)
        from spyre_ir.runtime.backend import _to_torch

        out = np.empty(slot.shape, slot.host_dtype)
        return _ResultPlan(
            Fetch(out), keep, lambda: _to_torch(out, like, f"a result of {self.name}")
        )


def _only_writes(graph: fx.Graph, writes: list[RowWrite]) -> list[RowWrite]:
    """The writes of `writes` that are all that can change their input in a launch: the
    only write into it and the input's only use (so the in-place store the card makes of
    it, if any, writes exactly those rows: `launch_resident(written_rows=)`)."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    by_source: dict[int, list[RowWrite]] = {}
    for w in writes:
        by_source.setdefault(w.source, []).append(w)
    return [ws[0] for source, ws in by_source.items()
            if len(ws) == 1 and len(placeholders[source].users) == 1]  # fmt: skip


def _region_plan(slot: Slot, host: torch.Tensor, index: Any, like: torch.Tensor) -> _ResultPlan:
    """Fetch only `index` of the result into `host` (which holds the rest already): the
    elements land in a staging array of the simulator's dtype, then take like's dtype."""
    stage = np.empty(slot.shape, slot.host_dtype)

    def finish() -> torch.Tensor:
        host.numpy()[index] = stage[index]
        return _restride(host, like)

    return _ResultPlan(Fetch(stage, index), True, finish)


@dataclass(frozen=True)
class _ResultPlan:
    fetch: Fetch | None
    keep: bool
    finish: Any  # () -> the result tensor, once the launch has run


def _runtime_value(t: torch.Tensor) -> Any:
    """What the recipe stages from: a DeviceArray for a spyre tensor, else a host array."""
    from spyre_ir.runtime import device
    from spyre_ir.runtime.backend import _to_numpy

    t = t.detach()
    return device.device_array(t) if t.device.type == "spyre" else _to_numpy(t)


def _restride(host: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    if host.numel() <= 1 or host.stride() == like.stride():
        return host
    return torch.empty_strided(like.shape, like.stride(), dtype=like.dtype).copy_(host)
