"""vkir.Tape on the device: recorded chains of kernel calls differentiated backwards against
analytic gradients and central finite differences, adjoints accumulated across calls and
backward passes, adjoint kernels built once per kernel, and the refusals (numpy arguments,
overwritten inputs, launches, unknown arrays, non-differentiable vkir.ops calls, calls writing
their own inputs)."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.autodiff import recording
from vkir.errors import ArgumentError, UnsupportedError


@T.prim_func
def affine(x: T.Buffer(("n",), "float32"), w: T.Buffer(("n",), "float32"),
           b: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32"), s: T.float32):
    for i in T.parallel(n):
        y[i] = T.tanh(s * x[i] * w[i] + b[i])


@T.prim_func
def square(y: T.Buffer(("n",), "float32"), z: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        z[i] = y[i] * y[i] + T.sin(y[i])


@T.prim_func
def scaled(x: T.Buffer(("n",), "float32"), w: T.Buffer((1,), "float32"),
           y: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        y[i] = x[i] * w[0]   # every invocation reads w[0]: its adjoint needs an atomic


@T.prim_func
def fill_zero(out: T.Buffer((1,), "float32")):
    for i in T.parallel(1):
        out[0] = T.float32(0)


@T.prim_func
def sum_sq(y: T.Buffer(("n",), "float32"), out: T.Buffer((1,), "float32")):
    for i in T.parallel(n):
        T.atomic_add(out[0], y[i] * y[i])


@T.prim_func
def count(y: T.Buffer(("n",), "float32"), c: T.Buffer(("n",), "int32")):
    for i in T.parallel(n):
        c[i] = T.cast(y[i] > T.float32(0), "int32")


@pytest.fixture(scope="module")
def kernels(_vulkan_device):
    return {f.name: vkir.build(f, device=_vulkan_device)
            for f in (affine, square, count)}


# SwiftShader's tanh, sin and cos are about 1e-3 (relative) less exact than numpy's
TOL = dict(rtol=2e-3, atol=2e-4)


def _data(n=100, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, n).astype(np.float32) for _ in range(4)]


def _forward(x, w, b, s, seed):
    y = np.tanh(s * x * w + b)
    return float(np.dot(y * y + np.sin(y), seed))


def test_chain_matches_analytic_and_finite_differences(kernels, device):
    xn, wn, bn, seed = _data()
    s = np.float32(0.7)
    x, w, b = vkir.array(xn), vkir.array(wn), vkir.array(bn)
    y, z, c = vkir.zeros(100), vkir.zeros(100), vkir.zeros(100, "int32")
    with vkir.Tape() as tape:
        kernels["affine"](x, w, b, y, s)
        kernels["square"](y, z)
        kernels["count"](y, c)   # integer output: no gradient reaches it, skipped by backward
    assert len(tape) == 3
    tape.backward({z: seed})
    yv = np.tanh(s * xn * wn + bn)
    dy = seed * (2 * yv + np.cos(yv))
    dpre = dy * (1 - yv * yv)
    np.testing.assert_allclose(tape.grad(y).numpy(), dy, **TOL)
    np.testing.assert_allclose(tape.grad(w).numpy(), dpre * s * xn, **TOL)
    np.testing.assert_allclose(tape.grad(x).numpy(), dpre * s * wn, **TOL)
    np.testing.assert_allclose(tape.grad(b).numpy(), dpre, **TOL)
    # central differences of the float64 forward pass, for a few elements of w
    h = 1e-3
    for j in (0, 17, 99):
        e = np.zeros(100)
        e[j] = h
        fd = (_forward(xn, wn + e, bn, s, seed) - _forward(xn, wn - e, bn, s, seed)) / (2 * h)
        assert abs(tape.grad(w).numpy()[j] - fd) < 3e-3 * (1 + abs(fd))
    with pytest.raises(ArgumentError, match="int32 array has no gradient"):
        tape.grad(c)


def test_backward_accumulates_zero_and_reset(kernels, device):
    xn, wn, bn, seed = _data(seed=1)
    x, w, b, y = vkir.array(xn), vkir.array(wn), vkir.array(bn), vkir.zeros(100)
    with vkir.Tape() as tape:
        kernels["affine"](x, w, b, y, 1.0)
    tape.backward({y: vkir.array(seed)})
    first = tape.grad(b).numpy()
    np.testing.assert_allclose(first, seed * (1 - np.tanh(xn * wn + bn) ** 2),
                               **TOL)
    tape.backward(y)   # a bare array: a seed of ones, added to what is there
    np.testing.assert_allclose(tape.grad(b).numpy(),
                               first + 1 - np.tanh(xn * wn + bn) ** 2, **TOL)
    tape.zero()
    assert not tape.grad(b).numpy().any() and len(tape) == 1
    tape.reset()
    assert len(tape) == 0
    with pytest.raises(ArgumentError, match="not an argument of any recorded call"):
        tape.grad(b)


def test_adjoint_kernels_are_built_once_per_kernel(kernels, device, monkeypatch):
    xn, wn, bn, seed = _data(seed=2)
    built = []
    real = recording._build
    monkeypatch.setattr(recording, "_build", lambda f, d: built.append(f.name) or real(f, d))
    k = vkir.build(square, device=device)
    for step in range(2):   # a fresh tape per step, as a training loop writes it
        y, z = vkir.array(xn), vkir.zeros(100)
        with vkir.Tape() as tape:
            k(y, z)
        tape.backward({z: seed})
        np.testing.assert_allclose(tape.grad(y).numpy(), seed * (2 * xn + np.cos(xn)),
                                   **TOL)
    assert built == ["square_grad"]


def test_shared_reads_accumulate_with_atomics(device):
    xn = _data(seed=3)[0]
    x, w, y = vkir.array(xn), vkir.array(np.float32([1.5])), vkir.zeros(100)
    out = vkir.zeros(1)
    k = vkir.build(scaled, device=device)   # float atomic adds: on every device
    zero, total = vkir.build(fill_zero, device=device), vkir.build(sum_sq, device=device)
    with vkir.Tape() as tape:
        zero(out)          # stores 0, then sum_sq only adds into it: allowed
        k(x, w, y)
        total(y, out)
    tape.backward({out: np.ones(1, np.float32)})
    np.testing.assert_allclose(out.numpy(), [np.sum((xn * 1.5) ** 2)], **TOL)
    # d/dw sum((x w)^2) = 2 w sum(x^2)
    np.testing.assert_allclose(tape.grad(w).numpy(), [2 * 1.5 * np.sum(xn * xn)], **TOL)
    np.testing.assert_allclose(tape.grad(x).numpy(), 2 * 1.5 * 1.5 * xn, **TOL)


def test_refusals(kernels, device):
    xn, wn, bn, _ = _data(seed=4)
    x, w, b, y, z = (vkir.array(xn), vkir.array(wn), vkir.array(bn), vkir.zeros(100),
                     vkir.zeros(100))
    with vkir.Tape() as tape:
        with pytest.raises(ArgumentError, match="argument 'x' is a ndarray; inside a tape"):
            kernels["affine"](xn, w, b, y, 1.0)
        kernels["affine"](x, w, b, y, 1.0)
        # y was read by nothing yet, but stored into by call 0: a second store is refused
        with pytest.raises(ArgumentError, match=r"call 1 \(kernel affine\) writes argument 'y', "
                                                r"an array that recorded call 0 \(kernel "
                                                r"affine\) wrote"):
            kernels["affine"](x, w, b, y, 1.0)
        kernels["square"](y, z)
        # x was read by call 0: overwriting it would change what its adjoint reads
        with pytest.raises(ArgumentError, match=r"writes argument 'z', an array that recorded "
                                                r"call 0 \(kernel affine\) read as 'x'"):
            kernels["square"](y, x)
        with pytest.raises(ArgumentError, match="launch\\(\\) inside a vkir.Tape"):
            kernels["square"].launch(y, z)
    assert len(tape) == 2   # the refused calls were neither run nor recorded
    np.testing.assert_array_equal(x.numpy(), xn)
    with pytest.raises(ArgumentError, match="a DeviceArray that a recorded call used"):
        tape.backward({vkir.zeros(3): np.ones(3)})
    with pytest.raises(ArgumentError, match=r"seed of shape \[3\] for an array of shape \[100\]"):
        tape.backward({z: np.ones(3)})


@T.prim_func
def add(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"),
        c: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        c[i] = a[i] + b[i]


@T.prim_func
def sq(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        b[i] = a[i] * a[i]


X0 = np.float32([1, 2, 3, 4])


def test_arrays_are_known_by_their_memory(device):
    from vkir.ops._common import view   # a fresh DeviceArray object over the same memory

    k = vkir.build(sq, device=device)
    x, y, z = vkir.array(X0), vkir.zeros(4), vkir.zeros(4)
    with vkir.Tape() as tape:
        k(x, y)
        k(view(y, (4,)), z)          # z = y * y, y reached through another object
        with pytest.raises(ArgumentError, match=r"call 2 \(kernel sq\) writes argument 'b', an "
                                                r"array that recorded call 0 \(kernel sq\) "
                                                r"wrote"):
            k(x, view(y, (4,)))      # a second store into y's memory
    assert len(tape) == 2
    tape.backward(view(z, (4,)))     # seeding z through another object
    np.testing.assert_array_equal(tape.grad(x).numpy(), 4 * X0 ** 3)
    np.testing.assert_array_equal(tape.grad(view(y, (4,))).numpy(), 2 * X0 ** 2)


def test_a_call_may_not_write_its_own_input(device):
    k, ka = vkir.build(sq, device=device), vkir.build(add, device=device)
    x, y = vkir.array(X0), vkir.zeros(4)
    with vkir.Tape() as tape:
        with pytest.raises(ArgumentError, match=r"call 0 \(kernel sq\) writes argument 'b', "
                                                r"whose memory argument 'a' of the same call"):
            k(x, x)
        ka(x, x, y)                  # one array read twice: allowed, its gradient counted twice
    np.testing.assert_array_equal(x.numpy(), X0)   # the refused call did not run
    tape.backward(y)
    np.testing.assert_array_equal(tape.grad(x).numpy(), [2, 2, 2, 2])


def test_ops_inside_a_tape_are_refused_by_name(device):
    ka = vkir.build(add, device=device)
    x, z = vkir.array(X0), vkir.zeros(4)
    with vkir.Tape() as tape:
        with pytest.raises(UnsupportedError, match=r"vkir.ops.argsort inside a vkir.Tape"):
            vkir.ops.argsort(x)
        with pytest.raises(UnsupportedError, match=r"vkir.ops.histogram inside a vkir.Tape"):
            vkir.ops.histogram(x, 4)
    assert len(tape) == 0
    np.testing.assert_array_equal(x.numpy(), X0)
    c = vkir.ops.cumsum(x)           # outside the block, as usual
    with vkir.Tape() as tape:
        ka(x, c, z)
    tape.backward(z)
    np.testing.assert_array_equal(tape.grad(x).numpy(), [1, 1, 1, 1])   # c is an input here


def test_two_imports_of_one_host_memory_are_one_array(device):
    k = vkir.build(sq, device=device)
    host = np.zeros(64, np.float32)[:4]
    host[:] = X0
    a1, a2 = vkir.asarray(host, device=device), vkir.asarray(host, device=device)
    y, z = vkir.zeros(4, device=device), vkir.zeros(4, device=device)
    with vkir.Tape() as tape:
        k(a1, y)
        if a1.host_range() == a2.host_range():   # imported in place (lavapipe): one memory
            with pytest.raises(ArgumentError, match=r"writes argument 'b', an array that "
                                                    r"recorded call 0 \(kernel sq\) read as 'a'"):
                k(y, a2)
        else:                                     # copied in (SwiftShader): two memories
            assert not a1.is_view
        k(y, z)
    tape.backward(z)
    np.testing.assert_array_equal(tape.grad(a1).numpy(), 4 * X0 ** 3)
    if a1.is_view:
        np.testing.assert_array_equal(tape.grad(a2).numpy(), 4 * X0 ** 3)


def test_memory_overlapping_at_another_offset_is_refused(device):
    k = vkir.build(sq, device=device)
    base = np.arange(512, dtype=np.float32)
    k0 = (-base.ctypes.data % 256) // 4             # 256-byte aligned starts import in place
    p1 = vkir.asarray(base[k0:k0 + 128], device=device)
    p2 = vkir.asarray(base[k0 + 64:k0 + 192], device=device)   # its second half is p1's
    y, z = vkir.zeros(128, device=device), vkir.zeros(128, device=device)
    with vkir.Tape() as tape:
        k(p1, y)
        if p1.is_view and p2.is_view:              # imported in place (lavapipe)
            with pytest.raises(ArgumentError, match="overlaps memory the tape recorded without "
                                                    "starting where it starts"):
                k(p2, z)                           # p2's adjoint cannot be a view of p1's
            assert not z.numpy().any()             # refused before it ran
        else:                                      # copied in (SwiftShader): other memory
            k(p2, z)
            np.testing.assert_array_equal(z.numpy(), base[k0 + 64:k0 + 192] ** 2)
    assert len(tape) == (1 if p1.is_view and p2.is_view else 2)
