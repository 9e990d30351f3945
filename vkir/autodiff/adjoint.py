"""`vkir.grad(f, wrt)`: the adjoint kernel of a PrimFunc, by source transformation.

The adjoint kernel keeps f's parameters, then takes `d_<name>` for every buffer f writes (the
seeds: d loss / d output) and for every `wrt` buffer (where the gradients accumulate, +=). It
runs f's grid: parallel loops (thread bindings) stay as they are, and each invocation runs its
own statements backwards.

Running backwards needs the values of the invocation's mutable scalars (local buffers) as they were
when each statement ran. The transformation recomputes them instead of storing them: the adjoint of
a statement assumes the locals hold their values from before it; a sequence replays its earlier
statements (forward, without their global writes) from a snapshot only when a later statement's
adjoint reads a local that an earlier one changed, and a serial loop replays its first k iterations
before the adjoint of iteration k only when its body's adjoint reads a local the body writes
(otherwise the loop runs backwards in linear time: the usual accumulation `acc = acc + g(x)` needs
no replay). What an adjoint reads is taken from the generated adjoint code (`_local_reads`), not
from the statement: `acc = acc + x * w` reads acc, its adjoint not. Inside a serial loop, adjoints
added into one gradient element in every iteration are summed in a local first
(vkir.autodiff.loop_sums). Lets stay in place; each let gets an adjoint scalar. A let reads the
locals in its value into variables where it stands (its body's adjoint may change them), and its
adjoint flows through those variables into the locals' adjoints.

Global adjoints: a read `x[idx]` adds to `d_x[idx]`, with an atomic add unless the index is a
one-to-one function of the invocation's thread indices and its own serial loop indices, the same
for every read of x (no two invocations share the element; float32 only: a shared float64 read
is refused). `Setup.stage_one(plan)` leaves the reads a vkir.autodiff.gather plan sums to
gather kernels (vkir.autodiff.staged). A store into an
output takes the element's seed only where it is the last store of that element
(vkir.autodiff.overwrites). What is not differentiable yet raises UnsupportedError naming the
construct and its line: barriers and shared memory, subgroup operations, integer outputs,
atomics other than a float atomic_add used as a statement, reading a buffer f writes, stores of
which the last cannot be told.
"""

from __future__ import annotations

import itertools

from ..errors import ArgumentError, UnsupportedError
from ..ir import (AllocBuffer, BufferLoad, BufferStore, Call, DeclBuffer, Evaluate, For,
                  IfThenElse, IntImm, LetStmt, PrimFunc, SeqStmt, Var, decl_buffer, seq,
                  substitute)
from ..ir import walk as _nodes
from .derivatives import NOP, Propagate, build, fconst, is_float, where
from .indexing import injective, linear
from .loop_sums import keep_local
from .overwrites import plan as _last_stores
from .vector_locals import scalarize as _scalarize_vector_locals

PARALLEL = ("thread_binding", "parallel")


def walk(node, fn):
    """Call fn on every IR node under node (pre-order)."""
    for n in _nodes(node):
        fn(n)
_ids = itertools.count()


def grad(f: PrimFunc, wrt) -> PrimFunc:
    """The adjoint PrimFunc of f with respect to the float buffers named in `wrt` (a name or a
    sequence of names): f's parameters, then `d_<name>` for each buffer f writes (parameter
    order), then `d_<name>` for each `wrt` name (its order). Running it adds d(outputs . seeds) /
    d(wrt) into the d_<wrt> buffers, the seeds being the d_<output> buffers."""
    setup = prepare(f, wrt)
    for buf, read in setup.shared.items():
        if buf.dtype != "float32":
            raise UnsupportedError(
                f"vkir.grad: several invocations of {setup.func.name} may read the same element "
                f"of {buf.name!r}{where(read)}, so the adjoint adds into d_{buf.name} with "
                f"T.atomic_add, which has no {buf.dtype} form (float32 only); make each "
                "invocation read its own elements, or take the gradient in float32")
    return setup.adjoint(setup.stage_one(None), setup.func.name + "_grad")


class Setup:
    """What every adjoint of f shares: f (vector locals scalarized), the seed and gradient
    buffers, the wrt buffers whose reads invocations may share, and the last-store flags."""

    def __init__(self, func, seeds, grads, shared, last):
        self.func, self.seeds, self.grads, self.shared, self.last = \
            func, seeds, grads, shared, last

    def stage_one(self, gather):
        """The per-invocation adjoint body; `gather` (vkir.autodiff.gather.Plan or None): the
        reads it leaves to gather kernels."""
        return self.last.scoped(None, _Adjoint(self.seeds, self.grads, self.shared, self.last,
                                               gather).stmt(self.func.body))

    def params(self, extra=()):
        """(params, buffer_map) of an adjoint kernel: f's, the seeds, the gradients, `extra`."""
        f = self.func
        added = list(self.seeds.values()) + list(self.grads.values()) + list(extra)
        bmap = dict(f.buffer_map)
        bmap.update({b.data: b for b in added})
        return list(f.params) + [b.data for b in added], bmap

    def adjoint(self, body, name, extra=()):
        """A PrimFunc with the adjoint parameters (and `extra` buffers) and `body`."""
        params, bmap = self.params(extra)
        return PrimFunc(params, body, bmap, self.func.attrs.set("global_symbol", name))


def prepare(f: PrimFunc, wrt) -> Setup:
    """Check f and `wrt` for differentiation (ArgumentError/UnsupportedError naming what is
    wrong) and make the adjoint buffers (see `grad`)."""
    if not isinstance(f, PrimFunc):
        raise ArgumentError(f"vkir.grad: expected a PrimFunc, got {type(f).__name__}")
    f = _scalarize_vector_locals(f)   # vector locals and lets: one scalar per lane
    wrt = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    by_name = {f.buffer_map[p].name: f.buffer_map[p] for p in f.params if p in f.buffer_map}
    written = _written(f.body)
    for name in wrt:
        buf = by_name.get(name)
        if buf is None:
            raise ArgumentError(f"vkir.grad: {f.name} has no buffer parameter {name!r} "
                                f"(buffers: {', '.join(by_name) or 'none'})")
        if not buf.dtype.is_float:
            raise ArgumentError(f"vkir.grad: wrt buffer {name!r} is {buf.dtype}; gradients are "
                                "taken with respect to float buffers")
        if buf in written:
            raise UnsupportedError(f"vkir.grad: wrt buffer {name!r} is written by {f.name}; "
                                   "differentiate with respect to its inputs")
    if len(set(wrt)) != len(wrt):
        raise ArgumentError(f"vkir.grad: wrt names a buffer twice: {list(wrt)}")
    outputs = [f.buffer_map[p] for p in f.params if f.buffer_map.get(p) in written]
    for buf, node in written.items():
        if not buf.dtype.is_float:
            raise UnsupportedError(f"vkir.grad: {f.name} writes integer output {buf.name!r}"
                                   f"{where(node)}; integer outputs are not differentiable")
    _check(f.body, set(written))
    seeds = {b: decl_buffer(b.shape, b.dtype, f"d_{b.name}") for b in outputs}
    grads = {by_name[n]: decl_buffer(by_name[n].shape, by_name[n].dtype, f"d_{n}") for n in wrt}
    shared = _shared_reads(f.body, set(grads))
    return Setup(f, seeds, grads, shared, _last_stores(f.body, outputs))


# -- checks ---------------------------------------------------------------------------------------
def _written(body) -> dict:
    """Global buffers the body writes (store or atomic), each with one writing node."""
    out = {}

    def visit(node):
        if isinstance(node, BufferStore) and node.buffer.scope == "global":
            out.setdefault(node.buffer, node)
        elif isinstance(node, Call) and node.op.startswith("atomic_") and node.args and \
                isinstance(node.args[0], BufferLoad) and node.args[0].buffer.scope == "global":
            out.setdefault(node.args[0].buffer, node)

    walk(body, visit)
    return out


def _check(body, written):
    targets = {id(c.args[0]) for c in _atomics(body) if c.args}

    def visit(node):
        name = type(node).__name__
        if name in ("Barrier", "SubgroupBarrier") or name.startswith("Async"):
            raise UnsupportedError(f"vkir.grad: barrier{where(node)} is not differentiable yet "
                                   "(barriers and shared memory)")
        if isinstance(node, (AllocBuffer, DeclBuffer)) and node.buffer.scope == "shared":
            raise UnsupportedError(f"vkir.grad: shared memory {node.buffer.name!r}{where(node)} "
                                   "is not differentiable yet (barriers and shared memory)")
        if isinstance(node, Call) and node.op.startswith("subgroup_"):
            raise UnsupportedError(f"vkir.grad: T.{node.op}{where(node)} is not differentiable "
                                   "yet (subgroup operations)")
        if isinstance(node, BufferLoad) and node.buffer in written and id(node) not in targets:
            raise UnsupportedError(f"vkir.grad: reads {node.buffer.name!r}{where(node)}, a "
                                   "buffer the kernel writes (a buffer read after being "
                                   "overwritten)")
        if type(node).__name__ == "While":
            raise UnsupportedError(f"vkir.grad: while loop{where(node)} is not differentiable "
                                   "yet (use T.serial)")

    walk(body, visit)
    for node in _atomics(body):
        if node.op != "atomic_add" or not node.dtype.is_float:
            raise UnsupportedError(f"vkir.grad: T.{node.op} on {node.dtype}{where(node)} is not "
                                   "differentiable (only a float T.atomic_add)")


def _atomics(body):
    found = []
    walk(body, lambda n: found.append(n) if isinstance(n, Call) and n.op.startswith("atomic_")
         else None)
    return found


def _shared_reads(body, grads) -> dict:
    """The wrt buffers one of whose reads may share an element with another invocation, each
    with the first such read."""
    shared = {}
    _Reads(grads, shared).visit(body, [], {})
    return shared


class _Reads:
    def __init__(self, grads, shared):
        self.grads, self.shared = grads, shared
        self.signatures = {}

    def visit(self, node, loops, lets):
        if isinstance(node, For):
            if node.kind in PARALLEL:
                self.thread(node, loops)
            self.expr(node.extent, loops, lets)
            self.visit(node.body, loops + [(node.loop_var, node.extent, node.kind in PARALLEL)],
                       lets)
        elif isinstance(node, LetStmt):
            self.expr(node.value, loops, lets)
            self.visit(node.body, loops, {**lets, node.var: node.value})
        elif isinstance(node, SeqStmt):
            for s in node.seq:
                self.visit(s, loops, lets)
        elif isinstance(node, IfThenElse):
            self.expr(node.condition, loops, lets)
            self.visit(node.then_case, loops, lets)
            if node.else_case is not None:
                self.visit(node.else_case, loops, lets)
        elif isinstance(node, (AllocBuffer, DeclBuffer)):
            self.visit(node.body, loops, lets)
        elif isinstance(node, BufferStore):
            self.expr(node.value, loops, lets)
            for i in node.indices:
                self.expr(i, loops, lets)
        elif isinstance(node, Evaluate):
            self.expr(node.value, loops, lets)

    def thread(self, node, loops):
        pass

    def expr(self, e, loops, lets):
        def visit(n):
            if isinstance(n, BufferLoad) and n.buffer in self.grads and \
                    (not injective(n.indices, n.buffer, loops, lets) or
                     self.signature(n, loops, lets) != self.signatures.setdefault(
                         n.buffer, self.signature(n, loops, lets))):
                self.shared.setdefault(n.buffer, n)
        walk(e, visit)

    @staticmethod
    def signature(n, loops, lets):
        """What must agree between reads of one buffer, each injective, for no two invocations
        to reach one element through different reads (`x[i]` and `x[i + 1]` do): the flat index
        form up to renaming serial loop variables of equal extent."""
        forms = [linear(i, lets) for i in n.indices]
        if any(f is None for f in forms):
            return object()   # unique: never equal to another read's
        info = {var: (extent, parallel) for var, extent, parallel in loops}
        dims = []
        for form in forms:
            fixed = tuple(sorted((var.name, id(var), c) for var, c in form.items()
                                 if var is not None and c and info.get(var, (0, True))[1]))
            serial = tuple(sorted((c, str(info[var][0])) for var, c in form.items()
                                  if var is not None and c and not info.get(var, (0, True))[1]))
            dims.append((form.get(None, 0), fixed, serial))
        return tuple(dims)


# -- the transformation ---------------------------------------------------------------------------
class _Adjoint:
    def __init__(self, seeds, grads, shared, last, gather=None):
        self.seeds, self.grads, self.shared = seeds, grads, shared
        self.last = last  # the last-store flags (vkir.autodiff.overwrites)
        self.gather = gather  # reads left to gather kernels (vkir.autodiff.gather.Plan)
        self.current = None   # the store or evaluate statement being differentiated
        self.local_adj = {}  # local float buffer -> its adjoint buffer
        self.var_adj = {}  # float let var -> its adjoint scalar buffer
        self.captured = {}  # variable holding a local's value at a let -> that local's load
        self.prop = Propagate(self._load_target, self._var_target)

    def _load_target(self, load):
        b = load.buffer
        if b in self.grads:
            if self.gather is not None and b in self.gather.sites:
                # summed by b's gather kernel; some reads leave their contribution in scratch
                found = self.gather.contribution(self.current, load)
                return None if found is None else (found[0], found[1], False)
            return self.grads[b], load.indices, b in self.shared
        if b in self.local_adj:
            return self.local_adj[b], load.indices, False
        return None

    def _var_target(self, var):
        if var in self.captured:   # a local's value read by a let: its adjoint is the local's
            return self._load_target(self.captured[var])
        adj = self.var_adj.get(var)
        return (adj, (IntImm("int32", 0),), False) if adj is not None else None

    # forward replay: the statement's effect on locals, without global writes; fresh variables
    def replay(self, s):
        if isinstance(s, BufferStore):
            return s if s.buffer.scope == "local" else NOP
        if isinstance(s, Evaluate):
            return NOP
        if isinstance(s, SeqStmt):
            return seq(*[self.replay(x) for x in s.seq])
        if isinstance(s, IfThenElse):
            return IfThenElse(s.condition, self.replay(s.then_case),
                              None if s.else_case is None else self.replay(s.else_case))
        if isinstance(s, LetStmt):
            var = Var(s.var.name, s.var.dtype)
            return LetStmt(var, s.value, substitute(self.replay(s.body), {s.var: var}))
        if isinstance(s, For):
            var = Var(s.loop_var.name, s.loop_var.dtype)
            kind = "serial" if s.kind in ("unrolled", "vectorized") else s.kind
            return For(var, s.min, s.extent, kind, substitute(self.replay(s.body), {s.loop_var: var}))
        if isinstance(s, (AllocBuffer, DeclBuffer)):
            buf = decl_buffer(s.buffer.shape, s.buffer.dtype, s.buffer.name, scope=s.buffer.scope)
            body = _rebuffer(self.replay(s.body), s.buffer, buf)
            return type(s)(buf, body)
        return NOP

    def stmt(self, s):
        """The adjoint of s, run with the locals as they were before s."""
        if isinstance(s, (BufferStore, Evaluate)):
            self.current = s
            found = self.leaf(s)
            self.current = None
            if found is NOP or self.gather is None or not self.gather.scratch.get(id(s)):
                return found
            # the reads' contributions left in scratch start from zero
            zeros = [BufferStore(b, fconst(0, BufferLoad(b, idx)), idx)
                     for b, idx, what in self.gather.scratch[id(s)]
                     if isinstance(what, BufferLoad)]
            return seq(*zeros, found) if zeros else found
        return self.compound(s)

    def leaf(self, s):
        """The adjoint of store or evaluate statement s."""
        if isinstance(s, BufferStore):
            items = []
            t = Var(f"adj_s{next(_ids)}", s.value.dtype)
            if s.buffer in self.seeds:
                items.append(("let", t, BufferLoad(self.seeds[s.buffer], s.indices)))
                self.prop.expr(s.value, t, items)
                return self.last.guard(s, build(items), add=False)
            if s.buffer in self.local_adj:
                adj = self.local_adj[s.buffer]
                items += [("let", t, BufferLoad(adj, s.indices)),
                          BufferStore(adj, fconst(0, t), s.indices)]
                scratch = self.gather.seed(s) if self.gather is not None else None
                if scratch is not None:   # the seed, for the gather kernels
                    items.append(BufferStore(scratch[0], t, scratch[1]))
            else:
                return NOP
            self.prop.expr(s.value, t, items)
            return build(items)
        if isinstance(s, Evaluate):
            v = s.value
            if isinstance(v, Call) and v.op == "atomic_add" and v.args[0].buffer in self.seeds:
                items = []
                t = Var(f"adj_s{next(_ids)}", v.dtype)
                items.append(("let", t, BufferLoad(self.seeds[v.args[0].buffer],
                                                   v.args[0].indices)))
                self.prop.expr(v.args[1], t, items)
                return self.last.guard(s, build(items), add=True)
        return NOP

    def compound(self, s):
        """The adjoint of a statement that holds others."""
        if isinstance(s, SeqStmt):
            return self.sequence(s.seq)
        if isinstance(s, IfThenElse):
            return IfThenElse(s.condition, self.stmt(s.then_case),
                              None if s.else_case is None else self.stmt(s.else_case))
        if isinstance(s, LetStmt):
            return self.let(s)
        if isinstance(s, For):
            return self.loop(s)
        if isinstance(s, (AllocBuffer, DeclBuffer)):
            if s.buffer.scope != "local" or not s.buffer.dtype.is_float:
                return type(s)(s.buffer, self.stmt(s.body))
            adj = decl_buffer(s.buffer.shape, s.buffer.dtype, f"d_{s.buffer.name}", scope="local")
            self.local_adj[s.buffer] = adj
            return type(s)(s.buffer, AllocBuffer(adj, seq(_zero(adj), self.stmt(s.body))))
        raise UnsupportedError(f"vkir.grad: {type(s).__name__}{where(s)} is not differentiable")

    def body(self, s):
        """The adjoint of the body of loop or let s, with the last-store flags that live there."""
        return self.last.scoped(s, self.stmt(s.body))

    def let(self, s):
        if not is_float(s.value):
            return LetStmt(s.var, s.value, self.body(s))
        adj = decl_buffer((1,), s.var.dtype, f"d_{s.var.name}", scope="local")
        self.var_adj[s.var] = adj
        # the locals s.value reads are captured now: the body's adjoint may change them. Each
        # captured variable stands for its local element as it was at the let, so the let's
        # adjoint flows back into that element's adjoint (d_acc) after the body's adjoint
        captured, value = _capture(s.value)
        self.captured.update(captured)
        items = [("let", v, load) for v, load in captured]
        items.append(("let", s.var, value))
        t = Var(f"adj_l{next(_ids)}", s.var.dtype)
        inner = [("let", t, BufferLoad(adj, (IntImm("int32", 0),)))]
        self.prop.expr(value, t, inner)
        items.append(AllocBuffer(adj, seq(_zero(adj), self.body(s), build(inner))))
        return build(items)

    def sequence(self, stmts):
        stmts = list(stmts)
        adjoints = [None] * len(stmts)
        for i in range(len(stmts) - 1, -1, -1):   # generated last to first, as they run
            adjoints[i] = self.stmt(stmts[i])
        needs = [_local_reads(x) for x in adjoints]
        writes = [_local_writes(x) for x in stmts]
        all_writes = set().union(*writes) if writes else set()
        snap = {b: decl_buffer(b.shape, b.dtype, f"{b.name}_snap", scope="local")
                for b in all_writes}
        out, dirty, used_snap = [], set(), False
        for i in range(len(stmts) - 1, -1, -1):
            prefix = set().union(*writes[:i]) if i else set()
            if needs[i] & (prefix | dirty):
                used_snap = True
                out += [_copy(snap, restore=True), self.replay(seq(*stmts[:i])) if i else NOP]
                dirty = set(prefix)
            out.append(adjoints[i])
            dirty |= writes[i]
        body = seq(*[x for x in out if x is not NOP]) if any(x is not NOP for x in out) else NOP
        if not used_snap:
            return body
        body = seq(_copy(snap, restore=False), body)
        for b, s_buf in snap.items():
            body = AllocBuffer(s_buf, body)
        return body

    def loop(self, s):
        if s.kind in PARALLEL:
            return For(s.loop_var, s.min, s.extent, s.kind, self.body(s), s.thread,
                       s.annotations)
        found = self.serial_loop(s)
        if self.gather is None or not self.gather.before(s):
            return found
        # the seeds of the loop's accumulations, for the gather kernels: the locals' adjoints now
        return seq(*[BufferStore(buf, BufferLoad(self.local_adj[local], li), idx)
                     for buf, idx, local, li in self.gather.before(s)], found)

    def serial_loop(self, s):
        writes = _local_writes(s.body)
        adjoint = self.body(s)
        r = Var(f"{s.loop_var.name}_rev", s.loop_var.dtype)
        k = s.min + s.extent - 1 - r
        targets = set(self.grads.values())
        if not _local_reads(adjoint) & writes:
            # an accumulation (`acc = acc + g(x)`): the body's adjoint never reads a value the
            # body changes, so the loop runs backwards once, linear in its trip count
            return keep_local(For(r, IntImm(r.dtype, 0), s.extent, "serial",
                                  LetStmt(s.loop_var, k, adjoint)), targets)
        snap = {b: decl_buffer(b.shape, b.dtype, f"{b.name}_snap", scope="local") for b in writes}
        j = Var(f"{s.loop_var.name}_re", s.loop_var.dtype)
        redo = For(j, s.min, k - s.min, "serial",
                   substitute(self.replay(s.body), {s.loop_var: j}))
        body = keep_local(For(r, IntImm(r.dtype, 0), s.extent, "serial",
                              LetStmt(s.loop_var, k, seq(_copy(snap, restore=True), redo,
                                                         adjoint))), targets)
        body = seq(_copy(snap, restore=False), body)
        for b, s_buf in snap.items():
            body = AllocBuffer(s_buf, body)
        return body



def _local_reads(adjoint) -> set:
    """The local buffers a generated adjoint statement loads: a superset of the locals whose
    values from before its statement it needs (partials, conditions, indices, snapshots). Taken
    from the generated code, not the statement: `acc = acc + x * w` reads acc, but its adjoint
    (d_x += t * w, d_w += t * x, d_acc unchanged) does not, so no replay is needed for it."""
    found = set()
    walk(adjoint, lambda n: found.add(n.buffer) if isinstance(n, BufferLoad)
         and n.buffer.scope == "local" else None)
    return found


def _local_writes(s) -> set:
    found, scoped = set(), set()

    def visit(n):
        if isinstance(n, BufferStore) and n.buffer.scope == "local":
            found.add(n.buffer)
        elif isinstance(n, (AllocBuffer, DeclBuffer)):
            scoped.add(n.buffer)

    walk(s, visit)
    return found - scoped


def _zero(buf):
    n = 1
    for d in buf.shape:
        n *= d.value if isinstance(d, IntImm) else 0
    if n == 0:
        raise UnsupportedError(f"vkir.grad: local buffer {buf.name!r} needs a constant shape")
    return seq(*[BufferStore(buf, fconst(0, Var("z", buf.dtype)), _unflat(buf, i))
                 for i in range(n)])


def _unflat(buf, i):
    idx = []
    for d in reversed(buf.shape):
        idx.insert(0, IntImm("int32", i % d.value))
        i //= d.value
    return tuple(idx)


def _copy(snap, restore):
    out = []
    for b, s in snap.items():
        n = 1
        for d in b.shape:
            n *= d.value
        for i in range(n):
            ix = _unflat(b, i)
            src, dst = (s, b) if restore else (b, s)
            out.append(BufferStore(dst, BufferLoad(src, ix), ix))
    return seq(*out) if out else NOP


def _capture(value):
    """value with each local buffer load replaced by a fresh variable: ([(var, load)], value).
    A load's indices are captured first, so each load names the element read at the let."""
    loads = []
    walk(value, lambda n: loads.append(n) if isinstance(n, BufferLoad)
         and n.buffer.scope == "local" else None)
    if not loads:
        return [], value
    from ..ir import Mutator

    captured = []

    class Cap(Mutator):
        def visit_BufferLoad(self, node):
            node = self.generic_visit(node)
            if node.buffer.scope != "local":
                return node
            var = Var(f"{node.buffer.name}_v{next(_ids)}", node.dtype)
            captured.append((var, node))
            return var

    return captured, Cap().visit(value)


def _rebuffer(stmt, old, new):
    from ..ir import Mutator

    class Re(Mutator):
        def visit_BufferLoad(self, node):
            node = self.generic_visit(node)
            return BufferLoad(new, node.indices) if node.buffer is old else node

        def visit_BufferStore(self, node):
            node = self.generic_visit(node)
            return BufferStore(new, node.value, node.indices) if node.buffer is old else node

    return Re().visit(stmt)
