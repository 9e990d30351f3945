"""Replace variables by expressions throughout an expression or statement."""

from __future__ import annotations

from typing import Mapping

from .base import Node
from .expr import Var
from .functor import Mutator


class _Substituter(Mutator):
    def __init__(self, mapping: Mapping[Var, Node]):
        self.mapping = mapping

    def visit_Var(self, var: Var):
        return self.mapping.get(var, var)


def substitute(node: Node, mapping: Mapping[Var, Node]) -> Node:
    """`node` with every occurrence of a Var key of `mapping` replaced by its value.

    Buffers (and their shapes) are declarations and are left alone; bound variables in binding
    positions are replaced too, so map only free variables.
    """
    if not mapping:
        return node
    return _Substituter(mapping).visit(node)
