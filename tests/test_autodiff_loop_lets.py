"""vkir.grad for lets that read a mutable local (a scalar variable or a local buffer) which a
later statement changes, mostly inside serial loops: `a0 = acc + (x * acc + w); acc = a0`.
The let's adjoint must flow back into the local's adjoint as the local was at the let (it once
went nowhere: a silent wrong gradient). Adjoints in float64 in the interpreter against central
differences, the float32 adjoints on the device against the same differences."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.script import from_script


@T.prim_func
def buffer_local(x: T.Buffer((4,), "float32"), w: T.Buffer((1,), "float32"),
                 y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.alloc_buffer((1,), "float32", scope="local")
        acc[0] = T.float32(0.5)
        for j in T.serial(3):
            a0 = acc[0] + (x[i] * acc[0] + w[0])
            acc[0] = a0
        y[i] = acc[0]


@T.prim_func
def scalar_local(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
                 y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.float32(0.5)
        for j in T.serial(3):
            a0 = acc + (x[i] * acc + w[i])
            acc = a0
        y[i] = acc


@T.prim_func
def straight_line(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
                  y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = x[i]
        a = acc * w[i]
        acc = acc + a
        b = acc * acc
        acc = b - a
        y[i] = acc


@T.prim_func
def let_after_store(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
                    y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.float32(0.25)
        for j in T.serial(3):
            acc = T.sin(acc) * x[i] + w[i]
            b = acc * acc * w[i]
            acc = acc - b * T.float32(0.5)
        y[i] = acc


@T.prim_func
def two_lets(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
             y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.float32(0.3)
        for j in T.serial(3):
            a = acc * x[i]
            b = T.tanh(a + acc * w[i])
            acc = b + a * T.float32(0.5)
        y[i] = acc


@T.prim_func
def let_outlives_store(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
                       y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.float32(0.7)
        for j in T.serial(3):
            a = acc * x[i]
            acc = acc + w[i]      # a keeps the value from before this store
            acc = acc * a
        y[i] = acc


@T.prim_func
def nested(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
           y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.float32(0.4)
        for j in T.serial(3):
            for k in T.serial(2):
                a = acc * x[i] + w[i]
                acc = T.sin(a) + acc * T.float32(0.5)
            c = acc * w[i]
            acc = acc + c
        y[i] = acc


@T.prim_func
def two_locals(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
               y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.float32(0.5)
        s = x[i]
        for j in T.serial(3):
            a = acc * s + w[i]
            s = s + a * x[i]
            acc = a * T.float32(0.5)
        y[i] = acc + s


@T.prim_func
def branch(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
           y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = x[i]
        for j in T.serial(4):
            if acc > T.float32(0):
                a = acc * w[i]
                acc = acc - a * T.float32(1.5)
            else:
                acc = acc * x[i] + w[i]
        y[i] = acc


@T.prim_func
def indexed_local(x: T.Buffer((4,), "float32"), w: T.Buffer((4,), "float32"),
                  y: T.Buffer((4,), "float32")):
    for i in T.parallel(4):
        acc = T.alloc_buffer((2,), "float32", scope="local")
        acc[0] = x[i]
        acc[1] = w[i]
        k = 0
        for j in T.serial(4):
            a = acc[k] * x[i] + acc[(j + 1) % 2]
            acc[k] = a * T.float32(0.5) + w[i]
            k = (k + 1) % 2     # an integer local picks the element: captured at the let
        y[i] = acc[0] * acc[1]


KERNELS = [buffer_local, scalar_local, straight_line, let_after_store, two_lets,
           let_outlives_store, nested, two_locals, branch, indexed_local]
X = np.array([0.3, -0.6, 0.8, -0.2])
W = np.array([-0.7, 0.4, -0.3, 0.9])
SEED = np.array([0.5, -1.25, 0.75, 1.0])


def _float64(func):
    return from_script(func.script().replace("float32", "float64"))


def _args(func, dtype):
    w = W[:func.buffer_map[func.params[1]].shape[0].value]
    return [X.astype(dtype), w.astype(dtype), np.zeros(4, dtype)]


def _finite_differences(func, h=1e-6):
    """d(SEED . y) / d(x) and / d(w), central differences of the float64 kernel."""
    f64 = _float64(func)
    x, w, _ = _args(func, np.float64)

    def loss(x, w):
        y = np.zeros(4)
        vkir.interpret(f64, x, w, y)
        return float(SEED @ y)

    grads = []
    for k, v in enumerate((x, w)):
        g = np.zeros(v.size)
        for e in range(v.size):
            step = np.zeros(v.size)
            step[e] = h
            args = [x, w]
            args[k] = v + step
            up = loss(*args)
            args[k] = v - step
            g[e] = (up - loss(*args)) / (2 * h)
        grads.append(g)
    return grads


def _run_adjoint(run, func, dtype):
    x, w, y = _args(func, dtype)
    dx, dw = np.zeros(4, dtype), np.zeros(w.size, dtype)
    run(x, w, y, SEED.astype(dtype), dx, dw)
    return dx, dw


@pytest.mark.parametrize("func", KERNELS, ids=lambda f: f.name)
def test_interpreter_adjoint_matches_finite_differences(func):
    fd_x, fd_w = _finite_differences(func)
    if func is buffer_local:   # w[0] is shared: float32 atomics (float64 ones are refused)
        g, dtype, tol = vkir.grad(func, ("x", "w")), np.float32, dict(rtol=1e-5, atol=1e-5)
    else:
        g, dtype, tol = vkir.grad(_float64(func), ("x", "w")), np.float64, \
            dict(rtol=1e-6, atol=1e-8)
    dx, dw = _run_adjoint(lambda *a: vkir.interpret(g, *a), func, dtype)
    np.testing.assert_allclose(dx, fd_x, **tol)
    np.testing.assert_allclose(dw, fd_w, **tol)


def test_the_reported_case():
    """The report: d_w[0] came out as the gradient through w alone, the path through acc lost."""
    g = vkir.grad(buffer_local, ("x", "w"))
    _, dw = _run_adjoint(lambda *a: vkir.interpret(g, *a), buffer_local, np.float32)
    _, fd_w = _finite_differences(buffer_local)
    assert abs(dw[0] - fd_w[0]) < 1e-4 * abs(fd_w[0])


@pytest.mark.device
@pytest.mark.parametrize("func", KERNELS, ids=lambda f: f.name)
def test_device_adjoint_matches_finite_differences(func, device):
    fd_x, fd_w = _finite_differences(func)
    k = vkir.build(vkir.grad(func, ("x", "w")), device=device)
    dx, dw = _run_adjoint(k, func, np.float32)
    # float32 on the device (SwiftShader's sin and tanh are good to about 1e-6 relative here)
    np.testing.assert_allclose(dx, fd_x, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(dw, fd_w, rtol=2e-4, atol=2e-5)
