"""Division and modulo rules of the simplifier: floor and truncating `//` and `%` by constants,
divided through the linear form where bounds prove the dividend computes its mathematical value
(see vkir.arith.simplifier for the exactness argument)."""

from __future__ import annotations

from ..ir import expr as E
from .bound import fits, truncdiv
from .linear import Linear, linear_of, rebuild, reduced, wrap
from .folding import has_side_effects, int_const, int_imm, is_int


class DivisionRules:
    """The `visit_FloorDiv`, `visit_FloorMod`, `visit_Div` and `visit_Mod` of `Simplifier`
    (a mixin: it uses the simplifier's `visit`, bounds and modular sets)."""

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
        if has_side_effects(a):
            return None
        if not want_div:
            m = self.modset(a).residue(c)
            if m is not None:
                return int_imm(m, dt)
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
            return self.visit(E.Add(rebuild(q, dt), E.FloorDiv(r_expr, int_imm(c, dt))))
        if r.is_const and r.c == 0:
            return rebuild(r, dt)
        return E.FloorMod(r_expr, int_imm(c, dt))

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
        if not is_int(e.dtype):
            common = self._broadcast_both(e, a, b)
            if common is not None:
                return common
            if e.dtype.is_float and op is E.Div:
                return self._float_arith(E.Div, a, b)
            return op(a, b)
        x, c = int_const(a), int_const(b)
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
