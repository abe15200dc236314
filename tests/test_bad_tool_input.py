"""Bad input to the tools' options, found by hand in session 8: a --card JSON file with
values of the wrong kind, a module's `spyre.card` attribute of the wrong kind, and
--scalars values a kernel's integer argument cannot take. Each is one clear error and
exit 1 - before, a silent truncation (cores = 1.5 ran on one core), an internal error
(an OverflowError, an AttributeError) or a message naming neither file nor field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spyre_ir.tools import spyre_opt, spyre_run

KTIR = Path(__file__).parent / "ktir"

ADD = """\
func.func @main(%a: tensor<64x64xf16>) -> tensor<64x64xf16> {
  %y = spyre.add %a, %a : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf16>
  func.return %y : tensor<64x64xf16>
}
"""


def opt(argv: list[str]) -> int:
    try:
        spyre_opt.main(argv)
    except SystemExit as done:
        return done.code
    return 0


def clean(err: str) -> bool:
    return "Traceback" not in err and "internal error" not in err


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"cores": "many"}', "hardware field 'cores' must be an integer, not \"many\""),
        ('{"cores": 1.5}', "hardware field 'cores' must be an integer, not 1.5"),
        ('{"cores": true}', "hardware field 'cores' must be an integer, not true"),
        ('{"cores": null}', "hardware field 'cores' must be an integer, not null"),
        ('{"cores": 1e400}', "hardware field 'cores' must be an integer, not Infinity"),
        ('{"clock_hz": NaN}', "hardware field 'clock_hz' must be a finite number, not NaN"),
        ('{"lpddr_multicast": 1}', "hardware field 'lpddr_multicast' must be true or false, not 1"),
        ("\udcff", "not UTF-8 text (byte 0)"),
    ],
)  # fmt: skip
def test_card_json_of_the_wrong_kind(tmp_path, capsys, text, message):
    path, card = tmp_path / "add.mlir", tmp_path / "card.json"
    path.write_text(ADD)
    card.write_bytes(text.encode("utf-8", "surrogateescape"))
    for tool in (
        lambda: opt([str(path), "-p", "spyre-compile", "--card", str(card)]),
        lambda: spyre_run.main([str(path), "--card", str(card)]),
    ):
        code = tool()
        err = capsys.readouterr().err
        assert code == 1
        assert f"--card {card}: {message}" in err, err
        assert clean(err)


def test_card_json_of_the_right_kinds_runs(tmp_path, capsys):
    path, card = tmp_path / "add.mlir", tmp_path / "card.json"
    path.write_text(ADD)
    # An integer for a float field is a number; a bool field takes true or false.
    card.write_text(json.dumps({"clock_hz": 1000000000, "lpddr_multicast": False, "cores": 8}))
    assert opt([str(path), "-p", "spyre-compile", "--card", str(card)]) == 0
    assert "spyre.card = {cores = 8 : i64, clock_hz = 1.000000e+09 : f64" in capsys.readouterr().out


@pytest.mark.parametrize(
    "card, message",
    [
        ('{cores = "x"}', "spyre.card: hardware field 'cores' must be an integer, not \"x\""),
        ("{cores = 1.5 : f64}", "spyre.card: hardware field 'cores' must be an integer, not 1.500000e+00 : f64"),
        ("{cores = true}", "spyre.card: hardware field 'cores' must be an integer, not true"),
        ("{cores = [1]}", "spyre.card: hardware field 'cores' must be an integer, not [1 : i64]"),
        ("{cores = {a = 1}}", "spyre.card: hardware field 'cores' must be an integer, not {a = 1 : i64}"),
        ("{cores = 0}", "spyre.card: hardware field 'cores' must be positive"),
        ("{lpddr_multicast = 2}", "spyre.card: hardware field 'lpddr_multicast' must be 0 or 1, not 2 : i64"),
        ("3", "spyre.card is a dictionary of hardware fields, not 3 : i64"),
    ],
)  # fmt: skip
def test_card_attribute_of_the_wrong_kind_is_located(tmp_path, capsys, card, message):
    path = tmp_path / "carded.mlir"
    path.write_text(f"builtin.module attributes {{spyre.card = {card}}} {{\n{ADD}}}\n")
    for tool in (
        lambda: opt([str(path), "-p", "spyre-compile"]),
        lambda: spyre_run.main([str(path), "--check"]),
    ):
        code = tool()
        err = capsys.readouterr().err
        assert code == 1
        assert f"carded.mlir:1:1: error: 'builtin.module': {message}" in err, err
        assert clean(err)


def test_card_attribute_of_the_right_kinds_runs(tmp_path, capsys):
    path = tmp_path / "carded.mlir"
    path.write_text(f"builtin.module attributes {{spyre.card = {{cores = 4 : index, "
                    f"lpddr_multicast = true}}}} {{\n{ADD}}}\n")  # fmt: skip
    assert spyre_run.main([str(path), "--check"]) == 0
    assert "check: ok" in capsys.readouterr().out


@pytest.mark.parametrize(
    "scalars, message",
    [
        ("shift=1e400", "--scalars: shift is index, but inf is not an integer"),
        ("shift=nan", "--scalars: shift is index, but nan is not an integer"),
        ("shift=1.5", "--scalars: shift is index, but 1.5 is not an integer"),
        ("shift=99999999999999999999999", "shift = 9.9999999999999992e+22 is outside the integers index holds"),
        ("shift=-9223372036854775809", "is outside the integers index holds and --scalars carries exactly"),
        ("shift=3,nope=1", "--scalars names nope, not a scalar argument of @causal_rows (its scalar arguments: shift)"),
        ("shift=3,shift=4", "--scalars: shift is given twice"),
    ],
)  # fmt: skip
def test_scalars_an_integer_argument_cannot_take(capsys, scalars, message):
    code = spyre_run.main([str(KTIR / "causal_rows.mlir"), "--check", "--scalars", scalars])
    err = capsys.readouterr().err
    assert code == 1
    assert f"spyre-run: error: {message}" in err or message in err, err
    assert clean(err)


def test_ktir_pass_option_scalar_of_infinity_is_an_error(capsys):
    path = str(KTIR / "causal_rows.mlir")
    assert opt([path, "-p", 'ktir-to-dataflow{scalars="shift=1e400"}']) == 1
    err = capsys.readouterr().err
    assert "scalar %shift is index but inf is not an integer" in err, err
    assert clean(err)


@pytest.mark.parametrize(
    "pipeline, message",
    [
        ("spyre-compile{cores=abc}", "spyre-compile: option cores=abc is not an integer"),
        ("spyre-compile{cores=1.5}", "spyre-compile: option cores=1.5 is not an integer"),
        ("spyre-compile{cores=1,2}", "spyre-compile: option cores=1,2 is not an integer"),
        ("spyre-tile{lx-bytes=abc}", "spyre-tile: option lx-bytes=abc is not an integer"),
        ("spyre-double-buffer{enable=3}", "spyre-double-buffer: option enable=3 is not true or false"),
        ("canonicalize,spyre-compile{cores=x}", "spyre-compile: option cores=x is not an integer"),
    ],
)  # fmt: skip
def test_pass_option_of_the_wrong_type_names_pass_and_option(tmp_path, capsys, pipeline, message):
    # xDSL's own words were "Incompatible types: given ('abc',), expected <class 'int'>".
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    assert opt([str(path), "-p", pipeline]) == 1
    err = capsys.readouterr().err
    assert err == f"spyre-opt: error: {message}\n"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--trace", "{file}"], "--trace {file} is the file FILE names"),
        (["--output", "{file}"], "--output {file} is the file FILE names"),
        (["--output", "{dir}/r.npz", "--trace", "{dir}/r.npz"], "--trace {dir}/r.npz is the file --output names"),
        (["--inputs", "{dir}/x.npy,{dir}/y.npy", "--output", "{dir}/y.npy"], "--output {dir}/y.npy is the file --inputs names"),
        (["--reference", "{dir}/ref.mlir", "--trace", "{dir}/ref.mlir"], "--trace {dir}/ref.mlir is the file --reference names"),
    ],
)  # fmt: skip
def test_spyre_run_never_overwrites_what_it_reads(tmp_path, capsys, extra, message):
    # Before, `spyre-run f.mlir --trace f.mlir` replaced the program with its trace.
    import numpy as np

    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    (tmp_path / "ref.mlir").write_text(ADD)
    for name in ("x.npy", "y.npy"):
        np.save(tmp_path / name, np.zeros((64, 64), np.float16))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    argv = [a.format(file=path, dir=tmp_path) for a in extra]
    assert spyre_run.main([str(path), *argv]) == 1
    err = capsys.readouterr().err
    assert (
        f"spyre-run: error: {message.format(file=path, dir=tmp_path)}: it would be overwritten"
        in err
    )
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
