"""Constants and exact folding for the simplifier: reading int/bool/float constants (scalar or
broadcast), folding float arithmetic, casts and comparisons exactly as the device computes them,
and the small operand helpers the simplifier's rules share."""

from __future__ import annotations

import math

import numpy as np

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.op import is_pure
from ..ir.traversal import walk
from .bound import type_range
from .linear import Linear, linear_of, wrap
from .linear_sum import Sum
from .modular import ModularSet


def is_int(dt) -> bool:
    """Whether `dt` is an integer type (scalar or vector)."""
    return isinstance(dt, DataType) and dt.is_integer


def int_const(e) -> int | None:
    """The value of an int constant or of a broadcast int constant."""
    if isinstance(e, E.IntImm) and not e.dtype.is_bool:
        return e.value
    if isinstance(e, E.Broadcast) and isinstance(e.value, E.IntImm) and not e.value.dtype.is_bool:
        return e.value.value
    return None


def bool_const(e) -> bool | None:
    """The value of a bool constant or of a broadcast bool constant."""
    if isinstance(e, E.IntImm) and e.dtype.is_bool:
        return bool(e.value)
    if isinstance(e, E.Broadcast):
        return bool_const(e.value)
    return None


def float_const(e) -> float | None:
    """The value of a float constant."""
    if isinstance(e, E.FloatImm):
        return e.value
    return None


def scalar_of(e):
    """The broadcast value of a Broadcast, else the expression itself."""
    return e.value if isinstance(e, E.Broadcast) else e


def int_imm(value: int, dt: DataType):
    """An integer constant of `dt` (a Broadcast for vectors)."""
    return E.const(value, dt)


def make_bool(value: bool, lanes: int):
    """A bool constant of `lanes` lanes (a Broadcast for vectors)."""
    return E.const(bool(value), DataType("bool", 1, lanes))


def has_side_effects(e) -> bool:
    """Whether `e` calls an impure op (an atomic, a barrier, ...)."""
    return any(isinstance(n, E.Call) and not is_pure(n.op) for n in walk(e))


def impure(x) -> bool:
    """Side effects of an operand; a Sum (a linear form) has none."""
    return not isinstance(x, Sum) and has_side_effects(x)


def form_of(x) -> Linear:
    """The linear form of an operand: what `linear_of` gives for its expression."""
    return x.form() if isinstance(x, Sum) else linear_of(x)


def same_or(e, out):
    """`e` itself where `out` equals it, so unchanged IR stays shared, else `out`."""
    return e if out is not e and type(out) is type(e) and out == e else out


def expr_of(x, e):
    """The expression of an operand (a Sum is rebuilt here), `e` itself where it is equal."""
    return same_or(e, x.expr()) if isinstance(x, Sum) else x


def np_float(dt: DataType):
    """The numpy type of float dtype `dt`."""
    return {16: np.float16, 32: np.float32, 64: np.float64}[dt.bits]


def fold_float(op, x: float, y: float, dt: DataType) -> float | None:
    """x op y computed in dt's precision, or None where folding is not exactly portable."""
    t = np_float(dt)
    with np.errstate(all="ignore"):
        a, b = t(x), t(y)
        if op is E.Add:
            r = a + b
        elif op is E.Sub:
            r = a - b
        elif op is E.Mul:
            r = a * b
        elif op is E.Div:
            if b == 0:
                return None
            r = a / b
        else:
            return None
    return float(r)


COMPARE = {
    E.EQ: lambda x, y: x == y, E.NE: lambda x, y: x != y, E.LT: lambda x, y: x < y,
    E.LE: lambda x, y: x <= y, E.GT: lambda x, y: x > y, E.GE: lambda x, y: x >= y,
}


def disjoint(x: ModularSet, y: ModularSet) -> bool:
    """True when no integer is in both sets."""
    g = math.gcd(x.coeff, y.coeff)
    return (x.base - y.base) % g != 0 if g else x.base != y.base


def decide(op, lo, hi) -> bool | None:
    """The truth of `d op 0` for every d in [lo, hi] (finite), or None."""
    if op is E.LT:
        return True if hi < 0 else False if lo >= 0 else None
    if op is E.LE:
        return True if hi <= 0 else False if lo > 0 else None
    if op is E.GT:
        return True if lo > 0 else False if hi <= 0 else None
    if op is E.GE:
        return True if lo >= 0 else False if hi < 0 else None
    if op is E.EQ:
        return True if lo == hi == 0 else False if lo > 0 or hi < 0 else None
    if op is E.NE:
        r = decide(E.EQ, lo, hi)
        return None if r is None else not r
    return None


def fold_cast(v, dt: DataType):
    """Cast of a scalar constant, folded exactly; None where it is not a constant or not exact."""
    if dt.lanes != 1:
        return None
    if isinstance(v, E.IntImm):
        x = v.value
        if dt.is_bool:
            return E.IntImm(dt, 1 if x != 0 else 0)
        if dt.is_integer:
            return E.IntImm(dt, wrap(x, dt))
        if dt.is_float:
            return E.FloatImm(dt, float(np_float(dt)(x)))
    if isinstance(v, E.FloatImm):
        x = v.value
        if dt.is_float:
            with np.errstate(all="ignore"):
                return E.FloatImm(dt, float(np_float(dt)(x)))
        if dt.is_bool:
            return E.IntImm(dt, 1 if x != 0 else 0)
        if dt.is_integer and math.isfinite(x):
            t = math.trunc(x)
            lo, hi = type_range(dt)
            if lo <= t <= hi:
                return E.IntImm(dt, t)
    return None
