"""Entry points of the script front end: `@T.prim_func` (from a function's source) and
`from_script` (from text), with the checks made before parsing (syntax, nesting depth)."""

from __future__ import annotations

import ast
import inspect
import textwrap
import warnings
from collections.abc import Mapping

from ..errors import ArgumentError, ScriptError
from ..ir.function import PrimFunc
from ..ir.structural import recursion_headroom
from .diagnostics import Source, parse_python
from .parser import Parser


def _parse_function_def(source: Source, tree: ast.Module, env: dict) -> PrimFunc:
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    others = [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.Import,
                                                          ast.ImportFrom))]
    if len(defs) != 1 or others:
        bad = others[0] if others else (defs[1] if len(defs) > 1 else None)
        raise source.error(bad, "expected exactly one function definition (@T.prim_func def ...)")
    fn = defs[0]
    t_name = "T"
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr == "prim_func" \
                and isinstance(target.value, ast.Name):
            t_name = target.value.id
    return Parser(source, env, t_name).function(fn)


def from_script(text: str, env: dict | None = None, file: str = "<script>") -> PrimFunc:
    """Parse source text holding one `@T.prim_func` function (or the bare def) into a PrimFunc.

    `env` optionally maps names to Python numbers/strings/IR expressions the script may use.
    """
    if not isinstance(text, str):
        raise ArgumentError(f"from_script expects the source as a str, got {type(text).__name__}")
    if env is not None and not isinstance(env, Mapping):
        raise ArgumentError(f"from_script: env must be a dict of names, got {type(env).__name__}")
    source = Source(textwrap.dedent(text), file)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = parse_python(source.text, file)
    except SyntaxError as exc:
        node = ast.Constant(None, lineno=exc.lineno or 1, col_offset=max((exc.offset or 1) - 1, 0))
        raise source.error(node, f"syntax error: {exc.msg}") from None
    except RecursionError:  # Python's own parser gives up on very deeply nested expressions
        lines = source.text.splitlines() or [""]
        k = max(range(len(lines)), key=lambda i: len(lines[i]))  # the deep one is the longest
        node = ast.Constant(None, lineno=k + 1, col_offset=len(lines[k]) - len(lines[k].lstrip()))
        raise source.error(node, "expression nested too deeply for Python's parser; split it "
                                 "with let bindings") from None
    _check_nesting(source, tree)
    return _parse(source, tree, dict(env or {}))


MAX_NESTING = 2900  # expression levels: what Python's own parser takes at its default limit


def _check_nesting(source, tree) -> None:
    """Refuse an expression nested more than MAX_NESTING levels deep (a sum of thousands of
    terms), located at its statement. A fixed bound, so what parses does not depend on the
    process's recursion limit; every stage handles expressions this deep."""
    stack = [(tree, 0, None)]
    while stack:
        node, depth, stmt = stack.pop()
        if isinstance(node, ast.stmt):
            stmt, depth = node, 0
        elif depth > MAX_NESTING:
            raise source.error(stmt, "expression nested too deeply for Python's parser; split "
                                     "it with let bindings")
        stack.extend((child, depth + 1, stmt) for child in ast.iter_child_nodes(node))


def prim_func(func=None, **_options):
    """Decorator: parse the function's source into a PrimFunc (the body is never run)."""
    if func is None:
        return lambda f: prim_func(f, **_options)
    source, tree, env = read_function(func)
    return _parse(source, tree, env)


def read_function(func) -> tuple:
    """(Source, ast.Module, env) of a decorated Python function: its dedented source located in
    its file, the checked syntax tree, and the names it may use (globals, then closure cells)."""
    try:
        lines, first = inspect.getsourcelines(func)
        file = inspect.getsourcefile(func) or "<unknown>"
    except (OSError, TypeError) as exc:
        what = getattr(func, "__qualname__", None) or repr(func)  # T.prim_func(3) has none
        raise ScriptError(f"cannot read the source of {what}: {exc}; "
                          f"use vkir.from_script(text) instead") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(lines[0]) - len(lines[0].lstrip()) if dedented != text else 0
    source = Source(dedented, file, line_offset=first - 1, col_offset=indent)
    tree = parse_python(source.text, file)
    _check_nesting(source, tree)
    env = dict(func.__globals__)
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                env[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is assigned later in the outer function
                continue
    return source, tree, env


def _parse(source, tree, env) -> PrimFunc:
    try:
        with recursion_headroom():
            return _parse_function_def(source, tree, env)
    except ScriptError as exc:
        raise exc.with_traceback(None) from None  # the message points at the script, not here
