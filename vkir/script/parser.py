"""Statement and function half of the script parser: a `def` with T annotations -> PrimFunc.

The function is never executed: its AST is walked (vkir.script.entry reads the source). Bindings
(`x = e`, `X = T.alloc_buffer(...)`, `X = T.decl_buffer(...)`) scope over the rest of their
block; loops are parsed by vkir.script.loops.
"""

from __future__ import annotations

import ast
import inspect
from contextlib import ExitStack

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.dtype import SCOPES, DataType, PointerType
from ..ir.function import PrimFunc
from ..ir.image import ImageStore
from ..ir.image_type import is_image
from ..ir.op import is_atomic
from .exprs import MutableScalar, is_dtype_name
from .images import IMAGE_ANNOTATIONS, image_param
from .loops import LoopExit, LoopParser, leaves_iteration

_AUG_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
            ast.Mod: "%", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<",
            ast.RShift: ">>", ast.Pow: "**"}


# signatures of the statement-level T functions (bound against the call's AST arguments)
def _sig_buffer(shape, dtype="float32", strides=(), elem_offset=0, scope="global", *,
                data_dtype=None, data_scope=None):
    """T.Buffer(shape, dtype, strides=, elem_offset=, scope=)"""


def _sig_alloc_buffer(shape, dtype="float32", scope="global", strides=(), elem_offset=0, *,
                      data_dtype=None, data_scope=None):
    """T.alloc_buffer(shape, dtype, scope=, strides=, elem_offset=)"""


def _sig_decl_buffer(shape, dtype="float32", data=None, strides=(), elem_offset=0, scope=None, *,
                     data_dtype=None, data_scope=None):
    """T.decl_buffer(shape, dtype, data=, strides=, elem_offset=, scope=)"""


def _sig_ptr(dtype, scope="global"):
    """T.Ptr(dtype, scope=)"""


def _sig_let(value, *, dtype=None):
    """with T.let(value) as x:"""


class Parser(LoopParser):
    """Parses one function definition into a PrimFunc."""


    # -- entry ---------------------------------------------------------------------------------

    def function(self, fn: ast.FunctionDef) -> PrimFunc:
        """The PrimFunc of a `def` with T annotations."""
        self.loops: list[LoopExit] = []   # the loops around the statement being parsed
        args = fn.args
        for bad in (*args.posonlyargs, *args.kwonlyargs):
            raise self.error(bad, "only plain positional parameters are supported")
        for bad in (args.vararg, args.kwarg):
            if bad is not None:
                raise self.error(bad, "*args/**kwargs parameters are not supported")
        if args.defaults:
            raise self.error(args.defaults[0], "parameters cannot have default values")
        seen = set()
        for a in args.args:
            if a.arg in seen:
                raise self.error(a, f"duplicate parameter '{a.arg}'")
            seen.add(a.arg)
        params: dict[str, object] = {}
        # scalar parameters first: buffer shapes may use them
        for a in args.args:
            if a.annotation is None:
                raise self.error(a, f"parameter '{a.arg}' needs a type annotation "
                                    f"({self.t_name}.Buffer(...) or a dtype like "
                                    f"{self.t_name}.int32)")
            if self.t_call(a.annotation) not in ("Buffer", *IMAGE_ANNOTATIONS):
                dtype = self._scalar_annotation(a)
                params[a.arg] = E.Var(a.arg, dtype, span=self.span(a))
                self.bind(a, a.arg, params[a.arg])
        buffer_map = {}
        self.size_vars = {}
        direct = set()   # sizes that are a whole dimension of some buffer: a call determines them
        for a in args.args:
            if a.arg not in params and self.t_call(a.annotation) in IMAGE_ANNOTATIONS:
                params[a.arg] = image_param(self, a)
                direct.update(e for e in params[a.arg].dtype.shape if isinstance(e, E.Var))
            elif a.arg not in params:
                buf = self._param_buffer(a)
                params[a.arg] = buf.data
                buffer_map[buf.data] = buf
                direct.update(e for e in (*buf.shape, *(buf.strides or ()), buf.elem_offset)
                              if isinstance(e, E.Var))
        for name, var in self.size_vars.items():
            if var not in direct:
                raise self.error(fn, f"size {name!r} appears only inside shape expressions; "
                                     f"give some buffer a dimension of \"{name}\" itself, so "
                                     "that a call determines it")
        self.size_vars = None
        for a in args.args:  # buffers become visible to the body
            if a.arg not in self.scope:
                self.bind(a, a.arg, buffer_map.get(params[a.arg], params[a.arg]))
        body = fn.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # docstring
        attrs = {"global_symbol": fn.name}
        while body and isinstance(body[0], ast.Expr) and self.t_call(body[0].value) == "func_attr":
            call = body[0].value
            if len(call.args) != 1 or call.keywords:
                raise self.error(call, f"{self.t_name}.func_attr takes one dict")
            attrs.update(self._annotations(call.args[0]))
            body = body[1:]
        return PrimFunc(tuple(params[a.arg] for a in args.args), self.block(body), buffer_map,
                        attrs, span=self.span(fn))

    def _scalar_annotation(self, a: ast.arg):
        """The dtype of a non-buffer parameter: `T.int32`, "int32", `T.handle`, or a bare pointer
        `T.Ptr("float32", scope="global")` (a PointerType var with no buffer)."""
        node = a.annotation
        if self.t_call(node) == "Ptr":
            args = self.bind_call(node, _sig_ptr)
            scope = self.value(args["scope"]) if isinstance(args["scope"], ast.AST) else "global"
            if scope not in SCOPES:
                raise self.error(args["scope"], f"storage scope must be one of "
                                                f"{', '.join(SCOPES)}; got {scope!r}")
            return PointerType(self._arg_dtype(args["dtype"]), scope)
        name = self.t_attr(node)
        if name is None and isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        if name is None or not is_dtype_name(name):
            raise self.error(node, f"parameter '{a.arg}': expected {self.t_name}.Buffer(...) or a "
                                   f"scalar dtype such as {self.t_name}.int32")
        return DataType.parse(name)

    def _param_buffer(self, a: ast.arg) -> Buffer:
        args = self.bind_call(a.annotation, _sig_buffer)
        dtype, scope, shape, strides, offset = self._buffer_fields(args)
        data = E.Var(a.arg, self._pointer(args, dtype, scope), span=self.span(a))
        return Buffer(a.arg, data, dtype, shape, strides, offset, scope, span=self.span(a))

    def _buffer_fields(self, args, default_scope="global"):
        dtype = self._arg_dtype(args["dtype"])
        scope = args["scope"]
        if scope is None:
            scope = default_scope
        elif isinstance(scope, ast.AST):
            node, scope = scope, self.value(scope)
            if scope not in SCOPES:
                raise self.error(node, f"storage scope must be one of {', '.join(SCOPES)}; "
                                       f"got {scope!r}")
        self.in_shape = self.size_vars is not None
        try:
            shape = self._shape(args["shape"])
            strides = self._shape(args["strides"])
            offset = args["elem_offset"]
            offset = self.expr(offset) if isinstance(offset, ast.AST) else E.const(offset, "int32")
        finally:
            self.in_shape = False
        return dtype, scope, shape, strides, offset

    def _pointer(self, args, dtype: DataType, scope: str) -> PointerType:
        """The type of a fresh data var: PointerType(dtype, scope) unless data_dtype=/data_scope=
        say otherwise (an implicit pointer cast, which the type checker rejects; printable so
        that such IR can be shown faithfully)."""
        if args["data_dtype"] is not None:
            dtype = self._arg_dtype(args["data_dtype"])
        if args["data_scope"] is not None:
            node, scope = args["data_scope"], self.value(args["data_scope"])
            if scope not in SCOPES:
                raise self.error(node, f"storage scope must be one of {', '.join(SCOPES)}; "
                                       f"got {scope!r}")
        return PointerType(dtype, scope)

    def _arg_dtype(self, node) -> DataType:
        return DataType.parse(node) if isinstance(node, str) else self.dtype(node)

    def _shape(self, node) -> tuple:
        """A shape/strides argument: a tuple or list of expressions, or one expression (a Python
        tuple from the enclosing scope also works)."""
        if not isinstance(node, ast.AST):
            return tuple(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.expr(e) for e in node.elts)
        value = self.value(node)
        items = value if isinstance(value, list) else [value]
        out = []
        for item in items:
            if isinstance(item, str) and self.in_shape:
                item = self.size_var(node, item)
            out.append(self._to_expr(node, item))
        return tuple(out)

    def bind_call(self, node, sig) -> dict:
        """Match a statement-level T call's AST arguments against `sig`; absent ones take its
        defaults (plain Python values, not AST)."""
        if not isinstance(node, ast.Call):
            raise self.error(node, f"expected {sig.__doc__}")
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
                k.arg is None for k in node.keywords):
            raise self.error(node, "*args/**kwargs are not supported")
        try:
            bound = inspect.signature(sig).bind(*node.args,
                                                **{k.arg: k.value for k in node.keywords})
        except TypeError as exc:
            raise self.error(node, f"{self.t_name}.{self.t_call(node)}: {exc}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    # -- blocks and statements -----------------------------------------------------------------

    def block(self, stmts: list) -> S.Stmt:
        """A statement list; a binding statement scopes over the rest of the list. Iterative, so
        long chains of bindings do not recurse."""
        with ExitStack() as frames:
            frames.enter_context(self.scope.frame())
            enclosing, out = [], []
            assigned_later = _assigned_after(stmts)
            for k, node in enumerate(stmts):
                head = self._binding(node)
                if head is None:
                    out.append(self.stmt(node))
                    if k + 1 < len(stmts) and self.loops and leaves_iteration([node]):
                        # a `break`/`continue` may have run: the rest runs only if none did
                        rest = self.block(stmts[k + 1:])
                        out.append(S.IfThenElse(self.loops[-1].running(), rest,
                                                span=self.span(stmts[k + 1])))
                        break
                    continue
                target, value, span, implicit = head
                if target.id in assigned_later[k] and implicit and \
                        self.t_call(value) not in ("alloc_buffer", "decl_buffer", "let"):
                    # assigned again while it is in scope: a variable
                    bound, make = self._variable_head(target, value, span)
                else:
                    bound, make = self._bind_head(target, value, span, implicit)
                frames.enter_context(self.scope.frame())
                self.bind(target, target.id, bound)
                enclosing.append((out, make))
                out = []
            body = _seq(out)
            for prefix, make in reversed(enclosing):
                body = _seq(prefix + [make(body)])
        return body

    def stmt(self, node) -> S.Stmt:
        """The IR statement of one Python statement."""
        method = getattr(self, "_s_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"unsupported statement: {type(node).__name__}")
        return method(node)

    def _s_Pass(self, node):
        return S.SeqStmt((), span=self.span(node))

    def _s_Expr(self, node):
        name = self.t_call(node.value)
        if name == "evaluate":
            call = node.value
            if len(call.args) != 1 or call.keywords:
                raise self.error(call, f"{self.t_name}.evaluate takes exactly one argument")
            return S.Evaluate(self.expr(call.args[0], allow_pointer=True), span=self.span(node))
        if name == "barrier":
            if node.value.args or node.value.keywords:
                raise self.error(node.value, f"{self.t_name}.barrier takes no arguments")
            return S.Barrier(span=self.span(node))
        if name == "subgroup_barrier":
            if node.value.args or node.value.keywords:
                raise self.error(node.value, f"{self.t_name}.subgroup_barrier takes no arguments")
            return S.SubgroupBarrier(span=self.span(node))
        if name == "func_attr":
            raise self.error(node, f"{self.t_name}.func_attr must come first in the function body")
        if name is not None and is_atomic(name):  # an atomic as a statement: its old value unused
            return S.Evaluate(self.expr(node.value), span=self.span(node))
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return S.SeqStmt((), span=self.span(node))  # a string statement is a comment
        raise self.error(node, f"an expression is not a statement; wrap it in "
                               f"{self.t_name}.evaluate(...) if you mean it")

    def _s_Assign(self, node):
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment is not supported")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            variable = self._lane_target(target)
            if variable is not None:   # `acc[1] = s`: one lane of a vector variable
                return self._lane_store(node, variable, target.slice, node.value)
            return self._store(node, target, node.value)
        if isinstance(target, ast.Name):
            variable = self.scope.lookup(target.id)
            if isinstance(variable, MutableScalar):   # `acc = value` after its first assignment
                return self._variable_store(node, variable, node.value)
            raise self.error(target, "unexpected binding")
        raise self.error(target, "only 'name = value' and 'buffer[indices] = value' assignments "
                                 "are supported")

    def _variable_store(self, node, variable, value_node) -> S.BufferStore:
        buf = variable.buffer
        value = self.expr_as(value_node, buf.dtype)
        return S.BufferStore(buf, value, (E.IntImm(DataType("int", 32), 0),), span=self.span(node))

    def _lane_target(self, target: ast.Subscript):
        """The vector variable a subscript target names (`acc` of `acc[1] = s`), else None."""
        if not isinstance(target.value, ast.Name):
            return None
        variable = self.scope.lookup(target.value.id)
        if isinstance(variable, MutableScalar) and variable.buffer.dtype.lanes > 1:
            return variable
        return None

    def _lane_store(self, node, variable, index_node, value_node) -> S.BufferStore:
        """`acc[k] = s`: the variable's vector with lane k replaced by s (k a constant lane, or an
        int expression: then every lane whose number equals k), stored back whole, so the IR
        stays a load and a store of the one-element local buffer."""
        buf = variable.buffer
        lanes = buf.dtype.lanes
        if isinstance(index_node, ast.Slice):
            raise self.error(index_node, f"a lane store names one lane of '{buf.name}'; slices "
                                         f"are read-only")
        zero = (E.IntImm(DataType("int", 32), 0),)
        old = E.BufferLoad(buf, zero, span=self.span(node))
        lane = self.value(index_node)
        value = self.expr_as(value_node, buf.dtype.element_of())
        if value.dtype != buf.dtype.element_of():
            raise self.error(value_node, f"a lane of '{buf.name}' is {buf.dtype.element_of()}; "
                                         f"got {value.dtype} (use T.cast)")
        if type(lane) is int:
            if not -lanes <= lane < lanes:
                raise self.error(index_node, f"lane {lane} of the {lanes}-lane variable "
                                             f"'{buf.name}'")
            lane %= lanes
            picks = tuple(lanes if k == lane else k for k in range(lanes))
            new = E.Shuffle((old, value), picks, span=self.span(node))
        else:
            k = self._to_expr(index_node, lane)
            if not (isinstance(k.dtype, DataType) and k.dtype.is_integer and k.dtype.lanes == 1):
                raise self.error(index_node, f"a lane index must be an int, got {k.dtype}")
            numbers = E.Ramp(E.IntImm(k.dtype, 0), E.IntImm(k.dtype, 1), lanes)
            new = E.Select(E.EQ(numbers, E.Broadcast(k, lanes)), E.Broadcast(value, lanes), old,
                           span=self.span(node))
        return S.BufferStore(buf, new, zero, span=self.span(node))

    def _s_AugAssign(self, node):
        target = node.target
        if isinstance(target, ast.Subscript) and self._lane_target(target) is not None:
            fake = ast.BinOp(left=ast.Subscript(value=target.value, slice=target.slice,
                                                ctx=ast.Load()), op=node.op, right=node.value)
            ast.copy_location(fake, node)
            ast.copy_location(fake.left, target)
            return self._lane_store(node, self._lane_target(target), target.slice, fake)
        if isinstance(target, ast.Name) and isinstance(self.scope.lookup(target.id), MutableScalar):
            fake = ast.BinOp(left=ast.Name(id=target.id, ctx=ast.Load()), op=node.op,
                             right=node.value)
            ast.copy_location(fake, node)
            ast.copy_location(fake.left, target)
            return self._variable_store(node, self.scope.lookup(target.id), fake)
        if not isinstance(target, ast.Subscript):
            op = _AUG_OPS.get(type(node.op), "")
            raise self.error(target, f"'{op}=' can only update a buffer element; names are "
                                     f"immutable bindings")
        fake = ast.BinOp(left=target, op=node.op, right=node.value)
        ast.copy_location(fake, node)
        fake.left = ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load())
        ast.copy_location(fake.left, target)
        return self._store(node, target, fake)

    def _store(self, node, target: ast.Subscript, value_node) -> S.BufferStore:
        buf = self.value(target.value)
        if is_image(buf):
            if buf.dtype.sampled:
                raise self.error(target.value, f"texture '{buf.name}' is read-only (sampled); "
                                               f"write to a {self.t_name}.Image")
            value = self.expr_as(value_node, buf.dtype.texel)
            return ImageStore(buf, value, self.indices(target.slice), span=self.span(node))
        if not isinstance(buf, Buffer):
            raise self.error(target.value, "only buffers can be stored to")
        indices = self.indices(target.slice)
        lanes = indices[-1].dtype.lanes if indices else 1
        access = buf.dtype.with_lanes(buf.dtype.lanes * lanes)
        value = self.expr_as(value_node, access)
        return S.BufferStore(buf, value, indices, span=self.span(node))

    def _s_If(self, node):
        cond = self.expr(node.test)
        then = self.block(node.body)
        other = self.block(node.orelse) if node.orelse else None
        return S.IfThenElse(cond, then, other, span=self.span(node))

    def _s_With(self, node):
        if len(node.items) != 1:
            raise self.error(node, "one context manager per 'with'")
        item = node.items[0]
        name = self.t_call(item.context_expr)
        call = item.context_expr
        span = self.span(node)
        if name is None:
            raise self.error(call, f"unsupported context manager; expected a call such as "
                                   f"{self.t_name}.async_scope()")
        if name in ("alloc_buffer", "decl_buffer", "let"):
            if not isinstance(item.optional_vars, ast.Name):
                raise self.error(call, f"write 'with {self.t_name}.{name}(...) as name:'")
            return self._bind_stmt(item.optional_vars, call, lambda: self.block(node.body), span)
        if item.optional_vars is not None:
            raise self.error(item.optional_vars, f"{self.t_name}.{name} takes no 'as' target")
        if name == "async_scope":
            if call.args or call.keywords:
                raise self.error(call, f"{self.t_name}.async_scope takes no arguments")
            return S.AsyncScope(self.block(node.body), span=span)
        if name == "async_commit_queue":
            if len(call.args) != 1 or call.keywords:
                raise self.error(call, f"{self.t_name}.async_commit_queue takes a queue index")
            queue = self.int_literal(call.args[0], "the queue index")
            return S.AsyncCommitQueue(queue, self.block(node.body), span=span)
        if name == "async_wait_queue":
            if len(call.args) != 2 or call.keywords:
                raise self.error(call, f"{self.t_name}.async_wait_queue takes (queue, in_flight)")
            queue = self.int_literal(call.args[0], "the queue index")
            in_flight = self.expr(call.args[1])
            return S.AsyncWaitQueue(queue, in_flight, self.block(node.body), span=span)
        raise self.error(call, f"unsupported context manager; expected {self.t_name}.async_scope, "
                               f"async_commit_queue, async_wait_queue, alloc_buffer, decl_buffer "
                               f"or let")

    # -- bindings ------------------------------------------------------------------------------

    def _binding(self, node):
        """(target, value, span, implicit_let) of a binding statement, else None (an assignment
        to a variable already in scope is a store, not a binding)."""
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                and isinstance(self.scope.lookup(node.targets[0].id), MutableScalar):
            return None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            target, value, ann = node.targets[0], node.value, None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.value is None:
                raise self.error(node, "a declaration needs a value")
            target, value, ann = node.target, node.value, node.annotation
        else:
            return None
        if ann is not None and self.t_call(value) in ("alloc_buffer", "decl_buffer"):
            raise self.error(ann, "buffers take no type annotation")
        if ann is not None:
            value = ast.Call(func=ast.Attribute(value=ast.Name(self.t_name, ast.Load()), attr="let",
                                                ctx=ast.Load()),
                             args=[value], keywords=[ast.keyword("dtype", ann)])
            ast.copy_location(value, node.value)
            ast.copy_location(value.func, node.value)
        return target, value, self.span(node), ann is None

    def _variable_head(self, target: ast.Name, value: ast.AST, span):
        """The first assignment of a variable (a name assigned again later): a one-element local
        buffer holding the value, over the rest of the block."""
        val = self._to_expr(value, self.value(value))
        if not isinstance(val.dtype, DataType):
            raise self.error(value, f"variable '{target.id}' must hold a scalar or a vector; "
                                    f"got {val.dtype}")
        dtype = val.dtype
        data = E.Var(target.id, PointerType(dtype, "local"), span=span)
        buf = Buffer(target.id, data, dtype, (1,), scope="local", span=span)
        zero = (E.IntImm(DataType("int", 32), 0),)
        store = S.BufferStore(buf, val, zero, span=span)
        bound = MutableScalar(buf)
        return bound, lambda body: S.AllocBuffer(buf, _seq([store, body]), span=span)

    def _bind_stmt(self, target: ast.Name, value: ast.AST, body_fn, span):
        """LetStmt / AllocBuffer / DeclBuffer binding `target` over the statements of body_fn."""
        bound, make = self._bind_head(target, value, span, implicit_let=False)
        with self.scope.frame():
            self.bind(target, target.id, bound)
            return make(body_fn())

    def _bind_head(self, target: ast.Name, value: ast.AST, span, implicit_let: bool):
        """(the bound Var/Buffer, a function making the statement from its body)."""
        name = self.t_call(value)
        if name == "alloc_buffer":
            args = self.bind_call(value, _sig_alloc_buffer)
            dtype, scope, shape, strides, offset = self._buffer_fields(args)
            data = E.Var(target.id, self._pointer(args, dtype, scope), span=span)
            bound = Buffer(target.id, data, dtype, shape, strides, offset, scope, span=span)
            make = lambda body: S.AllocBuffer(bound, body, span=span)  # noqa: E731
        elif name == "decl_buffer":
            args = self.bind_call(value, _sig_decl_buffer)
            data = None
            if args["data"] is not None:
                data = self.value(args["data"])
                if not isinstance(data, E.Var) or not isinstance(data.dtype, PointerType):
                    raise self.error(args["data"], "data= must be a buffer's data, e.g. A.data")
                for key in ("data_dtype", "data_scope"):
                    if args[key] is not None:
                        raise self.error(args[key], f"{key}= describes a fresh data pointer; "
                                                    f"it cannot be combined with data=")
            default_scope = data.dtype.scope if data is not None else "global"
            dtype, scope, shape, strides, offset = self._buffer_fields(args, default_scope)
            if data is None:
                data = E.Var(target.id, self._pointer(args, dtype, scope), span=span)
            bound = Buffer(target.id, data, dtype, shape, strides, offset, scope, span=span)
            make = lambda body: S.DeclBuffer(bound, body, span=span)  # noqa: E731
        elif name == "let" and not implicit_let:
            args = self.bind_call(value, _sig_let)
            dtype = None if args["dtype"] is None else self._arg_dtype(args["dtype"])
            val = self.expr(args["value"]) if dtype is None else self.expr_as(args["value"], dtype)
            bound = E.Var(target.id, dtype or val.dtype, span=self.span(target))
            make = lambda body: S.LetStmt(bound, val, body, span=span)  # noqa: E731
        else:
            val = self.value(value)
            if isinstance(val, Buffer):
                raise self.error(value, f"cannot bind a buffer to a new name; declare an alias "
                                        f"with {self.t_name}.decl_buffer(..., data=X.data)")
            val = self._to_expr(value, val)
            bound = E.Var(target.id, val.dtype, span=self.span(target))
            make = lambda body: S.LetStmt(bound, val, body, span=span)  # noqa: E731
        return bound, make


def _seq(stmts: list) -> S.Stmt:
    return S.seq(*stmts) if stmts else S.SeqStmt(())


def _assigned_after(stmts: list) -> list:
    """For each statement of a block, the names assigned (`=`, `+=`, ...) by the statements after
    it, nested ones included: a name bound there and assigned again is a variable. A lane store
    `v[k] = s` assigns `v` too (buffers are never implicit bindings, so this names only values)."""
    out = [frozenset()] * len(stmts)
    later: set = set()
    for k in range(len(stmts) - 1, -1, -1):
        out[k] = frozenset(later)
        for node in ast.walk(stmts[k]):
            if isinstance(node, ast.Assign):
                later.update(filter(None, map(_assigned_name, node.targets)))
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and _assigned_name(node.target):
                later.add(_assigned_name(node.target))
    return out


def _assigned_name(target) -> str | None:
    """The name an assignment target assigns: `x` of `x = ...` and of `x[k] = ...`."""
    if isinstance(target, ast.Subscript):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None
