"""fuse_reduction_epilogue: each recognized pattern against its expected script, exactness on
inputs of mixed sign, the general epilogue, and every refusal."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.analysis import verify_types
from vkir.schedule import fuse_reduction_epilogue

M, N, K = 8, 6, 5


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype("float32")
    b = rng.standard_normal((K, N)).astype("float32")
    c = rng.standard_normal((M, N)).astype("float32")
    return a, b, c


def _run(func, *arrays):
    arrays = [x.copy() for x in arrays]
    out = np.zeros((M, N), "float32")
    vkir.interpret(func, *arrays, out)
    return out


def _check_fused(before, expected, epilogue_numpy):
    after = fuse_reduction_epilogue(before, "temp")
    vkir.assert_structural_equal(after, expected)
    verify_types(after)
    assert not any(isinstance(n, vkir.ir.AllocBuffer) and n.buffer.name == "temp"
                   for n in vkir.ir.walk(after))
    for seed in range(3):
        a, b, c = _inputs(seed)
        want = epilogue_numpy(a @ b, c)
        np.testing.assert_allclose(_run(before, a, b, c), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(_run(after, a, b, c), _run(before, a, b, c), rtol=1e-5,
                                   atol=1e-5)
    return after


# ----------------------------------------------------------------------------------------------
# bias and bias-ReLU


@T.prim_func
def matmul_bias(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
                C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    temp = T.alloc_buffer((8, 6), "float32")
    for i, j in T.grid(8, 6):
        temp[i, j] = T.float32(0)
        for k in T.serial(5):
            temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i, j in T.grid(8, 6):
        D[i, j] = temp[i, j] + C[i, j]


@T.prim_func
def matmul_bias_fused(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
                      C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    for i, j in T.grid(8, 6):
        D[i, j] = C[i, j]
        for k in T.serial(5):
            D[i, j] = D[i, j] + A[i, k] * B[k, j]


def test_bias_becomes_initial_value():
    _check_fused(matmul_bias, matmul_bias_fused, lambda ab, c: ab + c)


@T.prim_func
def matmul_bias_relu(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
                     C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    temp = T.alloc_buffer((8, 6), "float32")
    for i, j in T.grid(8, 6):
        temp[i, j] = T.float32(0)
        for k in T.serial(5):
            temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i, j in T.grid(8, 6):
        D[i, j] = T.max(C[i, j] + temp[i, j], T.float32(0))


@T.prim_func
def matmul_bias_relu_fused(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
                           C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    for i, j in T.grid(8, 6):
        D[i, j] = C[i, j]
        for k in T.serial(5):
            D[i, j] = D[i, j] + A[i, k] * B[k, j]
        D[i, j] = T.max(D[i, j], T.float32(0))


def test_bias_relu_applies_relu_once_after_the_reduction():
    _check_fused(matmul_bias_relu, matmul_bias_relu_fused, lambda ab, c: np.maximum(ab + c, 0))


# ----------------------------------------------------------------------------------------------
# clipping, in all five commutative spellings of the seed


CLIP_SPELLINGS = [
    "T.min(T.max(temp[i, j], lo), hi)",
    "T.min(hi, T.max(temp[i, j], lo))",
    "T.min(T.max(lo, temp[i, j]), hi)",
    "T.max(T.min(temp[i, j], hi), lo)",
    "T.max(lo, T.min(temp[i, j], hi))",
]


def _clip_numpy(spelling):
    """numpy for a spelling: min-outside and max-outside differ where lo > hi."""
    if spelling.startswith("T.min"):
        return lambda ab, c: np.minimum(np.maximum(ab, c - 0.5), 0.75)
    return lambda ab, c: np.maximum(np.minimum(ab, 0.75), c - 0.5)

CLIP_TEMPLATE = '''
@T.prim_func
def clip(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
         C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    temp = T.alloc_buffer((8, 6), "float32")
    for i, j in T.grid(8, 6):
        temp[i, j] = T.float32(0)
        for k in T.serial(5):
            temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i, j in T.grid(8, 6):
        lo = C[i, j] - T.float32(0.5)
        hi = T.float32(0.75)
        D[i, j] = {expr}
'''

FUSED_TEMPLATE = '''
@T.prim_func
def clip(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
         C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    for i, j in T.grid(8, 6):
        D[i, j] = T.float32(0)
        for k in T.serial(5):
            D[i, j] = D[i, j] + A[i, k] * B[k, j]
        D[i, j] = {expr}
'''


def _clip_script(template, expr, lo, hi, acc):
    expr = expr.replace("temp[i, j]", acc).replace("lo", lo).replace("hi", hi)
    return vkir.from_script(template.format(expr=expr))


NO_LETS = ("        lo = C[i, j] - T.float32(0.5)\n", "        hi = T.float32(0.75)\n")


def _without_lets(template):
    for line in NO_LETS:
        template = template.replace(line, "")
    return template


@pytest.mark.parametrize("spelling", CLIP_SPELLINGS)
def test_clipping_spellings_fuse_exactly(spelling):
    """Bounds that are expressions of the output indices, written inline."""
    lo, hi = "(C[i, j] - T.float32(0.5))", "T.float32(0.75)"
    before = _clip_script(_without_lets(CLIP_TEMPLATE), spelling, lo, hi, "temp[i, j]")
    expected = _clip_script(FUSED_TEMPLATE, spelling, lo, hi, "D[i, j]")
    _check_fused(before, expected, _clip_numpy(spelling))


def test_clipping_with_let_bound_bounds():
    """Bounds bound by lets in the epilogue move to the top of the fused spatial loop."""
    before = _clip_script(CLIP_TEMPLATE, CLIP_SPELLINGS[1], "lo", "hi", "temp[i, j]")
    expected = vkir.from_script(FUSED_TEMPLATE.format(expr="T.min(hi, T.max(D[i, j], lo))").replace(
        "    for i, j in T.grid(8, 6):\n",
        "    for i, j in T.grid(8, 6):\n"
        "        lo = C[i, j] - T.float32(0.5)\n"
        "        hi = T.float32(0.75)\n"))
    _check_fused(before, expected, lambda ab, c: np.minimum(np.maximum(ab, c - 0.5), 0.75))


def test_fused_clipping_differs_from_per_iteration_clipping():
    """The seed clips every partial sum; that is not the same function. vkir's fusion is exact."""
    before = _clip_script(_without_lets(CLIP_TEMPLATE), CLIP_SPELLINGS[0], "T.float32(0)",
                          "T.float32(6)", "temp[i, j]")
    after = fuse_reduction_epilogue(before, "temp")

    @T.prim_func
    def per_iteration(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
                      C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
        for i, j in T.grid(8, 6):
            D[i, j] = T.float32(0)
            for k in T.serial(5):
                D[i, j] = T.min(T.max(D[i, j] + A[i, k] * B[k, j], T.float32(0)), T.float32(6))

    # a negative product first, then a larger positive one
    a = np.zeros((M, K), "float32")
    b = np.zeros((K, N), "float32")
    a[0, 0], a[0, 1], b[0, 0], b[1, 0] = 1.0, 1.0, -3.0, 4.0
    c = np.zeros((M, N), "float32")
    exact = np.clip(a @ b, 0, 6)
    assert exact[0, 0] == 1.0
    np.testing.assert_array_equal(_run(before, a, b, c), exact)
    np.testing.assert_array_equal(_run(after, a, b, c), exact)
    assert _run(per_iteration, a, b, c)[0, 0] == 4.0  # the seed's answer is wrong here


# ----------------------------------------------------------------------------------------------
# the general epilogue


@T.prim_func
def matmul_tanh(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
                C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    temp = T.alloc_buffer((8, 6), "float32")
    for i, j in T.grid(8, 6):
        temp[i, j] = T.float32(0)
        for k in T.serial(5):
            temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i, j in T.grid(8, 6):
        D[i, j] = T.tanh(temp[i, j] * T.float32(0.5) + C[i, j])


@T.prim_func
def matmul_tanh_fused(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
                      C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    for i, j in T.grid(8, 6):
        temp_local = T.alloc_buffer((1,), "float32", scope="local")
        temp_local[0] = T.float32(0)
        for k in T.serial(5):
            temp_local[0] = temp_local[0] + A[i, k] * B[k, j]
        D[i, j] = T.tanh(temp_local[0] * T.float32(0.5) + C[i, j])


def test_general_epilogue_is_applied_once_to_a_local_accumulator():
    _check_fused(matmul_tanh, matmul_tanh_fused, lambda ab, c: np.tanh(ab * 0.5 + c))


@T.prim_func
def max_reduce_then_scale(A: T.Buffer((8, 5), "float32"), B: T.Buffer((5, 6), "float32"),
                          C: T.Buffer((8, 6), "float32"), D: T.Buffer((8, 6), "float32")):
    temp = T.alloc_buffer((8, 6), "float32")
    for i, j in T.grid(8, 6):
        temp[i, j] = T.float32(-1e30)
        for k in T.serial(5):
            temp[i, j] = T.max(temp[i, j], A[i, k] * B[k, j])
    for i, j in T.grid(8, 6):
        D[i, j] = temp[i, j] + C[i, j]


def test_bias_on_a_max_reduction_is_not_an_initial_value():
    """Bias may only become the initial value of a sum; a max-reduction keeps it after."""
    after = fuse_reduction_epilogue(max_reduce_then_scale, "temp")
    verify_types(after)
    a, b, c = _inputs(4)
    want = (a[:, :, None] * b[None, :, :]).max(axis=1) + c
    np.testing.assert_allclose(_run(after, a, b, c), want, rtol=1e-6)


def test_fusion_accepts_the_buffer_object():
    temp = next(n.buffer for n in vkir.ir.walk(matmul_bias) if isinstance(n, vkir.ir.AllocBuffer))
    vkir.assert_structural_equal(fuse_reduction_epilogue(matmul_bias, temp), matmul_bias_fused)


# ----------------------------------------------------------------------------------------------
# refusals


REDUCTION_THEN = '''
@T.prim_func
def refused(A: T.Buffer((6, 5), "float32"), B: T.Buffer((5, 6), "float32"),
            D: T.Buffer((6, 6), "float32"), E: T.Buffer((6, 6), "float32")):
    temp = T.alloc_buffer((6, 6), "float32")
    for i, j in T.grid(6, 6):
        temp[i, j] = T.float32(0)
        for k in T.serial(5):
            temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
{after}'''


def _after_matmul(after: str):
    """A matmul reduction into temp followed by `after` (indented as the function body)."""
    return vkir.from_script(REDUCTION_THEN.format(after=after))


transposed = _after_matmul("""\
    for i, j in T.grid(6, 6):
        D[i, j] = temp[j, i]
""")

two_stores = _after_matmul("""\
    for i, j in T.grid(6, 6):
        D[i, j] = temp[i, j] + T.float32(1)
        E[i, j] = temp[i, j]
""")

predicated = _after_matmul("""\
    for i, j in T.grid(6, 6):
        if i < j:
            D[i, j] = temp[i, j]
""")

third_reader = _after_matmul("""\
    for i, j in T.grid(6, 6):
        D[i, j] = temp[i, j] + T.float32(1)
    for i, j in T.grid(6, 6):
        E[i, j] = temp[i, j]
""")


@T.prim_func
def not_a_reduction(A: T.Buffer((6, 6), "float32"), D: T.Buffer((6, 6), "float32")):
    temp = T.alloc_buffer((6, 6), "float32")
    for i, j in T.grid(6, 6):
        temp[i, j] = A[i, j] * T.float32(2)
    for i, j in T.grid(6, 6):
        D[i, j] = temp[i, j] + T.float32(1)


@T.prim_func
def reads_output(A: T.Buffer((6, 6), "float32"), D: T.Buffer((6, 6), "float32")):
    temp = T.alloc_buffer((6, 6), "float32")
    for i, j in T.grid(6, 6):
        temp[i, j] = T.float32(0)
        for k in T.serial(6):
            temp[i, j] = temp[i, j] + D[i, k]
    for i, j in T.grid(6, 6):
        D[i, j] = temp[i, j] + A[i, j]


@pytest.mark.parametrize("func, message", [
    (transposed, "other indices"),
    (not_a_reduction, "not a reduction"),
    (two_stores, "single store"),
    (predicated, "predicate"),
    (third_reader, "third statement"),
    (reads_output, "reads the epilogue's output"),
])
def test_refusals_say_why(func, message):
    with pytest.raises(vkir.ScheduleError, match=message):
        fuse_reduction_epilogue(func, "temp")


def test_parameter_buffer_cannot_be_fused_away():
    with pytest.raises(vkir.ScheduleError, match="parameter"):
        fuse_reduction_epilogue(matmul_bias, "C")


def test_unknown_buffer():
    with pytest.raises(vkir.ScheduleError, match="no allocation"):
        fuse_reduction_epilogue(matmul_bias, "nope")
