"""Stable sorts: `vkir.ops.sort(x, axis=-1)` and `vkir.ops.argsort(x, axis=-1)`, and their kernel
templates `block_sort_kernel` and `merge_kernel`.

Schedule: a merge sort by ranks, with no barrier, no shared memory and no data-dependent
loop trip counts (CPU devices run invocations 8 at a time in SIMD and one workgroup per host
thread). The array is seen as (O, R, I) lines sorted along R. Pass 0 cuts every line into blocks
of `block` elements and each invocation sorts one block by counting, for each element, the
elements that must come before it (all pairs: branch-free work). Each following pass merges
pairs of sorted runs of `width` elements: every invocation takes one element, finds by binary
search how many elements of the other run come before it, and writes it straight to its merged
position. Ties keep their input order (elements of the left run first), so both sorts are
stable; float NaNs sort after everything else, as numpy puts them. One line of RADIX_MIN
elements or more is radix sorted instead (vkir.ops.radix: up to four passes over the data, those
whose digit varies; four were about 9x faster than the merge passes at 2^20 on lavapipe).
"""

from __future__ import annotations

import numpy as np

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import Call, axis_index, check_positive, view
from .radix import radix_sort

DTYPES = ("float32", "int32", "uint32")

_BLOCK = '''
@T.prim_func
def block_sort(x: T.Buffer((S * R,), "{dt}"), ko: T.Buffer((S * R,), "{dt}"){idx_out}):
    for bx in T.thread_binding((S * NB + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            g = bx * W + tx
            if g < S * NB:
                s = g // NB
                r0 = g % NB * B
                kb = T.alloc_buffer((B,), "{dt}", scope="local")
                for a in T.serial(B):
                    kb[a] = {zero}
                    if r0 + a < R:
                        kb[a] = x[{src}]
                rank = T.alloc_buffer((1,), "int32", scope="local")
                for a in T.serial(B):
                    if r0 + a < R:
                        ka = kb[a]
                        rank[0] = 0
                        for b in T.serial(B):
                            kc = kb[b]
                            if r0 + b < R and ({lt_ca} or (b < a and not {lt_ac})):
                                rank[0] = rank[0] + 1
                        ko[{dst}] = ka
{store_idx}'''

_MERGE = '''
@T.prim_func
def merge(k: T.Buffer((S * R,), "{dt}"), {idx_in}ko: T.Buffer((S * R,), "{dt}"){idx_out}):
    for bx in T.thread_binding((S * R + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            g = bx * W + tx
            if g < S * R:
                s = g // R
                r = g % R
                q = r // WIDTH
                start = q // 2 * (2 * WIDTH)
                left = q % 2 == 0
                bs = T.select(left, start + WIDTH, start)
                be = T.min(bs + WIDTH, R)
                ka = k[g]
                lo = T.alloc_buffer((1,), "int32", scope="local")
                hi = T.alloc_buffer((1,), "int32", scope="local")
                lo[0] = bs
                hi[0] = T.max(be, bs)
                for t in T.serial(STEPS):
                    if lo[0] < hi[0]:
                        m = (lo[0] + hi[0]) // 2
                        kc = k[s * R + m]
                        if (left and {lt_ca}) or (not left and not {lt_ac}):
                            lo[0] = m + 1
                        else:
                            hi[0] = m
                rr = start + r % WIDTH + (lo[0] - bs)
                ko[{dst}] = ka
{store_idx}'''


def _lt(dtype, a, b):
    """Script text for `a` before `b` (NaNs last for floats)."""
    if dtype.startswith("float"):
        return f"({a} < {b} or ({b} != {b} and {a} == {a}))"
    return f"({a} < {b})"


def _zero(dtype):
    return f"T.{dtype}(0)"


def _dst(final, r):
    """Where element `r` of line s goes: the (O, R, I) layout when final, else line-major."""
    return f"s // I * (R * I) + ({r}) * I + s % I" if final else f"s * R + {r}"


def _check(O, R, I, dtype, w, **more):
    check_positive("sort kernel", O=O, R=R, I=I, w=w, **more)
    if dtype not in DTYPES:
        raise ArgumentError(f"sort kernel: dtype must be one of {', '.join(DTYPES)}, got "
                            f"{dtype!r}")


@autotune(configs={"cpu": [dict(w=8), dict(w=64)], "default": [dict(w=64), dict(w=256)]},
          key=("O", "R", "I", "dtype", "block", "with_index", "final"))
def block_sort_kernel(O, R, I, dtype="float32", block=16, with_index=False, final=False, w=8):
    """The PrimFunc sorting every block of `block` elements of every line of x (O, R, I, flat)
    into ko (with the positions in io when `with_index`): line-major (S = O*I lines of R) unless
    `final`, when it writes x's own layout."""
    _check(O, R, I, dtype, w, block=block)
    pad = " " * 24
    text = _BLOCK.format(
        dt=dtype, zero=_zero(dtype), src="s // I * (R * I) + (r0 + a) * I + s % I",
        lt_ca=_lt(dtype, "kc", "ka"), lt_ac=_lt(dtype, "ka", "kc"),
        dst=_dst(final, "r0 + rank[0]"),
        idx_out=', io: T.Buffer((S * R,), "int32")' if with_index else "",
        store_idx=f"{pad}io[{_dst(final, 'r0 + rank[0]')}] = r0 + a\n" if with_index else "")
    env = dict(S=O * I, R=R, I=I, B=block, NB=(R + block - 1) // block, W=w)
    return from_script(text, env=env, file="<vkir.ops.sorting block>")


@autotune(configs={"cpu": [dict(w=8), dict(w=64)], "default": [dict(w=64), dict(w=256)]},
          key=("O", "R", "I", "dtype", "width", "with_index", "final"))
def merge_kernel(O, R, I, dtype="float32", width=16, with_index=False, final=False, w=8):
    """The PrimFunc merging the sorted runs of `width` elements of every line of k (S = O*I
    lines of R, line-major) pairwise into ko (and the positions io into io_out when
    `with_index`): one invocation per element, a binary search in the other run."""
    _check(O, R, I, dtype, w, width=width)
    pad = " " * 16
    text = _MERGE.format(
        dt=dtype, lt_ca=_lt(dtype, "kc", "ka"), lt_ac=_lt(dtype, "ka", "kc"),
        dst=_dst(final, "rr"),
        idx_in='io: T.Buffer((S * R,), "int32"), ' if with_index else "",
        idx_out=', io_out: T.Buffer((S * R,), "int32")' if with_index else "",
        store_idx=f"{pad}io_out[{_dst(final, 'rr')}] = io[g]\n" if with_index else "")
    env = dict(S=O * I, R=R, I=I, WIDTH=width, STEPS=int(width).bit_length() + 1, W=w)
    return from_script(text, env=env, file="<vkir.ops.sorting merge>")


BLOCK = 16  # elements per block of pass 0 (measured on lavapipe: 8-32 are within 10%)
RADIX_MIN = 1 << 14  # from this length a single line is radix sorted (up to 4 passes over the data)


def _sort(op, x, axis, device, out):
    with_index = op == "argsort"
    call = Call(op, {"x": x}, device, out, dtypes=DTYPES)
    X = call.arrays["x"]
    dtype = np.dtype(X.dtype).name
    shape = tuple(X.shape)
    if axis is None:
        shape, k = (int(X.size),), 0
    else:
        if not shape:
            raise ArgumentError(f"vkir.ops.{op}: axis {axis} given for a 0-d array")
        k = axis_index(op, axis, len(shape))
    res = call.result(shape, "int32" if with_index else dtype)
    if X.size == 0:
        return call.finish(res)
    from ..api import empty

    O = int(np.prod(shape[:k], dtype=np.int64))
    R, I = shape[k], int(np.prod(shape[k + 1:], dtype=np.int64))
    n, dev = O * R * I, call.device
    xd = view(call.device_array("x"), (n,))
    flat = view(res, (n,))
    if O * I == 1 and R >= RADIX_MIN:   # one long line: the radix sort (vkir.ops.radix)
        radix_sort(dev, xd, flat, dtype, with_index)
        return call.finish(res)
    block = min(BLOCK, R)
    widths = []
    while block * (1 << len(widths)) < R:
        widths.append(block << len(widths))
    keys = [empty((n,), dtype, dev) for _ in range(2 if widths else 0)]
    idx = [empty((n,), "int32", dev) for _ in range(2 if widths and with_index else 0)]

    def target(step):  # the buffers pass `step` writes: the result after the last pass
        last = step == len(widths)
        if with_index:
            return [keys[step % 2], flat if last else idx[step % 2]]
        return [flat if last else keys[step % 2]]

    if not widths:  # one block per line: pass 0 writes the result
        out_keys = [empty((n,), dtype, dev)] if with_index else []
        block_sort_kernel.kernel(dev, O=O, R=R, I=I, dtype=dtype, block=block,
                                 with_index=with_index, final=True)(xd, *(out_keys or [flat]),
                                                                    *([flat] if with_index else []))
        return call.finish(res)
    block_sort_kernel.kernel(dev, O=O, R=R, I=I, dtype=dtype, block=block,
                             with_index=with_index, final=False)(xd, *target(0))
    for step, width in enumerate(widths, start=1):
        final = step == len(widths)
        k = merge_kernel.kernel(dev, O=O, R=R, I=I, dtype=dtype, width=width,
                                with_index=with_index, final=final)
        src = [keys[(step - 1) % 2]] + ([idx[(step - 1) % 2]] if with_index else [])
        k(*src, *target(step))
    return call.finish(res)


def sort(x, axis=-1, device=None, out=None):
    """x sorted along `axis` (None: the flattened array), like numpy.sort: stable, NaNs last.
    Takes float32, int32 and uint32."""
    return _sort("sort", x, axis, device, out)


def argsort(x, axis=-1, device=None, out=None):
    """The int32 indices that sort x along `axis` (None: the flattened array), like
    numpy.argsort(kind="stable"): equal elements keep their order, NaNs come last."""
    return _sort("argsort", x, axis, device, out)


sort.kernel = argsort.kernel = merge_kernel
sort.block_kernel = argsort.block_kernel = block_sort_kernel
