"""Simplify: expressions simplified with loop ranges, let values and nonnegative sizes as
facts; `if True`/`if False` reduced, empty loops removed, lets kept. Outputs pass the checker and
compute what their inputs compute (interpreter, random inputs; a property test over random index
expressions)."""

import numpy as np
from hypothesis import given, settings, strategies as st

import vkir
from vkir.testing import CompareBeforeAfter, check_pass, random_arguments, same_results
from vkir.analysis import verify_types, verify_well_formed
from vkir import T, ir
from vkir.ir import FloorDiv, FloorMod, For, Min, PrimFunc, Var, const, decl_buffer
from vkir.transform import Simplify


def _func(buffers, body, scalars=()):
    params = [b.data for b in buffers] + list(scalars)
    return PrimFunc(params, body, {b.data: b for b in buffers}, {"global_symbol": "f"})


def _check_types(f):
    """The explicit-cast checker and the scoping/SSA checker accept the pass output."""
    verify_types(f)
    verify_well_formed(f)


def _same_results(before, after, seeds=range(3)):
    """Scalars: small non-negative ints (below 6)."""
    same_results(before, after, lambda seed: random_arguments(before, seed, scalar_high=6), seeds)


class _SimplifyCase(CompareBeforeAfter):
    """Simplify turns `before` into `expected`; both checkers accept it and it computes the same
    (scalars: small non-negative ints below 6)."""

    transform = Simplify()
    same_results = True
    arguments = {"scalar_high": 6}


class TestIndexArithmeticUsesLoopRanges(_SimplifyCase):
    @T.prim_func
    def before(A: T.Buffer((32,), "float32"), B: T.Buffer((8,), "float32")):
        for i, j in T.grid(8, 4):
            B[(i * 4 + j) // 4] = A[i * 4 + j] + A[(i * 4 + j) // 4 * 4 + (i * 4 + j) % 4]
            if i * 4 + j < 32:
                A[T.min(i * 4 + j, 31)] = A[(i + 1) * 4 + j - 4] * 2.0

    @T.prim_func
    def expected(A: T.Buffer((32,), "float32"), B: T.Buffer((8,), "float32")):
        for i, j in T.grid(8, 4):
            B[i] = A[i * 4 + j] + A[i * 4 + j]
            A[i * 4 + j] = A[i * 4 + j] * 2.0


class TestVectorIndicesBecomeCanonicalRamps(_SimplifyCase):
    @T.prim_func
    def before(A: T.Buffer((64,), "float32")):
        for o in T.serial(16):
            A[T.broadcast(o * 4, 4) + T.ramp(0, 1, 4)] = A[T.ramp(o, 1, 4) * T.broadcast(4, 4)
                                                          // T.broadcast(4, 4)]
            A[T.ramp(o * 4, 1, 4) // T.broadcast(4, 4) + T.ramp(o * 4, 1, 4) % T.broadcast(4, 4)] \
                = T.broadcast(1.0, 4)

    @T.prim_func
    def expected(A: T.Buffer((64,), "float32")):
        for o in T.serial(16):
            A[T.ramp(o * 4, 1, 4)] = A[T.ramp(o, 1, 4)]
            A[T.ramp(o, 1, 4)] = T.broadcast(1.0, 4)


class TestConstantConditionsAndEmptyLoops(_SimplifyCase):
    @T.prim_func
    def before(A: T.Buffer((4,), "int32"), n: T.int32):
        if 3 > 2:
            A[0] = 1
        else:
            A[0] = 2
        if 3 < 2:
            A[1] = 3
        else:
            A[1] = 4
        if 3 < 2:
            A[2] = 5
        for i in T.serial(2 - 2):
            A[3] = 6
        for k in T.serial(n):
            if k >= 0:
                A[3] = A[3] + 1

    @T.prim_func
    def expected(A: T.Buffer((4,), "int32"), n: T.int32):
        A[0] = 1
        A[1] = 4
        for k in T.serial(n):
            A[3] = A[3] + 1


class TestLetsAreKeptAndTheirValuesKnown(_SimplifyCase):
    @T.prim_func
    def before(A: T.Buffer((64,), "int32")):
        for i in T.serial(8):
            x = i * 8 + 0
            if x < 64:
                A[x] = x % 8 + x
            A[x + 1] = (x + 3) // 8

    @T.prim_func
    def expected(A: T.Buffer((64,), "int32")):
        for i in T.serial(8):
            x = i * 8
            A[x] = x
            A[x + 1] = (x + 3) // 8


class TestSymbolicSizesAreNonnegative(_SimplifyCase):
    arguments = {"sizes": 5}

    @T.prim_func
    def before(A: T.Buffer(("n",), "float32")):
        for i in T.serial(n):
            if n >= 0:
                A[i] = A[i] * 1.0

    @T.prim_func
    def expected(A: T.Buffer(("n",), "float32")):
        for i in T.serial(n):
            A[i] = A[i]


def test_floats_are_not_reassociated():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        A[0] = A[0] + 1.0 - 1.0 + A[1] * 0.0
        A[1] = A[2] + 0.0

    assert Simplify()(f) is f


def test_unchanged_function_is_returned():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        for i in T.serial(4):
            A[i] = A[i] + 1.0

    assert Simplify()(f) is f


# --- property: random index expressions in a kernel --------------------------------------------

def _index_exprs(i, j):
    leaf = st.one_of(st.sampled_from([i, j]), st.integers(-5, 9).map(const))

    def node(children):
        return st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*"]), children, children),
            st.tuples(st.sampled_from(["//", "%"]), children, st.sampled_from([2, 3, 4, 8])),
            st.tuples(st.sampled_from(["min", "<"]), children, children),
        ).map(_build)

    return st.recursive(leaf, node, max_leaves=6)


def _build(t):
    op, a, b = t
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "//":
        return FloorDiv(a, b)
    if op == "%":
        return FloorMod(a, b)
    if op == "min":
        return Min(a, b)
    return ir.Select(ir.LT(a, b), a, b)


I, J = Var("i"), Var("j")


@settings(max_examples=25, deadline=None)
@given(_index_exprs(I, J))
def test_random_index_expressions(e):
    A = decl_buffer((8, 4), "int32", "A")
    f = _func([A], For(I, 0, 8, "serial", For(J, 0, 4, "serial",
                                              A.store(e + A[I, J], I, J))))
    g = Simplify()(f)
    _check_types(g)
    _same_results(f, g, seeds=[0])


# --- wrap-around: integers wrap at 32 bits, so only provably wrap-free arithmetic is rewritten ---

def test_grid_index_arithmetic_is_free_of_wrap_around():
    """vadd's `bx * 64 + tx` under T.thread_binding((n + 63) // 64): (n + 63) // 64 is at most
    2**25 - 1 even where n + 63 wraps (to a negative value), so bx * 64 + tx <= 2**31 - 65 and
    its divisions and comparisons are exact; `if i < n` bounds i in the then-branch."""
    @T.prim_func
    def before(a: T.Buffer(("n",), "int32"), b: T.Buffer(("n",), "int32")):
        for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
            for tx in T.thread_binding(64, "threadIdx.x"):
                i = bx * 64 + tx
                if i < n:
                    b[i] = (bx * 64 + tx) // 64 + (bx * 64 + tx) % 64 \
                        + T.cast(bx * 64 + tx < 2147483647, "int32") + (i + 1) // 2 * 2 \
                        + T.cast(i + 1 > i, "int32") + (a[i] * 4 + 1) // 4

    @T.prim_func
    def expected(a: T.Buffer(("n",), "int32"), b: T.Buffer(("n",), "int32")):
        for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
            for tx in T.thread_binding(64, "threadIdx.x"):
                i = bx * 64 + tx
                if i < n:
                    b[i] = bx + tx + (i + 1) // 2 * 2 + (a[i] * 4 + 1) // 4 + 2

    after = check_pass(Simplify(), before, expected)
    for n in (1, 100, 130):
        a = np.random.default_rng(n).integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
        want, got = np.zeros(n, np.int32), np.zeros(n, np.int32)
        vkir.interpret(before, a, want)
        vkir.interpret(after, a, got)
        np.testing.assert_array_equal(got, want)


def test_flat_matmul_indices_divide_exactly():
    @T.prim_func
    def before(A: T.Buffer((1048576,), "float32"), C: T.Buffer((1024, 1024), "float32")):
        for i, k in T.grid(1024, 1024):
            C[(i * 1024 + k) // 1024, (i * 1024 + k) % 1024] = A[(i * 1024 + k + 5) // 32 * 32]

    @T.prim_func
    def expected(A: T.Buffer((1048576,), "float32"), C: T.Buffer((1024, 1024), "float32")):
        for i, k in T.grid(1024, 1024):
            C[i, k] = A[i * 1024 + (k + 5) // 32 * 32]

    check_pass(Simplify(), before, expected)


def test_conditions_bound_variables_in_their_branches():
    @T.prim_func
    def before(A: T.Buffer(("n",), "int32")):
        for i in T.serial(n):
            if i < 1024 and 0 < i:
                A[i] = (i * 4 + 1) // 4 + T.cast(i != 0, "int32")
            else:
                A[i] = (i * 4 + 1) // 4

    @T.prim_func
    def expected(A: T.Buffer(("n",), "int32")):
        for i in T.serial(n):
            if i < 1024 and 0 < i:
                A[i] = i + 1
            else:
                A[i] = (i * 4 + 1) // 4

    check_pass(Simplify(), before, expected)


def test_wrapping_arithmetic_is_kept():
    """The cases of test_simplify_keeps_wrapping_semantics: x*4, x + 1, x + 2**31 - 1 wrap for
    some int32 x, so the division and the comparison are left as they are."""
    @T.prim_func
    def f(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
        for i in T.serial(4):
            B[i] = (A[i] * 4 + 1) // 4 + T.cast(A[i] + 1 > A[i], "int32") \
                + (A[i] + 2147483647) // 2 + (A[i] * 4 + 3) % 4

    @T.prim_func
    def expected(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
        for i in T.serial(4):
            B[i] = (A[i] * 4 + 1) // 4 + T.cast(A[i] + 1 > A[i], "int32") \
                + (A[i] + 2147483647) // 2 + 3

    after = check_pass(Simplify(), f, expected)
    a = np.array([2**30, 2**31 - 1, -2**31, 5], np.int32)
    want, got = np.zeros(4, np.int32), np.zeros(4, np.int32)
    vkir.interpret(f, a, want)
    vkir.interpret(after, a, got)
    np.testing.assert_array_equal(got, want)


def _extreme_index_exprs(i, j, load):
    leaf = st.one_of(st.sampled_from([i, j, load]),
                     st.sampled_from([0, 1, 3, 4, 64, 2**30, 2**31 - 1, -2**31]).map(const))

    def node(children):
        return st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*"]), children, children),
            st.tuples(st.sampled_from(["//", "%"]), children, st.sampled_from([2, 3, 4, 64])),
            st.tuples(st.sampled_from(["min", "<"]), children, children),
        ).map(_build)

    return st.recursive(leaf, node, max_leaves=6)


I2, J2 = Var("i"), Var("j")
X2 = decl_buffer((8, 4), "int32", "X")


@settings(max_examples=40, deadline=None)
@given(_extreme_index_exprs(I2, J2, X2[I2, J2]), st.integers(0, 2**16))
def test_random_expressions_on_extreme_values(e, seed):
    """Loop indices mixed with loaded int32 values spanning the whole range (extremes included):
    Simplify's output computes exactly what its input computes."""
    B = decl_buffer((8, 4), "int32", "B")
    f = _func([X2, B], For(I2, 0, 8, "serial", For(J2, 0, 4, "serial", B.store(e, I2, J2))))
    g = Simplify()(f)
    _check_types(g)
    rng = np.random.default_rng(seed)
    x = rng.integers(-2**31, 2**31, (8, 4), dtype=np.int64).astype(np.int32)
    x.flat[rng.integers(0, 32, 8)] = rng.choice([-2**31, 2**31 - 1, -1, 0, 2**30], 8)
    want, got = np.zeros((8, 4), np.int32), np.zeros((8, 4), np.int32)
    vkir.interpret(f, x, want)
    vkir.interpret(g, x, got)
    np.testing.assert_array_equal(got, want)
