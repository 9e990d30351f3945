"""Buffer loads and stores (mixed into the kernel emitter).

A buffer lives in a `Memory`: a SPIR-V array variable whose elements have type `elem`. An IR
access with an L-lane index on an M-lane element type moves M*L lanes. One access per index lane
is emitted (an OpAccessChain and OpLoad/OpStore of one element) and lanes are assembled with
OpCompositeConstruct or taken apart with OpCompositeExtract/OpVectorShuffle. Codegen never
widens an access beyond the IR's element type and never introduces a pointer cast. A 3-lane
element type in a storage buffer is kept as its scalars (std430 would pad it to 16 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from vkir.errors import TypeCheckError
from vkir.ir import (Add, Broadcast, Buffer, DataType, IntImm, Mul, PrimExpr, Ramp)


@dataclass(frozen=True)
class Memory:
    """A SPIR-V array variable holding a buffer's elements."""

    var: int                # OpVariable id
    storage_class: str      # "StorageBuffer" | "Workgroup" | "Function"
    elem: DataType          # element type of the SPIR-V array
    block: bool             # storage buffer: the array is member 0 of a Block struct


def flat_index(buffer: Buffer, indices: tuple) -> PrimExpr:
    """The element index of `indices` in `buffer` (row-major, or by explicit strides, plus the
    element offset); only the last index may be a vector."""
    if len(indices) == 1 and not buffer.strides:
        index = indices[0]
    else:
        strides = list(buffer.strides)
        if not strides:
            strides = [IntImm("int32", 1)]
            for extent in reversed(buffer.shape[1:]):
                strides.insert(0, Mul(extent, strides[0]))
        index = None
        for i, s in zip(indices, strides):
            term = i if isinstance(s, IntImm) and s.value == 1 else _scale(i, s)
            index = term if index is None else _add(index, term)
    offset = buffer.elem_offset
    if not (isinstance(offset, IntImm) and offset.value == 0):
        index = _add(index, offset)
    return index


def _scale(i: PrimExpr, s: PrimExpr) -> PrimExpr:
    lanes = i.dtype.lanes
    return Mul(i, Broadcast(s, lanes) if lanes > 1 else s)


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    la, lb = a.dtype.lanes, b.dtype.lanes
    if la < lb:
        a = Broadcast(a, lb)
    elif lb < la:
        b = Broadcast(b, la)
    return Add(a, b)


class AccessMixin:
    """`load(buffer, indices)` and `store(buffer, value, indices)`."""

    def lane_indices(self, index: PrimExpr) -> list[int]:
        """One scalar index id per lane of `index`."""
        lanes = index.dtype.lanes
        if lanes == 1:
            return [self.expr(index)]
        sdt = index.dtype.element_of()
        if isinstance(index, Ramp):
            base = self.expr(index.base)
            out = [base]
            stride = index.stride
            s = None if isinstance(stride, IntImm) else self.expr(stride)
            for k in range(1, lanes):
                if s is None:
                    step = self.const(sdt, k * stride.value)
                else:
                    step = self.op("OpIMul", self.ty(sdt), s, self.const(sdt, k))
                out.append(self.op("OpIAdd", self.ty(sdt), base, step))
            return out
        v = self.expr(index)
        return [self.op("OpCompositeExtract", self.ty(sdt), v, k) for k in range(lanes)]

    def _element_pointers(self, buffer: Buffer, indices: tuple) -> tuple[Memory, list[int], int]:
        """(memory, pointer ids to the storage elements in lane order, lanes per IR element
        held by one storage element: the IR element's lanes, or 1 when stored as scalars)."""
        mem = self.memory_of(buffer)
        m = buffer.dtype.lanes
        split = m if mem.elem.lanes != m else 1  # IR element kept as `split` storage scalars
        ptr_type = self.b.type_pointer(mem.storage_class, self.ty(mem.elem))
        index = flat_index(buffer, indices)
        idt = index.dtype.element_of()
        lead = (self.const(DataType("int", 32), 0),) if mem.block else ()
        ptrs = []
        for i in self.lane_indices(index):
            if split == 1:
                ptrs.append(self.op("OpAccessChain", ptr_type, mem.var, *lead, i))
                continue
            first = self.op("OpIMul", self.ty(idt), i, self.const(idt, split))
            for c in range(split):
                j = first if c == 0 else self.op("OpIAdd", self.ty(idt), first,
                                                self.const(idt, c))
                ptrs.append(self.op("OpAccessChain", ptr_type, mem.var, *lead, j))
        return mem, ptrs, split

    def load(self, buffer: Buffer, indices: tuple) -> int:
        """The id of a value read from `buffer` at `indices` (vector accesses as one load where
        aligned; a parameter read through a texel buffer by OpImageFetch: texel_reads.py)."""
        texel = self.texels.get((buffer.data, buffer.dtype))
        if texel is not None:
            return self.texel_load(texel, buffer, indices)
        mem, ptrs, _ = self._element_pointers(buffer, indices)
        et = self.ty(mem.elem)
        parts = [self.op("OpLoad", et, p) for p in ptrs]
        if len(parts) == 1:
            return parts[0]
        lanes = buffer.dtype.lanes * indices[-1].dtype.lanes
        return self.op("OpCompositeConstruct", self.ty(buffer.dtype.with_lanes(lanes)), *parts)

    def store(self, buffer: Buffer, value: PrimExpr, indices: tuple) -> None:
        """Emit the store of `value` into `buffer` at `indices`."""
        want = buffer.dtype.with_lanes(buffer.dtype.lanes * indices[-1].dtype.lanes)
        if value.dtype != want:
            raise TypeCheckError(f"kernel {self.func.name!r}: storing {value.dtype} into "
                                 f"{buffer.name} needs {want} (typing rule 1)")
        v = self.expr(value)
        mem, ptrs, _ = self._element_pointers(buffer, indices)
        if len(ptrs) == 1:
            self.do("OpStore", ptrs[0], v)
            return
        et = self.ty(mem.elem)
        n = mem.elem.lanes
        for k, p in enumerate(ptrs):
            if n == 1:
                part = self.op("OpCompositeExtract", et, v, k)
            else:
                part = self.op("OpVectorShuffle", et, v, v, *range(k * n, k * n + n))
            self.do("OpStore", p, part)
