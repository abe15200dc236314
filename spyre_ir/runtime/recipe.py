"""Prepared recipes: an artifact parsed once into typed steps, launched onto streams.

    recipe = PreparedRecipe.from_artifact(artifact)        # once (parses a cached one)
    outs = recipe.launch([x, w])                           # enqueue only: DeviceArrays
    hosts = recipe.launch_to_host([x, w])                  # enqueue only: host arrays
    card.synchronize()                                     # now the work runs

A launch allocates this launch's device blocks for every slot and enqueues, on one
stream:

1. the host callback (engine "host") that patches the blocks' addresses into the
   launch's address table, which the later steps read;
2. per input: a host array goes over the link ("h2d": stickified, padding slots set
   to the plan's pad value, converted to the slot's element type - an f32 array for an
   f16 slot is rounded here); a `DeviceArray` (row-major/strided bytes on the card, as
   the eager device path holds tensors) is restickified on the card ("dma"); the host
   arrays of a launch cross as ONE transfer (one descriptor chain: the link's fixed
   cost once, `cost_model.host_transfer_s` of their bytes together), as do the
   results below that go back to the host;
3. the compute ("compute"): reads each input's stick image at its patched address,
   runs the L3 entry on the simulator, writes each output's stick image at its address;
   its duration is the simulator's `simulated_us`, and it reports a
   `telemetry.LaunchRecord` (with a Perfetto trace when `telemetry.wants_trace()`);
4. per output: "d2h" into a host array (`launch_to_host`) or an on-card restickify into
   a new contiguous row-major `DeviceArray` (`launch`, the caller owns it);
5. a host step that frees the launch's slot blocks, after everything above (a step that
   fails frees them itself, since the stream cancels the rest of the launch).

Element types on the card: f16 and bf16 as DLFloat16 codes (uint16; `interp.dlfloat16`:
an h2d converts fp16/bf16/f32 host data into it, with its rounding and saturation; the
compute hands the simulator the codes themselves, which it holds in DDR as they are and
decodes into LX box by box: `simulate(codes=True)`), f32 / i32 / i64 as themselves, i1
as one byte (bool). A d2h of f16 gives the DLFloat16 values exactly (in
float32; the caller casts them to its dtype); one of bf16 rounds them to bf16 (to
nearest even; on the host bf16 travels as float32 holding bf16 values, as in the
interpreters). A `DeviceArray` (the eager device's row-major tensors) holds f16 as IEEE
float16 and bf16 as its raw 16 bits: its restickify converts, both ways.

Host memory: images are written and read in place a few rows at a time
(`runtime/images.py`, 16-bit lookup tables for fp16/bf16 bits), so a transfer or a
restickify makes no whole-tensor copy besides its destination; a launch's staging
slots give their host pages back once read (`Card.release`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from spyre_ir import cost_model
from spyre_ir.dialects import recipe as R
from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.dialects.stick_layout import layout_or_default
from spyre_ir.interp import dlfloat16, versions
from spyre_ir.interp.numerics import round_to_bf16
from spyre_ir.layout import StickLayout, stickify, unstickify, validate
from spyre_ir.runtime import images, telemetry
from spyre_ir.runtime.allocator import DeviceBlock
from spyre_ir.runtime.artifact import Artifact, load_artifact
from spyre_ir.runtime.card import Card, DeviceArray, get_card
from spyre_ir.runtime.streams import Stream

__all__ = [
    "Compute",
    "Fetch",
    "HostCallback",
    "LaunchError",
    "PreparedRecipe",
    "Restickify",
    "Slot",
    "StickImage",
    "Transfer",
]

# element type -> (numpy dtype on the card, numpy dtype of its values on the host: a d2h's,
# and the simulator's without codes)
_DTYPES = {
    "f16": (np.uint16, np.float32),
    "bf16": (np.uint16, np.float32),
    "f32": (np.float32, np.float32),
    "i1": (np.bool_, np.bool_),
    "i8": (np.int8, np.int8),
    "i32": (np.int32, np.int32),
    "i64": (np.int64, np.int64),
}


class LaunchError(ValueError):
    """Arguments that do not fit the recipe's slots (count, shape, dtype)."""


def _bf16_bits(values: np.ndarray) -> np.ndarray:
    return (round_to_bf16(values.astype(np.float32)).view(np.uint32) >> 16).astype(np.uint16)


def _bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


@dataclass(frozen=True, eq=False)
class Slot:
    """One argument or result of the entry in device memory (a `recipe.slot`)."""

    name: str
    role: str
    index: int
    shape: tuple[int, ...]
    element: str
    layout: StickLayout
    size: int
    device_dtype: np.dtype
    host_dtype: np.dtype
    written: bool = False
    """An input the compute writes in place (`recipe.slot ... written`)."""
    tied: int | None = None
    """An output that is the block of written input `tied` (`recipe.slot ... tied N`)."""

    @classmethod
    def from_op(cls, op: R.SlotOp) -> Slot:
        t = op.slot_type
        element = element_type_name(t.element_type)
        if element not in _DTYPES:
            raise LaunchError(f"slot @{op.sym_name.data}: {element} tensors cannot be staged")
        layout = layout_or_default(t)
        problems = validate(layout, layout.host_shape, layout.elem_bytes)
        if problems:
            raise LaunchError("invalid stick layout: " + "; ".join(problems))
        device, host = _DTYPES[element]
        return cls(op.sym_name.data, op.role.data, op.index.value.data, tuple(t.get_shape()),
                   element, layout, op.size.value.data, np.dtype(device), np.dtype(host),
                   op.written is not None,
                   None if op.tied is None else op.tied.value.data)  # fmt: skip

    @property
    def array_dtype(self) -> np.dtype:
        """The dtype of a row-major `DeviceArray` of this slot's elements (f16: IEEE)."""
        return np.dtype(np.float16) if self.element == "f16" else self.device_dtype

    def to_device_elements(self, values: np.ndarray) -> np.ndarray:
        """Host values (any numeric dtype) as the card stores this slot's elements."""
        if self.element in ("f16", "bf16"):
            return dlfloat16.encode(values)
        return values.astype(self.device_dtype, copy=False)

    def to_host_values(self, values: np.ndarray) -> np.ndarray:
        """Simulator values as a d2h gives them (`host_dtype`): bf16 rounded from
        DLFloat16 to bf16, the rest as they are (f16: DLFloat16 values, exact)."""
        if self.element == "bf16":
            return dlfloat16.to_user(values, "bf16")
        return values

    def to_array_elements(self, values: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
        """Simulator values as a row-major `DeviceArray` of `array_dtype` (or `dtype`)
        holds them. An f16 slot into a float32 array (an f32 tensor the card computed as
        16-bit floats) keeps the DLFloat16 values exactly, its range beyond fp16's."""
        if self.element == "f16":
            if dtype is not None and np.dtype(dtype) == np.float32:
                return np.asarray(values, np.float32)
            return dlfloat16.to_user(values, np.float16)
        if self.element == "bf16":
            return _bf16_bits(dlfloat16.to_user(values, "bf16"))
        return self.to_device_elements(values)

    def write_image(self, raw: np.ndarray, values: np.ndarray, pad: float,
                    codes: bool = False) -> None:  # fmt: skip
        """Write the slot's stick image of `values` (its shape: IEEE fp16, bf16 bits as
        uint16, or any numeric values; with `codes`, a half slot's DLFloat16 codes as the
        simulator gives them) into its device bytes `raw`, a few rows at a time (no
        whole-tensor scratch; `stick_image`'s bytes, bit for bit)."""
        values = np.asarray(values)
        fill = self.to_device_elements(np.float32(pad))[()] if self.is_half else pad
        if codes and self.is_half and values.dtype != np.uint16:
            raise LaunchError(f"slot @{self.name}: expected DLFloat16 codes, got {values.dtype}")
        encoder = (lambda a: a) if codes and self.is_half else self._encoder(values.dtype)
        images.write_image(raw.view(self.device_dtype), self.layout, values, encoder,
                           self.device_dtype.type(fill))  # fmt: skip

    def read_into(self, raw: np.ndarray, out: np.ndarray, rounded: bool = False,
                  codes: bool = False) -> np.ndarray:  # fmt: skip
        """Fill `out` (the slot's shape) from its device bytes `raw`, converted to
        `out.dtype` a few rows at a time: float32 gets the DLFloat16 values (bf16 ones
        rounded to bf16 where `rounded`, as a d2h gives them), float16 IEEE fp16
        (`to_array_elements`), uint16 of a bf16 slot its bf16 bits, or with `codes` the
        DLFloat16 codes themselves (what the simulator takes with `codes`)."""
        decoder = (
            (lambda a: a) if codes and self.is_half else self._decoder(np.dtype(out.dtype), rounded)
        )
        images.read_image(raw.view(self.device_dtype), self.layout, decoder, out)
        return out

    @property
    def sim_dtype(self) -> np.dtype:
        """How the launch hands the slot to the simulator: half slots as their codes."""
        return np.dtype(np.uint16) if self.is_half else self.host_dtype

    @property
    def is_half(self) -> bool:
        return self.element in ("f16", "bf16")

    def _encoder(self, dtype: np.dtype) -> Callable[[np.ndarray], np.ndarray]:
        if not self.is_half:
            return lambda a: a.astype(self.device_dtype, copy=False)
        if dtype == np.float16:
            return lambda a: dlfloat16.translate(dlfloat16.F16_TO_CODE, a.view(np.uint16))
        if dtype == np.uint16:  # a DeviceArray's bf16 bits
            return lambda a: dlfloat16.translate(dlfloat16.BF16_TO_CODE, a)
        return dlfloat16.encode

    def _decoder(self, dtype: np.dtype, rounded: bool) -> Callable[[np.ndarray], np.ndarray]:
        if not self.is_half:
            return lambda a: a
        if dtype == np.float16:
            return lambda a: dlfloat16.translate(dlfloat16.CODE_TO_F16, a).view(np.float16)
        if dtype == np.uint16:
            return lambda a: dlfloat16.translate(dlfloat16.CODE_TO_BF16, a)
        if rounded and self.element == "bf16":
            return lambda a: dlfloat16.to_user(dlfloat16.decode(a), "bf16")
        return dlfloat16.decode

    def stick_image(self, values: np.ndarray, pad: float) -> np.ndarray:
        """The slot's device bytes for `values` (its shape): padding slots hold `pad`."""
        flat = self.to_device_elements(np.asarray(values).reshape(-1))
        fill = (
            self.to_device_elements(np.float32(pad))[()] if self.element in ("f16", "bf16") else pad
        )
        return stickify(flat.reshape(self.layout.host_shape), self.layout, fill).view(np.uint8)

    def read_image(self, raw: np.ndarray) -> np.ndarray:
        """The slot's values (simulator dtype) from its device bytes."""
        elements = unstickify(raw.view(self.device_dtype), self.layout).reshape(self.shape)
        if self.element in ("f16", "bf16"):  # an array also for a rank-0 slot
            return np.asarray(dlfloat16.decode(elements))
        return elements.astype(self.host_dtype, copy=False)


@dataclass(frozen=True)
class HostCallback:
    """Patch this launch's slot addresses into its address table."""

    slots: tuple[str, ...]


@dataclass(frozen=True)
class Transfer:
    direction: str  # "h2d" | "d2h"
    slot: Slot
    pad: float = 0.0


@dataclass(frozen=True)
class Restickify:
    """On-card: an input's row-major bytes -> stick image, or an output's back."""

    slot: Slot


@dataclass(frozen=True)
class Compute:
    entry: str


@dataclass(eq=False)
class StickImage:
    """One slot's stick image kept on the card beyond a launch: a launch takes it as an
    argument in place of data (nothing is staged: its block is the slot's), or leaves
    one of its results as one (`launch_resident`). Each holder (`share` makes one more)
    frees it once; the block goes back to the card with the last."""

    card: Card
    block: DeviceBlock | None
    layout: StickLayout
    element: str
    pad: float
    size: int
    holders: int = 1
    values: np.ndarray | None = None
    """The image read back as the simulator takes it (read-only), kept from the first
    launch that reads it: the block is written once (staged, or left by the launch that
    made it) and only read afterwards, so later launches skip decoding it again. Bound
    to a `written` slot it is the writable buffer the compute stores rows into (its
    bytes on the card are brought up to date after the compute, `_written_back`)."""

    @classmethod
    def for_slot(cls, card: Card, slot: Slot, pad: float, block: DeviceBlock) -> StickImage:
        return cls(card, block, slot.layout, slot.element, pad, slot.size)

    def fits(self, slot: Slot, pad: float) -> bool:
        """Whether this image is exactly what `slot` (with padding `pad`) needs."""
        return (self.block is not None and self.layout == slot.layout and self.element == slot.element
                and self.size == slot.size and (self.pad == pad or (self.pad != self.pad and pad != pad)))  # fmt: skip

    def share(self) -> StickImage:
        self.holders += 1
        return self

    def free(self) -> None:
        self.holders -= 1
        if self.holders > 0:
            return
        block, self.block = self.block, None
        if block is not None:
            self.card.free(block)


@dataclass(frozen=True)
class Fetch:
    """What of one result crosses back: `into` (a host array or a DeviceArray of the
    result's shape) receives the elements at `index` (a numpy index; None: all)."""

    into: np.ndarray | DeviceArray
    index: object = None
    rows: bool = False
    """The result is the rows `into[index]` (a row store's, see row_store.py): all of it
    lands there, instead of its elements at `index`."""


class _Launch:
    """The state of one launch: its blocks (bound images' too) and its address table
    (patched by the host callback when the stream reaches it)."""

    __slots__ = ("card", "blocks", "owned", "table", "bound", "stores", "aliases", "rows")

    def __init__(self, card: Card, blocks: dict, owned: set[str]) -> None:
        self.card = card
        self.blocks = blocks
        self.bound: dict[str, StickImage] = {}  # inputs bound to kept images
        self.owned = owned  # the blocks this launch frees: not bound inputs, not kept results
        self.table: dict = {}
        self.stores: dict[str, Any] = {}  # output slot -> its row_store.RowStore
        # output slot -> the input slot whose bound image's block it is (`Slot.tied`)
        self.aliases: dict[str, Slot] = {}
        # written input slot -> the only rows the compute writes into it (numpy indices)
        self.rows: dict[str, list] = {}

    def release(self) -> None:
        """Free the launch's own blocks (once): by the last step, or by a step that failed,
        since the stream then cancels the rest of the launch."""
        owned, self.owned = self.owned, set()
        for name in owned:
            self.card.release(self.blocks[name])

    def release_one(self, name: str) -> None:
        """Free one of the launch's own blocks now, its host pages too (an input's
        staging slot once the compute has read it: nothing reads it again)."""
        if name in self.owned:
            self.owned.discard(name)
            self.card.release(self.blocks[name])

    def guarded(self, run: Callable[[], float]) -> Callable[[], float]:
        def step() -> float:
            try:
                return run()
            except BaseException:
                self.release()
                raise

        return step


Argument = np.ndarray | DeviceArray | StickImage


class PreparedRecipe:
    """An artifact, parsed once, ready to launch any number of times."""

    def __init__(
        self, name: str, module: ModuleOp, plan: R.PlanOp, card: Card | None = None
    ) -> None:
        self.name = name
        self.card = card or get_card()
        self.entry = plan.entry.root_reference.data
        slots = {op.sym_name.data: Slot.from_op(op) for op in plan.slots()}
        self.inputs = sorted(
            (s for s in slots.values() if s.role == "input"), key=lambda s: s.index
        )
        self.outputs = sorted(
            (s for s in slots.values() if s.role == "output"), key=lambda s: s.index
        )
        self.steps: list[HostCallback | Transfer | Restickify | Compute] = []
        for op in plan.steps():
            if isinstance(op, R.PatchAddressesOp):
                self.steps.append(HostCallback(tuple(s.root_reference.data for s in op.slots.data)))
            elif isinstance(op, R.TransferOp):
                pad = op.pad.value.data if op.pad is not None else 0.0
                self.steps.append(
                    Transfer(op.direction.data, slots[op.slot.root_reference.data], pad)
                )
            elif isinstance(op, R.RestickifyOp):
                self.steps.append(Restickify(slots[op.slot.root_reference.data]))
            elif isinstance(op, R.ComputeOp):
                self.steps.append(Compute(op.callee.root_reference.data))
        # the padding value of each input's stick image (its h2d transfer's)
        self.input_pads = {s.slot.name: s.pad for s in self.steps
                           if isinstance(s, Transfer) and s.slot.role == "input"}  # fmt: skip
        self.module = module  # read only: recipes prepared from one artifact share it

    @classmethod
    def from_artifact(cls, artifact: Artifact | str, card: Card | None = None) -> PreparedRecipe:
        """Prepare an artifact. One this process compiled comes with its module, verified
        by the compile; any other is parsed, verified and hash-checked here (raises
        ArtifactError)."""
        text, name = (
            (artifact.text, artifact.name)
            if isinstance(artifact, Artifact)
            else (artifact, "artifact")
        )
        if isinstance(artifact, Artifact) and artifact.module is not None:
            module = artifact.module
        else:
            module = load_artifact(text, name)
        plan = next(op for op in module.body.block.ops if isinstance(op, R.PlanOp))
        return cls(name, module, plan, card)

    # ----------------------------------------------------------------- launching
    def launch(self, args: Sequence[Argument], stream: Stream | None = None,
               float32_results: Sequence[bool] = ()) -> list[DeviceArray]:  # fmt: skip
        """Enqueue one run; results are new contiguous row-major DeviceArrays (the caller
        frees `.block`), valid once the stream's work has run. Result i is a float32
        array where `float32_results[i]` and its slot is f16 (see `to_array_elements`)."""
        staged, stream = self._check(args), self._stream(stream)
        wide = list(float32_results) + [False] * (len(self.outputs) - len(float32_results))
        outs = [self.card.empty(s.shape, np.float32 if w and s.element == "f16" else s.array_dtype)
                for s, w in zip(self.outputs, wide)]  # fmt: skip
        self._enqueue(staged, stream, [Fetch(o) for o in outs], [False] * len(outs))
        return outs

    def launch_to_host(
        self, args: Sequence[Argument], stream: Stream | None = None
    ) -> list[np.ndarray]:
        """Enqueue one run whose results come back over the link; the returned host arrays
        (simulator dtypes: bf16 as float32, f16 as float32 holding DLFloat16 values) are
        filled once the stream's work has run."""
        staged, stream = self._check(args), self._stream(stream)
        outs = [np.empty(s.shape, s.host_dtype) for s in self.outputs]
        self._enqueue(staged, stream, [Fetch(o) for o in outs], [False] * len(outs))
        return outs

    def launch_resident(self, args: Sequence[Argument], fetches: Sequence[Fetch | None],
                        keep: Sequence[bool], stream: Stream | None = None,
                        stores: dict[int, Any] | None = None,
                        written_rows: dict[int, list] | None = None) -> list[StickImage | None]:  # fmt: skip
        """Enqueue one run whose arguments may be StickImages already on the card (bound
        to their slots, nothing staged). Result i goes back as `fetches[i]` says (None:
        nothing crosses) and, where `keep[i]`, stays on the card as the StickImage
        returned at i (valid once the stream's work has run; the caller frees it).
        Result i in `stores` (a row_store.RowStore) is stored into its rows of a bound
        image, in place, and has no block of its own (nor a kept image). A result whose
        slot is `tied` to an input bound to an image is that image's block (no image of
        its own either: the bound image holds it). `written_rows[i]` (numpy indices), where
        given, are the only rows the compute writes into written input i: only those are
        brought up to date in its image's bytes after the compute, not the whole image."""
        staged, stream = self._check(args), self._stream(stream)
        if len(fetches) != len(self.outputs) or len(keep) != len(self.outputs):
            raise LaunchError(f"{self.name}: {len(fetches)} fetches and {len(keep)} keeps for "
                              f"{len(self.outputs)} results")  # fmt: skip
        return self._enqueue(staged, stream, list(fetches), list(keep), stores or {},
                             written_rows or {})  # fmt: skip

    def stage(
        self, index: int, value: np.ndarray | DeviceArray, stream: Stream | None = None
    ) -> StickImage:
        """Enqueue staging `value` as input `index`'s stick image into a block of its own
        (h2d for a host array, an on-card restickify for a DeviceArray): an image to bind
        to this slot in later launches (the caller frees it)."""
        return self.stage_many([(index, value)], stream)[0]

    def stage_many(
        self, values: Sequence[tuple[int, np.ndarray | DeviceArray]], stream: Stream | None = None
    ) -> list[StickImage]:
        """`stage` for several inputs at once: the host arrays cross the link as ONE
        transfer (one descriptor chain, one doorbell and completion: the link's fixed cost
        is paid once, see `cost_model.host_transfer_s`); DeviceArrays are restickified on
        the card, each its own copy."""
        stream = self._stream(stream)
        images, uploads = [], []
        for index, value in values:
            (slot,) = [s for s in self.inputs if s.index == index]
            staged = self._check_one(slot, value)
            pad = self.input_pads.get(slot.name, 0.0)
            image = StickImage.for_slot(self.card, slot, pad, self.card.allocate(slot.size))
            images.append(image)
            launch = _Launch(self.card, {slot.name: image.block}, set())
            launch.table[slot.name] = image.block
            if isinstance(staged, DeviceArray):
                stream.enqueue("dma", self._stage_in(launch, Restickify(slot), staged),
                               f"{self.name}: dma @{slot.name} (kept)", slot.size)  # fmt: skip
            else:
                uploads.append((slot, self._stage_in(launch, Transfer("h2d", slot, pad), staged)))
        if uploads:
            names = " ".join(f"@{slot.name}" for slot, _ in uploads)
            stream.enqueue("h2d", self._one_transfer([run for _, run in uploads], [s.size for s, _ in uploads]),
                           f"{self.name}: h2d {names} (kept)", sum(s.size for s, _ in uploads))  # fmt: skip
        return images

    def stage_grown(
        self, index: int, source: StickImage, region: tuple[int, ...], stream: Stream | None = None
    ) -> StickImage:
        """Enqueue making input `index`'s stick image on the card from `source`, a kept
        image of a smaller tensor of the same rank (a bucketed cache whose length outgrew
        its capacity): elements [0, region) of `source` (along every dim) are copied into
        a new block of this slot's layout, the rest zero, its padding this slot's pad. An
        on-card copy (the "dma" engine): nothing crosses the link. The caller frees it."""
        stream = self._stream(stream)
        (slot,) = [s for s in self.inputs if s.index == index]
        ranks = {len(region), len(slot.layout.host_shape), len(source.layout.host_shape)}
        if source.block is None or source.element != slot.element or len(ranks) != 1:
            raise LaunchError(f"{self.name}: cannot grow @{slot.name} from that image")
        if any(r > min(a, b) for r, a, b in zip(region, slot.layout.host_shape,
                                                source.layout.host_shape)):  # fmt: skip
            raise LaunchError(f"{self.name}: region {list(region)} exceeds @{slot.name} "
                              f"{list(slot.shape)}")  # fmt: skip
        pad = self.input_pads.get(slot.name, 0.0)
        image = StickImage.for_slot(self.card, slot, pad, self.card.allocate(slot.size))
        old_block, old_layout = source.block, source.layout
        source.share()  # held until the copy has run
        config, memory = self.card.config, self.card.memory

        def run() -> float:
            try:
                raw = memory.view(old_block.region, old_block.offset, source.size)
                old = unstickify(raw.view(slot.device_dtype), old_layout)
                old = old.reshape(old_layout.host_shape)  # elements as the card codes them
                zero = slot.to_device_elements(np.zeros((), np.float32))[()]
                new = np.full(slot.layout.host_shape, zero, dtype=slot.device_dtype)
                part = tuple(slice(0, r) for r in region)
                new[part] = old[part]
                fill = (slot.to_device_elements(np.float32(pad))[()]
                        if slot.element in ("f16", "bf16") else pad)  # fmt: skip
                block = image.block
                view = memory.view(block.region, block.offset, slot.size)
                view[:] = stickify(new, slot.layout, fill).view(np.uint8)
            finally:
                source.free()
            # one read of the copied part and one write of the new image, at most
            return cost_model.device_copy_s(slot.size, config)

        stream.enqueue("dma", run, f"{self.name}: dma @{slot.name} (grown on the card)", slot.size)
        return image

    def _one_transfer(
        self, runs: list[Callable[[], float]], sizes: list[int]
    ) -> Callable[[], float]:
        """One link transfer doing the work of `runs` (each a per-slot transfer's)."""
        config = self.card.config

        def run() -> float:
            for each in runs:
                each()
            return cost_model.host_transfer_s(sum(sizes), config)

        return run

    def _stream(self, stream: Stream | None) -> Stream:
        stream = stream or self.card.current_stream()
        if stream.card is not self.card:
            raise LaunchError(f"{stream} belongs to another card than recipe {self.name}")
        return stream

    def _enqueue(self, staged: list[Argument], stream: Stream, fetches: list[Fetch | None],
                 keep: list[bool], stores: dict[int, Any] | None = None,
                 written_rows: dict[int, list] | None = None) -> list[StickImage | None]:  # fmt: skip
        stores, written_rows = stores or {}, written_rows or {}
        blocks, owned = {}, set()
        for slot, arg in zip(self.inputs, staged):
            if isinstance(arg, StickImage):
                blocks[slot.name] = arg.block
            else:
                blocks[slot.name] = self.card.allocate(slot.size)
                owned.add(slot.name)
        images: list[StickImage | None] = []
        aliases = {}
        for slot, kept in zip(self.outputs, keep):
            if slot.index in stores:  # into a bound image: its block is the image's
                blocks[slot.name] = stores[slot.index].image.block
                images.append(None)
                continue
            source = self.tied_source(slot, staged)
            if source is not None:  # the bound image of the input it is, its block
                blocks[slot.name] = staged[source.index].block
                aliases[slot.name] = source
                images.append(None)
                continue
            blocks[slot.name] = self.card.allocate(slot.size)
            images.append(
                StickImage.for_slot(self.card, slot, 0.0, blocks[slot.name]) if kept else None
            )
            if not kept:
                owned.add(slot.name)
        launch = _Launch(self.card, blocks, owned)
        launch.bound = {slot.name: arg for slot, arg in zip(self.inputs, staged)
                        if isinstance(arg, StickImage)}  # fmt: skip
        launch.stores = {slot.name: stores[slot.index] for slot in self.outputs
                         if slot.index in stores}  # fmt: skip
        launch.aliases = aliases
        launch.rows = {slot.name: written_rows[slot.index] for slot in self.inputs
                       if slot.written and slot.index in written_rows}  # fmt: skip
        results = dict(zip((s.name for s in self.outputs), fetches))

        def enqueue(engine: str, run: Callable[[], float], what: str, nbytes: int = 0) -> None:
            stream.enqueue(engine, launch.guarded(run), f"{self.name}: {what}", nbytes)

        # Consecutive link transfers of one direction go as one transfer (one descriptor
        # chain): `batch` holds them until a step of another kind comes.
        batch: list[tuple[str, Callable[[], float], str, int]] = []

        def flush() -> None:
            if batch:
                engine = batch[0][0]
                what = f"{engine} " + " ".join(w for _, _, w, _ in batch)
                sizes = [n for *_, n in batch]
                enqueue(
                    engine, self._one_transfer([r for _, r, _, _ in batch], sizes), what, sum(sizes)
                )
                batch.clear()

        def add(engine: str, run: Callable[[], float], what: str, nbytes: int) -> None:
            if engine == "dma":
                flush()
                enqueue(engine, run, f"dma {what}", nbytes)
                return
            if batch and batch[0][0] != engine:
                flush()
            batch.append((engine, run, what, nbytes))

        for step in self.steps:
            if isinstance(step, HostCallback):
                flush()
                enqueue("host", self._patch(launch, step), "patch addresses")
            elif isinstance(step, Compute):
                flush()
                enqueue("compute", self._compute(launch, step), f"compute @{step.entry}")
            elif step.slot.role == "input":
                arg = staged[step.slot.index]
                if not isinstance(arg, StickImage) and isinstance(arg, DeviceArray) == isinstance(
                    step, Restickify
                ):
                    engine = "dma" if isinstance(step, Restickify) else "h2d"
                    add(
                        engine,
                        self._stage_in(launch, step, arg),
                        f"@{step.slot.name}",
                        step.slot.size,
                    )
            else:
                fetch = results[step.slot.name]
                if fetch is not None and isinstance(fetch.into, DeviceArray) == isinstance(
                    step, Restickify
                ):
                    engine = "dma" if isinstance(step, Restickify) else "d2h"
                    nbytes = _fetched_bytes(step.slot, fetch)
                    add(engine, self._stage_out(launch, step, fetch, nbytes), f"@{step.slot.name}"
                        + ("" if fetch.index is None else " (written part)"), nbytes)  # fmt: skip
        flush()

        def release() -> float:
            launch.release()
            return 0.0

        enqueue("host", release, "free slots")
        return images

    def tied_source(self, slot: Slot, staged: Sequence[Argument]) -> Slot | None:
        """The input slot whose bound image output `slot` is (its `tied`), if that input
        is bound to a kept image; None (a block of its own) otherwise."""
        if slot.tied is None or slot.tied >= len(self.inputs):
            return None
        source = self.inputs[slot.tied]
        if not source.written or not isinstance(staged[slot.tied], StickImage):
            return None
        return source

    def _check(self, args: Sequence[Argument]) -> list[Argument]:
        """Arguments checked against the input slots; host arrays copied (a later change
        by the caller must not leak into the pending transfer)."""
        if len(args) != len(self.inputs):
            raise LaunchError(
                f"{self.name}: {len(args)} arguments, the recipe takes {len(self.inputs)}"
            )
        return [self._check_one(slot, arg) for slot, arg in zip(self.inputs, args)]

    def _check_one(self, slot: Slot, arg: Argument) -> Argument:
        if isinstance(arg, StickImage):
            if not arg.fits(slot, self.input_pads.get(slot.name, 0.0)):
                raise LaunchError(f"{self.name}: argument {slot.index} is a stick image that does not "
                                  f"fit slot @{slot.name}")  # fmt: skip
            return arg
        if not isinstance(arg, DeviceArray):
            arg = np.array(arg, copy=True)
        shape = tuple(arg.shape)
        if shape != slot.shape:
            raise LaunchError(f"{self.name}: argument {slot.index} has shape {list(shape)}, "
                              f"slot @{slot.name} takes {list(slot.shape)}")  # fmt: skip
        kind = np.dtype(arg.dtype).kind
        if (kind in "fc") != (slot.element in ("f16", "bf16", "f32")) and not (
            slot.element == "bf16" and arg.dtype == np.uint16 and isinstance(arg, DeviceArray)
        ):
            raise LaunchError(f"{self.name}: argument {slot.index} is {arg.dtype}, slot "
                              f"@{slot.name} holds {slot.element}")  # fmt: skip
        return arg

    # ------------------------------------------------------ the steps' work
    def _patch(self, launch: _Launch, step: HostCallback):
        def run() -> float:
            launch.table.update((name, launch.blocks[name]) for name in step.slots)
            return 0.0  # host time is real time, not card time; bench/launch.py measures it

        return run

    def _view(self, launch: _Launch, slot: Slot) -> np.ndarray:
        block = launch.table[slot.name]  # a KeyError here means the patch step did not run
        return self.card.memory.view(block.region, block.offset, slot.size)

    def _stage_in(
        self, launch: _Launch, step: Transfer | Restickify, arg: np.ndarray | DeviceArray
    ):
        config, slot = self.card.config, step.slot
        # a restickified DeviceArray pads like the slot's own transfer would
        pad = step.pad if isinstance(step, Transfer) else self.input_pads.get(slot.name, 0.0)

        def run() -> float:
            # straight from the source's elements into the slot's bytes, row by row
            source = arg._elements() if isinstance(arg, DeviceArray) else arg
            slot.write_image(self._view(launch, slot), source, pad)
            if isinstance(arg, DeviceArray):
                return cost_model.device_copy_s(slot.size, config)
            return cost_model.host_transfer_s(slot.size, config)

        return run

    def _compute(self, launch: _Launch, step: Compute):
        from spyre_ir.sim.engine import simulate

        last = step is [s for s in self.steps if isinstance(s, Compute)][-1]

        def run() -> float:
            start = time.perf_counter()
            arrays = []
            for slot in self.inputs:
                arrays.append(self._read_input(launch, slot))
                if last:  # no later step reads the launch's own staging slots
                    launch.release_one(slot.name)
            result = simulate(self.module, arrays, step.entry, self.card.config,
                              trace=telemetry.wants_trace(), blas_threads=1, card_format=True,
                              codes=True)  # fmt: skip
            for slot, value in zip(self.outputs, result.outputs):
                store = launch.stores.get(slot.name)
                if store is not None:  # the rows, at their patched addresses in the image
                    store.write(self.card.memory, value)
                elif slot.name in launch.aliases:
                    self._tied_result(launch, slot, value)
                else:
                    slot.write_image(self._view(launch, slot), value, 0.0, codes=True)
            self._written_back(launch)
            telemetry.record_launch(telemetry.LaunchRecord(self.name, result.report, result.trace,
                                                           time.perf_counter() - start))  # fmt: skip
            return result.report["simulated_us"] * 1e-6

        return run

    def _read_input(self, launch: _Launch, slot: Slot) -> np.ndarray:
        """Input `slot`'s values as the simulator takes them; a kept image's are read once.
        A `written` slot's are a writable array inside one a trash element larger along
        every dim (the buffer form the simulator writes a tied result into without a
        copy, `DdrMemory.in_place`), so the compute writes its rows into them."""
        image = launch.bound.get(slot.name)
        if image is None:
            out = np.empty(slot.shape, slot.sim_dtype)
            values = slot.read_into(self._view(launch, slot), out, codes=True)
            return _writable_buffer(values) if slot.written else values
        if image.values is None or (slot.written and not image.values.flags.writeable):
            if image.values is None:
                out = np.empty(slot.shape, slot.sim_dtype)
                values = slot.read_into(self._view(launch, slot), out, codes=True)
            else:
                values = image.values
            if slot.written:  # the kept values are this buffer from now on
                values = _writable_buffer(values)
            else:
                values.flags.writeable = False  # shared by every later launch
            # Changed only by the simulator's stores and the row store, which say so
            # (`row_store.RowStore.write`): the simulator may keep the tiles it decodes.
            versions.declare(values)
            image.values = values
        return image.values

    def _tied_result(self, launch: _Launch, slot: Slot, value: np.ndarray) -> None:
        """Output `slot` is its tied input's bound image: the simulator gives that image's
        own buffer back (the program's tied result), which `_written_back` brings to the
        card. A result that is not that buffer (nothing but a tied result may be) is a
        compiler fault: it is copied into the image whole rather than lost."""
        source = launch.aliases[slot.name]
        image = launch.bound[source.name]
        if image.values is not None and np.shares_memory(value, image.values):
            return
        image.values[...] = value
        versions.changed(image.values)
        launch.rows.pop(source.name, None)  # the whole image is written back

    def _written_back(self, launch: _Launch) -> None:
        """After the compute: a kept image a program wrote in place holds the new values
        (its `values`); its bytes on the card get them too, unless a row store of this
        launch writes those rows there (the same rows, `row_store.RowStore`). Where the
        launch knows the only rows the compute writes (`launch.rows`), only those."""
        from spyre_ir.runtime.row_store import RowStore

        stored = {id(store.image) for store in launch.stores.values()}
        for slot in self.inputs:
            image = launch.bound.get(slot.name)
            if not slot.written or image is None or id(image) in stored:
                continue
            if slot.name in launch.rows:
                for index in launch.rows[slot.name]:
                    RowStore(image, slot, index).write_back(self.card.memory)
            else:
                slot.write_image(self._view(launch, slot), image.values, image.pad, codes=True)

    def _stage_out(self, launch: _Launch, step: Transfer | Restickify, fetch: Fetch, nbytes: int):
        config, slot, out, index = self.card.config, step.slot, fetch.into, fetch.index

        store = launch.stores.get(slot.name)
        if store is None and index is not None and slot.name in launch.aliases:
            return self._stage_tied_rows(launch, slot, fetch, nbytes)

        def run() -> float:
            # All of it, in place: into a host array, or a device output's elements.
            if store is None and index is None and not fetch.rows:  # all of it, in place
                if isinstance(out, DeviceArray):
                    slot.read_into(self._view(launch, slot), out._elements())
                    return cost_model.device_copy_s(nbytes, config)
                slot.read_into(self._view(launch, slot), out, rounded=True)
                return cost_model.host_transfer_s(nbytes, config)
            values = (
                slot.read_image(self._view(launch, slot))
                if store is None
                else store.read(self.card.memory)
            )
            if fetch.rows:
                if isinstance(out, DeviceArray):
                    out._elements()[index] = slot.to_array_elements(values).reshape(slot.shape)
                else:
                    out[index] = values
                return (cost_model.device_copy_s if isinstance(out, DeviceArray) else cost_model.host_transfer_s)(nbytes, config)  # fmt: skip
            if isinstance(out, DeviceArray):
                elements = slot.to_array_elements(values, out.dtype).reshape(slot.shape)
                if index is None:
                    out.write_host(elements)
                else:
                    out._elements()[index] = elements[index]
                return cost_model.device_copy_s(nbytes, config)
            values = slot.to_host_values(values)
            if index is None:
                out[...] = values
            else:
                out[index] = values[index]
            return cost_model.host_transfer_s(nbytes, config)

        return run

    def _stage_tied_rows(self, launch: _Launch, slot: Slot, fetch: Fetch, nbytes: int):
        """The written part `fetch.index` of a tied output (its input's bound image),
        read from the image at those elements only, not the whole image decoded."""
        from spyre_ir.runtime.row_store import RowStore

        config, out = self.card.config, fetch.into
        source = launch.aliases[slot.name]

        def run() -> float:
            rows = RowStore(launch.bound[source.name], source, fetch.index).read(self.card.memory)
            if isinstance(out, DeviceArray):
                out._elements()[fetch.index] = slot.to_array_elements(rows, out.dtype)
                return cost_model.device_copy_s(nbytes, config)
            out[fetch.index] = slot.to_host_values(rows)
            return cost_model.host_transfer_s(nbytes, config)

        return run


def _writable_buffer(values: np.ndarray) -> np.ndarray:
    """`values` copied into the leading part of a zero array one larger along every dim
    (the trash element a vectorised store sends overhanging elements to)."""
    base = np.zeros([n + 1 for n in values.shape], values.dtype)
    view = base[(*(slice(0, n) for n in values.shape), Ellipsis)]
    view[...] = values
    return view


def _fetched_bytes(slot: Slot, fetch: Fetch) -> int:
    """Bytes a fetch moves: the whole slot image, or the elements at its index."""
    if fetch.index is None or fetch.rows:
        return slot.size
    picked = np.empty(slot.shape, dtype=np.bool_)
    picked[...] = False
    picked[fetch.index] = True
    return int(picked.sum()) * slot.device_dtype.itemsize
