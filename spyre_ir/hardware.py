"""The machine model of the Spyre card: the one place every hardware number lives.

Passes, cost models and the simulator ask a `SpyreConfig` for numbers; none of them
types a hardware constant of its own. Sourced values are fields (each with its source);
values derived from them are properties, so a variant (fewer cores, smaller LX) stays
consistent. See ../shared/spyre-hardware.md and docs/simulator.md.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from spyre_ir import op_facts

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

# Bytes per element of each element type we store on the device. i1 is kept as one byte.
ELEMENT_BYTES: dict[str, int] = {
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f8": 1,
    "i1": 1,
    "i8": 1,
    "i32": 4,
    "i64": 8,
}


# Which unit of a corelet runs a tile operation: the op's `unit` in spyre_ir/op_facts.py
# (the PE array does matmul and plain elementwise arithmetic, the special-function pipeline
# transcendental functions, normalisation-style reductions and conversions, the load/store
# units move and rearrange data).
SFP_OPS = op_facts.names(unit="sfp")
LS_OPS = op_facts.names(unit="ls")


def unit_for(op_name: str) -> str:
    """'pe', 'sfp' or 'ls': the unit that runs a tile of the L1 op `op_name`."""
    if op_name in SFP_OPS:
        return "sfp"
    if op_name in LS_OPS:
        return "ls"
    return "pe"


_ZERO_MEANS_NONE = frozenset({"allreduce_round_cycles_per_byte", "lpddr_core_requests_in_flight"})
"""Fields whose 0 turns their effect off (every other number must be positive)."""


@dataclass(frozen=True)
class SpyreConfig:
    """One Spyre card. Every field carries its source; see `describe()`."""

    cores: int = 32
    """Cores per card, on a bidirectional ring. Source: IBM Research blog "Lifting the
    cover on the IBM Spyre Accelerator"; torch-spyre docs, architecture/spyre_accelerator."""

    corelets_per_core: int = 2
    """Corelets per core, sharing the core's scratchpad. Source: as `cores`."""

    pe_rows: int = 8
    """Rows of the PE ("PT") SIMD-systolic array of one corelet. Source: as `cores`."""

    pe_cols: int = 8
    """Columns of the PE array of one corelet. Source: as `cores`."""

    pe_fp16_lanes: int = 8
    """fp16 SIMD lanes of one PE. Not published directly: with it the array does 1,024
    fp16 MACs per cycle per core, which makes both of IBM's peaks come out of their
    clocks (72.1 TFLOP/s at 1.1 GHz, 98.3 at 1.5 GHz); see spyre-hardware.md."""

    clock_hz: float = 1.1e9
    """Core clock. CALIBRATED choice between IBM's two configurations (1.1 GHz / 72.1
    TFLOP/s in one, 1.5 GHz / 98.3 TFLOP/s in others; real-card/README.md): one core's
    matmul runs at 1,031.8 MAC/ns (matmul_cores.csv, 1024^3 on 1 core, 1040.8 us) and
    1,039.8 MAC/ns (2048^3 on 1 core, 8261.5 us): 92 % of the 1,126 MAC/ns of 1,024 MACs
    per cycle at 1.1 GHz, but only 67 % at 1.5 GHz, a loss no tile of that size explains.
    So 1.1 GHz; `fp16_peak_flops` (72.1e12) is computed from it."""

    lx_bytes: int = 2 * MIB
    """Scratchpad (LX) per core; no hardware cache, compiler-managed. Source: pytorch.org
    "Building Spyre as a Native PyTorch Device" (Oct 2026); torch-spyre docs."""

    lpddr_bytes: int = 128 * GIB
    """LPDDR5 per card (the only tier the runtime owns). Source: pytorch.org post;
    torch-spyre allocator notes."""

    lpddr_usable_bytes: int = 112 * GIB
    """LPDDR5 usable after ECC. Source: torch-spyre allocator notes."""

    lpddr_bandwidth: float = 166.4e9
    """LPDDR5 peak bandwidth in bytes/s, shared by all cores: 128 B per cycle at 1.3 GHz,
    the IBM configuration that also says 1.1 GHz (real-card/README.md). CALIBRATED
    choice: read streams reach 150-157 GB/s on the card (real-card/*.csv, see
    `lpddr_read_efficiency`), 92-94 % of it, where 204.8e9 (torch-spyre's cost model)
    would leave them at 75 %."""

    ring_bytes_per_cycle: int = 128
    """Ring bandwidth per direction in bytes per cycle. Source: torch-spyre docs,
    architecture/spyre_accelerator."""

    stick_bytes: int = 128
    """The unit of data movement and layout, 128-byte aligned. Source: torch-spyre
    (BYTES_IN_STICK)."""

    vf_segments: int = 8
    """VF memory mode: segments in the pool. Source: torch-spyre allocator notes
    (SpyreAllocator_VFmode)."""

    vf_segment_bytes: int = 12 * 10**9
    """VF memory mode: bytes per segment (12 GB). Source: as `vf_segments`."""

    pf_region_limit: int = 1024
    """MODEL ASSUMPTION (not published by IBM): PF memory mode maps one LPDDR5 region
    per tensor; the driver's table of regions is taken to hold at most this many."""

    host_link_lanes: int = 16
    """PCIe lanes of the host link. Source: IBM card spec (PCIe Gen5 x16)."""

    host_link_transfer_rate: float = 32e9
    """Transfers per second per lane of the host link (PCIe 5.0 signalling, 32 GT/s,
    128b/130b encoding). Source: IBM card spec (PCIe Gen5); PCIe 5.0 signalling rate."""

    host_transfer_latency_s: float = 2e-6
    """MODEL ASSUMPTION: fixed cost of one host <-> card DMA transfer (descriptor setup,
    doorbell, completion), paid on top of the bytes over the link."""

    core_span_bytes: int = 256 * MIB
    """Largest tensor slice one core addresses. Source: torch-spyre work-division planning."""

    # Timing of the simulator's instructions (spyre_ir/cost_model.py, "instruction
    # timing"). IBM publishes none of these: every field below is a MODEL ASSUMPTION,
    # chosen plausible and small enough not to dominate the sourced bandwidths and peak.

    sfp_lanes: int = 64
    """MODEL ASSUMPTION (not published by IBM): elements the special-function pipeline of
    one corelet takes per cycle - one stick of fp16 per cycle."""

    sfp_cost_simple: int = 1
    """MODEL ASSUMPTION: SFP passes (cycles per `sfp_lanes` elements) of a simple
    function: add, mul, cast, compare, select, floor, ceil ..."""

    sfp_cost_special: int = 5
    """CALIBRATED: SFP passes of a special function (exp, log, tanh, sigmoid, erf, sin,
    cos, pow, sqrt, rsqrt, reciprocal, div): a table lookup plus a polynomial. Fitted to
    elementwise_cores.csv gelu 4096x4096 on 1 core (1326.2 us: 5.6 passes of one
    corelet's 64 lanes at 1.1 GHz - the compiler puts an elementwise kernel's tiles on
    one corelet - gelu being a special and a simple pass; 5 gives 1430 us)."""

    sfp_cost_reduction: int = 8
    """CALIBRATED: SFP passes of a reduction (sum, mean, max, min, argmax, cumsum; var
    takes two): across a stick the lanes are folded step by step. Fitted to
    elementwise_cores.csv mean_rows 2048x8192 on 1 core (1985.0 us: 8.3 passes of one
    corelet's 64 lanes at 1.1 GHz; 8 gives 1906 us). Held out: the same on 2 and 4
    cores (1025.8, 551.1 us)."""

    sfp_cost_softmax: int = 5
    """MODEL ASSUMPTION: SFP passes of a softmax: a max pass, an exp-and-sum pass (a
    special function, 3) and a scaling pass."""

    sfp_cost_norm: int = 4
    """MODEL ASSUMPTION: SFP passes of layer_norm / rms_norm: the statistics (one or two
    passes), then normalise and apply the weight (two passes)."""

    lpddr_latency_s: float = 500e-9
    """MODEL ASSUMPTION: LPDDR5 access latency of one load/store/gather instruction
    (first byte). The load/store unit keeps several requests in flight, so the latency
    delays the instruction's result (the token pushed after it) but does not keep the
    unit busy: back-to-back transfers hide it, a dependent wait sees it."""

    ring_hop_latency_cycles: int = 10
    """MODEL ASSUMPTION: cycles for one step of a ring collective to cross one hop
    between neighbouring cores."""

    ring_ports_shared: bool = True
    """Each core has one port on the ring (32 cores on one bidirectional ring, 128 B per
    cycle per direction: `ring_bytes_per_cycle`, spyre-hardware.md), so a collective of
    cores `stride` apart shares every link it crosses with the `stride` groups
    interleaved with it (all run the same program at once): a step moves its chunk at
    `ring_bytes_per_cycle / stride` (cost_model.ring_link_sharers). *Derived* from the
    topology, not fitted: no row of real-card/ isolates ring traffic (the split-K rows
    use groups of adjacent cores, which share no link). False: every group has the
    links to itself (the uncalibrated card)."""

    ls_issue_cycles: int = 4
    """MODEL ASSUMPTION: cycles the load/store unit spends issuing one instruction to
    its port (LPDDR5, ring, LX rearrangement) - decoding the descriptor and computing
    addresses - before the port can start it. Small next to a transfer (a 64 x 64 f16
    tile of LPDDR5 takes ~1900 cycles when 32 cores stream at once), so it matters
    only for streams of tiny moves."""

    # CALIBRATED: fitted to the real card's device times (../shared/real-card/*.csv, each
    # row with its source); each names the rows. docs/simulator.md, "Calibration".

    pe_sustained_fraction: float = 0.92
    """CALIBRATED: the share of the PE array's peak a matmul instruction sustains
    (operand feed from LX, accumulator write-back), on top of the array's fill and
    drain. Fitted to matmul_cores.csv, 1 core: 1024^3 in 1040.8 us (1,031.8 MAC/ns) and
    2048^3 in 8261.5 us (1,039.8 MAC/ns), against 1,126.4 MAC/ns at 1.1 GHz."""

    lpddr_read_efficiency: float = 0.963
    """CALIBRATED: share of `lpddr_bandwidth` a stream of reads sustains (refresh,
    page misses, command overhead). Fitted to read-bound rows: matmul_splits.csv
    1x64x4096x12800 under 1x4x8x1 (685.47 us for 105 MB of weights) and
    elementwise_cores.csv mean_rows 2048x8192 on 32 cores (222.8 us, 33.6 MB), by least
    squares on the log of the simulated / measured time of the two (the simulated
    kernels pay their pipeline's start and end on top of the stream: 0.963 gives 672.0
    and 227.9 us; 0.945, the bytes over the time of the first, gave 684.7 and 231.9)."""

    lpddr_write_efficiency: float = 0.445
    """CALIBRATED: share of `lpddr_bandwidth` the writes of a kernel sustain while it
    also reads (every measured kernel does: the bus turns around between reads and
    writes, so interleaved writes cost about twice their bytes). Fitted to copy_sizes.csv
    32 MiB (662.6 us for 33.6 MB read + 33.6 MB written: the reads at
    `lpddr_read_efficiency` leave 453 us for the writes, 74.0 GB/s); it then predicts
    elementwise_cores.csv add on 32 cores (2 reads, 1 write: 872 us, measured 875.9)."""

    lpddr_core_bytes_in_flight: int = 22_400
    """CALIBRATED: bytes one core keeps in flight to LPDDR5 in each direction (its read
    and its write channel each), so one core reads at most this over `lpddr_latency_s`
    (44.8 GB/s) while it writes at the same rate, and cannot fill the card's bandwidth;
    every core of a multicast cohort takes its copy in through its own read channel.
    Fitted to elementwise_cores.csv add 4096x4096 on 1 core (1498.9 us for 67.1 MB read
    while 33.6 MB are written: 44.8 GB/s in). Held out: the rows whose cores each take a
    whole operand in (matmul_splits.csv under 1x32x1x1: 1x512x4096x4096 33.6 MB per core
    in 802.74 us, 1x64x4096x12800 104.9 MB in 2561.28 us, 1x64x1024x4096 8.4 MB in
    211.06 us: 41-42 GB/s each, and the 1x16x2x1 rows)."""

    lpddr_core_requests_in_flight: float = 0.0
    """Requests one core keeps in flight to LPDDR5 in each direction, a request never
    spanning two contiguous runs of device memory: a move of many short runs takes at
    least runs x latency / this of its channel, whatever its bytes ("Memory access
    requests are limited in Spyre, so contiguous stick layout is required for full
    bandwidth utilization": torch-spyre docs/source/user_guide/tensors_and_layouts.md,
    Access Patterns). 0 (the default card): no limit beyond `lpddr_core_bytes_in_flight`.
    OFF, not calibrated in use: fitted to the bmm rows of matmul_splits.csv as the card's
    per-core slices would move them (each a run per b_core sticks in torch-spyre's
    default layout), it comes out at 2.0-2.5 (shape A -> B, B -> A, even -> odd rows;
    `bench/bmm_mechanisms.py`). The compiler costs runs on a card that sets it (the
    matmul planner counts each tile's runs, a rows kernel takes box tiles of few runs,
    a batch-split bmm's tiles hold several batches: spyre_ir/lpddr_runs.py), and at 2.2
    the fidelity figures improve (`bench/fidelity.py --card`), but a row-major A
    ([1, 512, 4096], torch-spyre's layout of a 3-D tensor) cut along K is a request per
    row, so three prefill kernel targets of ibm_kernels.csv run 1.4-1.8x slower and one
    is lost (docs/simulator.md, "The batched matmuls")."""

    lpddr_multicast: bool = True
    """The card multicasts a box that several cores load at once (the cores of a cohort
    sharing an operand): LPDDR5 reads it once and the ring delivers it to each (README of
    real-card; matmul_splits.csv: the M and N splits of one shape move the same bytes
    from LPDDR5). False: every core's load is its own read (the uncalibrated card)."""

    allreduce_round_cycles_per_byte: float = 0.8
    """CALIBRATED: cycles an all-reduce (the partial sums of a split-K group) spends per
    byte of each core's share of its buffer (buffer / group) in each of its
    ceil(log2(group)) rounds of reduction - receiving a partner's partial share and
    adding it, the load/store unit busy meanwhile - on top of the ring's transfer time.
    The card's split-K is far slower than its ring's bandwidth allows, grows with the
    output a core holds and slowly with the group, and is not hidden by other tiles
    (1x8x2x2 costs what 1x4x4x2 does). Fitted to matmul_splits.csv under 1x4x4x2:
    1x512x4096x4096 (547.7 us, 215 us above the model without it) and 1x512x12800x4096
    (1695.7 us, 544 above): 0.82 cycles per byte of fp32 partial sums. Held out: every
    other split-K row."""

    # Derived values: computed, never typed in.

    @property
    def pes_per_core(self) -> int:
        return self.corelets_per_core * self.pe_rows * self.pe_cols

    @property
    def fp16_flops_per_cycle_per_core(self) -> int:
        """Each fp16 lane does one fused multiply-add (2 flops) per cycle."""
        return self.pes_per_core * self.pe_fp16_lanes * 2

    @property
    def fp16_peak_flops_per_core(self) -> float:
        return self.fp16_flops_per_cycle_per_core * self.clock_hz

    @property
    def fp16_peak_flops(self) -> float:
        """Card fp16 peak; 98.304e12 for the default card (the sourced figure)."""
        return self.fp16_peak_flops_per_core * self.cores

    @property
    def lx_total_bytes(self) -> int:
        """On-chip total: 64 MiB for the default card."""
        return self.lx_bytes * self.cores

    @property
    def ring_bandwidth(self) -> float:
        """Ring bandwidth per direction in bytes/s."""
        return self.ring_bytes_per_cycle * self.clock_hz

    @property
    def host_link_bandwidth(self) -> float:
        """Host link bytes/s per direction: lanes x rate x 128/130 / 8, about 63.0e9 for
        PCIe Gen5 x16."""
        return self.host_link_lanes * self.host_link_transfer_rate * 128 / 130 / 8

    @property
    def lpddr_bytes_per_cycle(self) -> float:
        """LPDDR5 bandwidth of the whole card per core clock cycle (136.5 bytes)."""
        return self.lpddr_bandwidth / self.clock_hz

    @property
    def lpddr_latency_cycles(self) -> float:
        """`lpddr_latency_s` in core clock cycles (750 for the default card)."""
        return self.lpddr_latency_s * self.clock_hz

    def elements_per_stick(self, dtype: str) -> int:
        """64 for f16, 32 for f32, 128 for int8 (torch-spyre's layout rule)."""
        try:
            return self.stick_bytes // ELEMENT_BYTES[dtype]
        except KeyError:
            raise ValueError(f"unknown element type '{dtype}'") from None

    def with_options(self, **changes: int | float) -> SpyreConfig:
        """A variant card (fewer cores, smaller LX ...) for tests and pass options."""
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ValueError(f"unknown hardware field(s): {', '.join(unknown)}")
        variant = replace(self, **changes)
        variant.check()
        return variant

    @property
    def lpddr_core_bytes_per_cycle(self) -> float:
        """What one core streams at most in each direction: its bytes in flight over
        the LPDDR5 latency (40.7 B per cycle, 44.8 GB/s, for the default card)."""
        return self.lpddr_core_bytes_in_flight / self.lpddr_latency_cycles

    @property
    def pe_sustained_macs_per_cycle(self) -> float:
        """fp16 MACs one core's PE arrays sustain per cycle on large tiles (942)."""
        return self.pes_per_core * self.pe_fp16_lanes * self.pe_sustained_fraction

    @property
    def sustained_fp16_flops(self) -> float:
        """The card's sustained fp16 rate: the peak times `pe_sustained_fraction`."""
        return self.fp16_peak_flops * self.pe_sustained_fraction

    @property
    def sustained_read_bandwidth(self) -> float:
        return self.lpddr_bandwidth * self.lpddr_read_efficiency

    @property
    def sustained_write_bandwidth(self) -> float:
        return self.lpddr_bandwidth * self.lpddr_write_efficiency

    def check(self) -> None:
        """Reject configurations no card can have."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or (f.name in _ZERO_MEANS_NONE and value == 0):
                continue
            if value <= 0:
                raise ValueError(f"hardware field '{f.name}' must be positive")
        if self.stick_bytes % 8:
            raise ValueError("stick_bytes must hold whole 8-byte elements")
        if self.lx_bytes % self.stick_bytes:
            raise ValueError("lx_bytes must be a whole number of sticks")
        for name in ("pe_sustained_fraction", "lpddr_read_efficiency",
                     "lpddr_write_efficiency"):  # fmt: skip
            if getattr(self, name) > 1:
                raise ValueError(f"hardware field '{name}' is a share: at most 1")


DEFAULT_CONFIG = SpyreConfig()
"""The card as calibrated on the real one's measurements (../shared/real-card/)."""

UNCALIBRATED_CONFIG = SpyreConfig(
    clock_hz=1.5e9,
    lpddr_bandwidth=204.8e9,
    pe_sustained_fraction=1.0,
    lpddr_read_efficiency=1.0,
    lpddr_write_efficiency=1.0,
    lpddr_core_bytes_in_flight=10**15,
    lpddr_multicast=False,
    allreduce_round_cycles_per_byte=0.0,
    ring_ports_shared=False,
    sfp_cost_special=3,
    sfp_cost_reduction=1,
)
"""The card before calibration, for comparison (bench/fidelity.py): the 1.5 GHz clock
derived from torch-spyre's 98.304 TFLOP/s, its 204.8 GB/s, the PE array and LPDDR5 at
their peaks, no per-core limit on requests in flight, no multicast, an all-reduce at
the ring's bandwidth, every collective with the ring's links to itself."""


# ---------------------------------------------------------------- the module's card

CARD_ATTR = "spyre.card"
"""Module attribute naming the card a module is compiled for: a dictionary of the
SpyreConfig fields that differ from DEFAULT_CONFIG (none: the default card)."""


def card_attr(config: SpyreConfig):
    """`config` as the `spyre.card` dictionary attribute (its non-default fields)."""
    from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, f64, i64

    entries = {}
    for f in fields(config):
        value = getattr(config, f.name)
        if value == getattr(DEFAULT_CONFIG, f.name):
            continue
        if isinstance(value, bool) or isinstance(value, int):
            entries[f.name] = IntegerAttr(int(value), i64)
        else:
            entries[f.name] = FloatAttr(float(value), f64)
    return DictionaryAttr(entries)


_CARDS: dict[tuple, SpyreConfig] = {}


def card_from_attr(attr) -> SpyreConfig:
    """The SpyreConfig a `spyre.card` attribute describes (cached per attribute)."""
    from xdsl.dialects.builtin import DictionaryAttr

    if not isinstance(attr, DictionaryAttr):
        raise ValueError(f"{CARD_ATTR} is a dictionary of hardware fields, not {attr}")
    key = tuple(sorted(attr.data.items(), key=lambda entry: entry[0]))
    try:
        found = _CARDS.get(key)
    except TypeError:  # an entry of a kind that cannot be a key (a nested dictionary)
        key, found = None, None
    if found is not None:
        return found
    kinds = {f.name: f.type for f in fields(DEFAULT_CONFIG)}
    changes = {}
    for name, value in attr.data.items():
        if name not in kinds:
            raise ValueError(f"{CARD_ATTR}: unknown hardware field '{name}'")
        changes[name] = _card_attr_value(name, kinds[name], value)
    try:
        config = DEFAULT_CONFIG.with_options(**changes)
    except ValueError as e:
        raise ValueError(f"{CARD_ATTR}: {e}") from None
    if key is not None:
        _CARDS[key] = config
    return config


def card_of(op) -> SpyreConfig:
    """The card the module holding `op` is compiled for: its `spyre.card` attribute, or
    DEFAULT_CONFIG. The one accessor passes, verifiers, cost models and the simulator
    use."""
    while op is not None:
        attr = op.attributes.get(CARD_ATTR) if hasattr(op, "attributes") else None
        if attr is not None:
            return card_from_attr(attr)
        op = op.parent_op()
    return DEFAULT_CONFIG


def _card_attr_value(name: str, kind: str, value) -> int | float | bool:
    """The Python value of one `spyre.card` entry, as card_attr writes it: an integer
    attribute for an int field, 0 or 1 for a bool, an integer or finite float for a
    float; a ValueError naming the field for anything else (1.5 for `cores` is not 1)."""
    import math

    from xdsl.dialects.builtin import FloatAttr, IntegerAttr, i1

    data = value.value.data if isinstance(value, IntegerAttr | FloatAttr) else None
    if kind == "int" and isinstance(value, IntegerAttr) and value.type != i1:
        return int(data)
    if kind == "bool" and isinstance(value, IntegerAttr) and data in (0, 1, -1):
        return bool(data)  # `true` parses as i1 -1 in xDSL
    if kind == "float" and data is not None and math.isfinite(data):
        return float(data)
    want = {"bool": "0 or 1", "int": "an integer"}.get(kind, "a finite number")
    raise ValueError(f"{CARD_ATTR}: hardware field '{name}' must be {want}, not {value}")


def set_card(module, config: SpyreConfig) -> None:
    """Make `module` target `config` (no attribute for the default card)."""
    if config == DEFAULT_CONFIG:
        module.attributes.pop(CARD_ATTR, None)
    else:
        module.attributes[CARD_ATTR] = card_attr(config)


def card_from_json(text: str) -> SpyreConfig:
    """A card description (JSON object of SpyreConfig fields) as a variant of the
    default card; unknown fields and bad values are ValueErrors."""
    import json

    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError("a card description is a JSON object of hardware fields")
    kinds = {f.name: f.type for f in fields(SpyreConfig)}
    for name, value in data.items():
        _check_card_value(name, kinds.get(name), value)
        if kinds.get(name) == "float":
            data[name] = float(value)  # 1000000000 for clock_hz is 1e9, a float
    return DEFAULT_CONFIG.with_options(**data)


def _check_card_value(name: str, kind: str | None, value: object) -> None:
    """A JSON value of the right kind for SpyreConfig field `name` (declared `kind`): a
    bool for a bool, an integer for an int (not 1.5, not true), a finite number for a
    float; a ValueError naming the field otherwise. Unknown fields are with_options'."""
    import json
    import math

    if kind is None:
        return
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = (isinstance(value, int | float) and not isinstance(value, bool)
              and math.isfinite(value))  # fmt: skip
    if not ok:
        want = {"bool": "true or false", "int": "an integer"}.get(kind, "a finite number")
        raise ValueError(f"hardware field '{name}' must be {want}, not {json.dumps(value)}")


def read_card(path: str) -> SpyreConfig:
    """The card description in the JSON file `path` (`--card` of spyre-opt and
    spyre-run); a ValueError naming the file for anything wrong with it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"--card {path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"--card {path}: not UTF-8 text (byte {e.start})") from None
    try:
        return card_from_json(text)
    except (TypeError, ValueError) as e:
        raise ValueError(f"--card {path}: {e}") from None
