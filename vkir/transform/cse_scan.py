"""The scan of CSE: every occurrence of every eligible computation, grouped, and the choice of
the computations to bind in one round (see common_subexpr_elim.py for the rules).

Every node the scan visits (statement, block, expression) gets a *site*: its pre-order number.
The nodes of a subtree are numbered consecutively, so the subtree of `site` is the interval
[site, ends[site]), and nesting is two comparisons. (Sites used to be paths of child indices:
testing nesting and collecting every prefix of a path made a deep expression, such as a long
sum, cost the cube of its depth.)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from ..ir import (
    Add, And, Broadcast, BufferLoad, Call, Div, FloatImm, FloorDiv, FloorMod, IntImm, Let, Max,
    Min, Mod, Mul, Or, PrimExpr, Ramp, Stmt, Sub, Var, is_pure,
)
from ..ir.dtype import DataType
from ..ir.stmt import flatten
from .cse_keys import KeyTable
from .cse_traversal import (
    ARM, BLOCK, COND_BLOCK, LET_BODY, PLAIN, expr_parts, stmt_parts,
)


@dataclass(frozen=True)
class Use:
    """One occurrence of a candidate computation: where it is (its site, which is also its
    pre-order position, and the end of its subtree), its scope chain and its size."""
    site: int  # pre-order number of the node
    end: int  # one past the last site of its subtree
    chain: tuple  # ((scope site, item index), ...) from the outermost scope inward
    expr: PrimExpr
    size: int
    dtype: DataType

    def contains(self, site: int) -> bool:
        """Whether the node at `site` lies in this use's subtree (itself included)."""
        return self.site <= site < self.end


@dataclass
class Group:
    """Occurrences of one computation (up to the chosen equivalence)."""

    uses: list

    @property
    def dtype(self) -> DataType:
        """The type of the computation (that of its first use)."""
        return self.uses[0].dtype

    def outermost_uses(self) -> list:
        """Uses not nested inside another use of the same group (possible only with
        equivalence, e.g. `(x + y) * 1` around `x + y`). Uses are in pre-order, so a use nested
        in an earlier one is nested in the last kept one."""
        kept = [self.uses[0]]
        for use in self.uses[1:]:
            if not kept[-1].contains(use.site):
                kept.append(use)
        return kept


class Scan:
    """Records the uses of every eligible computation of a statement tree.

    For every expression it computes, bottom-up, a tuple (syntactic id, equivalence id, size,
    clean, traps, variables, dtype): `clean` means no load, impure call or Let inside, `traps`
    that it may divide an integer by zero outside a guarding if_then_else arm, `variables` the
    ids of its variables (only with equivalence), `dtype` its type (taken from the first operand
    where that is the rule: asking a node of a deep sum walks down the sum). A variable's id
    includes the site of the scope that binds it, so occurrences under different bindings of one
    Var object never meet.
    """

    def __init__(self, keys: KeyTable):
        self.keys = keys
        self.groups: dict = {}
        self.binders: dict = {}  # Var -> site of the scope binding it (absent: free in the body)
        self.region: int = -1  # site of the innermost conditional region (-1: none)
        self.ends: list = []  # site -> one past the last site of its subtree
        self.visited = 0  # nodes visited (the scan's cost, which tests bound)
        self.trap_regions: dict = {}  # key of a may-trap computation -> the regions it is in
        self.candidates: list = []  # computations occurring twice (set by `batch`)

    def open(self) -> int:
        """A new site, numbered in visiting order (its end is set when its visit is done)."""
        self.ends.append(None)
        return len(self.ends) - 1

    def _close(self, site: int) -> None:
        self.ends[site] = len(self.ends)
        self.visited += 1

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
        candidates.sort(key=lambda g: (-g.uses[0].size, g.uses[0].site))
        self.candidates = candidates
        # the subtrees of the batch's uses, sorted: they are disjoint (a group's outermost uses
        # are, and a group whose uses meet the batch's stops it), so their ends are sorted too
        starts: list = []
        ends: list = []

        def interacts(group):
            # a use meets the batch when its subtree and a batch use's overlap (one contains
            # the other): only the batch use starting last before the use's end can
            for use in group.uses:
                k = bisect_left(starts, use.end) - 1
                if k >= 0 and ends[k] > use.site:
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
                k = bisect_left(starts, use.site)
                starts.insert(k, use.site)
                ends.insert(k, use.end)
        largest_affected = max((max(u.size for u in g.uses)
                                for g in candidates[stop:] if interacts(g)), default=0)
        return batch[:1] + [g for g in batch[1:] if g.uses[0].size > largest_affected]

    def last_round(self, batch: list) -> bool:
        """Whether binding `batch` (from `batch()`) leaves no computation occurring twice, so
        that the next scan would find nothing.

        A binding replaces the uses of its group by its variable, keeping one copy of the first
        use as the bound value: a computation nested in the uses keeps only its occurrences in
        that copy, and one containing a use changes its key in a way that cannot make it equal
        to another that it was not already equal to (the uses of a group are equal, with the
        same variables), except through the region of a may-trap computation: once the
        division that made it may-trap is bound, its occurrences in different regions (or
        beside a not-trapping equivalent) become one computation. So the batch is the last
        when no may-trap computation occurs in two regions or has a not-trapping equivalent,
        and every candidate left out of it lies inside the batch's uses, at most once inside
        their first uses.
        """
        if any(len(regions) > 1 or key in self.groups
               for key, regions in self.trap_regions.items()):
            return False
        members = {id(group) for group in batch}
        owners = sorted((use.site, use.end, k == 0)
                        for group in batch for k, use in enumerate(group.uses))
        starts = [owner[0] for owner in owners]
        for group in self.candidates:
            if id(group) in members:
                continue
            kept = 0
            for use in group.uses:
                k = bisect_right(starts, use.site) - 1
                if k < 0 or owners[k][1] < use.end:
                    return False  # outside every use of the batch: it stays
                kept += owners[k][2]
            if kept > 1:
                return False
        return True

    # -- statements -------------------------------------------------------------------------

    def block(self, stmt: Stmt, site: int, chain: tuple, kind: str, bound: Var | None = None):
        """Scan a statement that opens a scope (a block, loop body, branch or binding body);
        its items are its children."""
        saved_region, saved_binder = self.region, self.binders.get(bound, _MISSING)
        if kind == COND_BLOCK:
            self.region = site
        if bound is not None:
            self.binders[bound] = site
        for k, item in enumerate(flatten(stmt)):
            self.stmt(item, self.open(), chain + ((site, k),))
        self.region = saved_region
        _restore(self.binders, bound, saved_binder)
        self._close(site)

    def stmt(self, stmt: Stmt, site: int, chain: tuple):
        """Scan the children of a statement."""
        for _, _, kind, child, bound in stmt_parts(stmt):
            if kind in (BLOCK, COND_BLOCK):
                self.block(child, self.open(), chain, kind, bound)
            else:
                self.expr(child, self.open(), chain)
        self._close(site)

    # -- expressions ------------------------------------------------------------------------

    def expr(self, expr: PrimExpr, site: int, chain: tuple) -> tuple:
        """Scan an expression, recording it as a candidate; returns its key, size and properties.
        """
        ends, keys = self.ends, self.keys
        cls = type(expr)
        if cls is Var:
            ends[site] = len(ends)
            self.visited += 1
            vid = keys.variable(expr, self.binders.get(expr))
            return (vid, vid, 1, True, False,
                    frozenset((vid,)) if keys.equivalence else _NO_VARS, expr.dtype)
        if cls is IntImm or cls is FloatImm:
            ends[site] = len(ends)
            self.visited += 1
            sid = keys.syntactic(expr, ())
            return (sid, keys.equivalent(expr, (), sid), 1, True, False, _NO_VARS, expr.dtype)
        equivalence = keys.equivalence
        sids, eids = [], []
        first_dtype = None
        # clean: not itself a load, a Let or an impure call
        clean = cls not in _NOT_CLEAN and (cls is not Call or is_pure(expr.op))
        traps = cls in _DIVISIONS and _traps(expr)
        size, variables = 1, _NO_VARS
        for _, _, kind, child, bound in expr_parts(expr):
            child_site = len(ends)
            if kind == PLAIN and type(child) is Var:  # the commonest child, without a call
                ends.append(child_site + 1)
                self.visited += 1
                vid = keys.variable(child, self.binders.get(child))
                info = (vid, vid, 1, True, False, frozenset((vid,)) if equivalence else _NO_VARS,
                        child.dtype)
            elif kind == PLAIN and type(child) is IntImm:  # the next commonest
                ends.append(child_site + 1)
                self.visited += 1
                csid = keys.syntactic(child, ())
                info = (csid, keys.equivalent(child, (), csid) if equivalence else csid, 1, True,
                        False, _NO_VARS, child.dtype)
            elif kind == PLAIN:
                ends.append(None)
                info = self.expr(child, child_site, chain)
            else:
                ends.append(None)
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
            if equivalence:
                eids.append(info[1])
                if info[5]:
                    variables = variables | info[5]
            if len(sids) == 1:
                first_dtype = info[6]
            size += info[2]
            clean = clean and info[3]
            # an if_then_else guards its arms: it may trap only through its condition
            traps = traps or (info[4] and kind != ARM)
        ends[site] = len(ends)
        self.visited += 1
        sid = keys.syntactic(expr, tuple(sids))
        eid = keys.equivalent(expr, tuple(eids), sid) if equivalence else sid
        dtype = first_dtype if cls in _DTYPE_OF_A else expr.dtype
        if clean and _eligible(expr, dtype):
            # equivalence may cancel variables (x - x is 0): terms that are equal but use
            # different variables (or bindings of them) would have no common scope
            key = (eid, variables) if equivalence else eid
            if traps:
                self.trap_regions.setdefault(key, set()).add(self.region)
                key = (key, self.region)
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = Group([])
            group.uses.append(Use(site, ends[site], chain, expr, size, dtype))
        return (sid, eid, size, clean, traps, variables, dtype)


_NO_VARS = frozenset()
# the operators whose type is their first operand's (as BinaryOp.dtype computes it)
_DTYPE_OF_A = frozenset({Add, Sub, Mul, Div, Mod, FloorDiv, FloorMod, Min, Max, And, Or})
# the classes that are never clean (loads and Lets; a call is clean when its op is pure), and
# those that may divide by zero
_NOT_CLEAN = frozenset({BufferLoad, Let})
_DIVISIONS = frozenset({Div, Mod, FloorDiv, FloorMod})


_MISSING = object()


def _restore(binders: dict, var, saved):
    if var is None:
        return
    if saved is _MISSING:
        del binders[var]
    else:
        binders[var] = saved


def _eligible(expr: PrimExpr, dtype) -> bool:
    """A candidate by its own kind and its type `dtype` (purity of its contents is checked
    separately)."""
    if isinstance(expr, (Var, IntImm, FloatImm, Ramp, Broadcast, Let)):
        return False
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
