"""The atomics and subgroup examples (vkir.examples.sync) on lavapipe with the validation layer,
against numpy and against the interpreter for subgroup sizes 4, 8, 16, 32 and 64 (the results
must not depend on the subgroup size)."""

import numpy as np
import pytest

import vkir
from vkir.testing import expect_features
from vkir.examples import sync as X

SIZES = [4, 8, 16, 32, 64]
N = 1500  # not a multiple of the workgroup size: partial workgroups and subgroups


def _interp(func, args, size):
    args = [a.copy() for a in args]
    vkir.interpret(func, *args, subgroup_size=size)
    return args


@pytest.mark.device
@pytest.mark.parametrize("kernel", [X.histogram, X.histogram_shared])
def test_histograms(device, kernel):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, N).astype(np.int32)
    x[:200] = 17  # a hot bin: many atomics on one element
    want = X.histogram_reference(x)
    hist = np.zeros(256, np.int32)
    vkir.build(kernel, device=device)(x, hist)
    np.testing.assert_array_equal(hist, want)
    for size in SIZES:
        np.testing.assert_array_equal(_interp(kernel, [x, np.zeros(256, np.int32)], size)[1], want)


@pytest.mark.device
def test_sums_with_subgroup_add(device):
    rng = np.random.default_rng(2)
    x = rng.random(N).astype(np.float32)
    want = float(x.astype(np.float64).sum())
    partial = np.zeros(4, np.float32)
    total = np.zeros(1, np.float32)
    vkir.build(X.subgroup_sum, device=device)(x, partial)
    vkir.build(X.sum_atomic, device=device)(x, total)
    assert partial.sum() == pytest.approx(want, rel=1e-5)
    assert total[0] == pytest.approx(want, rel=1e-5)
    for size in SIZES:
        p = _interp(X.subgroup_sum, [x, np.zeros(4, np.float32)], size)[1]
        t = _interp(X.sum_atomic, [x, np.zeros(1, np.float32)], size)[1]
        assert p.sum() == pytest.approx(want, rel=1e-5)
        assert t[0] == pytest.approx(want, rel=1e-5)


def _prefix_sum(run, x):
    m = (len(x) + 127) // 128
    y, sums = np.zeros_like(x), np.zeros(m, np.int32)
    y, sums = run(X.scan_blocks, [x, y, sums])[1:]
    scanned = run(X.scan_blocks, [sums, np.zeros(m, np.int32), np.zeros(1, np.int32)])[1]
    return run(X.add_block_offsets, [y, scanned])[0]


@pytest.mark.device
def test_prefix_sum(device):
    rng = np.random.default_rng(3)
    x = rng.integers(-1000, 1000, N).astype(np.int32)
    want = np.cumsum(x).astype(np.int32)

    def on_device(func, args):
        args = [a.copy() for a in args]
        vkir.build(func, device=device)(*args)
        return args

    np.testing.assert_array_equal(_prefix_sum(on_device, x), want)
    for size in SIZES:
        np.testing.assert_array_equal(
            _prefix_sum(lambda f, a, s=size: _interp(f, a, s), x), want)


@pytest.mark.device
def test_stream_compaction_with_ballot(device):
    rng = np.random.default_rng(4)
    x = rng.integers(-5, 5, N).astype(np.int32)
    want = x[x > 0]
    out, count = np.zeros(N, np.int32), np.zeros(1, np.int32)
    vkir.build(X.compact_positive, device=device)(x, out, count)
    assert count[0] == len(want)
    # subgroups reserve their output ranges in whatever order the device runs them
    np.testing.assert_array_equal(np.sort(out[:count[0]]), np.sort(want))
    for size in SIZES:
        _, out_i, count_i = _interp(X.compact_positive, [x, np.zeros(N, np.int32),
                                                         np.zeros(1, np.int32)], size)
        assert count_i[0] == len(want)
        np.testing.assert_array_equal(out_i[:len(want)], want)  # in order: deterministic


@pytest.mark.device
def test_argmax_with_compare_exchange(device):
    rng = np.random.default_rng(5)
    x = rng.integers(-10**9, 10**9, N).astype(np.int32)
    x[[100, 900, 1400]] = x.max() + 1  # ties: the first index wins
    want = (int(np.argmax(x)), int(x.max()))
    best = np.zeros(1, np.uint64)
    with expect_features(device, "int64", "atomic_int64_buffer"):  # packs (value, index) in 64 bits
        vkir.build(X.argmax, device=device)(x, best)
        assert X.argmax_decode(best[0]) == want == (100, want[1])
    for size in SIZES:
        assert X.argmax_decode(_interp(X.argmax, [x, np.zeros(1, np.uint64)], size)[1][0]) == want


@pytest.mark.device
def test_float_atomic_add(device):
    rng = np.random.default_rng(6)
    index = rng.integers(0, 37, N).astype(np.int32)
    w = rng.standard_normal(N).astype(np.float32)
    want = X.scatter_add_reference(index, w, 37)
    out = np.zeros(37, np.float32)
    vkir.build(X.scatter_add, device=device)(index, w, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    for size in (8, 32):
        got = _interp(X.scatter_add, [index, w, np.zeros(37, np.float32)], size)[2]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.device
def test_benchmark_compares_subgroup_and_tree_sums(device):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.suite import Bench, format_table

    bench = Bench(repeat=2, quick=True)
    bench.sum_subgroup()  # checks both results against numpy
    got = {(m.impl, m.metric) for m in bench.results}
    assert got == {(i, k) for i in ("vkir", "vkir_mirror") for k in ("device_s", "wall_s")}
    assert all(m.workload == "sum_subgroup" and m.size == [1 << 16] for m in bench.results)
    assert "sum_subgroup" in format_table(bench.results)


def test_interp_backend_runs_subgroup_kernels():
    x = np.random.default_rng(7).random(700).astype(np.float32)
    total = np.zeros(1, np.float32)
    vkir.build(X.sum_atomic, device="interp")(x, total)
    assert total[0] == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5)

    sizes = vkir.from_script("""
@T.prim_func
def sizes(y: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = T.subgroup_size()
""")

    y = np.zeros(64, np.int32)
    vkir.build(sizes, device="interp")(y)
    np.testing.assert_array_equal(y, 32)  # the interpreter's default subgroup size
