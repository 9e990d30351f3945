"""Subgroup operations in the interpreter.

A subgroup is `subgroup_size` consecutive invocations of the workgroup's linear local index
(x + X * (y + Y * z)); the frame's rows are the active invocations, so inside divergent control
flow only those take part (SPIR-V GroupNonUniform semantics). Each operation lays the active
rows out as a dense (subgroups, subgroup_size) matrix, inactive lanes holding the operation's
identity, and works along its second axis. Where the result is undefined on a GPU (a shuffle or
broadcast reading an inactive or out-of-range lane) the interpreter gives 0.
"""

from __future__ import annotations

import numpy as np

from . import numeric as N
from .errors import InterpreterError

_UFUNCS = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum,
           "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
_BOOL_UFUNCS = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def _identity(kind: str, npdt: np.dtype):
    if kind in ("add", "or", "xor"):
        return npdt.type(0)
    if kind == "mul":
        return npdt.type(1)
    if npdt == np.bool_:
        return np.True_
    if kind == "and":
        return npdt.type(-1) if npdt.kind == "i" else np.iinfo(npdt).max
    if npdt.kind == "f":
        return npdt.type(np.inf if kind == "min" else -np.inf)
    info = np.iinfo(npdt)
    return npdt.type(info.max if kind == "min" else info.min)


class Layout:
    """Where the frame's rows sit: subgroup `sg` and lane of each row, and the dense size."""

    def __init__(self, fr, size: int):
        if fr.coords is None:  # one invocation: a workgroup of size 1
            coords = np.zeros((1, 3), np.int64)
        else:
            coords = fr.coords
        ext = fr.state.extents
        lid = coords[:, 0] + ext["x"] * (coords[:, 1] + ext["y"] * coords[:, 2])
        self.rows = len(lid)
        self.size = size
        self.sg = lid // size
        self.lane = lid % size
        self.groups = int(self.sg.max()) + 1 if self.rows else 0
        self.group_size = max(fr.group_size, 1)
        self.active = np.zeros((self.groups, size), bool)
        self.active[self.sg, self.lane] = True

    def dense(self, values, npdt, fill):
        """(subgroups, size[, lanes]) matrix of the rows' values, `fill` where inactive."""
        values = np.asarray(values, npdt)
        tail = values.shape[1:] if values.ndim == 2 else ()
        out = np.full((self.groups, self.size) + tail, fill, npdt)
        out[self.sg, self.lane] = values
        return out

    def rows_of(self, matrix):
        """The entries of a per-invocation matrix, indexed by subgroup and lane."""
        return matrix[self.sg, self.lane]

    def gather(self, matrix, lanes):
        """Per row, the value at lane `lanes` of its own subgroup (0 where that lane is
        inactive or out of range)."""
        lanes = np.broadcast_to(np.asarray(lanes, np.int64), (self.rows,))
        ok = (lanes >= 0) & (lanes < self.size)
        safe = np.where(ok, lanes, 0)
        ok &= self.active[self.sg, safe]
        out = matrix[self.sg, safe]
        zero = np.zeros((), matrix.dtype)
        if out.ndim == 2:
            ok = ok[:, None]
        return np.where(ok, out, zero)


def _per_row(value, rows: int, vector: bool):
    value = np.asarray(value)
    want = (rows,) + ((value.shape[-1],) if vector else ())
    return np.broadcast_to(value, want) if value.shape != want else value


def compile_subgroup(compiler, e):
    """Closure for the subgroup Call `e`."""
    op = e.op
    fargs = [compiler.expr(a) for a in e.args]
    npdt = N.np_dtype(e.dtype)
    vector = bool(e.args) and e.args[0].dtype.lanes > 1
    arg_npdt = N.np_dtype(e.args[0].dtype) if e.args else npdt
    loops = compiler.thread_loops  # filled while compiling: checked when running
    compute = _operation(op, npdt, arg_npdt)

    def subgroup(fr):
        if fr.tid is None and loops:
            raise InterpreterError(f"{op} outside the threadIdx loops: every invocation runs "
                                   "that code; move it into the loop nest")
        layout = Layout(fr, fr.state.subgroup_size)
        args = [_per_row(f(fr), layout.rows, vector and i == 0) for i, f in enumerate(fargs)]
        out = compute(layout, *args)
        out = np.asarray(out, npdt)
        return out if fr.tid is not None else N.as_value(out[0])
    return subgroup


def _operation(op: str, npdt, arg_npdt):  # noqa: C901 - one case per operation
    name = op[len("subgroup_"):] if op.startswith("subgroup_") else op
    if op == "subgroup_size":
        return lambda L: np.full(L.rows, L.size)
    if op == "subgroup_invocation_id":
        return lambda L: L.lane
    if op == "subgroup_id":
        return lambda L: L.sg
    if op == "num_subgroups":
        return lambda L: np.full(L.rows, -(-L.group_size // L.size))
    if name == "elect":
        return lambda L: L.lane == np.argmax(L.active, axis=1)[L.sg]
    if name in ("all", "any"):
        def vote(L, pred):
            m = L.dense(pred, np.bool_, name == "all")
            return L.rows_of(np.broadcast_to((m.all if name == "all" else m.any)(
                axis=1)[:, None], m.shape))
        return vote
    if name == "ballot":
        def ballot(L, pred):
            m = L.dense(pred, np.bool_, False)
            bits = np.zeros((L.groups, 4), np.uint64)
            for lane in range(min(L.size, 128)):
                bits[:, lane // 32] |= m[:, lane].astype(np.uint64) << np.uint64(lane % 32)
            return bits.astype(np.uint32)[L.sg]
        return ballot
    if name == "broadcast_first":
        def first(L, x):
            m = L.dense(x, arg_npdt, 0)
            return L.gather(m, np.argmax(L.active, axis=1)[L.sg])
        return first
    if name in ("broadcast", "shuffle", "shuffle_xor", "shuffle_up", "shuffle_down"):
        def shuffle(L, x, k):
            k = np.asarray(k, np.int64)
            if name == "broadcast" and np.ndim(k):
                first = L.dense(k, np.int64, 0)[L.sg, np.argmax(L.active, axis=1)[L.sg]]
                if (first != k).any():
                    raise InterpreterError("subgroup_broadcast: the lane differs between the "
                                           "invocations of a subgroup (it must be uniform)")
            m = L.dense(x, arg_npdt, 0)
            lanes = {"broadcast": k, "shuffle": k, "shuffle_xor": L.lane ^ k,
                     "shuffle_up": L.lane - k, "shuffle_down": L.lane + k}[name]
            return L.gather(m, lanes)
        return shuffle
    kind = name.split("_")[-1]
    ufunc = (_BOOL_UFUNCS if arg_npdt == np.bool_ else _UFUNCS).get(kind)
    if ufunc is None:
        raise InterpreterError(f"cannot interpret subgroup operation {op!r}")
    ident = _identity(kind, arg_npdt)
    if name.startswith("inclusive_") or name.startswith("exclusive_"):
        exclusive = name.startswith("exclusive_")

        def scan(L, x):
            m = L.dense(x, arg_npdt, ident)
            acc = ufunc.accumulate(m, axis=1, dtype=arg_npdt)
            if exclusive:
                acc = np.concatenate([np.full_like(acc[:, :1], ident), acc[:, :-1]], axis=1)
            return L.rows_of(acc)
        return scan

    def reduce(L, x):
        m = L.dense(x, arg_npdt, ident)
        red = ufunc.reduce(m, axis=1, dtype=arg_npdt)
        return red[L.sg]
    return reduce
