"""The fixed order in which CSE visits a statement tree, shared by its scan and its rewrite.

Both walk the same children in the same order and name every node by its *site*, the path of
child indices from the function body, so a site found by the scan designates the same node for
the rewrite. A block (a statement body) is a flat list of statements, nested sequences
flattened; each child position has a kind saying whether it opens a scope and whether it is
evaluated only conditionally.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from ..ir import (
    BufferLoad, BufferStore, Call, FloatImm, For, IfThenElse, IntImm, Let, LetStmt, PrimExpr,
    Stmt, Var, While,
)
from ..ir.functor import child_fields

# kinds of child positions
PLAIN = "plain"  # an expression evaluated whenever its parent is; no new scope
ARM = "arm"  # an if_then_else arm: a scope, evaluated only when taken
LET_BODY = "let_body"  # a Let body: a scope binding the Let's var
BLOCK = "block"  # a statement body: a scope
COND_BLOCK = "cond_block"  # a loop body or an if branch: a scope, conditionally executed


def stmt_parts(stmt: Stmt) -> list:
    """(field, tuple index or None, kind, child, bound var) of a non-sequence statement; a
    store's indices come before its value, as in the source."""
    if isinstance(stmt, BufferStore):
        parts = [("indices", j, PLAIN, e, None) for j, e in enumerate(stmt.indices)]
        return parts + [("value", None, PLAIN, stmt.value, None)]
    if isinstance(stmt, LetStmt):
        return [("value", None, PLAIN, stmt.value, None),
                ("body", None, BLOCK, stmt.body, stmt.var)]
    if isinstance(stmt, For):
        return [("min", None, PLAIN, stmt.min, None), ("extent", None, PLAIN, stmt.extent, None),
                ("body", None, COND_BLOCK, stmt.body, stmt.loop_var)]
    if isinstance(stmt, While):   # the condition runs at least once, the body maybe never
        return [("condition", None, PLAIN, stmt.condition, None),
                ("body", None, COND_BLOCK, stmt.body, None)]
    if isinstance(stmt, IfThenElse):
        parts = [("condition", None, PLAIN, stmt.condition, None),
                 ("then_case", None, COND_BLOCK, stmt.then_case, None)]
        if stmt.else_case is not None:
            parts.append(("else_case", None, COND_BLOCK, stmt.else_case, None))
        return parts
    parts = []
    for field in child_fields(type(stmt)):
        value = getattr(stmt, field)
        if isinstance(value, PrimExpr):
            parts.append((field, None, PLAIN, value, None))
        elif isinstance(value, Stmt):
            parts.append((field, None, BLOCK, value, None))
    return parts


def expr_parts(expr: PrimExpr) -> list:
    """(field, tuple index or None, kind, child, bound var) of an expression."""
    operands = _operand_fields(type(expr))
    if operands is not None:  # the common case, without a look at each field
        return [(f, None, PLAIN, getattr(expr, f), None) for f in operands]
    if isinstance(expr, (Var, IntImm, FloatImm)):
        return []
    if isinstance(expr, Let):
        return [("value", None, PLAIN, expr.value, None),
                ("body", None, LET_BODY, expr.body, expr.var)]
    if isinstance(expr, Call) and expr.op == "if_then_else" and len(expr.args) == 3:
        return [("args", j, PLAIN if j == 0 else ARM, a, None) for j, a in enumerate(expr.args)]
    if isinstance(expr, BufferLoad):
        return [("indices", j, PLAIN, e, None) for j, e in enumerate(expr.indices)]
    parts = []
    for field in child_fields(type(expr)):
        value = getattr(expr, field)
        if isinstance(value, PrimExpr):
            parts.append((field, None, PLAIN, value, None))
        elif isinstance(value, tuple):
            parts.extend((field, j, PLAIN, v, None) for j, v in enumerate(value)
                         if isinstance(v, PrimExpr))
    return parts


@lru_cache(maxsize=None)
def _operand_fields(cls) -> tuple | None:
    """The child fields of an operator whose fields are all operands (binary, comparison and
    unary operators: always expressions), else None."""
    names = tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")
    return names if names in (("a", "b"), ("a",)) and child_fields(cls) == names else None


def rebuild(node, parts: list, new_children: list):
    """`node` with its children replaced (the same object when nothing changed)."""
    if all(new is part[3] for new, part in zip(new_children, parts)):
        return node
    changes: dict = {}
    for (field, index, _, _, _), new in zip(parts, new_children):
        if index is None:
            changes[field] = new
        else:
            values = changes.get(field)
            if values is None:
                values = list(getattr(node, field))
                changes[field] = values
            values[index] = new
    changes = {k: tuple(v) if isinstance(v, list) else v for k, v in changes.items()}
    return dataclasses.replace(node, **changes)
