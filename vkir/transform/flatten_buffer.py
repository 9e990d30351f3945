"""FlattenBuffer: every N-d buffer access becomes a 1-d access through a flat buffer.

Following TVM's buffer convention, the signature is unchanged: a parameter buffer keeps
its N-d `buffer_map` entry and the body declares a flat alias over the same `data`
(`A_flat = T.decl_buffer((prod,), dtype, data=A.data)`, same element type, so no pointer cast),
declared at the top of the body. Allocations (and body declarations) of N-d buffers become
allocations (declarations) of a flat buffer with the same name, data var, dtype and scope.

The flat index is `sum(i_k * stride_k) + elem_offset`, with the explicit strides when the buffer
has them and row-major strides otherwise; only the last index may be a vector (typing rule 1),
so the flat index is a vector exactly when the access was. Buffers that are already flat (one
dimension, no strides, zero offset) are left alone. Vector element types are kept: indices count
elements, whatever their lane count.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arith import simplify_expr
from ..errors import TransformError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.functor import Mutator
from .base import Pass


def _is_flat(buf: Buffer) -> bool:
    off = buf.elem_offset
    return len(buf.shape) == 1 and not buf.strides and isinstance(off, E.IntImm) and off.value == 0


def _product(exprs, dtype):
    out = E.IntImm(dtype, 1)
    for e in exprs:
        out = E.Mul(out, e)
    return simplify_expr(out)


def _strides(buf: Buffer) -> tuple:
    if buf.strides:
        return buf.strides
    dtype = buf.shape[0].dtype if buf.shape else E.int32
    return tuple(_product(buf.shape[k + 1:], dtype) for k in range(len(buf.shape)))


def flat_extent(buf: Buffer):
    """The number of elements the flat view spans (from element 0 of `data`, so a nonzero
    `elem_offset` adds to it)."""
    if not buf.strides:
        count = _product(buf.shape, buf.shape[0].dtype if buf.shape else E.int32)
        off = buf.elem_offset
        if isinstance(off, E.IntImm) and off.value == 0:
            return count
        if off.dtype != count.dtype:
            off = E.Cast(count.dtype, off)
        return simplify_expr(E.Add(off, count))
    span = buf.elem_offset
    for size, stride in zip(buf.shape, buf.strides):
        span = E.Add(span, E.Mul(E.Sub(size, 1), stride))
    return simplify_expr(E.Add(span, 1))


def flat_buffer(buf: Buffer, name: str) -> Buffer:
    """The 1-d view of `buf`: same data, dtype and scope."""
    return Buffer(name, buf.data, buf.dtype, (flat_extent(buf),), (), 0, buf.scope)


def flat_index(buf: Buffer, indices: tuple, where) -> E.PrimExpr:
    """The 1-d index of an N-d access (row-major with the buffer's strides and offset)."""
    if len(indices) != len(buf.shape):
        raise TransformError(f"FlattenBuffer: {where}: buffer {buf.name!r} has {len(buf.shape)} "
                             f"dimensions but is indexed with {len(indices)}")
    for k, idx in enumerate(indices[:-1]):
        if idx.dtype.lanes != 1:
            raise TransformError(f"FlattenBuffer: {where}: vector index in dimension {k} of "
                                 f"{buf.name!r}; only the last index may be a vector (rule 1)")
    lanes = indices[-1].dtype.lanes if indices else 1

    def vec(e):
        return e if lanes == 1 or e.dtype.lanes == lanes else E.Broadcast(e, lanes)

    total = vec(buf.elem_offset)
    for idx, stride in zip(indices, _strides(buf)):
        total = E.Add(total, E.Mul(vec(idx), vec(stride)))
    return simplify_expr(total)


class _Flattener(Mutator):
    def __init__(self, mapping: dict):
        self.map = mapping  # original buffer -> flat buffer

    def visit_BufferLoad(self, op):
        indices = tuple(self.visit(i) for i in op.indices)
        flat = self.map.get(op.buffer)
        if flat is None:
            return E.BufferLoad(op.buffer, indices) if indices != op.indices else op
        return E.BufferLoad(flat, (flat_index(op.buffer, indices, "load"),))

    def visit_BufferStore(self, op):
        indices = tuple(self.visit(i) for i in op.indices)
        value = self.visit(op.value)
        flat = self.map.get(op.buffer)
        if flat is None:
            if value is op.value and indices == op.indices:
                return op
            return S.BufferStore(op.buffer, value, indices)
        return S.BufferStore(flat, value, (flat_index(op.buffer, indices, "store"),))

    def _declare(self, op, cls):
        buf = op.buffer
        if _is_flat(buf):
            return cls(buf, self.visit(op.body))
        flat = flat_buffer(buf, buf.name)
        self.map[buf] = flat
        return cls(flat, self.visit(op.body))

    def visit_AllocBuffer(self, op):
        return self._declare(op, S.AllocBuffer)

    def visit_DeclBuffer(self, op):
        return self._declare(op, S.DeclBuffer)


@dataclass(frozen=True)
class FlattenBuffer(Pass):
    """N-d buffer accesses become 1-d through flat aliases; buffer_map is unchanged."""

    def transform(self, func):
        """Make every N-d access 1-d through a flat DeclBuffer alias of each buffer."""
        mapping = {}
        decls = []
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None and not _is_flat(buf):
                flat = flat_buffer(buf, buf.name + "_flat")
                mapping[buf] = flat
                decls.append(flat)
        body = _Flattener(mapping).visit(func.body)
        for flat in reversed(decls):
            body = S.DeclBuffer(flat, body)
        return func if body is func.body else func.with_body(body)
