"""Device functions: `@T.func`, typed helpers that kernels (and other device functions) call.

```python
@T.func
def shade(n: T.float32x3, l: T.float32x3) -> T.float32:
    d = T.dot(n, l)
    return T.max(d, T.float32(0))
```

A device function is never compiled on its own: the script front end inlines it where it is
called, so every later layer (printer and parser, checker, passes, interpreter, native loops,
codegen) sees only ordinary expressions. A call `shade(a, b)` becomes

    T.let(n := a, T.let(l := b, T.let(d := T.dot(n, l), T.max(d, T.float32(0)))))

(each parameter and local bound once, so an argument is evaluated once, as in a real call). Spans
stay those of the device function's source, so a type error inside it points there.

The body is what an expression can hold: let bindings (`x = e`, `x: T.float32 = e`) and one
`return e` at the end, or an `if c:` / `else:` whose branches both end in a return (the untaken
branch is not evaluated: `T.if_then_else`). Parameters are scalar or vector dtypes (`T.float32`,
`T.int32`, `T.float32x3`), the return annotation is required, arguments and the returned value
must have exactly those types (Python literals take them). Recursion, direct or through other
device functions, is a ScriptError naming the cycle: calls inline, so it could never end.
"""

from __future__ import annotations

import ast

from ..errors import ScriptError
from ..ir import expr as E
from ..ir.dtype import DataType
from . import builtins as B
from .exprs import is_dtype_name
from .scope import Scope


class DeviceFunction:
    """What `@T.func` makes of a Python function: its name, typed parameters and return type,
    and its source, read (never run) when a kernel calls it. `params` is a tuple of
    (name, DataType); `ret` the returned DataType."""

    def __init__(self, fn, source, node: ast.FunctionDef, t_name: str):
        self.__name__ = self.name = node.name
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._fn = fn
        self.source = source
        self.node = node
        self.t_name = t_name
        self.params = tuple(self._param(a) for a in node.args.args)
        if node.returns is None:
            raise source.error(node, f"device function '{node.name}' needs a return annotation "
                                     f"(-> {t_name}.float32, ...)")
        self.ret = self._dtype(node.returns, "the return value")
        _check_body(source, node.body, t_name)

    def _param(self, a: ast.arg):
        if a.annotation is None:
            raise self.source.error(a, f"parameter '{a.arg}' needs a type annotation (a scalar or "
                                       f"vector dtype such as {self.t_name}.float32x3)")
        return a.arg, self._dtype(a.annotation, f"parameter '{a.arg}'")

    def _dtype(self, node, what: str) -> DataType:
        name = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == self.t_name:
            name = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        if name is None or not is_dtype_name(name):
            raise self.source.error(node, f"{what} of device function '{self.name}': expected a "
                                          f"scalar or vector dtype such as {self.t_name}.float32 "
                                          f"(device functions take no buffers)")
        return DataType.parse(name)

    def env(self) -> dict:
        """The names the body may use, read at each call (so functions defined later resolve)."""
        fn = self._fn
        env = dict(fn.__globals__)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                env[name] = cell.cell_contents
            except ValueError:
                continue
        return env

    def signature(self) -> str:
        """`name(a: float32x3, b: float32) -> float32`."""
        params = ", ".join(f"{n}: {d}" for n, d in self.params)
        return f"{self.name}({params}) -> {self.ret}"

    def __call__(self, *args, **kwargs):
        raise ScriptError(f"device function {self.signature()} can only be called inside a "
                          f"@T.prim_func or another @T.func (it is inlined there); to run it over "
                          f"arrays use vkir.map({self.name})")

    def __repr__(self):
        return f"<T.func {self.signature()}>"


def func(fn=None):
    """Decorator `@T.func`: a device function with typed scalar/vector parameters and one return
    value, inlined wherever a kernel or another device function calls it."""
    if fn is None:
        return func
    from .entry import read_function

    source, tree, _env = read_function(fn)
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(defs) != 1:
        raise ScriptError(f"@T.func expects one function definition, got {len(defs)}")
    node = defs[0]
    t_name = "T"
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr == "func" \
                and isinstance(target.value, ast.Name):
            t_name = target.value.id
    args = node.args
    for bad in (*args.posonlyargs, *args.kwonlyargs, args.vararg, args.kwarg):
        if bad is not None:
            raise source.error(bad, "device functions take plain positional parameters only")
    if args.defaults:
        raise source.error(args.defaults[0], "device function parameters cannot have defaults")
    return DeviceFunction(fn, source, node, t_name)


_BODY_RULE = ("a device function body holds let bindings (x = e) and ends with `return e` "
              "(or an if/else whose branches both end with a return)")


def _check_body(source, body: list, t_name: str) -> None:
    """ScriptError unless `body` has the shape an inlined expression can take (_BODY_RULE)."""
    body = _without_docstring(body)
    if not body:
        raise source.error(None, _BODY_RULE)
    *lets, last = body
    for s in lets:
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], ast.Name)) and \
                not (isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                     and s.value is not None):
            raise source.error(s, _BODY_RULE)
    if isinstance(last, ast.Return):
        if last.value is None:
            raise source.error(last, "a device function returns one value")
        return
    if isinstance(last, ast.If) and last.orelse:
        _check_body(source, last.body, t_name)
        _check_body(source, last.orelse, t_name)
        return
    raise source.error(last, _BODY_RULE)


def _without_docstring(body: list) -> list:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def resolve(parser, node) -> DeviceFunction | None:
    """The device function a call's callee names (`f` or `module.f` from the script's Python
    scope), or None."""
    target = node.func
    path = []
    while isinstance(target, ast.Attribute):
        path.append(target.attr)
        target = target.value
    if not isinstance(target, ast.Name) or target.id == parser.t_name \
            or target.id in parser.scope or target.id not in parser.env:
        return None
    value = parser.env[target.id]
    for attr in reversed(path):
        value = getattr(value, attr, None)
    return value if isinstance(value, DeviceFunction) else None


def inline(parser, node: ast.Call, fn: DeviceFunction) -> E.PrimExpr:
    """The expression a call of `fn` stands for (see the module doc), parsed with `parser`'s
    expression machinery in a scope of its own."""
    stack = getattr(parser, "inlining", ())
    if fn in stack:
        cycle = " -> ".join(f.name for f in (*stack[stack.index(fn):], fn))
        raise parser.error(node, f"recursive device function: {cycle}; calls of @T.func are "
                                 "inlined, so a device function cannot call itself")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise parser.error(node, f"{fn.name}: device functions take positional arguments only")
    if len(node.args) != len(fn.params):
        raise parser.error(node, f"{fn.signature()} takes {len(fn.params)} argument"
                                 f"{'s' * (len(fn.params) != 1)}, got {len(node.args)}")
    values = [_argument(parser, a, fn, name, dtype) for a, (name, dtype)
              in zip(node.args, fn.params)]
    saved = parser.source, parser.env, parser.t_name, parser.scope
    parser.source, parser.env, parser.t_name, parser.scope = \
        fn.source, fn.env(), fn.t_name, Scope()
    parser.inlining = (*stack, fn)
    try:
        bindings = []
        for (name, dtype), value, a in zip(fn.params, values, fn.node.args.args):
            var = E.Var(name, dtype, span=parser.span(a))
            parser.bind(a, name, var)
            bindings.append((var, value))
        return _lets(bindings, _body(parser, fn, fn.node.body))
    finally:
        parser.source, parser.env, parser.t_name, parser.scope = saved
        parser.inlining = stack


def _argument(parser, a, fn: DeviceFunction, name: str, dtype: DataType) -> E.PrimExpr:
    value = parser.value(a)
    try:
        value = B.literal_as(value, dtype) if B.is_literal(value) else B.to_expr(value)
    except B.BuildError as exc:
        raise parser.error(a, f"{fn.name}: parameter '{name}': {exc}") from None
    if value.dtype != dtype:
        raise parser.error(a, f"{fn.name}: parameter '{name}' is {dtype}, got {value.dtype} "
                              f"(use {parser.t_name}.cast)")
    return value


def _body(parser, fn: DeviceFunction, body: list) -> E.PrimExpr:
    body = _without_docstring(body)
    *lets, last = body
    bindings = []
    with parser.scope.frame():
        for s in lets:
            target = s.targets[0] if isinstance(s, ast.Assign) else s.target
            if isinstance(s, ast.AnnAssign):
                dtype = fn._dtype(s.annotation, f"'{target.id}'")
                value = parser.expr_as(s.value, dtype)
                if value.dtype != dtype:
                    raise parser.error(s.value, f"'{target.id}' is declared {dtype}, got "
                                                f"{value.dtype}")
            else:
                value = parser.expr(s.value)
            var = E.Var(target.id, value.dtype, span=parser.span(target))
            parser.bind(target, target.id, var)
            bindings.append((var, value))
        if isinstance(last, ast.Return):
            result = parser.expr_as(last.value, fn.ret)
            if result.dtype != fn.ret:
                raise parser.error(last.value, f"{fn.name} returns {fn.ret}, got {result.dtype} "
                                               f"(use {parser.t_name}.cast)")
        else:
            cond = parser.expr(last.test)
            yes, no = _body(parser, fn, last.body), _body(parser, fn, last.orelse)
            try:
                result = B.if_then_else(cond, yes, no, span=parser.span(last))
            except B.BuildError as exc:
                raise parser.error(last.test, f"{fn.name}: {exc}") from None
    return _lets(bindings, result)


def _lets(bindings: list, body: E.PrimExpr) -> E.PrimExpr:
    for var, value in reversed(bindings):
        body = E.Let(var, value, body, span=var.span)
    return body
