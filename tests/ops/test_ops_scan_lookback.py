"""The one-pass look-back scan behind vkir.ops.cumsum for long contiguous lines
(vkir.ops.scan_lookback): exact integer sums (inclusive, exclusive, wrapping uint32), float sums
within the tolerance of the chunked scan, several lines, a last tile that is not full, lengths
that take the other path, the fallback that sums a tile whose owner has not published, and the
kernel in the interpreter."""

import numpy as np
import pytest

import vkir
from vkir import ops
from vkir.ops import scan, scan_lookback

R = scan.LOOKBACK_MIN + 4 * 1037   # not a whole number of tiles


def _want(x, exclusive):
    w = np.cumsum(x, axis=-1, dtype=np.float64 if x.dtype == np.float32 else x.dtype)
    return w - x if exclusive else w


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "float32"])
def test_long_lines(device, dtype, exclusive):
    rng = np.random.default_rng(7)
    if dtype == "float32":
        x = rng.standard_normal((3, R)).astype(np.float32)
    else:
        x = rng.integers(-9, 10, (3, R)).astype(dtype)
        x[:, ::101] = np.iinfo(dtype).max        # wraps around
    got = ops.cumsum(x, axis=-1, exclusive=exclusive, device=device)
    if dtype == "float32":
        np.testing.assert_allclose(got, _want(x, exclusive), rtol=1e-4, atol=2e-2)
    else:
        np.testing.assert_array_equal(got, _want(x, exclusive).astype(dtype))


def test_lengths_off_the_vector_width_take_the_chunked_scan(device):
    x = np.random.default_rng(8).integers(-9, 10, R + 1).astype(np.int32)
    np.testing.assert_array_equal(ops.cumsum(x, device=device), np.cumsum(x).astype(np.int32))


def test_fallback_sums_unpublished_tiles(device):
    """spin=0: a tile whose predecessor has not published is summed from the data at once;
    the sums stay exact whichever tiles took that path."""
    n, chunk = 1 << 18, 512
    x = np.random.default_rng(9).integers(-99, 100, n).astype(np.int32)
    nt = scan_lookback.tiles(n, chunk)
    k = vkir.build(scan_lookback.lookback_scan_kernel(1, n, "int32", False, w=8, chunk=chunk,
                                                      spin=0), device=device)
    y = np.zeros(n, np.int32)
    k(x, y, np.zeros(nt, np.uint32), np.zeros(nt, np.uint32), np.zeros(nt + 1, np.uint32))
    np.testing.assert_array_equal(y, np.cumsum(x).astype(np.int32))


@pytest.mark.parametrize("exclusive", [False, True])
def test_interpreter(exclusive):
    O, n, chunk = 2, 72, 16
    x = np.arange(O * n, dtype=np.int32) % 7 - 3
    nt = O * scan_lookback.tiles(n, chunk)
    y = np.zeros_like(x)
    f = scan_lookback.lookback_scan_kernel(O, n, "int32", exclusive, w=4, chunk=chunk)
    vkir.interpret(f, x, y, np.zeros(nt, np.uint32), np.zeros(nt, np.uint32),
                   np.zeros(nt + 1, np.uint32), subgroup_size=4)
    np.testing.assert_array_equal(y.reshape(O, n), _want(x.reshape(O, n), exclusive))


def test_workspace_lends_distinct_arrays_and_takes_them_back(device):
    from vkir.ops.scratch import for_device, workspace

    with workspace(device) as ws:
        a, b = ws.take((5,), "uint32"), ws.take((5,), "uint32")
        assert a is not b
    with workspace(device) as ws:
        c = ws.take((5,), "uint32")
    assert c is a or c is b
    assert len(for_device(device)) >= 1


def test_recorded_in_a_sequence_and_replayed(device):
    """Inside vkir.sequence() nothing runs until the block ends: the look-back's status words
    are cleared by a recorded kernel (so a replay scans again), and the radix sort runs every
    pass with its payload (it cannot read the first count's statistics)."""
    n = scan.LOOKBACK_MIN
    rng = np.random.default_rng(10)
    xi = rng.integers(-99, 100, n).astype(np.int32)
    xf = rng.standard_normal(n).astype(np.float32)
    XI, XF = vkir.array(xi, device=device), vkir.array(xf, device=device)
    S, V, I = (vkir.empty(n, dt, device) for dt in ("int32", "float32", "int32"))
    with vkir.sequence(device=device) as seq:
        ops.cumsum(XI, out=S)
        ops.sort(XF, out=V)
        ops.argsort(XI, out=I)
    seq.wait()
    for _ in range(2):
        np.testing.assert_array_equal(S.numpy(), np.cumsum(xi).astype(np.int32))
        np.testing.assert_array_equal(V.numpy(), np.sort(xf))
        np.testing.assert_array_equal(I.numpy(), np.argsort(xi, kind="stable"))
        xi, xf = xi[::-1].copy(), xf[::-1].copy()
        XI.write(xi)
        XF.write(xf)
        seq.run().wait()


def test_in_place(device):
    """cumsum(X, out=X) takes the chunked scan (the look-back's fallback reads other tiles)."""
    x = np.random.default_rng(11).integers(-9, 10, R).astype(np.int32)
    X = vkir.array(x, device=device)
    assert ops.cumsum(X, out=X) is X
    np.testing.assert_array_equal(X.numpy(), np.cumsum(x).astype(np.int32))


def test_float_results_are_the_same_bits_whichever_tiles_published_first(device):
    """Each inclusive prefix is the chain I(p) = I(p - 1) + A(p), a tile's aggregate A the same
    sum whether its owner or a later tile (the fallback) computed it: runs with the fallback
    taken at once (spin=0) and with waiting give identical bits, and so do repeated calls."""
    n, chunk = 1 << 18, 1024
    x = np.random.default_rng(11).standard_normal(n).astype(np.float32)
    nt = scan_lookback.tiles(n, chunk)
    results = []
    for spin in (0, scan_lookback.SPIN, scan_lookback.SPIN):
        k = vkir.build(scan_lookback.lookback_scan_kernel(1, n, "float32", False, w=8,
                                                          chunk=chunk, spin=spin), device=device)
        y = np.zeros(n, np.float32)
        k(x, y, np.zeros(nt, np.uint32), np.zeros(nt, np.uint32), np.zeros(nt + 1, np.uint32))
        results.append(y)
    np.testing.assert_allclose(results[0], np.cumsum(x, dtype=np.float64), rtol=1e-4, atol=2e-2)
    for y in results[1:]:
        np.testing.assert_array_equal(y, results[0])
    big = np.random.default_rng(12).standard_normal(3 * R).astype(np.float32)
    first = ops.cumsum(big, device=device)
    for _ in range(3):
        np.testing.assert_array_equal(ops.cumsum(big, device=device), first)
