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
from spyre_ir.hardware import SpyreConfig
from spyre_ir.interp.machine import DdrMemory, LxRoot


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


# ------------------------------------------------------- decoded tiles of constant tensors
#
# A decode step loads every weight tile from its DLFloat16 codes and decodes it, every
# step, though the weights never change: two fifths of a replay's host time. A tensor its
# owner declares constant (`declare_constant`: the runtime's kept weight images) has its
# decoded tiles kept between replays, one per recorded box, and an LX buffer a whole
# tile lands in takes the kept array itself (read-only; a later write copies it first).

_CONSTANTS: dict[int, tuple[weakref.ref, list[int]]] = {}
"""id(array) -> (the array, weakly; [its generation]) for arrays declared constant."""


def _generation_of(array: np.ndarray) -> list[int] | None:
    """[the generation] of `array` if it is declared constant (the array itself, not
    another that took its id)."""
    known = _CONSTANTS.get(id(array))
    return known[1] if known is not None and known[0]() is array else None


def declare_constant(array: np.ndarray) -> None:
    """Promise that read-only `array` keeps its values while it lives, except where its
    owner says otherwise with `changed(array)` (which makes its decoded tiles stale)."""
    if array.flags.writeable:
        raise ValueError("only a read-only array can be declared constant")
    if _generation_of(array) is None:
        key = id(array)
        _CONSTANTS[key] = (weakref.ref(array, lambda _, key=key: _CONSTANTS.pop(key, None)), [0])


def changed(array: np.ndarray) -> None:
    """`array`, declared constant, was written: tiles decoded from it before are stale."""
    generation = _generation_of(array)
    if generation is not None:
        generation[0] += 1


def _held_bytes(array: np.ndarray) -> int:
    """The bytes `array` holds: its base's (a broadcast or transposed view of one)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array.nbytes


_TILES: ByteLRU[object, tuple[weakref.ref, int, np.ndarray]] = ByteLRU(
    lambda box, entry: _held_bytes(entry[2]) + _STEP_BYTES
)
"""A recorded box -> (its source array, weakly; the source's generation; the decoded tile)."""


def cached_tile(box: object, source: np.ndarray, decode: Callable[[], np.ndarray]) -> np.ndarray:
    """The tile `decode()` gives for `box` of `source`: kept (read-only) between
    replays when `source` is declared constant and unchanged since."""
    known = _generation_of(source)
    if known is None:
        return decode()
    generation = known[0]
    entry = _TILES.get(box)
    if entry is not None and entry[0]() is source and entry[1] == generation:
        return entry[2]
    tile = decode()  # a new array, or a read-only broadcast of one (cores sharing a box)
    tile.flags.writeable = False
    _TILES.put(box, (weakref.ref(source), generation, tile))
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


class Recorder:
    """Collects the steps of one run whose arguments are `memories`."""

    def __init__(self, program: Operation, config: SpyreConfig, memories: Sequence[object]):
        self.recording = Recording(config, _fingerprint(program))
        self.positions = {id(m): i for i, m in enumerate(memories) if isinstance(m, DdrMemory)}
        self.memories = list(memories)  # held, so the ids above stay theirs

    def add(self, handler: Callable, op: Operation, operands: list, boxes: list) -> None:
        slots = tuple(
            (i, self.positions[id(v)]) for i, v in enumerate(operands) if isinstance(v, DdrMemory)
        )
        function = handler.__func__  # type: ignore[attr-defined]
        self.recording.steps.append(Step(function, op, operands, slots, tuple(boxes)))

    def keep(self, program: Operation) -> None:
        self.memories.clear()
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
