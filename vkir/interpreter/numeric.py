"""The numeric semantics of vkir expressions on numpy values.

A value is a numpy scalar (one lane, uniform), or an ndarray whose last axis holds vector lanes and
whose optional leading axis holds the invocations of a workgroup that execute in lockstep. Integer
arithmetic wraps at the dtype width (numpy does, with its overflow warnings silenced by the caller),
floats stay in their own width, and division follows the IR: `Div`/`Mod` truncate like C on
integers, `FloorDiv`/`FloorMod` are numpy's `//` and `%` (also on floats: floor of the exact
quotient's fmod-based derivation, with numpy's sign rules for zeros).

Shifts: `shift_left`/`shift_right` take the shift amount modulo the bit width of the operand type
(like x86, and like Python's `x << (s % bits)`); `shift_right` is arithmetic on signed and
logical on unsigned types. A constant amount outside [0, bits) is refused by the type checker, so
the modulo only matters for amounts computed at run time. Every device computes the same.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..ir.dtype import DataType
from ..ir.intrinsics import INTRINSICS, OWN as TABLE_OWN
from .errors import InterpreterError


def np_dtype(dt: DataType) -> np.dtype:
    """numpy dtype of one lane of `dt`."""
    if not isinstance(dt, DataType) or dt.is_handle:
        raise InterpreterError(f"type {dt} has no value representation")
    return dt.numpy_dtype()


def scalar(value, dt: DataType):
    """A numpy scalar of `dt`'s lane type (a float too large for it rounds to a signed infinity,
    as codegen stores it)."""
    with np.errstate(over="ignore"):
        return np_dtype(dt).type(value)


def flush_denormals(value):
    """`value` with every float denormal replaced by a zero of its sign (a device whose float
    controls flush denormals computes as if so); other values unchanged."""
    if getattr(value, "dtype", None) is None or value.dtype.kind != "f":
        return value
    tiny = np.finfo(value.dtype).tiny
    return as_value(np.where(np.abs(value) < tiny, value * value.dtype.type(0), value))


def as_value(result):
    """Turn a 0-d ndarray into a numpy scalar (ufuncs do this already; np.where does not)."""
    if isinstance(result, np.ndarray) and result.ndim == 0:
        return result[()]
    return result


def expand_lanes(value):
    """A scalar-per-invocation value with a trailing lane axis of length 1."""
    return np.asarray(value)[..., None]


# ---------------------------------------------------------------------------------------------
# binary operators


def trunc_div(a, b):
    """Integer division rounding toward zero (C, SPIR-V OpSDiv)."""
    r = np.fmod(a, b)
    return np.floor_divide(a - r, b)


def _minimum(a, b):
    if a.__class__ is np.ndarray or b.__class__ is np.ndarray:
        return np.minimum(a, b)
    if a <= b:
        return a
    return b if b < a else np.minimum(a, b)  # NaN: as numpy


def _maximum(a, b):
    if a.__class__ is np.ndarray or b.__class__ is np.ndarray:
        return np.maximum(a, b)
    if a >= b:
        return a
    return b if b > a else np.maximum(a, b)


def _float_minimum(a, b):
    """`a < b or a is NaN ? a : b`: a NaN operand gives the NaN, and of two equal operands (0.0
    and -0.0) the second (np.minimum's answer for float32 and float64), for every width and
    however many invocations run at once."""
    if a.__class__ is not np.ndarray and b.__class__ is not np.ndarray:
        return a if a < b or a != a else b
    return as_value(np.where((a < b) | np.isnan(a), a, b))


def _float_maximum(a, b):
    """`a > b or a is NaN ? a : b` (see _float_minimum)."""
    if a.__class__ is not np.ndarray and b.__class__ is not np.ndarray:
        return a if a > b or a != a else b
    return as_value(np.where((a > b) | np.isnan(a), a, b))


def _binary_table():
    # Python operators on numpy scalars take numpy's fast scalar paths (a ufunc call on scalars
    # costs ten times more) and have the same semantics as the ufuncs; on arrays they are the
    # ufuncs. And/Or/Not apply to bools only, where bitwise and logical coincide.
    return {
        "Add": (operator.add, operator.add),
        "Sub": (operator.sub, operator.sub),
        "Mul": (operator.mul, operator.mul),
        "Div": (trunc_div, operator.truediv),
        "Mod": (np.fmod, np.fmod),
        "FloorDiv": (operator.floordiv, operator.floordiv),
        "FloorMod": (operator.mod, operator.mod),
        "Min": (_minimum, _float_minimum),
        "Max": (_maximum, _float_maximum),
        "EQ": (operator.eq, operator.eq),
        "NE": (operator.ne, operator.ne),
        "LT": (operator.lt, operator.lt),
        "LE": (operator.le, operator.le),
        "GT": (operator.gt, operator.gt),
        "GE": (operator.ge, operator.ge),
        "And": (np.logical_and, np.logical_and),
        "Or": (np.logical_or, np.logical_or),
    }


BINARY = _binary_table()


def binary_op(name: str, operand: DataType):
    """The numpy function computing binary node `name` on operands of type `operand`."""
    int_fn, float_fn = BINARY[name]
    return float_fn if operand.is_float else int_fn


# ---------------------------------------------------------------------------------------------
# casts


def cast(value, target: np.dtype):
    """Value conversion: x -> bool is x != 0; float -> int truncates toward zero and saturates
    (NaN gives 0, values beyond the type's range its minimum or maximum), as on every device
    (vkir's codegen emits the same clamps; SPIR-V leaves out-of-range conversions undefined)."""
    if target.kind in "iu" and value.dtype.kind == "f":
        return _saturating_float_to_int(value, target)
    return value.astype(target)


def _saturating_float_to_int(value, target: np.dtype):
    info = np.iinfo(target)
    wide = np.asarray(value, np.float64)  # exact for every float type
    high = wide >= float(info.max) + 1.0  # 2**k: exact in float64
    low = np.trunc(wide) < float(info.min)
    bad = high | low | np.isnan(wide)
    result = np.where(bad, 0, wide).astype(target)
    result = np.where(high, target.type(info.max), np.where(low, target.type(info.min), result))
    return as_value(result.astype(target))


def reinterpret(value, src: DataType, dst: DataType):
    """Bit cast between types of the same total width (lanes may change)."""
    arr = np.ascontiguousarray(value)
    if src.lanes == 1:
        arr = arr[..., None]
    out = arr.view(np_dtype(dst))
    if dst.lanes == 1:
        out = out[..., 0]
    return as_value(out)


# ---------------------------------------------------------------------------------------------
# intrinsics


def _erf(x):
    # frompyfunc gives a Python float (no astype) for a scalar argument: go through an array
    return as_value(np.asarray(np.frompyfunc(math.erf, 1, 1)(x), dtype=np.asarray(x).dtype))


def _sigmoid(x):
    one = np.asarray(x).dtype.type(1)
    return one / (one + np.exp(-x))


def _rsqrt(x):
    return np.reciprocal(np.sqrt(x))


def _fma(a, b, c):
    dt = np.asarray(a).dtype
    wide = np.float64 if dt.itemsize < 8 else dt
    return (np.asarray(a, wide) * b + c).astype(dt)


def _shift_amount(a, b):
    """The shift amount `b` modulo the bit width of `a` (the vkir definition)."""
    return np.bitwise_and(b, b.dtype.type(np.asarray(a).dtype.itemsize * 8 - 1))


def _shift_left(a, b):
    return np.left_shift(a, _shift_amount(a, b))


def _shift_right(a, b):
    return np.right_shift(a, _shift_amount(a, b))


def _unsigned(x):
    """`x` as an array of the unsigned integer type of its width (the same bits)."""
    a = np.asarray(x)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def _popcount(x):
    """The number of 1 bits of each integer in its own width (int8 -1 has 8)."""
    u = _unsigned(x)
    count = np.zeros(u.shape, np.uint8)
    for k in range(u.dtype.itemsize):
        count = count + _BYTE_BITS[(u >> (8 * k)) & 0xFF]
    return as_value(count)


def _clz(x):
    """The number of leading 0 bits in the width (the width for 0): the bits below the highest 1
    bit are filled with ones, and the zeros left are counted."""
    u = _unsigned(x)
    bits = u.dtype.itemsize * 8
    s = 1
    while s < bits:
        u = u | (u >> s)
        s *= 2
    return as_value(np.asarray(bits - _popcount(u).astype(np.int64)))


def _ctz(x):
    """The number of trailing 0 bits (the width for 0): the ones of `~u & (u - 1)`."""
    u = _unsigned(x)
    return _popcount(~u & (u - u.dtype.type(1)))


OWN = {"rsqrt": _rsqrt, "erf": _erf, "sigmoid": _sigmoid, "fma": _fma,
       "shift_left": _shift_left, "shift_right": _shift_right, "popcount": _popcount,
       "clz": _clz, "ctz": _ctz}
"""The interpreter's own functions for the intrinsic table's rows whose `interp` is OWN (but the
ones vkir.interpreter.compiler evaluates itself: COMPILED)."""

COMPILED = ("reinterpret", "if_then_else")
"""OWN rows the compiler evaluates itself (a bit cast; only the taken side)."""

MATH = {name: OWN.get(name) if row.interp == TABLE_OWN else getattr(np, row.interp)
        for name, row in INTRINSICS.items() if name not in COMPILED}
"""The numpy function of each pure intrinsic of the table (None where OWN lacks it)."""


def intrinsic(op: str):
    """The numpy function of a pure math/bitwise intrinsic (`None` if `op` is not one)."""
    return MATH.get(op)
