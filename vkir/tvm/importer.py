"""TVM TIR (apache-tvm 0.27, `tvm.tirx`) to vkir IR, node by node.

`import_prim_func(func)` reads one TVM PrimFunc as it is: a scheduled or lowered device kernel,
or the before/after functions of TVM's pass tests. TVM's flat statements (`Bind`, `AllocBuffer`,
`DeclBuffer`, and a `LetStmt` without body) scope over the rest of their sequence and become
vkir's nested LetStmt/AllocBuffer/DeclBuffer; `thread_extent` attributes become thread-binding
loops; `tvm_storage_sync("shared")` becomes a barrier and `tvm_storage_sync("warp")` a subgroup
barrier, or a workgroup barrier with its lane condition split around it where it sits under one
(vkir.tvm.warp_sync); libm externs (`expf`, ...) become vkir's math calls; int conditions get an explicit
`!= 0`. Handle parameters that the body declares a buffer over become buffer parameters, and a
scalar parameter that is a dimension of one becomes a size vkir infers at call time. Anything
else raises UnsupportedError naming the construct.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..errors import UnsupportedError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.dtype import DataType, PointerType
from ..ir.function import PrimFunc
from ..ir.intrinsics import INTRINSICS
from . import param_shapes
from .warp_sync import split_lane_conditions

# TVM's ForKind values
_FOR_KINDS = {0: "serial", 1: "parallel", 2: "vectorized", 3: "unrolled", 4: "thread_binding"}
_BINARY = {"Add": E.Add, "Sub": E.Sub, "Mul": E.Mul, "Div": E.Div, "Mod": E.Mod,
           "FloorDiv": E.FloorDiv, "FloorMod": E.FloorMod, "Min": E.Min, "Max": E.Max,
           "EQ": E.EQ, "NE": E.NE, "LT": E.LT, "LE": E.LE, "GT": E.GT, "GE": E.GE,
           "And": E.And, "Or": E.Or}
_BITWISE = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
            "LShift": "shift_left", "RShift": "shift_right"}
# TVM's hint intrinsics: the value of their argument (they only inform TVM's passes)
_HINTS = {"likely", "tvm_thread_invariant"}
# bitwise operations of two bools, which TVM writes for masks (bitwise_and(less, greater))
_BOOL_BITWISE = {"BitwiseAnd": E.And, "BitwiseOr": E.Or, "BitwiseXor": E.NE}
# TVM intrinsics (without the "tirx." prefix) and C extern functions, by the intrinsic table
_CALLS = {tvm: name for name, row in INTRINSICS.items() for tvm in row.tvm.ops}
_LIBM = {extern: name for name, row in INTRINSICS.items() for extern in row.tvm.externs}
# attributes that carry no meaning for vkir's lowering: their body stands alone
_IGNORED_ATTRS = {"storage_alignment", "pragma_unroll_explicit", "pragma_auto_unroll_max_step",
                  "compute_scope", "device_scope", "pragma_import_llvm", "realize_scope",
                  "buffer_bound", "hand_threaded", "volatile_scope", "storage_scope",
                  "reduce_scope"}
_SCOPES = {"global": "global", "shared": "shared", "shared.dyn": "shared", "local": "local",
           "": "global"}


def _kind(node) -> str:
    return type(node).__name__


def _dtype(node) -> DataType:
    """The vkir dtype of a TVM expression (its PrimType)."""
    return DataType.parse(str(node.ty))


def _handle(node):
    """The tvm_ffi handle that identifies a TVM object (two views of one node share it)."""
    return node.__chandle__()


class _Importer:
    def __init__(self, func, name: str, signature=()):
        self.func = func
        self.name = name
        self.signature = signature   # (name, static shape, dtype) of the user's buffers
        self.vars: dict = {}       # TVM handle -> vkir Var
        self.buffers: dict = {}    # TVM handle -> vkir Buffer
        self.param_buffers: dict = {}   # vkir data var of a handle parameter -> its Buffer
        self.threads = 0           # thread_extent attributes around the statement being read
        self.bound: set = set()    # TVM handles of the let variables bound so far

    def fail(self, what: str):
        return UnsupportedError(f"from_tvm: kernel {self.name!r}: {what} has no vkir meaning")

    def dtype(self, text: str, what: str) -> DataType:
        """DataType.parse, its UnsupportedError (bfloat16, float8, ...) naming the kernel and
        `what` has that type."""
        try:
            return DataType.parse(text)
        except UnsupportedError as exc:
            raise UnsupportedError(f"from_tvm: kernel {self.name!r}: {what}: {exc}") from None

    # -- variables and buffers -----------------------------------------------------------------

    def var(self, v) -> E.Var:
        key = _handle(v)
        got = self.vars.get(key)
        if got is None:
            got = self.vars[key] = E.Var(str(v.name), self.var_type(v))
        return got

    def var_type(self, v):
        ty = v.ty
        if _kind(ty) == "PointerType":
            scope = str(ty.storage_scope) or "global"
            if scope not in _SCOPES:
                raise self.fail(f"pointer in storage scope {scope!r}")
            return PointerType(DataType.parse(str(ty.element_type)), _SCOPES[scope])
        if _kind(ty) == "BufferType":
            raise self.fail(f"buffer {v.name!r} used as a value")
        return DataType.parse(str(ty))

    @contextmanager
    def binding(self, v):
        """The vkir Var that a let binding of TVM var `v` defines, for the scope of the `with`:
        a fresh one where `v` is bound already (TVM's lowering reuses a let variable, e.g.
        `rmod` of its index arithmetic, twice in one expression; vkir's IR is SSA), after
        which `v` means the outer binding again."""
        key = _handle(v)
        if key not in self.bound:
            self.bound.add(key)
            yield self.var(v)
            return
        outer = self.vars.get(key)
        fresh = self.vars[key] = E.Var(str(v.name), self.var_type(v))
        try:
            yield fresh
        finally:
            if outer is None:
                del self.vars[key]
            else:
                self.vars[key] = outer

    def buffer(self, b) -> Buffer:
        got = self.buffers.get(_handle(b))
        if got is None:
            raise self.fail(f"buffer {b.name!r} used outside its declaration")
        return got

    def new_buffer(self, b, data: E.Var | None = None) -> Buffer:
        """The vkir Buffer of TVM buffer `b` (over `data` when given, else over its own data)."""
        scope = str(b.scope()) or "global"
        if scope not in _SCOPES:
            raise self.fail(f"buffer {b.name!r} in storage scope {scope!r}")
        dtype = self.dtype(str(b.dtype), f"buffer {b.name!r}")
        if data is None:
            data = E.Var(str(b.name), PointerType(dtype, _SCOPES[scope]))
        shape = tuple(self.expr(s) for s in b.shape)
        strides = tuple(self.expr(s) for s in b.strides)
        offset = self.expr(b.elem_offset)
        buf = Buffer(str(b.name), data, dtype, shape, strides, offset, _SCOPES[scope])
        self.buffers[_handle(b)] = buf
        return buf

    def data_var(self, data) -> E.Var:
        """The vkir pointer var of a buffer's `data` (a handle Var, or `buffer_data(B)`)."""
        if _kind(data) == "Call" and str(data.op.name) == "tirx.buffer_data":
            return self.buffer(data.args[0]).data
        if _kind(data) != "Var":
            raise self.fail(f"buffer data `{data}`")
        return self.var(data)

    # -- the function --------------------------------------------------------------------------

    def run(self) -> PrimFunc:
        func = self.func
        params, buffer_map, handles = [], {}, set()
        for p in func.params:
            if _kind(p.ty) == "BufferType":       # a buffer parameter (TVMScript's T.Buffer)
                buf = self.new_buffer(p)
                params.append(buf.data)
                buffer_map[buf.data] = buf
            else:
                params.append(self.var(p))
                if isinstance(params[-1].dtype, PointerType):
                    handles.add(params[-1])   # a bare handle: a buffer declared over it
        body = self.stmt(func.body, handles)
        for data, buf in self.param_buffers.items():
            buffer_map[data] = buf
        unbound = [v.name for v in handles if v not in buffer_map]
        if unbound:
            raise self.fail(f"handle parameter(s) {', '.join(unbound)} with no buffer declared "
                            "over them")
        buffer_map, body = param_shapes.unshared_sizes(params, buffer_map, body,
                                                       self.buffers.values())
        params, body = param_shapes.user_signature(self.signature, params, buffer_map, body)
        # a scalar parameter that is a dimension of a buffer parameter: a size vkir infers
        dims = {d for buf in buffer_map.values() for d in buf.shape if isinstance(d, E.Var)}
        params = [p for p in params if p not in dims]
        attrs = {"global_symbol": self.name}
        for key in ("software_pipeline", "subgroup_size"):
            if key in func.attrs:
                attrs[key] = _value(func.attrs[key])
        return PrimFunc(tuple(params), body, buffer_map, attrs)

    # -- statements ----------------------------------------------------------------------------

    def stmt(self, s, handles=frozenset()) -> S.Stmt:
        kind = _kind(s)
        if kind == "SeqStmt":
            return self.seq(list(s.seq), handles)
        if kind in ("Bind", "LetStmt", "AllocBuffer", "DeclBuffer") and \
                getattr(s, "body", None) is None:
            return self.seq([s], handles)
        method = getattr(self, "s_" + kind, None)
        if method is None:
            raise self.fail(f"statement {kind}")
        return method(s, handles)

    def seq(self, items: list, handles) -> S.Stmt:
        """A sequence: a flat binding scopes over the statements after it."""
        out = []
        for k, s in enumerate(items):
            kind = _kind(s)
            if kind in ("Bind", "LetStmt") and getattr(s, "body", None) is None:
                value = self.expr(s.value)
                with self.binding(s.var) as var:
                    rest = self.seq(items[k + 1:], handles)
                out.append(S.LetStmt(var, value, rest))
                break
            if kind == "AllocBuffer":
                buf = self.new_buffer(s.buffer)
                if buf.scope == "global" and self.threads:
                    raise UnsupportedError(
                        f"from_tvm: kernel {self.name!r}: buffer {buf.name!r} is allocated in "
                        "global memory inside the kernel, which a Vulkan kernel cannot do: give "
                        "it a workgroup or thread scope in the schedule, "
                        "sch.set_scope(block, 0, 'shared') or 'local' where block writes "
                        f"{buf.name!r} (sch.get_sblock({buf.name!r}) for a TE compute)")
                out.append(S.AllocBuffer(buf, self.seq(items[k + 1:], handles)))
                break
            if kind == "DeclBuffer":
                data = self.data_var(s.buffer.data if s.data is None else s.data)
                if data in handles and data not in self.param_buffers:
                    # the first declaration over a handle parameter: the parameter's buffer
                    buf = self.new_buffer(s.buffer, data)
                    if buf.dtype != data.dtype.element or buf.scope != data.dtype.scope:
                        buf = Buffer(buf.name, data, data.dtype.element, buf.shape, buf.strides,
                                     buf.elem_offset, data.dtype.scope)
                        self.buffers[_handle(s.buffer)] = buf
                    self.param_buffers[data] = buf
                    continue
                buf = self.new_buffer(s.buffer, data)
                out.append(S.DeclBuffer(buf, self.seq(items[k + 1:], handles)))
                break
            out.append(self.stmt(s, handles))
        return S.seq(*out) if out else S.SeqStmt(())

    def s_AttrStmt(self, s, handles):
        key = str(s.attr_key)
        if key == "thread_extent":
            iv = s.node
            var = self.var(iv.var)
            extent = self.expr(s.value)
            tag = str(iv.thread_tag)
            if tag not in S.THREAD_TAGS:
                raise self.fail(f"thread tag {tag!r}")
            if extent.dtype != var.dtype:
                extent = E.Cast(var.dtype, extent)
            self.threads += 1
            try:
                body = self.stmt(s.body, handles)
            finally:
                self.threads -= 1
            return S.For(var, E.IntImm(var.dtype, 0), extent, "thread_binding", body, tag)
        if key == "async_scope":
            return S.AsyncScope(self.stmt(s.body, handles))
        if key == "async_commit_queue_scope":
            return S.AsyncCommitQueue(int(s.value.value), self.stmt(s.body, handles))
        if key == "async_wait_queue_scope":
            inner = s.body
            if _kind(inner) != "AttrStmt" or str(inner.attr_key) != "async_wait_inflight_count":
                raise self.fail("async_wait_queue_scope without its in-flight count")
            return S.AsyncWaitQueue(int(s.value.value), self.expr(inner.value),
                                    self.stmt(inner.body, handles))
        if key in _IGNORED_ATTRS or key.startswith("pragma_"):
            return self.stmt(s.body, handles)
        raise self.fail(f"attribute {key!r}")

    def s_For(self, s, handles):
        kind = _FOR_KINDS.get(int(s.kind))
        if kind is None:
            raise self.fail(f"loop kind {s.kind}")
        if s.step is not None and not (_kind(s.step) == "IntImm" and int(s.step.value) == 1):
            raise self.fail(f"loop {s.loop_var.name!r} with step {s.step}")
        var = self.var(s.loop_var)
        thread = None
        if kind == "thread_binding":
            thread = str(s.thread_binding.thread_tag)
        annotations = {str(k): _value(v) for k, v in s.annotations.items()}
        return S.For(var, self.expr(s.min), self.expr(s.extent), kind,
                     self.stmt(s.body, handles), thread, annotations)

    def s_While(self, s, handles):
        return S.While(self.condition(s.condition), self.stmt(s.body, handles))

    def s_IfThenElse(self, s, handles):
        other = None if s.else_case is None else self.stmt(s.else_case, handles)
        return S.IfThenElse(self.condition(s.condition), self.stmt(s.then_case, handles), other)

    def s_BufferStore(self, s, handles):
        if getattr(s, "predicate", None) is not None:
            raise self.fail("a predicated store")
        buf = self.buffer(s.buffer)
        return S.BufferStore(buf, self.expr(s.value), tuple(self.expr(i) for i in s.indices))

    def s_Evaluate(self, s, handles):
        v = s.value
        if _kind(v) == "Call" and str(v.op.name) == "tirx.tvm_storage_sync":
            scope = str(v.args[0].value)
            if scope in ("shared", "shared.dyn"):
                return S.Barrier()
            if scope == "warp":
                return S.SubgroupBarrier()
            raise self.fail(f"tvm_storage_sync({scope!r})")
        if _kind(v) == "IntImm" or (_kind(v) == "Call" and str(v.op.name) == "tirx.assume"):
            return S.SeqStmt(())   # nothing, or a fact for TVM's analyses (T.assume)
        return S.Evaluate(self.expr(v))

    # -- expressions ---------------------------------------------------------------------------

    def condition(self, c) -> E.PrimExpr:
        """A condition: a bool, or an int compared with zero (TVM takes int conditions)."""
        e = self.expr(c)
        if e.dtype.is_bool:
            return e
        return E.NE(e, E.IntImm(e.dtype, 0) if not e.dtype.is_float else E.FloatImm(e.dtype, 0))

    def expr(self, e) -> E.PrimExpr:
        kind = _kind(e)
        if kind in _BINARY:
            return _BINARY[kind](self.expr(e.a), self.expr(e.b))
        if kind in _BITWISE:
            a, b = self.expr(e.a), self.expr(e.b)
            if a.dtype.is_bool and b.dtype.is_bool and kind in _BOOL_BITWISE:
                return _BOOL_BITWISE[kind](a, b)   # TVM's & | ^ of bools: logical
            return E.Call(a.dtype, _BITWISE[kind], (a, b))
        method = getattr(self, "e_" + kind, None)
        if method is None:
            raise self.fail(f"expression {kind} (`{e}`)")
        return method(e)

    def e_IntImm(self, e):
        dt = _dtype(e)
        return E.IntImm(dt, bool(e.value) if dt.is_bool else int(e.value))

    def e_FloatImm(self, e):
        return E.FloatImm(_dtype(e), float(e.value))

    def e_Var(self, e):
        return self.var(e)

    e_SizeVar = e_Var

    def e_Not(self, e):
        return E.Not(self.condition(e.a))

    def e_BitwiseNot(self, e):
        a = self.expr(e.a)
        if a.dtype.is_bool:
            return E.Not(a)
        return E.Call(a.dtype, "bitwise_not", (a,))

    def e_Select(self, e):
        return E.Select(self.condition(e.condition), self.expr(e.true_value),
                        self.expr(e.false_value))

    def e_Cast(self, e):
        return E.Cast(_dtype(e), self.expr(e.value))

    def e_Ramp(self, e):
        return E.Ramp(self.expr(e.base), self.expr(e.stride), int(e.lanes))

    def e_Broadcast(self, e):
        return E.Broadcast(self.expr(e.value), int(e.lanes))

    def e_Shuffle(self, e):
        return E.Shuffle(tuple(self.expr(v) for v in e.vectors),
                         tuple(int(i.value) for i in e.indices))

    def e_Let(self, e):
        value = self.expr(e.value)
        with self.binding(e.var) as var:
            return E.Let(var, value, self.expr(e.body))

    def e_TensorLoad(self, e):
        if getattr(e, "predicate", None) is not None:
            raise self.fail("a predicated load")
        return E.BufferLoad(self.buffer(e.source), tuple(self.expr(i) for i in e.indices))

    def e_BufferLoad(self, e):
        if getattr(e, "predicate", None) is not None:
            raise self.fail("a predicated load")
        return E.BufferLoad(self.buffer(e.buffer), tuple(self.expr(i) for i in e.indices))

    def e_Call(self, e):
        op = str(e.op.name)
        name = op.removeprefix("tirx.").removeprefix("prim.")
        dtype = _dtype(e)
        if name in ("call_pure_extern", "call_extern"):
            extern = str(e.args[0].value)
            if extern not in _LIBM:
                raise self.fail(f"extern function {extern!r}")
            args = tuple(self.expr(a) for a in e.args[1:])
            if _LIBM[extern] == "pow":
                return _power(dtype, *args)
            return E.Call(dtype, _LIBM[extern], args)
        if name in _HINTS:   # an identity that only informs TVM's own passes
            return self.expr(e.args[0])
        if name == "if_then_else":
            c, a, b = e.args
            return E.Call(dtype, "if_then_else", (self.condition(c), self.expr(a), self.expr(b)))
        if name in _CALLS:
            args = tuple(self.expr(a) for a in e.args)
            if _CALLS[name] == "pow":
                return _power(dtype, *args)
            return E.Call(dtype, _CALLS[name], args)
        raise self.fail(f"call to {op}")


def _power(dtype, base, exponent) -> E.PrimExpr:
    """TVM's pow(x, y): with a small whole constant exponent (GPT-2's gelu takes pow(x, 3.0))
    the product of x with itself, which is defined for a negative x as C's pow is (Vulkan's
    Pow is undefined there); else vkir's pow."""
    n = exponent.value if isinstance(exponent, E.FloatImm) else None
    if n is None or n != int(n) or not 1 <= n <= 4 or not base.dtype.is_float:
        return E.Call(dtype, "pow", (base, exponent))
    out = base
    for _ in range(int(n) - 1):
        out = E.Mul(out, base)
    return out


def _value(v):
    """A Python value of a TVM annotation value (ints, floats, strings, arrays of them)."""
    kind = _kind(v)
    if isinstance(v, (bool, int, float, str)):
        return v
    if kind == "IntImm":
        return int(v.value)
    if kind == "FloatImm":
        return float(v.value)
    if kind in ("String", "StringImm", "str"):
        return str(v)
    if hasattr(v, "items"):
        return {str(k): _value(x) for k, x in v.items()}
    if hasattr(v, "__iter__"):
        return tuple(_value(x) for x in v)
    return str(v)


def signature(func) -> tuple:
    """(name, shape, dtype) of each buffer parameter of a TVM PrimFunc written by the user: each
    dimension an int, the name of a size variable, or None (another expression)."""
    out = []
    for p in func.params:
        if _kind(p.ty) != "BufferType":
            continue
        shape = tuple(int(d.value) if _kind(d) == "IntImm" else
                      str(d.name) if _kind(d) in ("Var", "SizeVar") else None for d in p.shape)
        try:
            dtype = DataType.parse(str(p.dtype))
        except UnsupportedError as exc:
            raise UnsupportedError(f"from_tvm: buffer {str(p.name)!r}: {exc}") from None
        out.append((str(p.name), shape, dtype))
    return tuple(out)


def import_prim_func(func, name: str | None = None, user_signature=()) -> PrimFunc:
    """The vkir PrimFunc of one TVM PrimFunc, read as it is (no TVM pass runs). With
    `user_signature` (vkir.tvm.importer.signature of the function the user wrote), a lowered
    kernel's parameters follow that function's order and shapes."""
    from ..analysis.type_checker import verify_types
    from ..analysis.well_formed import verify_well_formed
    from ..errors import TypeCheckError, WellFormedError

    if name is None:
        attrs = func.attrs if func.attrs is not None else {}
        name = str(attrs["global_symbol"]) if "global_symbol" in attrs else "main"
    out = split_lane_conditions(_Importer(func, name, user_signature).run())
    try:   # a construct read node by node but meaning nothing in vkir is refused here, named
        verify_well_formed(out)
        verify_types(out)
    except (TypeCheckError, WellFormedError) as exc:
        raise UnsupportedError(f"from_tvm: kernel {name!r}: a TVM construct with no vkir "
                               f"meaning: {exc}") from None
    return out


__all__ = ["import_prim_func", "signature"]
