"""The loop budget of one call on a driver that stops loops early (llvmpipe's
"loop_trip_limit_65535" quirk): how many loop iterations an invocation may run for the call's
actual sizes and scalars, and which loops must be split (SplitLongLoops with a factor) so that the
call runs whole.

llvmpipe gives every invocation one budget of 65535 loop iterations, shared by all loops of the
kernel; past it every loop exits silently. A Kernel therefore compiles its loops plainly and, at
call time, computes from the push-constant values an upper bound of the iterations each loop runs
(`loops_for_call`: each size and scalar is its one value, so an extent of them, `1 << s`, `m * m`,
`m ^ k`, an int64 `n // 3`, is bounded by what it computes, vkir.arith.bound); only when the sum exceeds the budget does it pick a variant with some loops
split into unrolled chunks (`choose_split`), and where no variant fits it raises UnsupportedError
before the dispatch. A while loop that counts (a serial loop that may break becomes one) is
bounded like a serial loop. A loop whose trip count comes from buffer data, or any other while
loop, cannot be bounded before the dispatch: the innermost such loops are split by the largest
factor (best effort), and the kernel reports after the dispatch when the driver cut a loop
anyway (vkir.driver.loop_cut). A split whose chunk covers a serial loop of the call (at most
`factor` iterations) unrolls it whole: no back edges are left of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arith.bound import value_range
from ..errors import UnsupportedError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DataType, type_range
from ..ir.functor import Mutator, children
from ..ir.op import is_atomic, is_subgroup
from ..ir.traversal import walk
from ..spirv.codegen.float_division import remainder_iterations
from ..spirv.codegen.stmt import MAX_UNROLL
from ..transform.split_long_loops import WHILE_MAX_FACTOR, splittable

LOOP_BUDGET = 65535   # iterations per invocation before llvmpipe exits every loop
MAX_FACTOR = 64       # the most copies of a body SplitLongLoops makes (codegen unrolls them)


@dataclass(frozen=True)
class Loop:
    """One loop of a kernel for one call (also one codegen makes for an expression, a float
    floor division): its variable, an upper bound of its iterations each
    time it starts (`trips`; None when it depends on buffer data), how many times it starts per
    invocation (`starts`; None when unknown), and whether SplitLongLoops can split it.
    `values`: (first, last) of its variable, the same on every start,
    where the call fixes both (else None). `per_start`: where its extent names one enclosing
    loop's variable (a triangular nest), its exact trips for each value of that variable in turn
    (empty otherwise: `trips` bounds every start)."""

    var: E.Var | S.While | E.PrimExpr   # a while loop by its node, as a loop codegen makes
    trips: int | None
    starts: int | None
    splittable: bool
    outer: frozenset = frozenset()   # the variables of the loops around it
    values: tuple | None = None
    per_start: tuple = ()

    @property
    def iterations(self) -> int | None:
        """Iterations per invocation (trips times starts, or the sum of `per_start` over its
        rounds), None when unknown."""
        if self.trips is None or self.starts is None:
            return None
        if self.per_start:
            return self.starts // len(self.per_start) * sum(self.per_start)
        return self.trips * self.starts

    def whole_at(self, copies: int) -> bool:
        """Whether a split by `copies` unrolls this serial loop whole (no loop left of it)."""
        return isinstance(self.var, E.Var) and self.trips is not None and self.trips <= copies

    def split_iterations(self, copies: int) -> int:
        """Back edges per invocation once split into chunks of `copies` iterations: none for a
        serial loop one chunk covers (it is unrolled whole), else one per chunk."""
        if self.whole_at(copies):
            return 0
        if self.per_start:
            return self.starts // len(self.per_start) * sum(-(-t // copies)
                                                            for t in self.per_start)
        return self.starts * -(-self.trips // copies)


def loops_for_call(func, env: dict) -> list[Loop]:
    """Every loop of the lowered `func` (thread bindings excluded) with its bounds for a call
    whose size and scalar variables have the values in `env` (Var -> number)."""
    ranges = {v: (int(x), int(x)) for v, x in env.items()
              if isinstance(v.dtype, DataType) and (v.dtype.is_int or v.dtype.is_uint)}
    out: list[Loop] = []
    _walk(func.body, ranges, 1, out, frozenset())
    return out


def unbounded_loops(func) -> list[Loop]:
    """The loops of `func` whose trip count no call's sizes and scalars bound (a count read from
    buffer data, a while loop that counts nothing): the budget cannot see them before a dispatch,
    so a driver with a loop limit may cut them (vkir.driver.loop_cut checks those kernels)."""
    ranges = {v: type_range(v.dtype) for v in (*func.params, *func.size_vars)
              if isinstance(v.dtype, DataType) and (v.dtype.is_int or v.dtype.is_uint)}
    out: list[Loop] = []
    _walk(func.body, ranges, 1, out, frozenset())
    return [lp for lp in out if lp.trips is None]


# subgroup queries an extent may name, with bounds that hold on every device
_QUERY_BOUNDS = {"num_subgroups": (1, 4096), "subgroup_size": (1, 128),
                 "subgroup_id": (0, 4095), "subgroup_invocation_id": (0, 127)}


def _data_dependent(e) -> bool:
    return any(isinstance(n, E.BufferLoad) or (isinstance(n, E.Call) and n.op not in _QUERY_BOUNDS
                                                and not _pure(n))
               for n in walk(e))


def _pure(call) -> bool:
    return not is_atomic(call.op) and not is_subgroup(call.op)


def _upper(e, ranges) -> int | None:
    if _data_dependent(e):
        return None
    queries = {}
    for n in walk(e):
        if isinstance(n, E.Call) and n.op in _QUERY_BOUNDS and n not in queries:
            queries[n] = E.Var(n.op, n.dtype)
    if queries:   # each query stands for a variable of its known range
        e = _replace_calls(e, queries)
        ranges = {**ranges, **{v: _QUERY_BOUNDS[c.op] for c, v in queries.items()}}
    lo, hi = value_range(e, ranges)
    return None if hi is None else int(hi)


def _replace_calls(e, mapping: dict):
    class Replace(Mutator):
        def visit_Call(self, c):
            return mapping.get(c) or self.generic_visit(c)

    return Replace().visit(e)


def _walk(s, ranges: dict, starts: int | None, out: list, outer: frozenset) -> None:
    if not isinstance(s, S.While):   # (a while loop's condition runs once per iteration)
        _hidden_loops(_fields(s, E.PrimExpr), starts, out, outer)
    if isinstance(s, S.For):
        lo = value_range(s.min, ranges)[0] if not _data_dependent(s.min) else None
        extent = _upper(s.extent, ranges)
        min_hi = _upper(s.min, ranges)
        inner = dict(ranges)
        if lo is not None and extent is not None and min_hi is not None:
            inner[s.loop_var] = (int(lo), int(min_hi) + max(extent, 1) - 1)
        else:
            inner.pop(s.loop_var, None)
        if s.kind == "thread_binding" or _copied(s, lo, extent, min_hi):
            _walk(s.body, inner, starts * max(extent, 0) if s.kind != "thread_binding" and
                  starts is not None and extent is not None else starts, out, outer)
            return
        trips = None if extent is None else max(extent, 0)
        values = None
        if trips and lo is not None and lo == min_hi and _fixed(s.extent, ranges):
            values = (int(lo), int(lo) + trips - 1)
        # counted start by start only where the largest count every start would not fit
        per_start = _per_start(s, ranges, out, outer) if trips is not None and \
            starts is not None and trips * starts > LOOP_BUDGET else ()
        loop = Loop(s.loop_var, trips, starts, splittable(s), outer, values, per_start)
        out.append(loop)
        _walk(s.body, inner, loop.iterations, out, outer | {s.loop_var})
        return
    if isinstance(s, S.SeqStmt):   # a while loop may count with what the statements before set
        for i, child in enumerate(s.seq):
            if isinstance(child, S.While):
                _walk_while(child, ranges, starts, out, outer, s.seq[:i])
            else:
                _walk(child, ranges, starts, out, outer)
        return
    if isinstance(s, S.While):
        _walk_while(s, ranges, starts, out, outer, ())
        return
    if isinstance(s, S.LetStmt):
        inner = dict(ranges)
        if s.var.dtype.is_int or s.var.dtype.is_uint:
            if _data_dependent(s.value):
                inner.pop(s.var, None)
            else:
                inner[s.var] = value_range(s.value, ranges)
        _walk(s.body, inner, starts, out, outer)
        return
    for child in _fields(s, S.Stmt):
        _walk(child, ranges, starts, out, outer)


def _fields(s, cls) -> list:
    """The direct children of statement `s` that are `cls`: its own expressions with
    cls=PrimExpr, the statements directly inside it with Stmt."""
    return [c for c in children(s) if isinstance(c, cls)]


def _hidden_loops(exprs, starts, out: list, outer: frozenset) -> None:
    """A Loop for each loop codegen emits inside `exprs` (float floor division and remainders),
    each evaluated `starts` times per invocation: they spend the same budget. Not splittable."""
    for e in exprs:
        for n in walk(e):
            float_mod = isinstance(n, (E.FloorDiv, E.FloorMod, E.Mod)) or (
                isinstance(n, E.Call) and n.op == "fmod")
            if float_mod and n.dtype.is_float:
                out.append(Loop(n, remainder_iterations(n.dtype.bits), starts, False, outer))


_MAX_ENUMERATED = 1 << 14   # the most values of an enclosing variable `_per_start` goes through


def _fixed(e, ranges) -> bool:
    """Whether `e` has one value for the call (no buffer data, no loop variable of a range)."""
    if _data_dependent(e):
        return False
    lo, hi = value_range(e, ranges)
    return lo is not None and lo == hi


def _per_start(s: S.For, ranges: dict, out: list, outer: frozenset) -> tuple:
    """The trips of loop `s` for each value of the one enclosing loop variable its extent names
    (`Loop.per_start`), where that loop and every loop between it and `s` run the same values
    on every start (so each value starts `s` equally often); () otherwise."""
    names = {n for n in walk(s.extent) if isinstance(n, E.Var)} & outer
    if len(names) != 1 or _data_dependent(s.extent):
        return ()
    (v,) = names
    around = [lp for lp in out if lp.var in outer]
    home = next((lp for lp in around if lp.var is v), None)
    if home is None or home.values is None or any(
            lp.values is None for lp in around if v in lp.outer):
        return ()
    first, last = home.values
    if last - first + 1 > _MAX_ENUMERATED:
        return ()
    trips = []
    for x in range(first, last + 1):
        hi = _upper(s.extent, {**ranges, v: (x, x)})
        if hi is None:
            return ()
        trips.append(max(int(hi), 0))
    return tuple(trips)


def _walk_while(s: S.While, ranges: dict, starts, out: list, outer: frozenset, before) -> None:
    """A while loop: bounded where it counts (`_counted_trips`), else of unknown trips (split as
    far as it goes)."""
    trips = _counted_trips(s, ranges, before)
    out.append(Loop(s, trips, starts, splittable(s), outer))
    tests = None if starts is None or trips is None else starts * (trips + 1)
    _hidden_loops((s.condition,), tests, out, outer)
    _walk(s.body, ranges, None if starts is None or trips is None else starts * trips, out,
          outer | {s})


def _conjuncts(e) -> list:
    return _conjuncts(e.a) + _conjuncts(e.b) if isinstance(e, E.And) else [e]


def _counter_load(e):
    """The one-element local buffer `e` reads as `c[0]`, or None."""
    if isinstance(e, E.BufferLoad) and e.buffer.scope == "local" and len(e.indices) == 1 and \
            isinstance(e.indices[0], E.IntImm) and e.indices[0].value == 0 and \
            len(e.buffer.shape) == 1 and isinstance(e.buffer.shape[0], E.IntImm) and \
            e.buffer.shape[0].value == 1:
        return e.buffer
    return None


def _stores_to(s, data) -> list:
    return [n for n in walk(s) if isinstance(n, S.BufferStore) and n.buffer.data is data]


def _touches(s, data) -> bool:
    """Whether `s` may change `data` other than by a BufferStore (a view of it, an atomic)."""
    return any((isinstance(n, S.DeclBuffer) and n.buffer.data is data) or
               (isinstance(n, E.Call) and is_atomic(n.op) and any(
                   isinstance(a, E.BufferLoad) and a.buffer.data is data for a in n.args))
               for n in walk(s))


def _counted_trips(s: S.While, ranges: dict, before) -> int | None:
    """An upper bound of the trips of a while loop that counts, as a serial loop that may break
    becomes: `while c[0] < end and ...:` whose body binds `v = c[0]` and ends with
    `c[0] = v + 1`, the only change to c in it, with c set before the loop by the last of the
    statements `before` that changes it. None for any other while loop."""
    for term in _conjuncts(s.condition):
        counter = _counter_load(term.a) if isinstance(term, E.LT) else None
        if counter is not None:
            break
    else:
        return None
    data = counter.data
    body = s.body
    if isinstance(body, S.SeqStmt) and body.seq and not any(
            _stores_to(t, data) or _touches(t, data) for t in body.seq[1:]):
        body = body.seq[0]   # statements after the count that leave it alone (loop-cut flags)
    if not (isinstance(body, S.LetStmt) and _counter_load(body.value) is counter
            and isinstance(body.body, S.SeqStmt)):
        return None
    step = body.body.seq[-1]
    if not (isinstance(step, S.BufferStore) and step.buffer is counter
            and isinstance(step.value, E.Add) and step.value.a is body.var
            and isinstance(step.value.b, E.IntImm) and step.value.b.value == 1
            and _stores_to(body, data) == [step] and not _touches(body, data)):
        return None
    for i in range(len(before) - 1, -1, -1):
        stores = _stores_to(before[i], data)
        if _touches(before[i], data):
            return None
        if stores:
            init = before[i]
            if not (isinstance(init, S.BufferStore) and stores == [init]
                    and init.buffer is counter):
                return None
            break
    else:
        return None
    end = _upper(term.b, ranges)
    if end is None or _data_dependent(init.value):
        return None
    start = value_range(init.value, ranges)[0]
    return None if start is None else max(int(end) - int(start), 0)


def _copied(s: S.For, lo, extent, min_hi) -> bool:
    """Whether codegen emits loop `s` as copies of its body (an unrolled loop with a constant
    trip count of at most MAX_UNROLL and no allocation in it): no loop iterations then."""
    return (s.kind == "unrolled" and lo is not None and lo == min_hi and extent is not None
            and isinstance(s.extent, E.IntImm) and extent <= MAX_UNROLL
            and not any(isinstance(n, (S.AllocBuffer, S.DeclBuffer)) for n in walk(s.body)))


@dataclass(frozen=True)
class Split:
    """What a call needs: `factor` 1 (no split), or the loops `loops` split by `factor`, those of
    `whole` (at most `factor` iterations for this call) unrolled whole; `iterations` is the
    bound of loop iterations per invocation it leaves."""

    factor: int
    loops: frozenset
    iterations: int
    whole: frozenset = frozenset()


def choose_split(loops: list[Loop], kernel: str, device: str, budget: int = LOOP_BUDGET) -> Split:
    """The smallest split that keeps a call within `budget` loop iterations per invocation,
    splitting the loops that run most first and never two nested ones (their copies would
    multiply). Loops of unknown trip count are split by MAX_FACTOR (they cannot be checked
    before the dispatch; vkir.driver.loop_cut reports a cut after it), the innermost of them
    only. UnsupportedError where no split fits: the driver would cut the loops short."""
    unknown = [lp for lp in loops if lp.iterations is None and lp.splittable]
    known = [lp for lp in loops if lp.iterations is not None]
    total = sum(lp.iterations for lp in known)
    if total <= budget:
        factor, chosen, cost = 1, set(), total
    else:
        factor, chosen, cost = _fit(known, total, budget, kernel, device)
    if unknown:
        chosen = frozenset(chosen) | _innermost(unknown, chosen, known)
        factor = MAX_FACTOR
    split = [lp for lp in loops if lp.var in chosen]
    whole = frozenset(lp.var for lp in split if lp.whole_at(factor))
    return Split(factor, frozenset(chosen), cost, whole)


def _innermost(unknown: list, chosen: set, known: list) -> frozenset:
    """The loops of unknown trip count to split beside the `chosen` ones: those that neither
    enclose nor sit inside a chosen loop, nor enclose another such loop (the copies of nested
    splits multiply: a nest of two would become 64 * 64 copies of its body, for no fewer back
    edges than splitting the inner one)."""
    split = [lp for lp in known if lp.var in chosen]
    free = [u for u in unknown
            if not any(c.var in u.outer or u.var in c.outer for c in split)]
    enclosing = {v for u in free for v in u.outer}
    return frozenset(u.var for u in free if u.var not in enclosing)


def _fit(known: list, total: int, budget: int, kernel: str, device: str):
    """(factor, chosen loops, iterations left) of the smallest split of the `known` loops that
    fits `budget`; UnsupportedError where none does."""
    candidates = sorted((lp for lp in known if lp.splittable and lp.trips > 1),
                        key=lambda lp: -lp.iterations)
    factor, cost = 2, total
    while factor <= MAX_FACTOR:
        cost, chosen = total, set()
        for lp in candidates:
            if cost <= budget:
                break
            if chosen & lp.outer or any(lp.var in c.outer for c in candidates if c.var in chosen):
                continue   # never split two nested loops: the copies would multiply
            copies = min(factor, WHILE_MAX_FACTOR) if isinstance(lp.var, S.While) else factor
            cost -= lp.iterations - lp.split_iterations(copies)
            chosen.add(lp.var)
        if cost <= budget:
            return factor, chosen, cost
        factor *= 2
    raise UnsupportedError(
        f"kernel {kernel}: for these arguments its loops run up to {total} iterations per "
        f"invocation, and {device} stops every loop of an invocation after {budget} (quirk "
        f"loop_trip_limit_65535); even with the most copies of their bodies per back edge "
        f"({MAX_FACTOR} for counted loops, {WHILE_MAX_FACTOR} for while loops) they would need "
        f"{cost}{_HIDDEN_NOTE if any(_hidden(lp) for lp in known) else ''}. Split the work over "
        "more invocations (a larger grid) or run it in several calls")


_HIDDEN_NOTE = (" (each float //, % or fmod is a loop on the device too, of up to 32 iterations "
                "for float32 and 186 for float64)")


def _hidden(lp: Loop) -> bool:
    """Whether `lp` is a loop codegen makes for an expression (no loop of the kernel's own)."""
    return not isinstance(lp.var, (E.Var, S.While))
