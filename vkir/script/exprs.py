"""Expression half of the script parser: Python AST expressions -> vkir IR (never evaluated)."""

from __future__ import annotations

import ast
import inspect

from ..ir import expr as E
from ..ir.buffer import Buffer
from ..ir.dtype import DataType
from ..ir.image import ImageLoad
from ..ir.image_type import is_image
from ..ir.op import OPS
from . import builtins as B
from .images import IMAGE_BUILDERS
from .diagnostics import Source, parse_python
from .scope import Scope
from .vector_math import VECTOR_BUILDERS

BUILDERS = {**B.EXPR_BUILDERS, **VECTOR_BUILDERS}
"""Every `T.<name>(...)` expression builder: vkir.script.builtins' and the vector helpers."""

_ARITH = {ast.Add: E.Add, ast.Sub: E.Sub, ast.Mult: E.Mul, ast.Div: E.Div,
          ast.FloorDiv: E.FloorDiv, ast.Mod: E.FloorMod}
_BITWISE = {ast.BitAnd: "bitwise_and", ast.BitOr: "bitwise_or", ast.BitXor: "bitwise_xor",
            ast.LShift: "shift_left", ast.RShift: "shift_right"}
_COMPARE = {ast.Eq: E.EQ, ast.NotEq: E.NE, ast.Lt: E.LT, ast.LtE: E.LE, ast.Gt: E.GT,
            ast.GtE: E.GE}

# T names that are statements, not expressions (used for precise error messages)
STMT_NAMES = frozenset({
    "serial", "unroll", "vectorized", "grid", "parallel", "thread_binding", "alloc_buffer", "decl_buffer",
    "async_scope", "async_commit_queue", "async_wait_queue", "barrier", "subgroup_barrier",
    "evaluate", "prim_func", "func",
    "Buffer", "func_attr", "Ptr", "Image", "Texture",
})


def is_dtype_name(name: str) -> bool:
    """True when `name` spells a vkir dtype (`float32`, `int8x4`)."""
    try:
        DataType.parse(name)
    except ValueError:
        return False
    return True



class MutableScalar:
    """A name assigned more than once in a kernel (`acc = T.float32(0)`, then `acc = acc + x` in
    a loop): a variable, kept in a one-element local buffer. Reading the name loads element 0,
    assigning it stores there, so the IR stays plain loads and stores."""

    __slots__ = ("buffer",)

    def __init__(self, buffer):
        self.buffer = buffer

class ExprParser:
    """Evaluates expression ASTs into IR values. Python literals stay Python values until an
    operation gives them a type (see vkir.script.builtins)."""

    def __init__(self, source: Source, env: dict, t_name: str):
        self.source = source
        self.env = env
        self.t_name = t_name
        self.scope = Scope()
        self.size_vars: dict[str, E.Var] | None = None  # set while parsing parameter annotations
        self.in_shape = False  # string constants are symbolic sizes (parameter shapes only)

    # -- helpers -------------------------------------------------------------------------------

    def error(self, node, message: str):
        """A ScriptError located at `node`."""
        return self.source.error(node, message)

    def span(self, node):
        """The Span of `node`."""
        return self.source.span(node)

    def t_attr(self, node) -> str | None:
        """'name' when `node` is `T.name`, else None."""
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == self.t_name):
            return node.attr
        return None

    def t_call(self, node) -> str | None:
        """'name' when `node` is a call `T.name(...)`, else None."""
        return self.t_attr(node.func) if isinstance(node, ast.Call) else None

    def expr(self, node, allow_pointer: bool = False) -> E.PrimExpr:
        """An IR expression (a literal gets its default dtype)."""
        value = self.value(node)
        try:
            return B.to_expr(value, allow_pointer=allow_pointer)
        except B.BuildError as exc:
            raise self.error(node, str(exc)) from None

    def expr_as(self, node, dtype: DataType) -> E.PrimExpr:
        """An IR expression; a literal takes `dtype`."""
        value = self.value(node)
        try:
            if B.is_literal(value):
                return B.literal_as(value, dtype)
            return B.to_expr(value)
        except B.BuildError as exc:
            raise self.error(node, str(exc)) from None

    def dtype(self, node) -> DataType:
        """A dtype argument: a string "float32" or `T.float32`."""
        value = self.value(node)
        try:
            return B.parse_dtype(value)
        except B.BuildError as exc:
            raise self.error(node, str(exc)) from None

    def int_literal(self, node, what: str) -> int:
        """The Python int that `node` evaluates to, or a ScriptError naming `what`."""
        value = self.value(node)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(node, f"{what} must be an integer literal")
        return value

    # -- evaluation ----------------------------------------------------------------------------

    def value(self, node):
        """The value of an expression AST: an IR expression, a Python literal, a string, a list,
        or a Buffer (only meaningful to subscripts and `.data`)."""
        method = getattr(self, "_v_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"unsupported syntax in an expression: {type(node).__name__}")
        return method(node)

    def _v_Constant(self, node):
        v = node.value
        if isinstance(v, str) and self.in_shape:
            return self.size_var(node, v)
        if isinstance(v, (bool, int, float, str)):
            return v
        raise self.error(node, f"unsupported constant {v!r}")

    def size_var(self, node, name: str, dtype: DataType | None = None) -> E.Var:
        """The symbolic size named by a string shape entry: int32, or `T.int64("n")` (one Var
        per name)."""
        if not name.isidentifier():
            return self._size_expression(node, name, dtype)
        dtype = dtype or DataType("int", 32)
        if not dtype.is_integer or dtype.lanes != 1:
            raise self.error(node, f"symbolic size {name!r} must have a scalar integer type")
        var = self.size_vars.get(name)
        if var is not None and var.dtype != dtype:
            raise self.error(node, f"symbolic size {name!r} is used as {var.dtype} and {dtype}")
        if var is None:
            existing = self.scope.lookup(name)
            if existing is not None:
                raise self.error(node, f"symbolic size {name!r} has the name of a parameter")
            var = self.size_vars[name] = E.Var(name, dtype, span=self.span(node))
            self.scope.bind(name, var, node.lineno + self.source.line_offset)
        return var

    _SIZE_OPS = {ast.Add: E.Add, ast.Sub: E.Sub, ast.Mult: E.Mul, ast.FloorDiv: E.FloorDiv,
                 ast.Mod: E.FloorMod}

    def _size_expression(self, node, text: str, dtype):
        """A shape entry written as an expression over size names ("rows + 1", "2 * n"): the
        expression, each name a symbolic size; the call checks the array's extent against it."""
        try:
            tree = parse_python(text.strip(), mode="eval").body
        except SyntaxError:
            tree = None

        def build(e):
            if isinstance(e, ast.Name):
                return self.size_var(node, e.id, dtype)
            if isinstance(e, ast.Constant) and type(e.value) is int:
                return E.IntImm(dtype or DataType("int", 32), e.value)
            if isinstance(e, ast.BinOp) and type(e.op) in self._SIZE_OPS:
                return self._SIZE_OPS[type(e.op)](build(e.left), build(e.right))
            raise ValueError
        try:
            if tree is None:
                raise ValueError
            return build(tree)
        except ValueError:
            raise self.error(node, f"shape entry {text!r} must name a size (an identifier) or be "
                                   "an expression of sizes and integers with + - * // % (e.g. "
                                   "\"rows + 1\")") from None

    def _v_Name(self, node):
        found = self.scope.lookup(node.id)
        if isinstance(found, MutableScalar):   # a variable: its one-element local buffer
            return E.BufferLoad(found.buffer, (E.IntImm(DataType("int", 32), 0),),
                                span=self.span(node))
        if found is not None:
            return found
        if node.id == self.t_name:
            raise self.error(node, f"'{self.t_name}' is the script namespace, not a value")
        if node.id in self.env:
            return self._env_value(node, self.env[node.id])
        raise self.error(node, f"unknown name '{node.id}'")

    def _env_value(self, node, v):
        if isinstance(v, (bool, int, float, str, E.PrimExpr)):
            return v
        if isinstance(v, (tuple, list)) and all(isinstance(x, (bool, int, float, str)) for x in v):
            return list(v)
        raise self.error(node, f"'{node.id}' is a Python {type(v).__name__}; only numbers, "
                               f"strings and IR expressions can be used from Python")

    def _v_Attribute(self, node):
        name = self.t_attr(node)
        if name is not None:
            if is_dtype_name(name):
                return name
            raise self.error(node, f"'{self.t_name}.{name}' cannot be used as a value here")
        base = self.value(node.value)
        if isinstance(base, Buffer):
            if node.attr == "data":
                return base.data
            raise self.error(node, f"buffers have no attribute '{node.attr}' in scripts "
                                   f"(only '.data')")
        raise self.error(node, f"unsupported attribute '.{node.attr}'")

    def _v_Tuple(self, node):
        return [self.value(e) for e in node.elts]

    _v_List = _v_Tuple

    def _v_BinOp(self, node):
        a, b = self.value(node.left), self.value(node.right)
        op = type(node.op)
        try:
            if op in _ARITH:
                self._check_operand(node.left, a)
                self._check_operand(node.right, b)
                return B.binary(_ARITH[op], a, b, span=self.span(node))
            if op in _BITWISE:
                return B.intrinsic(_BITWISE[op], a, b, span=self.span(node))
        except B.BuildError as exc:
            raise self.error(node.left if exc.arg == 0 else node.right if exc.arg == 1 else node,
                             str(exc)) from None
        if op is ast.Pow:
            if all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b)) and b >= 0:
                return self._fold_power(node, a, b)  # a constant written as a power, e.g. 2**40
            raise self.error(node, "'**' is not supported; use T.pow(a, b)")
        if op is ast.MatMult:
            raise self.error(node, "'@' is not supported")
        raise self.error(node, f"unsupported operator {op.__name__}")

    def _fold_power(self, node, a: int, b: int) -> int:
        """`a ** b` for integer literals, refused (before computing it) when the result would
        be wider than MAX_LITERAL_BITS: no vkir type holds it, and folding it could take hours."""
        if abs(a) > 1 and b * (abs(a).bit_length() - 1) > B.MAX_LITERAL_BITS:
            raise self.error(node, f"constant {B.int_text(a)}**{B.int_text(b)} has more than "
                                   f"{B.MAX_LITERAL_BITS} bits; no vkir type can hold it")
        return a ** b

    def _check_operand(self, node, value):
        if not isinstance(value, E.PrimExpr) and not B.is_literal(value):
            kind = "a buffer" if isinstance(value, Buffer) else repr(value)
            raise self.error(node, f"expected an expression, got {kind}")

    def _v_UnaryOp(self, node):
        v = self.value(node.operand)
        op = type(node.op)
        if op is ast.USub:
            if B.is_literal(v) and not isinstance(v, bool):
                return -v
            self._check_operand(node.operand, v)
            try:
                return B.binary(E.Sub, 0, v, span=self.span(node))
            except B.BuildError as exc:
                raise self.error(node, str(exc)) from None
        if op is ast.UAdd:
            self._check_operand(node.operand, v)
            return v
        if op is ast.Not:
            return E.Not(self._to_expr(node.operand, v), span=self.span(node))
        if op is ast.Invert:
            return E.Call(self._to_expr(node.operand, v).dtype, "bitwise_not",
                          (self._to_expr(node.operand, v),), span=self.span(node))
        raise self.error(node, f"unsupported unary operator {op.__name__}")

    def _to_expr(self, node, value):
        try:
            return B.to_expr(value)
        except B.BuildError as exc:
            raise self.error(node, str(exc)) from None

    def _v_BoolOp(self, node):
        cls = E.And if isinstance(node.op, ast.And) else E.Or
        result = self.value(node.values[0])
        for sub in node.values[1:]:
            try:
                result = B.binary(cls, result, self.value(sub), span=self.span(node))
            except B.BuildError as exc:
                raise self.error(sub, str(exc)) from None
        return result

    def _v_Compare(self, node):
        if len(node.ops) != 1:
            raise self.error(node.comparators[1] if len(node.comparators) > 1 else node,
                             "chained comparisons are not supported; combine them with 'and'")
        op = type(node.ops[0])
        if op not in _COMPARE:
            raise self.error(node, f"unsupported comparison operator {op.__name__}")
        a, b = self.value(node.left), self.value(node.comparators[0])
        self._check_operand(node.left, a)
        self._check_operand(node.comparators[0], b)
        try:
            return B.binary(_COMPARE[op], a, b, span=self.span(node))
        except B.BuildError as exc:
            raise self.error(node, str(exc)) from None

    def _v_Subscript(self, node):
        buf = self.value(node.value)
        if isinstance(buf, E.PrimExpr) and isinstance(buf.dtype, DataType) and buf.dtype.lanes > 1:
            return self._lanes(node, buf)
        if is_image(buf):
            if buf.dtype.sampled:
                raise self.error(node, f"texture '{buf.name}' is read only through "
                                       f"{self.t_name}.sample({buf.name}, uv)")
            return ImageLoad(buf, self.indices(node.slice), span=self.span(node))
        if not isinstance(buf, Buffer):
            raise self.error(node.value, "only buffers can be indexed (and vector values, by lane)")
        return E.BufferLoad(buf, self.indices(node.slice), span=self.span(node))

    def _lanes(self, node, vector):
        """`v[i]` (a lane: i a constant, negative from the end, or an int expression) or
        `v[a:b]` / `v[a:b:c]` (constant lanes) of a vector value."""
        lanes = vector.dtype.lanes
        index = node.slice
        if isinstance(index, ast.Slice):
            bounds = []
            for part in (index.lower, index.upper, index.step):
                value = None if part is None else self.value(part)
                if value is not None and type(value) is not int:
                    raise self.error(part, "a lane slice takes constant bounds")
                bounds.append(value)
            picked = list(range(lanes))[slice(*bounds)]
            if not picked:
                raise self.error(node, f"the slice selects no lane of the {lanes}-lane value")
            return E.Shuffle((vector,), tuple(picked), span=self.span(node))
        value = self.value(index)
        if type(value) is int:
            if not -lanes <= value < lanes:
                raise self.error(index, f"lane {value} of a {lanes}-lane value")
            return E.Shuffle((vector,), (value % lanes,), span=self.span(node))
        i = self._to_expr(index, value)
        if not (isinstance(i.dtype, DataType) and i.dtype.is_integer and i.dtype.lanes == 1):
            raise self.error(index, f"a lane index must be an int, got {i.dtype}")
        # a dynamic lane: the last lane unless the index names another (as OpVectorExtractDynamic,
        # an index outside the lanes has no defined result)
        out = E.Shuffle((vector,), (lanes - 1,))
        for k in range(lanes - 2, -1, -1):
            out = E.Select(E.EQ(i, E.IntImm(i.dtype, k)), E.Shuffle((vector,), (k,)), out)
        return out

    def _vector_literal(self, node, name: str):
        """`T.float32x4(a, b, c, d)`: a vector from scalars and smaller vectors of its element
        type, lanes in order."""
        dtype = DataType.parse(name)
        element = dtype.element_of()
        parts = []
        for arg in node.args:
            value = self.value(arg)
            if isinstance(value, (bool, int, float)):
                value = B.typed_const(str(element), value, span=self.span(arg))
            if not isinstance(value, E.PrimExpr) or value.dtype.element_of() != element:
                got = value.dtype if isinstance(value, E.PrimExpr) else type(value).__name__
                raise self.error(arg, f"{self.t_name}.{name}: each part must be a {element} "
                                      f"value or vector, got {got} (use {self.t_name}.cast)")
            parts.append(value)
        total = sum(p.dtype.lanes for p in parts)
        if total != dtype.lanes:
            raise self.error(node, f"{self.t_name}.{name}: the parts have {total} lanes, "
                                   f"not {dtype.lanes}")
        return E.Shuffle(tuple(parts), tuple(range(total)), span=self.span(node))

    def indices(self, node) -> tuple:
        """The index expressions of a subscript (`A[i, j]`, `A[()]`)."""
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        out = []
        for e in elts:
            if isinstance(e, ast.Slice):
                raise self.error(e, "slices are not supported in buffer indices")
            out.append(self.expr(e))
        return tuple(out)

    def _v_IfExp(self, node):
        raise self.error(node, "conditional expressions are not supported; use T.select(c, a, b) "
                               "or T.if_then_else(c, a, b)")

    def _v_NamedExpr(self, node):
        raise self.error(node, "':=' is only allowed as the first argument of T.let")

    # -- calls ---------------------------------------------------------------------------------

    def _v_Call(self, node):
        name = self.t_call(node)
        if name is None:
            from .device_functions import inline, resolve

            device_function = resolve(self, node)
            if device_function is not None:
                return inline(self, node, device_function)
            raise self.error(node.func, f"unsupported call; only {self.t_name}.<name>(...) and @{self.t_name}.func "
                                        f"calls are allowed in scripts")
        if name == "let":
            return self.let_expr(node)
        if self.in_shape and is_dtype_name(name) and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            return self.size_var(node.args[0], node.args[0].value, DataType.parse(name))
        if is_dtype_name(name) and DataType.parse(name).lanes > 1 and len(node.args) > 1 \
                and not node.keywords:
            return self._vector_literal(node, name)
        if is_dtype_name(name):
            def builder(value, *, span=None):
                return B.typed_const(name, value, span=span)
        elif name in BUILDERS:
            builder = BUILDERS[name]
        elif name in IMAGE_BUILDERS:
            builder = IMAGE_BUILDERS[name]
        elif name in OPS:
            def builder(*args, span=None):
                return B.intrinsic(name, *args, span=span)
        elif name in STMT_NAMES:
            raise self.error(node, f"{self.t_name}.{name} is a statement, not an expression")
        else:
            raise self.error(node.func, f"unknown function '{self.t_name}.{name}'")
        args = [self.value(a) for a in node.args if not isinstance(a, ast.Starred)]
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error(node, "*args are not supported")
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw.value, "**kwargs are not supported")
            if kw.arg == "span":
                raise self.error(kw.value, f"{self.t_name}.{name}: unexpected keyword 'span'")
            kwargs[kw.arg] = self.value(kw.value)
        self.check_signature(node, f"{self.t_name}.{name}", builder, args, kwargs)
        try:
            return builder(*args, **kwargs, span=self.span(node))
        except B.BuildError as exc:
            target = node
            if exc.arg is not None and exc.arg < len(node.args):
                target = node.args[exc.arg]
            raise self.error(target, f"{self.t_name}.{name}: {exc}") from None

    def check_signature(self, node, name: str, fn, args, kwargs):
        """A ScriptError at `node` unless `args`/`kwargs` fit `fn`'s signature."""
        try:
            inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(node, f"{name}: {exc}") from None

    def let_expr(self, node):
        """T.let(x := value, body[, dtype="..."]): a Let expression binding x in body."""
        if len(node.args) != 2 or not isinstance(node.args[0], ast.NamedExpr):
            raise self.error(node, f"{self.t_name}.let takes (name := value, body)")
        named = node.args[0]
        dtype = None
        for kw in node.keywords:
            if kw.arg != "dtype":
                raise self.error(kw.value, f"{self.t_name}.let: unexpected keyword '{kw.arg}'")
            dtype = self.dtype(kw.value)
        value = self.expr(named.value) if dtype is None else self.expr_as(named.value, dtype)
        var = E.Var(named.target.id, dtype or value.dtype, span=self.span(named.target))
        with self.scope.frame():
            self.bind(named.target, named.target.id, var)
            body = self.expr(node.args[1])
        return E.Let(var, value, body, span=self.span(node))

    def bind(self, node, name: str, value) -> None:
        """Bind `name` in the innermost scope; re-binding a visible name is an error."""
        if name == self.t_name:
            raise self.error(node, f"cannot bind '{name}': it is the script namespace")
        if name in self.scope:
            line = self.scope.where(name)
            at = f" (at line {line})" if line is not None else ""
            raise self.error(node, f"name '{name}' is already bound{at}; bindings are immutable, "
                                   f"choose a new name")
        self.scope.bind(name, value, node.lineno + self.source.line_offset
                        if hasattr(node, "lineno") else None)
