"""KV cache writes as row stores into the cache's image on the card, in place.

A StaticCache write (``index_copy(cache, d, positions, rows)`` or
``index_put(cache, (None,..., positions), rows)``, functionalised, its result a partition
output that AOTAutograd copies back into ``cache``) would otherwise be compiled as a
one-hot select that writes the whole cache out again (``spyre-lower-scatter``). Here:

- at compile time (:func:`rows_graph`), the partition graph given to the compiler returns
  ``rows`` in that output's place, so the kernel stores only the new rows; a use of the
  written cache inside the graph (attention reading it) keeps the write, which
  ``spyre-lower-scatter`` stores in place into the cache argument (a row-store kernel
  tied to it, spyre_ir/passes/row_store_kernel.py) when nothing else reads the cache;
- at launch (:class:`RowStore`), the positions are computed on the host from the
  partition's integer inputs (as addresses are patched), and the store of that output
  lands in the cache input's own stick image at those rows: the cache's block is the
  same from step to step and only the new rows are written (the kernel's
  ``lpddr_bytes``). Reading the old rows and writing the new ones in one kernel is safe:
  the kernel reads a written row only through the select, which replaces it.

The one-hot path stays where this cannot apply (`find_row_writes` says which): the index
is not computable on the host from integer inputs, several dims are indexed, ``rows``
does not have exactly the written region's shape and dtype, ``rows`` is a graph input or
another output, ``accumulate=True``, or the executor is not the card (the reference,
dataflow and simulator executors compile the graph as it is).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import fx

from spyre_ir.interp import versions
from spyre_ir.layout import StickLayout

aten = torch.ops.aten

__all__ = ["RowStore", "RowWrite", "catch_up", "find_row_writes", "graph_writes", "lagging_rows",
           "mark_lagging", "row_offsets", "rows_graph"]  # fmt: skip


@dataclass(frozen=True)
class RowWrite:
    """Output `output` is input `source` with `rows` (an FX node) written along `dim` at
    the positions `index` (an FX node of integer inputs, see resident.evaluate_index)."""

    output: int
    source: int
    dim: int
    index: fx.Node
    rows: fx.Node
    wrap: bool = True
    """Whether a negative position counts from the end (index_put); index_copy's is an
    error, as in torch."""

    @property
    def indices(self) -> tuple[fx.Node | None, ...]:
        return (None,) * self.dim + (self.index,)

    def checked(self, index: tuple, shape: tuple[int, ...]) -> tuple:
        """`index` (the host's positions, `evaluate_index` per dim) if every position is
        one torch accepts along `dim` of a cache of `shape`; else the IndexError torch's
        kernel raises, before anything is launched."""
        size = shape[self.dim]
        positions = np.asarray(index[self.dim]).reshape(-1)
        low = -size if self.wrap else 0
        bad = positions[(positions < low) | (positions >= size)]
        if bad.size:  # torch's words: index_put counts the dims of its index tensors
            what, dim = ("index", 0) if self.wrap else ("index_copy_(): index", self.dim)
            raise IndexError(f"{what} {int(bad[0])} is out of bounds for dimension {dim} "
                             f"with size {size}")  # fmt: skip
        return index


def find_row_writes(graph: fx.Graph) -> dict[int, RowWrite]:
    """The outputs of `graph` that are row writes into an input (module docstring)."""
    from spyre_ir.runtime.resident import _host_index

    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    position = {n: i for i, n in enumerate(placeholders)}
    outputs = list(graph.output_node().args[0])
    found: dict[int, RowWrite] = {}
    for i, node in enumerate(outputs):
        write = _row_write_of(i, node, position)
        if write is None or not _host_index(write.index, position):
            continue
        if (
            write.rows in position
            or outputs.count(write.rows)
            or any(w.rows is write.rows for w in found.values())
        ):
            continue
        found[i] = write
    return found


def graph_writes(graph: fx.Graph) -> list[RowWrite]:
    """Every row write into an input of `graph` at host-computable positions, an output
    or not (a KV write only attention reads; `output` -1 for all): their positions are
    checked on the host before a launch, as torch's kernel would."""
    from spyre_ir.runtime.resident import _host_index

    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    position = {n: i for i, n in enumerate(placeholders)}
    writes = []
    for node in graph.nodes:
        write = _row_write_of(-1, node, position, exact=False)
        if write is not None and _host_index(write.index, position):
            writes.append(write)
    return writes


def _row_write_of(i: int, node: Any, position: dict[fx.Node, int],
                  exact: bool = True) -> RowWrite | None:  # fmt: skip
    """`node` as a write of whole rows along one dim of input `cache`; unless `exact`,
    rows that broadcast to the written region count too (for the positions' check)."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return None
    args = node.args
    if node.target is aten.index_copy.default:
        cache, dim, index, rows = args[0], args[1], args[2], args[3]
    elif node.target is aten.index_put.default:
        if (len(args) > 3 and args[3]) or node.kwargs.get("accumulate"):
            return None
        cache, indices, rows = args[0], list(args[1]), args[2]
        while indices and indices[-1] is None:
            indices.pop()
        if not indices or any(x is not None for x in indices[:-1]):
            return None
        dim, index = len(indices) - 1, indices[-1]
    else:
        return None
    if cache not in position or not isinstance(index, fx.Node) or not isinstance(rows, fx.Node):
        return None
    cache_val, index_val, rows_val = (n.meta.get("val") for n in (cache, index, rows))
    if not all(isinstance(v, torch.Tensor) for v in (cache_val, index_val, rows_val)):
        return None
    dim %= cache_val.dim()
    if index_val.dim() != 1 or index_val.dtype not in (torch.int64, torch.int32):
        return None
    want = tuple(cache_val.shape[:dim]) + (index_val.shape[0],) + tuple(cache_val.shape[dim + 1 :])
    if exact and (tuple(rows_val.shape) != want or rows_val.dtype != cache_val.dtype):
        return None
    return RowWrite(
        i, position[cache], dim, index, rows, node.target is not aten.index_copy.default
    )


def rows_graph(gm: fx.GraphModule) -> fx.GraphModule:
    """`gm` with each row write's output replaced by its rows (what the card compiles);
    `gm` itself is unchanged (it stays the CPU fallback). `gm` when there is none."""
    writes = find_row_writes(gm.graph)
    if not writes:
        return gm
    graph = fx.Graph()
    remap: dict[fx.Node, fx.Node] = {}
    results = list(graph.graph_copy(gm.graph, remap))  # every node but the output
    for i, write in writes.items():
        results[i] = remap[write.rows]
    graph.output(tuple(results))
    graph.eliminate_dead_code()
    return fx.GraphModule(gm, graph)


# --------------------------------------------------------------------------- launching
def row_offsets(layout: StickLayout, shape: tuple[int, ...], index: tuple) -> np.ndarray:
    """Device element offsets (int64) of the elements of a tensor of `shape` in `layout`
    at numpy index `index` (slices and at most one integer array): the written rows'
    addresses, computed per dim as `layout.host_to_device_offsets` does, for the rows only."""
    if tuple(layout.host_shape) != tuple(shape):
        raise ValueError(f"row store: layout of {list(layout.host_shape)} for {list(shape)}")
    strides = layout.device_strides
    rank = len(shape)
    offsets = np.zeros((1,) * rank, dtype=np.int64)
    for h, size in enumerate(shape):
        x = np.arange(size, dtype=np.int64)[index[h] if h < len(index) else slice(None)]
        x = np.asarray(x, dtype=np.int64).reshape(-1) % size
        part = np.zeros(x.shape[0], dtype=np.int64)
        for j in layout.walkers(h):
            part += (x // layout.tile_factor(j)) % layout.device_sizes[j] * strides[j]
        offsets = offsets + part.reshape([-1 if k == h else 1 for k in range(rank)])
    return offsets


@dataclass(frozen=True)
class RowStore:
    """Where one output of a launch is stored: rows `index` of the kept image `image`
    (of input slot `slot`'s layout), in place, instead of a block of its own."""

    image: Any  # recipe.StickImage
    slot: Any  # recipe.Slot of the cache input
    index: tuple

    def offsets(self) -> np.ndarray:
        return row_offsets(self.slot.layout, self.slot.shape, self.index)

    def write(self, memory: Any, values: np.ndarray) -> None:
        """Store `values` (the rows as the simulator gives them: a half slot's DLFloat16
        codes) into the image: its bytes on the card and, if kept, its values as the
        simulator reads them (the next launch reads them unchanged)."""
        block = self.image.block
        device = memory.view(block.region, block.offset, self.slot.size).view(
            self.slot.device_dtype
        )
        values = np.asarray(values)
        codes = values.dtype == self.slot.device_dtype  # codes, or a non-half slot's own
        device[self.offsets()] = values if codes else self.slot.to_device_elements(values)
        kept = self.image.values
        if kept is not None:
            writeable = kept.flags.writeable  # a `written` slot's buffer stays writable
            kept.flags.writeable = True  # the image's own copy (recipe._read_input)
            kept[self.index] = values
            kept.flags.writeable = writeable
            versions.changed(kept, versions.index_bounds(self.index, kept.shape))

    def write_back(self, memory: Any) -> None:
        """Bring the image's bytes on the card up to date at these rows from its kept
        values (a kernel stored the rows into the values, `recipe._written_back`)."""
        block = self.image.block
        device = memory.view(block.region, block.offset, self.slot.size).view(
            self.slot.device_dtype
        )
        values = np.asarray(self.image.values[self.index])
        codes = values.dtype == self.slot.device_dtype
        device[self.offsets()] = values if codes else self.slot.to_device_elements(values)

    def read(self, memory: Any) -> np.ndarray:
        """The rows as the simulator gives them, read back from the image."""
        block = self.image.block
        device = memory.view(block.region, block.offset, self.slot.size).view(
            self.slot.device_dtype
        )
        elements = device[self.offsets()]
        if self.slot.element == "f16":
            from spyre_ir.interp import dlfloat16

            return np.asarray(dlfloat16.decode(elements))
        if self.slot.element == "bf16":
            from spyre_ir.runtime.recipe import _bf16_values

            return _bf16_values(elements)
        return elements.astype(self.slot.host_dtype, copy=False)


# ------------------------------------------------------------- the device tensor's rows
class _Lag:
    """A spyre tensor whose row-major bytes miss rows its kept image holds (`indices`)."""

    __slots__ = ("ref", "image", "slot", "indices")

    def __init__(self, ref: weakref.ref, image: Any, slot: Any) -> None:
        self.ref, self.image, self.slot = ref, image, slot
        self.indices: list[tuple] = []


_lagging: dict[tuple[int, int], _Lag] = {}  # (region, offset) of the tensor's block -> lag


def mark_lagging(source: torch.Tensor, store: RowStore) -> None:
    """`store` wrote rows into the kept image of spyre tensor `source` and not into its
    row-major bytes: those catch up when something next reaches them through the device
    (`catch_up`, a hook of device.device_array and device.host_view), not at every step."""
    from spyre_ir.runtime import device

    if catch_up not in device.before_access:
        device.before_access.append(catch_up)
    block = device._owner(source).block
    key = (block.region, block.offset)
    lag = _lagging.get(key)
    if lag is not None and (lag.ref() is not source or lag.image is not store.image):
        _lagging.pop(key)  # another tensor or image on this block: bring it up to date
        _catch_up(lag)
        lag = None
    if lag is None:
        drop = lambda _, key=key: _forget(key)  # noqa: E731
        lag = _lagging[key] = _Lag(weakref.ref(source, drop), store.image.share(), store.slot)
    lag.indices.append(store.index)


def _forget(key: tuple[int, int]) -> None:
    lag = _lagging.get(key)
    if lag is not None and lag.ref() is None:  # its tensor died (not a later one's lag)
        del _lagging[key]
        lag.image.free()


def lagging_rows(t: torch.Tensor) -> int:
    """How many row stores spyre tensor `t`'s row-major bytes have not caught up with."""
    from spyre_ir.runtime import device

    owner = device._owner(t)
    lag = None if owner is None else _lagging.get((owner.block.region, owner.block.offset))
    return 0 if lag is None or lag.ref() is not t else len(lag.indices)


def catch_up(block: Any) -> None:
    """Before the bytes of `block` are reached: enqueue writing the rows its tensor lags
    behind by, from the kept image (an on-card copy of those rows only)."""
    if _lagging:
        lag = _lagging.pop((block.region, block.offset), None)
        if lag is not None:
            _catch_up(lag)


def _catch_up(lag: _Lag) -> None:
    from spyre_ir import cost_model
    from spyre_ir.runtime import device

    t = lag.ref()
    if t is None:
        lag.image.free()
        return
    target = device.device_array(t)  # the lag is popped already: no recursion
    stores = [RowStore(lag.image, lag.slot, index) for index in lag.indices]
    nbytes = sum(s.offsets().size for s in stores) * lag.slot.device_dtype.itemsize
    card = lag.image.card

    def run() -> float:
        try:
            elements = target._elements()
            for store in stores:
                rows = store.read(card.memory)
                elements[store.index] = lag.slot.to_array_elements(rows, target.dtype)
        finally:
            lag.image.free()
        return cost_model.device_copy_s(nbytes, card.config)

    card.current_stream().enqueue("dma", run, "dma: a cache's written rows, kept image -> tensor",
                                  nbytes)  # fmt: skip
