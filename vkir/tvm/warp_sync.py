"""TVM's warp-synchronous reduction tail, made uniform: `split_lane_conditions(func)`.

With a target whose `thread_warp_size` is above 1 (e.g. `Target.from_device(tvm.vulkan(0))`),
TVM's LowerThreadAllreduce ends a shared-memory reduction with steps for the first lanes only:

    if threadIdx_x < 4:
        w = red_buf[tx] + red_buf[tx + 4]; tvm_storage_sync("warp"); red_buf[tx] = w
        tvm_storage_sync("warp"); ...

A barrier under a lane condition is undefined in Vulkan (a subgroup barrier's behaviour in
non-uniform control flow is left to the implementation, and which invocations form a subgroup is
not promised either), so vkir refuses it. This pass rewrites such an `if` into the same steps
with the condition repeated around each of them and a workgroup barrier, which every invocation
reaches, in place of each warp sync:

    if threadIdx_x < 4: w_keep[0] = red_buf[tx] + red_buf[tx + 4]
    barrier
    if threadIdx_x < 4: w = w_keep[0]; red_buf[tx] = w
    ...

A workgroup barrier orders everything a warp sync orders, so the result is exact whatever the
device's subgroups are. A let value that a later step reads is carried in a one-element local
buffer. The rewrite applies only where it is the same program: an `if` without `else` whose
condition reads no memory and calls nothing (so it has the same value at every step) and whose
warp syncs sit in its body's own sequence (not in a loop or a nested `if` of it), with scalar
numeric let values; anything else is left as it is, and vkir's checker names it.
"""

from __future__ import annotations

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.dtype import PointerType
from ..ir.functor import Mutator
from ..ir.substitution import substitute
from ..ir.traversal import walk


def split_lane_conditions(func):
    """`func` (a vkir PrimFunc) with each warp sync under a lane condition split out as a
    workgroup barrier (see the module's docstring); `func` itself where there is none."""
    import dataclasses

    body = _Splitter().visit(func.body)
    return func if body is func.body else dataclasses.replace(func, body=body)


class _Splitter(Mutator):
    def visit_IfThenElse(self, node):
        node = self.generic_visit(node)
        if node.else_case is not None or not _pure(node.condition):
            return node
        items = _spine(node.then_case)
        if items is None or not any(kind == "sync" for kind, *_ in items):
            return node
        return _split(node.condition, items)


def _pure(condition) -> bool:
    """Whether `condition` has one value wherever it is evaluated in its scope: no memory read,
    no call."""
    return not any(isinstance(n, (E.BufferLoad, E.Call)) for n in walk(condition))


def _spine(stmt):
    """The statements of `stmt` in order as ("stmt", s), ("let", var, value) and ("sync",)
    items, nested sequences and let bodies read as one sequence; None where a let binds a
    value the rewrite cannot carry (a vector, a bool, a pointer)."""
    out = []
    for s in S.flatten(stmt):
        if isinstance(s, S.LetStmt):
            dt = s.var.dtype
            if isinstance(dt, PointerType) or dt.lanes != 1 or dt.is_bool:
                return None
            rest = _spine(s.body)
            if rest is None:
                return None
            out.append(("let", s.var, s.value))
            out.extend(rest)
        elif isinstance(s, S.SubgroupBarrier):
            out.append(("sync",))
        else:
            out.append(("stmt", s))
    return out


def _uses(items) -> set:
    """The Vars that the items read."""
    found = set()
    for item in items:
        for node in item[1:] if item[0] == "stmt" else item[2:]:
            found.update(n for n in walk(node) if isinstance(n, E.Var))
    return found


def _split(condition, items) -> S.Stmt:
    steps = [[]]
    for item in items:
        if item[0] == "sync":
            steps.append([])
        else:
            steps[-1].append(item)
    # let values a later step reads: kept in a one-element local buffer
    carried = {}
    for k, step in enumerate(steps):
        later = _uses([item for after in steps[k + 1:] for item in after])
        for item in step:
            if item[0] == "let" and item[1] in later:
                var = item[1]
                data = E.Var(var.name, PointerType(var.dtype, "local"))
                carried[var] = Buffer(var.name, data, var.dtype, (1,), scope="local")
    out = []
    defined = set()
    for k, step in enumerate(steps):
        if k:
            out.append(S.Barrier())
        if step:
            reads = _uses(step)
            outer = [v for v in carried if v in defined and v in reads]
            fresh = {v: E.Var(v.name, v.dtype) for v in outer}
            body = _nest([_renamed(item, fresh) for item in step], carried)
            for v in reversed(outer):
                body = S.LetStmt(fresh[v], carried[v].load(0), body)
            out.append(S.IfThenElse(condition, body))
        defined.update(item[1] for item in step if item[0] == "let")
    result = S.seq(*out)
    for buf in carried.values():
        result = S.AllocBuffer(buf, result)
    return result


def _renamed(item, fresh):
    if item[0] == "let":
        return ("let", item[1], substitute(item[2], fresh))
    return ("stmt", substitute(item[1], fresh))


def _nest(items, carried) -> S.Stmt:
    """One step's items as nested vkir statements (a let scopes over the rest), storing each
    carried let value as it is bound."""
    out = []
    for k, item in enumerate(items):
        if item[0] == "let":
            var = item[1]
            rest = _nest(items[k + 1:], carried)
            if var in carried:
                rest = S.seq(carried[var].store(var, 0), rest)
            out.append(S.LetStmt(var, item[2], rest))
            break
        out.append(item[1])
    return S.seq(*out) if out else S.SeqStmt(())


__all__ = ["split_lane_conditions"]
