"""What the emitter can prove about integer values: the ranges of the Vars in scope.

vkir integers wrap at their width, so codegen may only use an instruction that assumes more
(an unsigned division for a floor division, a NoSignedWrap decoration) where the bound analysis
of vkir.arith proves the value involved stays in range. The facts come from the kernel's
structure, never from guesses:

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

`value_range` (vkir.arith) is sound under wrap-around, so every bound here is a bound of the
values the device computes.
"""

from __future__ import annotations

from contextlib import contextmanager

from vkir.arith import type_range, value_range
from vkir.ir import Add, IntImm, Mul, PrimExpr, Sub, Var


class Ranges:
    """Inclusive integer ranges of the Vars in scope (a stack of bindings)."""

    def __init__(self):
        self.env: dict[Var, tuple[int, int]] = {}
        self._memo: dict = {}  # value_range's per-node cache for the current env

    def of(self, e: PrimExpr) -> tuple[int, int] | None:
        """Finite (lo, hi) of an integer or bool expression, None for other types."""
        lo, hi = value_range(e, self.env, self._memo)
        return None if lo is None else (lo, hi)

    def nonnegative(self, e: PrimExpr) -> bool:
        r = self.of(e)
        return r is not None and r[0] >= 0

    def positive(self, e: PrimExpr) -> bool:
        r = self.of(e)
        return r is not None and r[0] >= 1

    def negative(self, e: PrimExpr) -> bool:
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
