"""Atomics in the interpreter: the invocations of one statement apply their updates one at a
time, in row order (the frame's invocation order), so the result and each returned old value
are deterministic. Atomics never race with each other; the race checker is told about each one
(RaceChecker.atomic), so that a plain access to the same element without a barrier between is
a DataRaceError.
"""

from __future__ import annotations

import numpy as np

from ..ir.expr import BufferLoad
from ..ir.image import ImageLoad
from . import numeric as N
from .errors import InterpreterError, OutOfBoundsError
from .image_closures import image_error
from .memory import load, positions, store


def _cas(old, expected, desired):
    return np.where(old == expected, desired, old).astype(old.dtype)


UPDATES = {
    "atomic_add": lambda old, v: old + v,
    "atomic_sub": lambda old, v: old - v,
    "atomic_min": np.minimum,
    "atomic_max": np.maximum,
    "atomic_and": np.bitwise_and,
    "atomic_or": np.bitwise_or,
    "atomic_xor": np.bitwise_xor,
    "atomic_exchange": lambda old, v: v,
    "atomic_compare_exchange": _cas,
}
"""The new value of an element from its old value and the atomic's operands."""


def _ranks(p: np.ndarray) -> np.ndarray:
    """For each entry, how many earlier entries hold the same position."""
    order = np.argsort(p, kind="stable")
    sp = p[order]
    k = len(p)
    start = np.ones(k, bool)
    start[1:] = sp[1:] != sp[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(k), 0))
    ranks = np.empty(k, np.int64)
    ranks[order] = np.arange(k) - first
    return ranks


def compile_atomic(compiler, e):
    """Closure for the atomic Call `e` (first argument: the BufferLoad of the element)."""
    target = e.args[0]
    if len(e.args) < 2 or not isinstance(target, (BufferLoad, ImageLoad)):
        raise InterpreterError(f"{e.op}: the first argument must be a buffer element")
    if isinstance(target, ImageLoad):   # a texel of an r32ui/r32i image: one lane of storage
        image = compiler.image_getter(target.image)
        get = lambda fr: image(fr).bb   # noqa: E731
        compiler.written.add(target.image)
        name = target.image.name
    else:
        buffer = target.buffer
        get = compiler.buffer_getter(buffer)
        compiler.written.add(buffer.data)
        name = buffer.name
        if target.dtype.lanes != 1:
            raise InterpreterError(f"{e.op} on {name}: atomics update one scalar element")
    fidx = [compiler.expr(i) for i in target.indices]
    fvals = [compiler.expr(a) for a in e.args[1:]]
    site = compiler.site("atomic", e)
    update = UPDATES[e.op]
    npdt = N.np_dtype(e.dtype)

    locate = compiler.locator(site)
    on_image = isinstance(target, ImageLoad)

    def atomic(fr):
        bb = get(fr)
        if bb.storage.per_invocation and fr.tid is not None:
            raise InterpreterError(f"{e.op} on local buffer {name}")
        k = 1 if fr.tid is None else len(fr.tid)
        try:   # the error names the invocation and the source line, as loads and stores do
            where = positions(bb, [f(fr) for f in fidx], 1, fr.tid, fr.wgrow)
        except OutOfBoundsError as err:
            raise locate(image_error(err) if on_image else err, fr) from None
        p = np.broadcast_to(np.asarray(where, np.int64), (k,))
        vals = [np.broadcast_to(np.asarray(f(fr), npdt), (k,)) for f in fvals]
        load(bb, p)  # bounds check
        races = fr.state.races
        if races is not None:
            races.atomic(bb, p if fr.tid is not None else p[:1], fr, site, 1)
        old = np.empty(k, npdt)
        ranks = _ranks(p) if k > 1 else np.zeros(1, np.int64)
        for r in range(int(ranks.max()) + 1):
            sel = ranks == r  # distinct elements: one update each
            q = p[sel]
            before = load(bb, q)
            old[sel] = before
            store(bb, q, update(before, *[v[sel] for v in vals]))
        return old if fr.tid is not None else old[0]
    return atomic
