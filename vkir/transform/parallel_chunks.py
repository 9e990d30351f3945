"""Several consecutive iterations of a bound `T.parallel` loop per invocation (BindParallel's
form for CPU drivers).

Why: llvmpipe (lavapipe) runs each storage-buffer access as a loop over its 8 SIMD lanes (the
"storage_loads_per_lane" quirk), so a kernel computing one scalar element per invocation pays
that loop, and the invocation's own overhead, per element. Computing ELEMENTS consecutive
results per invocation as 4-lane vectors pays it once per 4 elements (vkir.map's flat kernel
measures the same form). A loop

    for i in T.parallel(n):
        body                      # every buffer access is x[i], x a 1-d 32-bit parameter

becomes, with W invocations per workgroup,

    for bx in T.thread_binding(n // 16 // W + 1, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            t = bx * W + tx
            for u in T.unroll(4):
                g = t * 4 + u
                if g < n // 4:
                    for v in T.vectorized(4):
                        body[i := g * 4 + v]
            if t == n // 16:                 # the last n % 4 iterations, one by one
                for r in T.serial(n % 4):
                    body[i := n // 4 * 4 + r]

(the tail is left out where n is a constant multiple of 4). The vectorized copy reads and writes
float32x4 (or int32x4, uint32x4) through pointer casts of the parameters; the tail copy reads
the same elements as scalars, so results are exactly those of one iteration per invocation.

Only loops whose body the vectorizer takes whole qualify (`chunkable`): starting at 0, of an
int32 extent, every buffer access a 1-d scalar 32-bit parameter indexed by the loop variable
itself, statements only stores, lets, ifs and sequences, calls only pure intrinsics. Anything
else keeps one iteration per invocation.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.base import Stmt
from ..ir.dtype import DataType
from ..ir.op import is_pure
from ..ir.substitution import substitute
from ..ir.traversal import walk

ELEMENTS = 16   # iterations per invocation: 4 vectors of 4
LANES = 4
_INT32 = DataType("int", 32)
_STATEMENTS = (S.BufferStore, S.LetStmt, S.SeqStmt, S.IfThenElse)


def chunkable(loop: S.For, params) -> bool:
    """Whether parallel loop `loop` (the whole bound nest) may run ELEMENTS iterations per
    invocation: see the module doc. `params` are the kernel's parameter buffers."""
    if not (isinstance(loop.min, E.IntImm) and loop.min.value == 0
            and loop.extent.dtype == _INT32):
        return False
    i = loop.loop_var
    params = set(params)
    for node in walk(loop.body):
        if isinstance(node, Stmt) and not isinstance(node, _STATEMENTS):
            return False
        if isinstance(node, E.Call) and not is_pure(node.op):
            return False
        if isinstance(node, (E.BufferLoad, S.BufferStore)):
            buf = node.buffer
            if buf not in params or len(buf.shape) != 1 or buf.dtype.lanes != 1 \
                    or buf.dtype.bits != 32 or not (buf.dtype.is_float or buf.dtype.is_integer):
                return False
            if len(node.indices) != 1 or node.indices[0] is not i:
                return False
    return True


def _fresh_lets(body):
    """`body` with every let-bound variable renamed (a second copy of a body in one kernel)."""
    lets = {n.var: E.Var(n.var.name, n.var.dtype) for n in walk(body) if isinstance(n, S.LetStmt)}
    return substitute(body, lets)


def chunked(loop: S.For, width: int, span=None) -> S.For:
    """The bound form of `chunkable` loop `loop` with `width` invocations per workgroup."""
    def c(v):
        return E.IntImm(_INT32, v)

    n, i, body = loop.extent, loop.loop_var, loop.body
    bx, tx = E.Var("bx", _INT32), E.Var("tx", _INT32)
    t, g = E.Var("t", _INT32), E.Var("g", _INT32)
    u, v, r = E.Var("u", _INT32), E.Var("v", _INT32), E.Var("r", _INT32)
    const = isinstance(n, E.IntImm)
    vectors = c(n.value // LANES) if const else E.FloorDiv(n, c(LANES))
    lanes = S.For(v, c(0), c(LANES), "vectorized",
                  substitute(body, {i: E.Add(E.Mul(g, c(LANES)), v)}))
    whole = S.For(u, c(0), c(ELEMENTS // LANES), "unrolled",
                  S.LetStmt(g, E.Add(E.Mul(t, c(ELEMENTS // LANES)), u),
                            S.IfThenElse(E.LT(g, vectors), lanes, None)))
    parts = [whole]
    if not (const and n.value % LANES == 0):
        rest = c(n.value % LANES) if const else E.FloorMod(n, c(LANES))
        last = c(n.value // ELEMENTS) if const else E.FloorDiv(n, c(ELEMENTS))
        start = c(n.value // LANES * LANES) if const else E.Mul(vectors, c(LANES))
        tail = S.For(r, c(0), rest, "serial",
                     _fresh_lets(substitute(body, {i: E.Add(start, r)})))
        parts.append(S.IfThenElse(E.EQ(t, last), tail, None))
    inner = S.LetStmt(t, E.Add(E.Mul(bx, c(width)), tx), S.SeqStmt(parts))
    groups = c(n.value // ELEMENTS // width + 1) if const else \
        E.Add(E.FloorDiv(E.FloorDiv(n, c(ELEMENTS)), c(width)), c(1))
    threads = S.For(tx, c(0), c(width), "thread_binding", inner, "threadIdx.x")
    return S.For(bx, c(0), groups, "thread_binding", threads, "blockIdx.x", span=span)
