"""Gather-form adjoints of shared reads: which reads can skip the atomic add, and the kernels that
sum their contributions instead.

When invocations share an element of a wrt buffer (`w[k, j]` read by every i of a dense layer),
the one-kernel adjoint adds into d_w with contended atomics. Where the read's index map can be
inverted, the sum can instead be gathered by a kernel launched over d_w's own index space: each
invocation of it owns one element e, enumerates the iterations (parallel indices p, serial
indices s) whose read reaches e, and adds up their contributions seed(p, s) * d value / d read,
one writer per element, no atomics.

A statement's read qualifies (`plan`) when
- its indices are affine in the loop variables, positive coefficients forming a mixed radix in
  each dimension, each loop variable in one dimension at most (so the variables the index uses
  are decoded from e by division, and the others are looped over), the loops rectangular;
- the derivative of the statement's value with respect to the read, its branch conditions and the
  lets it uses read no local (mutable) value, so the gather kernel recomputes them from the inputs;
- its seed is known per invocation: a store into an output without a last-store flag (the seed is
  d_<output> at the store's index), or a store into a float local outside serial loops, or an
  accumulation `acc = acc + g(x)` / `acc - g(x)` in serial loops in which acc is only
  accumulated (its adjoint, so the seed, is the same in every iteration). A local's seed is
  written by the first kernel into a scratch buffer indexed by the invocation's parallel indices.

A buffer is gathered when every read of it that invocations may share qualifies; the others keep
their atomic adds (a data-dependent index such as `w[idx[i]]`, a read under a condition on a
local, a product accumulation `acc = acc * w[k]`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import (Add, AllocBuffer, And, BufferLoad, BufferStore, Call, DeclBuffer, Evaluate,
                  FloorDiv, For, GE, IfThenElse, IntImm, LT, Let, LetStmt, Max, Min, Not,
                  PrimFunc, SeqStmt, Sub, Var, decl_buffer, seq, substitute)
from ..ir import walk
from ..ir.structural import structural_equal
from .derivatives import Propagate, build, fconst
from .indexing import linear

PARALLEL = ("thread_binding", "parallel")
INT32 = "int32"


@dataclass(frozen=True, eq=False)
class Site:
    """One read of a wrt buffer in one statement whose contributions are gathered: the statement,
    the read, its enclosing loops ((var, min, extent, parallel) outermost first), lets and
    conditions, and where the gather reads each iteration's factor from (`seed` at
    `seed_indices`): with `direct` False the statement's seed (an output's seed buffer, or a
    scratch buffer the first kernel writes a local's seed into), which the gather multiplies by
    the recomputed derivative; with `direct` True a scratch buffer holding the read's whole
    contribution, written by the first kernel (a statement run once per invocation)."""

    node: object
    load: object
    loops: tuple
    lets: tuple
    conds: tuple
    seed: object
    seed_indices: tuple
    direct: bool


@dataclass(frozen=True, eq=False)
class Plan:
    """The gathered reads: {wrt buffer: [Site]}; for the first kernel, the scratch buffers it
    writes: {id(statement or serial loop): [(scratch buffer, parallel indices, what)]}, what
    being a BufferLoad (a statement's: that read's contribution), None (a statement's: its
    seed) or (local buffer, indices) (a loop's: that local's adjoint before the loop's adjoint,
    the seed of every accumulation of it in the loop)."""

    sites: dict
    scratch: dict

    def contribution(self, node, load):
        """(scratch buffer, indices) where the first kernel puts the adjoint of `load` in
        statement `node`, or None."""
        for buf, idx, read in self.scratch.get(id(node), ()):
            if isinstance(read, BufferLoad) and read.buffer is load.buffer and \
                    structural_equal(tuple(read.indices), tuple(load.indices)):
                return buf, idx
        return None

    def seed(self, node):
        """(scratch buffer, indices) where the first kernel puts statement `node`'s seed, or
        None."""
        for buf, idx, what in self.scratch.get(id(node), ()):
            if what is None:
                return buf, idx
        return None

    def before(self, loop):
        """[(scratch buffer, indices, local buffer, local indices)]: the locals' adjoints the
        first kernel stores before serial loop `loop`'s adjoint."""
        return [(buf, idx, what[0], what[1]) for buf, idx, what in self.scratch.get(id(loop), ())
                if isinstance(what, tuple)]


def plan(body, shared, seeds, grads, last, sizes) -> Plan:
    """Which reads of the `shared` wrt buffers are gathered (see the module's docstring).
    `seeds`/`grads`: {buffer: adjoint buffer}; `last`: the last-store flags
    (vkir.autodiff.overwrites); `sizes`: the size variables a scratch shape may use."""
    found, refused = {}, set()
    w = _Walk(shared, seeds, last, sizes, found, refused)
    w.visit(body, (), (), (), frozenset())
    sites = {b: ss for b, ss in found.items() if b not in refused}
    scratch = {}
    for ss in sites.values():
        for s in ss:
            if s.seed in seeds.values():
                continue
            if s.seed in w.hoisted:
                loop, local, indices = w.hoisted[s.seed]
                key, entry = id(loop), (s.seed, s.seed_indices, (local, indices))
            else:
                key, entry = id(s.node), (s.seed, s.seed_indices, s.load if s.direct else None)
            kept = scratch.setdefault(key, [])
            if not any(e[0] is entry[0] for e in kept):
                kept.append(entry)
    return Plan(sites, scratch)


class _Walk:
    def __init__(self, shared, seeds, last, sizes, found, refused):
        self.shared, self.seeds, self.last = shared, seeds, last
        self.sizes, self.found, self.refused = sizes, found, refused
        self.scratch = {}   # id(statement) or (id(statement), k) -> its scratch buffer
        self.hoisted = {}   # scratch buffer -> (serial loop, local, indices): stored before it
        self.followed = {}  # id(store) -> the serial loop right after it in its sequence

    def visit(self, node, loops, lets, conds, bad):
        if isinstance(node, For):
            self.visit(node.body, loops + ((node, node.kind in PARALLEL),), lets, conds, bad)
        elif isinstance(node, LetStmt):
            # a shared read in a let's value reaches d_<buffer> through the let's adjoint: atomic
            self.refused.update(n.buffer for n in walk(node.value)
                                if isinstance(n, BufferLoad) and n.buffer in self.shared)
            if _reads_local(node.value, bad):
                self.visit(node.body, loops, lets, conds, bad | {node.var})
            else:
                self.visit(node.body, loops, lets + (node,), conds, bad)
        elif isinstance(node, SeqStmt):
            for s, after in zip(node.seq, list(node.seq[1:]) + [None]):
                if isinstance(s, BufferStore) and isinstance(after, For) and \
                        after.kind not in PARALLEL:
                    self.followed[id(s)] = after
                self.visit(s, loops, lets, conds, bad)
        elif isinstance(node, IfThenElse):
            self.visit(node.then_case, loops, lets, conds + (node.condition,), bad)
            if node.else_case is not None:
                self.visit(node.else_case, loops, lets, conds + (Not(node.condition),), bad)
        elif isinstance(node, (AllocBuffer, DeclBuffer)):
            self.visit(node.body, loops, lets, conds, bad)
        elif isinstance(node, (BufferStore, Evaluate)):
            self.statement(node, loops, lets, conds, bad)

    def statement(self, node, loops, lets, conds, bad):
        value = node.value
        if isinstance(node, Evaluate):
            if not (isinstance(value, Call) and value.op == "atomic_add"):
                return
            value = value.args[1]
        buffers = {n.buffer for n in walk(value) if isinstance(n, BufferLoad)
                   and n.buffer in self.shared}
        for b in buffers:
            sites = self.sites(node, value, b, loops, lets, conds, bad)
            if sites is None:
                self.refused.add(b)
            else:
                self.found.setdefault(b, []).extend(sites)

    def sites(self, node, value, b, loops, lets, conds, bad):
        """The Sites of the reads of b in statement `node`, or None where one does not invert."""
        parallel = [(f.loop_var, f.min, f.extent) for f, par in loops if par]
        serial = [f for f, par in loops if not par]
        if not parallel or any(isinstance(n, Let) for n in walk(value)):
            return None
        loop_vars = {f.loop_var for f, _ in loops}
        for f, _ in loops:   # rectangular loops with ranges the gather can recompute
            for e in (f.min, f.extent):
                if _reads_local(e, bad) or any(isinstance(n, Var) and n in loop_vars
                                               for n in walk(e)):
                    return None
        if any(_reads_local(c, bad) for c in conds):
            return None
        int_lets = {s.var: s.value for s in lets if not s.value.dtype.is_float}
        reads = _reads_of(_without_self(node, value), b)
        if any(_decode_plan(r.indices, loops, int_lets) is None for r in reads):
            return None
        where_ = tuple((f.loop_var, f.min, f.extent, par) for f, par in loops)
        seed = self.seed(node, parallel, serial, bad)
        if seed is not None and self.recomputable(node, value, b, bad):
            return [Site(node, r, where_, lets, conds, seed[0], seed[1], False) for r in reads]
        # the derivative needs a local: where the statement runs once per invocation, the first
        # kernel stores each read's contribution for the gather
        if serial or not self.seeded(node, bad):
            return None
        out = []
        for k, r in enumerate(reads):
            found = self.scratch_for((id(node), k), parallel, b.dtype, f"adj_{b.name}")
            if found is None:
                return None
            out.append(Site(node, r, where_, lets, conds, found[0], found[1], True))
        return out

    def recomputable(self, node, value, b, bad) -> bool:
        """Whether the derivative of the statement's value by its reads of b reads no local."""
        probe = Var("probe", b.dtype)
        items = []
        Propagate(lambda ld: (b, ld.indices, False) if ld.buffer is b else None,
                  lambda v: None).expr(_without_self(node, value), probe, items)
        return not any(_reads_local(x if not isinstance(x, tuple) else x[2], bad) or
                       (not isinstance(x, tuple) and _reads_local(x, bad)) for x in items)

    def seeded(self, node, bad) -> bool:
        """Whether the statement's seed reaches it unguarded (no last-store flag)."""
        if isinstance(node, Evaluate):
            target = node.value.args[0]
            return target.buffer in self.seeds and id(node) not in self.last.flags
        if node.buffer in self.seeds:
            return id(node) not in self.last.flags
        return node.buffer.scope == "local" and node.buffer.dtype.is_float

    def seed(self, node, parallel, serial, bad):
        """(buffer, indices) the seed of `node` is read from in the gather, or None."""
        if not self.seeded(node, bad):
            return None
        if isinstance(node, Evaluate):
            target = node.value.args[0]
            if any(_reads_local(i, bad) for i in target.indices):
                return None
            return self.seeds[target.buffer], target.indices
        if node.buffer in self.seeds:
            if any(_reads_local(i, bad) for i in node.indices):
                return None
            return self.seeds[node.buffer], node.indices
        if not all(isinstance(i, IntImm) for i in node.indices):
            return None
        if serial and not _accumulates_only(serial[0], node.buffer):
            return None
        # the seed of an accumulation is the local's adjoint in every iteration of the
        # outermost serial loop (it only accumulates there): the first kernel stores it once,
        # before that loop's adjoint, whose reverse loop may then do nothing at all. A store
        # right before such a loop (`acc = b[j]`) has that seed too: one scratch for both
        loop = serial[0] if serial else self.followed.get(id(node))
        if loop is not None and not serial and not _accumulates_only(loop, node.buffer):
            loop = None
        key = id(node) if loop is None else \
            (id(loop), node.buffer, tuple(i.value for i in node.indices))
        found = self.scratch_for(key, parallel, node.buffer.dtype, f"seed_{node.buffer.name}")
        if found is not None and loop is not None:
            self.hoisted[found[0]] = (loop, node.buffer, node.indices)
        return found

    def scratch_for(self, key, parallel, dtype, name):
        """(scratch buffer, indices): one element per invocation, made once per key; None where
        a parallel extent is not a constant or a size variable."""
        shape = []
        for _, _, extent in parallel:
            if not (isinstance(extent, IntImm) or (isinstance(extent, Var)
                                                   and extent in self.sizes)):
                return None
            shape.append(extent)
        buf = self.scratch.get(key)
        if buf is None:
            buf = self.scratch[key] = decl_buffer(tuple(shape), dtype,
                                                  f"{name}{len(self.scratch)}")
        return buf, tuple(v - lo if not (isinstance(lo, IntImm) and lo.value == 0) else v
                          for v, lo, _ in parallel)


def _reads_local(e, bad) -> bool:
    return any((isinstance(n, BufferLoad) and n.buffer.scope != "global") or
               (isinstance(n, Var) and n in bad) for n in walk(e))


def _reads_of(value, b):
    found = []
    for n in walk(value):
        if isinstance(n, BufferLoad) and n.buffer is b and \
                not any(structural_equal(tuple(n.indices), tuple(m.indices)) for m in found):
            found.append(n)
    return found


def _self_term(node, value):
    """For a store `acc[c] = acc[c] + g` (or g + acc[c], acc[c] - g): g with its sign as
    (g, +1/-1); else None."""
    if not isinstance(node, BufferStore) or node.buffer.scope != "local":
        return None

    def own(e):
        return isinstance(e, BufferLoad) and e.buffer is node.buffer and \
            structural_equal(tuple(e.indices), tuple(node.indices))

    if isinstance(value, Add) and own(value.a):
        return value.b
    if isinstance(value, Add) and own(value.b):
        return value.a
    if isinstance(value, Sub) and own(value.a):
        return -value.b
    return None


def _without_self(node, value):
    """The part of the stored value whose derivative goes to global reads: an accumulation's
    increment (its own term passes the seed on to the local unchanged), else the value."""
    g = _self_term(node, value)
    return value if g is None else g


def _accumulates_only(loop, buf) -> bool:
    """Whether inside `loop` the local `buf` is only accumulated (`buf[c] = buf[c] + g`, g not
    reading buf): then its adjoint is the same in every iteration."""
    stores = [n for n in walk(loop.body) if isinstance(n, BufferStore) and n.buffer is buf]
    loads = [n for n in walk(loop.body) if isinstance(n, BufferLoad) and n.buffer is buf]
    for s in stores:
        g = _self_term(s, s.value)
        if g is None or any(isinstance(n, BufferLoad) and n.buffer is buf for n in walk(g)):
            return False
    return len(loads) == len(stores)


def _decode_plan(indices, loops, lets):
    """Per index dimension: (constant, [(coefficient, loop var, min, extent)] by decreasing
    coefficient) when the index is affine in the loop variables with positive coefficients in
    a mixed radix and each loop variable in one dimension at most; else None."""
    info = {f.loop_var: (f.min, f.extent) for f, _ in loops}
    out, used = [], set()
    for idx in indices:
        form = linear(idx, lets)
        if form is None:
            return None
        terms, const = [], form.get(None, 0)
        for var, c in form.items():
            if var is None or c == 0:
                continue
            if var not in info or c < 0 or var in used:
                return None
            used.add(var)
            lo, extent = info[var]
            if not isinstance(lo, IntImm):
                return None
            const += c * lo.value
            if not (isinstance(extent, IntImm) and extent.value == 1):
                terms.append((c, var, lo, extent))   # (a one-trip loop: looped over, at lo)
        terms.sort(key=lambda t: -t[0])
        for (c_big, *_), (c, _, _, extent) in zip(terms, terms[1:]):
            if not isinstance(extent, IntImm) or c_big < c * extent.value:
                return None
        out.append((const, terms))
    return out


def gather_kernel(name, params, buffer_map, b, d_b, sites, attrs, split=None) -> PrimFunc:
    """The kernel over d_b's index space that adds every gathered contribution of `sites` (reads
    of wrt buffer b) into its element: one invocation per element, no atomics. With `split`
    (partial buffer, chunks) each element's sum is cut into `chunks` parts, one invocation each,
    that store into partial[flat element, chunk] for `sum_kernel` to add up: a gradient of few
    elements, each read in many iterations, still spreads over many invocations."""
    dims = [Var(f"e{k}", INT32) for k in range(len(b.shape))]
    chunk = Var("chunk", INT32) if split is not None else None
    acc = decl_buffer((1,), b.dtype, f"d_{b.name}_sum", scope="local")
    blocks = [BufferStore(acc, fconst(0, acc), (IntImm(INT32, 0),))]
    for site in sites:
        blocks.append(_block(site, dims, acc,
                             {s.var: s.value for s in site.lets if not s.value.dtype.is_float},
                             None if split is None else (chunk, split[1])))
    total = BufferLoad(acc, (IntImm(INT32, 0),))
    if split is None:
        done = BufferStore(d_b, BufferLoad(d_b, tuple(dims)) + total, tuple(dims))
    else:
        done = BufferStore(split[0], total, (_flat(dims, b.shape), chunk))
    body = AllocBuffer(acc, seq(*blocks, done))
    if split is not None:
        body = For(chunk, IntImm(INT32, 0), IntImm(INT32, split[1]), "parallel", body)
    for var, extent in reversed(list(zip(dims, b.shape))):
        body = For(var, IntImm(INT32, 0), extent, "parallel", body)
    return PrimFunc(params, body, buffer_map, attrs.set("global_symbol", name))


def sum_kernel(name, params, buffer_map, b, d_b, partial, chunks, attrs) -> PrimFunc:
    """The kernel over d_b's index space that adds the `chunks` partial sums of each element
    (from a split gather_kernel) into it."""
    dims = [Var(f"e{k}", INT32) for k in range(len(b.shape))]
    acc = decl_buffer((1,), b.dtype, f"d_{b.name}_sum", scope="local")
    zero = (IntImm(INT32, 0),)
    c = Var("chunk", INT32)
    body = AllocBuffer(acc, seq(
        BufferStore(acc, fconst(0, acc), zero),
        For(c, IntImm(INT32, 0), IntImm(INT32, chunks), "serial",
            BufferStore(acc, BufferLoad(acc, zero) +
                        BufferLoad(partial, (_flat(dims, b.shape), c)), zero)),
        BufferStore(d_b, BufferLoad(d_b, tuple(dims)) + BufferLoad(acc, zero), tuple(dims))))
    for var, extent in reversed(list(zip(dims, b.shape))):
        body = For(var, IntImm(INT32, 0), extent, "parallel", body)
    return PrimFunc(params, body, buffer_map, attrs.set("global_symbol", name))


def iterations(sites) -> int | None:
    """The most iterations one element's gather runs over (the product of the loops it does
    not decode), None where a loop's extent is not a constant."""
    most = 0
    for site in sites:
        decode = _decode_plan(site.load.indices, [(_Loop(v, lo, ext), par)
                                                  for v, lo, ext, par in site.loops],
                              {s.var: s.value for s in site.lets
                               if not s.value.dtype.is_float})
        fixed = {var for _, terms in decode for _, var, _, _ in terms}
        n = 1
        for var, _, extent, _ in site.loops:
            if var in fixed:
                continue
            if not isinstance(extent, IntImm):
                return None
            n *= extent.value
        most = max(most, n)
    return most


def _flat(dims, shape):
    """The row-major flat index of element `dims` of a buffer of constant `shape`."""
    flat = dims[0]
    for d, n in zip(dims[1:], shape[1:]):
        flat = flat * IntImm(INT32, n.value) + d
    return flat


def _block(site, dims, acc, int_lets, split=None):
    """The sum over the iterations whose read (site.load) reaches element `dims`: the decoded
    loop variables, loops over the others, the site's lets and conditions, and each iteration's
    contribution (its seed times the recomputed derivative, or the stored contribution)."""
    load = site.load
    fresh = {}
    for var, *_ in site.loops:
        fresh[var] = Var(var.name, var.dtype)
    for s in site.lets:
        fresh[s.var] = Var(s.var.name, s.var.dtype)
    decode = _decode_plan(load.indices, [(_Loop(v, lo, ext), par)
                                         for v, lo, ext, par in site.loops], int_lets)
    zero = (IntImm(INT32, 0),)
    stored = BufferLoad(site.seed, tuple(site.seed_indices))
    if site.direct:
        inner = BufferStore(acc, BufferLoad(acc, zero) + stored, zero)
    else:
        value = site.node.value if isinstance(site.node, BufferStore) \
            else site.node.value.args[1]
        t = Var("seed", load.dtype)
        items = [("let", t, stored)]
        Propagate(lambda ld: ((acc, zero, False)
                              if ld.buffer is load.buffer and
                              structural_equal(tuple(ld.indices), tuple(load.indices))
                              else None),
                  lambda v: None).expr(_without_self(site.node, value), t, items)
        inner = build(items)
    for cond in reversed(site.conds):
        inner = IfThenElse(cond, inner)
    for s in reversed(site.lets):
        inner = LetStmt(s.var, s.value, inner)
    fixed = {var for _, terms in decode for _, var, _, _ in terms}
    free = [loop for loop in site.loops if loop[0] not in fixed]
    for k, (var, lo, extent, _) in reversed(list(enumerate(free))):
        if split is not None and k == 0:
            # (split) this invocation's chunk of the outermost loop the gather runs
            chunk, chunks = split
            size = (extent + IntImm(INT32, chunks - 1)) // IntImm(INT32, chunks)
            start = chunk * size
            inner = For(var, lo + start, Max(Min(size, extent - start), IntImm(INT32, 0)),
                        "serial", inner)
        else:
            inner = For(var, lo, extent, "serial", inner)
    if split is not None and not free:   # one iteration reaches the element: chunk 0 adds it
        inner = IfThenElse(_eq0(split[0]), inner)
    checks, lets = [], []
    for dim, (const, terms) in zip(dims, decode):
        rem = dim
        if const:
            rem = Var(f"{dim.name}_rem", INT32)
            lets.append((rem, dim - IntImm(INT32, const)))
            checks.append(GE(rem, IntImm(INT32, 0)))   # (the element index itself is >= 0)
        for c, var, lo, extent in terms:
            u = Var(f"{var.name}_u", INT32) if lo.value else var
            lets.append((u, FloorDiv(rem, IntImm(INT32, c)) if c != 1 else rem))
            if lo.value:
                lets.append((var, u + lo))
            checks.append(LT(u, extent))
            if c != 1:
                nxt = Var(f"{dim.name}_rem", INT32)
                lets.append((nxt, rem - u * IntImm(INT32, c)))
                rem = nxt
            else:
                rem = None   # a unit coefficient takes the whole remainder
                break
        if rem is not None:
            checks.append(_eq0(rem))
    body = inner
    if checks:   # the checks use the decoded variables, so they sit inside the lets
        cond = checks[0]
        for c in checks[1:]:
            cond = And(cond, c)
        body = IfThenElse(cond, inner)
    for var, value in reversed(lets):
        body = LetStmt(var, value, body)
    return substitute(body, fresh)


def _eq0(e):
    from ..ir import EQ

    return EQ(e, IntImm(INT32, 0))


@dataclass(frozen=True)
class _Loop:
    loop_var: object
    min: object
    extent: object
