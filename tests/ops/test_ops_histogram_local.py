"""vkir.ops.histogram's private-counts kernel (many elements per bin): equal bins found by
numpy's estimate-and-correct, given edges by binary search, both equal to numpy's counts for
values on every edge and one float step either side of it (denormals aside), outside the range and NaN."""

import numpy as np
import pytest

from vkir import ops


def _edge_heavy(edges, n, seed):
    e = edges.astype(np.float32)
    near = np.concatenate([e, np.nextafter(e, np.float32(np.inf)),
                           np.nextafter(e, np.float32(-np.inf)), [np.nan, -1e30, 1e30]])
    # (no denormals: SwiftShader flushes them to zero, which moves the neighbours of a 0 edge)
    near = near[~(np.abs(near) < np.finfo(np.float32).tiny)]
    rng = np.random.default_rng(seed)
    lo, hi = float(e[0]), float(e[-1])
    x = rng.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), n).astype(np.float32)
    x[: near.size * 8] = np.tile(near, 8)[: min(n, near.size * 8)]
    return rng.permutation(x)


@pytest.mark.parametrize("bins, range_", [(256, (-4, 4)), (7, (-0.3, 1.1)), (1000, (0, 3))])
def test_equal_bins_match_numpy(device, bins, range_):
    edges = np.histogram(np.zeros(0, np.float32), bins, range=range_)[1]
    x = _edge_heavy(edges, 70 * bins, bins)
    got, got_edges = ops.histogram(x, bins, range=range_, device=device)
    want, want_edges = np.histogram(x, bins, range=range_)
    np.testing.assert_array_equal(got_edges, want_edges)
    np.testing.assert_array_equal(got, want)


def test_given_edges_match_numpy(device):
    edges = np.float32([-2, -1.5, -0.1, 0, 0.25, 3, 3.5])
    x = _edge_heavy(edges, 5000, 1)
    np.testing.assert_array_equal(ops.histogram(x, edges, device=device)[0],
                                  np.histogram(x, edges)[0])
