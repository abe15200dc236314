"""Mutation classes of the fuzzer's second campaign (`spyre_fuzz.py --classes new`),
none of which the first one tries:

* `swap_types`: the types of one op's signature swapped, or one replaced by another
  type of the file (operands whose types disagree with their values or each other);
* `region_arity`: the seed in generic form with a region added to or dropped from one
  op, or an argument added to or dropped from one block;
* `attr_kind`: every value of one attribute or property name, on every op, replaced by
  an attribute of another kind (a string for an integer, a dict for a layout ...), or
  an attribute of a known name and the wrong kind given to every op;
* `bad_pipeline` (a command, not a text): `spyre-opt -p` with a registered pass and a
  bad option (unknown, out of range, of the wrong kind, malformed braces);
* `npy_inputs` (a command): `spyre-run --inputs` with .npy files of the wrong dtype,
  shape, count, byte order or format.
"""

from __future__ import annotations

import functools
import random
import re

import numpy as np

# ---------------------------------------------------------------- text mutations

SIGNATURE = re.compile(r" : ([^\n]+)$", re.MULTILINE)


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside any brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "<([{":
            depth += 1
        elif c in ">)]}" and not (c == ">" and text[i - 1 : i] == "-"):
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


FOREIGN_TYPES = ["tensor<8x4xf16>", "tensor<4x8xf32>", "tensor<1xf16>", "f16", "index",
                 "tensor<?x8xf16>", "!dataflow.lx<4x8xf16>", "none", "tensor<4x8xi64>",
                 "tensor<4x8xf16, #spyre.stick<dim = 0, device = [8, 4], map = [1, 0], strides = [1, 8], pad = 0>>"]  # fmt: skip


def swap_types(text: str, rng: random.Random) -> str:
    """Two types of one op's trailing signature swapped, or one replaced by a type of
    another op of the file."""
    found = [m for m in SIGNATURE.finditer(text) if "," in m.group(1) or "->" in m.group(1)]
    if not found:
        return text
    m = rng.choice(found)
    left, arrow, right = m.group(1).partition(" -> ")
    types = _split_top(left) + (_split_top(right) if arrow else [])
    everywhere = [
        t for s in SIGNATURE.finditer(text) for t in _split_top(s.group(1).split(" -> ")[0])
    ]
    everywhere += FOREIGN_TYPES  # a file of one type still gets a type that differs
    if rng.random() < 0.5 and len(types) >= 2:
        i, j = rng.sample(range(len(types)), 2)
        types[i], types[j] = types[j], types[i]
    else:
        types[rng.randrange(len(types))] = rng.choice(everywhere)
    count = len(_split_top(left))
    new = ", ".join(types[:count]) + (f" -> {', '.join(types[count:])}" if arrow else "")
    return text[: m.start(1)] + new + text[m.end(1) :]


@functools.lru_cache(maxsize=512)
def generic_form(text: str) -> str | None:
    """The seed printed in generic form (None if it does not parse and verify)."""
    import io

    from xdsl.printer import Printer

    from spyre_ir.diagnostics import LocatedParser, verify_all
    from spyre_ir.registry import make_context

    try:
        module = LocatedParser(make_context(), text, "seed", 0).parse_module()
        if verify_all(module, "seed"):
            return None
        out = io.StringIO()
        Printer(stream=out, print_generic_format=True).print_op(module)
        return out.getvalue()
    except Exception:  # noqa: BLE001 - a seed that does not parse has no generic form
        return None


def _closing(text: str, start: int) -> int | None:
    """The index of the bracket closing the one at `start`."""
    pairs = {"{": "}", "(": ")", "[": "]", "<": ">"}
    opening, closing = text[start], pairs[text[start]]
    depth = 0
    for i in range(start, len(text)):
        if text[i] == opening:
            depth += 1
        elif text[i] == closing and not (closing == ">" and text[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return i
    return None


def region_arity(text: str, rng: random.Random) -> str:
    """In generic form: one op given an extra (empty or one-block) region, one region
    dropped, or one block given an extra argument or one less."""
    generic = generic_form(text)
    if generic is None:
        return text
    regions = [m.start() + 1 for m in re.finditer(r"\(\{", generic)]
    blocks = list(re.finditer(r"\^bb\d+\(([^)]*)\):", generic))
    action = rng.randrange(4)
    if action == 0 and regions:  # one more region, first in the list
        at = rng.choice(regions)
        extra = rng.choice(
            ("{\n}, ", "{\n^bb0(%z: index):\n}, ", '{\n  "scf.yield"() : () -> ()\n}, ')
        )
        return generic[:at] + extra + generic[at:]
    if action == 1 and regions:  # the first region of one op dropped
        at = rng.choice(regions)
        end = _closing(generic, at)
        if end is None:
            return generic
        rest = generic[end + 1 :]
        if rest.startswith(", "):
            return generic[:at] + rest[2:]
        return generic[: at - 1] + rest[1:]  # its only region: `({...})` goes
    if blocks:
        b = rng.choice(blocks)
        args = _split_top(b.group(1)) if b.group(1).strip() else []
        if action == 2 or not args:
            args.append(
                f"%extra{rng.randrange(9)}: {rng.choice(('index', 'i1', 'f16', 'tensor<2xf16>'))}"
            )
        else:
            del args[rng.randrange(len(args))]
        return generic[: b.start(1)] + ", ".join(args) + generic[b.end(1) :]
    return generic


KEY_VALUE = re.compile(r"\b([a-z_][a-z_0-9]*) = ")
WRONG_KINDS = (
    '"x"', '""', "1.5 : f32", "0 : i64", "-1 : i64", "true", "unit", "[1, 2]", "[]", "{}",
    "{a = 1 : i64}", "array<i64: 1, 2>", "dense<1> : tensor<2xi64>", "@main", "f16",
    "tensor<2xf16>", "#spyre.stick<dim = 0, device = [1], map = [0], strides = [1], pad = 0>",
    "#dataflow.rows_plan<row_dims = 1, cores = 4>", "affine_map<(d0) -> (d0)>", "i64",
    "9223372036854775808 : i64", "[[1]]", "#builtin.int<3>",
)  # fmt: skip
KNOWN_NAMES = ("offset", "dims", "perm", "eps", "plan", "cores", "kind", "unit", "attrs",
               "lx_capacity", "lx_peak_bytes", "accumulate", "corelet", "hash", "dim", "value",
               "keepdim", "axis", "sym_name", "spyre.card")  # fmt: skip


def _value_end(text: str, start: int) -> int:
    """Where an attribute value starting at `start` ends (top-level `,`, `}`, `>`, `)`
    or the line's end)."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c == '"':
            close = text.find('"', i + 1)
            i = close if close != -1 else len(text) - 1
        elif c in "<([{":
            depth += 1
        elif c in ">)]}" and not (c == ">" and text[i - 1] == "-"):
            if depth == 0:
                return i
            depth -= 1
        elif (c == "," or c == "\n") and depth == 0:
            return i
        i += 1
    return i


def attr_kind(text: str, rng: random.Random) -> str:
    """Every value of one attribute name replaced by one of the wrong kind, on every op;
    or an attribute of a known name and a wrong kind added to every op."""
    wrong = rng.choice(WRONG_KINDS)
    names = sorted({m.group(1) for m in KEY_VALUE.finditer(text)})
    if names and rng.random() < 0.7:
        name = rng.choice(names)
        out, last = [], 0
        for m in re.finditer(rf"\b{re.escape(name)} = ", text):
            if m.start() < last:
                continue
            end = _value_end(text, m.end())
            out += [text[last : m.end()], wrong]
            last = end
        return "".join(out) + text[last:]
    name = rng.choice(KNOWN_NAMES)
    # Before the trailing signature of every op line with one: the attr-dict's place.
    return re.sub(r"^(\s*(?:%[\w#:, %]+ = )?[a-z_]+\.[a-z_]+[^\n]*?) : ",
                  lambda m: f"{m.group(1)} {{{name} = {wrong}}} : ", text, flags=re.MULTILINE)  # fmt: skip


TEXT_MUTATIONS = (swap_types, swap_types, region_arity, region_arity, attr_kind, attr_kind)

# ---------------------------------------------------------------- command mutations


@functools.cache
def pass_options() -> dict[str, list[str]]:
    """Every registered pass and named pipeline with its options (kebab-case)."""
    from dataclasses import fields

    from spyre_ir import registry

    return {
        name: [f.name.replace("_", "-") for f in fields(factory())]
        for name, factory in sorted(registry.PASSES.items())
    }


BAD_OPTION_VALUES = ("-1", "0", "abc", "1.5", "99999999999999999999", "", "[1,2]", "true",
                     "1 2", "0x10", "'x'", '"x"', "-0", "1e3", "4294967297", "{}", "1,,2")  # fmt: skip


def bad_pipeline(rng: random.Random) -> str:
    """A `-p` pipeline: one registered pass with a bad option, or a malformed spec."""
    passes = pass_options()
    name = rng.choice(sorted(passes))
    options = passes[name] or ["cores"]
    option = rng.choice(options + ["no-such-option"])
    value = rng.choice(BAD_OPTION_VALUES)
    forms = (
        f"{name}{{{option}={value}}}",
        f"{name}{{{option}={value} {option}={value}}}",
        f"{name}{{{option}}}",
        f"{name}{{{option}=",
        f"{name}{{",
        f"{name}}}",
        f"{name}{{}}",
        f"{name},,{name}",
        f"{name}{{{option}={{{value}}}}}",
        f"{name[:-1]}",
        f"{name}{{{option}=1}},{rng.choice(sorted(passes))}{{{option}={value}}}",
        f" {name} ",
        f"{name}{{split={value}}}",
    )
    return rng.choice(forms)


ARG_TYPE = re.compile(r"%[\w]+: tensor<((?:\d+x)*)([a-z0-9]+)[,>]")
NPY_DTYPES = ("float64", "int64", "int8", "uint8", "bool", "complex64", ">f2", "<U3",
              "datetime64[s]", "float16", "float32", "int32")  # fmt: skip


def _signature(text: str) -> list[tuple[tuple[int, ...], str]]:
    """(shape, element type) of each tensor argument of the first func.func."""
    head = re.search(r"func\.func @\w+\(([^)]*)\)", text)
    if head is None:
        return []
    found = []
    for m in ARG_TYPE.finditer(head.group(1) + ","):
        dims = tuple(int(d) for d in m.group(1).split("x") if d)
        found.append((dims, m.group(2)))
    return found


def npy_inputs(text: str, rng: random.Random, directory: str, index: int) -> list[str]:
    """Files for `spyre-run --inputs`, one per argument of the mutant's entry, with one
    (or each) of them wrong: dtype, shape, count, byte order, layout or format."""
    import os

    args = _signature(text) or [((2, 2), "f16")]
    arrays: list[object] = []
    for shape, elt in args:
        if math_prod(shape) > 1 << 16:
            shape = (2, 2)
        arrays.append(np.zeros(shape, np.float16 if elt == "f16" else np.float32))
    victim = rng.randrange(len(arrays))
    action = rng.randrange(8)
    value = np.asarray(arrays[victim])
    if action == 0:
        arrays[victim] = value.astype(rng.choice(NPY_DTYPES))
    elif action == 1:
        arrays[victim] = value.reshape((1, *value.shape))
    elif action == 2:
        if value.ndim > 1:
            arrays[victim] = value.T.copy()
        else:  # one element short; a scalar (tensor<f16>) becomes a vector of one
            arrays[victim] = value[:-1] if value.ndim else value.reshape(1)
    elif action == 3:
        arrays[victim] = np.zeros(rng.choice(((), (0,), (0, 4), (3,) * 7)), value.dtype)
    elif action == 4:
        arrays = arrays[:-1] if rng.random() < 0.5 else [*arrays, value]
    elif action == 5:
        arrays[victim] = np.asfortranarray(np.broadcast_to(value, value.shape).T)
    elif action == 6:
        arrays[victim] = np.array([("a", 1)], dtype=[("s", "U1"), ("i", "i4")])
    paths = []
    for k, array in enumerate(arrays):
        path = os.path.join(directory, f"in{index}_{k}.npy")
        if action == 7 and k == victim:
            choice = rng.randrange(4)
            data = np.lib.format.header_data_from_array_1_0(np.asarray(array))
            body = {
                0: b"",
                1: b"not an npy file",
                2: b"\x93NUMPY\x01\x00",
                3: b"\x93NUMPY\x09\x09",
            }[choice]
            with open(path, "wb") as f:
                f.write(body if choice != 3 else body + repr(data).encode())
        else:
            np.save(path, np.asarray(array), allow_pickle=False)
        paths.append(path)
    return paths


def math_prod(shape: tuple[int, ...]) -> int:
    out = 1
    for d in shape:
        out *= d
    return out
