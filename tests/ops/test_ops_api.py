"""The vkir.ops calls: numpy or DeviceArray inputs, device= and out=, every option of each op
against numpy, and precise errors for bad arguments."""

import numpy as np
import pytest

import vkir
from vkir import ops
from vkir.errors import ArgumentError

pytestmark = pytest.mark.device
RNG = np.random.default_rng(2)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_matmul_transposes(device, trans_a, trans_b):
    a, b = rand(24, 10), rand(10, 40)
    got = ops.matmul(a.T.copy() if trans_a else a, b.T.copy() if trans_b else b,
                     trans_a=trans_a, trans_b=trans_b, device=device)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bias_shape", [None, "n", "mn"])
@pytest.mark.parametrize("activation", [None, "relu", ("clip", -0.5, 0.5)])
def test_matmul_epilogues(device, bias_shape, activation):
    a, b = rand(3, 16, 8), rand(3, 8, 32)
    bias = {None: None, "n": rand(32), "mn": rand(3, 16, 32)}[bias_shape]
    want = a @ b + (0 if bias is None else bias)
    if activation == "relu":
        want = np.maximum(want, 0)
    elif activation is not None:
        want = np.clip(want, -0.5, 0.5)
    got = ops.matmul(a, b, bias=bias, activation=activation, device=device)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_device_arrays_in_device_array_out(device):
    a, b = rand(8, 8), rand(8, 12)
    A = vkir.array(a, device=device)
    C = ops.matmul(A, b)
    assert isinstance(C, vkir.api.DeviceArray) and C.device is device
    np.testing.assert_allclose(C.numpy(), a @ b, rtol=1e-5, atol=1e-5)
    S = ops.sum(C, axis=1)
    assert isinstance(S, vkir.api.DeviceArray)
    np.testing.assert_allclose(S.numpy(), (a @ b).sum(axis=1), rtol=1e-4, atol=1e-4)


def test_out_numpy_and_device(device):
    x = rand(6, 32)
    out = np.zeros((6, 32), np.float32)
    assert ops.softmax(x, out=out, device=device) is out
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    dout = vkir.empty((32, 6), "float32", device=device)
    assert ops.transpose(x, out=dout) is dout
    np.testing.assert_array_equal(dout.numpy(), x.T)


@pytest.mark.parametrize("name", ["sum", "max", "min", "mean", "argmax"])
@pytest.mark.parametrize("shape,axis", [((5000,), None), ((3, 7, 20), None), ((3, 7, 20), 2),
                                        ((3, 7, 20), 1), ((3, 7, 20), -3), ((9, 13), 1)])
def test_reductions(device, name, shape, axis):
    x = rand(*shape)
    got = getattr(ops, name)(x, axis=axis, device=device)
    want = getattr(np, name)(x.astype(np.float64), axis=axis)
    assert np.shape(got) == np.shape(want)
    if name == "argmax":
        np.testing.assert_array_equal(got, want)
    else:  # float32 sums carry rounding error relative to the sum of magnitudes
        scale = np.abs(x).sum(axis=axis) / (x.size if axis is None else x.shape[axis]) ** (
            name == "mean")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 + 1e-6 * np.max(scale))


def test_argmax_takes_the_first_of_equal_maxima(device):
    x = np.zeros(1000, np.float32)
    x[[317, 318, 900]] = 5.0
    assert int(ops.argmax(x, device=device)) == 317


def test_softmax_other_axis_and_layer_norm(device):
    x = rand(4, 6, 8)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(ops.softmax(x, axis=1, device=device),
                               e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    g, b = rand(8), rand(8)
    mu, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    np.testing.assert_allclose(ops.layer_norm(x, g, b, eps=1e-4, device=device),
                               (x - mu) / np.sqrt(var + 1e-4) * g + b, rtol=1e-4, atol=1e-4)


def test_transpose_default_axes(device):
    x = rand(2, 3, 5)
    np.testing.assert_array_equal(ops.transpose(x, device=device), x.transpose())


@pytest.mark.parametrize("stride,padding", [(1, 0), (2, 1), (1, 2)])
def test_conv2d(device, stride, padding):
    from test_op_templates import conv_reference

    x, w = rand(2, 3, 9, 11), rand(4, 3, 3, 3)
    got = ops.conv2d(x, w, stride=stride, padding=padding, device=device)
    np.testing.assert_allclose(got, conv_reference(x, w, stride, padding), rtol=1e-4, atol=1e-4)


def test_kernel_templates_are_readable():
    f = ops.matmul.kernel(64, 64, 64, tm=4, tn=8, wx=4, wy=4)
    text = f.script()
    assert "T.vectorized(4)" in text and 'scope="local"' in text
    assert vkir.structural_equal(vkir.from_script(text), f)


def test_bad_arguments(device):
    with pytest.raises(ArgumentError, match="inner dimensions"):
        ops.matmul(rand(4, 5), rand(6, 4), device=device)
    with pytest.raises(ArgumentError, match="float32"):
        ops.sum(np.ones(4), device=device)
    with pytest.raises(ArgumentError, match="bias shape"):
        ops.matmul(rand(4, 5), rand(5, 4), bias=rand(5), device=device)
    with pytest.raises(ArgumentError, match="activation"):
        ops.matmul(rand(4, 5), rand(5, 4), activation="gelu", device=device)
    with pytest.raises(ArgumentError, match="axis 2 is out of range"):
        ops.sum(rand(4, 5), axis=2, device=device)
    with pytest.raises(ArgumentError, match="permutation"):
        ops.transpose(rand(4, 5), (0, 0), device=device)
    with pytest.raises(ArgumentError, match="channels"):
        ops.conv2d(rand(1, 2, 5, 5), rand(3, 4, 3, 3), device=device)
    with pytest.raises(ArgumentError, match="out has"):
        ops.softmax(rand(4, 8), out=np.zeros((4, 4), np.float32), device=device)


def test_ops_build_again_after_the_pipeline_cache_is_reset(device):
    # `vkir demo` resets the device's pipeline cache to time cold compiles; the ops' kernel cache
    # must not hand out the kernels whose pipelines that destroyed
    x = np.arange(1, 65, dtype=np.float32)
    assert float(np.asarray(ops.sum(x, device=device))) == float(x.sum())
    device.reset_pipeline_cache()
    assert float(np.asarray(ops.sum(x, device=device))) == float(x.sum())
