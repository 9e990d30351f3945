"""The explicit-cast checker: every node obeys vkir's typing rules (and two constant checks).

1. access lanes: an access with L index lanes on an M-lane element type has M*L lanes; only the last
   index may be a vector; indices are integers; a store's value has exactly the access type.
2. explicit pointer casts: a buffer whose dtype differs from its data pointer's element type is a
   pointer cast, legal only as a `DeclBuffer` (buffer_map and AllocBuffer buffers must agree).
3. identical operand types: binary operands, Select/if_then_else branches, Ramp base/stride, loop
   bounds and loop var, let values and vars, intrinsic arguments; bool-only, int-only and
   no-bool operators; bool scalar conditions; shuffle indices in range.
4. casts keep the lane count (and reinterpret the bit width); on Vulkan no global buffer is bool.
5. nothing else implicit: constants fit their type, pointers are never values, loop and thread
   kinds, sizes and async counts are integers; a constant shift amount lies in [0, bits).
6. a constant index into a dimension of constant extent lies inside it, a constant thread
   extent is not negative, and a serial loop of constant min and extent stays within its
   variable's type, its end min + extent included (so that what fails whatever the inputs is
   refused before it runs, in the interpreter and on devices alike).

`verify_types(func, target=None)` raises `TypeCheckError` naming the rule, the node (compactly), the
two types involved, and the source span when the node or its enclosing statement has one. It never
trusts derived `dtype` properties (ill-typed nodes may not even compute one); it computes every
type itself, so that any ill-typed input gives a TypeCheckError and nothing else.
"""

from __future__ import annotations

import math

from ..errors import TypeCheckError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.base import PrimExpr, Stmt, show
from ..ir.buffer import Buffer
from ..ir.dtype import DataType, PointerType, SCOPES, type_range
from ..ir.function import PrimFunc
from ..ir.intrinsics import INTRINSICS
from ..ir.op import OPS
from ..ir.printer import compact
from ..ir.structural import recursion_headroom
from ..ir.image import ImageLoad
from ..ir.image_type import ImageType
from . import image_types as images
from .verify_types_sync import check_atomic, check_subgroup

RULES = {
    1: "access lanes",
    2: "explicit pointer casts",
    3: "identical operand types",
    4: "cast lanes and bool storage",
    5: "nothing implicit",
    6: "constant indices, launch extents and loop ranges in bounds",
}

BOOL = DataType("bool", 1)
_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Mod, E.FloorDiv, E.FloorMod, E.Min, E.Max)
_CMP = (E.EQ, E.NE, E.LT, E.LE, E.GT, E.GE)
_LOGIC = (E.And, E.Or)


def verify_types(func: PrimFunc, target=None) -> None:
    """Raise TypeCheckError at the first violation of the typing rules; return None otherwise.

    `target` is a vkir.Target (or a target name, or None for no target). For a Vulkan target a
    global bool buffer is an error (BoolToInt8 must have run).
    """
    from ..target import Target

    target = Target.coerce(target)
    with recursion_headroom():  # one recursion per level of deep expressions
        _Checker(target is not None and target.is_vulkan).check_func(func)


def _constant_lanes(e) -> tuple:
    """The lane values of an integer constant expression (an IntImm, a Broadcast of one, a Ramp
    of two); () for anything else."""
    if isinstance(e, E.IntImm):
        return (e.value,)
    if isinstance(e, E.Broadcast) and isinstance(e.value, E.IntImm):
        return (e.value.value,)
    if isinstance(e, E.Ramp) and isinstance(e.base, E.IntImm) and isinstance(e.stride, E.IntImm) \
            and isinstance(e.lanes, int):
        return tuple(e.base.value + k * e.stride.value for k in range(e.lanes))
    return ()


class _Checker:
    def __init__(self, vulkan: bool):
        self.vulkan = vulkan
        self.span = None            # span of the innermost enclosing statement that has one
        self.declared = set()       # buffers declared by buffer_map / AllocBuffer / DeclBuffer
        self.checked_use = set()    # undeclared buffers already checked at a use

    # -- reporting ---------------------------------------------------------------------------

    def fail(self, rule: int, node, what: str, a=None, b=None):
        msg = f"rule {rule} ({RULES[rule]}): {what}"
        if a is not None or b is not None:
            msg += f": {a} vs {b}"
        msg += f" in `{compact(node)}`"
        span = getattr(node, "span", None) or self.span
        if span is not None:
            msg += f" at {span}"
            line = getattr(span, "source_line", "")
            if line:
                msg += f"\n    {line.rstrip()}"
        raise TypeCheckError(msg)

    # -- function ----------------------------------------------------------------------------

    def check_func(self, func):
        if not isinstance(func, PrimFunc):
            raise TypeCheckError(f"rule 5 ({RULES[5]}): expected a PrimFunc, got "
                                 f"{type(func).__name__}")
        self.span = func.span
        for p in func.params:
            if not isinstance(p, E.Var):
                self.fail(5, func, f"parameter {show(p)} is not a Var")
            self.var_type(p, allow_pointer=True)
        for p, buffer in func.buffer_map.items():
            if not isinstance(buffer, Buffer):
                self.fail(5, func, f"buffer_map entry of {getattr(p, 'name', p)} is not a Buffer")
            if buffer.data is not p:
                self.fail(2, func, f"buffer {buffer.name} in buffer_map does not use its parameter "
                          f"{getattr(p, 'name', p)} as data")
            self.check_buffer(buffer, func, cast_allowed=False)
        self.stmt(func.body)

    # -- buffers -----------------------------------------------------------------------------

    def check_buffer(self, buffer, node, cast_allowed: bool):
        """Rule 2 (and 4 on Vulkan) for a buffer declaration; sizes are integer scalars."""
        if not isinstance(buffer, Buffer):
            self.fail(5, node, f"{show(buffer)} is not a Buffer")
        self.declared.add(buffer)
        data = buffer.data
        dt = buffer.dtype
        if not isinstance(dt, DataType) or dt.is_handle:
            self.fail(5, node, f"buffer {buffer.name} has element type {dt}")
        if not isinstance(data, E.Var) or not isinstance(data.dtype, PointerType):
            self.fail(2, node, f"data of buffer {buffer.name} is not a pointer var",
                      getattr(data, "dtype", type(data).__name__), PointerType(dt, "global")
                      if buffer.scope in SCOPES else dt)
        ptr = data.dtype
        if buffer.scope != ptr.scope:
            self.fail(2, node, f"buffer {buffer.name} of scope {buffer.scope} over a pointer into "
                      f"{ptr.scope}", ptr, PointerType(dt, ptr.scope))
        if not cast_allowed and dt != ptr.element:
            self.fail(2, node, f"implicit pointer cast: buffer {buffer.name} reads its data "
                      f"{data.name} as another type (only a DeclBuffer may cast)", ptr.element, dt)
        if self.vulkan and dt.is_bool and buffer.scope == "global":
            self.fail(4, node, f"bool buffer {buffer.name} in global memory on Vulkan (bool is "
                      f"stored as int8 through explicit casts: run BoolToInt8)", dt,
                      DataType("int", 8, dt.lanes))
        for what, exprs in (("shape", buffer.shape), ("strides", buffer.strides),
                            ("elem_offset", (buffer.elem_offset,))):
            for x in exprs:
                t = self.expr(x)
                if not t.is_integer or t.lanes != 1:
                    self.fail(5, node, f"{what} of buffer {buffer.name} must be an integer scalar",
                              t, DataType("int", 32))

    def use_buffer(self, buffer, node):
        if not isinstance(buffer, Buffer):
            self.fail(5, node, f"{show(buffer)} is not a Buffer")
        if buffer not in self.declared and buffer not in self.checked_use:
            self.checked_use.add(buffer)
            self.check_buffer(buffer, node, cast_allowed=False)
            self.declared.discard(buffer)

    def access(self, node, buffer, indices) -> DataType:
        """Rule 1: the type of an access (load or store) of `buffer` at `indices`."""
        self.use_buffer(buffer, node)
        if not isinstance(indices, tuple):
            self.fail(1, node, "indices must be a tuple")
        if len(indices) != len(buffer.shape):
            self.fail(1, node, f"buffer {buffer.name} has {len(buffer.shape)} dims but is accessed "
                      f"with {len(indices)} indices")
        lanes = 1
        for k, i in enumerate(indices):
            t = self.expr(i)
            if not t.is_integer:
                self.fail(1, i, f"index {k} of {buffer.name} must be an integer", t,
                          DataType("int", 32, t.lanes))
            if t.lanes > 1 and k != len(indices) - 1:
                self.fail(1, i, f"only the last index may be a vector; index {k} of {buffer.name} "
                          f"has {t.lanes} lanes", t, t.element_of())
            lanes = t.lanes
            extent = buffer.shape[k]
            if isinstance(extent, E.IntImm):
                for value in _constant_lanes(i):
                    if not 0 <= value < extent.value:
                        shape = ", ".join(compact(x, 20) for x in buffer.shape)
                        shape += "," if len(buffer.shape) == 1 else ""
                        self.fail(6, node, f"constant index {value} is outside dim {k} of buffer "
                                  f"{buffer.name} (shape ({shape}))")
        elem = buffer.dtype
        return elem.with_lanes(elem.lanes * lanes)

    # -- expressions -------------------------------------------------------------------------

    def var_type(self, v, allow_pointer=False):
        t = v.dtype
        if isinstance(t, ImageType):
            if not allow_pointer:
                self.fail(5, v, f"{t.kind} {v.name} used as a value (index it, T.sample it or "
                          f"T.image_size it)")
            return t
        if isinstance(t, PointerType):
            if not allow_pointer:
                self.fail(5, v, f"pointer {v.name} used as a value", t, t.element)
            return t
        if not isinstance(t, DataType):
            self.fail(5, v, f"variable {v.name} has no data type", t, "a DataType")
        return t

    def expr(self, e) -> DataType:
        if not isinstance(e, PrimExpr):
            self.fail(5, e, f"{type(e).__name__} is not an expression")
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, E.BinaryOp):
                return self.e_binary(e)
            self.fail(5, e, f"unknown expression {type(e).__name__}")
        return method(e)

    def e_Var(self, e):
        return self.var_type(e)

    def e_IntImm(self, e):
        t = e.dtype
        if not isinstance(t, DataType) or t.lanes != 1 or not (t.is_integer or t.is_bool):
            self.fail(5, e, "an integer constant must have a scalar int, uint or bool type", t,
                      DataType("int", 32))
        lo, hi = type_range(t)
        if not lo <= e.value <= hi:
            self.fail(5, e, f"constant {e.value} does not fit in {t} (no implicit truncation)", t,
                      "int64" if t.bits < 64 else "wider")
        return t

    def e_FloatImm(self, e):
        t = e.dtype
        if not isinstance(t, DataType) or t.lanes != 1 or not t.is_float:
            self.fail(5, e, "a float constant must have a scalar float type", t,
                      DataType("float", 32))
        if t.bits == 16 and math.isfinite(e.value) and abs(e.value) > 65504:
            self.fail(5, e, f"constant {e.value} overflows {t}", t, DataType("float", 32))
        return t

    def e_binary(self, e):
        ta, tb = self.expr(e.a), self.expr(e.b)
        name = type(e).__name__
        if ta.is_handle or tb.is_handle:
            self.fail(3, e, f"{name} on a handle", ta, tb)
        if ta != tb:
            self.fail(3, e, f"operands of {name} have different types (use T.cast)", ta, tb)
        if isinstance(e, _LOGIC) and not ta.is_bool:
            self.fail(3, e, f"{name} needs bool operands", ta, BOOL.with_lanes(ta.lanes))
        if isinstance(e, _ARITH) and ta.is_bool:
            self.fail(3, e, f"arithmetic {name} on bools", ta, DataType("int", 32, ta.lanes))
        if isinstance(e, _CMP):
            return BOOL.with_lanes(ta.lanes)
        return ta

    def e_Not(self, e):
        t = self.expr(e.a)
        if not t.is_bool:
            self.fail(3, e, "`not` needs a bool operand", t, BOOL.with_lanes(t.lanes))
        return t

    def e_Select(self, e):
        tc, tt, tf = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
        if tt != tf:
            self.fail(3, e, "Select branches have different types", tt, tf)
        if tt.is_handle:
            self.fail(3, e, "Select of handles", tt, tf)
        if not tc.is_bool or tc.lanes not in (1, tt.lanes):
            self.fail(3, e, "Select condition must be bool with 1 lane or the value's lanes", tc,
                      BOOL.with_lanes(tt.lanes))
        return tt

    def e_Cast(self, e):
        tv = self.expr(e.value)
        t = e.dtype
        if not isinstance(t, DataType) or t.is_handle or tv.is_handle:
            self.fail(4, e, "Cast to or from a handle (pointer casts are DeclBuffers)", tv, t)
        if t.lanes != tv.lanes:
            self.fail(4, e, "Cast must keep the lane count", tv, t)
        return t

    def e_Ramp(self, e):
        tb, ts = self.expr(e.base), self.expr(e.stride)
        if tb != ts:
            self.fail(3, e, "Ramp base and stride have different types", tb, ts)
        if tb.lanes != 1:
            self.fail(3, e, "Ramp base and stride must be scalars", tb, tb.element_of())
        if tb.is_bool or tb.is_handle:
            self.fail(3, e, "Ramp of a non-numeric type", tb, DataType("int", 32))
        self.check_lanes(e)
        return tb.with_lanes(e.lanes)

    def e_Broadcast(self, e):
        tv = self.expr(e.value)
        if tv.is_handle:
            self.fail(3, e, "Broadcast of a handle", tv, DataType("int", 32))
        self.check_lanes(e)
        return tv.with_lanes(tv.lanes * e.lanes)

    def bind(self, node, var, value):
        """Rule 3 for a Let or LetStmt: the bound value has the variable's type."""
        tv = self.expr(value)
        if not isinstance(var, E.Var):
            self.fail(5, node, f"{type(node).__name__} binds a non-variable")
        tvar = self.var_type(var)
        if tv != tvar:
            self.fail(3, node, f"value bound to {var.name} has another type than the variable",
                      tvar, tv)

    def check_lanes(self, e):
        """Rule 5 for a Ramp or Broadcast: its lane count is a positive int."""
        if not isinstance(e.lanes, int) or e.lanes < 1:
            self.fail(5, e, f"{type(e).__name__} lanes must be positive, got {e.lanes}")

    def e_Let(self, e):
        self.bind(e, e.var, e.value)
        return self.expr(e.body)

    def e_Shuffle(self, e):
        if not e.vectors or not e.indices:
            self.fail(3, e, "Shuffle needs at least one vector and one index")
        types = [self.expr(v) for v in e.vectors]
        elem = types[0].element_of()
        for t in types[1:]:
            if t.element_of() != elem:
                self.fail(3, e, "Shuffle vectors have different element types", types[0], t)
        total = sum(t.lanes for t in types)
        for i in e.indices:
            if not 0 <= i < total:
                self.fail(3, e, f"Shuffle index {i} out of range for {total} lanes")
        return elem.with_lanes(len(e.indices))

    def e_BufferLoad(self, e):
        return self.access(e, e.buffer, e.indices)

    def e_ImageLoad(self, e):
        return images.check_load(self, e)

    def e_ImageSample(self, e):
        return images.check_sample(self, e)

    def e_ImageSize(self, e):
        return images.check_size(self, e)

    def s_ImageStore(self, s):
        images.check_store(self, s)

    def e_Call(self, e):  # noqa: C901 - one case per kind of intrinsic
        types = [self.expr(a) for a in e.args]
        t = e.dtype
        if not isinstance(t, DataType):
            self.fail(5, e, f"call of {e.op} has no data type")
        info = OPS.get(e.op)
        if info is None:
            return t
        if len(types) != info.arity:
            self.fail(3, e, f"{e.op} takes {info.arity} arguments, got {len(types)}")
        if info.kind == "atomic" and isinstance(e.args[0], ImageLoad):
            return images.check_atomic(self, e, types)
        if info.kind == "atomic":
            return check_atomic(self, e, types)
        if info.kind == "subgroup":
            return check_subgroup(self, e, types)
        rule = INTRINSICS[e.op].type_rule  # the rules of vkir.ir.intrinsics.TYPE_RULES
        if rule == "reinterpret":
            (ta,) = types
            if ta.is_handle or t.is_handle or ta.is_bool or t.is_bool:
                self.fail(4, e, "reinterpret needs numeric types", ta, t)
            if ta.bits * ta.lanes != t.bits * t.lanes:
                self.fail(4, e, "reinterpret must keep the bit width", ta, t)
            return t
        if rule == "if_then_else":
            tc, tt, tf = types
            if tt != tf:
                self.fail(3, e, "if_then_else branches have different types", tt, tf)
            if not tc.is_bool or tc.lanes not in (1, tt.lanes):
                self.fail(3, e, "if_then_else condition must be bool", tc, BOOL)
            if t != tt:
                self.fail(3, e, "if_then_else result type differs from its branches", tt, t)
            return t
        ta = types[0]
        for tb in types[1:]:
            if tb != ta:
                self.fail(3, e, f"arguments of {e.op} have different types", ta, tb)
        if rule == "float" and not ta.is_float:
            self.fail(3, e, f"{e.op} needs float arguments", ta, DataType("float", 32, ta.lanes))
        if rule == "numeric" and not (ta.is_float or ta.is_integer):
            self.fail(3, e, f"{e.op} needs a numeric argument", ta, DataType("float", 32, ta.lanes))
        if rule in ("integer", "shift") and not ta.is_integer:
            self.fail(3, e, f"{e.op} needs integer arguments", ta, DataType("int", 32, ta.lanes))
        if rule == "shift":
            for k in _constant_lanes(e.args[1]):
                if not 0 <= k < ta.bits:
                    self.fail(5, e, f"constant shift amount {k} is outside [0, {ta.bits}) for "
                              f"{ta.element_of()} (amounts computed at run time are taken modulo "
                              f"{ta.bits})")
        if rule == "float_predicate":
            if not ta.is_float:
                self.fail(3, e, f"{e.op} needs a float argument", ta,
                          DataType("float", 32, ta.lanes))
            want = BOOL.with_lanes(ta.lanes)
        else:
            want = ta
        if t != want:
            self.fail(3, e, f"{e.op} returns the type of its arguments", want, t)
        return t

    # -- statements --------------------------------------------------------------------------

    def stmt(self, s):
        if not isinstance(s, Stmt):
            self.fail(5, s, f"{type(s).__name__} is not a statement")
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            self.fail(5, s, f"unknown statement {type(s).__name__}")
        outer = self.span
        if s.span is not None:
            self.span = s.span
        method(s)
        self.span = outer

    def s_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def s_BufferStore(self, s):
        want = self.access(s, s.buffer, s.indices)
        got = self.expr(s.value)
        if got != want:
            self.fail(1, s, f"stored value does not have the access type of {s.buffer.name}",
                      want, got)

    def s_LetStmt(self, s):
        self.bind(s, s.var, s.value)
        self.stmt(s.body)

    def s_For(self, s):
        if not isinstance(s.loop_var, E.Var):
            self.fail(5, s, "loop variable is not a Var")
        tv = self.var_type(s.loop_var)
        if not tv.is_integer or tv.lanes != 1:
            self.fail(3, s, "loop variable must be an integer scalar", tv, DataType("int", 32))
        for what, x in (("min", s.min), ("extent", s.extent)):
            t = self.expr(x)
            if t != tv:
                self.fail(3, s, f"loop {what} must have the loop variable's type", tv, t)
        if s.kind not in S.FOR_KINDS:
            self.fail(5, s, f"unknown loop kind {s.kind!r}")
        if s.kind == "thread_binding" and s.thread not in S.THREAD_TAGS:
            self.fail(5, s, f"unknown thread tag {s.thread!r}")
        if s.kind == "thread_binding" and isinstance(s.extent, E.IntImm) and s.extent.value < 0:
            self.fail(6, s, f"constant extent {s.extent.value} of {s.thread} is negative (a "
                      f"launch dimension cannot be)")
        if s.kind != "thread_binding" and isinstance(s.min, E.IntImm) and \
                isinstance(s.extent, E.IntImm) and s.extent.value > 0 and \
                s.min.value + s.extent.value > type_range(tv)[1]:
            self.fail(6, s, f"loop {s.loop_var.name} would run from {s.min.value} to "
                      f"{s.min.value + s.extent.value - 1}: its end, min + extent = "
                      f"{s.min.value + s.extent.value}, passes the {tv} maximum "
                      f"{type_range(tv)[1]} (a loop never wraps around)")
        self.stmt(s.body)

    def s_IfThenElse(self, s):
        t = self.expr(s.condition)
        if t != BOOL:
            self.fail(3, s, "if condition must be a bool scalar", t, BOOL)
        self.stmt(s.then_case)
        if s.else_case is not None:
            self.stmt(s.else_case)

    def s_While(self, s):
        t = self.expr(s.condition)
        if t != BOOL:
            self.fail(3, s, "while condition must be a bool scalar", t, BOOL)
        self.stmt(s.body)

    def s_Evaluate(self, s):
        self.expr(s.value)

    def s_AllocBuffer(self, s):
        self.check_buffer(s.buffer, s, cast_allowed=False)
        self.stmt(s.body)

    def s_DeclBuffer(self, s):
        self.check_buffer(s.buffer, s, cast_allowed=True)
        self.stmt(s.body)

    def s_AsyncScope(self, s):
        self.stmt(s.body)

    def s_AsyncCommitQueue(self, s):
        self.check_queue(s)
        self.stmt(s.body)

    def s_AsyncWaitQueue(self, s):
        self.check_queue(s)
        t = self.expr(s.in_flight)
        if not t.is_integer or t.lanes != 1:
            self.fail(5, s, "in-flight count must be an integer scalar", t, DataType("int", 32))
        self.stmt(s.body)

    def check_queue(self, s):
        if not isinstance(s.queue, int):
            self.fail(5, s, "async queue must be an integer constant")

    def s_Barrier(self, s):
        pass

    def s_SubgroupBarrier(self, s):
        pass
