"""`vkir.ops.histogram(x, bins=10, range=None)`, like numpy.histogram, and its kernel template
`histogram_kernel`.

numpy's bin edges are computed on the host exactly as numpy computes them (numpy itself gives
them), and the device finds each element's bin by binary search over those edges: the same
answer as numpy's for every element, the last bin closed on the right, elements outside the
range (and NaNs) not counted. Schedule (no shared memory, no barrier: on CPU devices a
workgroup is one host thread): each invocation counts `per` consecutive elements; with many
elements per bin into a private local array of counters, added to the histogram with one atomic
per non-zero bin at the end (`local_histogram_kernel`), else with one global atomic add each
(`histogram_kernel`).
"""

from __future__ import annotations

import numpy as np

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import Call, check_positive, view

# both templates: each invocation walks its PER consecutive elements and, for each one inside
# [edges[0], edges[NB]], finds its bin lo[0] ({find}) and counts it ({count}); {setup} and
# {finish} are the private counters' zeroing and flushing (empty for one atomic per element)
_WALK = '''
@T.prim_func
def {name}(x: T.Buffer((N,), "float32"), edges: T.Buffer((NB + 1,), "float32"),
           hist: T.Buffer((NB,), "int32")):
    for bx in T.thread_binding((N + PER * W - 1) // (PER * W), "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
{setup}            lo = T.alloc_buffer((1,), "int32", scope="local")
            hi = T.alloc_buffer((1,), "int32", scope="local")
            first = edges[0]
            last = edges[NB]
            for c in T.serial(PER):
                e = (bx * W + tx) * PER + c
                if e < N:
                    v = x[e]
                    if v >= first and v <= last:
{find}
{count}
{finish}'''

_COUNTERS = """\
            counts = T.alloc_buffer((NB,), "int32", scope="local")
            for b in T.serial(NB):
                counts[b] = 0
"""

_FLUSH = """\
            for b in T.serial(NB):
                if counts[b] != 0:
                    T.atomic_add(hist[b], counts[b])
"""

_SEARCH = """\
                        lo[0] = 0
                        hi[0] = NB - 1
                        for t in T.serial(STEPS):
                            if lo[0] < hi[0]:
                                m = (lo[0] + hi[0] + 1) // 2
                                if edges[m] <= v:
                                    lo[0] = m
                                else:
                                    hi[0] = m - 1"""

# equal bins: numpy's own estimate (v - first) * bins / (last - first), then one step down
# where the edge is above v and one up where the next edge is at or below it (numpy's fix-up)
_ESTIMATE = """\
                        lo[0] = T.min(T.cast((v - first) * (T.float32(NB) / (last - first)),
                                             "int32"), NB - 1)
                        if edges[lo[0]] > v:
                            lo[0] = lo[0] - 1
                        elif lo[0] < NB - 1 and edges[lo[0] + 1] <= v:
                            lo[0] = lo[0] + 1"""

_PAD = " " * 24


def _env(N, bins, per, w):
    """The templates' constants, once N, bins, per and w are checked."""
    check_positive("histogram kernel", N=N, bins=bins, per=per, w=w)
    return dict(N=N, NB=bins, PER=per, W=w, STEPS=int(bins).bit_length() + 1)


LOCAL_BINS = 1024  # up to this many bins each invocation counts into a private local array


@autotune(configs={"cpu": [dict(per=16, w=8), dict(per=64, w=8), dict(per=4, w=64)],
                   "default": [dict(per=4, w=256), dict(per=1, w=256)]},
          key=("N", "bins"))
def histogram_kernel(N, bins, per=16, w=8):
    """The PrimFunc adding to hist (int32, `bins`) the count of x's N elements in each bin of
    `edges` (bins + 1 ascending float32 edges): bin b holds edges[b] <= v < edges[b + 1], the
    last bin also v == edges[bins]."""
    env = _env(N, bins, per, w)
    text = _WALK.format(name="histogram", setup="", find=_SEARCH, finish="",
                        count=f"{_PAD}T.atomic_add(hist[lo[0]], 1)")
    return from_script(text, env=env, file="<vkir.ops.counting>")


@autotune(configs={"cpu": [dict(per=4096, w=8), dict(per=16384, w=8), dict(per=1024, w=8)],
                   "default": [dict(per=256, w=64), dict(per=1024, w=64)]},
          key=("N", "bins", "uniform"))
def local_histogram_kernel(N, bins, uniform=False, per=4096, w=8):
    """The PrimFunc of `histogram_kernel` with private counts: each invocation counts its `per`
    consecutive elements into a local array of `bins` counters, then adds the non-zero ones
    to hist with one atomic each (bins <= LOCAL_BINS): per / bins times fewer atomics. With
    `uniform` (equal bins, as numpy makes for an int `bins`) an element's bin is computed and
    corrected against the edges as numpy does, else found by binary search."""
    env = _env(N, bins, per, w)
    if bins > LOCAL_BINS:
        raise ArgumentError(f"histogram kernel: {bins} bins; private counts take at most "
                            f"{LOCAL_BINS}")
    env["PER"] = min(per, 32768)   # (llvmpipe stops loops after 65535 iterations)
    text = _WALK.format(name="histogram_local", setup=_COUNTERS,
                        find=_ESTIMATE if uniform else _SEARCH, finish=_FLUSH,
                        count=f"{_PAD}counts[lo[0]] = counts[lo[0]] + 1")
    return from_script(text, env=env, file="<vkir.ops.counting local>")


def histogram(x, bins=10, range=None, device=None, out=None):  # noqa: A002 - numpy's name
    """(hist, bin_edges) of x's elements, like numpy.histogram(x, bins, range): `bins` is a
    number of equal bins or an increasing sequence of edges. hist counts in int32 (a DeviceArray
    when x is one, else numpy's int64 array), bin_edges is always a numpy array (numpy's own edges,
    in float32 as numpy gives them for float32 data)."""
    call = Call("histogram", {"x": x}, device, out)
    X = call.arrays["x"]
    uniform = isinstance(bins, (int, np.integer)) and not isinstance(bins, (bool, np.bool_))
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, (bool, np.bool_)):
        if bins < 1:
            raise ArgumentError(f"vkir.ops.histogram: bins must be positive, got {bins}")
        if range is None:
            if X.size == 0:
                lo = hi = 0.0
            else:
                from .reduce import max as vmax, min as vmin

                xd = call.device_array("x")
                lo, hi = np.float32(vmin(xd).numpy()), np.float32(vmax(xd).numpy())
            if not (np.isfinite(lo) and np.isfinite(hi)):
                raise ArgumentError(f"vkir.ops.histogram: the data's range [{lo}, {hi}] is not "
                                    "finite; pass range=")
            range = (lo, hi)  # float32 scalars, as numpy takes a.min() and a.max()
        try:
            _, edges = np.histogram(np.zeros(0, np.float32), bins=int(bins), range=range)
        except ValueError as exc:
            raise ArgumentError(f"vkir.ops.histogram: {exc}") from None
    else:
        edges = np.asarray(bins)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) < 0):
            raise ArgumentError("vkir.ops.histogram: bins must be an int or a 1-d increasing "
                                f"sequence of at least 2 edges, got {bins!r}")
    edges32 = np.ascontiguousarray(edges, np.float32)
    nb = edges32.size - 1
    from ..api import array

    res = call.result((nb,), "int32") if call.out is not None and call.returns_device else None
    if res is None:
        res = array(np.zeros(nb, np.int32), device=call.device)
    else:
        res.write(np.zeros(nb, np.int32))  # the counts accumulate into a DeviceArray out=
    if X.size:
        # private counts when there are many elements per bin (vkir bench: 2^24 into 256)
        template = local_histogram_kernel if nb <= LOCAL_BINS and X.size >= 64 * nb else \
            histogram_kernel
        more = dict(uniform=uniform) if template is local_histogram_kernel else {}
        k = template.kernel(call.device, N=int(X.size), bins=nb, **more)
        k(view(call.device_array("x"), (X.size,)), array(edges32, device=call.device), res)
    if call.returns_device:
        return res, edges
    counts = res.numpy().astype(np.int64)
    if out is not None:
        call.out[...] = counts
        return (out if call.out_tensor is None else call.out_tensor), edges
    if call.returns_torch:
        import torch

        return torch.from_numpy(counts), torch.from_numpy(np.asarray(edges))
    return counts, edges


histogram.kernel = histogram_kernel
histogram.local_kernel = local_histogram_kernel
