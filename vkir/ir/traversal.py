"""`walk(node)`: every IR node under a node, itself first, then children in source order."""

from __future__ import annotations

from typing import Iterator

from .base import Node
from .functor import children


def walk(node: Node) -> Iterator[Node]:
    """Pre-order traversal of expressions and statements (a PrimFunc yields itself, then its body).

    Buffers are declarations and are not yielded; their `data` vars appear only where the IR
    refers to them as expressions.
    """
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(children(n))))
