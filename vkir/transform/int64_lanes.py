"""int64/uint64 vectors taken apart lane by lane, for EmulateInt64.

A 64-bit lane is a pair of 32-bit words, and a Vulkan vector has at most 4 components, so an
int64x4 value has no vector type of its own on a device without int64. Before the word-pair
rewrite, this step turns every computation on 64-bit integer vectors into per-lane scalar
computations of the same function (still in int64/uint64, which the pair rewrite then
emulates):

- A buffer of 64-bit vector elements (int64x2, int64x4: VectorTypeRewrite's) becomes a buffer of
  64-bit scalars with N times the elements in its last dimension (the same bytes); element `i`
  is the lanes at `N * i .. N * i + N - 1`.
- A 64-bit vector view of another buffer's memory (a pointer cast: `T.decl_buffer((n,),
  "uint64x4", data=x.data)` of a float32 `x`) stays a view of that memory, of 64-bit scalars.
- A `T.reinterpret` that changes the lane count (uint64x2 as float32x4 and back) is taken
  lane by lane from whole 64-bit lanes (see `lane_reinterpret`).
- A store of a 64-bit vector (or through a 64-bit vector index) becomes one store per lane.
- An expression of another type that takes 64-bit vectors (a comparison, a cast to float32x4, a
  load through an int64 ramp index) is computed lane by lane and its lanes gathered with a
  Shuffle, so that it keeps its vector type.
- A `LetStmt` of a 64-bit vector binds one variable per lane; an expression-level `Let` inside a
  lane is bound again, under a fresh name, in each lane that uses it.

Lane `k` of an elementwise operation is the operation on lane `k` of its operands; of a ramp
`base + k * stride`; of a broadcast its value; of a load through a vector index the load at that
index's lane `k`. Anything else that yields a 64-bit vector (an impure call, a nested vector
index) is refused with UnsupportedError naming it.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from ..errors import UnsupportedError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir import walk
from ..ir.dtype import DataType, PointerType
from ..ir.functor import Mutator, children
from ..ir.op import is_pure

_names = itertools.count()


def wide_vector(dt) -> bool:
    """True for int64/uint64 types of more than one lane."""
    return isinstance(dt, DataType) and dt.code in ("int", "uint") and dt.bits == 64 and \
        dt.lanes > 1


def _dtype(node):
    return getattr(node, "dtype", None)


def mentions_wide_vectors(func) -> bool:
    """Whether `func` has a 64-bit integer vector value or buffer element anywhere."""
    for node in walk(func.body):
        dt = _dtype(node)
        if wide_vector(dt) or (isinstance(dt, PointerType) and wide_vector(dt.element)):
            return True
        if isinstance(node, (S.AllocBuffer, S.DeclBuffer)) and wide_vector(node.buffer.dtype):
            return True
    return any(wide_vector(b.dtype) for b in func.buffer_map.values())


class _Scalarizer(Mutator):
    """Rewrites 64-bit integer vectors into per-lane scalars (see the module docstring)."""

    def __init__(self, func_name: str):
        self.func_name = func_name
        self.buffers = {}     # 64-bit vector-element Buffer -> its scalar-element Buffer
        self.datas = {}       # the data Var of such a buffer -> its scalar-element pointer Var
        self.lane_vars = {}   # 64-bit vector Var of a let -> {lane: its Var for that lane}
        self.current = {}     # within one lane: Var of an enclosing Let -> its renamed Var

    def refuse(self, what: str):
        raise UnsupportedError(f"kernel {self.func_name!r}: {what} on a device without int64 "
                               "(shaderInt64) is not emulated")

    # -- buffers -------------------------------------------------------------------------------
    def visit_buffer(self, buf):
        if not wide_vector(buf.dtype):
            return buf
        new = self.buffers.get(buf)
        if new is None:
            n = buf.dtype.lanes
            if buf.strides or not buf.shape:
                self.refuse(f"the strided or 0-d {buf.dtype} buffer {buf.name!r}")
            data = self.datas.get(buf.data, buf.data)
            if wide_vector(data.dtype.element):   # its own memory: 64-bit scalars now
                data = self.datas[buf.data] = E.Var(
                    buf.data.name, PointerType(buf.dtype.element_of(), buf.data.dtype.scope))
            last = buf.shape[-1]
            new = self.buffers[buf] = replace(
                buf, data=data, dtype=buf.dtype.element_of(),
                shape=(*buf.shape[:-1], _times(last, n)), elem_offset=_times(buf.elem_offset, n))
        return new

    def visit_Var(self, op):
        if op in self.datas:
            return self.datas[op]
        return self.current.get(op, op)

    # -- statements ----------------------------------------------------------------------------
    def visit_BufferStore(self, op):
        vector_elements = wide_vector(op.buffer.dtype)
        if not (vector_elements or wide_vector(op.value.dtype)
                or any(wide_vector(i.dtype) for i in op.indices)):
            return self.generic_visit(op)
        if not vector_elements and op.buffer.dtype.lanes != 1:
            self.refuse(f"a store to the {op.buffer.dtype} buffer {op.buffer.name!r} through a "
                        "64-bit vector index")
        last = self.element_index(op.buffer, op.indices[-1])
        n = op.value.dtype.lanes
        value = op.value
        rest = tuple(self.visit(i) for i in op.indices[:-1])
        buf = self.visit_buffer(op.buffer)
        if not wide_vector(value.dtype) and n > 1:   # computed once, its lanes stored
            var = E.Var(f"v{next(_names)}", value.dtype)
            stores = tuple(S.BufferStore(buf, E.Shuffle((var,), (k,)),
                                         (*map(_renamed, rest), self.lane(last, k)))
                           for k in range(n))
            return S.LetStmt(var, self.visit(value), S.SeqStmt(stores))
        return S.SeqStmt(tuple(S.BufferStore(buf, self.lane(value, k),
                                             (*map(_renamed, rest), self.lane(last, k)))
                               for k in range(n)))

    def element_index(self, buf, index):
        """The last index of an access of `buf` in scalar elements: a vector-element buffer's
        element `i` is the ramp of its lanes."""
        if not wide_vector(buf.dtype):
            return index
        if index.dtype.lanes != 1:
            self.refuse(f"a vector index into the {buf.dtype} buffer {buf.name!r}")
        n = buf.dtype.lanes
        return E.Ramp(_times(index, n), E.IntImm(index.dtype, 1), n)

    def visit_LetStmt(self, op):
        if not wide_vector(op.var.dtype):
            return self.generic_visit(op)
        names = tuple(E.Var(f"{op.var.name}_{k}", op.var.dtype.element_of())
                      for k in range(op.var.dtype.lanes))
        values = tuple(self.lane(op.value, k) for k in range(len(names)))
        self.lane_vars[op.var] = dict(enumerate(names))
        body = self.visit(op.body)
        for var, value in reversed(tuple(zip(names, values))):
            body = S.LetStmt(var, value, body)
        return body

    # -- expressions ---------------------------------------------------------------------------
    def visit(self, node):
        dt = _dtype(node)
        if isinstance(dt, DataType) and not wide_vector(dt) and not isinstance(node, E.Var) \
                and any(wide_vector(_dtype(c)) for c in children(node)):
            # an expression of another type computed from 64-bit vectors: lane by lane
            if dt.lanes == 1:
                return self.lane(node, 0)
            return E.Shuffle(tuple(self.lane(node, k) for k in range(dt.lanes)),
                             tuple(range(dt.lanes)))
        if wide_vector(dt) and not isinstance(node, E.Var):
            self.refuse(f"the {dt} value {type(node).__name__} here")
        return super().visit(node)

    def lane(self, e, k: int):
        """The scalar expression of lane `k` of `e` (`e` itself, rewritten, for a scalar)."""
        dt = _dtype(e)
        if dt.lanes == 1 and not any(wide_vector(_dtype(c)) for c in children(e)):
            return _renamed(self.visit(e))   # (each lane its own copy: lets of their own names)
        method = getattr(self, "lane_" + type(e).__name__, None)
        if method is not None:
            return method(e, k)
        if isinstance(e, (E.BinaryOp)):
            return type(e)(self.lane(e.a, k), self.lane(e.b, k))
        if wide_vector(dt):
            self.refuse(f"lane {k} of the {dt} value {type(e).__name__}")
        return E.Shuffle((_renamed(self.visit(e)),), (k,))

    def lane_Var(self, e, k):
        if e in self.lane_vars:
            return self.lane_vars[e][k]
        renamed = self.current.get(e, e)
        if wide_vector(e.dtype):
            self.refuse(f"the {e.dtype} variable {e.name!r}")
        return E.Shuffle((renamed,), (k,))

    def lane_Ramp(self, e, k):
        base, stride = self.visit(e.base), self.visit(e.stride)
        if base.dtype.lanes != 1:
            self.refuse(f"the nested {e.dtype} ramp")
        return base if k == 0 else E.Add(base, E.Mul(stride, E.IntImm(stride.dtype, k)))

    def lane_Broadcast(self, e, k):
        if e.value.dtype.lanes != 1:
            return self.lane(e.value, k % e.value.dtype.lanes)
        return self.visit(e.value)

    def lane_Shuffle(self, e, k):
        j = e.indices[k]
        for v in e.vectors:
            if j < v.dtype.lanes:
                return self.lane(v, j) if v.dtype.lanes > 1 else self.visit(v)
            j -= v.dtype.lanes
        raise AssertionError("a shuffle index past its vectors (verify_types refuses it)")

    def lane_BufferLoad(self, e, k):
        buf = e.buffer
        if not wide_vector(buf.dtype) and buf.dtype.lanes != 1:
            if wide_vector(e.dtype):
                self.refuse(f"a {e.dtype} load from the {buf.dtype} buffer {buf.name!r}")
            return E.Shuffle((_renamed(self.visit(e)),), (k,))
        last = self.element_index(buf, e.indices[-1])
        return E.BufferLoad(self.visit_buffer(buf), (*(self.visit(i) for i in e.indices[:-1]),
                                                     self.lane(last, k)))

    def lane_Not(self, e, k):
        return E.Not(self.lane(e.a, k))

    def lane_Select(self, e, k):
        cond = e.condition
        return E.Select(self.lane(cond, k) if cond.dtype.lanes > 1 else self.visit(cond),
                        self.lane(e.true_value, k), self.lane(e.false_value, k))

    def lane_Cast(self, e, k):
        return E.Cast(e.dtype.element_of(), self.lane(e.value, k))

    def lane_Call(self, e, k):
        if not is_pure(e.op):
            self.refuse(f"T.{e.op} giving {e.dtype}")
        if e.op == "reinterpret" and e.args[0].dtype.lanes != e.dtype.lanes:
            return self.lane_reinterpret(e.args[0], e.dtype, k)
        if any(a.dtype.lanes not in (1, e.dtype.lanes) for a in e.args):
            self.refuse(f"T.{e.op} giving {e.dtype} from {', '.join(str(a.dtype) for a in e.args)}")
        return E.Call(e.dtype.element_of(), e.op,
                      tuple(self.lane(a, k) if a.dtype.lanes > 1 else self.visit(a) for a in e.args))

    def lane_reinterpret(self, src, dt: DataType, k: int):
        """Lane `k` of `T.reinterpret(src, dt)` where the lane count changes (the bytes stay in
        place, little-endian: a uint64x2 is the float32x4 of its words, low word first). Into
        narrower lanes, `r` of them a 64-bit lane: lane `k % r` of the `r`-lane reinterpret of
        64-bit lane `k // r` (which EmulateInt64 takes from its word pair). Into 64-bit lanes
        from `r` narrower ones: the 64-bit reinterpret of lanes `r * k .. r * k + r - 1`."""
        if wide_vector(src.dtype) or (_dtype(src).bits == 64 and src.dtype.code in ("int", "uint")):
            r = dt.lanes // src.dtype.lanes
            part = DataType(dt.code, dt.bits, r)
            return E.Shuffle((E.Call(part, "reinterpret", (self.lane(src, k // r),)),), (k % r,))
        if wide_vector(dt):
            r = src.dtype.lanes // dt.lanes
            part = E.Shuffle((_renamed(self.visit(src)),), tuple(range(r * k, r * k + r)))
            return E.Call(dt.element_of(), "reinterpret", (part,))
        return E.Shuffle((E.Call(dt, "reinterpret", (_renamed(self.visit(src)),)),), (k,))

    def lane_Let(self, e, k):
        """The let bound again in this lane under a fresh name (a variable is bound once); a
        64-bit vector let binds its lane `k` only."""
        per_lane = wide_vector(e.var.dtype)
        value = self.lane(e.value, k) if per_lane else _renamed(self.visit(e.value))
        fresh = E.Var(f"{e.var.name}_{next(_names)}", value.dtype)
        names = self.lane_vars if per_lane else self.current
        saved = names.get(e.var)
        names[e.var] = {k: fresh} if per_lane else fresh
        try:
            body = self.lane(e.body, k)
        finally:
            if saved is None:
                del names[e.var]
            else:
                names[e.var] = saved
        return E.Let(fresh, value, body)


class _Renamer(Mutator):
    """A copy of an expression whose lets bind fresh variables (a let's variable is bound once
    in a function, and each lane evaluates its own copy)."""

    def __init__(self):
        self.names = {}

    def visit_Var(self, op):
        return self.names.get(op, op)

    def visit_Let(self, op):
        value = self.visit(op.value)
        fresh = E.Var(f"{op.var.name}_{next(_names)}", op.var.dtype)
        saved = self.names.get(op.var)
        self.names[op.var] = fresh
        body = self.visit(op.body)
        if saved is None:
            del self.names[op.var]
        else:
            self.names[op.var] = saved
        return E.Let(fresh, value, body)


def _renamed(e: E.PrimExpr) -> E.PrimExpr:
    """`e`, or where it binds lets a copy with fresh names for them."""
    if not any(isinstance(n, E.Let) for n in walk(e)):
        return e
    return _Renamer().visit(e)


def _times(e: E.PrimExpr, n: int) -> E.PrimExpr:
    """n * e (folded for a constant)."""
    if isinstance(e, E.IntImm):
        return E.IntImm(e.dtype, e.value * n)
    return E.Mul(e, E.IntImm(e.dtype, n))


def scalarize(func):
    """`func` without 64-bit integer vectors (see the module docstring); itself without any."""
    if not mentions_wide_vectors(func):
        return func
    sc = _Scalarizer(func.name)
    params, buffer_map = [], {}
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            if wide_vector(p.dtype):
                sc.refuse(f"the {p.dtype} scalar parameter {p.name!r}")
            params.append(p)
            continue
        new = sc.visit_buffer(buf)
        data = new.data if p is buf.data else p
        params.append(data)
        buffer_map[data] = new
    body = sc.visit(func.body)
    return replace(func, params=tuple(params), body=body, buffer_map=buffer_map)
