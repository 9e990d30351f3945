"""vkir.ops.cumsum, sort, argsort and histogram against numpy: every axis, ints and floats,
one-pass and multi-pass shapes (chunked scans, several merge passes), NaNs, ties, numpy and
DeviceArray inputs, and precise errors."""

import numpy as np
import pytest

import vkir
from vkir import ops
from vkir.errors import ArgumentError

pytestmark = pytest.mark.device
RNG = np.random.default_rng(5)


def data(shape, dtype):
    if dtype == "uint32":
        return RNG.integers(0, 50, shape).astype(np.uint32)
    if dtype == "int32":
        return RNG.integers(-50, 50, shape).astype(np.int32)
    return (RNG.standard_normal(shape) * 4).astype(np.float32)


CASES = [((37,), -1), ((2, 3000), -1), ((4, 9, 3), 1), ((12, 5), 0), ((3, 4), None)]


@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("dtype,exclusive", [("float32", False), ("int32", True),
                                             ("uint32", False)])
def test_cumsum(device, shape, axis, dtype, exclusive):
    x = data(shape, dtype)
    got = ops.cumsum(x, axis=axis, exclusive=exclusive, device=device)
    want = np.cumsum(x, axis=axis, dtype=np.float64 if dtype == "float32" else x.dtype)
    if exclusive:
        want = want - (x.reshape(-1) if axis is None else x)
    assert got.dtype == x.dtype and got.shape == want.shape
    if dtype == "float32":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want.astype(x.dtype))


def test_cumsum_long_line_is_three_passes(device):
    x = data((70000,), "int32")
    from vkir.ops.scan import chunk_for

    assert chunk_for(1, 70000, 1) < 70000  # the chunked (reduce, scan, scan) path
    np.testing.assert_array_equal(ops.cumsum(x, device=device), np.cumsum(x).astype(np.int32))


@pytest.mark.parametrize("shape,axis", CASES + [((1000,), -1)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32"])
def test_sort_and_argsort(device, shape, axis, dtype):
    x = data(shape, dtype) // (1 if dtype == "float32" else 8)  # many ties
    if dtype == "float32":
        x.flat[::7] = np.nan
        x.flat[1::9] = -0.0
        x.flat[2::11] = -np.inf
    np.testing.assert_array_equal(ops.sort(x, axis=axis, device=device), np.sort(x, axis=axis))
    got = ops.argsort(x, axis=axis, device=device)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.argsort(x, axis=axis, kind="stable"))


def test_device_arrays_in_and_out(device):
    x = data((300,), "float32")
    X = vkir.array(x, device=device)
    for op, want in ((ops.cumsum, np.cumsum(x)), (ops.sort, np.sort(x)),
                     (ops.argsort, np.argsort(x, kind="stable"))):
        got = op(X)
        assert isinstance(got, vkir.api.DeviceArray)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-3)
    out = np.empty(300, np.float32)
    assert ops.sort(x, out=out, device=device) is out
    np.testing.assert_array_equal(out, np.sort(x))
    hist, edges = ops.histogram(X, 7)
    assert isinstance(hist, vkir.api.DeviceArray)
    np.testing.assert_array_equal(hist.numpy(), np.histogram(x, 7)[0])


@pytest.mark.parametrize("bins,range_", [(10, None), (7, (-1.0, 2.0)), (1, None),
                                         (np.array([-3, -1, 0, 0.5, 4], np.float32), None)])
def test_histogram(device, bins, range_):
    x = data((5003,), "float32")
    x[:5] = [np.nan, 2.0, -1.0, 0.5, 0.0]  # NaNs dropped; values on edges
    if range_ is None and np.ndim(bins) == 0:
        x[0] = 1.0
    hist, edges = ops.histogram(x, bins, range=range_, device=device)
    want, want_edges = np.histogram(x, bins, range=range_)
    np.testing.assert_array_equal(hist, want)
    np.testing.assert_array_equal(edges, want_edges)


def test_errors(device):
    with pytest.raises(ArgumentError, match="float32, int32, uint32"):
        ops.sort(np.zeros(3, np.float64), device=device)
    with pytest.raises(ArgumentError, match="axis 2 is out of range"):
        ops.cumsum(np.zeros((2, 2), np.float32), axis=2, device=device)
    with pytest.raises(ArgumentError, match="not finite"):
        ops.histogram(np.array([1, np.inf], np.float32), 4, device=device)
    with pytest.raises(ArgumentError, match="increasing"):
        ops.histogram(np.zeros(3, np.float32), [2.0, 1.0], device=device)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_cumsum_vector_configs_equal_the_scalar_ones(device, exclusive, dtype):
    """The v=4 scan and chunk-sum templates (4-element loads and stores) give exactly what the
    scalar ones give: the scan adds in the same order; chunk sums are exact for ints."""
    from vkir.ops.scan import chunk_sum_kernel, scan_kernel

    R, chunk = 1000, 200
    x = data((3 * R,), dtype)
    P = R // chunk
    offsets = data((3 * P,), dtype)
    got = {}
    for v in (1, 4):
        k = vkir.build(scan_kernel(3, R, 1, dtype, exclusive, chunk, True, w=8, v=v), device=device)
        y = np.zeros_like(x)
        k(x, offsets, y)
        s = np.zeros((3 * P,), dtype)
        vkir.build(chunk_sum_kernel(3, R, 1, dtype, chunk, w=8, v=v), device=device)(x, s)
        got[v] = y, s
    np.testing.assert_array_equal(got[4][0], got[1][0])
    if dtype == "int32":
        np.testing.assert_array_equal(got[4][1], got[1][1])
    np.testing.assert_allclose(got[4][1], x.reshape(3, P, chunk).sum(-1).reshape(-1), rtol=1e-5,
                               atol=1e-3)
    with pytest.raises(ArgumentError, match="v=4"):
        scan_kernel(3, 1001, 1, dtype, exclusive, chunk, True, v=4)
