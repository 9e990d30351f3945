"""The synchronous meaning of a software-pipeline spec, for tests that compare against it.

A loop annotated for InjectSoftwarePipeline whose stages hand shared memory from one invocation
to another carries no barrier: InjectSoftwarePipeline and LowerAsync place them. Run as written it
is a plain loop that races (the interpreter raises DataRaceError: on a GPU it would be wrong),
so it is no oracle. What the annotations mean is that loop with a workgroup barrier before each
statement of its body and after the last one: every stage sees what the stages before it wrote,
and the next iteration overwrites nothing still being read. `synchronous(func)` builds that.
"""

from vkir import ir


class _Synchronous(ir.Mutator):
    def visit_For(self, node):
        body = self.visit(node.body)
        if "software_pipeline_stage" not in node.annotations:
            return node if body is node.body else ir.For(
                node.loop_var, node.min, node.extent, node.kind, body, node.thread,
                node.annotations)
        stmts = body.seq if isinstance(body, ir.SeqStmt) else (body,)
        synced = [s for stmt in stmts for s in (ir.Barrier(), stmt)] + [ir.Barrier()]
        return ir.For(node.loop_var, node.min, node.extent, node.kind, ir.seq(*synced),
                      node.thread)


def synchronous(func):
    """`func` with every pipeline-annotated loop made a plain loop synchronised between stages."""
    return func.with_body(_Synchronous().visit(func.body))
