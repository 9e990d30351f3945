"""vkir.array / empty / zeros / full and DeviceArray: contents, dtypes, numpy's conversion
protocol (including numpy 2's `copy`), repr."""

import numpy as np
import pytest

import vkir
from vkir.errors import ArgumentError


def test_array_with_dtype(device):
    x = vkir.array([1, 2, 3], dtype="float32", device=device)
    assert (x.shape, x.dtype, x.nbytes, x.device) == ((3,), np.dtype("float32"), 12, device)
    np.testing.assert_array_equal(x.numpy(), np.array([1, 2, 3], np.float32))
    y = vkir.array(np.arange(6, dtype=np.int64).reshape(2, 3), np.int16, device=device)
    assert y.dtype == np.int16 and y.shape == (2, 3)
    z = vkir.array(y, device=device)                          # a copy of another device array
    np.testing.assert_array_equal(z.numpy(), y.numpy())
    assert z.buffer is not y.buffer
    old_style = vkir.array(np.ones(2, np.float32), device)    # device in the dtype position
    assert old_style.device is device
    with pytest.raises(ArgumentError):
        vkir.array([1, 2], dtype="complex64", device=device)


def test_zeros_full_empty(device):
    z = vkir.zeros((3, 4), "int32", device=device)
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 4), np.int32))
    f = vkir.full((2, 2), 7.5, "float32", device=device)
    np.testing.assert_array_equal(f.numpy(), np.full((2, 2), 7.5, np.float32))
    b = vkir.full(3, True, "bool", device=device)
    assert b.dtype == np.bool_ and b.numpy().all()
    e = vkir.empty((5, 0), "uint8", device=device)
    assert e.shape == (5, 0) and e.nbytes == 0 and e.numpy().shape == (5, 0)
    v = vkir.zeros(2, "float32x4", device=device)
    assert v.shape == (8,)
    with pytest.raises(ArgumentError, match="int8"):
        vkir.full(2, 300, "int8", device=device)


def test_numpy_conversion_protocol(device):
    a = np.arange(5, dtype=np.float32)
    x = vkir.array(a, device=device)
    np.testing.assert_array_equal(np.asarray(x), a)
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    c = np.array(x, copy=True)
    c[0] = 99
    np.testing.assert_array_equal(x.numpy(), a)               # copies never alias the device
    v = np.array(x, copy=False)                # host-visible memory: a view, no copy
    v[1] = 7
    assert x.numpy()[1] == 7
    assert len(x) == 5
    saved = device.host_visible_buffers        # device-local memory (forced): copies only
    device.host_visible_buffers = False
    try:
        y = vkir.array(a, device=device)
    finally:
        device.host_visible_buffers = saved
    np.testing.assert_array_equal(np.asarray(y), a)
    with pytest.raises(ValueError, match="copy"):
        np.array(y, copy=False)


def test_repr_is_useful(device):
    x = vkir.array(np.array([1.5, 2.5], np.float32), device=device)
    r = repr(x)
    assert "1.5" in r and "2.5" in r and "float32" in r and device.info.name in r
    big = repr(vkir.zeros(10_000, "int32", device=device))
    assert "..." in big and len(big) < 400


@pytest.mark.device
def test_a_zero_dimensional_value_stays_zero_dimensional():
    import numpy as np

    import vkir

    a = vkir.array(np.float32(3))
    assert a.shape == () and a.ndim == 0 and a.size == 1
    assert a.numpy().shape == () and a.numpy() == np.float32(3)
    assert vkir.array(7, dtype="int32").shape == ()
