"""The reverse-mode rule of every differentiable expression: `Propagate.expr(e, t)` emits the
statements that add t * (de/dx) to the adjoint of every float value x that e reads (let-bound
variables, local buffer elements, global input elements), in terms of e's operands.

Statements come out as a list of items (a statement, or a ("let", var, value) that binds a
temporary over the items after it); `build` nests them. A seed used more than once is bound to a
temporary first, so the generated code grows linearly with the expression.
"""

from __future__ import annotations

import itertools

from ..errors import UnsupportedError
from ..ir import (Add, BufferLoad, BufferStore, Call, Cast, Div, Evaluate, FloatImm, FloorDiv,
                  FloorMod, IntImm, Let, LetStmt, Max, Min, Mod, Mul, Select, Sub, Var, seq)
from ..ir.expr import Not

NOP = Evaluate(IntImm("int32", 0))
_names = itertools.count()


def is_float(e) -> bool:
    """Whether e's value is a float (pointers and integers carry no derivative)."""
    return bool(getattr(e.dtype, "is_float", False))


def fconst(value, like):
    """A float constant of like's dtype."""
    return FloatImm(like.dtype, float(value))


def where(node) -> str:
    """' (line N)' for a node that has a source span, else ''."""
    span = getattr(node, "span", None)
    return f" (line {span.line})" if span is not None else ""


def build(items) -> object:
    """The items as one statement: each ("let", var, value) binds var over what follows."""
    body = []
    for item in reversed(items):
        if isinstance(item, tuple):
            _, var, value = item
            body = [LetStmt(var, value, seq(*body) if body else NOP)]
        else:
            body.insert(0, item)
    return seq(*body) if body else NOP


def _call(op, like, *args):
    return Call(like.dtype, op, tuple(args))


class Propagate:
    """Emits adjoint updates for one kernel: `adjoint_of(load)` and `var_adjoint(var)` say where
    a value's adjoint lives (a BufferLoad-able (buffer, indices, atomic) triple or None)."""

    def __init__(self, load_target, var_target):
        self.load_target = load_target
        self.var_target = var_target

    def temp(self, value, items):
        """value itself when it is cheap to repeat, else a fresh let variable bound to it."""
        if isinstance(value, (Var, FloatImm, IntImm)):
            return value
        var = Var(f"adj_t{next(_names)}", value.dtype)
        items.append(("let", var, value))
        return var

    def expr(self, e, t, items):
        """Append to items the updates for seed t flowing into expression e."""
        if not is_float(e):
            return  # integers (indices, counters) carry no derivative
        if getattr(e.dtype, "lanes", 1) != 1:
            raise UnsupportedError(f"vkir.grad: vector value {e.dtype}{where(e)} is not "
                                   "differentiable yet (use scalar code)")
        if isinstance(e, (FloatImm,)):
            return
        if isinstance(e, Var):
            target = self.var_target(e)
            if target is not None:
                items.append(_accumulate(target, t))
            return
        if isinstance(e, BufferLoad):
            target = self.load_target(e)
            if target is not None:
                items.append(_accumulate(target, t))
            return
        t = self.temp(t, items)
        if isinstance(e, Add):
            self.expr(e.a, t, items)
            self.expr(e.b, t, items)
        elif isinstance(e, Sub):
            self.expr(e.a, t, items)
            self.expr(e.b, -t, items)
        elif isinstance(e, Mul):
            self.expr(e.a, t * e.b, items)
            self.expr(e.b, t * e.a, items)
        elif isinstance(e, Div):
            q = self.temp(t / e.b, items)
            self.expr(e.a, q, items)
            self.expr(e.b, -q * e, items)
        elif isinstance(e, (Min, Max)):
            pick_a = e.a <= e.b if isinstance(e, Min) else e.a >= e.b
            zero = fconst(0, e)
            self.expr(e.a, Select(pick_a, t, zero), items)
            self.expr(e.b, Select(pick_a, zero, t), items)
        elif isinstance(e, Select):
            zero = fconst(0, e)
            self.expr(e.true_value, Select(e.condition, t, zero), items)
            self.expr(e.false_value, Select(e.condition, zero, t), items)
        elif isinstance(e, Cast):
            if is_float(e.value):
                self.expr(e.value, Cast(e.value.dtype, t), items)
        elif isinstance(e, FloorDiv):
            return  # floor(a / b): piecewise constant
        elif isinstance(e, (FloorMod, Mod)):
            rounding = "floor" if isinstance(e, FloorMod) else "trunc"
            self.expr(e.a, t, items)
            self.expr(e.b, -t * _call(rounding, e, e.a / e.b), items)
        elif isinstance(e, Let):
            from ..ir import substitute

            self.expr(substitute(e.body, {e.var: e.value}), t, items)
        elif isinstance(e, Call):
            self.call(e, t, items)
        else:
            raise UnsupportedError(f"vkir.grad: {type(e).__name__}{where(e)} is not "
                                   "differentiable")

    def call(self, e, t, items):
        """The updates for seed t flowing into intrinsic call e (its derivative rule)."""
        op, args = e.op, e.args
        a = args[0] if args else None
        one = fconst(1, e)
        simple = {
            "exp": lambda: t * e,
            "exp2": lambda: t * e * fconst(0.6931471805599453, e),
            "log": lambda: t / a,
            "log2": lambda: t / (a * fconst(0.6931471805599453, e)),
            "sqrt": lambda: t * fconst(0.5, e) / e,
            "rsqrt": lambda: t * fconst(-0.5, e) * e / a,
            "tanh": lambda: t * (one - e * e),
            "sigmoid": lambda: t * e * (one - e),
            "sin": lambda: t * _call("cos", e, a),
            "cos": lambda: -t * _call("sin", e, a),
            "tan": lambda: t * (one + e * e),
            "sinh": lambda: t * _call("cosh", e, a),
            "cosh": lambda: t * _call("sinh", e, a),
            "asin": lambda: t * _call("rsqrt", e, one - a * a),
            "acos": lambda: -t * _call("rsqrt", e, one - a * a),
            "atan": lambda: t / (one + a * a),
            "asinh": lambda: t * _call("rsqrt", e, a * a + one),
            "acosh": lambda: t * _call("rsqrt", e, a * a - one),
            "atanh": lambda: t / (one - a * a),
            "erf": lambda: t * fconst(1.1283791670955126, e) * _call("exp", e, -(a * a)),
            "fabs": lambda: Select(a < fconst(0, e), -t, t),
        }
        if op in simple:
            self.expr(a, simple[op](), items)
        elif op in ("floor", "ceil", "round", "trunc"):
            return
        elif op == "pow":
            b = args[1]
            self.expr(a, t * b * _call("pow", e, a, b - one), items)
            self.expr(b, t * e * _call("log", e, a), items)
        elif op == "atan2":
            y, x = args
            d = self.temp(t / (x * x + y * y), items)
            self.expr(y, d * x, items)
            self.expr(x, -d * y, items)
        elif op == "fmod":
            self.expr(a, t, items)
            self.expr(args[1], -t * _call("trunc", e, a / args[1]), items)
        elif op == "fma":
            self.expr(args[0], t * args[1], items)
            self.expr(args[1], t * args[0], items)
            self.expr(args[2], t, items)
        elif op == "if_then_else":
            zero = fconst(0, e)
            self.expr(args[1], Select(args[0], t, zero), items)
            self.expr(args[2], Select(args[0], zero, t), items)
        else:
            raise UnsupportedError(f"vkir.grad: T.{op}{where(e)} is not differentiable")


def _accumulate(target, t):
    buffer, indices, atomic = target
    if atomic:
        return Evaluate(Call(buffer.dtype, "atomic_add", (BufferLoad(buffer, tuple(indices)), t)))
    return BufferStore(buffer, BufferLoad(buffer, tuple(indices)) + t, tuple(indices))


__all__ = ["NOP", "Propagate", "build", "is_float", "where", "Not"]
