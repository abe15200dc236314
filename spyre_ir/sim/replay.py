"""Replay: a program's second run skips what cannot change.

A `core.program`'s control flow and timing do not depend on tensor values: loop bounds,
branch conditions, slot choices and box offsets are index arithmetic over core ids,
constants and loop counters (the program's only arguments besides its memories are the
core ids), and every instruction's duration is a function of its shapes and offsets.
Only the numbers in LX and LPDDR5 depend on the data. So the first run of a program
records, in the order the scheduler ran them, each instruction's numerics (the handler,
its resolved operands and the boxes it cut), next to the timing it found; a later run
of the same, unchanged program on the same card configuration replays the numerics in
that order on the new tensors and reuses the timing, without the index arithmetic,
the scheduler or the cost model. The results are those of a full run, bit for bit
(tested); a recipe launched again, an eager op called again, or a benchmark's second
repetition are replays.

A recording is kept per program op, in a cache bounded by bytes (least recently used
first out; see `_RECORDINGS`), and checked
against the program's ops, operands and attributes by identity, so a program that was
rewritten since is recorded anew. Runs that check races record nothing. That check walks
the whole program, which costs as much host time as a small decode step's numerics; a
module that its owner promises never to rewrite (`freeze`: a prepared recipe's, read only
by contract) is not walked again.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Operation

from spyre_ir.byte_lru import ByteLRU
from spyre_ir.dialects import dataflow as D
from spyre_ir.hardware import SpyreConfig
from spyre_ir.interp import versions
from spyre_ir.interp.dlfloat16 import decode
from spyre_ir.interp.kernel_memory import Box
from spyre_ir.interp.machine import DdrMemory, KernelMachine, LxRoot
from spyre_ir.interp.tensor import InterpreterError
from spyre_ir.sim import lpddr


def _fingerprint(program: Operation) -> tuple:
    """Everything a rewrite of `program` would change, as objects compared by
    identity (held, so their ids cannot be reused while the recording lives)."""
    parts: list[object] = []
    for op in program.walk():
        parts.append(op)
        parts.extend(op.operands)
        parts.extend(op.properties.values())
        parts.extend(op.attributes.values())
    return tuple(parts)


@dataclass
class Step:
    """One instruction's numerics: its handler's `function(program, op, operands)`,
    with the memories of the recorded run at `memory_slots` (operand position,
    argument position) swapped for the new run's."""

    function: Callable[..., list]
    """The handler's function, called with the replaying run's `_Program` as self."""
    op: Operation
    operands: list
    memory_slots: tuple[tuple[int, int], ...]
    boxes: tuple
    positions: tuple[tuple[int, int], ...] = ()
    """(dim, k) per offset of this store that is the k-th recorded runtime position."""

    def boxes_at(self, positions: list[np.ndarray]) -> tuple:
        """The store's box with its offsets at this run's positions."""
        (box,) = self.boxes
        offsets = list(box.offsets)
        for d, k in self.positions:
            offsets[d] = positions[k]
        return (Box(offsets, box.extents, box.shape, box.cores),)


@dataclass
class Recording:
    """What a program's first run leaves for its later runs on `config`."""

    config: SpyreConfig
    fingerprint: tuple
    steps: list[Step] = field(default_factory=list)
    buffers: list[tuple[LxRoot, tuple[int, ...], np.dtype]] = field(default_factory=list)
    """The program's LX buffers: each gets a fresh zeroed array for a replay, as a run
    allocates them, and lets it go afterwards (a recording holds no tensor data)."""
    tiles: dict = field(default_factory=dict)
    """Tile-op implementations of the program's compute ops (`spyre_ir.interp.tile_ops.TileOp`)."""
    timing: dict = field(default_factory=dict)
    """The program's timing results, as `_Program` attributes."""
    traced: bool = False
    positions: list[tuple[Operation, int, object]] = field(default_factory=list)
    """Each `dataflow.position` the run read: (the op, the argument position of its
    memory, its index operand); a replay reads them again (`positions_now`)."""

    def positions_now(self, machine: KernelMachine, memories: Sequence[object]) -> list:
        """This run's runtime positions, checked as a first run checks them."""
        values = []
        for op, j, index in self.positions:
            try:
                values.append(machine.position(op, [memories[j], index])[0])
            except InterpreterError as error:
                raise machine.error(op, str(error)) from None
        return values

    _places: tuple[list[tuple[LxRoot, tuple[int, ...], np.dtype, slice]], int] | None = None

    def zero_buffers(self) -> None:
        """Give each LX buffer a fresh zeroed array, as a run allocates them: views of
        one zeroed block (a decode step replays ~40 programs of ~10 buffers each)."""
        if self._places is None:
            places, end = [], 0
            for root, shape, dtype in self.buffers:
                nbytes = math.prod(shape) * dtype.itemsize
                places.append((root, shape, dtype, slice(end, end + nbytes)))
                end += -(-nbytes // 64) * 64  # the next one aligned to 64 bytes
            self._places = (places, end)
        places, end = self._places
        block = np.zeros(end, np.uint8)
        for root, shape, dtype, part in places:
            root.reset(block[part].view(dtype).reshape(shape))


_STEP_BYTES = 1024
_OP_BYTES = 2048
"""Estimated host bytes of one recorded step (its Step, operand list and boxes), and of
one op of the module a recording keeps alive (an xDSL op with its operands, uses,
attributes and location); measured with tests/test_device_host_memory.py."""


def recording_bytes(program: Operation, recording: Recording) -> int:
    """An estimate of the host memory a recording holds (for the bounded cache): its
    steps, any arrays among their operands, and the program's ops it keeps alive.

    Only the program's own ops: the rest of its module belongs to the module's other
    programs (and to the compiled artifact that holds the module). Charging each
    recording the whole module counted a module once per program: a decode graph's
    ~80 recordings then overflowed the bound, evicted each other every step and were
    recorded again, with a walk of the whole module each time."""
    ops = sum(1 for _ in program.walk())
    arrays = sum(v.nbytes for step in recording.steps for v in step.operands
                 if isinstance(v, np.ndarray))  # fmt: skip
    return _STEP_BYTES * (len(recording.steps) + len(recording.buffers)) + _OP_BYTES * ops + arrays


# program op -> its recording. Not a WeakKeyDictionary: a recording refers to its program
# (the fingerprint, the steps' ops), so a weak key would never die and the recordings of
# every program ever run would stay. A bounded LRU (SPYRE_HOST_CACHE_MB, spyre_ir/byte_lru.py)
# keeps the recent ones; `clear()` (torch.spyre.memory.empty_cache) drops them all.
_RECORDINGS: ByteLRU[Operation, Recording] = ByteLRU(recording_bytes)


def clear() -> None:
    """Forget every recording (later runs are first runs again) and every decoded tile."""
    _RECORDINGS.clear()
    _TILES.clear()


def held_bytes() -> int:
    return _RECORDINGS.nbytes + _TILES.nbytes


# ------------------------------------------------------- decoded tiles of declared tensors
#
# A decode step loads every weight tile from its DLFloat16 codes and decodes it, every
# step, though the weights never change: two fifths of a replay's host time; and the
# tiles of a KV cache, of which one row changes a step. A tensor whose changes are
# announced (`spyre_ir.interp.versions`: the runtime's kept images, read-only weights and
# written caches alike) has its decoded tiles kept between replays, one per recorded box,
# each good until a change touches its box; an LX buffer a whole tile lands in takes the
# kept array itself (read-only; a later write copies it first).


def _held_bytes(array: np.ndarray) -> int:
    """The bytes `array` holds: its base's (a broadcast or transposed view of one)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array.nbytes


class _Kept:
    """A decoded tile of `source` at `number` (its version then): core c's part holds
    the elements [lows[c], highs[c]) of `source` (permuted by `perm`); `bounds` covers
    every core's."""

    __slots__ = ("source", "number", "lows", "highs", "bounds", "tile", "handed")

    def __init__(self, source: np.ndarray, number: int, box: Box, tile: np.ndarray):
        self.source, self.number, self.tile = weakref.ref(source), number, tile
        self.handed = _replays[0]  # the replay that last took it (its LX may hold it)
        cores = tile.shape[0]
        self.lows = np.zeros((cores, len(box.extents)), np.int64)  # (a rank-0 box: no dims)
        for d, offset in enumerate(box.offsets):
            self.lows[:, d] = offset
        self.highs = self.lows + np.asarray(box.extents, np.int64)
        self.bounds = versions.box_bounds(box.offsets, box.extents, box.shape)

    def patched(self, source: np.ndarray, changes: list[versions.Bounds],
                perm: Sequence[int]) -> np.ndarray | None:  # fmt: skip
        """The tile with the elements `changes` touched decoded again from `source`
        (the card's codes): in place, or a copy if LX buffers of this replay may hold
        the old one (a replay's LX lets its tiles go when it ends). None for a tile the
        cores share (a broadcast of one decoded box)."""
        if 0 in self.tile.strides:
            return None
        tile = self.tile.copy() if self.handed == _replays[0] else self.tile
        tile.flags.writeable = True
        for change in reversed(changes):  # earliest first (the latest wins where they meet)
            # the changed elements that any core holds, decoded once
            first = [max(c[0], b[0]) for c, b in zip(change, self.bounds)]
            region = tuple(slice(f, min(c[1], b[1])) for f, c, b in zip(first, change, self.bounds))
            values = decode(source[region])
            lo = np.maximum(self.lows, [c[0] for c in change])
            hi = np.minimum(self.highs, [c[1] for c in change])
            for core in np.flatnonzero((lo < hi).all(axis=1)):
                part = values[
                    tuple(slice(a - f, b - f) for a, b, f in zip(lo[core], hi[core], first))
                ]
                local = [
                    slice(a - o, b - o) for a, b, o in zip(lo[core], hi[core], self.lows[core])
                ]
                if perm:
                    part, local = part.transpose(perm), [local[p] for p in perm]
                tile[(core, *local)] = part
        tile.flags.writeable = False
        return tile


_replays = [0]
"""How many replays began (`begin_replay`)."""


def begin_replay() -> None:
    """A replay begins: the tiles it takes may land in its LX buffers."""
    _replays[0] += 1


_TILES: ByteLRU[object, _Kept] = ByteLRU(
    lambda box, kept: _held_bytes(kept.tile) + _STEP_BYTES, cold_when_full=True
)
"""A recorded box -> its decoded tile (a decode step walks its tiles in a cycle: an 8B-shaped
layer's are larger than the default bound, so a full cache takes new ones in cold)."""


def cached_tile(box: Box, source: np.ndarray, decode_box: Callable[[], np.ndarray],
                perm: Sequence[int]) -> np.ndarray | None:  # fmt: skip
    """The tile `decode_box()` gives for `box` of `source` (DLFloat16 codes, the tile
    permuted by `perm`), kept (read-only) between replays; None when `source` is not
    declared (nobody announces its changes)."""
    version = versions.version_of(source)
    if version is None:
        return None
    kept = _TILES.get(box)
    if kept is not None and kept.source() is source:
        changes = version.changes_since(kept.number, kept.bounds)
        tile = kept.tile if changes == [] else None
        if changes:  # a KV cache: a row or two of its tiles changed since
            tile = kept.tile = kept.patched(source, changes, perm)
        if tile is not None:
            kept.number, kept.handed = version.number, _replays[0]
            return tile
    tile = decode_box()  # a new array, or a read-only broadcast of one (cores sharing a box)
    tile.flags.writeable = False
    _TILES.put(box, _Kept(source, version.number, box, tile))
    return tile


_FROZEN: weakref.WeakSet[Operation] = weakref.WeakSet()
"""Modules whose programs are never rewritten (see `freeze`)."""


def freeze(module: Operation) -> None:
    """Promise that `module` is never rewritten from now on: its programs' recordings are
    then replayed without checking them against the programs again."""
    _FROZEN.add(module)


def shared_caches(module: Operation) -> dict | None:
    """For a frozen `module`, one dict that every run of it shares, for the interpreter's
    caches of per-op facts (pad values, widened op types): a launch then does not
    rebuild them from the ops' attributes. None for a module that may be rewritten."""
    if module not in _FROZEN:
        return None
    # Kept on the module itself, not in a WeakKeyDictionary: the caches hold the module's
    # ops, which refer to the module, so a weak key would never die.
    shared = getattr(module, "_replay_shared", None)
    if shared is None:
        shared = module._replay_shared = {}  # type: ignore[attr-defined]
    return shared


def is_frozen(program: Operation) -> bool:
    """Whether `program` lies in a module `freeze` was called on (never rewritten)."""
    op = program.parent_op()
    while op is not None:
        if op in _FROZEN:
            return True
        op = op.parent_op()
    return False


_REPLAYABLE: weakref.WeakKeyDictionary[Operation, bool] = weakref.WeakKeyDictionary()
"""`replayable` of programs of frozen modules: a decode step runs ~40 programs, and
walking each one's ops every step cost a fifth of the step's host time."""


def replayable(program: Operation, config: SpyreConfig) -> bool:
    """Whether a recording of `program` holds for its later runs. Not when it reads
    runtime positions (`dataflow.position`, a KV row store's), except where each is
    only an offset of a store of extent 1 along a dim that is not the stick dim: the
    store then moves the same sticks at any position in range (its timing holds), and
    a replay reads the positions again and cuts those stores' boxes there."""
    known = _REPLAYABLE.get(program)
    if known is None:
        known = all(_shifts_a_row_store(op, config) for op in program.walk()
                    if isinstance(op, D.PositionOp))  # fmt: skip
        if is_frozen(program):
            _REPLAYABLE[program] = known
    return known


def _shifts_a_row_store(position: D.PositionOp, config: SpyreConfig) -> bool:
    for use in position.result.uses:
        store, d = use.operation, use.index - 2
        if not isinstance(store, D.StoreBase) or d < 0:
            return False
        memory, tile = store.dest.type, store.source.type
        assert isinstance(memory, D.DdrType) and isinstance(tile, D.LxType)
        extents = tile.get_shape()
        if d >= len(extents) or extents[d] != 1 or d == lpddr.stick_geometry(memory, config)[0]:
            return False
    return True


class Recorder:
    """Collects the steps of one run whose arguments are `memories`."""

    def __init__(self, program: Operation, config: SpyreConfig, memories: Sequence[object]):
        self.recording = Recording(config, _fingerprint(program))
        self.positions = {id(m): i for i, m in enumerate(memories) if isinstance(m, DdrMemory)}
        self.memories = list(memories)  # held, so the ids above stay theirs
        self.runtime: dict[int, int] = {}  # id(a position's value) -> its index in the recording
        self.values: list[object] = []  # held, as the memories

    def position(self, op: Operation, operands: list, value: object) -> None:
        """A `dataflow.position` read `value` (stores use it as an offset)."""
        self.runtime[id(value)] = len(self.recording.positions)
        self.recording.positions.append((op, self.positions[id(operands[0])], operands[1]))
        self.values.append(value)

    def add(self, handler: Callable, op: Operation, operands: list, boxes: list) -> None:
        slots = tuple(
            (i, self.positions[id(v)]) for i, v in enumerate(operands) if isinstance(v, DdrMemory)
        )
        function = handler.__func__  # type: ignore[attr-defined]
        positions = ()
        if isinstance(op, D.StoreBase):  # an offset that is a runtime position (KeyError:
            positions = tuple(  # a position the driver did not pass to `position`)
                (d, self.runtime[id(v)])
                for d, (v, offset) in enumerate(zip(operands[2:], op.offsets))
                if isinstance(offset.owner, D.PositionOp)
            )
        self.recording.steps.append(Step(function, op, operands, slots, tuple(boxes), positions))

    def keep(self, program: Operation) -> None:
        self.memories.clear()
        self.values.clear()
        for step in self.recording.steps:  # a replay binds its own memories there: the
            for i, _ in step.memory_slots:  # recording must not keep this run's tensors
                step.operands[i] = None
        _RECORDINGS.put(program, self.recording)


def lookup(program: Operation, config: SpyreConfig, tracing: bool) -> Recording | None:
    """The recording of `program` if it still describes it, for this configuration."""
    recording = _RECORDINGS.get(program)
    if recording is None or recording.config != config or (tracing and not recording.traced):
        return None
    if is_frozen(program):
        return recording
    now = _fingerprint(program)
    old = recording.fingerprint
    if len(now) != len(old) or any(a is not b for a, b in zip(now, old)):
        _RECORDINGS.pop(program)
        return None
    return recording
