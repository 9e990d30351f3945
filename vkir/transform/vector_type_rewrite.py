"""VectorTypeRewrite (the VectorTypeRewriter): scalar buffers read and written only through aligned,
stride-1 ramps of one width L become buffers of L-lane vector elements.

SPIR-V has no pointer casts, so `A[Ramp(b, 1, 4)]` on a `float32` buffer cannot be one vector
load; on a `float32x4` buffer, `A_v[b // 4]` is. This pass changes the element type of the whole
storage (a kernel parameter, or a shared/local allocation, together with every `DeclBuffer` alias
over the same data, such as the flat alias FlattenBuffer declares) so that no pointer cast is ever
needed:

- `A[Ramp(b, 1, L)]` (load or store) with `b` provably a multiple of L becomes `A_v[b // L]`;
- a scalar read `A[i]` with `i` provably `≡ k (mod L)` becomes the lane extract
  `Shuffle([A_v[i // L]], [k])`; likewise a read `A[Ramp(b, s, n)]` with a constant stride whose
  lanes provably fall inside one vector element (e.g. the reversed `Ramp(4*q + 3, -1, 4)`)
  becomes `Shuffle([A_v[b // L]], [k, k+s, ...])`;
- the quotients `b // L` go through the arith simplifier, which knows the ranges of loop, let
  and size variables: `(bx*256 + tx*4) // 4` becomes `bx*64 + tx` where that is exact under
  int32 wrap-around (a constant grid), and stays a floor division (exact anyway) where it is not;
- the shape's last dimension is divided by L, the data var gets `PointerType(dtype xL, scope)`;
  for a parameter the new data var replaces the old one in `params` and `buffer_map`, so the
  kernel's binding becomes an array of vectors over the same bytes.

The storage is left scalar (never an error) unless all of these hold: every access is 1-d;
every vector access is a `Ramp` of stride 1 with one common width L in `allowed_lanes`, or a read
within one element as above; every such ramp base is a provable multiple of L and every other
read has a provable residue mod L (the modular-set analysis of vkir.arith, with let-bound values
known), so a ramp of another stride reaching over several elements is refused; there is no scalar
or strided store (writing some lanes of an element would be a read-modify-write of the whole
vector, racing with other invocations); every buffer over the data is scalar, compact, at element
offset 0 and of the data's own element type (no explicit cast aliases it); the last dimension of
every such buffer is a provable multiple of L; the element type is an integer or float (bool
storage belongs to BoolToInt8); and the data var is used only through buffers. For a refused
storage codegen emits one scalar access per lane, without any cast.

Soundness of parameters: the runtime owns a parameter's size, so a parameter is rewritten only
when the divisibility of its last dimension is proved from the signature itself -- a constant
(`(1024,)`, `(n, 4)`) or a product with such a constant. A symbolic extent such as `("n",)`
proves nothing and keeps the buffer scalar. The element offset must be 0, so the vector view
covers exactly the same bytes.

`allowed_lanes` defaults to (2, 4): Vulkan shaders have vectors of 2 to 4 components, and a
3-component vector has a 16-byte array stride under std430, so `float32x3` would not cover the
same bytes as three `float32`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

from ..arith import simplify_expr
from ..arith.bound import type_range, value_range
from ..arith import ModularSet, modular_set
from ..ir import (
    Add, Buffer, BufferLoad, BufferStore, FloorDiv, IntImm, Mul, Mutator, PointerType, PrimFunc,
    Ramp, Shuffle, Var, Visitor,
)
from ..ir.base import FrozenDict, PrimExpr
from ..ir.op import is_atomic
from .base import Pass


# ----------------------------------------------------------------------------------------------
# index arithmetic shared with PointerCastVectorize


def const_stride(index) -> int | None:
    """The stride of a scalar-based Ramp when it is a constant (also when spelled `0 - 1`)."""
    if not isinstance(index, Ramp) or index.base.dtype.lanes != 1:
        return None
    ms = modular_set(index.stride)
    return ms.base if ms.is_exact else None


def is_unit_ramp(index) -> bool:
    """True for `Ramp(b, 1, L)` with a scalar base and the constant stride 1."""
    return const_stride(index) == 1


def split_index(index: PrimExpr, lanes: int, var_sets: Mapping[Var, ModularSet] = {},
                var_ranges: Mapping = {}):
    """Write a scalar integer `index` as `q * lanes + k` with a constant lane `0 <= k < lanes`.

    Returns `(q, k)`, or None when the residue of `index` mod `lanes` is not provable (the
    modular-set analysis accounts for int32 wrap-around). `q` is `index // lanes` as the arith
    simplifier rewrites it with the known ranges and sets: division-free where that is exact
    under wrap-around (`(i*8 + 5) // 4` is `i*2 + 1` for a loop var i in [0, 100)), else the
    floor division itself, which is always exact.
    """
    k = modular_set(index, var_sets).residue(lanes)
    if k is None:
        return None
    q = simplify_expr(FloorDiv(index, IntImm(index.dtype, lanes)), var_ranges, var_sets)
    return q, k


def divide_extent(extent: PrimExpr, lanes: int) -> PrimExpr:
    """`extent / lanes` for a buffer extent proved to be a multiple of `lanes`.

    An extent counts elements: `n * 4` elements of a (n, 4) buffer are n vectors of 4. Unlike an
    index it never wraps (a buffer of more elements than int32 can count cannot be addressed at
    all), so the quotient is taken term by term: `n * 4` gives `n`, `m * n * 8` gives `m * n * 2`.
    """
    assert modular_set(extent).is_multiple_of(lanes), f"{extent} is not a multiple of {lanes}"
    q = _quotient(extent, lanes)
    return q if q is not None else FloorDiv(extent, IntImm(extent.dtype, lanes))


def _quotient(e: PrimExpr, lanes: int) -> PrimExpr | None:
    """`e / lanes` from e's own terms, for an element count `e` that is a multiple of `lanes`;
    None when the terms do not show it."""
    if isinstance(e, IntImm):
        return IntImm(e.dtype, e.value // lanes) if e.value % lanes == 0 else None
    if isinstance(e, Mul):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, IntImm) and c.value % lanes == 0:
                return _mul(x, IntImm(c.dtype, c.value // lanes))
        for x, y in ((e.a, e.b), (e.b, e.a)):
            qx = _quotient(x, lanes)
            if qx is not None:
                return _mul(qx, y)
        return None
    if isinstance(e, Add):
        qa, qb = _quotient(e.a, lanes), _quotient(e.b, lanes)
        return None if qa is None or qb is None else Add(qa, qb)
    return None


def lanes_in_element(index: PrimExpr, lanes: int, var_sets: Mapping[Var, ModularSet] = {},
                     var_ranges: Mapping = {}):
    """For a scalar index, or a constant-stride ramp, whose lanes all lie in one aligned element
    of `lanes` lanes: `(q, picks)` with the element index q and the lanes picked from it; else
    None."""
    if index.dtype.lanes == 1:
        parts = split_index(index, lanes, var_sets, var_ranges)
        return None if parts is None else (parts[0], (parts[1],))
    stride = const_stride(index)
    if stride is None:
        return None
    parts = split_index(index.base, lanes, var_sets, var_ranges)
    if parts is None:
        return None
    q, k = parts
    picks = tuple(k + stride * i for i in range(index.lanes))
    if not all(0 <= p < lanes for p in picks):
        return None
    return q, picks


def _show(e) -> str:
    """An expression as script text, for messages."""
    from ..ir.printer import script

    return script(e)


def _is_const(e, value) -> bool:
    return isinstance(e, IntImm) and e.value == value


def _mul(a, b):
    if _is_const(b, 1):
        return a
    if _is_const(a, 1):
        return b
    if _is_const(a, 0) or _is_const(b, 0):
        return IntImm(a.dtype, 0)
    return Mul(a, b)


class ContextMixin:
    """Tracks what is known of integer variables while a Visitor/Mutator descends: the modular
    sets of let-bound variables (so that `b` in `x = i * 4; A[Ramp(x, 1, 4)]` is a known multiple
    of 4) and, for the quotients, the ranges of loop and let variables and of the symbolic sizes
    (nonnegative), as the Simplify pass knows them."""

    var_sets: dict
    var_ranges: dict

    def _init_context(self, func: PrimFunc):
        self.var_sets, self.var_ranges = {}, {}
        for v in func.size_vars:
            full = type_range(v.dtype)
            if full is not None:
                self.var_ranges[v] = (0, full[1])

    def _bind(self, var: Var, value: PrimExpr):
        if isinstance(var.dtype, PointerType) or not var.dtype.is_integer or value.dtype.lanes != 1:
            return
        self.var_sets[var] = modular_set(value, self.var_sets)
        self.var_ranges[var] = value_range(value, self.var_ranges)

    def visit_For(self, node):
        """The loop variable runs through min .. min + extent - 1 (the whole type if that could
        wrap)."""
        var = node.loop_var
        full = type_range(var.dtype)
        (lo, hi), ext_hi = value_range(node.min, self.var_ranges), \
            value_range(node.extent, self.var_ranges)[1]
        if full is not None and lo is not None and ext_hi is not None:
            top = hi + max(ext_hi, 1) - 1
            self.var_ranges[var] = (lo, top) if top <= full[1] else full
        return self.generic_visit(node)

    def split(self, index: PrimExpr, lanes: int):
        """split_index in the current context."""
        return split_index(index, lanes, self.var_sets, self.var_ranges)


class ContextMutator(ContextMixin, Mutator):
    """A Mutator that keeps the context: a let-bound variable is known in the let's body."""

    def visit_LetStmt(self, node):
        """Visit the body with the let's value recorded (context for index analysis)."""
        value = self.visit(node.value)
        self._bind(node.var, node.value)
        body = self.visit(node.body)
        return node if value is node.value and body is node.body else \
            replace(node, value=value, body=body)

    visit_Let = visit_LetStmt


# ----------------------------------------------------------------------------------------------
# analysis: which storages can become vector buffers


@dataclass
class Storage:
    """Everything known about one data var: the buffers over it and how they are accessed."""

    data: Var
    root: str  # "param" | "alloc"
    buffers: list = field(default_factory=list)
    widths: set = field(default_factory=set)
    refusal: str | None = None

    def refuse(self, reason: str):
        """Give up on this storage, keeping the first reason (for the log)."""
        if self.refusal is None:
            self.refusal = reason


class _Collector(ContextMixin, Visitor):
    """Records each buffer's accesses, refusing a storage at the first access it cannot take."""

    def __init__(self, func: PrimFunc):
        self._init_context(func)
        self.storages: dict[Var, Storage] = {}
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None:
                self._declare(buf, "param")
        self.pending_reads: list = []  # (storage, buffer, index, var_sets snapshot)

    def _declare(self, buf: Buffer, root: str | None):
        st = self.storages.get(buf.data)
        if st is None:
            if root is None:
                return  # an alias of storage this function does not own: left alone
            st = self.storages[buf.data] = Storage(buf.data, root)
        if buf not in st.buffers:
            st.buffers.append(buf)
            if buf.dtype != buf.data.dtype.element:
                st.refuse(f"{buf.name} is a {buf.dtype} view of {buf.data.dtype.element} data "
                          f"(a pointer cast)")

    def visit_AllocBuffer(self, node):
        self._declare(node.buffer, "alloc")
        self.visit(node.body)

    def visit_DeclBuffer(self, node):
        self._declare(node.buffer, None)
        self.visit(node.body)

    def visit_LetStmt(self, node):
        self.visit(node.value)
        self._bind(node.var, node.value)
        self.visit(node.body)

    visit_Let = visit_LetStmt

    def visit_Var(self, var):
        st = self.storages.get(var)
        if st is not None:
            st.refuse(f"its data var {var.name} is used as a value")

    def visit_BufferLoad(self, node):
        self._access(node.buffer, node.indices, is_store=False)
        self.generic_visit(node)

    def visit_BufferStore(self, node):
        self._access(node.buffer, node.indices, is_store=True)
        self.generic_visit(node)

    def visit_Call(self, node):
        if is_atomic(node.op) and node.args and isinstance(node.args[0], BufferLoad):
            buf = node.args[0].buffer
            st = self.storages.get(buf.data)
            if st is not None:  # an atomic updates one scalar element: the storage stays scalar
                self._declare(buf, None)
                st.refuse(f"{buf.name} is updated by {node.op}")
        self.generic_visit(node)

    def _access(self, buf: Buffer, indices: tuple, is_store: bool):
        st = self.storages.get(buf.data)
        if st is None:
            return
        self._declare(buf, None)
        if st.refusal is not None:
            return
        if len(indices) != 1:
            return st.refuse(f"{buf.name} has a {len(indices)}-d access")
        index = indices[0]
        if index.dtype.lanes == 1 and is_store:
            return st.refuse(f"{buf.name} has a scalar store")
        if not is_unit_ramp(index):
            if is_store or not (index.dtype.lanes == 1 or isinstance(index, Ramp)):
                return st.refuse(f"{buf.name} has a vector access that is not a stride-1 ramp")
            # a read of some lanes of one element: checked once the width is known
            self.pending_reads.append((st, buf, index, dict(self.var_sets)))  # sets suffice
            return
        st.widths.add(index.lanes)
        if len(st.widths) > 1:
            return st.refuse(f"{buf.name} has mixed vector widths {sorted(st.widths)}")
        if not modular_set(index.base, self.var_sets).is_multiple_of(index.lanes):
            st.refuse(f"{buf.name} has a ramp base not provably a multiple of {index.lanes}")


def plan(func: PrimFunc, allowed_lanes=(2, 4)) -> dict[Var, Storage]:
    """For each storage (data var) of `func`, the analysis result: `refusal` is None when it will
    be rewritten with `widths == {L}`, else it says why the buffer stays scalar."""
    col = _Collector(func)
    col.visit(func.body)
    storages = col.storages
    for st, buf, index, var_sets in col.pending_reads:
        if st.refusal is not None:
            continue
        if len(st.widths) != 1:
            if index.dtype.lanes > 1:
                st.refuse(f"{buf.name} has a vector access that is not a stride-1 ramp")
            continue
        (lanes,) = st.widths
        if lanes_in_element(index, lanes, var_sets) is not None:
            continue
        if index.dtype.lanes == 1:
            st.refuse(f"{buf.name} has a scalar read with no provable lane mod {lanes}")
        else:
            st.refuse(f"{buf.name} has a vector access that is not a stride-1 ramp and reaches "
                      f"over several elements of {lanes} lanes")
    for st in storages.values():
        _check_storage(st, allowed_lanes)
    return storages


def _check_storage(st: Storage, allowed_lanes):
    if st.refusal is not None:
        return
    if not st.widths:
        return st.refuse("no vector access")
    (lanes,) = st.widths
    if lanes not in allowed_lanes:
        return st.refuse(f"width {lanes} is not one of {tuple(allowed_lanes)}")
    elem = st.data.dtype.element
    if elem.lanes != 1 or not (elem.is_integer or elem.is_float):
        return st.refuse(f"element type {elem} is not a scalar int or float")
    for buf in st.buffers:
        if buf.dtype != elem:
            return st.refuse(f"{buf.name} is a {buf.dtype} view of {elem} data (a pointer cast)")
        if buf.strides or not _is_const(buf.elem_offset, 0):
            return st.refuse(f"{buf.name} is strided or has an element offset")
        if not buf.shape:
            return st.refuse(f"{buf.name} has no dimensions")
        if not modular_set(buf.shape[-1]).is_multiple_of(lanes):
            return st.refuse(f"{buf.name}'s extent {_show(buf.shape[-1])} is not a provable "
                             f"multiple of {lanes}")


# ----------------------------------------------------------------------------------------------
# the rewrite


class _Rewriter(ContextMutator):
    def __init__(self, func: PrimFunc, lanes_of: dict[Var, int], buffers: dict[Buffer, Buffer]):
        self._init_context(func)
        self.lanes_of = lanes_of
        self.buffers = buffers

    def visit_buffer(self, buf):
        return self.buffers.get(buf, buf)

    def _index(self, buf, index):
        """The new scalar index into the vector buffer, and the lanes read from that element
        (None for a whole aligned ramp)."""
        lanes = self.lanes_of[buf.data]
        if is_unit_ramp(index):
            assert index.lanes == lanes
            q, k = self.split(index.base, lanes)
            assert k == 0, "the analysis refuses unaligned ramps"
            return self.visit(q), None
        parts = lanes_in_element(index, lanes, self.var_sets, self.var_ranges)
        assert parts is not None, "the analysis refuses reads outside one element"
        return self.visit(parts[0]), parts[1]

    def visit_BufferLoad(self, node):
        if node.buffer.data not in self.lanes_of:
            return self.generic_visit(node)
        q, picks = self._index(node.buffer, node.indices[0])
        load = BufferLoad(self.buffers[node.buffer], (q,), span=node.span)
        return load if picks is None else Shuffle((load,), picks, span=node.span)

    def visit_BufferStore(self, node):
        if node.buffer.data not in self.lanes_of:
            return self.generic_visit(node)
        q, picks = self._index(node.buffer, node.indices[0])
        assert picks is None, "partial stores are refused by the analysis"
        return BufferStore(self.buffers[node.buffer], self.visit(node.value), (q,), span=node.span)


def _vector_buffer(buf: Buffer, data: Var, lanes: int) -> Buffer:
    shape = (*buf.shape[:-1], divide_extent(buf.shape[-1], lanes))
    return Buffer(buf.name, data, buf.dtype.with_lanes(lanes), shape, (), buf.elem_offset,
                  buf.scope, span=buf.span)


@dataclass(frozen=True)
class VectorTypeRewrite(Pass):
    """Rewrite scalar buffers accessed only by aligned stride-1 ramps of one width (and aligned
    scalar reads) into vector-typed buffers; see the module docstring for the exact rule."""

    allowed_lanes: tuple = (2, 4)

    def transform(self, func: PrimFunc) -> PrimFunc:
        """Retype the buffers the analysis accepts as vector-typed and rewrite their accesses."""
        storages = plan(func, self.allowed_lanes)
        lanes_of, buffers, new_data = {}, {}, {}
        for data, st in storages.items():
            if st.refusal is not None:
                continue
            (lanes,) = st.widths
            ptr = data.dtype
            new_data[data] = Var(data.name, PointerType(ptr.element.with_lanes(lanes), ptr.scope),
                                 span=data.span)
            lanes_of[data] = lanes
            for buf in st.buffers:
                buffers[buf] = _vector_buffer(buf, new_data[data], lanes)
        if not lanes_of:
            return func
        body = _Rewriter(func, lanes_of, buffers).visit(func.body)
        params = tuple(new_data.get(p, p) for p in func.params)
        buffer_map = FrozenDict({new_data.get(p, p): buffers.get(b, b)
                                 for p, b in func.buffer_map.items()})
        return replace(func, params=params, body=body, buffer_map=buffer_map)


def rewritten_buffers(func: PrimFunc, allowed_lanes=(2, 4)) -> dict[str, int | str]:
    """For tests and diagnostics: storage name -> vector width it would get, or the refusal."""
    return {data.name: (next(iter(st.widths)) if st.refusal is None else st.refusal)
            for data, st in plan(func, allowed_lanes).items()}

