"""CommonSubexprElim: let-bind pure computations that a function performs more than once.

The semantics follow TVM's CSE (seeds/003), with vkir's placement and purity rules:

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
    floats), and the binding takes the first occurrence as written. The pass works greedily,
    largest computation first (ties: first occurrence in source order), and recounts after each
    binding, so a larger computation is bound before the smaller ones inside it and their
    binding then uses the smaller one's variable (the cascade `cse_v2 = x + y;
    cse_v1 = cse_v2 + z`). A computation used once is left exactly as written.

Where
    Scopes are the function body, `LetStmt`, `Let` and loop bodies, the branches of an `if`, the
    two arms of `if_then_else`, and the bodies of buffer and async statements. The binding goes
    into the innermost scope containing every use, just before the first statement of that scope
    that contains a use (a `LetStmt` whose body is the rest of the block); in an expression scope
    it wraps the scope's expression in a `Let`. Hence two uses in one branch stay in that branch,
    one use in each branch (or one in the condition) is bound above the `if`, a loop-variant
    computation stays inside its loop, and a binding never leaves the scope of a variable it
    uses (uses are grouped per binding instance of their variables, so even a variable object
    bound in two sibling scopes is handled).

Speculation
    Placing a binding above an `if`, a loop or an `if_then_else` may evaluate it on a path where
    the original program did not. That is harmless for every pure vkir operation except integer
    division and remainder by a divisor that is not a nonzero constant: `if_then_else(d != 0,
    x // d, 0)` must not become an unguarded `x // d`. Unlike TVM (which ignores this), such
    *may-trap* computations are only commoned among uses inside the same conditional region
    (an `if` branch, a loop body or an `if_then_else` arm, each of which is also a scope), so
    they are never hoisted out of one. (`and`/`or`, like `Select`, evaluate both operands.) An
    `if_then_else` guards its arms: it may trap only through its condition.

Output is deterministic: new variables are `cse_v1`, `cse_v2`, ... in creation order (numbering
continues after any `cse_vN` already in the function, so running the pass twice is safe).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ..ir import (
    Broadcast, BufferLoad, Call, Div, FloatImm, FloorDiv, FloorMod, IntImm, Let, LetStmt,
    Mod, PrimExpr, PrimFunc, Ramp, SeqStmt, Stmt, Var, is_pure, walk,
)
from ..ir.dtype import DataType
from ..ir.functor import _child_fields
from .base import Pass
from .cse_keys import KeyTable

# kinds of child positions
_PLAIN = "plain"  # evaluated whenever the parent is
_ARM = "arm"  # an if_then_else arm: a scope, evaluated only when taken
_LET_BODY = "let_body"  # a Let body: a scope binding the Let's var
_BLOCK = "block"  # a statement body: a scope
_COND_BLOCK = "cond_block"  # a loop body or an if branch: a scope, conditionally executed

_NAME_RE = re.compile(r"^cse_v(\d+)$")


@dataclass(frozen=True)
class CommonSubexprElim(Pass):
    """Common subexpression elimination (see the module docstring for the exact rules)."""

    identify_equiv_terms: bool = False

    def transform(self, func: PrimFunc) -> PrimFunc:
        body = eliminate(func.body, self.identify_equiv_terms, _last_cse_number(func))
        return func if body is func.body else func.with_body(body)


def eliminate(body: Stmt, identify_equiv_terms: bool, last_number: int = 0,
              batched: bool = True) -> Stmt:
    """`body` with its common subexpressions bound to new variables cse_v{last_number+1}, ...

    Conceptually one computation is bound per round (the largest that still occurs twice), and
    the statement is scanned again. A round may bind several computations at once when that
    cannot change the outcome (see `_Scan.batch`); `batched=False` binds exactly one per round,
    which tests use as the reference.
    """
    counter = last_number
    while True:
        scan = _Scan(KeyTable(identify_equiv_terms))
        scan.block(body, (), (), _BLOCK)
        groups = scan.batch() if batched else scan.batch()[:1]
        if not groups:
            return body
        bindings = []
        for group in groups:
            counter += 1
            bindings.append((group, Var(f"cse_v{counter}", group.dtype)))
        body = _Rewrite(bindings).block(body, ())


def _last_cse_number(func: PrimFunc) -> int:
    """The largest N of a variable named cse_vN already in `func` (0 if none)."""
    last = 0
    for node in walk(func.body):
        for var in _bound_vars(node):
            m = _NAME_RE.match(var.name)
            if m:
                last = max(last, int(m.group(1)))
    return last


def _bound_vars(node):
    for name in ("var", "loop_var"):
        var = getattr(node, name, None)
        if isinstance(var, Var):
            yield var


# ------------------------------------------------------------------------------------------------
# the fixed traversal order shared by the scan and the rewrite


def _flatten(stmt: Stmt) -> list:
    """The statements of a block, nested sequences flattened."""
    if isinstance(stmt, SeqStmt):
        out = []
        for s in stmt.seq:
            out.extend(_flatten(s))
        return out
    return [stmt]


def _stmt_parts(stmt: Stmt) -> list:
    """(field, tuple index or None, kind, child, bound var) of a non-sequence statement."""
    name = type(stmt).__name__
    if name == "BufferStore":
        parts = [("indices", j, _PLAIN, e, None) for j, e in enumerate(stmt.indices)]
        return parts + [("value", None, _PLAIN, stmt.value, None)]
    if name == "LetStmt":
        return [("value", None, _PLAIN, stmt.value, None),
                ("body", None, _BLOCK, stmt.body, stmt.var)]
    if name == "For":
        return [("min", None, _PLAIN, stmt.min, None), ("extent", None, _PLAIN, stmt.extent, None),
                ("body", None, _COND_BLOCK, stmt.body, stmt.loop_var)]
    if name == "IfThenElse":
        parts = [("condition", None, _PLAIN, stmt.condition, None),
                 ("then_case", None, _COND_BLOCK, stmt.then_case, None)]
        if stmt.else_case is not None:
            parts.append(("else_case", None, _COND_BLOCK, stmt.else_case, None))
        return parts
    parts = []
    for field in _child_fields(type(stmt)):
        value = getattr(stmt, field)
        if isinstance(value, PrimExpr):
            parts.append((field, None, _PLAIN, value, None))
        elif isinstance(value, Stmt):
            parts.append((field, None, _BLOCK, value, None))
    return parts


def _expr_parts(expr: PrimExpr) -> list:
    """(field, tuple index or None, kind, child, bound var) of an expression."""
    if isinstance(expr, (Var, IntImm, FloatImm)):
        return []
    if isinstance(expr, Let):
        return [("value", None, _PLAIN, expr.value, None), ("body", None, _LET_BODY, expr.body, expr.var)]
    if isinstance(expr, Call) and expr.op == "if_then_else" and len(expr.args) == 3:
        return [("args", j, _PLAIN if j == 0 else _ARM, a, None) for j, a in enumerate(expr.args)]
    if isinstance(expr, BufferLoad):
        return [("indices", j, _PLAIN, e, None) for j, e in enumerate(expr.indices)]
    parts = []
    for field in _child_fields(type(expr)):
        value = getattr(expr, field)
        if isinstance(value, PrimExpr):
            parts.append((field, None, _PLAIN, value, None))
        elif isinstance(value, tuple):
            parts.extend((field, j, _PLAIN, v, None) for j, v in enumerate(value)
                         if isinstance(v, PrimExpr))
    return parts


def _rebuild(node, parts: list, new_children: list):
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


# ------------------------------------------------------------------------------------------------
# scan: every occurrence of every eligible computation, with its scope chain


@dataclass(frozen=True)
class _Use:
    site: tuple  # child-index path from the function body
    chain: tuple  # ((scope site, item index), ...) from the outermost scope inward
    expr: PrimExpr
    size: int
    order: int  # pre-order position, for ties


@dataclass
class _Group:
    """Occurrences of one computation (up to the chosen equivalence)."""

    uses: list

    @property
    def dtype(self) -> DataType:
        return self.uses[0].expr.dtype

    def outermost_uses(self) -> list:
        """Uses not nested inside another use of the same group (possible only with
        equivalence, e.g. `(x + y) * 1` around `x + y`). Uses are in pre-order, so a use nested
        in an earlier one is nested in the last kept one."""
        kept = [self.uses[0]]
        for use in self.uses[1:]:
            last = kept[-1].site
            if use.site[:len(last)] != last:
                kept.append(use)
        return kept


class _Scan:
    """Records the uses of every eligible computation of a statement tree.

    For every expression it computes, bottom-up, a tuple (syntactic id, equivalence id, size,
    clean, traps): `clean` means no load, impure call or Let inside, `traps` that it contains an
    integer division by a possibly-zero divisor. A variable's id includes the site of the scope
    that binds it, so occurrences under different bindings of one Var object never meet.
    """

    def __init__(self, keys: KeyTable):
        self.keys = keys
        self.groups: dict = {}
        self.binders: dict = {}  # Var -> site of the scope binding it (absent: free in the body)
        self.region: tuple = ()  # site of the innermost conditional region
        self.order = 0

    def batch(self) -> list:
        """The computations to bind this round, in binding order.

        The first is the largest computation occurring at least twice (by the size of its first
        occurrence, which is what gets bound), the earliest first on ties. The following ones,
        in the same order, join while binding them in this round gives exactly what one round
        each would: a binding only rewrites the uses of its group and lowers the counts of the
        computations nested in them (it never creates a new repeated computation), so the next
        candidate is unaffected when none of its uses is nested in, or contains, a use of the
        batch. A candidate whose uses do interact stops the batch; and since such a candidate
        keeps its size but may move earlier in source order, batch members no larger than any
        interacting candidate are dropped (they could lose a tie to it).
        """
        candidates = []
        for group in self.groups.values():
            if len(group.uses) < 2:
                continue
            uses = group.outermost_uses()
            if len(uses) >= 2:
                candidates.append(_Group(uses))
        if not candidates:
            return []
        candidates.sort(key=lambda g: (-g.uses[0].size, g.uses[0].order))
        within: set = set()  # every prefix of a batch use site
        sites: set = set()  # batch use sites

        def interacts(group):
            for use in group.uses:
                if use.site in within:
                    return True
                if any(use.site[:n] in sites for n in range(len(use.site))):
                    return True
            return False

        batch = []
        stop = len(candidates)
        for i, group in enumerate(candidates):
            if batch and interacts(group):
                stop = i
                break
            batch.append(group)
            for use in group.uses:
                sites.add(use.site)
                within.update(use.site[:n] for n in range(len(use.site) + 1))
        largest_affected = max((g.uses[0].size for g in candidates[stop:] if interacts(g)),
                               default=0)
        return batch[:1] + [g for g in batch[1:] if g.uses[0].size > largest_affected]

    # -- statements -------------------------------------------------------------------------

    def block(self, stmt: Stmt, site: tuple, chain: tuple, kind: str, bound: Var | None = None):
        saved_region, saved_binder = self.region, self.binders.get(bound, _MISSING)
        if kind == _COND_BLOCK:
            self.region = site
        if bound is not None:
            self.binders[bound] = site
        for k, item in enumerate(_flatten(stmt)):
            self.stmt(item, site + (k,), chain + ((site, k),))
        self.region = saved_region
        _restore(self.binders, bound, saved_binder)

    def stmt(self, stmt: Stmt, site: tuple, chain: tuple):
        for i, (_, _, kind, child, bound) in enumerate(_stmt_parts(stmt)):
            if kind in (_BLOCK, _COND_BLOCK):
                self.block(child, site + (i,), chain, kind, bound)
            else:
                self.expr(child, site + (i,), chain)

    # -- expressions ------------------------------------------------------------------------

    def expr(self, expr: PrimExpr, site: tuple, chain: tuple) -> tuple:
        self.order += 1
        order = self.order
        if isinstance(expr, Var):
            vid = self.keys.syntactic(expr, (self.binders.get(expr),))
            return (vid, vid, 1, True, False)
        if isinstance(expr, (IntImm, FloatImm)):
            sid = self.keys.syntactic(expr, ())
            return (sid, self.keys.equivalent(expr, (), sid), 1, True, False)
        sids, eids = [], []
        size, clean, traps = 1, _own_clean(expr), _traps(expr)
        for i, (_, _, kind, child, bound) in enumerate(_expr_parts(expr)):
            # (an if_then_else guards its arms: it may trap only through its condition)
            child_site = site + (i,)
            if kind == _PLAIN:
                info = self.expr(child, child_site, chain)
            else:
                saved_region, saved_binder = self.region, self.binders.get(bound, _MISSING)
                if kind == _ARM:
                    self.region = child_site
                if bound is not None:
                    self.binders[bound] = child_site
                child_chain = chain + ((child_site, 0),) if kind in (_ARM, _LET_BODY) else chain
                info = self.expr(child, child_site, child_chain)
                self.region = saved_region
                _restore(self.binders, bound, saved_binder)
            sids.append(info[0])
            eids.append(info[1])
            size += info[2]
            clean = clean and info[3]
            traps = traps or info[4]
        sid = self.keys.syntactic(expr, tuple(sids))
        eid = self.keys.equivalent(expr, tuple(eids), sid)
        if clean and _eligible(expr):
            key = (eid, self.region) if traps else eid
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = _Group([])
            group.uses.append(_Use(site, chain, expr, size, order))
        return (sid, eid, size, clean, traps)


def _own_clean(expr: PrimExpr) -> bool:
    """Not itself a load, a Let or an impure call."""
    if isinstance(expr, (BufferLoad, Let)):
        return False
    return not isinstance(expr, Call) or is_pure(expr.op)


_MISSING = object()


def _restore(binders: dict, var, saved):
    if var is None:
        return
    if saved is _MISSING:
        del binders[var]
    else:
        binders[var] = saved


def _eligible(expr: PrimExpr) -> bool:
    """A candidate by its own kind and type (purity of its contents is checked separately)."""
    if isinstance(expr, (Var, IntImm, FloatImm, Ramp, Broadcast, Let)):
        return False
    dtype = expr.dtype
    return isinstance(dtype, DataType) and dtype.code not in ("bool", "handle")


def _traps(expr: PrimExpr) -> bool:
    """Integer division or remainder whose divisor may be zero (the node itself)."""
    if not isinstance(expr, (Div, Mod, FloorDiv, FloorMod)):
        return False
    if getattr(expr.dtype, "code", None) not in ("int", "uint"):
        return False
    divisor = expr.b
    if isinstance(divisor, Broadcast):
        divisor = divisor.value
    return not (isinstance(divisor, IntImm) and divisor.value != 0)


# ------------------------------------------------------------------------------------------------
# rewrite: one binding


class _Rewrite:
    """Replaces the uses of each group by its variable and inserts the bindings.

    Several bindings in one block are nested by (first statement using it, binding order), the
    earlier outside, which is what inserting them one at a time gives.
    """

    def __init__(self, bindings: list):
        self.replace: dict = {}  # use site -> variable
        self.insert: dict = {}  # scope site -> [(item index, order, var, value)]
        for order, (group, var) in enumerate(bindings):
            for use in group.uses:
                self.replace[use.site] = var
            scope, item = _placement(group)
            self.insert.setdefault(scope, []).append((item, order, var, group.uses[0].expr))
        self.touched = set()  # sites on the way to a use or an insertion
        for site in (*self.replace, *self.insert):
            self.touched.update(site[:n] for n in range(len(site) + 1))

    def block(self, stmt: Stmt, site: tuple) -> Stmt:
        if site not in self.touched:
            return stmt
        items = _flatten(stmt)
        new_items = [self.stmt(item, site + (k,)) for k, item in enumerate(items)]
        insertions = self.insert.get(site)
        if insertions is None and all(a is b for a, b in zip(new_items, items)):
            return stmt
        for k, _, var, value in sorted(insertions or (), key=lambda t: t[:2], reverse=True):
            new_items = new_items[:k] + [LetStmt(var, value, _seq(new_items[k:]))]
        return _seq(new_items)

    def stmt(self, stmt: Stmt, site: tuple) -> Stmt:
        if site not in self.touched:
            return stmt
        parts = _stmt_parts(stmt)
        new = []
        for i, (_, _, kind, child, _) in enumerate(parts):
            if kind in (_BLOCK, _COND_BLOCK):
                new.append(self.block(child, site + (i,)))
            else:
                new.append(self.expr(child, site + (i,)))
        return _rebuild(stmt, parts, new)

    def expr(self, expr: PrimExpr, site: tuple) -> PrimExpr:
        var = self.replace.get(site)
        if var is not None:
            return var
        if site not in self.touched:
            return expr
        parts = _expr_parts(expr)
        new = []
        for i, (_, _, kind, child, _) in enumerate(parts):
            child_site = site + (i,)
            value = self.expr(child, child_site)
            if kind in (_ARM, _LET_BODY):
                for _, _, var, bound in sorted(self.insert.get(child_site, ()), reverse=True):
                    value = Let(var, bound, value)
            new.append(value)
        return _rebuild(expr, parts, new)


def _placement(group: _Group) -> tuple:
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
