"""Base classes of IR nodes, source spans, and the frozen mapping used for annotations/attrs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping


def show(value) -> str:
    """Text of a value for a user-facing message: IR in script syntax, never a Python repr.

    An expression, statement or function prints as script (`n * 4 + i`), a Buffer as its name,
    a DataType as its name (`int32`), a tuple or list element by element (`(n, 4)`), anything
    else as its repr (`'x'`, `3`). The printer is imported on first use, so importing the IR
    stays cheap."""
    from .buffer import Buffer
    from .dtype import DataType, PointerType
    from .function import PrimFunc

    if isinstance(value, (tuple, list)):
        items = [show(v) for v in value]
        if isinstance(value, list):
            return "[" + ", ".join(items) + "]"
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(value, Buffer):
        return value.name
    if isinstance(value, (DataType, PointerType)):
        return str(value)
    if isinstance(value, (PrimExpr, Stmt, PrimFunc)):
        from .printer import script

        return script(value).rstrip("\n")
    return repr(value)


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node came from in user source (for diagnostics); never part of equality."""

    file: str
    line: int
    col: int
    source_line: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class Node:
    """Base of every IR node. `span` is optional provenance, excluded from equality and hashing."""

    span: Span | None = field(default=None, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class PrimExpr(Node):
    """An expression; every subclass has a `dtype`.

    `str(e)` is the script text of the expression (`n * 4 + i`), what error messages show;
    `repr(e)` stays the dataclass form for debugging."""

    def __str__(self) -> str:
        return show(self)

    def _binop(self, cls, other, reverse=False):
        from .expr import convert_pair

        a, b = (other, self) if reverse else (self, other)
        a, b = convert_pair(a, b)
        return cls(a, b)

    # Operator sugar for programmatic construction; literals take the other operand's type.
    def __add__(self, o):
        from .expr import Add
        return self._binop(Add, o)

    def __radd__(self, o):
        from .expr import Add
        return self._binop(Add, o, True)

    def __sub__(self, o):
        from .expr import Sub
        return self._binop(Sub, o)

    def __rsub__(self, o):
        from .expr import Sub
        return self._binop(Sub, o, True)

    def __mul__(self, o):
        from .expr import Mul
        return self._binop(Mul, o)

    def __rmul__(self, o):
        from .expr import Mul
        return self._binop(Mul, o, True)

    def __floordiv__(self, o):
        from .expr import FloorDiv
        return self._binop(FloorDiv, o)

    def __mod__(self, o):
        from .expr import FloorMod
        return self._binop(FloorMod, o)

    def __truediv__(self, o):
        from .expr import Div
        return self._binop(Div, o)

    def __lt__(self, o):
        from .expr import LT
        return self._binop(LT, o)

    def __le__(self, o):
        from .expr import LE
        return self._binop(LE, o)

    def __gt__(self, o):
        from .expr import GT
        return self._binop(GT, o)

    def __ge__(self, o):
        from .expr import GE
        return self._binop(GE, o)

    def __neg__(self):
        from .expr import Sub, const
        return Sub(const(0, self.dtype), self)


@dataclass(frozen=True, slots=True)
class Stmt(Node):
    """A statement. `str(s)` is its script text (see PrimExpr)."""

    def __str__(self) -> str:
        return show(self)


class FrozenDict(Mapping):
    """An immutable, hashable mapping (annotations, attrs, buffer maps); lists become tuples."""

    __slots__ = ("_items", "_hash")

    def __init__(self, items: Mapping | None = None):
        data = dict(items or {})
        object.__setattr__(self, "_items", {k: _freeze(v) for k, v in data.items()})
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self) -> Iterator:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(self._items.items())))
        return self._hash

    def __eq__(self, other) -> bool:
        if isinstance(other, FrozenDict):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other)
        return NotImplemented

    def __setattr__(self, name, value):
        raise AttributeError("FrozenDict is immutable")

    def __reduce__(self):
        # pickled as its items (the cached hash is not state): IR travels to other processes,
        # e.g. a fleet's device actors
        return (FrozenDict, (self._items,))

    def __repr__(self) -> str:
        return f"FrozenDict({self._items!r})"

    def set(self, key, value) -> "FrozenDict":
        """A copy with `key` set to `value`."""
        d = dict(self._items)
        d[key] = value
        return FrozenDict(d)

    def without(self, key) -> "FrozenDict":
        """A copy without `key`."""
        d = dict(self._items)
        d.pop(key, None)
        return FrozenDict(d)


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return FrozenDict(value)
    return value
