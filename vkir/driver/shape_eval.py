"""Fast evaluation of the integer expressions a dispatch needs (grid sizes, shape entries) from
symbolic sizes and scalar arguments, without loading the interpreter: sums, products, floor
division and modulo, min and max of integer constants and variables. Anything else (floats, a
value outside its type's range, division by zero) is left to vkir.interpreter.evaluate, which
defines the semantics; both give the same result wherever this one answers."""

from __future__ import annotations

import operator

from ..ir import Add, Cast, FloorDiv, FloorMod, IntImm, Max, Min, Mul, Sub, Var
from ..ir.dtype import type_range

_BINARY = {Add: operator.add, Sub: operator.sub, Mul: operator.mul,
           FloorDiv: operator.floordiv, FloorMod: operator.mod, Min: min, Max: max}


class _Defer(Exception):
    """The expression needs the interpreter's full semantics."""


def evaluate(expr, env: dict):
    """The value of `expr` with its free Vars taken from `env` (Var -> number)."""
    try:
        return _eval(expr, env)
    except _Defer:
        from ..interpreter import evaluate as full

        return full(expr, env)


def _int_range(dtype):
    if getattr(dtype, "lanes", 0) != 1 or getattr(dtype, "code", None) not in ("int", "uint"):
        raise _Defer
    return type_range(dtype)


def _eval(e, env):
    t = type(e)
    if t is IntImm:
        return e.value
    lo, hi = _int_range(e.dtype)
    if t is Var:
        value = env.get(e)
        if type(value) is not int:
            raise _Defer
    elif t is Cast:
        value = _eval(e.value, env)
    else:
        op = _BINARY.get(t)
        if op is None:
            raise _Defer
        a, b = _eval(e.a, env), _eval(e.b, env)
        if b == 0 and t in (FloorDiv, FloorMod):
            raise _Defer
        value = op(a, b)
    if not lo <= value <= hi:
        raise _Defer
    return value
