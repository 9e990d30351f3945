"""Generic traversal: `children` of a node, a read-only `Visitor` and a rebuilding `Mutator`.

Passes subclass these and define `visit_<ClassName>` methods for the nodes they care about; every
other node is handled generically from its dataclass fields.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Iterator

from .base import FrozenDict, Node
from .buffer import Buffer


@lru_cache(maxsize=None)
def child_fields(cls) -> tuple[str, ...]:
    """Field names of `cls` that may hold IR nodes (everything but span/dtype/names/ints)."""
    skip = {"span", "dtype", "name", "op", "kind", "thread", "lanes", "queue", "indices_int"}
    names = []
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        if cls.__name__ == "Shuffle" and f.name == "indices":
            continue  # int lane indices
        names.append(f.name)
    return tuple(names)


def children(node: Node) -> Iterator[Node]:
    """Direct IR children of `node` in source order (Buffers are declarations, not children)."""
    for name in child_fields(type(node)):
        value = getattr(node, name)
        if isinstance(value, Node) and not isinstance(value, Buffer):
            yield value
        elif isinstance(value, tuple):
            for v in value:
                if isinstance(v, Node) and not isinstance(v, Buffer):
                    yield v


class _Functor:
    """Dispatch by class name: `visit_<ClassName>` where defined, else `generic_visit`."""

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.generic_visit(node)


class Visitor(_Functor):
    """Read-only traversal; override `visit_<ClassName>` and call `self.generic_visit(node)` to
    descend. Buffers reached through loads, stores and declarations go to `visit_buffer`."""

    def visit_buffer(self, buffer: Buffer):
        """Called for every Buffer reference; default does nothing."""

    def generic_visit(self, node):
        """Visit every child of `node` (fields in order; tuples and mappings element by element).
        """
        if isinstance(node, FrozenDict):
            return
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, Buffer):
                self.visit_buffer(value)
            elif isinstance(value, Node):
                self.visit(value)
            elif isinstance(value, tuple):
                for v in value:
                    if isinstance(v, Buffer):
                        self.visit_buffer(v)
                    elif isinstance(v, Node):
                        self.visit(v)


class Mutator(_Functor):
    """Rebuilding traversal: returns a new node when a child changed, the same object otherwise.

    Override `visit_<ClassName>`; `visit_buffer` may substitute buffers (default keeps them).
    """

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        """The buffer to use for `buffer` in the result (itself by default; passes override it to
        retype or rename buffers)."""
        return buffer

    def _visit_value(self, value):
        if isinstance(value, Buffer):
            return self.visit_buffer(value)
        if isinstance(value, Node):
            return self.visit(value)
        if isinstance(value, tuple):
            new = tuple(self._visit_value(v) for v in value)
            return value if all(a is b for a, b in zip(new, value)) else new
        return value

    def generic_visit(self, node):
        """`node` with every child visited; the node itself when no child changed."""
        changes = {}
        for name in child_fields(type(node)):
            value = getattr(node, name)
            new = self._visit_value(value)
            if new is not value:
                changes[name] = new
        if not changes:
            return node
        return dataclasses.replace(node, **changes)
