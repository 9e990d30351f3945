"""Buffers: typed, shaped views over a pointer var (`data`)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import Node
from .dtype import DataType, PointerType
from .expr import IntImm, PrimExpr, Var, convert


@dataclass(frozen=True, slots=True, eq=False)
class Buffer(Node):
    """A buffer declaration. Identity matters (like Var): loads and stores refer to this object.

    `data` is a Var of PointerType(element, scope); when `dtype` differs from that element type the
    buffer is a pointer cast, legal only as a DeclBuffer (typing rule 2). `strides` is empty for a
    compact row-major buffer.
    """

    name: str
    data: Var
    dtype: DataType
    shape: tuple
    strides: tuple = ()
    elem_offset: PrimExpr = IntImm("int32", 0)
    scope: str = "global"

    def __post_init__(self):
        object.__setattr__(self, "dtype", DataType.parse(self.dtype))
        object.__setattr__(self, "shape", tuple(convert(s) for s in self.shape))
        object.__setattr__(self, "strides", tuple(convert(s) for s in self.strides))
        object.__setattr__(self, "elem_offset", convert(self.elem_offset))

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other

    def __repr__(self):
        shape = ", ".join(str(getattr(s, "value", getattr(s, "name", s))) for s in self.shape)
        return f"Buffer({self.name!r}, {str(self.dtype)!r}, ({shape}), {self.scope!r})"

    def __getitem__(self, indices):
        from .expr import BufferLoad

        if not isinstance(indices, tuple):
            indices = (indices,)
        return BufferLoad(self, indices)

    def load(self, *indices) -> PrimExpr:
        """`BufferLoad(self, indices)`: programmatic construction of a read."""
        from .expr import BufferLoad

        return BufferLoad(self, indices)

    def store(self, value, *indices):
        """`BufferStore(self, value, indices)`: programmatic construction of a write."""
        from .stmt import BufferStore

        return BufferStore(self, value, indices)


def decl_buffer(shape, dtype="float32", name="buffer", data: Var | None = None,
                scope: str | None = None, strides=(), elem_offset=0) -> Buffer:
    """A Buffer, with a fresh `data` var of PointerType(dtype, scope) when none is given.

    `scope` defaults to "global", or to the scope of `data`'s pointer when `data` is given (a
    buffer over a shared pointer is a shared buffer; anything else breaks typing rule 2)."""
    dt = DataType.parse(dtype)
    if scope is None:
        scope = data.dtype.scope if data is not None and isinstance(data.dtype, PointerType) else "global"
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    if data is None:
        data = Var(name, PointerType(dt, scope))
    return Buffer(name, data, dt, tuple(shape), tuple(strides), elem_offset, scope)
