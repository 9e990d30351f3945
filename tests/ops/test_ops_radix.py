"""The radix sort behind vkir.ops.sort/argsort for one long line (vkir.ops.radix): float32
(NaNs of both signs last, -0 tied with 0, infinities), int32 and uint32 extremes, many
duplicates (stability) against numpy's stable sorts, on a length just past the threshold that
is not a whole number of chunks; the keys-only path (values rebuilt from their keys) and the
payload path; passes skipped where a digit never varies; in-place sorts; the offsets kernel."""

import numpy as np
import pytest

import vkir
from vkir import ops
from vkir.ops import radix, sorting

N = sorting.RADIX_MIN + 1037


def _data(dtype, n=N):
    rng = np.random.default_rng(11)
    if dtype == "float32":
        x = rng.normal(size=n).astype(np.float32)
        x[::7] = np.round(x[::7])          # duplicates
        x[::97], x[5::89] = np.nan, -np.nan
        x[3::50], x[4::50] = 0.0, -0.0
        x[6::1000], x[8::1000] = np.inf, -np.inf
        return x
    lo = -(2 ** 31) if dtype == "int32" else 0
    hi = 2 ** 31 - 1 if dtype == "int32" else 2 ** 32 - 1
    x = rng.integers(-50 if dtype == "int32" else 0, 50, n).astype(dtype)
    x[::13], x[1::17] = lo, hi
    return x


def _check(x, device):
    np.testing.assert_array_equal(ops.argsort(x, device=device), np.argsort(x, kind="stable"))
    got = ops.sort(x, device=device)
    assert got.view(np.uint32).tolist() == x[np.argsort(x, kind="stable")].view(np.uint32).tolist()


def test_chunks_cover_every_length():
    for n in (1, 255, 256, 257, N, 1 << 20, (1 << 24) + 3):
        p, c = radix.chunking(n)
        assert p * c >= n > (p - 1) * c and 1024 <= c <= 4096 and c % 4 == 0


def test_varying_passes():
    assert radix.varying_passes(0, 0xFFFFFFFF) == [0, 1, 2, 3]
    assert radix.varying_passes(5, 5) == [0]
    assert radix.varying_passes(0x00000100, 0x00030100) == [2]
    assert radix.varying_passes(0x80000000, 0x800003FF) == [0, 1]


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32"])
def test_radix_sort_matches_numpy_stable(device, dtype):
    x = _data(dtype)
    assert x.size >= sorting.RADIX_MIN
    np.testing.assert_array_equal(ops.sort(x, device=device), np.sort(x))
    _check(x, device)


def test_keys_only_floats(device):
    """Floats without -0.0 or NaNs other than numpy's own travel as keys alone; the values
    come back bit for bit (numpy's NaN, +0.0, infinities, subnormals)."""
    x = _data("float32")
    x[np.signbit(x) & (x == 0)] = 0.0
    x[np.isnan(x)] = np.nan
    x[9::301] = np.float32(1e-40)
    x[10::301] = np.float32(-1e-40)
    assert x.view(np.uint32)[np.isnan(x)].tolist() == [0x7FC00000] * int(np.isnan(x).sum())
    _check(x, device)


@pytest.mark.parametrize("case", ["one_byte", "all_equal", "top_byte", "middle_bytes"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32"])
def test_passes_whose_digit_never_varies_are_skipped(device, case, dtype):
    rng = np.random.default_rng(3)
    u = rng.integers(0, 256, N).astype(np.uint32)
    bits = {"one_byte": u, "all_equal": np.full(N, 0x3F800000, np.uint32),
            "top_byte": (u << 24) | 0x00123456, "middle_bytes": (u << 8) | (u << 16) | 7}[case]
    if dtype == "float32":
        bits = bits & np.uint32(0x7F7FFFFF)   # finite values, both signs through bit 31 below
        bits[::3] |= np.uint32(0x80000000)
    x = bits.view(dtype)
    _check(x, device)


@pytest.mark.parametrize("case", ["one_byte", "two_bytes", "four_bytes"])
@pytest.mark.parametrize("payload", [False, True])
def test_in_place(device, case, payload):
    """ops.sort(X, out=X) on a DeviceArray: every pass reads the data before a write to it."""
    rng = np.random.default_rng(4)
    x = {"one_byte": rng.integers(0, 200, N), "two_bytes": rng.integers(0, 60000, N),
         "four_bytes": rng.integers(-2 ** 31, 2 ** 31, N)}[case].astype(np.int32).view(np.float32)
    x = np.where(np.isnan(x), np.float32(1), x).astype(np.float32)
    if payload:
        x[::5] = -0.0
    X = vkir.array(x, device=device)
    assert ops.sort(X, out=X) is X
    assert X.numpy().view(np.uint32).tolist() == \
        x[np.argsort(x, kind="stable")].view(np.uint32).tolist()


def test_offsets_kernel(device):
    P = 37
    counts = np.random.default_rng(2).integers(0, 9, radix.BINS * P).astype(np.int32)
    offsets = np.zeros_like(counts)
    vkir.build(radix.radix_offsets_kernel(P), device=device)(counts, offsets)
    np.testing.assert_array_equal(offsets, np.cumsum(counts) - counts)


@pytest.mark.parametrize("first,payload,last", [(True, "value", False), (True, "index", False),
                                                (False, "value", False), (True, "none", True),
                                                (False, "index", True)])
def test_vector_walk_equals_the_scalar_one(device, first, payload, last):
    """The v=4 count and scatter kernels (4 elements per read) write exactly what the scalar
    ones write: the same counts and statistics, the same stable order of keys and payloads."""
    n, p, c = 4096, 4, 1024
    x = _data("float32")[:n].copy()
    src = x if first else x.view(np.uint32)
    pt = np.int32 if payload == "index" else np.float32
    pin = np.arange(n).astype(pt)
    out = {}
    for v in (1, 4):
        counts = np.zeros(radix.BINS * p, np.int32)
        stats = np.zeros(3 * p, np.uint32)
        count = vkir.build(radix.radix_count_kernel(n, p, c, "float32", first, v=v),
                           device=device)
        count(*([src, counts, stats] if first else [src, counts]), 8)
        offsets = (np.cumsum(counts) - counts).astype(np.int32)
        k = vkir.build(radix.radix_scatter_kernel(n, p, c, "float32", first, payload, last, v=v),
                       device=device)
        ins = [src] + ([] if first else [pin]) + [offsets]
        outs = [np.zeros(n, pt)] if last else [np.zeros(n, np.uint32), np.zeros(n, pt)]
        k(*ins, *outs, 8)
        out[v] = [counts, stats] + [o.view(np.uint32) for o in outs]
    for a, b in zip(out[1], out[4]):
        np.testing.assert_array_equal(a, b)
    if first:
        keys = src.view(np.uint32)
        assert out[4][1][0] == np.bitwise_and.reduce(np.where(np.isnan(x), 0xFFFFFFFF, np.where(
            x == 0, 0x80000000, np.where(keys >> 31, ~keys, keys | 0x80000000))).astype(
                np.uint32)[:c])
        inexact = (keys == 0x80000000) | (np.isnan(x) & (keys != 0x7FC00000))
        assert out[4][1][2 * p:].tolist() == inexact.reshape(p, c).sum(1).tolist()
    with pytest.raises(Exception, match="v=4"):
        radix.radix_count_kernel(n - 2, p, c, "float32", first, v=4)
