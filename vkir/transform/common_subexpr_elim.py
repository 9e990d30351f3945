"""CommonSubexprElim: let-bind pure computations that a function performs more than once.

The semantics follow TVM's CSE, with vkir's placement and purity rules:

Eligible computations
    An expression is a candidate unless it is a constant, a variable, a `Ramp`, a `Broadcast`, a
    `Let`, a bool-typed value (comparisons, `And`/`Or`/`Not` and any other predicate), or it
    contains a `BufferLoad`, a `Let` or a call of an impure (or unknown) intrinsic. Pure math
    intrinsics (`exp`, `sqrt`, `fma`, ...), `Cast`, `Select`, `Shuffle` and `if_then_else` are
    candidates. Loads are never commoned (memory may change between them), but the index
    arithmetic inside them is.

Which, and in what order
    Only computations that occur at least twice are bound; with `identify_equiv_terms=True`
    occurrences that are equal up to commutativity, associativity and distributivity count as
    one computation (see cse_keys.py: a ring normal form for integers, only operand order for
    floats) provided they use the same variables (`x - x` and `y - y` are not identified), and
    the binding takes the first occurrence as written. The pass works greedily: largest
    computation first (size = node count of the occurrence that gets bound; ties: first
    occurrence in source order), recounting after each binding, so the binding of a larger
    computation ends up using the variable of a smaller one inside it (the cascade
    `cse_v2 = x + y; cse_v1 = cse_v2 + z`). A computation used once is left exactly as written.

Where
    Scopes are the function body, `LetStmt`, `Let` and loop bodies, the branches of an `if`, the
    two arms of `if_then_else`, and the bodies of buffer and async statements. The binding goes
    into the innermost scope containing every use, just before the first statement of that scope
    that contains a use (a `LetStmt` whose body is the rest of the block); in an expression scope
    it wraps the scope's expression in a `Let`. Hence two uses in one branch stay in that branch,
    one use in each branch (or one in the condition) is bound above the `if`, a loop-variant
    computation stays inside its loop (so does an invariant one used only there: this is not
    loop-invariant code motion), and a binding never leaves the scope of a variable it uses
    (uses are grouped per binding instance of their variables, so even a variable object bound
    in two sibling scopes is handled).

Speculation
    Placing a binding above an `if`, a loop or an `if_then_else` may evaluate it on a path where
    the original program did not. That is harmless for every pure vkir operation except integer
    division and remainder by a divisor that is not a nonzero constant (undefined behaviour in
    SPIR-V): `if_then_else(d != 0, x // d, 0)` must not become an unguarded `x // d`, and a
    division in a loop that may run zero times must not move before it. Unlike TVM (which
    ignores this), such
    *may-trap* computations are only commoned among uses inside the same conditional region
    (an `if` branch, a loop body or an `if_then_else` arm, each of which is also a scope), so
    they are never hoisted out of one. (`and`/`or`, like `Select`, evaluate both operands.) An
    `if_then_else` guards its arms: it may trap only through its condition.

Output is deterministic: new variables are `cse_v1`, `cse_v2`, ... in creation order (numbering
continues after any `cse_vN` already in the function, so running the pass twice is safe).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from ..ir import Let, LetStmt, PrimExpr, PrimFunc, SeqStmt, Stmt, Var, walk
from ..ir.stmt import flatten
from .base import Pass
from .cse_keys import KeyTable
from .cse_scan import Group, Scan
from .cse_traversal import (
    ARM, BLOCK, COND_BLOCK, LET_BODY, expr_parts, rebuild, stmt_parts,
)

_NAME_RE = re.compile(r"^cse_v(\d+)$")


@dataclass(frozen=True)
class CommonSubexprElim(Pass):
    """Common subexpression elimination (see the module docstring for the exact rules)."""

    identify_equiv_terms: bool = False

    def transform(self, func: PrimFunc) -> PrimFunc:
        """Let-bind the repeated computations of the body (see the module docstring)."""
        body = eliminate(func.body, self.identify_equiv_terms, _last_cse_number(func))
        return func if body is func.body else func.with_body(body)


def eliminate(body: Stmt, identify_equiv_terms: bool, last_number: int = 0,
              batched: bool = True, skip_final_scan: bool = True) -> Stmt:
    """`body` with its common subexpressions bound to new variables cse_v{last_number+1}, ...

    Conceptually one computation is bound per round (the largest that still occurs twice), and
    the statement is scanned again. A round may bind several computations at once when that
    cannot change the outcome (see `cse_scan.Scan.batch`); `batched=False` binds exactly one
    per round, which tests use as the reference. The scan after the last round, which would
    find nothing, is skipped when the last round's scan shows that it would
    (`cse_scan.Scan.last_round`); `skip_final_scan=False` scans until a scan finds nothing,
    the reference for tests.
    """
    counter = last_number
    while True:
        scan = Scan(KeyTable(identify_equiv_terms))
        scan.block(body, scan.open(), (), BLOCK)
        groups = scan.batch() if batched else scan.batch()[:1]
        if not groups:
            return body
        bindings = []
        for group in groups:
            counter += 1
            bindings.append((group, Var(f"cse_v{counter}", group.dtype)))
        body = _Rewrite(bindings, scan.ends).block(body, 0)
        if skip_final_scan and scan.last_round(groups):  # the next scan would find nothing
            return body


def _last_cse_number(func: PrimFunc) -> int:
    """The largest N of a variable named cse_vN already in `func` (0 if none)."""
    names = [p.name for p in func.params]
    names += [n.name for n in walk(func.body) if isinstance(n, Var)]
    numbers = [int(m.group(1)) for m in map(_NAME_RE.match, names) if m]
    return max(numbers, default=0)


# ------------------------------------------------------------------------------------------------
# rewrite: the bindings of one round


class _Rewrite:
    """Replaces the uses of each group by its variable and inserts the bindings.

    It walks the tree in the scan's order, so the sites it computes are the scan's: the first
    child of `site` is site + 1 and each next sibling starts where the previous one's subtree
    ends. A subtree without a use or an insertion point is left as it is, unvisited.

    Several bindings in one block are nested by (first statement using it, binding order), the
    earlier outside, which is what inserting them one at a time gives.
    """

    def __init__(self, bindings: list, ends: list):
        self.ends = ends
        self.replace: dict = {}  # use site -> variable
        self.insert: dict = {}  # scope site -> [(item index, order, var, value)]
        for order, (group, var) in enumerate(bindings):
            for use in group.uses:
                self.replace[use.site] = var
            scope, item = _placement(group)
            self.insert.setdefault(scope, []).append((item, order, var, group.uses[0].expr))
        self.targets = sorted({*self.replace, *self.insert})

    def _touched(self, site: int) -> bool:
        """Whether the subtree of `site` holds a use or an insertion point."""
        k = bisect_left(self.targets, site)
        return k < len(self.targets) and self.targets[k] < self.ends[site]

    def block(self, stmt: Stmt, site: int) -> Stmt:
        if not self._touched(site):
            return stmt
        items = flatten(stmt)
        new_items, child = [], site + 1
        for item in items:
            new_items.append(self.stmt(item, child))
            child = self.ends[child]
        insertions = self.insert.get(site)
        if insertions is None and all(a is b for a, b in zip(new_items, items)):
            return stmt
        for k, _, var, value in sorted(insertions or (), key=lambda t: t[:2], reverse=True):
            new_items = new_items[:k] + [LetStmt(var, value, _seq(new_items[k:]))]
        return _seq(new_items)

    def stmt(self, stmt: Stmt, site: int) -> Stmt:
        if not self._touched(site):
            return stmt
        parts = stmt_parts(stmt)
        new, child_site = [], site + 1
        for _, _, kind, child, _ in parts:
            if kind in (BLOCK, COND_BLOCK):
                new.append(self.block(child, child_site))
            else:
                new.append(self.expr(child, child_site))
            child_site = self.ends[child_site]
        return rebuild(stmt, parts, new)

    def expr(self, expr: PrimExpr, site: int) -> PrimExpr:
        var = self.replace.get(site)
        if var is not None:
            return var
        if not self._touched(site):
            return expr
        parts = expr_parts(expr)
        new, child_site = [], site + 1
        for _, _, kind, child, _ in parts:
            value = self.expr(child, child_site)
            if kind in (ARM, LET_BODY):
                for _, _, var, bound in sorted(self.insert.get(child_site, ()), reverse=True):
                    value = Let(var, bound, value)
            new.append(value)
            child_site = self.ends[child_site]
        return rebuild(expr, parts, new)


def _placement(group: Group) -> tuple:
    """(scope site, item index) of a group's binding: the innermost scope containing every
    use, before the first of its statements that contains one."""
    chains = [u.chain for u in group.uses]
    depth = 0
    while all(len(c) > depth for c in chains) and len({c[depth][0] for c in chains}) == 1:
        depth += 1
    assert depth > 0, "every use lies in the function body scope"
    return chains[0][depth - 1][0], min(c[depth - 1][1] for c in chains)


def _seq(items: list) -> Stmt:
    return items[0] if len(items) == 1 else SeqStmt(tuple(items))
