"""VectorizeLoop: a vectorized loop becomes Ramp/Broadcast vector code (vector lets, vector
loads/stores with the vector in the last index, pure math calls on vectors, loop-invariant ifs
kept); lane-dependent conditions and other inexpressible constructs make a serial loop over the
lanes; nested loops, non-constant extents, barriers and allocations raise TransformError. Every
output passes the checker and matches the interpreter on random inputs."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import vkir
from vkir.testing import CompareBeforeAfter, check_pass, random_arguments, same_results
from vkir.analysis import verify_types, verify_well_formed
from vkir import T, ir
from vkir.errors import TransformError
from vkir.ir import Call, Cast, For, LetStmt, PrimFunc, Select, Var, const, decl_buffer
from vkir.transform import VectorizeLoop


def _func(buffers, body, scalars=()):
    params = [b.data for b in buffers] + list(scalars)
    return PrimFunc(params, body, {b.data: b for b in buffers}, {"global_symbol": "f"})


def _check_types(f):
    """The explicit-cast checker and the scoping/SSA checker accept the pass output."""
    verify_types(f)
    verify_well_formed(f)


def _same_results(before, after, scalars=None, seeds=range(3)):
    same_results(before, after, lambda seed: random_arguments(before, seed, scalars=scalars), seeds,
                 rtol=1e-6)


class _VectorizeCase(CompareBeforeAfter):
    """VectorizeLoop turns `before` into `expected`, which passes the checkers and computes the
    same within 1e-6."""

    transform = VectorizeLoop()
    same_results = True
    rtol = 1e-6


class TestElementwiseLoop(_VectorizeCase):
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for o in T.serial(16):
            for v in T.vectorized(4):
                B[o * 4 + v] = A[o * 4 + v] * 2.0 + 1.0

    @T.prim_func
    def expected(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for o in T.serial(16):
            B[T.ramp(o * 4, 1, 4)] = A[T.ramp(o * 4, 1, 4)] * T.broadcast(2.0, 4) \
                + T.broadcast(1.0, 4)


def test_inside_thread_loops_with_guard():
    @T.prim_func
    def before(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
        for bx in T.thread_binding((n + 255) // 256, "blockIdx.x"):
            for tx in T.thread_binding(64, "threadIdx.x"):
                if bx * 256 + tx * 4 + 3 < n:
                    for v in T.vectorized(4):
                        B[bx * 256 + tx * 4 + v] = A[bx * 256 + tx * 4 + v] + 1.0

    @T.prim_func
    def expected(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
        for bx in T.thread_binding((n + 255) // 256, "blockIdx.x"):
            for tx in T.thread_binding(64, "threadIdx.x"):
                if bx * 256 + tx * 4 + 3 < n:
                    B[T.ramp(bx * 256 + tx * 4, 1, 4)] = \
                        A[T.ramp(bx * 256 + tx * 4, 1, 4)] + T.broadcast(1.0, 4)

    after = check_pass(VectorizeLoop(), before, expected)
    for seed, size in enumerate((256, 300, 1024)):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(size).astype(np.float32)
        want, got = np.zeros_like(a), np.zeros_like(a)
        vkir.interpret(before, a, want)
        vkir.interpret(after, a, got)
        np.testing.assert_array_equal(got, want)


class TestLetsBecomeVectorsAndInvariantsBroadcast(_VectorizeCase):
    arguments = {"scalars": {"s": 0.5}}

    @T.prim_func
    def before(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32"), s: T.float32):
        for i in T.serial(8):
            k = s * 3.0
            for j in T.vectorized(4):
                x = A[i, j] + k
                B[i, j] = T.exp(x) * T.cast(j, "float32") + k

    @T.prim_func
    def expected(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8, 4), "float32"), s: T.float32):
        for i in T.serial(8):
            k = s * 3.0
            x = A[i, T.ramp(0, 1, 4)] + T.broadcast(k, 4)
            B[i, T.ramp(0, 1, 4)] = T.exp(x) * T.cast(T.ramp(0, 1, 4), "float32x4") \
                + T.broadcast(k, 4)


def test_loop_invariant_if_keeps_vector_form():
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), n: T.int32):
        for v in T.vectorized(4, 8):
            if n > 2:
                A[v] = A[v] + 1.0
            else:
                A[v] = T.select(n > 1, A[v], A[v - 4])

    @T.prim_func
    def expected(A: T.Buffer((16,), "float32"), n: T.int32):
        if n > 2:
            A[T.ramp(4, 1, 4)] = A[T.ramp(4, 1, 4)] + T.broadcast(1.0, 4)
        else:
            A[T.ramp(4, 1, 4)] = T.select(n > 1, A[T.ramp(4, 1, 4)], A[T.ramp(0, 1, 4)])

    after = check_pass(VectorizeLoop(), before, expected)
    for n_value in (0, 2, 3):
        _same_results(before, after, scalars={"n": n_value}, seeds=[n_value])


class TestLaneDependentSelectStaysVector(_VectorizeCase):
    @T.prim_func
    def before(A: T.Buffer((8,), "int32")):
        for v in T.vectorized(8):
            A[v] = T.select(A[v] > 0, A[v], 0 - A[v])

    @T.prim_func
    def expected(A: T.Buffer((8,), "int32")):
        A[T.ramp(0, 1, 8)] = T.select(A[T.ramp(0, 1, 8)] > T.broadcast(0, 8),
                                      A[T.ramp(0, 1, 8)],
                                      T.broadcast(0, 8) - A[T.ramp(0, 1, 8)])


@T.prim_func
def _lane_if(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for v in T.vectorized(4, annotations={"note": 1}):
        if B[v] > 0.0:
            B[v] = B[v] * 2.0


@T.prim_func
def _lane_if_then_else(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for v in T.vectorized(4, annotations={"note": 1}):
        B[v] = T.if_then_else(v < 3, B[v + 1], B[0])


@T.prim_func
def _non_last_index(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for v in T.vectorized(4, annotations={"note": 1}):
        B[v] = A[v, 0]


@T.prim_func
def _invariant_store(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4,), "float32")):
    for v in T.vectorized(4, annotations={"note": 1}):
        B[0] = B[v]


@pytest.mark.parametrize("before", [_lane_if, _lane_if_then_else, _non_last_index,
                                    _invariant_store], ids=lambda f: f.name)
def test_scalarized_when_vectors_cannot_express_it(before):
    after = VectorizeLoop()(before)
    loop = after.body
    assert isinstance(loop, For) and loop.kind == "serial" and loop.annotations == {"note": 1}
    vkir.assert_structural_equal(loop.body, before.body.body, map_free_vars=True)
    _check_types(after)
    _same_results(before, after)


class TestVectorElementBuffersWiden(_VectorizeCase):
    @T.prim_func
    def before(V: T.Buffer((8,), "float32x2")):
        for v in T.vectorized(4):
            V[v] = V[v + 4] * T.broadcast(2.0, 2)

    @T.prim_func
    def expected(V: T.Buffer((8,), "float32x2")):
        V[T.ramp(0, 1, 4)] = V[T.ramp(4, 1, 4)] * T.broadcast(T.broadcast(2.0, 2), 4)


class TestExtentOneBindsTheVariable(_VectorizeCase):
    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        for v in T.vectorized(2, 3):
            A[v] = 1.0

    @T.prim_func
    def expected(A: T.Buffer((4,), "float32")):
        v = 2
        A[v] = 1.0


@T.prim_func
def _symbolic_extent(A: T.Buffer((16,), "float32"), n: T.int32):
    for v in T.vectorized(n):
        A[v] = 1.0


@T.prim_func
def _nested_vectorized(A: T.Buffer((16,), "float32")):
    for v in T.vectorized(4):
        for w in T.vectorized(4):
            A[v * 4 + w] = 1.0


@T.prim_func
def _inner_serial(A: T.Buffer((16,), "float32")):
    for v in T.vectorized(4):
        for w in T.serial(4):
            A[v * 4 + w] = 1.0


@T.prim_func
def _barrier(A: T.Buffer((16,), "float32")):
    for v in T.vectorized(4):
        A[v] = 1.0
        T.barrier()


@T.prim_func
def _allocation(A: T.Buffer((16,), "float32")):
    for v in T.vectorized(4):
        S = T.alloc_buffer((4,), "float32", scope="local")
        S[v] = 1.0
        A[v] = S[v]


@pytest.mark.parametrize("func, reason", [
    (_symbolic_extent, "the extent n is not a constant"),
    (_nested_vectorized, "contains a nested vectorized loop"),
    (_inner_serial, "contains a nested loop"),
    (_barrier, "contains a barrier"),
    (_allocation, "contains an allocation"),
], ids=lambda x: getattr(x, "name", None))
def test_refusals(func, reason):
    with pytest.raises(TransformError, match=f"vectorized loop over 'v'.*{reason}"):
        VectorizeLoop()(func)


def test_impure_calls_are_refused():
    A = decl_buffer((16,), "float32", "A")
    v = Var("v")
    f = _func([A], For(v, 0, 4, "vectorized", A.store(Call("float32", "printf", (v,)), v)))
    with pytest.raises(TransformError, match="impure call 'printf'"):
        VectorizeLoop()(f)


# --- property: random elementwise bodies ----------------------------------------------------------

def _float_bodies(A, B, o, v, s):
    idx = o * 4 + v
    leaf = st.one_of(st.sampled_from([A[idx], B[idx], Cast("float32", v), s]),
                     st.sampled_from([0.5, -1.0, 3.0]).map(lambda c: const(c, "float32")))

    def node(children):
        return st.tuples(st.sampled_from(["+", "-", "*", "sel", "max", "exp"]),
                         children, children).map(_combine)

    return st.recursive(leaf, node, max_leaves=6)


def _combine(t):
    op, a, b = t
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "sel":
        return Select(a < b, a, b)
    if op == "max":
        return ir.Max(a, b)
    return Call("float32", "exp", (ir.Min(a, const(10.0, "float32")),))


_A, _B = decl_buffer((32,), "float32", "A"), decl_buffer((32,), "float32", "B")
_o, _v, _s, _x = Var("o"), Var("v"), Var("s", "float32"), Var("x", "float32")


@settings(max_examples=25, deadline=None)
@given(_float_bodies(_A, _B, _o, _v, _s), st.booleans())
def test_random_elementwise_bodies(value, with_let):
    idx = _o * 4 + _v
    store = _B.store(value, idx)
    body = LetStmt(_x, value, _B.store(_x * _x, idx)) if with_let else store
    f = _func([_A, _B], For(_o, 0, 8, "serial", For(_v, 0, 4, "vectorized", body)),
              scalars=[_s])
    g = VectorizeLoop()(f)
    assert not any(isinstance(n, For) and n.kind == "vectorized" for n in ir.walk(g.body))
    _check_types(g)
    _same_results(f, g, scalars={"s": 1.5}, seeds=[0])
