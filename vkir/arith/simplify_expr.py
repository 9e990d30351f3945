"""Expression simplification: constant folding, identities and the canonical forms passes need.

Integer +, -, * are put in linear normal form (see linear.py), which turns `Broadcast(i*4) +
Ramp(0, 1, 4)` into `Ramp(i*4, 1, 4)` and folds constants with int32 (or the type's) wrap-around.
Floor division and modulo by a positive constant split off the part that is a multiple of the
divisor and decide the rest from bounds (`(i*4 + j) // 4 -> i` when 0 <= j < 4) or from modular
sets (`Ramp(b, 1, 4) // 4 -> Broadcast(b // 4)` when b is a multiple of 4). Integer comparisons
are decided from bounds. Float arithmetic is only folded when both operands are constants (in the
operands' precision) and rewritten only by exact identities (x*1, x-0, x/1); it is never
reassociated.

Reasoning about divisibility and bounds assumes index arithmetic does not overflow, as usual.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.op import is_pure
from ..ir.walk import walk
from .bound import const_int_bound
from .linear import Linear, linear_of, rebuild, wrap
from .modular_set import ModularSet, modular_set


def _is_int(dt) -> bool:
    return isinstance(dt, DataType) and dt.is_integer


def _int_const(e) -> int | None:
    """The value of an int constant or of a broadcast int constant."""
    if isinstance(e, E.IntImm) and not e.dtype.is_bool:
        return e.value
    if isinstance(e, E.Broadcast) and isinstance(e.value, E.IntImm) and not e.value.dtype.is_bool:
        return e.value.value
    return None


def _bool_const(e) -> bool | None:
    if isinstance(e, E.IntImm) and e.dtype.is_bool:
        return bool(e.value)
    if isinstance(e, E.Broadcast):
        return _bool_const(e.value)
    return None


def _float_const(e) -> float | None:
    if isinstance(e, E.FloatImm):
        return e.value
    return None


def _scalar_of(e):
    """The broadcast value of a Broadcast, else the expression itself."""
    return e.value if isinstance(e, E.Broadcast) else e


def _make_bool(value: bool, lanes: int):
    return E.const(bool(value), DataType("bool", 1, lanes))


def _has_side_effects(e) -> bool:
    return any(isinstance(n, E.Call) and not is_pure(n.op) for n in walk(e))


def _np_float(dt: DataType):
    return {16: np.float16, 32: np.float32, 64: np.float64}[dt.bits]


def _fold_float(op, x: float, y: float, dt: DataType) -> float | None:
    """x op y computed in dt's precision, or None where folding is not exactly portable."""
    t = _np_float(dt)
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


_CMP = {
    E.EQ: lambda x, y: x == y, E.NE: lambda x, y: x != y, E.LT: lambda x, y: x < y,
    E.LE: lambda x, y: x <= y, E.GT: lambda x, y: x > y, E.GE: lambda x, y: x >= y,
}


def _truncdiv(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y > 0) else -q


class Simplifier:
    """Bottom-up rewriting with known inclusive ranges and modular sets of free Vars."""

    def __init__(self, var_ranges: Mapping = {}, var_sets: Mapping = {}):
        self.ranges = dict(var_ranges)
        self.sets = dict(var_sets)

    # --- helpers ------------------------------------------------------------------------------

    def bound(self, e):
        return const_int_bound(e, self.ranges)

    def modset(self, e) -> ModularSet:
        return modular_set(e, self.sets)

    def lin_bound(self, lin: Linear, dt: DataType):
        return self.bound(rebuild(lin, dt))

    def __call__(self, e):
        return self.visit(e)

    def visit(self, e):
        method = getattr(self, "visit_" + type(e).__name__, None)
        if method is None:
            return e
        out = method(e)
        # keep the input object when nothing changed, so unchanged IR stays shared
        return e if out is not e and type(out) is type(e) and out == e else out

    # --- leaves -------------------------------------------------------------------------------

    def visit_Var(self, e):
        r = self.ranges.get(e)
        if r is not None and _is_int(e.dtype) and e.dtype.lanes == 1 and r[0] is not None \
                and r[0] == r[1]:
            return E.IntImm(e.dtype, r[0])
        return e

    # --- integer ring operations --------------------------------------------------------------

    def _int_arith(self, e, a, b):
        if a.dtype != b.dtype or _has_side_effects(a) or _has_side_effects(b):
            return type(e)(a, b)  # ill-typed input is the checker's to report; impure kept
        la, lb = linear_of(a), linear_of(b)
        if isinstance(e, E.Add):
            return rebuild(la.add(lb), e.dtype)
        if isinstance(e, E.Sub):
            return rebuild(la.add(lb, -1), e.dtype)
        # Mul
        if lb.is_const and not lb.base:
            return rebuild(la.scale(lb.c), e.dtype)
        if la.is_const and not la.base:
            return rebuild(lb.scale(la.c), e.dtype)
        lanes = e.dtype.lanes
        if lanes > 1:
            elem = e.dtype.element_of()
            if la.is_base_only and lb.is_base_only:
                prod = self.visit(E.Mul(rebuild(la.base_part(), elem), rebuild(lb.base_part(), elem)))
                return E.Broadcast(prod, lanes) if prod.dtype.lanes == 1 else prod
            for ramp, scal in ((la, lb), (lb, la)):
                if scal.is_base_only and not ramp.vec:
                    s = rebuild(scal.base_part(), elem)
                    base = self.visit(E.Mul(rebuild(ramp.base_part(), elem), s))
                    stride = self.visit(E.Mul(rebuild(ramp.stride_part(), elem), s))
                    return self.visit(E.Ramp(base, stride, lanes))
        return E.Mul(a, b)

    def visit_Add(self, e):
        return self._arith(e)

    visit_Sub = visit_Mul = visit_Add

    def _arith(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        if _is_int(e.dtype):
            return self._int_arith(e, a, b)
        common = self._broadcast_both(e, a, b)
        if common is not None:
            return common
        if e.dtype.is_float:
            return self._float_arith(type(e), a, b)
        return type(e)(a, b)

    def _broadcast_both(self, e, a, b):
        """op(Broadcast(x), Broadcast(y)) -> Broadcast(op(x, y))."""
        if isinstance(a, E.Broadcast) and isinstance(b, E.Broadcast) and a.lanes == b.lanes \
                and a.value.dtype == b.value.dtype:
            return E.Broadcast(self.visit(type(e)(a.value, b.value)), a.lanes)
        return None

    def _float_arith(self, op, a, b):
        x, y = _float_const(a), _float_const(b)
        if x is not None and y is not None:
            r = _fold_float(op, x, y, a.dtype)
            if r is not None:
                return E.FloatImm(a.dtype, r)
        # exact identities only (also for -0.0, infinities and NaN): x*1, 1*x, x/1, x-(+0.0)
        ka, kb = _float_const(_scalar_of(a)), _float_const(_scalar_of(b))
        if (op is E.Mul or op is E.Div) and kb == 1.0:
            return a
        if op is E.Mul and ka == 1.0:
            return b
        if op is E.Sub and kb == 0.0 and math.copysign(1.0, kb) > 0:
            return a
        return op(a, b)

    # --- division -----------------------------------------------------------------------------

    def _split(self, lin: Linear, c: int):
        """lin = c * q + r where q takes every term whose coefficient is a multiple of c."""
        q, r = Linear(lin.lanes), Linear(lin.lanes)
        for field in ("base", "stride", "vec"):
            dq, dr = {}, {}
            for atom, k in getattr(lin, field).items():
                if k % c == 0:
                    dq[atom] = k // c
                else:
                    dr[atom] = k
            setattr(q, field, dq)
            setattr(r, field, dr)
        q.c, r.c = lin.c // c, lin.c % c
        if lin.sc % c == 0:
            q.sc = lin.sc // c
        else:
            r.sc = lin.sc
        return q, r

    def _divmod_const(self, e, a, c: int, want_div: bool):
        """a // c or a % c (floor) for a constant c > 0, or None when nothing simplifies."""
        dt = e.dtype
        elem = dt.element_of()
        if _has_side_effects(a):
            return None
        la = linear_of(a)
        q, r = self._split(la, c)
        r_expr = rebuild(r, dt)
        lo, hi = self.bound(r_expr)
        if lo is not None and hi is not None and lo // c == hi // c:
            k = lo // c
            if want_div:
                return rebuild(q.add(Linear(la.lanes, c=k)), dt)
            return rebuild(r.add(Linear(la.lanes, c=-k * c)), dt)
        if la.lanes > 1 and not r.vec and not r.stride:
            # lanes are rb + sc*lane with rb's residue m known: (m + sc*lane) stays in [0, c)
            m = self.modset(rebuild(r.base_part(), elem)).residue(c)
            if m is not None:
                ends = (m, m + r.sc * (la.lanes - 1))
                if min(ends) >= 0 and max(ends) < c:
                    if want_div:
                        rb = r.base_part().add(Linear(1, c=-m))
                        head = self.visit(E.FloorDiv(rebuild(rb, elem), E.IntImm(elem, c)))
                        return self.visit(E.Add(rebuild(q, dt), E.Broadcast(head, la.lanes)))
                    if r.sc:
                        return E.Ramp(E.IntImm(elem, m), E.IntImm(elem, r.sc), la.lanes)
                    return E.Broadcast(E.IntImm(elem, m), la.lanes)
        if la.lanes == 1 and not want_div:
            m = self.modset(r_expr).residue(c)
            if m is not None:
                return E.IntImm(dt, m)
        if q.is_const and q.c == 0:
            return None  # nothing split off
        cexpr = E.IntImm(elem, c) if la.lanes == 1 else E.Broadcast(E.IntImm(elem, c), la.lanes)
        if want_div:
            if r.is_const and r.c == 0:
                return rebuild(q, dt)
            return self.visit(E.Add(rebuild(q, dt), E.FloorDiv(r_expr, cexpr)))
        if r.is_const and r.c == 0:
            return rebuild(r, dt)
        return E.FloorMod(r_expr, cexpr)

    def visit_FloorDiv(self, e):
        return self._division(e, floor=True, want_div=True)

    def visit_FloorMod(self, e):
        return self._division(e, floor=True, want_div=False)

    def visit_Div(self, e):
        return self._division(e, floor=False, want_div=True)

    def visit_Mod(self, e):
        return self._division(e, floor=False, want_div=False)

    def _division(self, e, floor: bool, want_div: bool):
        a, b = self.visit(e.a), self.visit(e.b)
        op = type(e)
        if a.dtype != b.dtype:
            return op(a, b)  # ill-typed: left for the checker to report
        if not _is_int(e.dtype):
            common = self._broadcast_both(e, a, b)
            if common is not None:
                return common
            if e.dtype.is_float and op is E.Div:
                return self._float_arith(E.Div, a, b)
            return op(a, b)
        x, c = _int_const(a), _int_const(b)
        if c is not None and c != 0 and x is not None:
            if floor:
                v = x // c if want_div else x % c
            else:
                v = _truncdiv(x, c) if want_div else x - c * _truncdiv(x, c)
            return E.const(wrap(v, e.dtype), e.dtype)
        if c == 1:
            return a if want_div else E.const(0, e.dtype)
        if c is not None and c > 0:
            nonneg = self.bound(a)[0]
            if floor or (nonneg is not None and nonneg >= 0):
                # on a nonnegative dividend truncating and floor division agree
                out = self._divmod_const(e, a, c, want_div)
                if out is not None:
                    return out
        common = self._broadcast_both(e, a, b)
        if common is not None:
            return common
        return op(a, b)

    # --- min / max ----------------------------------------------------------------------------

    def visit_Min(self, e):
        return self._minmax(e, is_min=True)

    def visit_Max(self, e):
        return self._minmax(e, is_min=False)

    def _minmax(self, e, is_min: bool):
        a, b = self.visit(e.a), self.visit(e.b)
        if a.dtype != b.dtype:
            return type(e)(a, b)  # ill-typed: left for the checker to report
        if a == b and not _has_side_effects(a):
            return a
        if _is_int(e.dtype):
            (alo, ahi), (blo, bhi) = self.bound(a), self.bound(b)
            if ahi is not None and blo is not None and ahi <= blo:
                return a if is_min else b
            if bhi is not None and alo is not None and bhi <= alo:
                return b if is_min else a
        if e.dtype.is_float:
            x, y = _float_const(a), _float_const(b)
            if x is not None and y is not None and not (math.isnan(x) or math.isnan(y)):
                return E.FloatImm(e.dtype, min(x, y) if is_min else max(x, y))
        common = self._broadcast_both(e, a, b)
        if common is not None:
            return common
        return type(e)(a, b)

    # --- comparisons and logic ----------------------------------------------------------------

    def _compare(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        op = type(e)
        lanes = e.dtype.lanes
        if _is_int(a.dtype) and a.dtype == b.dtype and not _has_side_effects(a) \
                and not _has_side_effects(b):
            d = linear_of(a).add(linear_of(b), -1)
            lo, hi = self.lin_bound(d, a.dtype)
            decided = _decide(op, lo, hi)
            if decided is not None:
                return _make_bool(decided, lanes)
        x, y = _int_const(a), _int_const(b)
        if x is None and a.dtype.is_float:
            x, y = _float_const(a), _float_const(b)
        elif x is None and a.dtype.is_bool:
            x, y = _bool_const(a), _bool_const(b)
        if x is not None and y is not None:
            return _make_bool(_CMP[op](x, y), lanes)
        common = self._broadcast_both(e, a, b)
        if common is not None:
            return common
        return op(a, b)

    visit_EQ = visit_NE = visit_LT = visit_LE = visit_GT = visit_GE = _compare

    def visit_And(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        x, y = _bool_const(a), _bool_const(b)
        if x is False or y is False:
            if not _has_side_effects(a) and not _has_side_effects(b):
                return _make_bool(False, e.dtype.lanes)
        if x is True:
            return b
        if y is True:
            return a
        return self._broadcast_both(e, a, b) or E.And(a, b)

    def visit_Or(self, e):
        a, b = self.visit(e.a), self.visit(e.b)
        x, y = _bool_const(a), _bool_const(b)
        if x is True or y is True:
            if not _has_side_effects(a) and not _has_side_effects(b):
                return _make_bool(True, e.dtype.lanes)
        if x is False:
            return b
        if y is False:
            return a
        return self._broadcast_both(e, a, b) or E.Or(a, b)

    def visit_Not(self, e):
        a = self.visit(e.a)
        x = _bool_const(a)
        if x is not None:
            return _make_bool(not x, e.dtype.lanes)
        if isinstance(a, E.Not):
            return a.a
        if isinstance(a, E.Broadcast):
            return E.Broadcast(self.visit(E.Not(a.value)), a.lanes)
        return E.Not(a)

    # --- other expressions --------------------------------------------------------------------

    def visit_Select(self, e):
        cond = self.visit(e.condition)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        c = _bool_const(cond)
        if c is not None and (cond.dtype.lanes == 1 or isinstance(cond, E.Broadcast)):
            return t if c else f
        if t == f and not _has_side_effects(cond):
            return t
        return E.Select(cond, t, f)

    def visit_Cast(self, e):
        v = self.visit(e.value)
        dt = e.dtype
        if v.dtype == dt:
            return v
        if isinstance(v, E.Broadcast) and v.value.dtype.lanes == 1:
            return E.Broadcast(self.visit(E.Cast(dt.element_of(), v.value)), v.lanes)
        folded = _fold_cast(v, dt)
        return folded if folded is not None else E.Cast(dt, v)

    def visit_Ramp(self, e):
        base, stride = self.visit(e.base), self.visit(e.stride)
        if e.lanes == 1:
            return base
        if base.dtype.lanes == 1 and _int_const(stride) == 0:
            return E.Broadcast(base, e.lanes)
        return E.Ramp(base, stride, e.lanes)

    def visit_Broadcast(self, e):
        v = self.visit(e.value)
        if e.lanes == 1:
            return v
        return E.Broadcast(v, e.lanes)

    def visit_Let(self, e):
        value = self.visit(e.value)
        body = self.with_binding(e.var, value, lambda: self.visit(e.body))
        return E.Let(e.var, value, body)

    def with_binding(self, var, value, fn):
        """Run fn() with `var`'s range and modular set known from `value`."""
        saved = (self.ranges.get(var), self.sets.get(var))
        if _is_int(var.dtype) or (isinstance(var.dtype, DataType) and var.dtype.is_bool):
            self.ranges[var] = self.bound(value)
            if _is_int(var.dtype):
                self.sets[var] = self.modset(value)
        try:
            return fn()
        finally:
            for table, old in ((self.ranges, saved[0]), (self.sets, saved[1])):
                if old is None:
                    table.pop(var, None)
                else:
                    table[var] = old

    def visit_Call(self, e):
        args = tuple(self.visit(a) for a in e.args)
        if e.op == "if_then_else":
            c = _bool_const(args[0])
            if c is not None and args[0].dtype.lanes == 1:
                return args[1] if c else args[2]
        if all(x is y for x, y in zip(args, e.args)):
            return e
        return E.Call(e.dtype, e.op, args)

    def visit_Shuffle(self, e):
        vectors = tuple(self.visit(v) for v in e.vectors)
        if len(vectors) == 1 and e.indices == tuple(range(vectors[0].dtype.lanes)):
            return vectors[0]
        return E.Shuffle(vectors, e.indices)

    def visit_BufferLoad(self, e):
        indices = tuple(self.visit(i) for i in e.indices)
        if all(x is y for x, y in zip(indices, e.indices)):
            return e
        return E.BufferLoad(e.buffer, indices)


def _decide(op, lo, hi) -> bool | None:
    """The truth of `d op 0` for every d in [lo, hi], or None."""
    if op is E.LT:
        return True if hi is not None and hi < 0 else False if lo is not None and lo >= 0 else None
    if op is E.LE:
        return True if hi is not None and hi <= 0 else False if lo is not None and lo > 0 else None
    if op is E.GT:
        return True if lo is not None and lo > 0 else False if hi is not None and hi <= 0 else None
    if op is E.GE:
        return True if lo is not None and lo >= 0 else False if hi is not None and hi < 0 else None
    if op is E.EQ:
        if lo == 0 and hi == 0:
            return True
        return False if (lo is not None and lo > 0) or (hi is not None and hi < 0) else None
    if op is E.NE:
        r = _decide(E.EQ, lo, hi)
        return None if r is None else not r
    return None


def _fold_cast(v, dt: DataType):
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
            return E.FloatImm(dt, float(_np_float(dt)(x)))
    if isinstance(v, E.FloatImm):
        x = v.value
        if dt.is_float:
            with np.errstate(all="ignore"):
                return E.FloatImm(dt, float(_np_float(dt)(x)))
        if dt.is_bool:
            return E.IntImm(dt, 1 if x != 0 else 0)
        if dt.is_integer and math.isfinite(x):
            t = math.trunc(x)
            lo = 0 if dt.is_uint else -(1 << (dt.bits - 1))
            hi = (1 << dt.bits) - 1 if dt.is_uint else (1 << (dt.bits - 1)) - 1
            if lo <= t <= hi:
                return E.IntImm(dt, t)
    return None


def simplify_expr(expr, var_ranges: Mapping = {}, var_sets: Mapping = {}):
    """A simpler expression with the same value: `var_ranges` maps Vars to inclusive (lo, hi)
    ranges (None for an unbounded side), `var_sets` to ModularSets."""
    return Simplifier(var_ranges, var_sets)(expr)
