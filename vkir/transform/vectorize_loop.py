"""VectorizeLoop: a `vectorized` loop of constant extent L becomes one vector computation.

The loop variable becomes `Ramp(min, 1, L)`; a value that depends on it becomes an L-times wider
vector (an M-lane value of the loop body becomes M*L lanes, iteration-major), loop-invariant
operands are `Broadcast` where they meet vector ones, let-bound values that depend on the loop
become vector lets, and loads and stores take the vector as their last index (typing rule 1).
Index expressions are simplified into canonical `Ramp` form (`Ramp(i*4, 1, 4)`).

As in TVM, a `vectorized` loop promises that its iterations are independent, so statement order
across iterations may change. A loop-invariant `if` keeps its scalar condition. Constructs that
a vector cannot express exactly make the loop run over its lanes as a serial loop
(scalarization): a lane-dependent `if` condition (we cannot mask stores), a lane-dependent
`if_then_else` (it must not evaluate the untaken side), a lane-dependent index in a non-last
dimension, a store whose index is the same for all lanes but whose value differs, and
expressions that are already vectors in the loop body and depend on the loop variable (a Ramp,
Broadcast or Shuffle, a vector index, a lane-dependent scalar condition selecting among vector
values). Constructs that are not loop bodies at all raise `TransformError`: a non-constant
extent, nested loops (vectorized or not), barriers, allocations, async scopes and impure calls.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..arith import simplify_expr
from ..errors import TransformError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.functor import Mutator, children
from ..ir.op import is_atomic, is_pure, is_subgroup
from ..ir.traversal import walk
from ..ir.printer import script
from .base import Pass


class _Scalarize(Exception):
    """Internal: the loop body needs a construct that only a per-lane loop expresses exactly."""


def _where(loop) -> str:
    span = loop.span
    where = f" at {span}" if span is not None else ""
    return f"vectorized loop over {loop.loop_var.name!r}{where}"


class _BodyVectorizer:
    """Rewrites one loop body for L lanes; `vmap` maps vars to their vector values."""

    def __init__(self, loop, lanes: int):
        self.loop = loop
        self.lanes = lanes
        self.vmap = {loop.loop_var: E.Ramp(loop.min, E.IntImm(loop.min.dtype, 1), lanes)}

    def error(self, what: str):
        raise TransformError(f"VectorizeLoop: {_where(self.loop)}: {what}")

    def widen(self, e, is_vec: bool):
        return e if is_vec else E.Broadcast(e, self.lanes)

    def wide_dtype(self, dt):
        return dt.with_lanes(dt.lanes * self.lanes)

    # --- expressions: return (new expression, lane-dependent?) --------------------------------

    def expr(self, e):
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is not None:
            return method(e)
        if isinstance(e, E.BinaryOp):
            return self._binary(e)
        return e, False

    def expr_Var(self, e):
        if e in self.vmap:
            return self.vmap[e], True
        return e, False

    def _binary(self, e):
        (a, va), (b, vb) = self.expr(e.a), self.expr(e.b)
        if not va and not vb:
            return (e if a is e.a and b is e.b else type(e)(a, b)), False
        return type(e)(self.widen(a, va), self.widen(b, vb)), True

    def expr_Not(self, e):
        a, va = self.expr(e.a)
        return (E.Not(a) if a is not e.a else e), va

    def expr_Cast(self, e):
        v, vv = self.expr(e.value)
        if not vv:
            return (E.Cast(e.dtype, v) if v is not e.value else e), False
        return E.Cast(self.wide_dtype(e.dtype), v), True

    def expr_Select(self, e):
        (c, vc), (t, vt), (f, vf) = (self.expr(x) for x in
                                     (e.condition, e.true_value, e.false_value))
        if not (vc or vt or vf):
            return E.Select(c, t, f), False
        if vc and e.condition.dtype.lanes != e.true_value.dtype.lanes:
            raise _Scalarize("a lane-dependent scalar condition selects vector values")
        cond = self.widen(c, vc) if vc or e.condition.dtype.lanes > 1 else c
        return E.Select(cond, self.widen(t, vt), self.widen(f, vf)), True

    def expr_Call(self, e):
        if is_atomic(e.op) or is_subgroup(e.op):
            # one update (or one collective operation) per iteration: the loop stays serial
            raise _Scalarize(f"{e.op} is applied once per iteration")
        if not is_pure(e.op):
            self.error(f"impure call {e.op!r} cannot be vectorized")
        results = [self.expr(a) for a in e.args]
        if not any(v for _, v in results):
            args = tuple(a for a, _ in results)
            return (E.Call(e.dtype, e.op, args) if args != e.args else e), False
        if e.op == "if_then_else":
            if results[0][1]:
                raise _Scalarize("if_then_else with a lane-dependent condition")
            (c, _), (t, vt), (f, vf) = results
            return E.Call(self.wide_dtype(e.dtype), e.op,
                          (c, self.widen(t, vt), self.widen(f, vf))), True
        args = tuple(self.widen(a, v) for a, v in results)
        return E.Call(self.wide_dtype(e.dtype), e.op, args), True

    def _vector_construct(self, e):
        for child in _subexprs(e):
            if self.expr(child)[1]:
                raise _Scalarize(f"a {type(e).__name__} depends on the loop variable")
        return e, False

    expr_Ramp = expr_Broadcast = expr_Shuffle = _vector_construct

    def expr_Let(self, e):
        value, vv = self.expr(e.value)
        if not vv:
            body, vb = self.expr(e.body)
            return E.Let(e.var, value, body), vb
        var = E.Var(e.var.name, value.dtype)
        self.vmap[e.var] = var
        body, vb = self.expr(e.body)
        return E.Let(var, value, self.widen(body, vb)), True

    def indices(self, indices, buffer, what):
        """Vectorized indices, and whether the last one became a vector."""
        out, lane_dep = [], False
        for k, idx in enumerate(indices):
            new, v = self.expr(idx)
            if v:
                if k != len(indices) - 1:
                    raise _Scalarize(f"{what} of {buffer.name!r} has a lane-dependent index in "
                                     f"dimension {k}, not the last")
                if idx.dtype.lanes != 1:
                    raise _Scalarize(f"{what} of {buffer.name!r} already has a vector index")
                new = simplify_expr(new)
                lane_dep = True
            out.append(new)
        return tuple(out), lane_dep

    def expr_BufferLoad(self, e):
        indices, v = self.indices(e.indices, e.buffer, "load")
        if not v:
            return (E.BufferLoad(e.buffer, indices) if indices != e.indices else e), False
        return E.BufferLoad(e.buffer, indices), True

    # --- statements ---------------------------------------------------------------------------

    def stmt(self, s):
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            self.error(f"{type(s).__name__} cannot be vectorized")
        return method(s)

    def stmt_BufferStore(self, s):
        indices, vi = self.indices(s.indices, s.buffer, "store")
        value, vv = self.expr(s.value)
        if vv and not vi:
            raise _Scalarize(f"store to {s.buffer.name!r} at a lane-invariant index of a "
                             "lane-dependent value")
        if vi:
            value = self.widen(value, vv)
        return S.BufferStore(s.buffer, value, indices)

    def stmt_LetStmt(self, s):
        value, vv = self.expr(s.value)
        if not vv:
            return S.LetStmt(s.var, value, self.stmt(s.body))
        var = E.Var(s.var.name, value.dtype)
        self.vmap[s.var] = var
        return S.LetStmt(var, value, self.stmt(s.body))

    def stmt_IfThenElse(self, s):
        cond, vc = self.expr(s.condition)
        if vc:
            raise _Scalarize("an if with a lane-dependent condition")
        then_case = self.stmt(s.then_case)
        else_case = self.stmt(s.else_case) if s.else_case is not None else None
        return S.IfThenElse(cond, then_case, else_case)

    def stmt_SeqStmt(self, s):
        return S.SeqStmt(tuple(self.stmt(x) for x in s.seq))

    def stmt_DeclBuffer(self, s):
        return S.DeclBuffer(s.buffer, self.stmt(s.body))

    def stmt_Evaluate(self, s):
        value, _ = self.expr(s.value)
        return S.Evaluate(value) if value is not s.value else s


def _subexprs(e):
    return [c for c in children(e) if isinstance(c, E.PrimExpr)]


class _LoopVectorizer(Mutator):
    def visit_For(self, op):
        if op.kind != "vectorized":
            return self.generic_visit(op)
        extent = simplify_expr(op.extent)
        if not isinstance(extent, E.IntImm):
            raise TransformError(f"VectorizeLoop: {_where(op)}: the extent {script(extent)} is "
                                 "not a constant")
        if extent.value <= 0:
            return S.Evaluate(E.IntImm("int32", 0))
        _check_body(op)
        vectorizer = _BodyVectorizer(replace(op, extent=extent), extent.value)
        try:
            if extent.value == 1:
                return S.LetStmt(op.loop_var, op.min, op.body) if _uses(op.body, op.loop_var) \
                    else op.body
            return vectorizer.stmt(op.body)
        except _Scalarize:
            return S.For(op.loop_var, op.min, extent, "serial", op.body, None, op.annotations)


_NOT_IN_BODY = {
    S.For: "a nested loop", S.Barrier: "a barrier", S.AllocBuffer: "an allocation",
    S.AsyncScope: "an async scope", S.AsyncCommitQueue: "an async commit",
    S.AsyncWaitQueue: "an async wait",
}


def _check_body(loop):
    """Refuse bodies that are not straight-line code, before any rewriting."""
    for node in walk(loop.body):
        what = _NOT_IN_BODY.get(type(node))
        if what is not None:
            if isinstance(node, S.For) and node.kind == "vectorized":
                what = "a nested vectorized loop"
            raise TransformError(f"VectorizeLoop: {_where(loop)}: it contains {what}, which "
                                 "cannot be vectorized")


def _uses(node, var) -> bool:
    return any(n is var for n in walk(node))


@dataclass(frozen=True)
class VectorizeLoop(Pass):
    """Vectorize every `vectorized` loop (see the module docstring)."""

    def transform(self, func):
        """Turn every vectorized loop into vector expressions (see the module docstring)."""
        body = _LoopVectorizer().visit(func.body)
        return func if body is func.body else func.with_body(body)
