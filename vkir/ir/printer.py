"""The printer: `script(node)` renders a PrimFunc (or a statement/expression) as T.prim_func source
that `vkir.from_script` parses back to a structurally equal function.

Names are made unique per print (`i`, `i_1`, ...) in printing order, so the output is deterministic.
A binding (let, alloc_buffer, decl_buffer) that is the last statement of its block is printed flat
(`x = v` and its body below at the same indentation); one followed by statements outside its scope
is printed as `with T.let(v) as x:` / `with T.alloc_buffer(...) as X:` so the scope is exact.
"""

from __future__ import annotations

import keyword
import math

from ..errors import ArgumentError
from . import stmt as S
from .base import FrozenDict, PrimExpr, Stmt
from .buffer import Buffer
from .dtype import DataType, PointerType
from .expr import Add, And, Call, Div, FloatImm, FloorDiv, FloorMod, IntImm, Mul, Or, Sub, Var
from .function import PrimFunc
from .image_type import ImageType
from .op import is_atomic
from .print_expr import ADD, AND, ATOM, MUL, OR, ExprPrinter, quote
from .structural import recursion_headroom, structural_equal
from .traversal import walk

_INDENT = "    "
_KEYWORDS = frozenset(keyword.kwlist)
_KIND_FN = {"serial": "serial", "unrolled": "unroll", "vectorized": "vectorized",
            "thread_binding": "thread_binding", "parallel": "parallel"}


def script(node) -> str:
    """Script text of a PrimFunc, Stmt, PrimExpr or Buffer."""
    with recursion_headroom():
        return _script(node)


def _script(node) -> str:
    p = Printer()
    if isinstance(node, PrimFunc):
        return p.function(node)
    if isinstance(node, Stmt):
        return "\n".join(p.block(node, 0))
    if isinstance(node, PrimExpr):
        return p.expr(node)
    if isinstance(node, Buffer):
        return p.buffer_decl_text(node)
    raise ArgumentError(f"cannot print {type(node).__name__}")


def compact(node, limit: int = 100, depth: int = 4) -> str:
    """A one-line script rendering of `node` for error messages: subexpressions more than
    `depth` levels below the top print as `...` (names and constants always print), a compound statement as its head line (`for i in T.serial(n):`), a
    sequence as its first three statements, a function as `def name(...)`; the text is cut to
    `limit` characters. It prints ill-typed IR too (the checker's messages are about such IR)."""
    with recursion_headroom():
        text = _compact(node, depth)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _compact(node, depth: int) -> str:
    p = _CompactPrinter(depth)
    if isinstance(node, PrimFunc):
        return f"def {node.name}(...)"
    if isinstance(node, S.SeqStmt):
        items = node.seq
        text = "; ".join(_compact(s, depth) for s in items[:3])
        return text + ("; ..." if len(items) > 3 else "")
    if isinstance(node, Stmt):
        lines = p.stmt(node, 0)
        return lines[0].strip() if lines else type(node).__name__
    if isinstance(node, Buffer):
        return node.name
    return p.expr(node)


class Printer(ExprPrinter):
    """The script printer: functions, statements and expressions as T.prim_func source."""
    # -- function ------------------------------------------------------------------------------

    def function(self, func: PrimFunc) -> str:
        """The whole `@T.prim_func` source of `func`."""
        name = func.name if func.name.isidentifier() and func.name not in _KEYWORDS else "main"
        for p in func.params:  # parameter names first, so they keep their own names
            buf = func.buffer_map.get(p)
            self.fresh(p, p.name if buf is None else buf.name)
            if buf is not None:
                self.names[buf] = self.names[p]
                self.data_owner[p] = buf
        self.size_vars = set(func.size_vars)
        for v in func.size_vars:
            self.fresh(v, v.name)
        params = []
        self.in_annotation = True
        for p in func.params:
            buf = func.buffer_map.get(p)
            if buf is not None:
                ann = self.buffer_type(buf)
            elif isinstance(p.dtype, ImageType):
                ann = self.image_type(p.dtype)
            elif isinstance(p.dtype, PointerType):
                ann = f'T.Ptr("{p.dtype.element}", scope="{p.dtype.scope}")'
            else:
                ann = f"T.{p.dtype}"
            params.append(f"{self.names[p]}: {ann}")
        self.in_annotation = False
        lines = ["@T.prim_func", f"def {name}({', '.join(params)}):"]
        extra = {k: v for k, v in func.attrs.items() if k != "global_symbol"}
        if extra:
            lines.append(f"{_INDENT}T.func_attr({_literal(extra)})")
        lines += self.block(func.body, 1)
        return "\n".join(lines) + "\n"

    def buffer_type(self, buf: Buffer) -> str:
        """The `T.Buffer(...)` annotation of a parameter buffer."""
        return f"T.Buffer({self.shape(buf.shape)}, \"{buf.dtype}\"{self.buffer_extras(buf)})"

    def image_type(self, itype: ImageType) -> str:
        """The `T.Image(...)` / `T.Texture(...)` annotation of an image parameter."""
        if itype.cube:
            return f'T.TextureCube({self.shape(itype.spatial_shape)}, "{itype.format}")'
        kind = "Texture" if itype.sampled else "Image"
        layers = f", layers={self.expr(itype.shape[0])}" if itype.layered else ""
        return f'T.{kind}({self.shape(itype.spatial_shape)}, "{itype.format}"{layers})'

    def shape(self, shape) -> str:
        """A shape or strides tuple as text (`(n,)`, `(4, 8)`)."""
        items = [self.expr(s) for s in shape]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"

    def buffer_extras(self, buf: Buffer, default_scope="global", fresh_data=True) -> str:
        """The keyword arguments a buffer declaration needs beyond shape and dtype (strides,
        offset, scope, data pointer type)."""
        out = ""
        if buf.strides:
            out += f", strides={self.shape(buf.strides)}"
        if not (isinstance(buf.elem_offset, IntImm) and buf.elem_offset.value == 0
                and str(buf.elem_offset.dtype) == "int32"):
            out += f", elem_offset={self.expr(buf.elem_offset)}"
        if buf.scope != default_scope:
            out += f', scope="{buf.scope}"'
        ptr = buf.data.dtype
        if fresh_data and isinstance(ptr, PointerType):
            if ptr.element != buf.dtype:
                out += f', data_dtype="{ptr.element}"'
            if ptr.scope != buf.scope:
                out += f', data_scope="{ptr.scope}"'
        return out

    def buffer_decl_text(self, buf: Buffer) -> str:
        """`name: T.Buffer(...)` for a buffer printed on its own."""
        return f"{self.fresh(buf, buf.name)}: {self.buffer_type(buf)}"

    # -- statements ----------------------------------------------------------------------------

    def block(self, stmt, depth: int) -> list[str]:
        """Lines of `stmt` as the statements of a block at indentation `depth`. A binding that
        ends the block is printed flat and its body continues the block (iteratively)."""
        pad = _INDENT * depth
        items = S.flatten(stmt)
        if not items:
            return [pad + "pass"]
        lines, scoped = [], []
        while items:
            *init, tail = items
            for s in init:
                lines += self.stmt(s, depth)
            if not isinstance(tail, _BINDINGS):
                lines += self.stmt(tail, depth)
                break
            lines.append(pad + self.binding(tail)[0])
            scoped.append(tail)
            items = S.flatten(tail.body)
        for s in reversed(scoped):
            self.release(_bound(s))
        return lines

    def stmt(self, s, depth: int) -> list[str]:
        """Lines of one statement; a binding is printed in its `with` form (explicit scope)."""
        pad = _INDENT * depth
        if isinstance(s, _BINDINGS):
            lines = [pad + self.binding(s)[1]] + self.block(s.body, depth + 1)
            self.release(_bound(s))
            return lines
        method = getattr(self, "_s_" + type(s).__name__)
        return method(s, depth, pad)

    def binding(self, s) -> tuple[str, str]:
        """(flat form, with form) of the head of a binding statement."""
        if isinstance(s, S.LetStmt):
            if s.var.dtype == s.value.dtype:
                value = self.expr(s.value)
                name = self.fresh(s.var, s.var.name)
                return f"{name} = {value}", f"with T.let({value}) as {name}:"
            value = self.expr(s.value, s.var.dtype)
            name = self.fresh(s.var, s.var.name)
            return (f"{name}: T.{s.var.dtype} = {value}",
                    f'with T.let({value}, dtype="{s.var.dtype}") as {name}:')
        buf = s.buffer
        if isinstance(s, S.AllocBuffer):
            call = f"T.alloc_buffer({self.shape(buf.shape)}, \"{buf.dtype}\"" \
                   f"{self.buffer_extras(buf)})"
        else:
            known = buf.data in self.data_owner or buf.data in self.names
            data = f", data={self.expr(buf.data)}" if known else ""
            default_scope = buf.data.dtype.scope if known else "global"
            call = f"T.decl_buffer({self.shape(buf.shape)}, \"{buf.dtype}\"{data}" \
                   f"{self.buffer_extras(buf, default_scope, fresh_data=not known)})"
        name = self.fresh(buf, buf.name)
        self.data_owner.setdefault(buf.data, buf)
        return f"{name} = {call}", f"with {call} as {name}:"

    def _s_BufferStore(self, s, depth, pad):
        lanes = s.indices[-1].dtype.lanes if s.indices else 1
        access = s.buffer.dtype.with_lanes(s.buffer.dtype.lanes * lanes)
        target = self._e_BufferLoad(s)[0]
        return [f"{pad}{target} = {self.expr(s.value, access)}"]

    def _s_ImageStore(self, s, depth, pad):
        return [f"{pad}{self.var_name(s.image)}[{self.indices(s.indices)}] = "
                f"{self.expr(s.value, s.image.dtype.texel)}"]

    def _s_For(self, s, depth, pad):
        chain = self._grid_chain(s)
        if len(chain) > 1:
            extents = ", ".join(self.expr(f.extent) for f in chain)
            names = ", ".join(self.fresh(f.loop_var, f.loop_var.name) for f in chain)
            lines = [f"{pad}for {names} in T.grid({extents}):"] + \
                self.block(chain[-1].body, depth + 1)
            for f in chain:
                self.release(f.loop_var)
            return lines
        dtype = s.loop_var.dtype
        if dtype != s.extent.dtype:  # spelled out: literals then take the loop var's dtype
            if _is_zero(s.min) and s.min.dtype == dtype:
                args = [self.expr(s.extent, dtype)]
            else:
                args = [self.expr(s.min, dtype), self.expr(_stop(s.min, s.extent), dtype)]
            args.append(f'dtype="{dtype}"')
        elif _is_zero(s.min) and s.min.dtype == s.extent.dtype:
            args = [self.expr(s.extent)]
        else:
            args = self.args(s.min, _stop(s.min, s.extent))
        if s.kind == "thread_binding":
            args.insert(len(args) - (dtype != s.extent.dtype), f'"{s.thread}"')
        if s.annotations:
            args.append(f"annotations={_literal(s.annotations)}")
        var = self.fresh(s.loop_var, s.loop_var.name)
        head = f"{pad}for {var} in T.{_KIND_FN[s.kind]}({', '.join(args)}):"
        lines = [head] + self.block(s.body, depth + 1)
        self.release(s.loop_var)
        return lines

    @staticmethod
    def _grid_chain(s) -> list:
        """Perfectly nested plain serial loops from 0 that T.grid can express."""
        chain, bound = [], set()

        def plain(f):
            return (isinstance(f, S.For) and f.kind == "serial" and not f.annotations
                    and _is_zero(f.min) and f.min.dtype == f.extent.dtype == f.loop_var.dtype
                    and not any(isinstance(n, Var) and n in bound for n in walk(f.extent)))

        while plain(s):
            chain.append(s)
            bound.add(s.loop_var)
            items = S.flatten(s.body)
            if len(items) != 1:
                break
            s = items[0]
        return chain

    def _s_IfThenElse(self, s, depth, pad, keyword="if"):
        lines = [f"{pad}{keyword} {self.expr(s.condition)}:"] + self.block(s.then_case, depth + 1)
        other = s.else_case
        if other is None:
            return lines
        items = S.flatten(other)
        if len(items) == 1 and isinstance(items[0], S.IfThenElse):
            return lines + self._s_IfThenElse(items[0], depth, pad, "elif")
        return lines + [f"{pad}else:"] + self.block(other, depth + 1)

    def _s_While(self, s, depth, pad):
        return [f"{pad}while {self.expr(s.condition)}:"] + self.block(s.body, depth + 1)

    def _s_Evaluate(self, s, depth, pad):
        text = self.expr(s.value)
        if isinstance(s.value, Call) and is_atomic(s.value.op) and text.startswith("T.atomic_"):
            return [f"{pad}{text}"]  # an atomic statement (its old value unused)
        return [f"{pad}T.evaluate({text})"]

    def _s_Barrier(self, s, depth, pad):
        return [f"{pad}T.barrier()"]

    def _s_SubgroupBarrier(self, s, depth, pad):
        return [f"{pad}T.subgroup_barrier()"]

    def _s_AsyncScope(self, s, depth, pad):
        return [f"{pad}with T.async_scope():"] + self.block(s.body, depth + 1)

    def _s_AsyncCommitQueue(self, s, depth, pad):
        return [f"{pad}with T.async_commit_queue({s.queue}):"] + self.block(s.body, depth + 1)

    def _s_AsyncWaitQueue(self, s, depth, pad):
        return [f"{pad}with T.async_wait_queue({s.queue}, {self.expr(s.in_flight)}):"] + \
            self.block(s.body, depth + 1)


_BINDINGS = (S.LetStmt, S.AllocBuffer, S.DeclBuffer)


def _bound(s):
    return s.var if isinstance(s, S.LetStmt) else s.buffer


def _is_zero(e) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _stop(start, extent):
    """The `stop` argument that the parser turns back into exactly `extent` (see
    parser._extent): folded for constants, `stop` itself for an extent `stop - start`."""
    if isinstance(start, IntImm) and isinstance(extent, IntImm) and start.dtype == extent.dtype:
        return IntImm(start.dtype, start.value + extent.value)
    if isinstance(extent, Sub) and structural_equal(extent.b, start):
        stop = extent.a
        folds = isinstance(stop, IntImm) and isinstance(start, IntImm) and \
            stop.dtype == start.dtype
        if not folds and not (isinstance(stop, Add) and structural_equal(stop.a, start)):
            return stop
    return Add(start, extent)


def _literal(value) -> str:
    """Python literal text of an annotation/attr value (tuples print as lists)."""
    if isinstance(value, (FrozenDict, dict)):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, Var):
        raise ArgumentError("annotations holding IR variables cannot be printed")
    return repr(value)


class _CompactPrinter(Printer):
    """The printer cut short for `compact`: bodies and deep subexpressions elided, and no use of
    a computed dtype (a Ramp's, a Shuffle's, a BufferLoad's...), which ill-typed IR may not have:
    a constant prints bare when its own dtype is the literal default, typed otherwise."""

    def __init__(self, max_depth: int):
        super().__init__()
        self.max_depth = max_depth
        self.depth = 0

    # -- expressions ---------------------------------------------------------------------------
    def prec(self, e, like=None):
        if not isinstance(e, PrimExpr):      # ill-formed IR: a non-expression where one belongs
            return (e.name if isinstance(e, Buffer) else repr(e)), ATOM
        if self.depth > self.max_depth and not isinstance(e, (Var, IntImm, FloatImm)):
            return "...", ATOM
        self.depth += 1
        try:
            if isinstance(e, (IntImm, FloatImm)):
                return self.const(e, bare=e.dtype in _DEFAULT_DTYPES and _finite(e))
            return getattr(self, "_e_" + type(e).__name__)(e)
        finally:
            self.depth -= 1

    def arg_pairs(self, *values):
        return [self.prec(v) for v in values]

    def fresh(self, obj, hint: str) -> str:
        if isinstance(obj, Buffer):          # its data var prints as `A.data`
            self.data_owner.setdefault(obj.data, obj)
        return super().fresh(obj, hint)

    def _binary(self, e):
        op, p = _INFIX_OPS[type(e)]
        a, b = self.arg_pairs(e.a, e.b)
        return f"{self._paren(a, p)} {op} {self._paren(b, p + 1)}", p

    _e_Add = _e_Sub = _e_Mul = _e_Div = _e_FloorDiv = _e_FloorMod = _e_And = _e_Or = _binary

    def _e_Let(self, e):
        value = self.expr(e.value)
        name = self.fresh(e.var, e.var.name)
        body = self.expr(e.body)
        self.release(e.var)
        return f"T.let({name} := {value}, {body})", ATOM

    def _e_Call(self, e):
        return f"T.{e.op}({', '.join(self.args(*e.args))})", ATOM

    # -- statements: the head line only ----------------------------------------------------------
    def block(self, stmt, depth: int) -> list[str]:
        return []

    def binding(self, s) -> tuple[str, str]:
        if isinstance(s, S.LetStmt):
            value = self.expr(s.value)
            line = f"{self.fresh(s.var, s.var.name)} = {value}"
            return line, line
        buf = s.buffer
        if isinstance(s, S.AllocBuffer):
            scope = f', scope="{buf.scope}"' if buf.scope != "global" else ""
            call = f'T.alloc_buffer({self.shape(buf.shape)}, "{buf.dtype}"{scope})'
        else:
            call = f'T.decl_buffer({self.shape(buf.shape)}, "{buf.dtype}", ' \
                   f"data={self.expr(buf.data)})"
        line = f"{self.fresh(buf, buf.name)} = {call}"
        return line, line

    def _s_BufferStore(self, s, depth, pad):
        return [f"{pad}{self._e_BufferLoad(s)[0]} = {self.expr(s.value)}"]

    def _s_For(self, s, depth, pad):
        if _is_zero(s.min):
            args = [self.expr(s.extent)]
        else:
            start = self.expr(s.min)
            args = [start, f"{start} + {self._paren(self.prec(s.extent), ADD)}"]
        if s.kind == "thread_binding":
            args.append(f'"{s.thread}"')
        kind = _KIND_FN.get(s.kind, s.kind)
        return [f"{pad}for {self.fresh(s.loop_var, s.loop_var.name)} in T.{kind}({', '.join(args)}):"]


_DEFAULT_DTYPES = (DataType("int", 32), DataType("float", 32), DataType("bool", 1))
_INFIX_OPS = {Add: ("+", ADD), Sub: ("-", ADD), Mul: ("*", MUL), Div: ("/", MUL),
              FloorDiv: ("//", MUL), FloorMod: ("%", MUL), And: ("and", AND), Or: ("or", OR)}


def _finite(c) -> bool:
    return not isinstance(c, FloatImm) or math.isfinite(c.value)
