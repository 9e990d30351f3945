"""BindParallel: `T.parallel` loops (TVM's parallel loop kind) bound to the device's grid.

A kernel written as

    for i in T.parallel(n):
        for j in T.parallel(m):
            body

(the outer nest of parallel loops being the whole body, under any let bindings and buffer
declarations) becomes one launch of ceil(n m / W) workgroups of W invocations:

    for bx in T.thread_binding((n * m + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            if bx * W + tx < n * m:
                i = (bx * W + tx) // m      # the loop variables themselves, let-bound
                j = (bx * W + tx) % m
                body

W comes from the target: the largest of 256, the device's invocations per workgroup and its
x size, rounded down to a multiple of the subgroup size (and no larger than a constant total
rounded up to one). Only blockIdx.x is used, so codegen folds a grid wider than the device's
per-dimension limit into rows (vkir.spirv.codegen). Iterations of a parallel loop are independent
by the user's promise, as in TVM: the interpreter runs unbound ones in order.

On a driver whose storage accesses loop over the SIMD lanes (the "storage_loads_per_lane" quirk
of llvmpipe: a CPU driver), a one-loop nest whose accesses are all x[i] of 1-d 32-bit parameters
gives each invocation 16 consecutive iterations as 4-lane vectors instead, the last n % 4 one by
one (vkir.transform.parallel_chunks). Other targets (GPUs, SwiftShader) keep one iteration per
invocation; `elements` overrides the choice. The rewrite is done in two steps: binding gives such
a nest the one-iteration form above, its blockIdx.x loop annotated CHUNKABLE, whatever the
target; a later run of the pass (the lowering pipeline's) rewrites an annotated loop where the
target wants several iterations. So `vkir.build`, which binds before it lowers, keeps the one-iteration form as the kernel's function
(what the interpreter and `vkir.Tape`'s adjoints see: every element stored by one statement) and
the lowering pipeline's run of this pass compiles the chunked form.

Parallel loops that cannot be bound run as serial loops: those of a kernel with thread bindings
of its own, those inside another loop, and those of a body with more than the one nest (a
statement beside the nest would run once per invocation). `parallelism(func)` tells a caller
whether a kernel will run more than one invocation (vkir.build warns when it will not).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.dtype import DataType
from ..ir.functor import Mutator
from ..ir.traversal import walk
from ..target import Target
from .base import Pass
from .parallel_chunks import ELEMENTS, chunkable, chunked

_INT32 = DataType("int", 32)
_WRAPPERS = (S.LetStmt, S.DeclBuffer)
PREFERRED_WORKGROUP = 256
CHUNK_WORKGROUP = 64      # invocations per workgroup of the chunked form (as vkir.map's)
# the annotation of a bound one-loop nest that may take several iterations per invocation
CHUNKABLE = "chunkable_parallel"
_STORE_LOOP_QUIRK = "storage_loads_per_lane"   # vkir.quirks.STORAGE_LOADS_PER_LANE


def _threaded(func) -> bool:
    return any(isinstance(n, S.For) and n.kind == "thread_binding" for n in walk(func.body))


def _has_parallel(func) -> bool:
    return any(isinstance(n, S.For) and n.kind == "parallel" for n in walk(func.body))


def _outer_nest(body):
    """The chain of perfectly nested parallel loops that is `body` under wrappers (each loop's
    range free of the chain's variables), or []."""
    while isinstance(body, _WRAPPERS) or (isinstance(body, S.AllocBuffer)
                                          and body.buffer.scope == "local"):
        body = body.body
    chain = []
    while isinstance(body, S.For) and body.kind == "parallel" \
            and body.loop_var.dtype == _INT32:
        outer = {loop.loop_var for loop in chain}
        if any(isinstance(n, E.Var) and n in outer for e in (body.min, body.extent)
               for n in walk(e)):
            break
        chain.append(body)
        body = body.body
    return chain


def parallelism(func) -> str:
    """How `func` runs: "threads" (thread bindings of its own), "parallel" (an outer T.parallel
    nest the build binds), "serial parallel" (T.parallel loops that stay serial: not the outer
    nest) or "serial" (one invocation)."""
    if _threaded(func):
        return "threads"
    if _outer_nest(func.body):
        return "parallel"
    return "serial parallel" if _has_parallel(func) else "serial"


def workgroup_size(target: Target, total=None) -> int:
    """The invocations per workgroup a bound parallel nest gets on `target` (see module doc)."""
    limits = target.limits
    size = min(PREFERRED_WORKGROUP, limits.max_workgroup_invocations, limits.max_workgroup_size[0])
    sub = target.subgroup_size or 1
    if size >= sub:
        size -= size % sub
    if isinstance(total, E.IntImm):
        size = max(1, min(size, -(-total.value // sub) * sub))
    return size


def elements_per_invocation(target: Target) -> int:
    """Consecutive iterations one invocation of a bound nest computes on `target` where the
    nest qualifies: ELEMENTS on a driver with the per-lane storage access loops, else 1."""
    return ELEMENTS if _STORE_LOOP_QUIRK in target.quirks else 1


class _Serial(Mutator):
    """Every parallel loop made serial."""

    def visit_For(self, s):
        s = self.generic_visit(s)
        return replace(s, kind="serial") if s.kind == "parallel" else s


@dataclass(frozen=True)
class BindParallel(Pass):
    """Bind the outer `T.parallel` nest to blockIdx.x/threadIdx.x for `target`; other parallel
    loops become serial (see the module doc)."""

    target: Target | None = None
    elements: int | None = None   # 1 or ELEMENTS; None: elements_per_invocation(target)

    def transform(self, func):
        """The function with its parallel loops bound or made serial, and the CHUNKABLE loops
        it was given (bound by an earlier run) in the chunked form where the target wants
        several iterations per invocation."""
        params = tuple(func.buffer_map.values())
        target = self.target or Target()
        if (self.elements or elements_per_invocation(target)) > 1:
            width = min(CHUNK_WORKGROUP, workgroup_size(target))
            func = replace(func, body=_chunk(func.body, params, width))
        if not _has_parallel(func):
            return func
        chain = [] if _threaded(func) else _outer_nest(func.body)
        body = _Serial().visit(func.body)
        if chain:
            body = self._bind(body, len(chain), params)
        return replace(func, body=body)

    def _bind(self, body, depth: int, params: tuple):
        if isinstance(body, (*_WRAPPERS, S.AllocBuffer)):
            return replace(body, body=self._bind(body.body, depth, params))
        chain = []
        for _ in range(depth):
            chain.append(body)
            body = body.body
        target = self.target or Target()
        total = chain[0].extent
        for loop in chain[1:]:
            total = E.Mul(total, loop.extent)
        if not isinstance(total, E.IntImm) or len(chain) > 1:
            from ..arith import simplify_expr

            total = simplify_expr(total)
        size = workgroup_size(target, total)
        w = E.IntImm(_INT32, size)
        bx, tx = E.Var("bx", _INT32), E.Var("tx", _INT32)
        linear = E.Var("linear", _INT32)
        rest = linear
        lets = []
        for loop in reversed(chain):
            index = rest if loop is chain[0] else E.FloorMod(rest, loop.extent)
            lets.append((loop.loop_var, _plus(loop.min, index)))
            if loop is not chain[0]:
                rest = E.FloorDiv(rest, loop.extent)
        for var, value in lets:
            body = S.LetStmt(var, value, body)
        guarded = S.IfThenElse(E.LT(linear, total), body, None)
        inner = S.LetStmt(linear, E.Add(E.Mul(bx, w), tx), guarded)
        groups = E.FloorDiv(E.Add(total, E.IntImm(_INT32, size - 1)), w)
        if isinstance(total, E.IntImm):
            groups = E.IntImm(_INT32, -(-total.value // size))
        threads = S.For(tx, E.IntImm(_INT32, 0), w, "thread_binding", inner, "threadIdx.x")
        mark = {CHUNKABLE: 1} if len(chain) == 1 and chunkable(chain[0], params) else {}
        return S.For(bx, E.IntImm(_INT32, 0), groups, "thread_binding", threads, "blockIdx.x",
                     annotations=mark, span=chain[0].span)


def _chunk(body, params: tuple, width: int):
    """`body` with its outer bound loop, where marked CHUNKABLE and still of the form _bind
    gives it, in the chunked form (vkir.transform.parallel_chunks)."""
    if isinstance(body, (*_WRAPPERS, S.AllocBuffer)):
        return replace(body, body=_chunk(body.body, params, width))
    loop = _one_element_loop(body)
    if loop is None or not chunkable(loop, params):
        return body
    return chunked(loop, width, span=body.span)


def _one_element_loop(bound):
    """The parallel loop `for i in T.parallel(n): body` that _bind made `bound` from, where
    `bound` is marked CHUNKABLE and has that form; else None."""
    if not (isinstance(bound, S.For) and bound.kind == "thread_binding"
            and bound.annotations.get(CHUNKABLE)):
        return None
    threads = bound.body
    if not (isinstance(threads, S.For) and threads.kind == "thread_binding"):
        return None
    let = threads.body
    if not (isinstance(let, S.LetStmt) and isinstance(let.body, S.IfThenElse)):
        return None
    guard = let.body
    cond, inner = guard.condition, guard.then_case
    if guard.else_case is not None or not (isinstance(cond, E.LT) and cond.a is let.var) \
            or not (isinstance(inner, S.LetStmt) and inner.value is let.var):
        return None
    return S.For(inner.var, E.IntImm(_INT32, 0), cond.b, "parallel", inner.body)


def _plus(start, index):
    return index if isinstance(start, E.IntImm) and start.value == 0 else E.Add(start, index)
