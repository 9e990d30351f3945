"""Simplify: constant folding and arithmetic simplification of every expression of a function.

Expressions go through `vkir.arith.simplify_expr`, knowing the ranges of loop variables (from
the loops' min and extent), of let-bound variables (from their values) and that symbolic sizes
are nonnegative. Statements: `if True` keeps its then-branch, `if False` its else-branch (or
nothing), loops of extent 0 disappear (thread-binding loops stay: they define the launch grid),
and no-op `Evaluate`s of constants drop out of sequences. Lets are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..arith import Simplifier
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

    def visit_For(self, op):
        start, extent = self.s(op.min), self.s(op.extent)
        ext_lo, ext_hi = self.s.bound(extent)
        if op.kind != "thread_binding" and ext_hi is not None and ext_hi <= 0:
            return NOOP
        lo = self.s.bound(start)[0]
        hi = self.s.bound(self.s(E.Sub(E.Add(start, extent), E.IntImm(extent.dtype, 1))))[1]
        var = op.loop_var
        saved = self.s.ranges.get(var)
        self.s.ranges[var] = (lo, hi)
        try:
            body = self.visit(op.body)
        finally:
            if saved is None:
                del self.s.ranges[var]
            else:
                self.s.ranges[var] = saved
        if start is op.min and extent is op.extent and body is op.body:
            return op
        return replace(op, min=start, extent=extent, body=body)

    def visit_IfThenElse(self, op):
        cond = self.s(op.condition)
        if isinstance(cond, E.IntImm) and cond.dtype.is_bool:
            if cond.value:
                return self.visit(op.then_case)
            return self.visit(op.else_case) if op.else_case is not None else NOOP
        then_case = self.visit(op.then_case)
        else_case = self.visit(op.else_case) if op.else_case is not None else None
        if else_case is not None and _is_noop(else_case):
            else_case = None
        if _is_noop(then_case) and else_case is None:
            return NOOP
        return S.IfThenElse(cond, then_case, else_case)

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
        ranges = {v: (0, None) for buf in func.buffer_map.values() for s in buf.shape
                  for v in [s] if isinstance(v, E.Var)}
        body = _StmtSimplifier(Simplifier(ranges)).visit(func.body)
        return func if body is func.body else func.with_body(body)
