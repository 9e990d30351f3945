"""Which store of an output element is the last one: only its value leaves the kernel, so only
it receives the element's seed; a later store to the same element kills an earlier one's
contribution to the gradient (and an `atomic_add` before that later store contributes nothing).

An invocation may store one element more than once: `y[i] = a; y[i] = b`, a store under a branch
after another, a store in a serial loop whose index does not move with the loop. The sites that
store one element form a group (structurally equal indices); where a group's sites can run more
than once in one invocation, its adjoint keeps a local flag, zeroed where the group's index
variables are bound: the adjoint runs backwards, so the first site it meets with the flag clear
ran last, takes the seed and sets the flag, and the sites it meets after take nothing.

What cannot be told apart this way is refused (UnsupportedError naming the store and its line):
two groups of one output that may reach one element (indices that differ by more than a
constant, or data-dependent), a store whose element may repeat across iterations of a serial
loop around the flag (`y[j // 2]`, `y[k]` inside a loop over j), and a repeated group whose
index reads a local (mutable) value. Stores by different invocations to one element race in
the forward kernel already; they are not this module's concern.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UnsupportedError
from ..ir import (EQ, AllocBuffer, BufferLoad, BufferStore, Call, DeclBuffer, Evaluate, For,
                  IfThenElse, IntImm, LetStmt, SeqStmt, Var, decl_buffer, seq)
from ..ir import walk as _nodes
from .derivatives import where

PARALLEL = ("thread_binding", "parallel")
ZERO, ONE = IntImm("int32", 0), IntImm("int32", 1)


@dataclass(frozen=True, eq=False)
class Site:
    """One statement that writes an output: a store, or an `atomic_add` statement (`add`), with
    its enclosing statements outermost first as (node, branch) pairs (branch: "then"/"else"
    under an IfThenElse, else None)."""

    node: object
    buffer: object
    indices: tuple
    add: bool
    chain: tuple


@dataclass(frozen=True, eq=False)
class Plan:
    """Where the adjoint needs last-store flags: {id(site node): flag buffer} and, for each
    statement whose body's adjoint declares flags (None: the whole kernel), those flags."""

    flags: dict = field(default_factory=dict)
    scopes: dict = field(default_factory=dict)

    def guard(self, node, adjoint, add: bool):
        """The adjoint of output site `node` under its flag: run only while the flag is clear;
        a store then sets it (an atomic_add leaves it: it kills no earlier value)."""
        flag = self.flags.get(id(node))
        if flag is None:
            return adjoint
        run = IfThenElse(EQ(BufferLoad(flag, (ZERO,)), ZERO), adjoint)
        return run if add else seq(run, BufferStore(flag, ONE, (ZERO,)))

    def scoped(self, node, body):
        """`body` (the adjoint of node's body; node None: of the kernel) inside the flags that
        live there, each zeroed first."""
        for flag in self.scopes.get(id(node) if node is not None else None, ()):
            body = AllocBuffer(flag, seq(BufferStore(flag, ZERO, (ZERO,)), body))
        return body


def plan(body, outputs) -> Plan:
    """The last-store flags for the stores of `outputs` (global buffers) in kernel body `body`;
    UnsupportedError where which store is last cannot be told (see the module's docstring)."""
    from .indexing import disjoint, distinct_iterations, index_forms

    sites = []
    _collect(body, set(outputs), (), sites)
    serial, lets = {}, {}
    for n in _nodes(body):
        if isinstance(n, For) and n.kind not in PARALLEL:
            serial[n.loop_var] = n.extent
        elif isinstance(n, LetStmt) and not n.value.dtype.is_float:
            lets[n.var] = n.value
    flags, scopes = {}, {}
    for buffer in outputs:
        groups = _groups([s for s in sites if s.buffer is buffer])
        for g in groups:
            scope, depth = _scope(g)
            stores = [s for s in g if not s.add]
            if not stores:
                continue
            above = [n.loop_var for n, _ in stores[0].chain[:depth + 1]
                     if isinstance(n, For) and n.kind not in PARALLEL]
            if not distinct_iterations(stores[0].indices, above, serial, lets):
                raise UnsupportedError(
                    f"vkir.grad: the store to {buffer.name!r}{where(stores[0].node)} may write "
                    f"one element in several iterations of a serial loop, so which store is "
                    "last depends on the iteration; vkir.grad cannot tell it (index each "
                    "element by the loop variables, or store once after the loop)")
            if not _repeats(g, depth):
                continue
            if any(isinstance(n, BufferLoad) and n.buffer.scope == "local"
                   for i in g[0].indices for n in _nodes(i)):
                raise UnsupportedError(
                    f"vkir.grad: {buffer.name!r} is stored more than once{where(stores[-1].node)} "
                    "at an index read from a local variable, so which store is last cannot be "
                    "told; compute the index from loop variables and lets")
            count = sum(len(v) for v in scopes.values())
            flag = decl_buffer((1,), "int32", f"{buffer.name}_last{count}", scope="local")
            for s in g:
                flags[id(s.node)] = flag
            scopes.setdefault(id(scope) if scope is not None else None, []).append(flag)
        forms = [index_forms(g[0].indices, serial, lets) for g in groups]
        for i, g in enumerate(groups):
            for k, h in enumerate(groups[i + 1:], i + 1):
                if all(s.add for s in g + h) or disjoint(forms[i], forms[k], serial):
                    continue
                later = max(g + h, key=lambda s: _line(s.node))
                other = (h if any(s is later for s in g) else g)[0]
                raise UnsupportedError(
                    f"vkir.grad: the {'atomic_add into' if later.add else 'store to'} "
                    f"{buffer.name!r}{where(later.node)} may write an "
                    f"element that the {'atomic_add' if other.add else 'store'}"
                    f"{where(other.node)} also writes, and which of them is last cannot be told "
                    "(indices that may meet, in one iteration of a serial loop or across "
                    "iterations, or that depend on data); write each element through one "
                    "index expression")
    return Plan(flags, {k: tuple(v) for k, v in scopes.items()})


def _line(node) -> int:
    span = getattr(node, "span", None)
    return span.line if span is not None else 0


def _collect(node, outputs, chain, out) -> None:
    """Append to `out` a Site for every store or atomic_add statement into `outputs`."""
    if isinstance(node, BufferStore):
        if node.buffer in outputs:
            out.append(Site(node, node.buffer, tuple(node.indices), False, chain))
    elif isinstance(node, Evaluate):
        v = node.value
        if isinstance(v, Call) and v.op == "atomic_add" and v.args and \
                isinstance(v.args[0], BufferLoad) and v.args[0].buffer in outputs:
            out.append(Site(node, v.args[0].buffer, tuple(v.args[0].indices), True, chain))
    elif isinstance(node, SeqStmt):
        for s in node.seq:
            _collect(s, outputs, chain, out)
    elif isinstance(node, IfThenElse):
        _collect(node.then_case, outputs, chain + ((node, "then"),), out)
        if node.else_case is not None:
            _collect(node.else_case, outputs, chain + ((node, "else"),), out)
    elif isinstance(node, (For, LetStmt, AllocBuffer, DeclBuffer)):
        _collect(node.body, outputs, chain + ((node, None),), out)


def _binders(site) -> tuple:
    """For each variable the site's indices use, the enclosing statement that binds it (its
    id; None for parameters and sizes): equal indices mean one element only under one binding."""
    used = sorted({n for i in site.indices for n in _nodes(i) if isinstance(n, Var)}, key=id)
    out = []
    for var in used:
        found = None
        for n, _ in site.chain:
            if isinstance(n, For) and n.loop_var is var or isinstance(n, LetStmt) and n.var is var:
                found = id(n)
        out.append((id(var), found))
    return tuple(out)


def _groups(sites) -> list:
    """The sites grouped by equal indices (IR expressions compare by structure, variables by
    identity) under the same bindings of their variables, in order of first appearance."""
    groups = {}
    for s in sites:
        groups.setdefault((s.indices, _binders(s)), []).append(s)
    return list(groups.values())


def _common(group) -> int:
    """How many enclosing (node, branch) pairs every site of the group shares."""
    n = 0
    first = group[0].chain
    while n < len(first) and all(len(s.chain) > n and s.chain[n][0] is first[n][0]
                                 and s.chain[n][1] == first[n][1] for s in group):
        n += 1
    return n


def _scope(group):
    """(the statement whose body's adjoint holds the group's flag, its depth in the chains):
    the innermost of the binders of the index variables and the innermost parallel loop around
    every site; (None, -1) for the whole kernel."""
    used = {n for i in group[0].indices for n in _nodes(i) if isinstance(n, Var)}
    chain = group[0].chain[:_common(group)]
    depth = -1
    for d, (n, _) in enumerate(chain):
        if isinstance(n, For) and (n.kind in PARALLEL or n.loop_var in used) or \
                isinstance(n, LetStmt) and n.var in used:
            depth = d
    return (chain[depth][0] if depth >= 0 else None), depth


def _repeats(group, depth) -> bool:
    """Whether two writes of the group can run one after the other inside one run of the
    scope's body: a site inside a serial loop below the scope, or two sites not on the two
    sides of one branch."""
    for s in group:
        if any(isinstance(n, For) and n.kind not in PARALLEL and
               not (isinstance(n.extent, IntImm) and n.extent.value <= 1)
               for n, _ in s.chain[depth + 1:]):
            return True
    for i, a in enumerate(group):
        for b in group[i + 1:]:
            if not _exclusive(a, b):
                return True
    return False


def _exclusive(a, b) -> bool:
    """Whether sites a and b sit in the two branches of one IfThenElse (never both run)."""
    for (na, ba), (nb, bb) in zip(a.chain, b.chain):
        if na is not nb:
            return False
        if ba != bb:
            return True
    return False
