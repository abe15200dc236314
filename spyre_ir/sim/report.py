"""The simulated card's report: per program (`program_stats`) and for a run (`run_report`).

Fields and their meaning: docs/simulator.md ("The report").
"""

from __future__ import annotations

from spyre_ir import cost_model as cm
from spyre_ir.dialects import core
from spyre_ir.dialects import dataflow as D
from spyre_ir.hardware import SpyreConfig
from spyre_ir.sim.lpddr import stick_geometry
from spyre_ir.sim.scheduler import LPDDR, LS, PE, RESOURCES, RING, SFP


def program_stats(program) -> dict:
    """The report of one program run (`_Program` of spyre_ir.sim.engine): its time,
    roofline, counts, bottleneck and utilization."""
    config, op = program.config, program.op
    cycles = program.cycles
    us = cm.cycles_to_us(cycles, config)
    flops = program.flops * program.cores
    io_bytes = sum(
        tensor_bytes(arg.type, config) for arg in (*op.input_memories, *op.output_memories)
    )
    minimal_bytes = min(io_bytes, program.lpddr_bytes)
    roofline_s = max(flops / config.fp16_peak_flops, minimal_bytes / config.lpddr_bandwidth)
    roofline_us = roofline_s * 1e6
    units = {u.name: u for u in program.units}

    def busy(name: str, resource: int | None = None) -> float:
        """Busy cycles of a unit's resource; of the unit: its busiest resource (the
        LS unit's ports and its own time work concurrently)."""
        u = units.get(name)
        if u is None:
            return 0.0
        return max(u.busy) if resource is None else u.busy[resource]

    busy_cycles = {
        "pe": max(busy("pe0", PE), busy("pe1", PE)),
        "sfp": max(busy("sfp0", SFP), busy("sfp1", SFP)),
        "lpddr": busy("ls", LPDDR),
        "ring": busy("ls", RING),
        "ls": busy("ls", LS),
    }
    bottleneck = max(busy_cycles, key=lambda r: busy_cycles[r]) if cycles else None
    unit_busy = {name: busy(name) for name in core.UNITS}
    unit_busy.update({
        "pe": (unit_busy["pe0"] + unit_busy["pe1"]) / 2,
        "sfp": (unit_busy["sfp0"] + unit_busy["sfp1"]) / 2,
        "lpddr": busy_cycles["lpddr"],
        "ring": busy_cycles["ring"],
    })  # fmt: skip
    fraction = roofline_us / us if us else 1.0
    assert fraction <= 1 + 1e-9, f"@{op.sym_name.data}: faster than the roofline"
    peak = op.lx_peak_bytes.value.data if op.lx_peak_bytes is not None else _lx_peak(op)
    return {
        "name": op.sym_name.data,
        "cores": program.cores,
        "simulated_us": us,
        "roofline_us": roofline_us,
        "roofline_fraction": fraction,
        "flops": flops,
        "lpddr_bytes": program.lpddr_bytes,
        "delivered_bytes": program.delivered_bytes,
        "ring_bytes": int(round(program.ring_bytes)),
        "lx_peak_bytes": peak,
        "bottleneck": bottleneck,
        "utilization": {k: (v / cycles if cycles else 0.0) for k, v in unit_busy.items()},
        "busy_us": {k: cm.cycles_to_us(v, config) for k, v in busy_cycles.items()},
        # for the overall report
        "_busy_cycles": busy_cycles,
        "_unit_busy": unit_busy,
        "_cycles": cycles,
    }


def tensor_bytes(memory: object, config: SpyreConfig) -> int:
    """Bytes of a whole tensor in LPDDR5, in whole sticks."""
    assert isinstance(memory, D.DdrType)
    shape = memory.get_shape()
    stick_dim, per_stick = stick_geometry(memory, config)
    return cm.box_sticks(shape, shape, stick_dim, per_stick) * config.stick_bytes


def _lx_peak(op: core.ProgramOp) -> int:
    ends = [
        (a.offset_value if a.offset is not None else 0) + a.buffer.type.nbytes
        for a in op.body.block.ops
        if isinstance(a, D.AllocLxOp)
    ]
    return max(ends, default=0)


def run_report(kernels: list[dict], config: SpyreConfig) -> dict:
    """The whole run: sums over programs (they run one after another)."""
    cycles = sum(k["_cycles"] for k in kernels)
    simulated = sum(k["simulated_us"] for k in kernels)
    roofline = sum(k["roofline_us"] for k in kernels)
    fraction = roofline / simulated if simulated else 1.0
    assert fraction <= 1 + 1e-9, "faster than the roofline"
    longest = max(kernels, key=lambda k: k["_cycles"], default=None)
    keys = kernels[0]["_unit_busy"] if kernels else {}
    utilization = {
        key: (sum(k["_unit_busy"][key] for k in kernels) / cycles if cycles else 0.0)
        for key in keys
    }
    busy = {
        r: cm.cycles_to_us(sum(k["_busy_cycles"][r] for k in kernels), config) for r in RESOURCES
    }
    public = [{k: v for k, v in kern.items() if not k.startswith("_")} for kern in kernels]
    return {
        "simulated_us": simulated,
        "roofline_us": roofline,
        "roofline_fraction": fraction,
        "flops": sum(k["flops"] for k in kernels),
        "lpddr_bytes": sum(k["lpddr_bytes"] for k in kernels),
        "delivered_bytes": sum(k["delivered_bytes"] for k in kernels),
        "ring_bytes": sum(k["ring_bytes"] for k in kernels),
        "lx_peak_bytes": max((k["lx_peak_bytes"] for k in kernels), default=0),
        "bottleneck": None if longest is None else longest["bottleneck"],
        "utilization": utilization,
        "busy_us": busy,
        "kernels": public,
    }
