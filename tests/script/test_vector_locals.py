"""Vector-valued mutable locals: `acc = T.float32x4(0)`, `acc += v`, `acc[k] = s` (a lane store)
in loops and branches; exact values against numpy in the interpreter and on the device, the
script round trip, errors, and `vkir.grad` through them against finite differences."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ScriptError


@T.prim_func
def accumulate(x: T.Buffer((8, 4), "float32"), out: T.Buffer((8,), "float32x4")):
    for i in T.thread_binding(8, "threadIdx.x"):
        acc = T.float32x4(0)
        for j in T.serial(3):
            v = T.float32x4(x[i, 0], x[i, 1], x[i, 2], x[i, 3])
            acc += v * T.broadcast(T.cast(j + 1, "float32"), 4)
        if x[i, 0] > T.float32(0.5):
            acc[1] = T.float32(7)
        else:
            acc[i % 4] += T.float32(100)
        acc[-1] = acc[0] * T.float32(2)
        out[i] = acc


def _accumulate_reference(x):
    out = np.zeros((8, 4), np.float32)
    for i in range(8):
        acc = np.zeros(4, np.float32)
        for j in range(3):
            acc = acc + x[i] * np.float32(j + 1)
        if x[i, 0] > 0.5:
            acc[1] = 7
        else:
            acc[i % 4] += np.float32(100)
        acc[3] = acc[0] * np.float32(2)
        out[i] = acc
    return out


def _x():
    return np.random.default_rng(0).random((8, 4)).astype(np.float32)


def test_vector_variable_in_the_interpreter_matches_numpy():
    x = _x()
    out = np.zeros((8, 4), np.float32)
    vkir.interpret(accumulate, x, out)
    np.testing.assert_array_equal(out, _accumulate_reference(x))


def test_vector_variable_on_the_device_matches_numpy(device):
    x = _x()
    out = np.zeros((8, 4), np.float32)
    vkir.build(accumulate)(x, out)
    np.testing.assert_array_equal(out, _accumulate_reference(x))


def test_vector_variable_round_trips_through_the_printer():
    vkir.assert_structural_equal(vkir.from_script(accumulate.script()), accumulate)


def test_a_lane_store_alone_makes_a_variable():
    """`acc[2] = s` assigns `acc`: a name bound once and then lane-stored is a variable."""
    f = vkir.from_script('''
@T.prim_func
def f(a: T.Buffer((4,), "int32"), out: T.Buffer((4,), "int32")):
    for i in T.thread_binding(4, "threadIdx.x"):
        v = T.int32x4(1, 2, 3, 4)
        v[2] = a[i]
        out[i] = v[0] + v[1] * v[2] + v[3]
''')
    a = np.array([5, 6, 7, 8], np.int32)
    out = np.zeros(4, np.int32)
    vkir.interpret(f, a, out)
    np.testing.assert_array_equal(out, 1 + 2 * a + 4)


@pytest.mark.parametrize("body, message", [
    ("acc[4] = T.float32(1)", "lane 4 of the 4-lane variable 'acc'"),
    ("acc[0:2] = T.float32(1)", "slices are read-only"),
    ("acc[0] = T.int32(1)", "float32"),
])
def test_lane_store_errors(body, message):
    with pytest.raises(ScriptError, match=message.replace("(", r"\(")):
        vkir.from_script(f'''
@T.prim_func
def f(out: T.Buffer((4,), "float32x4")):
    for i in T.thread_binding(4, "threadIdx.x"):
        acc = T.float32x4(0)
        {body}
        out[i] = acc
''')


@T.prim_func
def layer(x: T.Buffer((8, 4), "float32"), w: T.Buffer((4,), "float32"),
          y: T.Buffer((8,), "float32")):
    for i in T.thread_binding(8, "threadIdx.x"):
        acc = T.float32x4(0)
        for j in T.serial(3):
            v = T.float32x4(x[i, 0], x[i, 1], x[i, 2], x[i, 3])
            acc += v * acc + T.float32x4(w[0], w[1], w[2], w[3])
        if x[i, 0] > T.float32(0.25):
            acc[1] = acc[2] * w[0]
        acc = T.shuffle([acc], [1, 0, 2, 3]) + acc   # a swizzle: lanes read each other
        y[i] = acc[0] + acc[1] * acc[3] + T.sin(acc[2])


def _loss(x, w, seed):
    y = np.zeros(8, np.float32)
    vkir.interpret(layer, x.astype(np.float32), w.astype(np.float32), y)
    return float((y.astype(np.float64) * seed).sum())


def test_grad_through_vector_variables_matches_finite_differences():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.1, 0.4, (8, 4)).astype(np.float32)
    x[np.abs(x - 0.25) < 0.02] += np.float32(0.05)   # no difference step crosses the branch
    w = rng.uniform(-0.5, 0.5, 4).astype(np.float32)
    seed = rng.uniform(-1, 1, 8).astype(np.float32)
    g = vkir.grad(layer, ("x", "w"))
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    vkir.interpret(g, x, w, np.zeros(8, np.float32), seed, dx, dw)
    eps = 1e-2
    for grad, arg in ((dw, 1), (dx, 0)):
        fd = np.zeros(grad.shape)
        for idx in np.ndindex(grad.shape):
            args = [x.astype(np.float64), w.astype(np.float64)]
            plus, minus = args[arg].copy(), args[arg].copy()
            plus[idx] += eps
            minus[idx] -= eps
            fd[idx] = (_loss(*(plus if k == arg else a for k, a in enumerate(args)), seed)
                       - _loss(*(minus if k == arg else a for k, a in enumerate(args)), seed)) \
                / (2 * eps)
        np.testing.assert_allclose(grad, fd, rtol=2e-2, atol=2e-2)


def test_grad_through_vector_variables_on_the_device(device):
    """The adjoint kernel of vector variables builds (spirv-val) and agrees with the
    interpreter on the device."""
    rng = np.random.default_rng(2)
    x = rng.uniform(0.1, 0.4, (8, 4)).astype(np.float32)
    w = rng.uniform(-0.5, 0.5, 4).astype(np.float32)
    seed = rng.uniform(-1, 1, 8).astype(np.float32)
    g = vkir.grad(layer, ("w",))
    want, got = np.zeros_like(w), np.zeros_like(w)
    vkir.interpret(g, x, w, np.zeros(8, np.float32), seed, want)
    vkir.build(g)(x, w, np.zeros(8, np.float32), seed, got)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)   # atomic order, T.sin
