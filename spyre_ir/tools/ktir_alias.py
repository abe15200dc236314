"""spyre-run's inputs for KTIR views that alias: views of several element types that
share memory (ktir_address: one pointer per type, marked with the region) read one
set of bytes. The region's bytes are drawn once, from the pointers' own random values
in argument order with the index pointers' (bounded by the tables they index) last, so
indices stay in range where they overlap data; each pointer's array is then its part
of those bytes, in its type, the same for the reference interpreter and the card.
Given `--inputs` must agree on the bytes they share."""

from __future__ import annotations

import numpy as np

from spyre_ir.dialects.spyre import element_type_name
from spyre_ir.hardware import ELEMENT_BYTES
from spyre_ir.interp.ktir_races import Alias
from spyre_ir.lowering.ktir_address import AddressBuffer
from spyre_ir.lowering.ktir_values import Pointer
from spyre_ir.tools import spyre_run as R


def aliases_of(buffers: list[AddressBuffer], pointers: dict[int, Pointer]) -> dict[int, Alias]:
    """The pointers (by argument position) that share a region with another type's."""
    out = {}
    for b in buffers:
        if b.region is not None and b.argument in pointers:
            width = ELEMENT_BYTES[element_type_name(b.element)]
            out[b.argument] = Alias(pointers[b.argument].name, b.region, b.byte_start, width)
    return out


def _span(alias: Alias, array: np.ndarray) -> tuple[int, int]:
    return alias.byte_start, alias.byte_start + array.nbytes


def share_regions(
    arrays: dict[int, np.ndarray],
    aliases: dict[int, Alias],
    bounded: set[int],
    given: bool,
) -> None:
    """Make the arrays of pointers sharing a region views of one set of bytes (in
    place): drawn ones from their values (`bounded`, the index pointers, last), given
    ones checked to agree."""
    regions: dict[int, list[int]] = {}
    for k, a in aliases.items():
        regions.setdefault(a.region, []).append(k)
    for region, members in regions.items():
        start = min(_span(aliases[k], arrays[k])[0] for k in members)
        end = max(_span(aliases[k], arrays[k])[1] for k in members)
        memory = np.zeros(end - start, np.uint8)
        for k in sorted(members, key=lambda k: (k in bounded, k)):
            lo, hi = _span(aliases[k], arrays[k])
            memory[lo - start : hi - start] = (
                np.ascontiguousarray(arrays[k]).view(np.uint8).reshape(-1)
            )
        for k in members:
            lo, hi = _span(aliases[k], arrays[k])
            shared = memory[lo - start : hi - start].view(arrays[k].dtype).reshape(arrays[k].shape)
            if given and not np.array_equal(
                shared.view(np.uint8), np.ascontiguousarray(arrays[k]).view(np.uint8)
            ):
                others = ", ".join(f"%{aliases[j].name}" for j in members if j != k)
                raise R.RunError(
                    f"the --inputs of %{aliases[k].name} and {others} disagree on the bytes "
                    f"they share (their views alias from byte {region}): give the same bytes"
                )
            arrays[k] = shared.copy()


def alias_note(aliases: dict[int, Alias], arrays: dict[int, np.ndarray], unit: str) -> str:
    """spyre-run's line saying which pointers' views alias."""
    regions: dict[int, list[int]] = {}
    for k, a in aliases.items():
        regions.setdefault(a.region, []).append(k)
    parts = []
    for region, members in sorted(regions.items()):
        end = max(_span(aliases[k], arrays[k])[1] for k in members)
        names = ", ".join(f"%{aliases[k].name}" for k in sorted(members))
        parts.append(f"{names} (bytes {region}..{end - 1})")
    return (
        f"views alias (addresses read as {unit}s): {'; '.join(parts)} share memory, drawn "
        "once; the KTIR interpreter checks that no access races (docs/ktir.md)"
    )
