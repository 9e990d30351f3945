"""The kernel's interface, found before any code is emitted: storage-buffer bindings (parameters
and explicit pointer casts of them), how each is accessed, push-constant layout, thread extents.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from vkir.errors import UnsupportedError
from vkir.ir.op import is_atomic
from vkir.ir import (Buffer, BufferLoad, BufferStore, Call, DataType, DeclBuffer, For, IntImm,
                     LetStmt, PrimExpr, PrimFunc, Var, Visitor)
from vkir.ir.substitution import substitute

from ..module import PushConstant
from . import loop_cut

FLOAT32 = DataType("float", 32)
UINT32 = DataType("uint", 32)


@dataclass
class StorageBinding:
    """One descriptor binding: the parameter `data` var viewed with element type `dtype`."""

    binding: int
    param_index: int
    data: Var
    dtype: DataType
    buffer: Buffer
    readable: bool = False
    writable: bool = False


@dataclass
class Interface:
    """What the host must know: bindings, push-constant layout, thread-binding extents."""

    bindings: dict = field(default_factory=dict)   # (data var, dtype) -> StorageBinding
    push_constants: list = field(default_factory=list)
    push_constant_size: int = 0
    threads: dict = field(default_factory=dict)     # "threadIdx.x" -> extent PrimExpr

    def binding_of(self, buffer: Buffer) -> StorageBinding | None:
        """The storage-buffer binding of a buffer (None for a buffer without one)."""
        return self.bindings.get((buffer.data, buffer.dtype))

    def register(self, buffer: Buffer, param_index: int) -> None:
        """Give the view of parameter `param_index` that `buffer` is the next binding number
        (once per data var and element type)."""
        key = (buffer.data, buffer.dtype)
        if key not in self.bindings:
            self.bindings[key] = StorageBinding(len(self.bindings), param_index, buffer.data,
                                                buffer.dtype, buffer)


def _widened(dt: DataType) -> DataType:
    """How a scalar travels in the push-constant block: at least 32 bits, bool as uint32."""
    if dt.code == "bool":
        return DataType("uint", 32)
    if dt.bits < 32:
        return DataType(dt.code, 32)
    return dt


class _Scan(Visitor):
    """Collects pointer casts of parameters, buffer accesses and thread-binding extents."""

    def __init__(self, iface: Interface, params: dict, name: str, cas_float_add: bool = False):
        self.iface = iface
        self.params = params  # data var -> param index
        self.name = name
        self.cas_float_add = cas_float_add  # float atomic adds need a uint32 view (see sync.py)
        self.lets: dict = {}  # enclosing LetStmt vars -> their values (themselves closed)

    def visit_LetStmt(self, node: LetStmt):
        self.visit(node.value)
        self.lets[node.var] = substitute(node.value, self.lets) if self.lets else node.value
        self.visit(node.body)
        del self.lets[node.var]

    def visit_DeclBuffer(self, node: DeclBuffer):
        if node.buffer.data in self.params:
            self.iface.register(node.buffer, self.params[node.buffer.data])
        self.generic_visit(node)

    def visit_BufferLoad(self, node: BufferLoad):
        b = self.iface.binding_of(node.buffer)
        if b is not None:
            b.readable = True
        self.generic_visit(node)

    def visit_Call(self, node: Call):
        if is_atomic(node.op) and node.args and isinstance(node.args[0], BufferLoad):
            buf = node.args[0].buffer
            b = self.iface.binding_of(buf)
            if b is not None:  # an atomic reads and writes its element
                b.readable = b.writable = True
                looped = node.op in ("atomic_min", "atomic_max") or \
                    (self.cas_float_add and node.op == "atomic_add")
                if looped and buf.dtype == FLOAT32:   # compare-exchange loops (sync.py)
                    view = replace(buf, dtype=UINT32)  # the same binding, as uint32 words
                    self.iface.register(view, b.param_index)
                    view_binding = self.iface.binding_of(view)
                    view_binding.readable = view_binding.writable = True
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore):
        b = self.iface.binding_of(node.buffer)
        if b is not None:
            b.writable = True
        self.generic_visit(node)

    def visit_For(self, node: For):
        if node.kind == "thread_binding":
            # the grid is evaluated by the host: extents must not name kernel-local lets
            extent = substitute(node.extent, self.lets) if self.lets else node.extent
            extent = _fold(extent)
            old = self.iface.threads.get(node.thread)
            if old is None:
                self.iface.threads[node.thread] = extent
            elif not _same_extent(old, extent):
                raise UnsupportedError(
                    f"kernel {self.name!r}: {node.thread} is bound with extents {old} and "
                    f"{extent}; every {node.thread} loop must have the same extent")
        self.generic_visit(node)


def _fold(extent: PrimExpr) -> PrimExpr:
    """A constant extent as an IntImm (e.g. 8 * 8 after let substitution), else unchanged."""
    if isinstance(extent, IntImm):
        return extent
    from vkir.arith import const_int_bound

    lo, hi = const_int_bound(extent)
    if lo is not None and lo == hi:
        return IntImm(extent.dtype, lo)
    return extent


def _same_extent(a: PrimExpr, b: PrimExpr) -> bool:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return a.value == b.value
    return a == b


def analyze(func: PrimFunc, max_push_constant_bytes: int, cas_float_add: bool = False) -> Interface:
    """Bindings (parameter buffers in parameter order, then casts in order of appearance), push
    constants (scalar parameters then symbolic sizes, std430 offsets) and thread extents.
    `cas_float_add`: the device has no float32 atomic add on storage buffers, so each buffer that
    one updates also gets a uint32 view for the compare-exchange loop that replaces it; buffers
    updated by float32 atomic min or max always get one (sync.py loops those everywhere)."""
    iface = Interface()
    params = {}
    scalars = []
    for index, p in enumerate(func.params):
        buf = func.buffer_map.get(p)
        if buf is not None:
            params[buf.data] = index
        elif isinstance(p.dtype, DataType) and not p.dtype.is_handle:
            scalars.append(p)
        elif getattr(p.dtype, "texel", None) is not None:
            continue   # an ImageType: a descriptor of its own (spirv/codegen/images.py)
        else:
            raise UnsupportedError(f"kernel {func.name!r}: parameter {p.name!r} of type "
                                   f"{p.dtype} has no buffer in buffer_map")
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is not None:
            iface.register(buf, params[buf.data])
    _Scan(iface, params, func.name, cas_float_add).visit(func.body)
    record = loop_cut.record_buffer(func)
    if record is not None:   # loop-cut checks write it from codegen, unseen by the scan
        b = iface.binding_of(record)
        b.readable = b.writable = True

    offset = 0
    for var in (*scalars, *func.size_vars):
        if var.dtype.lanes != 1:
            raise UnsupportedError(f"kernel {func.name!r}: vector scalar parameter {var.name!r}")
        dt = _widened(var.dtype)
        size = dt.bits // 8
        offset = -(-offset // size) * size
        iface.push_constants.append(PushConstant(var, offset, dt))
        offset += size
    iface.push_constant_size = offset
    if offset > max_push_constant_bytes:
        raise UnsupportedError(
            f"kernel {func.name!r} needs {offset} bytes of push constants for its scalar "
            f"parameters and sizes; the device allows {max_push_constant_bytes}")
    return iface
