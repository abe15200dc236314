"""spyre-run's inputs: the entry function, random inputs drawn from a seed (index
bounds from gather tables, weight scales from matmuls) and inputs read from .npy files."""

from __future__ import annotations

import math
import os

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType

from spyre_ir.diagnostics import NotRegularFile, open_regular
from spyre_ir.tools.run_common import DEFAULT_INDEX_BOUND, RunError


def find_entry(module: ModuleOp, entry: str) -> func.FuncOp:
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    for f in funcs:
        if f.sym_name.data == entry and f.body.blocks:
            return f
    known = ", ".join(f"@{f.sym_name.data}" for f in funcs) or "none"
    raise RunError(f"no function @{entry} with a body (functions: {known})")


def _tensor_types(fn: func.FuncOp) -> list[TensorType]:
    types = list(fn.function_type.inputs.data)
    for index, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise RunError(f"argument {index} of @{fn.sym_name.data} is {t}, not a tensor")
    return types  # type: ignore[return-value]


def _index_bounds(fn: func.FuncOp) -> dict[int, int]:
    """Per integer argument, the upper bound of its random values: the rows of the
    tables it indexes (L1), or of the smallest table any gather of the module reads
    (L2, L3, where indices reach gathers through kernel buffers)."""
    from spyre_ir.dialects import dataflow as D
    from spyre_ir.dialects.spyre import GatherOp, shape_of

    module = fn.parent_op()
    lowered = DEFAULT_INDEX_BOUND
    if module is not None:
        for op in module.walk():
            if isinstance(op, D.GatherBase):
                table = op.table.type
                if isinstance(table, D.DdrType) and table.get_shape():
                    lowered = min(lowered, max(table.get_shape()[0], 1))
    bounds: dict[int, int] = {}
    for index, arg in enumerate(fn.body.block.args):
        bound = lowered
        for use in arg.uses:
            if isinstance(use.operation, GatherOp) and use.index == 1:
                bound = min(bound, max(shape_of(use.operation.table)[0], 1))
        bounds[index] = bound
    return bounds


def random_inputs(fn: func.FuncOp, seed: int) -> list[np.ndarray]:
    from spyre_ir.dialects.spyre import element_type_name
    from spyre_ir.interp.numerics import to_storage

    check_input_bytes(fn)
    rng = np.random.default_rng(seed)
    bounds, scales = _index_bounds(fn), _weight_scales(fn)
    inputs = []
    for index, t in enumerate(_tensor_types(fn)):
        shape, name = tuple(t.get_shape()), element_type_name(t.element_type)
        if name == "i1":
            value = rng.random(shape) < 0.5
        elif name in ("i32", "i64"):
            value = rng.integers(0, bounds[index], size=shape)
        else:
            value = rng.standard_normal(shape, dtype=np.float32)
            if index in scales:
                value *= np.float32(scales[index])
        inputs.append(to_storage(value, name))
    return inputs


def _weight_scales(fn: func.FuncOp) -> dict[int, float]:
    """Per float argument that is the right operand of an L1 `spyre.matmul` (directly or
    through `spyre.transpose`): 1/sqrt(K), K the contracted size (the smallest over its
    uses), so that its random values are a weight initialised as a layer's (LeCun normal)
    and the matmul's outputs keep the variance of its inputs. Standard normal weights
    grow each product by sqrt(K): the two matmuls before a softmax then give scores of
    hundreds, where the softmax is an argmax and a rounding of a score (a DLFloat16
    place is 2 at 1024) changes the result wholesale - a check of rounding noise, not of
    the program."""
    from spyre_ir.dialects.spyre import MatmulOp, TransposeOp, shape_of

    scales: dict[int, float] = {}
    for index, arg in enumerate(fn.body.block.args):
        values, contracted = [arg], []
        while values:
            value = values.pop()
            for use in value.uses:
                op = use.operation
                if isinstance(op, TransposeOp):
                    values.append(op.result)
                elif isinstance(op, MatmulOp) and use.index == 1:
                    rhs = shape_of(op.rhs)
                    contracted.append(rhs[-2] if len(rhs) > 1 else rhs[0])
        if contracted and min(contracted) > 0:
            scales[index] = 1 / math.sqrt(min(contracted))
    return scales


def input_byte_limit() -> int:
    """The most bytes of arguments a run draws: what the card's LPDDR5 holds, and no
    more than half of this machine's memory (the interpreters copy them)."""
    from spyre_ir.hardware import DEFAULT_CONFIG

    limit = DEFAULT_CONFIG.lpddr_usable_bytes
    try:
        limit = min(limit, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2)
    except (ValueError, OSError, AttributeError):
        pass  # no figure for the host: the card's is the bound
    return limit


def check_input_bytes(fn: func.FuncOp) -> None:
    """A RunError, before anything is allocated, when @fn's arguments are too large."""
    from spyre_ir.dialects.spyre import element_type_name
    from spyre_ir.hardware import ELEMENT_BYTES

    total = 0
    for t in _tensor_types(fn):
        name = element_type_name(t.element_type)
        total += math.prod(t.get_shape()) * ELEMENT_BYTES.get(name, 8)
    limit = input_byte_limit()
    if total > limit:
        raise RunError(
            f"the arguments of @{fn.sym_name.data} take {total} bytes; a run draws at "
            f"most {limit} (the card's LPDDR5, half of this machine's memory)"
        )


def _load_npy(path: str) -> np.ndarray:
    """One array from a regular .npy file whose header agrees with its size, so that
    neither a FIFO nor a header declaring a huge shape can hang or exhaust memory."""
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if f.read(6) != b"\x93NUMPY":
                raise RunError(f"input '{path}' is not a .npy file (one array per argument)")
            f.seek(0)
            version = np.lib.format.read_magic(f)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(f)  # refuses headers over 10000 bytes
            if dtype.hasobject:
                raise RunError(f"input '{path}' holds Python objects, not numbers")
            need = math.prod(shape) * dtype.itemsize
            if need > size - f.tell():
                raise RunError(
                    f"input '{path}': its header declares shape {shape} of {dtype} "
                    f"({need} bytes), but the file holds {size - f.tell()} bytes of data"
                )
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except NotRegularFile as error:
        raise RunError(f"cannot read input '{path}': {error}") from None
    except OSError as error:
        raise RunError(f"cannot read input '{path}': {error.strerror or error}") from None
    except (ValueError, EOFError, SyntaxError, TypeError) as error:
        raise RunError(f"cannot load input '{path}': {' '.join(str(error).split())}") from None


def load_inputs(spec: str, fn: func.FuncOp) -> list[np.ndarray]:
    from spyre_ir.interp.tensor import InterpreterError, check_value

    paths = [p.strip() for p in spec.split(",") if p.strip()]
    types = _tensor_types(fn)
    entry = fn.sym_name.data
    if len(paths) != len(types):
        raise RunError(
            f"@{entry} takes {len(types)} argument{'s' * (len(types) != 1)}, "
            f"but --inputs names {len(paths)} file{'s' * (len(paths) != 1)}"
        )
    inputs = []
    for index, (path, t) in enumerate(zip(paths, types)):
        value = _load_npy(path)
        hint = fn.body.block.args[index].name_hint
        label = f"input '{path}' for argument {index}" + (f" (%{hint})" if hint else "")
        try:
            inputs.append(check_value(value, t, label))
        except InterpreterError as error:
            raise RunError(str(error)) from None
    return inputs
