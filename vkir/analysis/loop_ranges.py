"""Loop ranges that do not fit their variable's type: the one rule shared by the checker, the
interpreter and the device Kernel.

A serial loop runs its variable through min, min + 1, ..., min + extent - 1 in the variable's
type, and stops where it reaches its end, min + extent, a value of that type too (as devices
compare it). Where the end passes the type's maximum the loop cannot run as written (the
variable or its end would wrap around, which no device does alike), so the loop is an error,
never a wrap or a cut:
the checker refuses constant ranges (rule 6), and for a call, a loop whose bounds follow from the
sizes, scalars and constants alone is checked before anything runs (`check_known_loops`, by the
interpreter and by the Kernel alike, whether or not control reaches the loop); the interpreter
checks every other loop when it starts (`range_error`).
"""

from __future__ import annotations

import dataclasses
import functools

from ..errors import ArgumentError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import type_range
from ..ir.traversal import walk


def range_error(loop: S.For, lo: int, extent: int, where: str = "") -> str | None:
    """The message saying that `loop` started with `lo` and `extent` ends past its variable's
    type (lo + extent > its maximum), or None where it fits (or runs no iteration)."""
    if extent <= 0:
        return None
    var = loop.loop_var
    low, high = type_range(var.dtype)
    if lo + extent <= high:
        return None
    message = (f"{where + ': ' if where else ''}loop {var.name} ({var.dtype}) would run from "
               f"{lo} to {lo + extent - 1}: its end, min + extent = {lo + extent}, passes the "
               f"{var.dtype} maximum {high}")
    span = loop.span
    if span is not None:
        message += f" at {span}"
        line = getattr(span, "source_line", "")
        if line:
            message += f"\n    {line.strip()}"
    return message + "\n(a loop never wraps around: give its variable a wider type)"


def known_loops(func, known=None) -> list:
    """The serial loops of `func` whose min and extent depend on nothing but the variables
    `known` (default: its parameters and size variables) and constants (through let bindings
    of such values), not both constants (the checker's), each as (loop, lets): the
    (var, value) bindings its bounds may use, outermost first."""
    out = []
    if known is None:
        known = set(func.params) | set(func.size_vars)
    _collect(func.body, known, (), out)
    return out


def _host(e, known: set) -> bool:
    if isinstance(e, E.IntImm):
        return True
    for n in walk(e):
        if isinstance(n, (E.BufferLoad, E.Call, E.Shuffle, E.Ramp, E.Broadcast)):
            return False
        if isinstance(n, E.Var) and n not in known:
            return False
    return True


@functools.lru_cache(maxsize=None)
def _inner(cls) -> tuple:
    """The fields of statement class `cls` that hold statements."""
    return tuple(f.name for f in dataclasses.fields(cls)
                 if f.name in ("seq", "body", "then_case", "else_case"))


def _collect(s, known: set, lets: tuple, out: list) -> None:
    stack = [(s, known, lets)]
    while stack:
        s, known, lets = stack.pop()
        fields = _inner(type(s))
        if not fields:
            continue   # a store, an evaluate, a barrier
        if isinstance(s, S.LetStmt):
            if s.var.dtype.lanes == 1 and (s.var.dtype.is_int or s.var.dtype.is_uint) \
                    and _host(s.value, known):
                known, lets = set(known) | {s.var}, lets + ((s.var, s.value),)
        elif isinstance(s, S.For) and s.kind != "thread_binding" and \
                not (isinstance(s.min, E.IntImm) and isinstance(s.extent, E.IntImm)) and \
                _host(s.min, known) and _host(s.extent, known):
            out.append((s, lets))
        for name in fields:
            inner = getattr(s, name)
            if isinstance(inner, tuple):
                stack.extend((x, known, lets) for x in reversed(inner))
            elif inner is not None:
                stack.append((inner, known, lets))


def check_known_loops(func, env: dict, evaluate, where: str) -> None:
    """ArgumentError for the first loop of `known_loops(func)` whose range, for the sizes and
    scalars in `env` (Var -> number) evaluated with `evaluate(expr, env)` (the interpreter's
    semantics), does not fit its variable's type."""
    for loop, lets in known_loops(func, env.keys()):
        scope = dict(env)
        for var, value in lets:
            known = _value(value, scope, evaluate)
            if known is None:
                break
            scope[var] = known
        lo, extent = _value(loop.min, scope, evaluate), _value(loop.extent, scope, evaluate)
        if lo is None or extent is None:
            continue   # a size or scalar this call does not bind
        message = range_error(loop, lo, extent, where)
        if message is not None:
            raise ArgumentError(message)


def _value(e, scope: dict, evaluate) -> int | None:
    free = {v for v in walk(e) if isinstance(v, E.Var)}
    if not free <= scope.keys():
        return None
    return int(evaluate(e, {v: scope[v] for v in free}))
