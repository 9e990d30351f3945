"""Constant integer bounds: an inclusive interval (lo, hi) holding every value of an expression.

`None` stands for an unbounded side. Known ranges of free Vars come in `var_ranges` as inclusive
(lo, hi) pairs too (a loop `for i in range(m, m + n)` gives `(m, m + n - 1)`), so a result can be
fed back as a range. For a vector expression the interval covers every lane.

As in every index analysis of vkir, integer arithmetic is treated as mathematical (index
expressions are assumed not to wrap around); leaves of narrow types (int8, uint16, bool, ...) and
casts to them are bounded by their type.
"""

from __future__ import annotations

from typing import Mapping

from ..ir import expr as E
from ..ir.dtype import DataType

Bound = tuple  # (lo: int | None, hi: int | None)
_UNBOUNDED = (None, None)


def dtype_bound(dt) -> Bound:
    """The range of a type: finite for bool and narrow ints, None for 32/64-bit sides."""
    if not isinstance(dt, DataType) or not (dt.is_integer or dt.is_bool):
        return _UNBOUNDED
    if dt.is_bool:
        return (0, 1)
    if dt.is_uint:
        return (0, (1 << dt.bits) - 1 if dt.bits < 32 else None)
    if dt.bits < 32:
        return (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1)
    return _UNBOUNDED


def _add(a, b):
    return None if a is None or b is None else a + b


def _neg(x):
    return None if x is None else -x


def _intersect(a: Bound, b: Bound) -> Bound:
    lo = a[0] if b[0] is None else b[0] if a[0] is None else max(a[0], b[0])
    hi = a[1] if b[1] is None else b[1] if a[1] is None else min(a[1], b[1])
    return (lo, hi)


def _union(a: Bound, b: Bound) -> Bound:
    lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
    hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
    return (lo, hi)


def _mul(a: Bound, b: Bound) -> Bound:
    """Interval product; None sides are infinities (with 0 * inf = 0, exact for intervals)."""
    inf = float("inf")
    lo_a, hi_a = (-inf if a[0] is None else a[0]), (inf if a[1] is None else a[1])
    lo_b, hi_b = (-inf if b[0] is None else b[0]), (inf if b[1] is None else b[1])
    products = [0 if x == 0 or y == 0 else x * y for x in (lo_a, hi_a) for y in (lo_b, hi_b)]
    lo, hi = min(products), max(products)
    return (None if lo == -inf else int(lo), None if hi == inf else int(hi))


def _floordiv_const(a: Bound, d: int) -> Bound:
    lo = None if a[0] is None else a[0] // d
    hi = None if a[1] is None else a[1] // d
    return (lo, hi) if d > 0 else (hi, lo)


def _truncdiv(x: int, d: int) -> int:
    q = abs(x) // abs(d)
    return q if (x >= 0) == (d > 0) else -q


def _const(e) -> int | None:
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Broadcast):
        return _const(e.value)
    return None


class _Analyzer:
    def __init__(self, var_ranges: Mapping):
        self.env = dict(var_ranges)

    def visit(self, e) -> Bound:
        dt = e.dtype
        if not isinstance(dt, DataType) or not (dt.is_integer or dt.is_bool):
            return _UNBOUNDED
        method = getattr(self, "visit_" + type(e).__name__, None)
        result = method(e) if method is not None else _UNBOUNDED
        return _intersect(result, dtype_bound(dt))

    def visit_IntImm(self, e):
        return (e.value, e.value)

    def visit_Var(self, e):
        return tuple(self.env.get(e, _UNBOUNDED))

    def visit_Add(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (_add(a[0], b[0]), _add(a[1], b[1]))

    def visit_Sub(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        return (_add(a[0], _neg(b[1])), _add(a[1], _neg(b[0])))

    def visit_Mul(self, e):
        return _mul(self.visit(e.a), self.visit(e.b))

    def visit_FloorDiv(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        d = b[0] if b[0] == b[1] else None
        if d is not None and d != 0:
            return _floordiv_const(a, d)
        if b[0] is not None and b[0] > 0 and a[0] is not None and a[0] >= 0:
            return (0, a[1])  # nonnegative / positive
        return _UNBOUNDED

    def visit_Div(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        d = b[0] if b[0] == b[1] else None
        if d is not None and d != 0 and None not in a:
            ends = (_truncdiv(a[0], d), _truncdiv(a[1], d))
            lo, hi = min(ends), max(ends)
            if a[0] < 0 < a[1]:
                lo, hi = min(lo, 0), max(hi, 0)
            return (lo, hi)
        if b[0] is not None and b[0] > 0 and a[0] is not None and a[0] >= 0:
            return (0, a[1])
        return _UNBOUNDED

    def visit_FloorMod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if b[0] is not None and b[0] > 0:
            if b[0] == b[1] and None not in a and a[0] // b[0] == a[1] // b[0]:
                return (a[0] % b[0], a[1] % b[0])  # the whole range lies in one period
            hi = None if b[1] is None else b[1] - 1
            if a[0] is not None and a[0] >= 0:
                hi = a[1] if hi is None else hi if a[1] is None else min(hi, a[1])
            return (0, hi)
        if b[1] is not None and b[1] < 0:
            return (None if b[0] is None else b[0] + 1, 0)
        return _UNBOUNDED

    def visit_Mod(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if None in b or b[0] <= 0 <= b[1]:
            return _UNBOUNDED
        m = max(abs(b[0]), abs(b[1])) - 1
        if a[0] is not None and a[0] >= 0:
            return (0, m if a[1] is None else min(m, a[1]))
        if a[1] is not None and a[1] <= 0:
            return (-m if a[0] is None else max(-m, a[0]), 0)
        return (-m, m)

    def visit_Min(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
        hi = b[1] if a[1] is None else a[1] if b[1] is None else min(a[1], b[1])
        return (lo, hi)

    def visit_Max(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        lo = b[0] if a[0] is None else a[0] if b[0] is None else max(a[0], b[0])
        hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
        return (lo, hi)

    def visit_Select(self, e):
        return _union(self.visit(e.true_value), self.visit(e.false_value))

    def visit_Cast(self, e):
        src = e.value.dtype
        if src.is_integer or src.is_bool:
            inner = self.visit(e.value)
            target = dtype_bound(e.dtype)
            if e.dtype.is_bool:
                return (0, 1)
            fits = (target[0] is None or (inner[0] is not None and inner[0] >= target[0])) and \
                   (target[1] is None or (inner[1] is not None and inner[1] <= target[1]))
            if fits:
                return inner
        return dtype_bound(e.dtype)

    def visit_Broadcast(self, e):
        return self.visit(e.value)

    def visit_Ramp(self, e):
        base = self.visit(e.base)
        last = _mul(self.visit(e.stride), (e.lanes - 1, e.lanes - 1))
        return _union(base, (_add(base[0], last[0]), _add(base[1], last[1])))

    def visit_Let(self, e):
        old = self.env.get(e.var)
        self.env[e.var] = self.visit(e.value)
        try:
            return self.visit(e.body)
        finally:
            if old is None:
                del self.env[e.var]
            else:
                self.env[e.var] = old

    def visit_Call(self, e):
        if e.op == "if_then_else":
            return _union(self.visit(e.args[1]), self.visit(e.args[2]))
        if e.op == "bitwise_and":
            a, b = self.visit(e.args[0]), self.visit(e.args[1])
            for x in (a, b):
                if x[0] is not None and x[0] >= 0:
                    return (0, x[1])
        if e.op == "shift_right":
            a, k = self.visit(e.args[0]), _const(e.args[1])
            if k is not None and 0 <= k < e.dtype.bits and a[0] is not None and a[0] >= 0:
                return (0, None if a[1] is None else a[1] >> k)
        return _UNBOUNDED

    def _bool(self, e):
        return (0, 1)

    visit_EQ = visit_NE = visit_LT = visit_LE = visit_GT = visit_GE = _bool
    visit_And = visit_Or = visit_Not = _bool


def const_int_bound(expr, var_ranges: Mapping = {}) -> Bound:
    """Inclusive (lo, hi) bounds of an integer or bool expression; None for an unbounded side.

    `var_ranges` maps Vars to inclusive (lo, hi) ranges (None sides allowed). Non-integer
    expressions are unbounded.
    """
    return _Analyzer(var_ranges).visit(expr)
