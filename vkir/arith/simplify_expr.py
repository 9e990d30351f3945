"""Expression simplification: constant folding, identities and the canonical forms passes need.

Every rewrite is exact under vkir's integer semantics, where arithmetic wraps at the type's width
(the interpreter and the GPU compute int32 modulo 2**32):

- Integer +, -, * are put in linear normal form (see linear.py), which turns `Broadcast(i*4) +
  Ramp(0, 1, 4)` into `Ramp(i*4, 1, 4)` and folds constants with wrap-around. This is ring
  arithmetic modulo 2**bits, exact whatever the values.
- Rewrites that reason about the mathematical value -- floor division and modulo by a positive
  constant (`(i*4 + j) // 4 -> i` when 0 <= j < 4), comparisons (`i*4 + j < i*4 + 4`), min/max --
  first prove that the value an expression computes equals the mathematical value of its linear
  form (`exact_form`): the interval of that form, from the bounds of its atoms (loop ranges,
  let values, sizes), fits the type, possibly after a shift by a multiple of 2**bits. So
  `(x*4 + 1) // 4` stays as it is for an unknown int32 x (x*4 may wrap) and becomes x for a loop
  variable x in [0, 1024); `x + 1 > x` is only decided where x + 1 cannot wrap.
- Modulo by a constant c that divides 2**bits (1, 2, 4, ... 2**(bits-1)) needs no such proof:
  wrapping subtracts a multiple of 2**bits, hence of c, so residues mod c survive it, and
  `(i*4 + j) % 4 -> j % 4` (and `Ramp(b, 1, 4) % 4 -> Ramp(0, 1, 4)` for b a multiple of 4) hold
  for every i. Residues known from the modular-set analysis (which accounts for wrap-around) are
  always usable.

A chain of integer +, -, * is simplified in time linear in its length: its levels pass their
linear form up as a `Sum` (linear_sum.py) and only the chain's root builds an expression.

Float arithmetic is only folded when both operands are constants (in the operands' precision)
and rewritten only by exact identities (x*1, x-0, x/1); it is never reassociated.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.op import is_pure
from ..ir.structural import recursion_headroom
from ..ir.walk import walk
from .bound import fits, mul_interval, truncdiv, type_range, value_range
from .linear import Linear, linear_of, rebuild, reduced, wrap
from .linear_sum import Sum, add_into, add_onto, sum_of
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


def _int_imm(value: int, dt: DataType):
    """An integer constant of `dt` (a Broadcast for vectors)."""
    return E.const(value, dt)


def _make_bool(value: bool, lanes: int):
    return E.const(bool(value), DataType("bool", 1, lanes))


def _has_side_effects(e) -> bool:
    return any(isinstance(n, E.Call) and not is_pure(n.op) for n in walk(e))


def _impure(x) -> bool:
    """Side effects of an operand; a Sum (a linear form) has none."""
    return not isinstance(x, Sum) and _has_side_effects(x)


def _form(x) -> Linear:
    """The linear form of an operand: what `linear_of` gives for its expression."""
    return x.form() if isinstance(x, Sum) else linear_of(x)


def _same_or(e, out):
    """`e` itself where `out` equals it, so unchanged IR stays shared, else `out`."""
    return e if out is not e and type(out) is type(e) and out == e else out


def _expr(x, e):
    """The expression of an operand (a Sum is rebuilt here), `e` itself where it is equal."""
    return _same_or(e, x.expr()) if isinstance(x, Sum) else x


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


class Simplifier:
    """Bottom-up rewriting with known inclusive ranges and modular sets of free Vars."""

    def __init__(self, var_ranges: Mapping = {}, var_sets: Mapping = {}):
        self.ranges = dict(var_ranges)
        self.sets = dict(var_sets)

    # --- helpers ------------------------------------------------------------------------------

    def bound(self, e):
        """Finite bounds of the values `e` computes (see bound.value_range)."""
        return value_range(e, self.ranges)

    def modset(self, e) -> ModularSet:
        """The modular set of `e` given the known sets of vars."""
        return modular_set(e, self.sets)

    def math_range(self, lin: Linear):
        """The interval of the mathematical value of a linear form over every lane, from the
        bounds of its atoms (no wrap-around: a sum of intervals)."""
        lo = hi = lin.c
        for d in (lin.base, lin.vec):
            for atom, k in d.items():
                alo, ahi = mul_interval(self.bound(atom), (k, k))
                lo, hi = lo + alo, hi + ahi
        if lin.lanes > 1 and (lin.stride or lin.sc):
            slo = shi = lin.sc
            for atom, k in lin.stride.items():
                alo, ahi = mul_interval(self.bound(atom), (k, k))
                slo, shi = slo + alo, shi + ahi
            steps = mul_interval((slo, shi), (0, lin.lanes - 1))
            lo, hi = lo + steps[0], hi + steps[1]
        return lo, hi

    def exact_form(self, lin: Linear, dt: DataType) -> Linear | None:
        """A linear form whose mathematical value is, on every lane, exactly the value that the
        expression of `lin` (of integer type `dt`) computes; None when not provable.

        The expression computes the form's value modulo 2**bits. When the form's interval,
        shifted by some multiple t * 2**bits, fits the type's range, that one shift is the
        wrap-around for every value, and the shifted form is the value itself (t is 0 in
        the common case; `x + 4294967295` on uint32 becomes x - 1 when x >= 1)."""
        elem = dt.element_of()
        lin = reduced(lin, elem)
        lo, hi = self.math_range(lin)
        tmin, tmax = type_range(elem)
        modulus = 1 << elem.bits
        t = -((lo - tmin) // modulus)  # the least t with lo + t * modulus >= tmin
        if hi + t * modulus > tmax:
            return None
        if t:
            lin = lin.add(Linear(lin.lanes, c=t * modulus))
        return lin

    def computes_exactly(self, lin: Linear, dt: DataType) -> bool:
        """True when the expression of `lin` computes its mathematical value (no shift)."""
        return fits(self.math_range(lin), dt.element_of())

    def __call__(self, e):
        with recursion_headroom():  # one recursion per level of deep expressions
            return self.visit(e)

    def visit(self, e):
        """The simplified form of `e` (`e` itself when nothing changes)."""
        method = getattr(self, "visit_" + type(e).__name__, None)
        if method is None:
            return e
        return _same_or(e, method(e))

    # --- leaves -------------------------------------------------------------------------------

    def visit_Var(self, e):
        """A var whose range is a single value becomes that constant."""
        r = self.ranges.get(e)
        if r is not None and _is_int(e.dtype) and e.dtype.lanes == 1 and r[0] is not None \
                and r[0] == r[1]:
            return E.IntImm(e.dtype, r[0])
        return e

    # --- integer ring operations --------------------------------------------------------------

    def _int_arith(self, e, dt, a, b):
        """Integer +, -, * of simplified operands, each an expression or a `Sum` (an operand
        that is itself such a chain, kept as its linear form). Returns a Sum where the result
        is the rebuilt linear form, so a chain of n terms is rebuilt once, at its root, not at
        each of its n levels. `dt` is e's dtype (a BinaryOp finds its dtype by walking down its
        `a` operands: asked at every level of a chain, that alone would be quadratic)."""
        if a.dtype != b.dtype or _impure(a) or _impure(b):
            # ill-typed input is the checker's to report; impure kept
            return type(e)(_expr(a, e.a), _expr(b, e.b))
        if isinstance(e, (E.Add, E.Sub)):
            k = 1 if isinstance(e, E.Add) else -1
            fast = add_into(a, b, k)  # a long chain absorbs a short operand in place
            if fast is None:
                fast = add_onto(a, b, k)  # a long chain on the right
            if fast is not None:
                return fast
            return sum_of(_form(a).add(_form(b), k), dt)
        la, lb = _form(a), _form(b)
        # Mul
        if lb.is_const and not lb.base:
            return sum_of(la.scale(lb.c), dt)
        if la.is_const and not la.base:
            return sum_of(lb.scale(la.c), dt)
        lanes = dt.lanes
        if lanes > 1:
            elem = dt.element_of()
            if la.is_base_only and lb.is_base_only:
                prod = self.visit(E.Mul(rebuild(la.base_part(), elem), rebuild(lb.base_part(), elem)))
                return E.Broadcast(prod, lanes) if prod.dtype.lanes == 1 else prod
            for ramp, scal in ((la, lb), (lb, la)):
                if scal.is_base_only and not ramp.vec:
                    s = rebuild(scal.base_part(), elem)
                    base = self.visit(E.Mul(rebuild(ramp.base_part(), elem), s))
                    stride = self.visit(E.Mul(rebuild(ramp.stride_part(), elem), s))
                    return self.visit(E.Ramp(base, stride, lanes))
        return E.Mul(_expr(a, e.a), _expr(b, e.b))

    def visit_Add(self, e):
        """Integer +, -, * through the linear form (folded, terms combined); floats folded when
        constant."""
        out = self._arith(e)
        return out.expr() if isinstance(out, Sum) else out  # `visit` keeps e where equal

    visit_Sub = visit_Mul = visit_Add

    def _operand(self, e, dt=None):
        """The simplified operand of an integer +, -, *: a Sum where it is such a chain itself
        (its expression is built by the chain's root), else what `visit` gives. `dt`: e's
        dtype where the caller knows it."""
        if type(e) in (E.Add, E.Sub, E.Mul):
            out = self._arith(e, dt)
            return out if isinstance(out, Sum) else _same_or(e, out)
        return self.visit(e)

    def _arith(self, e, dt=None):
        dt = e.dtype if dt is None else dt
        if _is_int(dt):
            # e's dtype is its operand a's (see BinaryOp.dtype)
            return self._int_arith(e, dt, self._operand(e.a, dt), self._operand(e.b))
        a, b = self.visit(e.a), self.visit(e.b)
        common = self._broadcast_both(e, a, b)
        if common is not None:
            return common
        if dt.is_float:
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
        """a // c or a % c (floor, on the value a computes) for a constant c > 0, or None when
        nothing simplifies exactly.

        With A the exact form of a (its value as a mathematical integer) split as c*Q + R, the
        quotient is Q + R // c and the remainder R % c, provided the rebuilt R computes R (its
        interval fits the type). A remainder by a c dividing 2**bits needs no exact form: any
        wrap of a or of R changes them by multiples of c."""
        dt = e.dtype
        elem = dt.element_of()
        lanes = dt.lanes
        if _has_side_effects(a):
            return None
        if not want_div:
            m = self.modset(a).residue(c)
            if m is not None:
                return _int_imm(m, dt)
        residues_survive = (1 << elem.bits) % c == 0
        la = reduced(linear_of(a), elem)
        form = self.exact_form(la, dt)
        if form is None:
            if want_div or not residues_survive:
                return None
            form = la  # a ≡ la (mod 2**bits), hence (mod c)
        q, r = self._split(form, c)
        r_range = self.math_range(r)
        r_exact = fits(r_range, elem)
        lo, hi = r_range
        if r_exact and lo // c == hi // c:
            # R lies in one period [k*c, k*c + c): the quotient is Q + k, the remainder R - k*c
            k = lo // c
            if want_div:
                return rebuild(q.add(Linear(lanes, c=k)), dt)
            return rebuild(r.add(Linear(lanes, c=-k * c)), dt)
        if lanes > 1 and not r.vec and not r.stride:
            # lanes are c*Q + RB + sc*lane with RB ≡ m (mod c): when every m + sc*lane stays in
            # [0, c), the remainder is Ramp(m, sc) and the quotient Q + (RB - m) // c
            rb = r.base_part()
            if residues_survive or self.computes_exactly(rb, elem):
                m = self.modset(rebuild(rb, elem)).residue(c)
                if m is not None:
                    ends = (m, m + r.sc * (lanes - 1))
                    if min(ends) >= 0 and max(ends) < c:
                        if not want_div:
                            if r.sc:
                                return E.Ramp(E.IntImm(elem, m), E.IntImm(elem, wrap(r.sc, elem)),
                                              lanes)
                            return E.Broadcast(E.IntImm(elem, m), lanes)
                        rbm = rb.add(Linear(1, c=-m))
                        if self.computes_exactly(rbm, elem):
                            head = self.visit(E.FloorDiv(rebuild(rbm, elem), E.IntImm(elem, c)))
                            return self.visit(E.Add(rebuild(q, dt), E.Broadcast(head, lanes)))
        if not (r_exact or residues_survive and not want_div):
            return None  # the rebuilt R might wrap: R // c and R % c would change
        r_expr = rebuild(r, dt)
        if lanes == 1 and not want_div:
            m = self.modset(r_expr).residue(c)
            if m is not None:
                return E.IntImm(dt, m)
        if q.is_const and q.c == 0:
            return None  # nothing split off
        if want_div:
            if r.is_const and r.c == 0:
                return rebuild(q, dt)
            return self.visit(E.Add(rebuild(q, dt), E.FloorDiv(r_expr, _int_imm(c, dt))))
        if r.is_const and r.c == 0:
            return rebuild(r, dt)
        return E.FloorMod(r_expr, _int_imm(c, dt))

    def visit_FloorDiv(self, e):
        """Floor division, folded or divided through the linear form where bounds allow."""
        return self._division(e, floor=True, want_div=True)

    def visit_FloorMod(self, e):
        """Floor modulo, folded or reduced through the linear form where bounds allow."""
        return self._division(e, floor=True, want_div=False)

    def visit_Div(self, e):
        """Truncating division, simplified like a floor division where the operands are provably
        non-negative."""
        return self._division(e, floor=False, want_div=True)

    def visit_Mod(self, e):
        """Truncating modulo, simplified like a floor modulo where the operands are provably non-
        negative."""
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
                v = truncdiv(x, c) if want_div else x - c * truncdiv(x, c)
            return E.const(wrap(v, e.dtype), e.dtype)
        if c == 1:
            return a if want_div else E.const(0, e.dtype)
        if c is not None and c > 0:
            if floor or self.bound(a)[0] >= 0:
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
        """min(a, b): folded, or one side where bounds decide it."""
        return self._minmax(e, is_min=True)

    def visit_Max(self, e):
        """max(a, b): folded, or one side where bounds decide it."""
        return self._minmax(e, is_min=False)

    def _minmax(self, e, is_min: bool):
        a, b = self.visit(e.a), self.visit(e.b)
        if a.dtype != b.dtype:
            return type(e)(a, b)  # ill-typed: left for the checker to report
        if a == b and not _has_side_effects(a):
            return a
        if _is_int(e.dtype) and not _has_side_effects(a) and not _has_side_effects(b):
            le = self._int_order(E.LE, a, b)
            if le is True:
                return a if is_min else b
            if le is False or self._int_order(E.GE, a, b) is True:
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
            decided = self._int_order(op, a, b)
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

    def _int_order(self, op, a, b) -> bool | None:
        """The truth of `a op b` on the values a and b compute (every lane), or None.

        Decided from the bounds of a and b; for == and != also from the ring (a - b a nonzero
        constant modulo 2**bits: never equal, even wrapped) and from disjoint modular sets;
        else from the interval of A - B where A, B are the exact forms of a and b."""
        dt = a.dtype
        elem = dt.element_of()
        (alo, ahi), (blo, bhi) = self.bound(a), self.bound(b)
        decided = _decide(op, alo - bhi, ahi - blo)
        if decided is not None:
            return decided
        la, lb = reduced(linear_of(a), elem), reduced(linear_of(b), elem)
        if op is E.EQ or op is E.NE:
            d = reduced(la.add(lb, -1), elem)
            if d.is_const:
                return (d.c == 0) == (op is E.EQ)
            if _disjoint(self.modset(a), self.modset(b)):
                return op is E.NE
        ea, eb = self.exact_form(la, dt), self.exact_form(lb, dt)
        if ea is None or eb is None:
            return None
        return _decide(op, *self.math_range(ea.add(eb, -1)))

    def _logic(self, e, absorbing: bool):
        """And (absorbing constant False) or Or (True): that constant on either side decides
        the result (when the other side has no side effects), the other constant leaves the
        other operand."""
        a, b = self.visit(e.a), self.visit(e.b)
        x, y = _bool_const(a), _bool_const(b)
        if x is absorbing or y is absorbing:
            if not _has_side_effects(a) and not _has_side_effects(b):
                return _make_bool(absorbing, e.dtype.lanes)
        if x is (not absorbing):
            return b
        if y is (not absorbing):
            return a
        return self._broadcast_both(e, a, b) or type(e)(a, b)

    def visit_And(self, e):
        """`a and b` with constant operands folded."""
        return self._logic(e, False)

    def visit_Or(self, e):
        """`a or b` with constant operands folded."""
        return self._logic(e, True)

    def visit_Not(self, e):
        """`not a`: folded, a double negation removed, a comparison inverted."""
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
        """A select with a constant condition becomes the chosen side."""
        cond = self.visit(e.condition)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        c = _bool_const(cond)
        if c is not None and (cond.dtype.lanes == 1 or isinstance(cond, E.Broadcast)):
            return t if c else f
        if t == f and not _has_side_effects(cond):
            return t
        return E.Select(cond, t, f)

    def visit_Cast(self, e):
        """A cast of a constant folds; a cast to the value's own type disappears."""
        v = self.visit(e.value)
        dt = e.dtype
        if v.dtype == dt:
            return v
        if isinstance(v, E.Broadcast) and v.value.dtype.lanes == 1:
            return E.Broadcast(self.visit(E.Cast(dt.element_of(), v.value)), v.lanes)
        folded = _fold_cast(v, dt)
        return folded if folded is not None else E.Cast(dt, v)

    def visit_Ramp(self, e):
        """A ramp with simplified base and stride (a zero stride is a broadcast)."""
        base, stride = self.visit(e.base), self.visit(e.stride)
        if e.lanes == 1:
            return base
        if base.dtype.lanes == 1 and _int_const(stride) == 0:
            return E.Broadcast(base, e.lanes)
        return E.Ramp(base, stride, e.lanes)

    def visit_Broadcast(self, e):
        """A broadcast of the simplified value."""
        v = self.visit(e.value)
        if e.lanes == 1:
            return v
        return E.Broadcast(v, e.lanes)

    def visit_Let(self, e):
        """The body simplified with the var bound to its value's range and set."""
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
        """A call with simplified arguments (pure math on constants is not folded)."""
        args = tuple(self.visit(a) for a in e.args)
        if e.op == "if_then_else":
            c = _bool_const(args[0])
            if c is not None and args[0].dtype.lanes == 1:
                return args[1] if c else args[2]
        if e.op in ("shift_left", "shift_right") and isinstance(args[1], E.IntImm):
            bits = args[1].dtype.bits  # a folded amount: taken modulo the width, as defined
            if not 0 <= args[1].value < bits:
                args = (args[0], E.IntImm(args[1].dtype, args[1].value % bits))
        if all(x is y for x, y in zip(args, e.args)):
            return e
        return E.Call(e.dtype, e.op, args)

    def visit_Shuffle(self, e):
        """A shuffle of the simplified vectors."""
        vectors = tuple(self.visit(v) for v in e.vectors)
        if len(vectors) == 1 and e.indices == tuple(range(vectors[0].dtype.lanes)):
            return vectors[0]
        return E.Shuffle(vectors, e.indices)

    def visit_BufferLoad(self, e):
        """A load at the simplified indices."""
        indices = tuple(self.visit(i) for i in e.indices)
        if all(x is y for x, y in zip(indices, e.indices)):
            return e
        return E.BufferLoad(e.buffer, indices)


def _disjoint(x: ModularSet, y: ModularSet) -> bool:
    """True when no integer is in both sets."""
    g = math.gcd(x.coeff, y.coeff)
    return (x.base - y.base) % g != 0 if g else x.base != y.base


def _decide(op, lo, hi) -> bool | None:
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
            lo, hi = type_range(dt)
            if lo <= t <= hi:
                return E.IntImm(dt, t)
    return None


def simplify_expr(expr, var_ranges: Mapping = {}, var_sets: Mapping = {}):
    """A simpler expression with the same value: `var_ranges` maps Vars to inclusive (lo, hi)
    ranges (None for an unbounded side), `var_sets` to ModularSets."""
    return Simplifier(var_ranges, var_sets)(expr)
