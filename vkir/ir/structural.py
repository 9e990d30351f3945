"""Structural equality of IR up to renaming of bound variables (alpha-equivalence).

Bound are: let and loop variables, buffers declared by AllocBuffer/DeclBuffer (and a data var that
such a declaration introduces), function parameters, buffer_map buffers and symbolic size vars.
Names and spans never matter. Two PrimFuncs match parameters by position and size vars by first
occurrence; their "global_symbol" attr is ignored (an expected script may have another name).
Nested SeqStmts are compared flattened (a one-statement sequence equals the statement).
For bare expressions/statements free vars must be the same objects unless `map_free_vars`.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import sys
import threading
from contextlib import contextmanager
from collections.abc import Mapping

from .base import Node, show
from .buffer import Buffer
from .expr import Var
from .image_type import ImageType
from .stmt import SeqStmt, flatten


class _Mismatch(Exception):
    def __init__(self, path, lhs, rhs, reason):
        super().__init__(reason)
        self.path, self.lhs, self.rhs, self.reason = path, lhs, rhs, reason


_RECURSION_LOCK = threading.Lock()


@contextmanager
def recursion_headroom(limit: int = 20000):
    """Make sure Python's recursion limit is at least `limit` while walking deep IR (long
    expression chains recurse once per level in the parser, the printer, the passes and here).

    The limit is process-wide, so it is only ever raised, once, and never restored: restoring it
    on exit would lower it under another thread still deep in its own walk (two threads building
    kernels at once). A higher limit costs nothing to code that does not recurse deeply."""
    if sys.getrecursionlimit() < limit:
        with _RECURSION_LOCK:
            if sys.getrecursionlimit() < limit:
                sys.setrecursionlimit(limit)
    yield


def structural_equal(a, b, map_free_vars: bool = False) -> bool:
    """True when `a` and `b` (PrimFunc, Stmt or PrimExpr) are equal up to bound-var renaming."""
    try:
        with recursion_headroom():
            _Comparer(map_free_vars).value(a, b, "", (a, b))
    except _Mismatch:
        return False
    return True


def assert_structural_equal(a, b, map_free_vars: bool = False) -> None:
    """Raise AssertionError with the path to the first mismatch and both sides' script text."""
    try:
        with recursion_headroom():
            _Comparer(map_free_vars).value(a, b, "", (a, b))
    except _Mismatch as m:
        path = m.path.lstrip(".") or "<root>"
        message = (f"structural mismatch at {path}: {m.reason}\n"
                   f"--- lhs ---\n{_show(m.lhs)}\n--- rhs ---\n{_show(m.rhs)}")
        if not (m.lhs is a and m.rhs is b) and isinstance(a, Node) and isinstance(b, Node):
            message += "\n--- diff of the whole scripts ---\n" + _diff(a, b)
        raise AssertionError(message) from None


def _show(node, max_lines: int = 40) -> str:
    if isinstance(node, Node):
        from .printer import script

        text = script(node)
    else:
        text = repr(node)
    lines = text.splitlines()
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)"]
    return "\n".join(lines)


def _unwrap(node):
    """A one-statement sequence is that statement (for comparison)."""
    if isinstance(node, SeqStmt):
        items = flatten(node)
        if len(items) == 1:
            return items[0]
    return node


def _diff(a, b, max_lines: int = 60) -> str:
    from .printer import script

    lines = list(difflib.unified_diff(script(a).splitlines(), script(b).splitlines(), "lhs",
                                      "rhs", lineterm=""))
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more lines)"]
    return "\n".join(lines) if lines else "(the scripts print identically)"


class _Comparer:
    def __init__(self, map_free_vars: bool):
        self.map_free_vars = map_free_vars
        self.vars: dict = {}
        self.vars_rev: dict = {}
        self.bufs: dict = {}
        self.bufs_rev: dict = {}
        # inside a PrimFunc every free var is a parameter or size var (mapped up front), so a
        # DeclBuffer over an unmapped data var introduces it; in a bare statement that var may
        # instead be free, and only a pointer of the buffer's own type is taken as introduced
        self.in_func = False

    def fail(self, path, where, reason):
        raise _Mismatch(path, where[0], where[1], reason)

    # -- generic dispatch ----------------------------------------------------------------------

    def value(self, a, b, path, where):
        if isinstance(a, Buffer) or isinstance(b, Buffer):
            self.buffer_use(a, b, path, where)
        elif isinstance(a, Node) or isinstance(b, Node):
            self.node(a, b, path, where)
        elif isinstance(a, tuple) and isinstance(b, tuple):
            if len(a) != len(b):
                self.fail(path, where, f"length {len(a)} != {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                self.value(x, y, f"{path}[{i}]", where)
        elif isinstance(a, Mapping) and isinstance(b, Mapping):
            if list(a) != list(b) and set(a) != set(b):
                self.fail(path, where, f"keys {sorted(map(str, a))} != {sorted(map(str, b))}")
            for k in a:
                self.value(a[k], b[k], f"{path}[{k!r}]", where)
        elif isinstance(a, float) and isinstance(b, float):
            if not _same_float(a, b):
                self.fail(path, where, f"{a!r} != {b!r}")
        elif type(a) is not type(b) or a != b:
            self.fail(path, where, f"{show(a)} != {show(b)}")

    def node(self, a, b, path, where):
        if isinstance(a, SeqStmt) or isinstance(b, SeqStmt):
            return self.seq(a, b, path, where)
        if type(a) is not type(b):
            self.fail(path, (a, b), f"{type(a).__name__} != {type(b).__name__}")
        method = getattr(self, "_" + type(a).__name__, None)
        if method is not None:
            return method(a, b, path, (a, b))
        return self.fields(a, b, path, (a, b))

    def fields(self, a, b, path, where, skip=()):
        for f in dataclasses.fields(a):
            if f.name == "span" or f.name in skip:
                continue
            self.value(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}", where)

    def seq(self, a, b, path, where):
        la, lb = flatten(a), flatten(b)
        if len(la) == 1 and len(lb) == 1:
            return self.node(la[0], lb[0], path, where)
        if len(la) != len(lb):
            self.fail(path, (a, b), f"sequence of {len(la)} statements != {len(lb)}")
        for i, (x, y) in enumerate(zip(la, lb)):
            self.node(x, y, f"{path}.seq[{i}]", (a, b))

    # -- variables and buffers -----------------------------------------------------------------

    def _Var(self, a, b, path, where):
        if a in self.vars:
            if self.vars[a] is not b:
                self.fail(path, where, f"variable '{a.name}' is bound to another variable than "
                                       f"'{b.name}'")
            return
        if b in self.vars_rev:
            self.fail(path, where, f"free variable '{a.name}' vs bound variable '{b.name}'")
        if a is b:
            return
        if self.map_free_vars:
            return self.define_var(a, b, path, where)
        self.fail(path, where, f"different free variables '{a.name}' and '{b.name}' "
                               f"(pass map_free_vars=True to map them)")

    def define_var(self, a, b, path, where):
        if not isinstance(a, Var) or not isinstance(b, Var):
            self.fail(path, where, f"{type(a).__name__} != {type(b).__name__}")
        if isinstance(a.dtype, ImageType) and isinstance(b.dtype, ImageType):
            # the shapes hold size vars, compared once those are mapped (_PrimFunc)
            same = (a.dtype.format, a.dtype.layered, a.dtype.sampled, len(a.dtype.shape)) == \
                (b.dtype.format, b.dtype.layered, b.dtype.sampled, len(b.dtype.shape))
        else:
            same = a.dtype == b.dtype
        if not same:
            self.fail(path, where, f"variable '{a.name}' has type {a.dtype}, '{b.name}' has "
                                   f"{b.dtype}")
        self.vars[a] = b
        self.vars_rev[b] = a

    def buffer_use(self, a, b, path, where):
        if not isinstance(a, Buffer) or not isinstance(b, Buffer):
            self.fail(path, where, f"{type(a).__name__} != {type(b).__name__}")
        if a in self.bufs:
            if self.bufs[a] is not b:
                self.fail(path, where, f"buffer '{a.name}' is another buffer than '{b.name}'")
            return
        if b in self.bufs_rev:
            self.fail(path, where, f"free buffer '{a.name}' vs declared buffer '{b.name}'")
        if a is b:
            return
        if self.map_free_vars:
            return self.define_buffer(a, b, path, where)
        self.fail(path, where, f"different free buffers '{a.name}' and '{b.name}'")

    def define_buffer(self, a, b, path, where, allocates=False):
        self.fields(a, b, path, where, skip=("name", "data"))
        if allocates:
            self.define_var(a.data, b.data, f"{path}.data", where)
        elif a.data in self.vars or b.data in self.vars_rev or \
                (not self.in_func and not _may_be_fresh(a)):
            self.value(a.data, b.data, f"{path}.data", where)
        else:  # a data var this declaration introduces
            self.define_var(a.data, b.data, f"{path}.data", where)
        self.bufs[a] = b
        self.bufs_rev[b] = a

    # -- binding nodes -------------------------------------------------------------------------

    def _LetStmt(self, a, b, path, where):
        # iterative along chains of lets (long let chains must not recurse)
        cls = type(a)
        while True:
            self.value(a.value, b.value, f"{path}.value", where)
            self.define_var(a.var, b.var, f"{path}.var", where)
            path = f"{path}.body"
            a, b = _unwrap(a.body), _unwrap(b.body)
            if not (type(a) is cls and type(b) is cls):
                return self.value(a, b, path, (a, b))
            where = (a, b)

    _Let = _LetStmt

    def _For(self, a, b, path, where):
        self.fields(a, b, path, where, skip=("loop_var", "body"))
        self.define_var(a.loop_var, b.loop_var, f"{path}.loop_var", where)
        self.value(a.body, b.body, f"{path}.body", where)

    def _AllocBuffer(self, a, b, path, where):
        self.define_buffer(a.buffer, b.buffer, f"{path}.buffer", where, allocates=True)
        self.value(a.body, b.body, f"{path}.body", where)

    def _DeclBuffer(self, a, b, path, where):
        self.define_buffer(a.buffer, b.buffer, f"{path}.buffer", where)
        self.value(a.body, b.body, f"{path}.body", where)

    def _PrimFunc(self, a, b, path, where):
        self.in_func = True
        if len(a.params) != len(b.params):
            self.fail(f"{path}.params", where, f"{len(a.params)} parameters != {len(b.params)}")
        for i, (x, y) in enumerate(zip(a.params, b.params)):
            self.define_var(x, y, f"{path}.params[{i}]", where)
        sa, sb = a.size_vars, b.size_vars
        if len(sa) != len(sb):
            self.fail(f"{path}.size_vars", where, f"{len(sa)} symbolic sizes != {len(sb)}")
        for x, y in zip(sa, sb):
            self.define_var(x, y, f"{path}.size_vars", where)
        for i, (x, y) in enumerate(zip(a.params, b.params)):
            if isinstance(x.dtype, ImageType):
                self.value(x.dtype.shape, y.dtype.shape, f"{path}.params[{i}].shape", where)
            bx, by = a.buffer_map.get(x), b.buffer_map.get(y)
            if (bx is None) != (by is None):
                self.fail(f"{path}.params[{i}]", where, "a buffer parameter vs a scalar one")
            if bx is not None:
                self.define_buffer(bx, by, f"{path}.buffer_map[{i}]", (bx, by))
        attrs_a = {k: v for k, v in a.attrs.items() if k != "global_symbol"}
        attrs_b = {k: v for k, v in b.attrs.items() if k != "global_symbol"}
        self.value(attrs_a, attrs_b, f"{path}.attrs", where)
        self.value(a.body, b.body, f"{path}.body", where)


def _may_be_fresh(buf: Buffer) -> bool:
    """Can `buf.data` be a var its DeclBuffer introduces? In a bare statement, not when it points
    to another element type or scope: take such a buffer as a cast of data defined elsewhere."""
    ptr = buf.data.dtype
    return getattr(ptr, "element", None) == buf.dtype and getattr(ptr, "scope", None) == buf.scope


def _same_float(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)

