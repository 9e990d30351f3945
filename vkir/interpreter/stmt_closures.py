"""The interpreter's closures of statements other than loops (loop_closures.py) and memory
(memory_closures.py): sequences, evaluations, barriers, lets, divergent ifs and async queues."""

from __future__ import annotations

from .errors import InterpreterError
from .frames import is_uniform, need_uniform
from .memory import AsyncGroup


class StmtClosures:
    """Compiler methods turning a statement into a closure `f(frame)` (mixed into Compiler)."""

    def stmt(self, s):
        """A closure `fn(frame)` executing statement `s` (one `s_<Node>` method per node kind)."""
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise InterpreterError(f"cannot interpret statement {type(s).__name__}")
        outer = self.stmt_span
        if s.span is not None:
            self.stmt_span = s.span
        try:
            return method(s)
        finally:
            self.stmt_span = outer

    def s_SeqStmt(self, s):
        """The statements in order."""
        body = tuple(self.stmt(x) for x in s.seq)

        def seq(fr):
            for f in body:
                f(fr)
        return seq

    def s_Evaluate(self, s):
        """Evaluate the value for its effect."""
        fv = self.expr(s.value)

        def evaluate(fr):
            fv(fr)
        return evaluate

    def s_SubgroupBarrier(self, s):
        """A subgroup barrier. Invocations run in lockstep, so nothing waits; the race checker
        does not count it as a workgroup barrier (accesses it separates across subgroups still
        race), which is conservative within a subgroup."""
        return lambda fr: None

    def s_Barrier(self, s):
        """A workgroup barrier: orders the accesses before it before those after it (for the race
        checker)."""
        # Invocations run in lockstep, so the active ones reach the barrier together; a barrier
        # that only some invocations of the workgroup reach would hang a GPU.
        span = s.span
        where = f" at {span}" if span is not None else ""
        line = getattr(span, "source_line", "") if span is not None else ""
        if line:
            where += f"\n    {line.strip()}"

        def barrier(fr):
            if fr.tid is not None and len(fr.tid) < fr.group_size:
                raise InterpreterError(f"barrier reached by only {len(fr.tid)} of the "
                                       f"{fr.group_size} invocations of the workgroup "
                                       f"(non-uniform control flow: every invocation of a "
                                       f"workgroup must reach each barrier){where}")
            races = fr.state.races
            if races is not None:
                races.barrier()
        return barrier

    def s_LetStmt(self, s):
        """The body with the var's slot holding the value."""
        fv = self.expr(s.value)
        slot = self.bind(s.var)
        fb = self.stmt(s.body)
        self.bound.discard(s.var)

        def let(fr):
            fr.slots[slot] = fv(fr)
            fb(fr)
        return let

    def s_IfThenElse(self, s):
        """Each invocation runs the branch its condition picks (divergent invocations are split).
        """
        fc = self.expr(s.condition)
        ft = self.stmt(s.then_case)
        fe = self.stmt(s.else_case) if s.else_case is not None else None

        def if_then_else(fr):
            c = fc(fr)
            if is_uniform(c):
                if c:
                    ft(fr)
                elif fe is not None:
                    fe(fr)
                return
            if c.ndim > 1:
                raise InterpreterError("if condition must be a scalar bool")
            if c.all():
                ft(fr)
            elif not c.any():
                if fe is not None:
                    fe(fr)
            else:
                ft(fr.subset(c))
                if fe is not None:
                    fe(fr.subset(~c))
        return if_then_else

    def s_AsyncScope(self, s):
        """The body with its stores recorded in the current async group."""
        outer = self.in_async
        self.in_async = True
        body = self.stmt(s.body)
        self.in_async = outer
        return body

    def s_AsyncCommitQueue(self, s):
        """The body's async stores committed as one group of the queue."""
        body = self.stmt(s.body)
        queue = s.queue

        def commit(fr):
            state = fr.state
            outer = state.group
            group = state.group = AsyncGroup()
            body(fr)
            state.group = outer
            state.queues[queue].append(group)
            state.committed.append(group)
        return commit

    def s_AsyncWaitQueue(self, s):
        """Retire the oldest groups of the queue until at most `in_flight` remain, then run the
        body."""
        site = self.site("wait", s)
        fn = self.expr(s.in_flight)
        body = self.stmt(s.body)
        queue = s.queue

        def wait(fr):
            n = int(need_uniform(fn(fr), "async_wait_queue in-flight count"))
            state = fr.state
            pending = state.queues[queue]
            while len(pending) > max(n, 0):
                group = pending.pop(0)
                group.retire(state.races, site)
                state.committed.remove(group)
            body(fr)
        return wait
