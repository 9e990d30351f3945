"""Fuse the elementwise epilogue of a reduction into the reduction loop nest, exactly.

The input has an allocated intermediate `buffer` written by a reduction nest and read by the next
statement, an elementwise epilogue nest over the same spatial loops:

    for i, j:                                  for i, j:
        temp[i, j] = init                          D[i, j] = C[i, j]        (bias)
        for k:                          ==>        for k:
            temp[i, j] = temp[i, j] + X                D[i, j] = D[i, j] + X
    for i, j:
        D[i, j] = temp[i, j] + C[i, j]

Bias makes C the initial value. ReLU and clipping are applied once, after the reduction completes
(never to partial sums, which would change the result for inputs of mixed sign). Any other
epilogue accumulates into a one-element local buffer and applies the epilogue once at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ArgumentError, ScheduleError
from ..ir import (
    EQ, Add, AllocBuffer, And, Buffer, BufferLoad, BufferStore, Cast, FloatImm, For, IfThenElse,
    IntImm, LetStmt, Max, Min, Mul, Mutator, PrimExpr, PrimFunc, SeqStmt, Stmt, Var, decl_buffer,
    seq, substitute, walk,
)
from ..ir.structural import recursion_headroom

_COMBINERS = (Add, Mul, Min, Max)


@dataclass(frozen=True)
class _Reduction:
    """A parsed reduction nest: spatial loops around `init` and the reduction loops."""

    spatial: tuple          # For nodes, outermost first
    indices: tuple          # indices of every access to the intermediate buffer
    init: BufferStore
    reduce_loops: tuple     # For nodes, outermost first
    update: BufferStore     # temp[idx] = combiner(temp[idx], rhs)
    rhs: PrimExpr
    rhs_first: bool         # True when the update is combiner(rhs, temp[idx])


@dataclass(frozen=True)
class _Epilogue:
    """The epilogue's single store, rewritten onto the reduction's spatial loop vars, and the
    let bindings around it (which read neither the intermediate nor the output buffer)."""

    store: BufferStore
    lets: tuple = ()        # LetStmt nodes, outermost first


def fuse_reduction_epilogue(func: PrimFunc, buffer: "Buffer | str") -> PrimFunc:
    """Fuse the epilogue that reads the reduction result `buffer` into the reduction nest and
    remove `buffer` (a Buffer object or its name). Raises ScheduleError when the pattern does not
    apply, saying why."""
    with recursion_headroom():  # rewriting deep expressions recurses once per level
        return _fuse_reduction_epilogue(func, buffer)


def _fuse_reduction_epilogue(func: PrimFunc, buffer) -> PrimFunc:
    alloc = _find_allocation(func, buffer)
    temp = alloc.buffer
    stmts = list(alloc.body.seq) if isinstance(alloc.body, SeqStmt) else [alloc.body]
    users = [k for k, s in enumerate(stmts) if _touches(s, temp)]
    if not users:
        raise ScheduleError(f"buffer {temp.name!r} is never used")
    if len(users) == 1:
        raise ScheduleError(f"buffer {temp.name!r} has no epilogue that reads it")
    if len(users) > 2:
        raise ScheduleError(
            f"buffer {temp.name!r} is used by {len(users)} statements; fusion needs exactly a "
            "reduction and one epilogue (it is read by a third statement)")
    p, e = users
    if e != p + 1:
        raise ScheduleError(
            f"statements between the reduction of {temp.name!r} and its epilogue; move them first")
    reduction = _parse_reduction(stmts[p], temp)
    epilogue = _parse_epilogue(stmts[e], temp, reduction)
    fused = _fuse(reduction, epilogue, temp)
    new_body = seq(*stmts[:p], fused, *stmts[e + 1:])
    return func.with_body(_Replace(alloc, new_body).visit(func.body))


# ----------------------------------------------------------------------------------------------
# locating and parsing


def _find_allocation(func: PrimFunc, buffer) -> AllocBuffer:
    if not isinstance(func, PrimFunc):
        raise ArgumentError(f"fuse_reduction_epilogue expects a PrimFunc, got {type(func).__name__}")
    if not isinstance(buffer, (Buffer, str)):
        raise ArgumentError("fuse_reduction_epilogue: `buffer` must be a Buffer or a buffer name, "
                        f"got {type(buffer).__name__}")
    if isinstance(buffer, Buffer) and buffer in tuple(func.buffer_map.values()):
        raise ScheduleError(f"buffer {buffer.name!r} is a function parameter; only a buffer "
                            "allocated in the body can be fused away")
    found = [n for n in walk(func.body) if isinstance(n, AllocBuffer)
             and (n.buffer is buffer or n.buffer.name == buffer)]
    if not found:
        name = buffer if isinstance(buffer, str) else buffer.name
        if any(b.name == name for b in func.buffer_map.values()):
            raise ScheduleError(f"buffer {name!r} is a function parameter; only a buffer "
                                "allocated in the body can be fused away")
        raise ScheduleError(f"no allocation of buffer {name!r} in function {func.name!r}")
    if len(found) > 1:
        raise ScheduleError(f"several allocations named {buffer!r}; pass the Buffer object")
    return found[0]


def _touches(node, buf: Buffer) -> bool:
    return any(isinstance(n, (BufferLoad, BufferStore)) and n.buffer is buf for n in walk(node))


def _reads(node, buf: Buffer) -> list:
    return [n for n in walk(node) if isinstance(n, BufferLoad) and n.buffer is buf]


def _peel_loops(stmt: Stmt, count: int | None = None) -> tuple[tuple, Stmt]:
    """The For nest on top of `stmt` (at most `count` loops) and the statement inside it."""
    loops = []
    while isinstance(stmt, For) and (count is None or len(loops) < count):
        loops.append(stmt)
        stmt = stmt.body
    return tuple(loops), stmt


def _parse_reduction(stmt: Stmt, temp: Buffer) -> _Reduction:
    def refuse(why):
        raise ScheduleError(f"the producer of {temp.name!r} is not a reduction: {why}")

    spatial, inner = _peel_loops(stmt)
    parts = inner.seq if isinstance(inner, SeqStmt) else (inner,)
    if len(parts) != 2:
        refuse("expected an initializing store followed by the reduction loops")
    init, reduce_nest = parts
    lowered = _init_in_loop(spatial, parts)
    if lowered is not None:   # TVM's lowered form: `if k == 0: init` first in the reduce loop
        spatial, init, reduce_nest = lowered
    if not (isinstance(init, BufferStore) and init.buffer is temp):
        refuse(f"the first statement does not initialize {temp.name}")
    if _reads(init.value, temp):
        refuse("the initial value reads the buffer")
    reduce_loops, update = _peel_loops(reduce_nest)
    if not reduce_loops:
        refuse("no reduction loop follows the initialization")
    if not (isinstance(update, BufferStore) and update.buffer is temp):
        refuse("the reduction loop body is not a single store to the buffer")
    if update.indices != init.indices:
        refuse("the update and the initialization write different elements")
    loop_vars = {loop.loop_var for loop in reduce_loops}
    if any(isinstance(n, Var) and n in loop_vars for i in init.indices for n in walk(i)):
        refuse("the written element depends on a reduction loop variable")
    value = update.value
    if not isinstance(value, _COMBINERS):
        refuse("the update is not temp = temp (+|*|min|max) value")
    acc = BufferLoad(temp, init.indices)
    if value.a == acc and not _reads(value.b, temp):
        rhs, rhs_first = value.b, False
    elif value.b == acc and not _reads(value.a, temp):
        rhs, rhs_first = value.a, True
    else:
        refuse("the update must read the accumulated element exactly once, as an operand")
    return _Reduction(spatial, init.indices, init, reduce_loops, update, rhs, rhs_first)


def _init_in_loop(loops: tuple, parts: tuple):
    """(spatial loops, init store, reduction nest) of a nest whose innermost loops are the
    reduction and whose body first initializes under `if k == min and ...` over exactly those
    loops (how TVM lowers a block's init); None for any other form."""
    guard, update = parts
    if not (isinstance(guard, IfThenElse) and guard.else_case is None
            and isinstance(guard.then_case, BufferStore)):
        return None
    terms, pending = [], [guard.condition]
    while pending:
        c = pending.pop()
        if isinstance(c, And):
            pending += [c.a, c.b]
        elif isinstance(c, EQ) and isinstance(c.a, Var):
            terms.append(c)
        else:
            return None
    firsts = {t.a: t.b for t in terms}
    count = len(firsts)
    if count == 0 or count > len(loops) or len(terms) != count:
        return None
    reduce_loops = loops[len(loops) - count:]
    if {lp.loop_var for lp in reduce_loops} != set(firsts) or any(
            firsts[lp.loop_var] != lp.min for lp in reduce_loops):
        return None
    return loops[:len(loops) - count], guard.then_case, _wrap(reduce_loops, update)


def _parse_epilogue(stmt: Stmt, temp: Buffer, red: _Reduction) -> _Epilogue:
    loops, body = _peel_loops(stmt, len(red.spatial))
    if len(loops) != len(red.spatial):
        raise ScheduleError(f"the epilogue of {temp.name!r} has {len(loops)} loops around its "
                            f"store; the reduction has {len(red.spatial)} spatial loops")
    mapping = {}
    for ep_loop, red_loop in zip(loops, red.spatial):
        if (substitute(ep_loop.min, mapping), substitute(ep_loop.extent, mapping)) != \
                (red_loop.min, red_loop.extent):
            raise ScheduleError(
                f"epilogue loop {ep_loop.loop_var.name} does not iterate like reduction loop "
                f"{red_loop.loop_var.name}")
        mapping[ep_loop.loop_var] = red_loop.loop_var
    lets = []
    while isinstance(body, LetStmt):
        lets.append(body)
        body = body.body
    if isinstance(body, IfThenElse):
        raise ScheduleError(f"the epilogue of {temp.name!r} has a non-trivial predicate")
    if not isinstance(body, BufferStore):
        raise ScheduleError(
            f"the epilogue of {temp.name!r} must be a single store (found {type(body).__name__})")
    store = substitute(body, mapping)
    if store.buffer is temp:
        raise ScheduleError(f"the epilogue writes {temp.name!r} itself")
    for load in _reads(store, temp):
        if load.indices != red.indices:
            raise ScheduleError(
                f"the epilogue reads {temp.name!r} at other indices than the reduction writes "
                f"(`{load}`, not `{temp.name}[{', '.join(map(str, red.indices))}]`; e.g. "
                "transposed); the result would need the whole reduction first")
    out = store.buffer
    if _touches(red.init, out) or _reads(red.rhs, out):
        raise ScheduleError(f"the reduction reads the epilogue's output {out.name!r}")
    lets = tuple(substitute(let, mapping) for let in lets)
    for let in lets:
        if _reads(let.value, temp) or _reads(let.value, out):
            raise ScheduleError(f"the epilogue binds {let.var.name} to a value that reads "
                                f"{temp.name!r} or {out.name!r}; inline it into the store")
    return _Epilogue(store, lets)


# ----------------------------------------------------------------------------------------------
# fusion


def _fuse(red: _Reduction, ep: _Epilogue, temp: Buffer) -> Stmt:
    """The fused nest; the epilogue's lets bind at the top of the innermost spatial loop."""
    fused = _fuse_body(red, ep, temp)
    loops, inner = _peel_loops(fused, len(red.spatial))
    for let in reversed(ep.lets):
        inner = LetStmt(let.var, let.value, inner, span=let.span)
    return _wrap(loops, inner)


def _fuse_body(red: _Reduction, ep: _Epilogue, temp: Buffer) -> Stmt:
    store = ep.store
    acc = BufferLoad(temp, red.indices)
    out_load = BufferLoad(store.buffer, store.indices)
    in_place = (store.buffer.dtype == temp.dtype and len(_reads(store.value, temp)) == 1
                and not _reads(store.value, store.buffer))
    bias = _match_bias(store.value, acc, red) if in_place else None
    if bias is not None:
        bias_expr, bias_value = bias
        init_value = bias_value if _is_zero(red.init.value) else Add(red.init.value, bias_value)
        finish = None if bias_expr is store.value else _replace_expr(store.value, bias_expr,
                                                                     out_load)
        return _nest(red, store.buffer, store.indices, init_value, finish)
    if in_place and (_is_clipping(store.value, acc) or _is_relu(store.value, acc)):
        finish = _replace_expr(store.value, acc, out_load)  # applied once, to the full result
        return _nest(red, store.buffer, store.indices, red.init.value, finish)
    return _local_nest(red, ep, temp)


def _nest(red: _Reduction, out: Buffer, indices: tuple, init_value: PrimExpr,
          finish: PrimExpr | None) -> Stmt:
    """The reduction nest accumulating into out[indices], then `finish` stored there."""
    target = BufferLoad(out, indices)
    update = type(red.update.value)(*((red.rhs, target) if red.rhs_first else (target, red.rhs)))
    body = seq(
        BufferStore(out, init_value, indices, span=red.init.span),
        _wrap(red.reduce_loops, BufferStore(out, update, indices, span=red.update.span)),
        None if finish is None else BufferStore(out, finish, indices),
    )
    return _wrap(red.spatial, body)


def _local_nest(red: _Reduction, ep: _Epilogue, temp: Buffer) -> Stmt:
    """Accumulate in a one-element local buffer and apply the epilogue once at the end."""
    local = decl_buffer((1,), temp.dtype, f"{temp.name}_local", scope="local")
    zero = IntImm("int32", 0)
    acc_load = BufferLoad(local, (zero,))
    update = type(red.update.value)(*((red.rhs, acc_load) if red.rhs_first else (acc_load,
                                                                                red.rhs)))
    final = _replace_expr(ep.store.value, BufferLoad(temp, red.indices), acc_load)
    body = AllocBuffer(local, seq(
        BufferStore(local, red.init.value, (zero,), span=red.init.span),
        _wrap(red.reduce_loops, BufferStore(local, update, (zero,), span=red.update.span)),
        BufferStore(ep.store.buffer, final, ep.store.indices, span=ep.store.span),
    ))
    return _wrap(red.spatial, body)


def _wrap(loops: tuple, body: Stmt) -> Stmt:
    for loop in reversed(loops):
        body = For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.thread,
                   loop.annotations, span=loop.span)
    return body


def _match_bias(value: PrimExpr, acc: BufferLoad, red: _Reduction):
    """(bias subexpression, C) when value is temp + C or max(temp + C, 0) in any operand order,
    and the reduction is a sum; None otherwise."""
    if not isinstance(red.update.value, Add):
        return None
    candidate = value
    if isinstance(value, Max):
        if _is_zero(value.b) and isinstance(value.a, Add):
            candidate = value.a
        elif _is_zero(value.a) and isinstance(value.b, Add):
            candidate = value.b
        else:
            return None
    if not isinstance(candidate, Add):
        return None
    if candidate.a == acc and acc not in list(walk(candidate.b)):
        return candidate, candidate.b
    if candidate.b == acc and acc not in list(walk(candidate.a)):
        return candidate, candidate.a
    return None


def _is_clipping(value: PrimExpr, acc: PrimExpr) -> bool:
    """value clips acc: min(max(acc, lo), hi) in any of its commutative spellings (operands of
    min/max swapped, or max(min(acc, hi), lo))."""
    for outer, inner_cls in ((Min, Max), (Max, Min)):
        if isinstance(value, outer):
            for inner in (value.a, value.b):
                if isinstance(inner, inner_cls) and acc in (inner.a, inner.b):
                    return True
    return False


def _is_relu(value: PrimExpr, acc: PrimExpr) -> bool:
    return isinstance(value, Max) and ((value.a == acc and _is_zero(value.b))
                                       or (value.b == acc and _is_zero(value.a)))


def _is_zero(e: PrimExpr) -> bool:
    if isinstance(e, Cast):
        return _is_zero(e.value)
    return isinstance(e, (IntImm, FloatImm)) and e.value == 0


def _replace_expr(expr: PrimExpr, old: PrimExpr, new: PrimExpr) -> PrimExpr:
    return _ExprReplacer(old, new).visit(expr)


class _ExprReplacer(Mutator):
    def __init__(self, old, new):
        self.old, self.new = old, new

    def visit(self, node):
        if node == self.old:
            return self.new
        return super().visit(node)


class _Replace(Mutator):
    """Replace one AllocBuffer node (by identity) with a new statement."""

    def __init__(self, target: AllocBuffer, replacement: Stmt):
        self.target, self.replacement = target, replacement

    def visit(self, node):
        if node is self.target:
            return self.replacement
        return super().visit(node)
