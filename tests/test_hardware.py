"""The machine model: sourced values, derived values computed, variants checked."""

from __future__ import annotations

import dataclasses

import pytest

from spyre_ir.hardware import DEFAULT_CONFIG, UNCALIBRATED_CONFIG, SpyreConfig, unit_for


def test_sourced_values_of_the_default_card() -> None:
    c = DEFAULT_CONFIG
    assert (c.cores, c.corelets_per_core, c.pe_rows, c.pe_cols) == (32, 2, 8, 8)
    assert c.lx_bytes == 2 * 2**20
    assert c.lpddr_bandwidth == 166.4e9  # 128 B per cycle at 1.3 GHz (IBM's config)
    assert c.stick_bytes == 128
    assert c.ring_bytes_per_cycle == 128


def test_derived_values_are_computed() -> None:
    c = DEFAULT_CONFIG
    # 72.0896e12 = 32 cores x 2 corelets x 64 PEs x 8 lanes x 2 flop x 1.1 GHz
    assert c.fp16_peak_flops == pytest.approx(72.0896e12)
    # the uncalibrated card: IBM's other configuration, 98.304e12 at 1.5 GHz
    assert UNCALIBRATED_CONFIG.fp16_peak_flops == pytest.approx(98.304e12)
    assert c.sustained_fp16_flops == pytest.approx(72.0896e12 * 0.92)
    assert c.lx_total_bytes == 64 * 2**20
    assert c.ring_bandwidth == pytest.approx(128 * 1.1e9)
    assert c.elements_per_stick("f16") == 64
    assert c.elements_per_stick("f32") == 32
    assert c.elements_per_stick("i8") == 128
    half = c.with_options(cores=16)
    assert half.fp16_peak_flops == pytest.approx(c.fp16_peak_flops / 2)
    assert half.lx_total_bytes == 16 * c.lx_bytes


def test_variants_for_tests_and_pass_options() -> None:
    small = DEFAULT_CONFIG.with_options(cores=8, lx_bytes=65536)
    assert (small.cores, small.lx_bytes) == (8, 65536)
    assert DEFAULT_CONFIG.cores == 32  # frozen: the default is untouched
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_CONFIG.cores = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"cores": 0}, "must be positive"),
        ({"lx_bytes": 1000}, "whole number of sticks"),
        ({"warp_size": 32}, "unknown hardware field"),
    ],
)
def test_impossible_variants_are_rejected(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DEFAULT_CONFIG.with_options(**changes)


def test_unknown_element_type() -> None:
    with pytest.raises(ValueError, match="unknown element type"):
        DEFAULT_CONFIG.elements_per_stick("f64")


def test_units_by_op() -> None:
    assert unit_for("spyre.matmul") == "pe"
    assert unit_for("spyre.add") == "pe"
    assert unit_for("spyre.exp") == "sfp"
    assert unit_for("spyre.sum") == "sfp"
    assert unit_for("spyre.round") == "sfp"  # as floor and ceil
    assert unit_for("spyre.bitwise_and") == "pe"  # integer arithmetic, as add
    assert unit_for("spyre.transpose") == "ls"


def test_every_field_documents_its_source() -> None:
    import inspect

    source = inspect.getsource(SpyreConfig)
    for f in dataclasses.fields(SpyreConfig):
        after = source.split(f"    {f.name}:", 1)[1]
        doc = after.split('"""')[1] if '"""' in after.split("\n", 2)[1] else ""
        assert doc.strip(), f"field {f.name} has no docstring"
