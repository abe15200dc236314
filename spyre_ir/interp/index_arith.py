"""Index arithmetic of the L2 machine: `arith` integer ops on per-core int64 arrays
(or 0-d values shared by every core) wrapped to their bit width, with a fast path in
Python ints for values the same on every core."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    IntegerType,
)
from xdsl.ir import Attribute, Operation

from spyre_ir.interp.tensor import (
    InterpreterError,
)

# ---------------------------------------------------------------- index arithmetic


def index_width(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return t.width.data
    return 64


def signed(v: object, width: int) -> np.ndarray:
    """Integer values wrapped to `width` bits, as int64 (i1: bool)."""
    if isinstance(v, int) and not -(2**63) <= v < 2**64:
        raise InterpreterError(f"the integer {v} does not fit in 64 bits")
    if isinstance(v, int) and v >= 2**63:  # an unsigned 64-bit constant: its bits
        v -= 2**64
    a = np.asarray(v).astype(np.int64)
    if width == 1:
        return (a & 1).astype(bool)
    if width < 64:
        half = np.int64(1) << np.int64(width - 1)
        a = ((a + half) & ((half << np.int64(1)) - 1)) - half
    return a


def as_int(v: object, width: int, unsigned: bool) -> np.ndarray:
    """The integer value of `width`-bit `v` read as signed (int64) or unsigned (uint64)."""
    a = np.asarray(v)
    if width == 1:
        a = a.astype(np.int64)
        return a if unsigned else -a
    a = a.astype(np.int64)
    if not unsigned:
        return a
    u = a.astype(np.uint64)
    return u if width == 64 else u & np.uint64((1 << width) - 1)


def _nonzero(b: np.ndarray) -> None:
    if np.any(b == 0):
        raise InterpreterError("integer division by zero")


def _divsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _divui(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    return a // b


def _remsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a - b * _divsi(a, b)


def _remui(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    return a % b


def _floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    return a // b


def _ceildiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    _nonzero(b)
    return a // b + (a % b != 0)


# op -> (function, operands read as unsigned)
INT_BINARY: dict[type[Operation], tuple[Callable, bool]] = {
    arith.AddiOp: (np.add, False), arith.SubiOp: (np.subtract, False),
    arith.MuliOp: (np.multiply, False),
    arith.DivSIOp: (_divsi, False), arith.DivUIOp: (_divui, True),
    arith.RemSIOp: (_remsi, False), arith.RemUIOp: (_remui, True),
    arith.FloorDivSIOp: (_floordiv, False), arith.CeilDivSIOp: (_ceildiv, False),
    arith.CeilDivUIOp: (_ceildiv, True),
    arith.MinSIOp: (np.minimum, False), arith.MinUIOp: (np.minimum, True),
    arith.MaxSIOp: (np.maximum, False), arith.MaxUIOp: (np.maximum, True),
    arith.AndIOp: (np.bitwise_and, True), arith.OrIOp: (np.bitwise_or, True),
    arith.XOrIOp: (np.bitwise_xor, True),
    arith.ShLIOp: (np.left_shift, True), arith.ShRUIOp: (np.right_shift, True),
    arith.ShRSIOp: (np.right_shift, False),
}  # fmt: skip


def scalar_pair(operands: list) -> tuple[int, int] | None:
    """Two uniform (0-d) index values as Python ints, else None."""
    a, b = operands
    if type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 0 and b.ndim == 0:
        return int(a), int(b)
    return None


# Ops of `INT_BINARY` on two uniform 64-bit values in Python ints (no shifts); None
# from one asks for the general path: unsigned readings and bitwise ops want both
# operands >= 0 (where signed and unsigned agree), divisions also a divisor > 0 (numpy's
# path reports division by zero). One lambda each: the index ops of a unit program run
# every iteration.
INT_SCALAR: dict[type[Operation], Callable[[int, int], int | None]] = {
    arith.AddiOp: lambda a, b: a + b, arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivSIOp: lambda a, b: a // b if a >= 0 and b > 0 else None,
    arith.DivUIOp: lambda a, b: a // b if a >= 0 and b > 0 else None,
    arith.RemSIOp: lambda a, b: a % b if a >= 0 and b > 0 else None,
    arith.RemUIOp: lambda a, b: a % b if a >= 0 and b > 0 else None,
    arith.FloorDivSIOp: lambda a, b: a // b if a >= 0 and b > 0 else None,
    arith.CeilDivSIOp: lambda a, b: -(-a // b) if a >= 0 and b > 0 else None,
    arith.CeilDivUIOp: lambda a, b: -(-a // b) if a >= 0 and b > 0 else None,
    arith.MinSIOp: min, arith.MaxSIOp: max,
    arith.MinUIOp: lambda a, b: min(a, b) if a >= 0 and b >= 0 else None,
    arith.MaxUIOp: lambda a, b: max(a, b) if a >= 0 and b >= 0 else None,
    arith.AndIOp: lambda a, b: a & b if a >= 0 and b >= 0 else None,
    arith.OrIOp: lambda a, b: a | b if a >= 0 and b >= 0 else None,
    arith.XOrIOp: lambda a, b: a ^ b if a >= 0 and b >= 0 else None,
}  # fmt: skip

# cmpi predicates 0-5 (and the unsigned 6-9 as 2-5, on values >= 0).
CMPI_SCALAR: tuple[Callable[[int, int], bool], ...] = (
    lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b,
    lambda a, b: a <= b, lambda a, b: a > b, lambda a, b: a >= b,
)  # fmt: skip

CMPI: dict[int, tuple[Callable, bool]] = {
    0: (np.equal, False), 1: (np.not_equal, False),
    2: (np.less, False), 3: (np.less_equal, False),
    4: (np.greater, False), 5: (np.greater_equal, False),
    6: (np.less, True), 7: (np.less_equal, True),
    8: (np.greater, True), 9: (np.greater_equal, True),
}  # fmt: skip
