"""The radix sort behind vkir.ops.sort/argsort for one long line (vkir.ops.radix): float32
(NaNs of both signs last, -0 tied with 0, infinities), int32 and uint32 extremes, many
duplicates (stability) against numpy's stable sorts, on a length just past the threshold that
is not a whole number of chunks."""

import numpy as np
import pytest

from vkir import ops
from vkir.ops import radix, sorting

N = sorting.RADIX_MIN + 1037


def _data(dtype):
    rng = np.random.default_rng(11)
    if dtype == "float32":
        x = rng.normal(size=N).astype(np.float32)
        x[::7] = np.round(x[::7])          # duplicates
        x[::97], x[5::89] = np.nan, -np.nan
        x[3::50], x[4::50] = 0.0, -0.0
        x[6::1000], x[8::1000] = np.inf, -np.inf
        return x
    lo = -(2 ** 31) if dtype == "int32" else 0
    hi = 2 ** 31 - 1 if dtype == "int32" else 2 ** 32 - 1
    x = rng.integers(-50 if dtype == "int32" else 0, 50, N).astype(dtype)
    x[::13], x[1::17] = lo, hi
    return x


def test_chunks_cover_every_length():
    for n in (1, 255, 256, 257, N, 1 << 20, (1 << 24) + 3):
        p, c = radix.chunking(n)
        assert p * c >= n > (p - 1) * c and 256 <= c <= 16384


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32"])
def test_radix_sort_matches_numpy_stable(device, dtype):
    x = _data(dtype)
    assert x.size >= sorting.RADIX_MIN
    np.testing.assert_array_equal(ops.argsort(x, device=device), np.argsort(x, kind="stable"))
    got = ops.sort(x, device=device)
    np.testing.assert_array_equal(got, np.sort(x))
    assert got.view(np.uint32).tolist() == x[np.argsort(x, kind="stable")].view(np.uint32).tolist()


@pytest.mark.parametrize("first,with_index", [(True, False), (True, True), (False, False)])
def test_vector_walk_equals_the_scalar_one(device, first, with_index):
    """The v=4 count and scatter kernels (4 elements per read) write exactly what the scalar
    ones write: the same counts, the same stable order of keys and payloads."""
    import vkir

    n, p, c = 4096, 4, 1024
    x = _data("float32")[:n].copy()
    src = x if first else x.view(np.uint32)
    pin = np.arange(n, dtype=np.float32)
    out = {}
    for v in (1, 4):
        counts = np.zeros(256 * p, np.int32)
        vkir.build(radix.radix_count_kernel(n, p, c, "float32", first, v=v), device=device)(
            src, counts, 8)
        offsets = (np.cumsum(counts) - counts).astype(np.int32)
        kout, pout = np.zeros(n, np.uint32), np.zeros(n, np.int32 if with_index else np.float32)
        k = vkir.build(radix.radix_scatter_kernel(n, p, c, "float32", first, with_index, v=v),
                       device=device)
        k(*([src] if first else [src, pin]), offsets, kout, pout, 8)
        out[v] = counts, kout, pout.view(np.uint32)
    for a, b in zip(out[1], out[4]):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(Exception, match="v=4"):
        radix.radix_count_kernel(n - 2, p, c, "float32", first, v=4)
