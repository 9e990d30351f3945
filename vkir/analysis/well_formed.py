"""Scoping and SSA checks: `verify_well_formed(func)` raises `WellFormedError` for

- a variable used where it is not defined (not a parameter, a size var, or bound by an enclosing
  Let/LetStmt/For, or for a data var, by an enclosing AllocBuffer);
- a variable bound twice (the same Let/loop var object, or data var, bound in two places, or a
  parameter/size var bound again): vkir IR is SSA;
- a buffer used (loaded, stored, or aliased) outside the scope of its AllocBuffer/DeclBuffer, a
  buffer declared twice, or a DeclBuffer whose data var is not in scope;
- a `Barrier()` in non-uniform control flow where provable: under an `if` whose condition, or in a
  loop whose bounds or `while` condition, depend on threadIdx variables (directly or through lets,
  loads at thread-dependent indices, and local variables assigned such values or assigned under
  such control flow, as `break` flags are). Invocations that skip a barrier others wait at
  deadlock on a GPU.
"""

from __future__ import annotations

from ..errors import WellFormedError
from ..ir import expr as E
from ..ir import stmt as S
from ..ir.buffer import Buffer
from ..ir.function import PrimFunc
from ..ir.functor import children
from ..ir.structural import recursion_headroom
from ..ir.printer import compact


def verify_well_formed(func: PrimFunc) -> None:
    """Raise WellFormedError at the first scoping/SSA violation; return None otherwise."""
    if not isinstance(func, PrimFunc):
        raise WellFormedError(f"expected a PrimFunc, got {type(func).__name__}")
    with recursion_headroom():  # one recursion per level of deep expressions
        # which local variables hold per-invocation values is a fixpoint (a loop may assign a
        # variable that its own condition reads): grow the set until it is stable, then check
        varying = frozenset()
        while True:
            checker = _Checker(func, varying, check_barriers=False)
            checker.run()
            if checker.varying_buffers == varying:
                break
            varying = frozenset(checker.varying_buffers)
        _Checker(func, varying).run()


class _Checker:
    def __init__(self, func: PrimFunc, varying_buffers=frozenset(), check_barriers=True):
        self.func = func
        self.in_scope = set()      # vars currently defined
        self.ever_bound = set()    # vars bound anywhere so far (SSA)
        self.buffers = set()       # buffers currently declared
        self.ever_declared = set()
        self.thread_vars = set()   # vars whose value differs between invocations of a workgroup
        self.divergent = None      # the statement making control flow non-uniform, if any
        # local buffers (variables) that may hold different values in different invocations
        self.varying_buffers = set(varying_buffers)
        self.check_barriers = check_barriers
        self.span = func.span

    def fail(self, what: str, node):
        msg = f"{what} in `{compact(node)}`"
        span = getattr(node, "span", None) or self.span
        if span is not None:
            msg += f" at {span}"
        raise WellFormedError(msg)

    # -- scopes ------------------------------------------------------------------------------

    def bind(self, var, node):
        if not isinstance(var, E.Var):
            self.fail(f"{type(var).__name__} bound as a variable", node)
        if var in self.ever_bound:
            self.fail(f"variable {var.name} is bound twice (IR is SSA)", node)
        self.ever_bound.add(var)
        self.in_scope.add(var)

    def declare(self, buffer, node):
        if buffer in self.ever_declared:
            self.fail(f"buffer {buffer.name} is declared twice", node)
        self.ever_declared.add(buffer)
        self.buffers.add(buffer)
        self.buffer_sizes(buffer, node)

    def buffer_sizes(self, buffer, node):
        for x in (*buffer.shape, *buffer.strides, buffer.elem_offset):
            self.expr(x, node)

    def run(self):
        func = self.func
        for p in func.params:
            self.bind(p, func)
        for v in func.size_vars:
            self.bind(v, func)
        for p, buffer in func.buffer_map.items():
            if p not in func.params:
                self.fail(f"buffer_map key {getattr(p, 'name', p)} is not a parameter", func)
            self.declare(buffer, func)
        self.stmt(func.body)

    # -- expressions -------------------------------------------------------------------------

    def expr(self, e, stmt) -> bool:
        """Check `e`; return True when its value may differ between invocations."""
        if isinstance(e, E.Var):
            if e not in self.in_scope:
                self.fail(f"variable {e.name} is used outside its scope (undefined)", stmt)
            return e in self.thread_vars
        if isinstance(e, E.Let):
            varying = self.expr(e.value, stmt)
            self.bind(e.var, stmt)
            if varying:
                self.thread_vars.add(e.var)
            varying = self.expr(e.body, stmt) or varying
            self.in_scope.discard(e.var)
            return varying
        varying = False
        if isinstance(e, E.BufferLoad):
            self.use(e.buffer, stmt)
            varying = e.buffer.data in self.varying_buffers
        for c in children(e):
            varying = self.expr(c, stmt) or varying
        return varying

    def use(self, buffer, stmt):
        if not isinstance(buffer, Buffer):
            self.fail(f"{type(buffer).__name__} used as a buffer", stmt)
        if buffer not in self.buffers:
            self.fail(f"buffer {buffer.name} is used outside the scope of its declaration", stmt)

    # -- statements --------------------------------------------------------------------------

    def stmt(self, s):
        outer_span = self.span
        if getattr(s, "span", None) is not None:
            self.span = s.span
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            for c in children(s):
                if isinstance(c, S.Stmt):
                    self.stmt(c)
                else:
                    self.expr(c, s)
        else:
            method(s)
        self.span = outer_span

    def under(self, varying: bool, node, body):
        """Check `body`, noting non-uniform control flow when `varying`."""
        outer = self.divergent
        if varying and outer is None:
            self.divergent = node
        self.stmt(body)
        self.divergent = outer

    def s_SeqStmt(self, s):
        for x in s.seq:
            self.stmt(x)

    def s_BufferStore(self, s):
        self.use(s.buffer, s)
        varying = self.expr(s.value, s)
        for i in s.indices:
            varying = self.expr(i, s) or varying
        if s.buffer.scope == "local" and (varying or self.divergent is not None):
            self.varying_buffers.add(s.buffer.data)

    def s_LetStmt(self, s):
        varying = self.expr(s.value, s)
        self.bind(s.var, s)
        if varying:
            self.thread_vars.add(s.var)
        self.stmt(s.body)
        self.in_scope.discard(s.var)

    def s_For(self, s):
        varying = self.expr(s.min, s)
        varying = self.expr(s.extent, s) or varying
        self.bind(s.loop_var, s)
        if s.kind == "thread_binding" and str(s.thread).startswith("threadIdx"):
            self.thread_vars.add(s.loop_var)
        if varying:
            self.thread_vars.add(s.loop_var)
        self.under(varying, s, s.body)
        self.in_scope.discard(s.loop_var)

    def s_IfThenElse(self, s):
        varying = self.expr(s.condition, s)
        self.under(varying, s, s.then_case)
        if s.else_case is not None:
            self.under(varying, s, s.else_case)

    def s_While(self, s):
        self.under(self.expr(s.condition, s), s, s.body)

    def s_Evaluate(self, s):
        self.expr(s.value, s)

    def s_AllocBuffer(self, s):
        buffer = s.buffer
        self.buffer_sizes(buffer, s)
        self.bind(buffer.data, s)
        self.declare(buffer, s)
        self.stmt(s.body)
        self.buffers.discard(buffer)
        self.in_scope.discard(buffer.data)

    def s_DeclBuffer(self, s):
        buffer = s.buffer
        if buffer.data not in self.in_scope:
            self.fail(f"DeclBuffer {buffer.name}: its data var {buffer.data.name} is not in "
                      "scope", s)
        self.declare(buffer, s)
        self.stmt(s.body)
        self.buffers.discard(buffer)

    def s_AsyncWaitQueue(self, s):
        self.expr(s.in_flight, s)
        self.stmt(s.body)

    def s_SubgroupBarrier(self, s):
        self.s_Barrier(s)   # conservatively: uniform across the workgroup

    def s_Barrier(self, s):
        if self.divergent is not None and self.check_barriers:
            self.fail("barrier in non-uniform control flow (invocations of a workgroup may not all "
                      f"reach it): under `{compact(self.divergent, 60)}`, which depends on "
                      "threadIdx",
                      s)
