"""The scan of CSE: every occurrence of every eligible computation, grouped, and the choice of
the computations to bind in one round (see common_subexpr_elim.py for the rules)."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import (
    Broadcast, BufferLoad, Call, Div, FloatImm, FloorDiv, FloorMod, IntImm, Let, Mod, PrimExpr,
    Ramp, Stmt, Var, is_pure,
)
from ..ir.dtype import DataType
from ..ir.stmt import flatten
from .cse_keys import KeyTable
from .cse_traversal import (
    ARM, BLOCK, COND_BLOCK, LET_BODY, PLAIN, expr_parts, stmt_parts,
)


@dataclass(frozen=True)
class Use:
    """One occurrence of a candidate computation: where it is, its scope chain, its size and pre-
    order position."""
    site: tuple  # child-index path from the function body
    chain: tuple  # ((scope site, item index), ...) from the outermost scope inward
    expr: PrimExpr
    size: int
    order: int  # pre-order position, for ties


@dataclass
class Group:
    """Occurrences of one computation (up to the chosen equivalence)."""

    uses: list

    @property
    def dtype(self) -> DataType:
        """The type of the computation (that of its first use)."""
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


class Scan:
    """Records the uses of every eligible computation of a statement tree.

    For every expression it computes, bottom-up, a tuple (syntactic id, equivalence id, size,
    clean, traps, variables): `clean` means no load, impure call or Let inside, `traps` that it
    may divide an integer by zero outside a guarding if_then_else arm, `variables` the ids of its
    variables (only with equivalence). A variable's id includes the site of the scope
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
        may move earlier in source order (and, with equivalence, another of its uses may become
        its first), batch members no larger than any use of an interacting candidate are
        dropped (they could rank below it after the first binding).
        """
        candidates = []
        for group in self.groups.values():
            if len(group.uses) < 2:
                continue
            uses = group.outermost_uses()
            if len(uses) >= 2:
                candidates.append(Group(uses))
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
        largest_affected = max((max(u.size for u in g.uses)
                                for g in candidates[stop:] if interacts(g)), default=0)
        return batch[:1] + [g for g in batch[1:] if g.uses[0].size > largest_affected]

    # -- statements -------------------------------------------------------------------------

    def block(self, stmt: Stmt, site: tuple, chain: tuple, kind: str, bound: Var | None = None):
        """Scan a statement that opens a scope (a block, loop body, branch or binding body)."""
        saved_region, saved_binder = self.region, self.binders.get(bound, _MISSING)
        if kind == COND_BLOCK:
            self.region = site
        if bound is not None:
            self.binders[bound] = site
        for k, item in enumerate(flatten(stmt)):
            self.stmt(item, site + (k,), chain + ((site, k),))
        self.region = saved_region
        _restore(self.binders, bound, saved_binder)

    def stmt(self, stmt: Stmt, site: tuple, chain: tuple):
        """Scan the children of a statement."""
        for i, (_, _, kind, child, bound) in enumerate(stmt_parts(stmt)):
            if kind in (BLOCK, COND_BLOCK):
                self.block(child, site + (i,), chain, kind, bound)
            else:
                self.expr(child, site + (i,), chain)

    # -- expressions ------------------------------------------------------------------------

    def expr(self, expr: PrimExpr, site: tuple, chain: tuple) -> tuple:
        """Scan an expression, recording it as a candidate; returns its key, size and properties.
        """
        self.order += 1
        order = self.order
        if isinstance(expr, Var):
            vid = self.keys.syntactic(expr, (self.binders.get(expr),))
            return (vid, vid, 1, True, False, frozenset((vid,)))
        if isinstance(expr, (IntImm, FloatImm)):
            sid = self.keys.syntactic(expr, ())
            return (sid, self.keys.equivalent(expr, (), sid), 1, True, False, _NO_VARS)
        sids, eids = [], []
        size, clean, traps, variables = 1, _own_clean(expr), _traps(expr), _NO_VARS
        for i, (_, _, kind, child, bound) in enumerate(expr_parts(expr)):
            child_site = site + (i,)
            if kind == PLAIN:
                info = self.expr(child, child_site, chain)
            else:
                saved_region, saved_binder = self.region, self.binders.get(bound, _MISSING)
                if kind == ARM:
                    self.region = child_site
                if bound is not None:
                    self.binders[bound] = child_site
                child_chain = chain + ((child_site, 0),) if kind in (ARM, LET_BODY) else chain
                info = self.expr(child, child_site, child_chain)
                self.region = saved_region
                _restore(self.binders, bound, saved_binder)
            sids.append(info[0])
            eids.append(info[1])
            size += info[2]
            clean = clean and info[3]
            # an if_then_else guards its arms: it may trap only through its condition
            traps = traps or (info[4] and kind != ARM)
            if self.keys.equivalence and info[5]:
                variables = variables | info[5]
        sid = self.keys.syntactic(expr, tuple(sids))
        eid = self.keys.equivalent(expr, tuple(eids), sid)
        if clean and _eligible(expr):
            # equivalence may cancel variables (x - x is 0): terms that are equal but use
            # different variables (or bindings of them) would have no common scope
            key = (eid, variables) if self.keys.equivalence else eid
            if traps:
                key = (key, self.region)
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = Group([])
            group.uses.append(Use(site, chain, expr, size, order))
        return (sid, eid, size, clean, traps, variables)


_NO_VARS = frozenset()


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
