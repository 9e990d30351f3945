"""The interpreter's closures of expressions other than buffer loads (memory_closures.py):
constants, arithmetic (vkir.interpreter.numeric), selects, lets, vector lanes and intrinsic calls,
atomics (atomics.py) and subgroup operations (subgroups.py) included."""

from __future__ import annotations

import numpy as np

from ..ir import expr as E
from ..ir.op import is_atomic, is_subgroup
from . import numeric as N
from .atomics import compile_atomic
from .errors import InterpreterError
from .frames import is_uniform
from .subgroups import compile_subgroup


class ExprClosures:
    """Compiler methods turning an expression into a closure `f(frame)` (mixed into Compiler)."""

    def expr(self, e):
        """A closure `fn(frame)` computing expression `e` (one `e_<Node>` method per node kind)."""
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, E.BinaryOp):
                return self.e_binary(e)
            raise InterpreterError(f"cannot interpret expression {type(e).__name__}")
        return method(e)

    def e_Var(self, e):
        """Read the var's slot (an error outside its scope)."""
        if e not in self.bound:
            raise InterpreterError(f"variable {e.name} is used outside its scope")
        s = self.slot(e)
        return lambda fr: fr.slots[s]

    def e_IntImm(self, e):
        """The constant as a numpy scalar of its type."""
        c = N.scalar(e.value, e.dtype)
        return lambda fr: c

    def e_FloatImm(self, e):
        """The constant as a numpy scalar of its type."""
        c = N.scalar(e.value, e.dtype)
        return lambda fr: c

    def e_binary(self, e):
        """A binary node, computed by vkir.interpreter.numeric's rule for its operand type."""
        fn = N.binary_op(type(e).__name__, e.a.dtype)
        fa, fb = self.expr(e.a), self.expr(e.b)
        if self.flush and e.a.dtype.is_float:
            out = N.flush_denormals if e.dtype.is_float else (lambda v: v)
            return lambda fr: out(fn(N.flush_denormals(fa(fr)), N.flush_denormals(fb(fr))))
        return lambda fr: fn(fa(fr), fb(fr))

    def e_Not(self, e):
        """Logical negation."""
        fa = self.expr(e.a)
        return lambda fr: np.logical_not(fa(fr))

    def e_Select(self, e):
        """Both sides evaluated, one chosen per lane (a scalar condition picks whole vectors)."""
        fc, ft, ff = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        widen = e.condition.dtype.lanes == 1 and e.true_value.dtype.lanes > 1

        def select(fr):
            c = fc(fr)
            t, f = ft(fr), ff(fr)
            if c.__class__ is not np.ndarray and t.__class__ is not np.ndarray \
                    and f.__class__ is not np.ndarray:
                return t if c else f
            if widen:
                c = N.expand_lanes(c)
            return N.as_value(np.where(c, t, f))
        return select

    def e_Cast(self, e):
        """Value conversion (vkir.interpreter.numeric.cast)."""
        fv = self.expr(e.value)
        npdt = N.np_dtype(e.dtype)
        return lambda fr: N.cast(fv(fr), npdt)

    def e_Ramp(self, e):
        """base + stride * [0, 1, ..., lanes - 1], wrapped to the type."""
        fb, fs = self.expr(e.base), self.expr(e.stride)
        offsets = np.arange(e.lanes).astype(N.np_dtype(e.base.dtype))
        return lambda fr: N.expand_lanes(fb(fr)) + N.expand_lanes(fs(fr)) * offsets

    def e_Broadcast(self, e):
        """The value repeated over the lanes."""
        fv = self.expr(e.value)
        lanes = e.lanes
        if e.value.dtype.lanes == 1:
            return lambda fr: np.repeat(N.expand_lanes(fv(fr)), lanes, axis=-1)
        return lambda fr: np.concatenate([fv(fr)] * lanes, axis=-1)

    def e_Let(self, e):
        """The body with the var's slot holding the value."""
        fv = self.expr(e.value)
        s = self.bind(e.var)
        fb = self.expr(e.body)
        self.bound.discard(e.var)

        def let(fr):
            fr.slots[s] = fv(fr)
            return fb(fr)
        return let

    def e_Shuffle(self, e):
        """Lanes picked from the concatenated vectors."""
        fvs = [(self.expr(v), v.dtype.lanes) for v in e.vectors]
        idx = np.array(e.indices, dtype=np.intp)
        single = len(e.indices) == 1

        def shuffle(fr):
            parts = [fv(fr) if lanes > 1 else N.expand_lanes(fv(fr)) for fv, lanes in fvs]
            lead = np.broadcast_shapes(*(np.shape(p)[:-1] for p in parts))
            parts = [np.broadcast_to(p, lead + np.shape(p)[-1:]) for p in parts]
            out = np.concatenate(parts, axis=-1)[..., idx]
            return N.as_value(out[..., 0]) if single else out
        return shuffle

    def e_Call(self, e):
        """An intrinsic: math, bitwise, if_then_else (one side only), atomics and subgroup
        operations."""
        if e.op == "if_then_else":
            return self._if_then_else(e)
        if is_atomic(e.op):
            return compile_atomic(self, e)
        if is_subgroup(e.op):
            return compile_subgroup(self, e)
        args = [self.expr(a) for a in e.args]
        npdt = N.np_dtype(e.dtype)
        if e.op == "reinterpret":
            if len(args) != 1:
                raise InterpreterError("reinterpret takes one argument")
            fa, src, dst = args[0], e.args[0].dtype, e.dtype
            return lambda fr: N.reinterpret(fa(fr), src, dst)
        fn = N.intrinsic(e.op)
        if fn is None:
            raise InterpreterError(f"cannot interpret call of unknown intrinsic {e.op!r}")
        if self.flush and e.dtype.is_float:
            exact = fn
            fn = lambda *xs: N.flush_denormals(exact(*(N.flush_denormals(x) for x in xs)))  # noqa: E731
        if len(args) == 1:
            fa = args[0]
            return lambda fr: fn(fa(fr)).astype(npdt)
        if len(args) == 2:
            fa, fb = args
            return lambda fr: fn(fa(fr), fb(fr)).astype(npdt)
        return lambda fr: fn(*[a(fr) for a in args]).astype(npdt)

    def _if_then_else(self, e):
        if len(e.args) != 3:
            raise InterpreterError("if_then_else takes three arguments")
        fc, ft, ff = (self.expr(a) for a in e.args)
        npdt = N.np_dtype(e.dtype)
        tail = () if e.dtype.lanes == 1 else (e.dtype.lanes,)
        vector_cond = e.args[0].dtype.lanes > 1

        def if_then_else(fr):
            c = fc(fr)
            if is_uniform(c):
                return ft(fr) if c else ff(fr)
            if vector_cond:  # lane-wise choice: both sides are evaluated
                return N.as_value(np.where(c, ft(fr), ff(fr)))
            if c.all():
                return ft(fr)
            if not c.any():
                return ff(fr)
            out = np.empty((len(c),) + tail, npdt)
            out[c] = ft(fr.subset(c))
            nc = ~c
            out[nc] = ff(fr.subset(nc))
            return out
        return if_then_else
