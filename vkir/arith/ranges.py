"""Ranges of the Vars in scope, from a kernel's structure: the facts that the Simplify pass and
SPIR-V codegen add to `value_range` (the one bound analysis, bound.py) while they walk a function.

vkir integers wrap at their width, so a pass may only fold, and codegen may only use an
instruction that assumes more (an unsigned division for a floor division, a NoSignedWrap
decoration), where the bounds prove the value involved stays in range. The facts come from the
kernel's structure, never from guesses (`RangeScope`, codegen's scope):

- a symbolic size is a buffer extent: 0 <= size <= the type's maximum;
- a thread-binding var is min plus the invocation's id, which lies in [0, extent);
- a serial loop var starts at min and steps by one while it is less than min + extent (as
  codegen emits the loop), so it lies in [min, min + extent - 1] with the sum as computed;
  an unrolled copy of a body has its var bound to one constant;
- a let-bound var has the bound of its value.

Bounds are memoized per node while the Vars in scope stay the same (the emitter asks for the
bounds of the operands of every Add on its way down a deep sum; without the memo each query
re-walks the whole subtree and codegen turns quadratic in the expression's depth). Any change
of the scope starts a fresh memo.

`value_range` is sound under wrap-around, so every bound here is a bound of the values the
device computes. Two loop rules exist because two loop forms exist: `RangeScope.loop` is the loop
as codegen emits it (`while var < min + extent`), `counted_loop_range` the loop as the interpreter
runs it (`extent` iterations from `min`, each value wrapped), which Simplify must assume.
`condition_ranges` narrows a var under a branch condition (`if i < n:`).
"""

from __future__ import annotations

from contextlib import contextmanager

from ..ir import expr as E
from ..ir.expr import Add, IntImm, Mul, PrimExpr, Sub, Var
from .bound import type_range, value_range

__all__ = ["RangeScope", "counted_loop_range", "condition_ranges", "is_zero"]


class RangeScope:
    """Inclusive integer ranges of the Vars in scope (a stack of bindings)."""

    def __init__(self):
        self.env: dict[Var, tuple[int, int]] = {}
        self._memo: dict = {}  # value_range's per-node cache for the current env

    def of(self, e: PrimExpr) -> tuple[int, int] | None:
        """Finite (lo, hi) of an integer or bool expression, None for other types."""
        lo, hi = value_range(e, self.env, self._memo)
        return None if lo is None else (lo, hi)

    def nonnegative(self, e: PrimExpr) -> bool:
        """True when `e` is provably >= 0 in the current scope."""
        r = self.of(e)
        return r is not None and r[0] >= 0

    def positive(self, e: PrimExpr) -> bool:
        """True when `e` is provably >= 1 in the current scope."""
        r = self.of(e)
        return r is not None and r[0] >= 1

    def negative(self, e: PrimExpr) -> bool:
        """True when `e` is provably <= -1 in the current scope."""
        r = self.of(e)
        return r is not None and r[1] <= -1

    def assume(self, var: Var, lo: int, hi: int):
        """From now on `var` lies in [lo, hi] (a fact for the whole kernel)."""
        self.env[var] = (lo, hi)
        self._memo = {}

    @contextmanager
    def known(self, var: Var, lo: int, hi: int):
        """Within the block, `var` is known to lie in [lo, hi] (clipped to its type; an empty
        interval, e.g. a loop that never runs, is kept as the single value lo)."""
        full = type_range(var.dtype)
        if full is None:
            yield
            return
        lo = max(lo, full[0])
        hi = max(lo, min(hi, full[1]))
        old = self.env.get(var)
        self.env[var] = (lo, hi)
        outer_memo, self._memo = self._memo, {}
        try:
            yield
        finally:
            if old is None:
                del self.env[var]
            else:
                self.env[var] = old
            self._memo = outer_memo  # the outer scope's bounds hold again

    @contextmanager
    def bound_to(self, var: Var, value: PrimExpr):
        """`var` is bound to `value` within the block."""
        r = self.of(value) if value.dtype == var.dtype else None
        if r is None:
            yield
            return
        with self.known(var, *r):
            yield

    @contextmanager
    def loop(self, var: Var, min_: PrimExpr, extent: PrimExpr):
        """`var` of a serial loop, as codegen emits it: it starts at `min` and steps by one
        while it is less than end = min + extent (the wrapped sum), so it never passes
        end - 1 and never wraps: var lies in [lo(min), hi(end) - 1]."""
        lo = self.of(min_)
        end = self.of(extent if is_zero(min_) else Add(min_, extent))
        if lo is None or end is None:
            yield
            return
        with self.known(var, lo[0], end[1] - 1):
            yield

    @contextmanager
    def thread(self, var: Var, min_: PrimExpr, extent: PrimExpr):
        """`var` of a thread-binding loop: the invocation's id in [0, extent) (the host
        launches `extent` workgroups or invocations, as an int32) plus `min`."""
        lo, ext = self.of(min_), self.of(extent)
        if lo is None or ext is None:
            yield
            return
        r = (lo[0], lo[1] + ext[1] - 1)
        full = type_range(var.dtype)
        if not _inside(r, full):  # min + id may wrap
            yield
            return
        with self.known(var, *r):
            yield

    def no_wrap(self, e: PrimExpr) -> tuple[bool, bool]:
        """(no signed wrap, no unsigned wrap) for a scalar or vector integer Add, Sub or Mul:
        the mathematical result of the operation on any operand values in their bounds lies
        in the range of the type, read as signed and as unsigned respectively."""
        dt = e.dtype
        if not dt.is_integer or type(e) not in (Add, Sub, Mul):
            return False, False
        a, b = self.of(e.a), self.of(e.b)
        if a is None or b is None:
            return False, False
        if isinstance(e, Add):
            r = (a[0] + b[0], a[1] + b[1])
        elif isinstance(e, Sub):
            r = (a[0] - b[1], a[1] - b[0])
        else:
            products = [x * y for x in a for y in b]
            r = (min(products), max(products))
        bits = dt.bits
        signed = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        unsigned = (0, (1 << bits) - 1)
        if dt.is_uint:  # the operands' bounds are their unsigned values
            return _inside(r, signed) and a[1] <= signed[1] and b[1] <= signed[1], \
                _inside(r, unsigned)
        # int: read as unsigned, a non-negative operand keeps its value
        nuw = a[0] >= 0 and b[0] >= 0 and _inside(r, unsigned)
        return _inside(r, signed), nuw


def is_zero(e) -> bool:
    """True for the integer constant 0 (a loop or offset that starts at zero)."""
    return isinstance(e, IntImm) and e.value == 0


def _inside(r, full) -> bool:
    return full[0] <= r[0] and r[1] <= full[1]


def counted_loop_range(dtype, start: tuple, extent_hi: int | None) -> tuple:
    """The values the var of a loop of `dtype` takes when it runs `extent` iterations from
    `start` (bounds (lo, hi), None where unknown), each value wrapped to the type, as the
    interpreter runs loops: [start_lo, start_hi + extent_hi - 1] when that fits the type, the
    whole type otherwise, (None, None) when nothing is known. An empty loop runs nothing, so
    any range is true of it."""
    full = type_range(dtype)
    start_lo, start_hi = start
    if full is None or start_lo is None or extent_hi is None:
        return (None, None)
    hi = start_hi + max(extent_hi, 1) - 1
    return (start_lo, hi) if hi <= full[1] else full


_FLIP = {E.LT: E.GT, E.LE: E.GE, E.GT: E.LT, E.GE: E.LE, E.EQ: E.EQ, E.NE: E.NE}
_NEGATE = {E.LT: E.GE, E.LE: E.GT, E.GT: E.LE, E.GE: E.LT, E.EQ: E.NE, E.NE: E.EQ}


def condition_ranges(cond, holds: bool, bound, narrowed) -> dict:
    """Ranges of scalar integer vars implied by `cond` being `holds`: from comparisons of a var
    with an expression, and from the operands of `and` (or of `or` when it fails). `bound(e)` is
    the (lo, hi) of an expression in the current scope; `narrowed(ranges, fn)` runs `fn` with
    `ranges` added to that scope (the second operand of `and` sees what the first implies)."""
    if isinstance(cond, E.Not):
        return condition_ranges(cond.a, not holds, bound, narrowed)
    if isinstance(cond, E.And if holds else E.Or):
        out = condition_ranges(cond.a, holds, bound, narrowed)
        out.update(narrowed(out, lambda: condition_ranges(cond.b, holds, bound, narrowed)))
        return out
    op = type(cond)
    if op not in _FLIP or cond.dtype.lanes != 1:
        return {}
    if not holds:
        op = _NEGATE[op]
    out = {}
    for var, other, rel in ((cond.a, cond.b, op), (cond.b, cond.a, _FLIP[op])):
        if not isinstance(var, E.Var) or type_range(var.dtype) is None \
                or var.dtype.is_bool or var.dtype.lanes != 1:
            continue
        lo, hi = bound(var)
        olo, ohi = bound(other)
        if olo is None:
            continue
        if rel is E.LT:
            hi = min(hi, ohi - 1)
        elif rel is E.LE:
            hi = min(hi, ohi)
        elif rel is E.GT:
            lo = max(lo, olo + 1)
        elif rel is E.GE:
            lo = max(lo, olo)
        elif rel is E.EQ:
            lo, hi = max(lo, olo), min(hi, ohi)
        if lo <= hi:  # else the branch never runs
            out[var] = (lo, hi)
    return out
