"""vkir.grad's adjoint of accumulation loops (`acc += g(x)`) runs the loop backwards once: its
work grows linearly with the trip count (it once replayed the first k iterations before each
iteration k's adjoint: quadratic). Counted by executing the adjoint's loop structure for trip
counts 64, 256 and 1024; gradients against numpy in float64 in the interpreter. Loops whose
body's adjoint does read the running value (a product) still replay, and stay exact."""

import numpy as np
import pytest

import vkir
from vkir.benchmarks.grad_dense import executed_stores as stores_run
from vkir.ir import For
from vkir.script import from_script

SQUARED = '''
@T.prim_func
def squared(y: T.Buffer((8, {n}), "float64"), t: T.Buffer((8, {n}), "float64"),
            out: T.Buffer((8,), "float64")):
    for i in T.parallel(8):
        acc = T.float64(0)
        for k in T.serial({n}):
            acc += (y[i, k] - t[i, k]) * (y[i, k] - t[i, k])
        out[i] = T.sqrt(acc)
'''

PRODUCT = '''
@T.prim_func
def product(x: T.Buffer((4, {n}), "float64"), out: T.Buffer((4,), "float64")):
    for i in T.parallel(4):
        acc = T.float64(1)
        for k in T.serial({n}):
            acc = acc * x[i, k]
        out[i] = acc
'''


def _parallel_body(func):
    s = func.body
    while not (isinstance(s, For) and s.kind == "parallel"):
        s = s.body
    return s.body


@pytest.mark.parametrize("n", [64, 256, 1024])
def test_accumulation_adjoint_is_exact(n):
    f = from_script(SQUARED.format(n=n))
    rng = np.random.default_rng(n)
    y, t = rng.uniform(-1, 1, (8, n)), rng.uniform(-1, 1, (8, n))
    seed = rng.uniform(-1, 1, 8)
    dy, dt = np.zeros((8, n)), np.zeros((8, n))
    vkir.interpret(vkir.grad(f, ("y", "t")), y, t, np.zeros(8), seed, dy, dt)
    norm = np.sqrt(((y - t) ** 2).sum(axis=1))
    want = (seed / norm)[:, None] * (y - t)
    np.testing.assert_allclose(dy, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(dt, -want, rtol=1e-12, atol=1e-14)


def test_accumulation_adjoint_work_is_linear_in_the_trip_count():
    counts = {n: stores_run(_parallel_body(vkir.grad(from_script(SQUARED.format(n=n)), "y")))
              for n in (64, 256, 1024)}
    # one forward recomputation of the loop and one reverse pass: a fixed number of stores
    # per trip plus a constant (the quadratic replay ran n * (n - 1) / 2 more)
    for n, c in counts.items():
        assert c <= 6 * n, counts
    assert counts[1024] - counts[256] == 4 * (counts[256] - counts[64])


def test_a_loop_whose_adjoint_reads_the_running_value_still_replays_exactly():
    n = 6
    f = from_script(PRODUCT.format(n=n))
    g = vkir.grad(f, "x")
    assert stores_run(_parallel_body(g)) > n * (n - 1) // 2   # replayed: quadratic, exact
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 1.5, (4, n))
    seed = rng.uniform(-1, 1, 4)
    dx = np.zeros((4, n))
    vkir.interpret(g, x, np.zeros(4), seed, dx)
    want = seed[:, None] * x.prod(axis=1)[:, None] / x
    np.testing.assert_allclose(dx, want, rtol=1e-12)


WEIGHTED = '''
@T.prim_func
def weighted(x: T.Buffer((8, "m"), "float32"), w: T.Buffer((2,), "float32"),
             out: T.Buffer((8,), "float32")):
    for i in T.parallel(8):
        acc = T.float32(0)
        for k in T.serial(m):
            acc += x[i, k] * w[0] + w[1]
        out[i] = acc
'''


@pytest.mark.parametrize("m", [0, 1, 37])
def test_a_read_that_stays_put_in_the_loop_adds_once_after_it(m):
    f = from_script(WEIGHTED)
    g = vkir.grad(f, ("x", "w"))
    script = g.script()
    # the loop sums w's adjoints in locals; one atomic add per element after the loop, when
    # the loop ran (m > 0)
    assert script.count("T.atomic_add(d_w[0]") == 1 and script.count("T.atomic_add(d_w[1]") == 1
    assert "if m > 0:" in script
    rng = np.random.default_rng(m)
    x, w = rng.uniform(-1, 1, (8, m)).astype(np.float32), np.float32([0.5, -2])
    seed = rng.uniform(-1, 1, 8).astype(np.float32)
    dx, dw = np.zeros((8, m), np.float32), np.float32([1, 1])
    vkir.interpret(g, x, w, np.zeros(8, np.float32), seed, dx, dw)
    np.testing.assert_allclose(dw, [1 + (seed[:, None] * x).sum(), 1 + m * seed.sum()],
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, seed[:, None] * w[0] + 0 * x, rtol=1e-6)
