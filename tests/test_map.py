"""`vkir.map(func)`: a device function over arrays with numpy's broadcasting, vector lanes on the
last axis, numpy in -> numpy out, DeviceArrays in -> DeviceArray out, `out=`, one kernel per
argument dimensions, and shape mismatches named in an ArgumentError; values against numpy."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError
from vkir.mapping import Mapped


@T.func
def shade(n: T.float32x3, l: T.float32x3) -> T.float32:
    return T.max(T.dot(n, l), T.float32(0))


@T.func
def axpy(a: T.float32, x: T.float32, y: T.float32) -> T.float32:
    return a * x + y


@T.func
def scaled(n: T.float32x3, s: T.float32) -> T.float32x3:
    return T.normalize(n) * T.broadcast(s, 3)


@T.func
def wrap(i: T.int32, n: T.int32) -> T.int32:
    return i % n


def _normals(shape, seed=0):
    return np.random.default_rng(seed).standard_normal((*shape, 3)).astype("float32")


def test_in_the_interpreter():
    normals, light = _normals((4, 5)), np.array([0.2, -0.4, 0.9], "float32")
    y = vkir.map(shade, device="interp")(normals, light)
    assert isinstance(y, np.ndarray) and y.shape == (4, 5) and y.dtype == np.float32
    np.testing.assert_allclose(y, np.maximum(normals @ light, 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call, message", [
    (lambda: vkir.map(axpy)(np.zeros(3, "float32"), np.zeros(4, "float32"), 1.0),
     r"shapes do not broadcast: a \(3,\), x \(4,\), y \(\)"),
    (lambda: vkir.map(shade)(_normals((2,)), np.zeros((2, 4), "float32")),
     r"argument 'l' is float32x3: its last axis must have 3 lanes, got shape \(2, 4\)"),
    (lambda: vkir.map(axpy)(np.zeros(3), np.zeros(3, "float32"), 1.0),
     "argument 'a' .* takes float32 elements, got float64"),
    (lambda: vkir.map(axpy)(np.zeros(3, "float32"), 1.0, 1.0, out=np.zeros(4, "float32")),
     r"out= has shape \(4,\) and dtype float32; the result has shape \(3,\)"),
    (lambda: vkir.map(axpy)(np.zeros(3, "float32"), 1.0), "takes 3 arrays, got 2"),
    (lambda: vkir.map(lambda x: x), "expects a @T.func device function, got function"),
])
def test_bad_calls_are_argument_errors(call, message):
    with pytest.raises(ArgumentError, match=message):
        call()


@pytest.fixture(scope="module")
def maps(_vulkan_device):
    return {f.name: vkir.map(f, device=_vulkan_device) for f in (shade, axpy, scaled, wrap)}


def test_numpy_broadcasting(device, maps):
    normals, light = _normals((6, 7)), np.array([0.2, -0.4, 0.9], "float32")
    y = maps["shade"](normals, light)
    assert isinstance(y, np.ndarray) and y.shape == (6, 7)
    np.testing.assert_allclose(y, np.maximum(normals @ light, 0), rtol=1e-5, atol=1e-6)
    lights = _normals((7,), seed=1)          # (7, 3) against (6, 7, 3): per column
    np.testing.assert_allclose(maps["shade"](normals, lights),
                               np.maximum((normals * lights).sum(-1), 0), rtol=1e-5, atol=1e-6)
    a = np.linspace(-1, 1, 5, dtype="float32").reshape(5, 1)
    x = np.linspace(0, 2, 3, dtype="float32")
    np.testing.assert_allclose(maps["axpy"](a, x, 0.5), a * x + np.float32(0.5), rtol=1e-6)
    i = np.arange(-6, 6, dtype="int32").reshape(3, 4)
    np.testing.assert_array_equal(maps["wrap"](i, np.int32(5)), i % 5)   # floor modulo
    assert maps["axpy"](np.float32(2), np.float32(3), np.float32(1)) == 7


def test_vector_results_add_the_lanes_axis(device, maps):
    normals, s = _normals((5,)), np.array([1.0, 2.0, 0.5, 3.0, 1.5], "float32")
    r = maps["scaled"](normals, s)
    assert r.shape == (5, 3)
    want = normals / np.linalg.norm(normals, axis=-1, keepdims=True) * s[:, None]
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-6)


def test_device_arrays_and_out(device, maps):
    normals, light = _normals((9,)), np.array([0.2, -0.4, 0.9], "float32")
    want = np.maximum(normals @ light, 0)
    y = maps["shade"](vkir.array(normals, device=device), vkir.array(light, device=device))
    assert isinstance(y, vkir.DeviceArray) and y.shape == (9,)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
    out = vkir.zeros((9,), "float32", device=device)
    assert maps["shade"](vkir.array(normals, device=device), light, out=out) is out
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    host = np.zeros(9, "float32")
    assert maps["shade"](normals, light, out=host) is host
    np.testing.assert_allclose(host, want, rtol=1e-5, atol=1e-6)


def test_one_kernel_per_argument_dimensions(device, maps):
    m = Mapped(axpy, device)
    for n in (3, 5):           # under 8 results: the general kernel
        x = np.arange(n, dtype="float32")
        np.testing.assert_array_equal(m(x, x, 1.0), x * x + 1)
    assert len(m.kernels) == 1
    m(np.zeros((2, 2), "float32"), 1.0, 1.0)
    assert len(m.kernels) == 2


@pytest.mark.parametrize("n", [8, 16, 17, 40, 41, 1000, 1029])
def test_flat_kernel_whole_groups_and_tails(device, maps, n):
    """Same-shape and one-element arguments run the flat kernel (several results per
    invocation as 4-lane vectors); the results past the last whole group are exact too."""
    rng = np.random.default_rng(n)
    a, x = rng.standard_normal(n).astype("float32"), rng.standard_normal(n).astype("float32")
    y = rng.standard_normal(n).astype("float32")
    np.testing.assert_array_equal(maps["axpy"](a, x, y), a * x + y)
    np.testing.assert_array_equal(maps["axpy"](np.float32(3), x, y), np.float32(3) * x + y)
    np.testing.assert_array_equal(maps["axpy"](a.reshape(-1, 1)[:, 0], x, np.float32(-1)),
                                  a * x - np.float32(1))
    i = np.arange(-n, n, 2, dtype="int32")
    np.testing.assert_array_equal(maps["wrap"](i, np.int32(7)), i % 7)
    assert any(key[0] == "flat" for key in maps["axpy"].kernels)


def test_flat_kernel_on_device_arrays(device, maps):
    n = 4099
    rng = np.random.default_rng(1)
    a, x, y = (rng.standard_normal((n,)).astype("float32") for _ in range(3))
    A, X, Y = (vkir.array(v, device=device) for v in (a, x, y))
    out = maps["axpy"](A, X, Y)
    assert isinstance(out, vkir.DeviceArray) and out.shape == (n,)
    np.testing.assert_array_equal(out.numpy(), a * x + y)
    # a 2-d result, and out= the same memory as an argument (in place)
    A2, Y2 = A[:4096].reshape(64, 64), Y[:4096].reshape(64, 64)
    assert maps["axpy"](A2, 2.0, Y2, out=Y2) is Y2
    np.testing.assert_array_equal(Y.numpy()[:4096], a[:4096] * 2 + y[:4096])
    np.testing.assert_array_equal(Y.numpy()[4096:], y[4096:])


def test_flat_kernel_script_reads_vectors_and_stores_wide():
    from vkir.mapping import flat_kernel_script

    text = flat_kernel_script(axpy, ("one", "full", "full"), wide=True, tail=True)
    assert 'a0: T.Buffer((1,), "float32")' in text
    assert 'a1: T.Buffer(("q",), "float32x4")' in text and 't1: T.Buffer(("n",), "float32")' in text
    assert '"uint64x4", data=out.data' in text
    assert "uint64x4" not in flat_kernel_script(axpy, ("full", "full", "full"))


@pytest.mark.parametrize("shape, row", [((64, 24), (24,)), ((3, 5, 16), (1, 5, 16)),
                                        ((9, 8), (1, 8)), ((6, 10), (10,))])
def test_flat_kernel_repeats_trailing_tiles(device, maps, shape, row):
    """An argument that is the result's last axes (a bias row) repeats along the leading
    ones; (6, 10) against (10,) is not whole groups of 8 and takes the general kernel."""
    rng = np.random.default_rng(7)
    x, b = rng.standard_normal(shape).astype("float32"), rng.standard_normal(row).astype("float32")
    m = Mapped(axpy, device)
    want = np.float32(2) * x + b
    np.testing.assert_array_equal(m(2.0, x, b), want)
    got = m(2.0, vkir.array(x, device=device), vkir.array(b, device=device))
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(m(b, x, b), b * x + b)
    tiled = any(key[0] == "flat" and "tile" in key[1] for key in m.kernels)
    assert tiled == (b.size % 8 == 0)
