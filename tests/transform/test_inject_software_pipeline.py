"""InjectSoftwarePipeline: the worked examples of TVM's async software pipeline, compared
structurally with their expected scripts, interpreter differential tests (the interpreter applies a
committed group's writes only when a wait retires it, so a wrong in-flight count reads stale data),
short and symbolic trip counts, and every invalid annotation."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import vkir
from vkir import T, ir
from vkir.analysis import verify_types, verify_well_formed
from vkir.testing import CompareBeforeAfter, random_arguments, same_results
from vkir.transform import InjectSoftwarePipeline


def _run(func, args):
    out = [a.copy() for a in args]
    vkir.interpret(func, *out)
    return out


def _same_results(before, after, seeds=range(2), sizes=None):
    same_results(before, after, lambda seed: random_arguments(before, seed, sizes=sizes), seeds)


class _PipelineCase(CompareBeforeAfter):
    """InjectSoftwarePipeline turns `before` into `expected`, which passes the checkers and
    computes the same."""

    transform = InjectSoftwarePipeline()
    same_results = True


# ----------------------------------------------------------------------------------------------
# RFC: two stages, synchronous and with async stage 0


@T.prim_func
def two_stage(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="shared")
    for i in T.serial(16, annotations={"software_pipeline_stage": [0, 1],
                                       "software_pipeline_order": [0, 1]}):
        B[0] = A[i] + T.float32(1)
        C[i] = B[0] + T.float32(1)


@T.prim_func
def two_stage_expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((2, 1), "float32", scope="shared")
    B[0, 0] = A[0] + T.float32(1)
    for i in T.serial(15):
        B[(i + 1) % 2, 0] = A[i + 1] + T.float32(1)
        C[i] = B[i % 2, 0] + T.float32(1)
    C[15] = B[1, 0] + T.float32(1)


class TestTwoStage(_PipelineCase):
    before, expected = two_stage, two_stage_expected


@T.prim_func
def two_stage_async(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="shared")
    for i in T.serial(16, annotations={"software_pipeline_stage": [0, 1],
                                       "software_pipeline_order": [0, 1],
                                       "software_pipeline_async_stages": [0]}):
        B[0] = A[i] + T.float32(1)
        C[i] = B[0] + T.float32(1)


@T.prim_func
def two_stage_async_expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((2, 1), "float32", scope="shared")
    with T.async_commit_queue(0):
        with T.async_scope():
            B[0, 0] = A[0] + T.float32(1)
    for i in T.serial(15):
        with T.async_commit_queue(0):
            with T.async_scope():
                B[(i + 1) % 2, 0] = A[i + 1] + T.float32(1)
        with T.async_wait_queue(0, 1):
            C[i] = B[i % 2, 0] + T.float32(1)
    with T.async_wait_queue(0, 0):
        C[15] = B[1, 0] + T.float32(1)


class TestTwoStageAsync(_PipelineCase):
    before, expected = two_stage_async, two_stage_async_expected


class _SetWaitCounts(ir.Mutator):
    def __init__(self, count):
        self.count = count

    def visit_AsyncWaitQueue(self, node):
        return ir.AsyncWaitQueue(node.queue, ir.const(self.count), self.visit(node.body))


def test_wrong_in_flight_count_reads_stale_data():
    after = InjectSoftwarePipeline()(two_stage_async)
    args = random_arguments(two_stage_async, 0)
    want = _run(two_stage_async, args)
    np.testing.assert_array_equal(_run(after, args)[1], want[1])
    wrong = after.with_body(_SetWaitCounts(2).visit(after.body))  # one group too many in flight
    assert not np.array_equal(_run(wrong, args)[1], want[1])


# ----------------------------------------------------------------------------------------------
# RFC: three stages, the first two async (queue = stage)


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


@T.prim_func
def three_stage_expected(A: T.Buffer((16,), "float32"), D: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((2, 1), "float32", scope="shared")
    C = T.alloc_buffer((2, 1), "float32", scope="shared")
    for i in T.unroll(2):
        with T.async_commit_queue(0):
            with T.async_scope():
                B[i % 2, 0] = A[i] + T.float32(1)
        if 1 <= i:
            with T.async_commit_queue(1):
                with T.async_wait_queue(0, 1):
                    with T.async_scope():
                        C[(i - 1) % 2, 0] = B[(i - 1) % 2, 0] + T.float32(1)
    for i in T.serial(14):
        with T.async_commit_queue(0):
            with T.async_scope():
                B[(i + 2) % 2, 0] = A[i + 2] + T.float32(1)
        with T.async_commit_queue(1):
            with T.async_wait_queue(0, 1):
                with T.async_scope():
                    C[(i + 1) % 2, 0] = B[(i + 1) % 2, 0] + T.float32(1)
        with T.async_wait_queue(1, 1):
            D[i] = C[i % 2, 0] + T.float32(1)
    for i in T.unroll(2):
        if i < 1:
            with T.async_commit_queue(1):
                with T.async_wait_queue(0, 0):
                    with T.async_scope():
                        C[(i + 15) % 2, 0] = B[(i + 15) % 2, 0] + T.float32(1)
        # the stage-1 producer of this loop is predicated: its count holds only where it ran
        with T.async_wait_queue(1, T.if_then_else(i < 1, 1, 0)):
            D[i + 14] = C[(i + 14) % 2, 0] + T.float32(1)


class TestThreeStageTwoAsync(_PipelineCase):
    before, expected = three_stage, three_stage_expected


# ----------------------------------------------------------------------------------------------
# RFC: stage distance 3 (four versions, in-flight count 3)


@T.prim_func
def distance3(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="shared")
    for i in T.serial(16, annotations={"software_pipeline_stage": [0, 3],
                                       "software_pipeline_order": [0, 1],
                                       "software_pipeline_async_stages": [0]}):
        B[0] = A[i] * T.float32(2)
        C[i] = B[0] - T.float32(1)


@T.prim_func
def distance3_expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((4, 1), "float32", scope="shared")
    for i in T.unroll(3):
        with T.async_commit_queue(0):
            with T.async_scope():
                B[i % 4, 0] = A[i] * T.float32(2)
    for i in T.serial(13):
        with T.async_commit_queue(0):
            with T.async_scope():
                B[(i + 3) % 4, 0] = A[i + 3] * T.float32(2)
        with T.async_wait_queue(0, 3):
            C[i] = B[i % 4, 0] - T.float32(1)
    for i in T.unroll(3):
        # producer head 15, consumer head i + 13
        with T.async_wait_queue(0, 2 - i):
            C[i + 13] = B[(i + 13) % 4, 0] - T.float32(1)


class TestStageDistance3(_PipelineCase):
    before, expected = distance3, distance3_expected


# ----------------------------------------------------------------------------------------------
# RFC: interleaved async producers with their consumer in between (count 5)


@T.prim_func
def interleaved(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"),
                C: T.Buffer((16,), "float32")):
    A_sh = T.alloc_buffer((1,), "float32", scope="shared")
    B_sh = T.alloc_buffer((1,), "float32", scope="shared")
    for i in T.serial(16, annotations={"software_pipeline_stage": [0, 0, 3],
                                       "software_pipeline_order": [0, 2, 1],
                                       "software_pipeline_async_stages": [0]}):
        A_sh[0] = A[i]
        B_sh[0] = B[i]
        C[i] = A_sh[0] * B_sh[0]


@T.prim_func
def interleaved_expected(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"),
                         C: T.Buffer((16,), "float32")):
    A_sh = T.alloc_buffer((4, 1), "float32", scope="shared")
    B_sh = T.alloc_buffer((4, 1), "float32", scope="shared")
    # Unlike the original sketch, the prologue commits A and B separately too: every iteration then
    # commits the same two groups, which is what the body's count 5 assumes.
    for i in T.unroll(3):
        with T.async_commit_queue(0):
            with T.async_scope():
                A_sh[i % 4, 0] = A[i]
        with T.async_commit_queue(0):
            with T.async_scope():
                B_sh[i % 4, 0] = B[i]
    for i in T.serial(13):
        with T.async_commit_queue(0):
            with T.async_scope():
                A_sh[(i + 3) % 4, 0] = A[i + 3]
        with T.async_wait_queue(0, 5):
            C[i] = A_sh[i % 4, 0] * B_sh[i % 4, 0]
        with T.async_commit_queue(0):
            with T.async_scope():
                B_sh[(i + 3) % 4, 0] = B[i + 3]
    for i in T.unroll(3):
        # two groups per iteration after the consumed ones: 2 * (15 - (i + 13))
        with T.async_wait_queue(0, 4 - i * 2):
            C[i + 13] = A_sh[(i + 13) % 4, 0] * B_sh[(i + 13) % 4, 0]


class TestInterleavedProducers(_PipelineCase):
    before, expected = interleaved, interleaved_expected


def test_interleaved_grouped_prologue_would_be_wrong():
    """The original sketch's prologue (one group for both copies) with the body's count 5 reads stale
    data at the first body iteration: the interpreter sees it."""
    after = InjectSoftwarePipeline()(interleaved)
    prologue = after.body.body.body.seq[0]
    assert isinstance(prologue, ir.For) and prologue.kind == "unrolled"
    a, b = prologue.body.seq
    merged = ir.AsyncCommitQueue(0, ir.seq(a.body, b.body))
    body = ir.seq(ir.For(prologue.loop_var, 0, 3, "unrolled", merged),
                  *after.body.body.body.seq[1:])
    wrong = after.with_body(ir.AllocBuffer(after.body.buffer,
                                           ir.AllocBuffer(after.body.body.buffer, body)))
    args = random_arguments(interleaved, 0)
    assert not np.array_equal(_run(wrong, args)[2], _run(interleaved, args)[2])


# ----------------------------------------------------------------------------------------------
# RFC: the multi-buffered GEMM annotation (stages [0, 0, 2, 3, 3], order [0, 1, 3, 2, 4])


@T.prim_func
def gemm(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
         C: T.Buffer((128,), "float32"), D: T.Buffer((128,), "float32")):
    A_sh = T.alloc_buffer((1,), "float32", scope="shared")
    B_sh = T.alloc_buffer((1,), "float32", scope="shared")
    X = T.alloc_buffer((1,), "float32", scope="local")
    for k in T.serial(128, annotations={"software_pipeline_stage": [0, 0, 2, 3, 3],
                                        "software_pipeline_order": [0, 1, 3, 2, 4],
                                        "software_pipeline_async_stages": [0]}):
        A_sh[0] = A[k]
        B_sh[0] = B[k]
        X[0] = A_sh[0] * T.float32(2)
        C[k] = A_sh[0] + B_sh[0]
        D[k] = X[0] + B_sh[0]


@T.prim_func
def gemm_expected(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
                  C: T.Buffer((128,), "float32"), D: T.Buffer((128,), "float32")):
    A_sh = T.alloc_buffer((4, 1), "float32", scope="shared")
    B_sh = T.alloc_buffer((4, 1), "float32", scope="shared")
    X = T.alloc_buffer((2, 1), "float32", scope="local")
    for k in T.unroll(3):
        with T.async_commit_queue(0):
            with T.async_scope():
                A_sh[k % 4, 0] = A[k]
            with T.async_scope():
                B_sh[k % 4, 0] = B[k]
        if 2 <= k:
            with T.async_wait_queue(0, 2):
                X[(k - 2) % 2, 0] = A_sh[(k - 2) % 4, 0] * T.float32(2)
    for k in T.serial(125):
        with T.async_commit_queue(0):
            with T.async_scope():
                A_sh[(k + 3) % 4, 0] = A[k + 3]
            with T.async_scope():
                B_sh[(k + 3) % 4, 0] = B[k + 3]
        # counts 3 (reads k) and 2 (reads k + 1): the second subsumes the first
        with T.async_wait_queue(0, 2):
            C[k] = A_sh[k % 4, 0] + B_sh[k % 4, 0]
        X[(k + 1) % 2, 0] = A_sh[(k + 1) % 4, 0] * T.float32(2)
        D[k] = X[k % 2, 0] + B_sh[k % 4, 0]
    for k in T.unroll(3):
        with T.async_wait_queue(0, 2 - k):
            C[k + 125] = A_sh[(k + 125) % 4, 0] + B_sh[(k + 125) % 4, 0]
        if k < 2:
            with T.async_wait_queue(0, 1 - k):
                X[(k + 126) % 2, 0] = A_sh[(k + 126) % 4, 0] * T.float32(2)
        D[k + 125] = X[(k + 125) % 2, 0] + B_sh[(k + 125) % 4, 0]


class TestMultiBufferedGemm(_PipelineCase):
    before, expected = gemm, gemm_expected


@T.prim_func
def gemm_same_stage(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"),
                    C: T.Buffer((16,), "float32"), D: T.Buffer((16,), "float32")):
    A_sh = T.alloc_buffer((1,), "float32", scope="shared")
    B_sh = T.alloc_buffer((1,), "float32", scope="shared")
    X = T.alloc_buffer((1,), "float32", scope="local")
    for k in T.serial(16, annotations={"software_pipeline_stage": [0, 0, 0, 3, 3],
                                       "software_pipeline_order": [0, 1, 3, 2, 4],
                                       "software_pipeline_async_stages": [0]}):
        A_sh[0] = A[k]
        B_sh[0] = B[k]
        X[0] = A_sh[0] * T.float32(2)
        C[k] = A_sh[0] + B_sh[0]
        D[k] = X[0] + B_sh[0]


def test_consumer_in_the_producer_stage_waits_for_all():
    """The 'mistaken' annotation: a consumer in the producer's own stage reads what this
    iteration committed, (k + 3) - (k + 3) = 0, and that wait subsumes the stage-3 one."""
    after = InjectSoftwarePipeline()(gemm_same_stage)
    verify_types(after)
    body = [n for n in ir.walk(after) if isinstance(n, ir.For) and n.kind == "serial"][0]
    waits = [n for n in ir.walk(body) if isinstance(n, ir.AsyncWaitQueue)]
    assert [(w.queue, w.in_flight) for w in waits] == [(0, ir.const(0))]
    assert isinstance(body.body.seq[1], ir.AsyncWaitQueue)  # before the first consumer
    _same_results(gemm_same_stage, after)


# ----------------------------------------------------------------------------------------------
# short and symbolic trip counts


def _chain(extent, stages, orders, async_stages):
    """B = A + 1 (stage s0), C = B * 3 (s1), D = C - 2 (s2) over `extent` (int or "n")."""
    ann = {"software_pipeline_stage": list(stages), "software_pipeline_order": list(orders)}
    if async_stages is not None:
        ann["software_pipeline_async_stages"] = list(async_stages)
    n = ir.Var("n") if extent == "n" else extent
    A = ir.decl_buffer((n,), "float32", "A")
    D = ir.decl_buffer((n,), "float32", "D")
    B = ir.decl_buffer((1,), "float32", "B", scope="shared")
    C = ir.decl_buffer((1,), "float32", "C", scope="local")
    i = ir.Var("i")
    f32 = lambda v: ir.const(v, "float32")  # noqa: E731
    body = ir.seq(ir.BufferStore(B, A[i] + f32(1), (0,)),
                  ir.BufferStore(C, B[0] * f32(3), (0,)),
                  ir.BufferStore(D, C[0] - f32(2), (i,)))
    loop = ir.For(i, 0, n, "serial", body, annotations=ann)
    return ir.PrimFunc((A.data, D.data), ir.AllocBuffer(B, ir.AllocBuffer(C, loop)),
                       {A.data: A, D.data: D})


@pytest.mark.parametrize("extent", [1, 2, 3, 4])
@pytest.mark.parametrize("stages", [(0, 1, 3), (0, 3, 3), (0, 2, 2), (1, 1, 2)])
def test_fewer_iterations_than_stages(extent, stages):
    before = _chain(extent, stages, (0, 1, 2), sorted({stages[0], stages[1]}))
    after = InjectSoftwarePipeline()(before)
    verify_types(after)
    _same_results(before, after)


@pytest.mark.parametrize("stages, async_stages", [((0, 1, 3), (0, 1)), ((0, 0, 2), (0,)),
                                                  ((0, 2, 3), None)])
def test_symbolic_extent(stages, async_stages):
    before = _chain("n", stages, (0, 1, 2), async_stages)
    after = InjectSoftwarePipeline()(before)
    verify_types(after)
    for n in range(0, 7):
        _same_results(before, after, seeds=[n], sizes={"n": n})


def test_symbolic_extent_epilogue_waits_for_all():
    """The prologue's producers are predicated on `j < n`: how many groups the epilogue finds in
    flight is unknown, so a consumer there without a producer in the same loop waits for all."""
    after = InjectSoftwarePipeline()(_chain("n", (0, 2, 2), (0, 1, 2), (0,)))
    loops = [s for s in after.body.body.body.seq]
    assert len(loops) == 3
    waits = [n for n in ir.walk(loops[2]) if isinstance(n, ir.AsyncWaitQueue)]
    assert waits and all(w.in_flight == ir.const(0) for w in waits)
    body_waits = [n for n in ir.walk(loops[1]) if isinstance(n, ir.AsyncWaitQueue)]
    assert [w.in_flight for w in body_waits] == [ir.const(2)]


@settings(max_examples=40, deadline=None)
@given(stages=st.lists(st.integers(0, 3), min_size=3, max_size=3),
       extent=st.integers(1, 7), async_mask=st.integers(0, 7), swap=st.booleans())
def test_random_annotations_match_interpreter(stages, extent, async_mask, swap):
    """Any stage assignment that keeps the chain's dependencies (non-decreasing stages) and any
    order that keeps same-stage statements in place computes what the loop computes."""
    stages = sorted(stages)
    orders = [0, 1, 2]
    if swap and stages[0] < stages[1]:  # statements of different stages may be reordered
        orders = [1, 0, 2]
    async_stages = sorted({s for k, s in enumerate(stages) if async_mask >> k & 1})
    before = _chain(extent, stages, orders, async_stages)
    after = InjectSoftwarePipeline()(before)
    verify_types(after)
    verify_well_formed(after)
    _same_results(before, after, seeds=[extent])


def _two_producers(extent, stages, orders, async_stages):
    """P = A (s0), Q = B (s1), C = P * Q (s2), D = C + P (s3): two producers, two consumers."""
    n = ir.Var("n") if extent == "n" else extent
    A, B, C, D = (ir.decl_buffer((n,), "float32", name) for name in "ABCD")
    P = ir.decl_buffer((1,), "float32", "P", scope="shared")
    Q = ir.decl_buffer((1,), "float32", "Q", scope="shared")
    i = ir.Var("i")
    body = ir.seq(ir.BufferStore(P, A[i], (0,)), ir.BufferStore(Q, B[i], (0,)),
                  ir.BufferStore(C, P[0] * Q[0], (i,)), ir.BufferStore(D, C[i] + P[0], (i,)))
    ann = {"software_pipeline_stage": stages, "software_pipeline_order": orders,
           "software_pipeline_async_stages": async_stages}
    loop = ir.For(i, 0, n, "serial", body, annotations=ann)
    params = (A.data, B.data, C.data, D.data)
    return ir.PrimFunc(params, ir.AllocBuffer(P, ir.AllocBuffer(Q, loop)),
                       {b.data: b for b in (A, B, C, D)})


@settings(max_examples=50, deadline=None)
@given(producer_stages=st.lists(st.integers(0, 2), min_size=2, max_size=2),
       consumer_stages=st.lists(st.integers(0, 2), min_size=2, max_size=2),
       orders=st.permutations(range(4)), async_mask=st.integers(0, 15),
       extent=st.sampled_from([1, 2, 3, 5, 8, "n"]))
def test_random_interleavings_match_interpreter(producer_stages, consumer_stages, orders,
                                                async_mask, extent):
    """Random stages, orders (interleaved producers included) and async stages: whatever the
    pass accepts computes what the loop computes, with the interpreter's async model."""
    c_stage = max(producer_stages) + consumer_stages[0]
    stages = (*producer_stages, c_stage, c_stage + consumer_stages[1])
    async_stages = sorted({s for k, s in enumerate(stages) if async_mask >> k & 1})
    before = _two_producers(extent, stages, tuple(orders), async_stages)
    try:
        after = InjectSoftwarePipeline()(before)
    except vkir.TransformError as exc:
        # only reorderings of dependent statements within a stage are refused here
        assert "puts statement" in str(exc) or "reads buffer" in str(exc), str(exc)
        return
    verify_types(after)
    verify_well_formed(after)
    for n in ([0, 1, 2, 4, 7] if extent == "n" else [extent]):
        _same_results(before, after, seeds=[n], sizes={"n": n})


# ----------------------------------------------------------------------------------------------
# buffers and loops


@T.prim_func
def offset_loop(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="shared")
    for i in T.serial(3, 16, annotations={"software_pipeline_stage": [0, 1],
                                          "software_pipeline_order": [0, 1],
                                          "software_pipeline_async_stages": [0]}):
        B[0] = A[i] + T.float32(1)
        C[i] = B[0] + T.float32(1)


@T.prim_func
def offset_loop_expected(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((2, 1), "float32", scope="shared")
    with T.async_commit_queue(0):
        with T.async_scope():
            B[0, 0] = A[3] + T.float32(1)
    for i in T.serial(3, 15):
        with T.async_commit_queue(0):
            with T.async_scope():
                B[(i - 2) % 2, 0] = A[i + 1] + T.float32(1)
        with T.async_wait_queue(0, 1):
            C[i] = B[(i - 3) % 2, 0] + T.float32(1)
    with T.async_wait_queue(0, 0):
        C[15] = B[0, 0] + T.float32(1)


class TestLoopWithNonzeroMin(_PipelineCase):
    """Versions count from the loop's first iteration: (j - min) % versions."""

    before, expected = offset_loop, offset_loop_expected


@T.prim_func
def nested(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
    X = T.alloc_buffer((8,), "float32", scope="local")
    for i in T.serial(4, annotations={"software_pipeline_stage": [0, 1],
                                      "software_pipeline_order": [0, 1]}):
        for j in T.serial(8, annotations={"software_pipeline_stage": [0, 1],
                                          "software_pipeline_order": [0, 1]}):
            Y = T.alloc_buffer((1,), "float32", scope="local")
            Y[0] = A[i, j] * T.float32(2)
            X[j] = Y[0] + T.float32(1)
        for j in T.serial(8):
            C[i, j] = X[j] - T.float32(3)


def test_nested_pipelines():
    """The inner pipeline is built first; its loops are copied into the outer prologue, body and
    epilogue with fresh variables (the IR stays SSA)."""
    after = InjectSoftwarePipeline()(nested)
    verify_types(after)
    verify_well_formed(after)
    x = after.body
    assert x.buffer.name == "X" and [int(s.value) for s in x.buffer.shape] == [2, 8]
    _same_results(nested, after)


@T.prim_func
def alloc_inside(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in T.serial(8, annotations={"software_pipeline_stage": [0, 1],
                                      "software_pipeline_order": [1, 0]}):
        B = T.alloc_buffer((1,), "float32", scope="local")
        B[0] = A[i] * A[i]
        C[i] = B[0]


@T.prim_func
def alloc_inside_expected(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((2, 1), "float32", scope="local")
    B[0, 0] = A[0] * A[0]
    for i in T.serial(7):
        C[i] = B[i % 2, 0]
        B[(i + 1) % 2, 0] = A[i + 1] * A[i + 1]
    C[7] = B[1, 0]


class TestBufferAllocatedInTheLoopIsHoistedAndVersioned(_PipelineCase):
    before, expected = alloc_inside, alloc_inside_expected


@T.prim_func
def same_stage(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="local")
    for i in T.serial(8, annotations={"software_pipeline_stage": [0, 0],
                                      "software_pipeline_order": [0, 1]}):
        B[0] = A[i] + T.float32(1)
        C[i] = B[0]


@T.prim_func
def same_stage_expected(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="local")
    for i in T.serial(8):
        B[0] = A[i] + T.float32(1)
        C[i] = B[0]


class TestSingleStageKeepsTheLoopAndBuffer(_PipelineCase):
    before, expected = same_stage, same_stage_expected


@T.prim_func
def used_outside(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="local")
    B[0] = T.float32(0)
    for i in T.serial(8, annotations={"software_pipeline_stage": [0, 1],
                                      "software_pipeline_order": [0, 1]}):
        B[0] = A[i]
        C[i] = B[0]


def test_versioned_buffer_used_outside_the_loop_is_refused():
    with pytest.raises(vkir.TransformError, match="outside the pipelined loop"):
        InjectSoftwarePipeline()(used_outside)


def test_unannotated_function_is_unchanged():
    f = _chain(4, (0, 1, 2), (0, 1, 2), None)
    loop = f.body.body.body
    plain = f.with_body(ir.AllocBuffer(f.body.buffer, ir.AllocBuffer(
        f.body.body.buffer, ir.For(loop.loop_var, 0, 4, "serial", loop.body))))
    assert InjectSoftwarePipeline()(plain) is plain


# ----------------------------------------------------------------------------------------------
# invalid annotations


def _annotated(stages, orders=None, async_stages=None):
    f = _chain(8, (0, 1, 2), (0, 1, 2), None)
    loop = f.body.body.body
    ann = {"software_pipeline_stage": stages}
    if orders is not None:
        ann["software_pipeline_order"] = orders
    if async_stages is not None:
        ann["software_pipeline_async_stages"] = async_stages
    new = ir.For(loop.loop_var, loop.min, loop.extent, "serial", loop.body, annotations=ann)
    return f.with_body(ir.AllocBuffer(f.body.buffer, ir.AllocBuffer(f.body.body.buffer, new)))


@pytest.mark.parametrize("stages, orders, async_stages, message", [
    ((0, 1), (0, 1, 2), None, "'software_pipeline_stage' has 2 entries but the loop body has 3"),
    ((0, 1, 2), (0, 1), None, "'software_pipeline_order' has 2 entries"),
    ((0, 1, 2), None, None, "missing annotation 'software_pipeline_order'"),
    ((0, 1, 2), (0, 1, 1), None, "not a permutation"),
    ((0, 1, 2), (0, 2, 3), None, "not a permutation"),
    ((0, 1, 2), (0, 1, 2), (5,), "async stage 5"),
    ((0, -1, 2), (0, 1, 2), None, "negative stage"),
    ((0, 1, "x"), (0, 1, 2), None, "must be a tuple of ints"),
    # C = B * 3 needs B = A + 1 of the same iteration: same stage, reordered
    ((0, 0, 1), (1, 0, 2), None, "puts statement 1 before statement 0 in stage 0"),
    # ... or in an earlier stage
    ((1, 0, 2), (0, 1, 2), None, "statement 1 \\(stage 0\\) depends on statement 0 \\(stage 1\\)"),
])
def test_invalid_annotations(stages, orders, async_stages, message):
    with pytest.raises(vkir.TransformError, match=message):
        InjectSoftwarePipeline()(_annotated(stages, orders, async_stages))


def test_order_without_stage():
    f = _annotated((0, 1, 2), (0, 1, 2))
    loop = f.body.body.body
    new = ir.For(loop.loop_var, 0, 8, "serial", loop.body,
                 annotations={"software_pipeline_order": (0, 1, 2)})
    bad = f.with_body(ir.AllocBuffer(f.body.buffer, ir.AllocBuffer(f.body.body.buffer, new)))
    with pytest.raises(vkir.TransformError, match="given without 'software_pipeline_stage'"):
        InjectSoftwarePipeline()(bad)


@T.prim_func
def carried(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((1,), "float32", scope="local")
    for i in T.serial(8, annotations={"software_pipeline_stage": [1, 0],
                                      "software_pipeline_order": [0, 1]}):
        C[i] = B[0]
        B[0] = A[i]


def test_loop_carried_read_cannot_be_versioned():
    with pytest.raises(vkir.TransformError, match="depends on statement 0"):
        InjectSoftwarePipeline()(carried)
