"""BoolToInt8: bool buffers are stored as int8, with explicit casts at every access.

Vulkan has no storable bool, so (typing rule 4) every bool buffer -- parameter, allocation or
declaration -- becomes an int8 buffer (boolxN elements become int8xN) over a new data var of
`PointerType(int8, scope)`. A load becomes `Cast(bool, A_i8[...])` (true exactly when the byte is
nonzero) and a store writes `Cast(int8, value)` (0 or 1). A parameter's data var is replaced in
`params` and `buffer_map`; any other buffer declared over the same data follows the new var.
At call time a numpy bool array is passed as its int8 bytes (numpy stores bools as 0/1 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.dtype import DataType, PointerType
from ..ir.functor import Mutator
from .base import Pass


def _int8_like(dt: DataType) -> DataType:
    return DataType("int", 8, dt.lanes)


class _Rewriter(Mutator):
    def __init__(self):
        self.data = {}     # old data var -> new data var
        self.buffers = {}  # old buffer -> new buffer

    def data_var(self, var: E.Var) -> E.Var:
        new = self.data.get(var)
        if new is None:
            ptr = var.dtype
            if isinstance(ptr, PointerType) and ptr.element.is_bool:
                new = E.Var(var.name, PointerType(_int8_like(ptr.element), ptr.scope))
            else:
                new = var
            self.data[var] = new
        return new

    def buffer(self, buf: Buffer) -> Buffer:
        new = self.buffers.get(buf)
        if new is None:
            data = self.data_var(buf.data)
            dtype = _int8_like(buf.dtype) if buf.dtype.is_bool else buf.dtype
            new = buf if data is buf.data and dtype == buf.dtype else \
                replace(buf, data=data, dtype=dtype)
            self.buffers[buf] = new
        return new

    def visit_buffer(self, buf):
        return self.buffer(buf)

    def visit_Var(self, op):
        return self.data.get(op, op)

    def visit_BufferLoad(self, op):
        indices = tuple(self.visit(i) for i in op.indices)
        new = self.buffer(op.buffer)
        if new is op.buffer and indices == op.indices:
            return op
        load = E.BufferLoad(new, indices)
        if op.buffer.dtype.is_bool:
            return E.Cast(op.dtype, load)
        return load

    def visit_BufferStore(self, op):
        indices = tuple(self.visit(i) for i in op.indices)
        value = self.visit(op.value)
        new = self.buffer(op.buffer)
        if new is op.buffer and value is op.value and indices == op.indices:
            return op
        if op.buffer.dtype.is_bool:
            value = E.Cast(_int8_like(value.dtype), value)
        return S.BufferStore(new, value, indices)


@dataclass(frozen=True)
class BoolToInt8(Pass):
    """Store bool buffers as int8 (see the module docstring)."""

    def transform(self, func):
        """Retype bool buffers as int8 with explicit casts at every access."""
        rw = _Rewriter()
        params, buffer_map = [], {}
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is None:
                params.append(p)
                continue
            new_buf = rw.buffer(buf)
            new_p = new_buf.data if p is buf.data else rw.data_var(p)
            params.append(new_p)
            buffer_map[new_p] = new_buf
        body = rw.visit(func.body)
        if body is func.body and all(a is b for a, b in zip(params, func.params)):
            return func
        return replace(func, params=tuple(params), body=body, buffer_map=buffer_map)
