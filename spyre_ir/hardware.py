"""The machine model of the Spyre card: the one place every hardware number lives.

Passes, cost models and the simulator ask a `SpyreConfig` for numbers; none of them
types a hardware constant of its own. Sourced values are fields (each with its source);
values derived from them are properties, so a variant (fewer cores, smaller LX) stays
consistent. See ../shared/spyre-hardware.md and docs/simulator.md.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

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


# Which unit of a corelet runs a tile operation (torch-spyre docs,
# architecture/spyre_accelerator; pytorch.org "Building Spyre as a Native PyTorch Device"):
# the PE array does matmul and plain elementwise arithmetic, the special-function pipeline
# does transcendental functions, normalisation-style reductions and conversions, and the
# load/store units move and rearrange data.
SFP_OPS = frozenset(
    f"spyre.{name}"
    for name in (
        "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid", "erf", "silu",
        "gelu", "sin", "cos", "floor", "ceil", "pow", "div", "cast", "sum", "mean",
        "reduce_max", "reduce_min", "argmax", "argmin", "var", "cumsum", "softmax",
        "layer_norm", "rms_norm",
    )
)  # fmt: skip
LS_OPS = frozenset(
    f"spyre.{name}"
    for name in (
        "reshape", "transpose", "broadcast_to", "slice", "concat", "pad", "gather",
        "scatter", "restickify",
    )
)  # fmt: skip


def unit_for(op_name: str) -> str:
    """'pe', 'sfp' or 'ls': the unit that runs a tile of the L1 op `op_name`."""
    if op_name in SFP_OPS:
        return "sfp"
    if op_name in LS_OPS:
        return "ls"
    return "pe"


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
    """fp16 SIMD lanes of one PE. Not published directly: it is what makes the sourced
    fp16 peak (98.304 TFLOP/s) come out at the 1.5 GHz clock of the 14 nm ancestor core
    (IBM Research); see spyre-hardware.md, row "clock"."""

    clock_hz: float = 1.5e9
    """Core clock. Derived in spyre-hardware.md from the fp16 peak: 98.304e12 / (32 x 2 x
    64 x 8 x 2); the 14 nm ancestor core also ran at 1.5 GHz (IBM Research). Kept as a
    field so a variant card can change it; `fp16_peak_flops` is computed from it."""

    lx_bytes: int = 2 * MIB
    """Scratchpad (LX) per core; no hardware cache, compiler-managed. Source: pytorch.org
    "Building Spyre as a Native PyTorch Device" (Oct 2026); torch-spyre docs."""

    lpddr_bytes: int = 128 * GIB
    """LPDDR5 per card (the only tier the runtime owns). Source: pytorch.org post;
    torch-spyre allocator notes."""

    lpddr_usable_bytes: int = 112 * GIB
    """LPDDR5 usable after ECC. Source: torch-spyre allocator notes."""

    lpddr_bandwidth: float = 204.8e9
    """LPDDR5 bandwidth in bytes/s, shared by all cores. Source: torch-spyre
    work-division cost model constant."""

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

    sfp_cost_special: int = 3
    """MODEL ASSUMPTION: SFP passes of a special function (exp, log, tanh, sigmoid,
    erf, sin, cos, pow, sqrt, rsqrt, reciprocal, div): a table lookup plus a short
    polynomial, pipelined."""

    sfp_cost_reduction: int = 1
    """MODEL ASSUMPTION: SFP passes of a reduction (sum, mean, max, min, argmax, cumsum):
    one pass over its input (var takes two)."""

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

    ls_issue_cycles: int = 4
    """MODEL ASSUMPTION: cycles the load/store unit spends issuing one instruction to
    its port (LPDDR5, ring, LX rearrangement) - decoding the descriptor and computing
    addresses - before the port can start it. Small next to a transfer (a 64 x 64 f16
    tile of LPDDR5 takes ~1900 cycles when 32 cores stream at once), so it matters
    only for streams of tiny moves."""

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

    def check(self) -> None:
        """Reject configurations no card can have."""
        for f in fields(self):
            if getattr(self, f.name) <= 0:
                raise ValueError(f"hardware field '{f.name}' must be positive")
        if self.stick_bytes % 8:
            raise ValueError("stick_bytes must hold whole 8-byte elements")
        if self.lx_bytes % self.stick_bytes:
            raise ValueError("lx_bytes must be a whole number of sticks")


DEFAULT_CONFIG = SpyreConfig()
