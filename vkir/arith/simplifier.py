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

The division and modulo rules live in division.py, constant folding in folding.py.
"""

from __future__ import annotations

import math
from typing import Mapping

from ..ir import expr as E
from ..ir.dtype import DataType
from ..ir.structural import recursion_headroom
from .bound import fits, mul_interval, type_range, value_range
from .division import DivisionRules
from .folding import (COMPARE, bool_const, decide, disjoint, expr_of, float_const, fold_cast,
                      fold_float, form_of, has_side_effects, impure, int_const, is_int, make_bool,
                      same_or, scalar_of)
from .linear import Linear, linear_of, rebuild, reduced
from .linear_sum import Sum, add_into, add_onto, sum_of
from .modular import ModularSet, modular_set


class Simplifier(DivisionRules):
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
        return same_or(e, method(e))

    # --- leaves -------------------------------------------------------------------------------

    def visit_Var(self, e):
        """A var whose range is a single value becomes that constant."""
        r = self.ranges.get(e)
        if r is not None and is_int(e.dtype) and e.dtype.lanes == 1 and r[0] is not None \
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
        if a.dtype != b.dtype or impure(a) or impure(b):
            # ill-typed input is the checker's to report; impure kept
            return type(e)(expr_of(a, e.a), expr_of(b, e.b))
        if isinstance(e, (E.Add, E.Sub)):
            k = 1 if isinstance(e, E.Add) else -1
            fast = add_into(a, b, k)  # a long chain absorbs a short operand in place
            if fast is None:
                fast = add_onto(a, b, k)  # a long chain on the right
            if fast is not None:
                return fast
            return sum_of(form_of(a).add(form_of(b), k), dt)
        la, lb = form_of(a), form_of(b)
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
        return E.Mul(expr_of(a, e.a), expr_of(b, e.b))

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
            return out if isinstance(out, Sum) else same_or(e, out)
        return self.visit(e)

    def _arith(self, e, dt=None):
        dt = e.dtype if dt is None else dt
        if is_int(dt):
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
        x, y = float_const(a), float_const(b)
        if x is not None and y is not None:
            r = fold_float(op, x, y, a.dtype)
            if r is not None:
                return E.FloatImm(a.dtype, r)
        # exact identities only (also for -0.0, infinities and NaN): x*1, 1*x, x/1, x-(+0.0)
        ka, kb = float_const(scalar_of(a)), float_const(scalar_of(b))
        if (op is E.Mul or op is E.Div) and kb == 1.0:
            return a
        if op is E.Mul and ka == 1.0:
            return b
        if op is E.Sub and kb == 0.0 and math.copysign(1.0, kb) > 0:
            return a
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
        if a == b and not has_side_effects(a):
            return a
        if is_int(e.dtype) and not has_side_effects(a) and not has_side_effects(b):
            le = self._int_order(E.LE, a, b)
            if le is True:
                return a if is_min else b
            if le is False or self._int_order(E.GE, a, b) is True:
                return b if is_min else a
        if e.dtype.is_float:
            x, y = float_const(a), float_const(b)
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
        if is_int(a.dtype) and a.dtype == b.dtype and not has_side_effects(a) \
                and not has_side_effects(b):
            decided = self._int_order(op, a, b)
            if decided is not None:
                return make_bool(decided, lanes)
        x, y = int_const(a), int_const(b)
        if x is None and a.dtype.is_float:
            x, y = float_const(a), float_const(b)
        elif x is None and a.dtype.is_bool:
            x, y = bool_const(a), bool_const(b)
        if x is not None and y is not None:
            return make_bool(COMPARE[op](x, y), lanes)
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
        decided = decide(op, alo - bhi, ahi - blo)
        if decided is not None:
            return decided
        la, lb = reduced(linear_of(a), elem), reduced(linear_of(b), elem)
        if op is E.EQ or op is E.NE:
            d = reduced(la.add(lb, -1), elem)
            if d.is_const:
                return (d.c == 0) == (op is E.EQ)
            if disjoint(self.modset(a), self.modset(b)):
                return op is E.NE
        ea, eb = self.exact_form(la, dt), self.exact_form(lb, dt)
        if ea is None or eb is None:
            return None
        return decide(op, *self.math_range(ea.add(eb, -1)))

    def _logic(self, e, absorbing: bool):
        """And (absorbing constant False) or Or (True): that constant on either side decides
        the result (when the other side has no side effects), the other constant leaves the
        other operand."""
        a, b = self.visit(e.a), self.visit(e.b)
        x, y = bool_const(a), bool_const(b)
        if x is absorbing or y is absorbing:
            if not has_side_effects(a) and not has_side_effects(b):
                return make_bool(absorbing, e.dtype.lanes)
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
        x = bool_const(a)
        if x is not None:
            return make_bool(not x, e.dtype.lanes)
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
        c = bool_const(cond)
        if c is not None and (cond.dtype.lanes == 1 or isinstance(cond, E.Broadcast)):
            return t if c else f
        if t == f and not has_side_effects(cond):
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
        folded = fold_cast(v, dt)
        return folded if folded is not None else E.Cast(dt, v)

    def visit_Ramp(self, e):
        """A ramp with simplified base and stride (a zero stride is a broadcast)."""
        base, stride = self.visit(e.base), self.visit(e.stride)
        if e.lanes == 1:
            return base
        if base.dtype.lanes == 1 and int_const(stride) == 0:
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
        if is_int(var.dtype) or (isinstance(var.dtype, DataType) and var.dtype.is_bool):
            self.ranges[var] = self.bound(value)
            if is_int(var.dtype):
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
            c = bool_const(args[0])
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


def simplify_expr(expr, var_ranges: Mapping = {}, var_sets: Mapping = {}):
    """A simpler expression with the same value: `var_ranges` maps Vars to inclusive (lo, hi)
    ranges (None for an unbounded side), `var_sets` to ModularSets."""
    return Simplifier(var_ranges, var_sets)(expr)
