"""Gradient sums kept in a local across a reverse loop: an adjoint that adds into the same global
element in every iteration (`d_w[0] += t * x[i, k]` in a loop over k) adds into a local instead,
and into the element once after the loop.

A serial loop's adjoint runs its body backwards once per iteration; a read whose index does not
move with the loop (`w[0]`, `b[j]` in a loop over k) adds its adjoint into the same element each
time: a global read-modify-write per iteration, or an atomic add per iteration where
invocations share the element. `keep_local(loop, targets)` rewrites the additions the loop's
body makes unconditionally (not under a branch or an inner loop: an inner loop's own sums have
been moved out of it already) into element `idx` of a gradient buffer in `targets`, where idx
uses no variable the loop binds and reads no memory, into a local scalar zeroed before the
loop, then adds the scalar into the element after the loop (atomically where the additions were
atomic), when the loop ran at least once. The sum is the same up to the order of float
additions.
"""

from __future__ import annotations

from ..ir import (Add, AllocBuffer, BufferLoad, BufferStore, Call, DeclBuffer, Evaluate, For,
                  GT, IfThenElse, IntImm, LetStmt, SeqStmt, Var, decl_buffer, seq, walk)
from ..ir.structural import structural_equal
from .derivatives import fconst

ZERO = (IntImm("int32", 0),)


def keep_local(loop: For, targets) -> object:
    """`loop` (a serial reverse loop of an adjoint) with its loop-invariant additions into
    `targets` (gradient buffers) summed in locals, added after it (see the module doc)."""
    bound = {n.loop_var for n in walk(loop) if isinstance(n, For)} | \
        {n.var for n in walk(loop) if isinstance(n, LetStmt)}
    sums = []   # [(buffer, indices, atomic, local)]

    def invariant(indices) -> bool:
        return not any((isinstance(n, Var) and n in bound) or isinstance(n, BufferLoad)
                       for i in indices for n in walk(i))

    def local_for(buffer, indices, atomic):
        for b, idx, at, local in sums:
            if b is buffer and at == atomic and structural_equal(tuple(idx), tuple(indices)):
                return local
        local = decl_buffer((1,), buffer.dtype, f"{buffer.name}_loop{len(sums)}", scope="local")
        sums.append((buffer, tuple(indices), atomic, local))
        return local

    def rewrite(s):
        if isinstance(s, SeqStmt):
            return seq(*[rewrite(x) for x in s.seq])
        if isinstance(s, LetStmt):
            return LetStmt(s.var, s.value, rewrite(s.body))
        if isinstance(s, (AllocBuffer, DeclBuffer)):
            return type(s)(s.buffer, rewrite(s.body))
        if isinstance(s, BufferStore) and s.buffer in targets and isinstance(s.value, Add) \
                and isinstance(s.value.a, BufferLoad) and s.value.a.buffer is s.buffer \
                and structural_equal(tuple(s.value.a.indices), tuple(s.indices)) \
                and invariant(s.indices):
            local = local_for(s.buffer, s.indices, False)
            return BufferStore(local, BufferLoad(local, ZERO) + s.value.b, ZERO)
        if isinstance(s, Evaluate) and isinstance(s.value, Call) and \
                s.value.op == "atomic_add" and s.value.args[0].buffer in targets and \
                invariant(s.value.args[0].indices):
            target, t = s.value.args
            local = local_for(target.buffer, target.indices, True)
            return BufferStore(local, BufferLoad(local, ZERO) + t, ZERO)
        return s

    body = rewrite(loop.body)
    if not sums:
        return loop
    flush = []
    for buffer, indices, atomic, local in sums:
        total = BufferLoad(local, ZERO)
        if atomic:
            flush.append(Evaluate(Call(buffer.dtype, "atomic_add",
                                       (BufferLoad(buffer, indices), total))))
        else:
            flush.append(BufferStore(buffer, BufferLoad(buffer, indices) + total, indices))
    out = seq(*[BufferStore(local, fconst(0, total), ZERO) for *_, local in sums],
              For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.thread,
                  loop.annotations),
              IfThenElse(GT(loop.extent, IntImm(loop.extent.dtype, 0)), seq(*flush)))
    for *_, local in sums:
        out = AllocBuffer(local, out)
    return out
