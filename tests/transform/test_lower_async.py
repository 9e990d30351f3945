"""LowerAsync: producers run synchronously, commits disappear, and workgroup barriers appear
exactly where shared-memory data crosses invocations (read after write at a wait, write after read
when a producer overwrites a version other invocations read). Outputs pass the checkers and
compute what the unlowered (pipelined, async) program computes in the interpreter."""

import numpy as np
import pytest

import vkir
from vkir import T, ir
from vkir.analysis import verify_types, verify_well_formed
from vkir.testing import check_pass, random_arguments
from vkir.transform import InjectSoftwarePipeline, LowerAsync

from pipeline_reference import synchronous


def _run(func, args):
    out = [a.copy() for a in args]
    vkir.interpret(func, *out)
    return out


def _lower(func):
    pipelined = InjectSoftwarePipeline()(func)
    lowered = LowerAsync()(pipelined)
    verify_types(lowered)
    verify_well_formed(lowered)
    assert not any(isinstance(n, (ir.AsyncScope, ir.AsyncCommitQueue, ir.AsyncWaitQueue))
                   for n in ir.walk(lowered))
    for seed in range(2):
        args = random_arguments(func, seed)
        # the annotated loop itself races across invocations (it has no barrier): the
        # reference is its synchronous meaning (see tests/pipeline_reference.py)
        want = _run(synchronous(func), args)
        for got in (_run(pipelined, args), _run(lowered, args)):
            for w, g in zip(want, got):
                np.testing.assert_allclose(g, w, rtol=1e-6)
    return lowered


def _barriers(func):
    return sum(isinstance(n, ir.Barrier) for n in ir.walk(func))


# ----------------------------------------------------------------------------------------------
# a single invocation: no data crosses invocations, no barrier


@T.prim_func
def two_stage_async(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="shared")
    for i in T.serial(16, annotations={"software_pipeline_stage": [0, 1],
                                       "software_pipeline_order": [0, 1],
                                       "software_pipeline_async_stages": [0]}):
        B[0] = A[i] + T.float32(1)
        C[i] = B[0] + T.float32(1)


@T.prim_func
def two_stage_lowered(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((2, 1), "float32", scope="shared")
    B[0, 0] = A[0] + T.float32(1)
    for i in T.serial(15):
        B[(i + 1) % 2, 0] = A[i + 1] + T.float32(1)
        C[i] = B[i % 2, 0] + T.float32(1)
    C[15] = B[1, 0] + T.float32(1)


def test_single_invocation_needs_no_barrier():
    check_pass(_lower, two_stage_async, two_stage_lowered)


@T.prim_func
def three_stage(A: T.Buffer((16,), "float32"), D: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="shared")
    C = T.alloc_buffer((1,), "float32", scope="shared")
    for i in T.serial(16, annotations={"software_pipeline_stage": [0, 1, 2],
                                       "software_pipeline_order": [0, 1, 2],
                                       "software_pipeline_async_stages": [0, 1]}):
        B[0] = A[i] + T.float32(1)
        C[0] = B[0] + T.float32(1)
        D[i] = C[0] + T.float32(1)


def test_three_stage_lowers_to_the_synchronous_pipeline():
    lowered = _lower(three_stage)
    assert _barriers(lowered) == 0


def test_function_without_async_is_unchanged():
    f = InjectSoftwarePipeline()(three_stage).with_body(
        ir.Evaluate(ir.const(0)))
    assert LowerAsync()(f) is f


# ----------------------------------------------------------------------------------------------
# a workgroup: tiled matmul with double-buffered shared tiles, async stage 0


@T.prim_func
def matmul(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16, 8), "float32"),
           C: T.Buffer((8, 8), "float32")):
    for by in T.thread_binding(2, "blockIdx.y"):
        for bx in T.thread_binding(2, "blockIdx.x"):
            for ty in T.thread_binding(4, "threadIdx.y"):
                for tx in T.thread_binding(4, "threadIdx.x"):
                    A_sh = T.alloc_buffer((4, 4), "float32", scope="shared")
                    B_sh = T.alloc_buffer((4, 4), "float32", scope="shared")
                    acc = T.alloc_buffer((1,), "float32", scope="local")
                    acc[0] = T.float32(0)
                    for ko in T.serial(4, annotations={
                            "software_pipeline_stage": [0, 0, 1],
                            "software_pipeline_order": [0, 1, 2],
                            "software_pipeline_async_stages": [0]}):
                        A_sh[ty, tx] = A[by * 4 + ty, ko * 4 + tx]
                        B_sh[ty, tx] = B[ko * 4 + ty, bx * 4 + tx]
                        for kk in T.serial(4):
                            acc[0] = acc[0] + A_sh[ty, kk] * B_sh[kk, tx]
                    C[by * 4 + ty, bx * 4 + tx] = acc[0]


@T.prim_func
def matmul_lowered(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16, 8), "float32"),
                   C: T.Buffer((8, 8), "float32")):
    for by in T.thread_binding(2, "blockIdx.y"):
        for bx in T.thread_binding(2, "blockIdx.x"):
            for ty in T.thread_binding(4, "threadIdx.y"):
                for tx in T.thread_binding(4, "threadIdx.x"):
                    A_sh = T.alloc_buffer((2, 4, 4), "float32", scope="shared")
                    B_sh = T.alloc_buffer((2, 4, 4), "float32", scope="shared")
                    acc = T.alloc_buffer((1,), "float32", scope="local")
                    acc[0] = T.float32(0)
                    A_sh[0, ty, tx] = A[by * 4 + ty, 0 * 4 + tx]
                    B_sh[0, ty, tx] = B[0 * 4 + ty, bx * 4 + tx]
                    for ko in T.serial(3):
                        # one barrier per iteration: it orders the previous iteration's reads of
                        # version (ko + 1) % 2 before this overwrite (write after read), and the
                        # writes of version ko % 2 before this iteration's reads (the wait)
                        T.barrier()
                        A_sh[(ko + 1) % 2, ty, tx] = A[by * 4 + ty, (ko + 1) * 4 + tx]
                        B_sh[(ko + 1) % 2, ty, tx] = B[(ko + 1) * 4 + ty, bx * 4 + tx]
                        for kk in T.serial(4):
                            acc[0] = acc[0] + A_sh[ko % 2, ty, kk] * B_sh[ko % 2, kk, tx]
                    T.barrier()
                    for kk in T.serial(4):
                        acc[0] = acc[0] + A_sh[1, ty, kk] * B_sh[1, kk, tx]
                    C[by * 4 + ty, bx * 4 + tx] = acc[0]


def test_double_buffered_matmul_gets_one_barrier_per_iteration():
    lowered = check_pass(_lower, matmul, matmul_lowered)
    a, b = random_arguments(matmul, 0)[:2]
    c = np.zeros((8, 8), "float32")
    vkir.interpret(lowered, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def _tile_loop(stages, async_stages, scope="shared"):
    """One workgroup of 4 invocations: S[tx] = A[ko*4 + tx] (async), C[ko*4 + tx] = 2 S[3 - tx]."""
    A = ir.decl_buffer((16,), "float32", "A")
    C = ir.decl_buffer((16,), "float32", "C")
    S = ir.decl_buffer((4,), "float32", "S", scope=scope)
    tx, ko = ir.Var("tx"), ir.Var("ko")
    read = 3 - tx if scope == "shared" else tx  # another invocation's element, or its own
    body = ir.seq(ir.BufferStore(S, A[ko * 4 + tx], (tx,)),
                  ir.BufferStore(C, S[read] * ir.const(2.0, "float32"), (ko * 4 + tx,)))
    ann = {"software_pipeline_stage": stages, "software_pipeline_order": (0, 1),
           "software_pipeline_async_stages": async_stages}
    loop = ir.For(ko, 0, 4, "serial", body, annotations=ann)
    kernel = ir.For(tx, 0, 4, "thread_binding", ir.AllocBuffer(S, loop), thread="threadIdx.x")
    return ir.PrimFunc((A.data, C.data), kernel, {A.data: A, C.data: C})


def test_same_stage_consumer_gets_a_barrier_at_its_wait():
    """Stages [0, 0]: the consumer waits for what this iteration wrote (wait(0, 0)), which other
    invocations wrote: a barrier before it; and one before the next overwrite."""
    lowered = _lower(_tile_loop((0, 0), (0,)))
    loop = [n for n in ir.walk(lowered) if isinstance(n, ir.For) and n.kind == "serial"][0]
    kinds = [type(s).__name__ for s in loop.body.seq]
    assert kinds == ["Barrier", "BufferStore", "Barrier", "BufferStore"]


def test_stage_distance_two_overwrites_after_a_barrier():
    lowered = _lower(_tile_loop((0, 2), (0,)))
    loop = [n for n in ir.walk(lowered) if isinstance(n, ir.For) and n.kind == "serial"][0]
    kinds = [type(s).__name__ for s in loop.body.seq]
    assert kinds == ["Barrier", "BufferStore", "BufferStore"]


def test_local_data_needs_no_barrier():
    """Each invocation reads only what it wrote itself (a local buffer): nothing to synchronize."""
    lowered = _lower(_tile_loop((0, 1), (0,), scope="local"))
    assert _barriers(lowered) == 0


@pytest.mark.parametrize("stages", [(0, 1), (0, 2), (0, 0), (0, 3)])
def test_threaded_pipelines_match_the_loop(stages):
    _lower(_tile_loop(stages, (0,)))


def test_pipeline_in_divergent_control_flow_is_refused():
    f = _tile_loop((0, 1), (0,))
    tx_loop = f.body
    guarded = ir.For(tx_loop.loop_var, 0, 4, "thread_binding",
                     ir.IfThenElse(tx_loop.loop_var < 2, tx_loop.body), thread="threadIdx.x")
    pipelined = InjectSoftwarePipeline()(f.with_body(guarded))
    with pytest.raises(vkir.TransformError, match="differs between invocations"):
        LowerAsync()(pipelined)
