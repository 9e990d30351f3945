"""Statements to structured SPIR-V control flow (mixed into the kernel emitter).

Loops: header block (OpLoopMerge) -> condition block -> body -> continue block -> header, with the
induction variable in a Function variable (no OpPhi). An unrolled loop with a constant trip count
(at most MAX_UNROLL) is emitted as copies of its body; a loop annotated for loop-cut checks
reports, after it exits, whether the driver cut it (vkir.spirv.codegen.loop_cut). Ifs:
OpSelectionMerge. Async statements that reach codegen run synchronously; a remaining wait becomes
a workgroup barrier.
"""

from __future__ import annotations

from vkir.arith.ranges import is_zero
from vkir.errors import TypeCheckError, UnsupportedError
from vkir.ir import (Add, AllocBuffer, AsyncCommitQueue, AsyncScope, AsyncWaitQueue, Barrier,
                     BufferStore, DataType, DeclBuffer, Evaluate, FloatImm, For, IfThenElse,
                     IntImm, LetStmt, LT, SeqStmt, Stmt, SubgroupBarrier, Var, While)
from vkir.ir.substitution import substitute
from vkir.ir.traversal import walk

from . import loop_cut


# the most copies of a loop body that an unrolled loop with a constant trip count becomes
MAX_UNROLL = 64


class StmtMixin:
    """`stmt(s)` emits `s` at the current point (the current block stays open afterwards)."""

    def stmt(self, s: Stmt) -> None:
        """Emit statement `s` (one `s_*` method per node kind)."""
        method = self._stmt_methods.get(type(s))
        if method is None:
            raise UnsupportedError(f"kernel {self.func.name!r}: codegen has no rule for "
                                   f"{type(s).__name__}")
        method(self, s)

    def s_seq(self, s: SeqStmt) -> None:
        """The statements in order."""
        for item in s.seq:
            self.stmt(item)

    def s_store(self, s: BufferStore) -> None:
        """A buffer write."""
        self.store(s.buffer, s.value, s.indices)

    def s_let(self, s: LetStmt) -> None:
        """The body with the var bound to the value's id."""
        v = self.expr(s.value)
        with self.bound(s.var, v), self.ranges.bound_to(s.var, s.value):
            self.stmt(s.body)

    def s_evaluate(self, s: Evaluate) -> None:
        """An expression evaluated for its effect (a constant emits nothing)."""
        if not isinstance(s.value, (IntImm, FloatImm)):
            self.expr(s.value)

    def s_if(self, s: IfThenElse) -> None:
        """Structured selection (OpSelectionMerge, OpBranchConditional)."""
        if s.condition.dtype != DataType("bool", 1):
            raise TypeCheckError(f"kernel {self.func.name!r}: if condition must be a scalar "
                                 f"bool, got {s.condition.dtype}")
        c = self.expr(s.condition)
        then_label, merge = self.b.new_id(), self.b.new_id()
        else_label = self.b.new_id() if s.else_case is not None else merge
        self.do("OpSelectionMerge", merge, 0)
        self.do("OpBranchConditional", c, then_label, else_label)
        self.start_block(then_label)
        self.stmt(s.then_case)
        self.do("OpBranch", merge)
        if s.else_case is not None:
            self.start_block(else_label)
            self.stmt(s.else_case)
            self.do("OpBranch", merge)
        self.start_block(merge)

    def s_for(self, s: For) -> None:
        """A loop: thread bindings read the invocation ids; serial loops are structured loops;
        unrolled ones are copied."""
        if s.kind == "thread_binding":
            self.thread_loop(s)
            return
        dt = s.loop_var.dtype
        if not dt.is_integer or dt.lanes != 1:
            raise TypeCheckError(f"kernel {self.func.name!r}: loop variable {s.loop_var.name!r} "
                                 f"must be a scalar integer, got {dt}")
        if s.kind == "unrolled" and self._unroll(s):
            return
        t = self.ty(dt)
        lo = self.expr(s.min)
        if is_zero(s.min):
            end = self.expr(s.extent)
        elif isinstance(s.min, IntImm) and isinstance(s.extent, IntImm):
            end = self.expr(Add(s.min, s.extent))  # folds to a constant
        else:
            end = self.int_op("OpIAdd", Add(s.min, s.extent), t, lo, self.expr(s.extent))
        ptr = self.function_variable(self.b.type_pointer("Function", t))
        self.do("OpStore", ptr, lo)
        site = s.annotations.get(loop_cut.SITE)
        if site is not None:   # `done`: one past the last iteration that ran (end before any)
            done = self.function_variable(self.b.type_pointer("Function", t))
            self.do("OpStore", done, end)
        header, check, body, cont, merge = (self.b.new_id() for _ in range(5))
        self.do("OpBranch", header)
        self.start_block(header)
        control = "Unroll" if s.kind == "unrolled" else "None"
        self.do("OpLoopMerge", merge, cont, self.b.enum("LoopControl", control))
        self.do("OpBranch", check)
        self.start_block(check)
        i = self.op("OpLoad", t, ptr)
        self.b.name(i, s.loop_var.name)
        less = "OpSLessThan" if dt.is_int else "OpULessThan"
        self.do("OpBranchConditional", self.op(less, self.ty(DataType("bool", 1)), i, end),
                body, merge)
        self.start_block(body)
        with self.bound(s.loop_var, i), self.ranges.loop(s.loop_var, s.min, s.extent):
            self.stmt(s.body)
            if site is not None:
                self.do("OpStore", done, self.int_op("OpIAdd", Add(s.loop_var, IntImm(dt, 1)), t,
                                                     i, self.const(dt, 1)))
            self.do("OpBranch", cont)
            self.start_block(cont)
            # the body ran, so i < min + extent: i + 1 wraps only where min + extent does
            step = self.int_op("OpIAdd", Add(s.loop_var, IntImm(dt, 1)), t, i,
                               self.const(dt, 1))
        self.do("OpStore", ptr, step)
        self.do("OpBranch", header)
        self.start_block(merge)
        if site is not None:
            self._cut_check(s.loop_var, done, end, site)

    def _cut_check(self, var: Var, done: int, end: int, site: int) -> None:
        """After a loop checked for cuts (vkir.spirv.codegen.loop_cut): `if done < end` (the
        iterations that ran stop short of the end: the driver left the loop early), claim the
        kernel's loop record for `site`."""
        record = loop_cut.record_buffer(self.func)
        assert record is not None, "a loop-cut site in a kernel without its record"
        dt = var.dtype
        ran = self.op("OpLoad", self.ty(dt), done)
        less = "OpSLessThan" if dt.is_int else "OpULessThan"
        cut = Var(f"{var.name}_cut", DataType("bool", 1))
        with self.bound(cut, self.op(less, self.ty(DataType("bool", 1)), ran, end)):
            self.stmt(IfThenElse(cut, loop_cut.claim(record, site)))

    def s_while(self, s: While) -> None:
        """A while loop: header (OpLoopMerge) -> condition block -> body -> continue -> header."""
        if s.condition.dtype != DataType("bool", 1):
            raise TypeCheckError(f"kernel {self.func.name!r}: while condition must be a scalar "
                                 f"bool, got {s.condition.dtype}")
        header, check, body, cont, merge = (self.b.new_id() for _ in range(5))
        self.do("OpBranch", header)
        self.start_block(header)
        self.do("OpLoopMerge", merge, cont, self.b.enum("LoopControl", "None"))
        self.do("OpBranch", check)
        self.start_block(check)
        self.do("OpBranchConditional", self.expr(s.condition), body, merge)
        self.start_block(body)
        self.stmt(s.body)
        self.do("OpBranch", cont)
        self.start_block(cont)
        self.do("OpBranch", header)
        self.start_block(merge)

    def _unroll(self, s: For) -> bool:
        """Emit an unrolled loop with a constant trip count as that many copies of its body,
        the loop var replaced by each constant in turn (drivers need not honour the Unroll
        hint, and each copy's index arithmetic has exact ranges). False (emit a hinted loop)
        when the trip count is not a constant or is over MAX_UNROLL, or when the body
        allocates memory (each copy would get its own) or declares a buffer (whose shape or
        offset may name the loop var, which substitution leaves alone)."""
        lo, ext = self.ranges.of(s.min), self.ranges.of(s.extent)
        if lo is None or ext is None or lo[0] != lo[1] or ext[0] != ext[1]:
            return False
        if ext[0] > MAX_UNROLL or any(isinstance(n, (AllocBuffer, DeclBuffer))
                                      for n in walk(s.body)):
            return False
        dt = s.loop_var.dtype
        for value in range(lo[0], lo[0] + max(ext[0], 0)):
            self.stmt(substitute(s.body, {s.loop_var: IntImm(dt, value)}))
        return True

    def thread_loop(self, s: For) -> None:
        """A thread-binding loop is its body with the loop var bound to the invocation's id
        (plus the loop's min, where it is not zero)."""
        dt = s.loop_var.dtype
        v = self.convert(self.thread_id(s.thread), DataType("int", 32), dt)
        if not is_zero(s.min):
            tid = Var("id", dt)
            with self.ranges.thread(tid, IntImm(dt, 0), s.extent):
                v = self.int_op("OpIAdd", Add(tid, s.min), self.ty(dt), v, self.expr(s.min))
        self.b.name(v, s.loop_var.name)
        body = s.body
        if s.thread == "blockIdx.x" and self.folds_grid:
            # the folded dispatch rounds the grid up to whole rows: the extra workgroups (each
            # uniformly, so barriers stay in uniform control flow) do nothing
            body = IfThenElse(LT(s.loop_var, Add(s.min, s.extent)), body)
        with self.bound(s.loop_var, v), self.ranges.thread(s.loop_var, s.min, s.extent):
            self.stmt(body)

    def s_alloc(self, s: AllocBuffer) -> None:
        """Allocate a shared or local buffer for the body."""
        self.allocate(s.buffer)
        self.stmt(s.body)

    def s_decl(self, s: DeclBuffer) -> None:
        """Declare a typed view of an existing storage (an explicit pointer cast)."""
        self.declare(s.buffer)
        self.stmt(s.body)

    def s_barrier(self, s: Barrier) -> None:
        """A workgroup barrier with AcquireRelease workgroup memory semantics."""
        self.barrier()

    def s_subgroup_barrier(self, s: SubgroupBarrier) -> None:
        """A subgroup barrier: OpControlBarrier(Subgroup, Subgroup, AcquireRelease |
        WorkgroupMemory)."""
        self.barrier("Subgroup")

    def s_async_scope(self, s: AsyncScope) -> None:
        """The body (copies are synchronous on Vulkan)."""
        self.stmt(s.body)

    def s_async_commit(self, s: AsyncCommitQueue) -> None:
        """The body (copies are synchronous on Vulkan)."""
        self.stmt(s.body)

    def s_async_wait(self, s: AsyncWaitQueue) -> None:
        """A workgroup barrier (the synchronous copies are then visible), then the body."""
        self.barrier()
        self.stmt(s.body)

    _stmt_methods = {
        SeqStmt: s_seq, BufferStore: s_store, LetStmt: s_let, Evaluate: s_evaluate,
        IfThenElse: s_if, For: s_for, While: s_while, AllocBuffer: s_alloc, DeclBuffer: s_decl,
        Barrier: s_barrier, SubgroupBarrier: s_subgroup_barrier, AsyncScope: s_async_scope,
        AsyncCommitQueue: s_async_commit,
        AsyncWaitQueue: s_async_wait,
    }

