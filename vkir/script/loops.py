"""Loops of the script parser: `for` over T.serial/unroll/vectorized/grid/thread_binding, `while`,
and `break`/`continue` (lowered to a one-element exit-state buffer the loop condition reads).

`LoopParser` is the statement parser's loop half; `vkir.script.parser.Parser` adds the rest.
"""

from __future__ import annotations

import ast

from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.dtype import DataType, PointerType
from . import builtins as B
from .exprs import ExprParser

_LOOP_KINDS = {"serial": "serial", "unroll": "unrolled", "vectorized": "vectorized",
               "thread_binding": "thread_binding", "grid": "serial", "parallel": "parallel"}


# signatures of the loop T functions (bound against the call's AST arguments)
def _sig_range(start, stop=None, *, annotations=None, dtype=None):
    """T.serial / T.unroll / T.vectorized"""


def _sig_thread_binding(start, stop=None, thread=None, *, annotations=None, dtype=None):
    """T.thread_binding(extent, thread) or (start, stop, thread)"""


class LoopParser(ExprParser):
    """The loop statements (`_s_For`, `_s_While`, `_s_Break`, `_s_Continue`); `self.loops` is the
    stack of loops around the statement being parsed."""

    def _s_Break(self, node):
        return self._leave(node, "break", _BROKE)

    def _s_Continue(self, node):
        return self._leave(node, "continue", _CONTINUED)

    def _leave(self, node, word: str, state: int) -> S.Stmt:
        """`break`/`continue`: set the enclosing loop's exit state (the statements after it in
        the iteration are guarded by `block`, the loop condition reads it)."""
        if not self.loops:
            raise self.error(node, f"'{word}' outside a loop")
        loop = self.loops[-1]
        if loop.state is None:
            raise self.error(node, f"'{word}' is only supported in {self.t_name}.serial loops "
                                   f"and while loops, not in {self.t_name}.{loop.kind} loops")
        return S.BufferStore(loop.state, E.IntImm(_INT32, state), (_ZERO,), span=self.span(node))

    def _s_While(self, node):
        if node.orelse:
            raise self.error(node.orelse[0], "while ... else is not supported")
        cond = self.expr(node.test)
        if not isinstance(cond, E.PrimExpr) or cond.dtype != DataType("bool", 1):
            got = cond.dtype if isinstance(cond, E.PrimExpr) else type(cond).__name__
            raise self.error(node.test, f"a while condition must be a scalar bool, got {got}; "
                                        f"compare it, e.g. `while n != 0:`")
        span = self.span(node)
        breaks, continues = _exits(node.body)
        if isinstance(cond, E.IntImm) and cond.value and not breaks:
            raise self.error(node.test, "this loop never ends (its condition is always true and "
                                        "nothing in it breaks); a kernel that never returns "
                                        "hangs the device")
        if not (breaks or continues):
            return S.While(cond, self._loop_body(node.body, LoopExit("while")), span=span)
        state = _state_buffer("loop_exit", span)
        body = self._loop_body(node.body, LoopExit("while", state))
        reset = S.BufferStore(state, E.IntImm(_INT32, _RUNNING), (_ZERO,), span=span)
        if breaks:   # while the state is not "broke": reset it, then run if the condition holds
            stop = S.BufferStore(state, E.IntImm(_INT32, _BROKE), (_ZERO,), span=span)
            loop = S.While(E.NE(_load(state), E.IntImm(_INT32, _BROKE)),
                           S.seq(reset, S.IfThenElse(cond, body, stop, span=span)), span=span)
        else:
            loop = S.While(cond, S.seq(reset, body), span=span)
        return S.AllocBuffer(state, S.seq(reset, loop), span=span)

    def _loop_body(self, stmts, loop) -> S.Stmt:
        self.loops.append(loop)
        try:
            return self.block(stmts)
        finally:
            self.loops.pop()

    def _serial_with_exits(self, node, var, start, extent, annotations, breaks: bool):
        """A serial loop whose body may `break`/`continue`. With `continue` only it stays a
        loop, its body resetting the exit state first; a loop that may break becomes a while
        loop over a counter, so that it stops at the break instead of idling to its end."""
        span = self.span(node)
        state = _state_buffer(f"{var.name}_exit", span)
        reset = S.BufferStore(state, E.IntImm(_INT32, _RUNNING), (_ZERO,), span=span)
        with self.scope.frame():
            self.bind(node.target, node.target.id, var)
            body = self._loop_body(node.body, LoopExit("serial", state))
        if not breaks:
            loop = S.For(var, start, extent, "serial", S.seq(reset, body), None, annotations,
                         span=span)
            return S.AllocBuffer(state, S.seq(reset, loop), span=span)
        if annotations:
            raise self.error(node.iter, "a loop that may break takes no annotations")
        dt = var.dtype
        counter = Buffer(f"{var.name}_next", E.Var(f"{var.name}_next", PointerType(dt, "local")),
                         dt, (1,), scope="local", span=span)
        end = extent if isinstance(start, E.IntImm) and start.value == 0 else E.Add(start, extent)
        bind_end = None
        if not isinstance(end, (E.IntImm, E.Var)):   # evaluated once, as a loop's extent is
            bind_end, end = end, E.Var(f"{var.name}_end", dt, span=span)
        step = S.BufferStore(counter, E.Add(var, E.IntImm(dt, 1)), (_ZERO,), span=span)
        loop = S.While(E.And(E.LT(_load(counter), end), E.NE(_load(state),
                                                            E.IntImm(_INT32, _BROKE))),
                       S.LetStmt(var, _load(counter), S.seq(reset, body, step), span=span),
                       span=span)
        out = S.seq(reset, S.BufferStore(counter, start, (_ZERO,), span=span), loop)
        if bind_end is not None:
            out = S.LetStmt(end, bind_end, out, span=span)
        return S.AllocBuffer(state, S.AllocBuffer(counter, out, span=span), span=span)

    def _s_For(self, node):
        if node.orelse:
            raise self.error(node.orelse[0], "for ... else is not supported")
        kind = self.t_call(node.iter)
        if kind not in _LOOP_KINDS:
            raise self.error(node.iter, f"loops must iterate over {self.t_name}.serial, "
                                        f"{self.t_name}.unroll, {self.t_name}.vectorized, "
                                        f"{self.t_name}.parallel, {self.t_name}.grid or "
                                        f"{self.t_name}.thread_binding")
        if kind == "grid":
            return self._grid(node)
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        sig = _sig_thread_binding if kind == "thread_binding" else _sig_range
        args = self.bind_call(node.iter, sig)
        thread = None
        if kind == "thread_binding":
            if args["thread"] is None and isinstance(args["stop"], ast.Constant) \
                    and isinstance(args["stop"].value, str):
                args["thread"], args["stop"] = args["stop"], None
            if args["thread"] is None:
                raise self.error(node.iter, f"{self.t_name}.thread_binding needs a thread tag "
                                            f"such as \"threadIdx.x\"")
            thread = self.value(args["thread"])
            if thread not in S.THREAD_TAGS:
                raise self.error(args["thread"], f"unknown thread tag {thread!r}; expected one of "
                                                 f"{', '.join(S.THREAD_TAGS)}")
        dtype = None if args["dtype"] is None else self._arg_dtype(args["dtype"])
        start, extent, dtype = self._range(args["start"], args["stop"], dtype)
        annotations = self._annotations(args["annotations"])
        var = E.Var(node.target.id, dtype, span=self.span(node.target))
        breaks, continues = _exits(node.body)
        if (breaks or continues) and kind == "serial":
            return self._serial_with_exits(node, var, start, extent, annotations, breaks)
        with self.scope.frame():
            self.bind(node.target, node.target.id, var)
            body = self._loop_body(node.body, LoopExit(kind))
        return S.For(var, start, extent, _LOOP_KINDS[kind], body, thread, annotations,
                     span=self.span(node))

    def _range(self, start_node, stop_node, dtype=None):
        """(min, extent, loop var dtype) of `(extent)` or `(start, stop)`. The loop var takes
        the extent's dtype, or `dtype` when given (then literals take it too)."""
        if stop_node is None:
            ext = self.value(start_node)
            start = 0
        else:
            start, ext = self.value(start_node), self.value(stop_node)
        try:
            if dtype is not None:
                start, ext = (B.literal_as(v, dtype, i) if B.is_literal(v) else v
                              for i, v in enumerate((start, ext)))
            start, ext = B.unify(start, ext)
        except B.BuildError as exc:
            # with one argument (the extent) the implicit start 0 is not in the source
            raise self.error(stop_node if exc.arg and stop_node is not None else start_node,
                             str(exc)) from None
        if stop_node is not None:
            ext = _extent(start, ext)
        return start, ext, dtype or ext.dtype

    def _grid(self, node):
        call = node.iter
        extra = [k for k in call.keywords if k.arg != "annotations"]
        if extra:
            raise self.error(extra[0].value, f"{self.t_name}.grid takes extents and annotations= only")
        # like every loop, a grid takes annotations; each loop of the nest carries them
        annotations = self._annotations(next((k.value for k in call.keywords), None))
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        if len(targets) != len(call.args):
            raise self.error(node.target, f"{self.t_name}.grid has {len(call.args)} extents but "
                                          f"{len(targets)} loop variables")
        for t in targets:
            if not isinstance(t, ast.Name):
                raise self.error(t, "loop variables must be names")
        loops = []
        with self.scope.frame():
            for t, ext_node in zip(targets, call.args):
                ext = self.expr(ext_node)
                var = E.Var(t.id, ext.dtype, span=self.span(t))
                self.bind(t, t.id, var)
                loops.append((var, ext))
            body = self._loop_body(node.body, LoopExit("grid"))
        for var, ext in reversed(loops):
            body = S.For(var, E.const(0, ext.dtype), ext, "serial", body, None, annotations,
                         span=self.span(node))
        return body

    def _annotations(self, node) -> dict:
        if node is None:
            return {}
        try:
            value = ast.literal_eval(node)
        except ValueError:
            raise self.error(node, "expected a dict literal of constants") from None
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise self.error(node, "expected a dict with string keys")
        return value


_INT32 = DataType("int", 32)
_ZERO = E.IntImm(_INT32, 0)
_RUNNING, _CONTINUED, _BROKE = 0, 1, 2   # a loop's exit state in its iteration


class LoopExit:
    """The loop a `break`/`continue` leaves: its kind, and the one-element local int32 buffer
    holding its exit state (None where the loop takes no break/continue)."""

    __slots__ = ("kind", "state")

    def __init__(self, kind: str, state: Buffer | None = None):
        self.kind = kind
        self.state = state

    def running(self) -> E.PrimExpr:
        """True while no `break`/`continue` ran in this iteration."""
        return E.EQ(_load(self.state), E.IntImm(_INT32, _RUNNING))


def _state_buffer(name: str, span) -> Buffer:
    data = E.Var(name, PointerType(_INT32, "local"), span=span)
    return Buffer(name, data, _INT32, (1,), scope="local", span=span)


def _load(buffer: Buffer) -> E.BufferLoad:
    return E.BufferLoad(buffer, (_ZERO,))


def _exits(stmts: list) -> tuple[bool, bool]:
    """(has a break, has a continue) that leaves the loop whose body is `stmts` (those of
    nested loops leave those)."""
    breaks = continues = False
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break):
            breaks = True
        elif isinstance(node, ast.Continue):
            continues = True
        elif isinstance(node, (ast.For, ast.While)):
            stack.extend(node.orelse)
        elif isinstance(node, ast.stmt):
            stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))
    return breaks, continues


def leaves_iteration(stmts: list) -> bool:
    """Whether `stmts` may `break` or `continue` the loop around them."""
    return any(_exits(stmts))


def _extent(start: E.PrimExpr, stop: E.PrimExpr) -> E.PrimExpr:
    """stop - start, folded for constants and for `start + e` (so printed loops round-trip)."""
    if isinstance(start, E.IntImm) and isinstance(stop, E.IntImm) and start.dtype == stop.dtype:
        return E.IntImm(stop.dtype, stop.value - start.value)
    if isinstance(stop, E.Add):
        from ..ir.structural import structural_equal

        if structural_equal(stop.a, start):
            return stop.b
    return E.Sub(stop, start)
