"""Simplify: constant folding and arithmetic simplification of every expression of a function.

Expressions go through `vkir.arith.simplify_expr`, knowing (vkir.arith.ranges) the ranges of
loop variables (from the loops' min and extent), of let-bound variables (from their values), of
variables compared in an enclosing `if` (`if i < n:` gives i <= max(n) - 1 in the then-branch) and that symbolic sizes
are nonnegative int32 values. Statements: `if True` keeps its then-branch, `if False` its
else-branch (or nothing), loops of extent 0 disappear (thread-binding loops stay: they define the
launch grid), and no-op `Evaluate`s of constants drop out of sequences. Lets are kept.

Integers wrap (see vkir.arith): every fact is about the values the program actually computes. A
loop runs its variable through min, min + 1, ..., min + extent - 1 (each wrapped to the type, as
the interpreter does), so its range is [min_lo, min_hi + extent_hi - 1] when that fits the type
and the whole type otherwise. For the grid loop of `T.thread_binding((n + 63) // 64)` with
0 <= n < 2**31 the extent is at most 2**25 - 1 (n + 63 may itself wrap to a negative value, whose
quotient is negative: then no block runs), so bx <= 2**25 - 2 and `bx * 64 + tx` (tx < 64) is at
most 2**31 - 65: provably free of wrap-around, and divisions and comparisons of it simplify.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..arith import Simplifier
from ..arith.ranges import condition_ranges, counted_loop_range
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.base import PrimExpr
from ..ir.functor import Mutator
from .base import Pass


def _is_noop(stmt) -> bool:
    return isinstance(stmt, S.Evaluate) and isinstance(stmt.value, (E.IntImm, E.FloatImm))


NOOP = S.Evaluate(E.IntImm("int32", 0))


class _StmtSimplifier(Mutator):
    def __init__(self, simplifier: Simplifier):
        self.s = simplifier

    def visit(self, node):
        if isinstance(node, PrimExpr):
            return self.s(node)
        return super().visit(node)

    def with_ranges(self, ranges: dict, fn):
        """Run fn() with the given var ranges known (restored afterwards)."""
        saved = {v: self.s.ranges.get(v) for v in ranges}
        self.s.ranges.update(ranges)
        try:
            return fn()
        finally:
            for v, old in saved.items():
                if old is None:
                    del self.s.ranges[v]
                else:
                    self.s.ranges[v] = old

    def visit_For(self, op):
        start, extent = self.s(op.min), self.s(op.extent)
        ext_hi = self.s.bound(extent)[1]
        if op.kind != "thread_binding" and ext_hi is not None and ext_hi <= 0:
            return NOOP
        var_range = counted_loop_range(op.loop_var.dtype, self.s.bound(start), ext_hi)
        body = self.with_ranges({op.loop_var: var_range}, lambda: self.visit(op.body))
        if start is op.min and extent is op.extent and body is op.body:
            return op
        return replace(op, min=start, extent=extent, body=body)

    def implied(self, cond, holds: bool) -> dict:
        """Var ranges that `cond` being `holds` implies in the current scope."""
        return condition_ranges(cond, holds, self.s.bound, self.with_ranges)

    def visit_IfThenElse(self, op):
        cond = self.s(op.condition)
        if isinstance(cond, E.IntImm) and cond.dtype.is_bool:
            if cond.value:
                return self.visit(op.then_case)
            return self.visit(op.else_case) if op.else_case is not None else NOOP
        then_case = self.with_ranges(self.implied(cond, True), lambda: self.visit(op.then_case))
        else_case = None
        if op.else_case is not None:
            else_case = self.with_ranges(self.implied(cond, False),
                                         lambda: self.visit(op.else_case))
        if else_case is not None and _is_noop(else_case):
            else_case = None
        if _is_noop(then_case) and else_case is None:
            return NOOP
        return S.IfThenElse(cond, then_case, else_case)

    def visit_While(self, op):
        cond = self.s(op.condition)
        if isinstance(cond, E.IntImm) and cond.dtype.is_bool and not cond.value:
            return NOOP
        body = self.visit(op.body)
        if cond is op.condition and body is op.body:
            return op
        return S.While(cond, body, span=op.span)

    def visit_LetStmt(self, op):
        value = self.s(op.value)
        body = self.s.with_binding(op.var, value, lambda: self.visit(op.body))
        if value is op.value and body is op.body:
            return op
        return S.LetStmt(op.var, value, body)

    def visit_SeqStmt(self, op):
        stmts = [self.visit(s) for s in op.seq]
        kept = [s for s in stmts if not _is_noop(s)]
        if not kept:
            return NOOP
        if len(kept) == len(op.seq) and all(a is b for a, b in zip(kept, op.seq)):
            return op
        return S.seq(*kept)


@dataclass(frozen=True)
class Simplify(Pass):
    """Constant folding and arithmetic simplification (see the module docstring)."""

    def transform(self, func):
        """Simplify every expression and statement of the body (see the module docstring)."""
        # a symbolic size is a nonnegative value of its type (int32: [0, 2**31 - 1])
        ranges = {v: (0, None) for buf in func.buffer_map.values() for s in buf.shape
                  for v in [s] if isinstance(v, E.Var)}
        body = _StmtSimplifier(Simplifier(ranges)).visit(func.body)
        return func if body is func.body else func.with_body(body)
