"""Prefix sums: `vkir.ops.cumsum(x, axis=-1, exclusive=False)` and its kernel templates
`scan_kernel` (a serial scan of chunks along the axis) and `chunk_sum_kernel` (the sum of every
chunk).

Schedule (CPU devices run one workgroup per host thread, 8 invocations per SIMD step, and pay
dearly for barriers): the chunked scan, with no barrier and no shared memory. The array is seen
as (O, R, I) with the scanned axis in the middle. Each invocation owns one chunk of `chunk`
consecutive elements of one (o, i) line and walks it serially. When a line has one chunk the scan
is one pass. Otherwise it is reduce-then-scan: pass 1 sums every chunk, pass 2 scans the chunk
sums (exclusive; the same op recursively), pass 3 scans every chunk again starting from its
offset. Each element is read twice and written once. Where lines are contiguous (I = 1) and R
and the chunk are multiples of 4, the "v=4" configs read and write 4 elements per access: on
llvmpipe every access is a loop over the SIMD lanes whatever its width, and reads go through
texel views, so this cut a 2^24 float32 cumsum from 81 to 25 ms of CPU time (docs/performance.md).
Contiguous lines of LOOKBACK_MIN elements or more (R a multiple of 4) are scanned in one pass
instead (vkir.ops.scan_lookback: each tile's sum published and looked back on; the input read
from memory once).
"""

from __future__ import annotations

import numpy as np

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import Call, axis_index, check_positive, view

DTYPES = ("float32", "int32", "uint32")

# both templates: invocation g = (o, p, i) walks chunk p of line (o, i), keeping a running sum
# from {start}; {step} is what it does with element r (v = x[...] when it reads it), {after}
# what it does with the chunk's total
_CHUNKS = '''
@T.prim_func
def {name}(x: T.Buffer((O * R * I,), "{dt}"), {params}):
    for bx in T.thread_binding((O * P * I + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            g = bx * W + tx
            if g < O * P * I:
                o = g // (P * I)
                p = g // I % P
                i = g % I
                base = o * R * I + i
                run = T.alloc_buffer((1,), "{dt}", scope="local")
                run[0] = {start}
                for c in T.serial(C):
                    r = p * C + c
                    if r < R:
{step}{after}'''


# the same with I == 1 and `v` = 4: invocation (o, p) walks chunk p of line o four elements at a
# time, each a 4-lane vector load (a texel fetch where llvmpipe reads through texel views) into
# the local t; the four adds run in the scalar order, so results equal the scalar template's
_CHUNKS4 = '''
@T.prim_func
def {name}(x: T.Buffer((O * R,), "{dt}"), {params}):
    for bx in T.thread_binding((O * P + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            g = bx * W + tx
            if g < O * P:
                base = g // P * R + g % P * C
                run = T.alloc_buffer((1,), "{dt}", scope="local")
                t = T.alloc_buffer((4,), "{dt}", scope="local")
                e = T.alloc_buffer((4,), "{dt}", scope="local")
                run[0] = {start}
                for c in T.serial(C // 4):
                    if g % P * C + c * 4 < R:
                        for v in T.vectorized(4):
                            t[v] = x[base + c * 4 + v]
{step}{after}'''

_SCAN4 = {False: ["t[0] = run[0] + t[0]", "t[1] = t[0] + t[1]", "t[2] = t[1] + t[2]",
                  "t[3] = t[2] + t[3]", "run[0] = t[3]"],
          True: ["e[0] = run[0]", "e[1] = e[0] + t[0]", "e[2] = e[1] + t[1]",
                 "e[3] = e[2] + t[2]", "run[0] = e[3] + t[3]"]}


def _zero(dtype):
    return "T.float32(0)" if dtype == "float32" else f"T.{dtype}(0)"


_IN_LOOP, _AFTER_LOOP = " " * 24, " " * 16   # the indentation of {step} and {after}


def _env(O, R, I, dtype, chunk, w):
    """The templates' constants (P: the chunks per line), once the arguments are checked."""
    check_positive("scan kernel", O=O, R=R, I=I, chunk=chunk, w=w)
    if dtype not in DTYPES:
        raise ArgumentError(f"scan kernel: dtype must be one of {', '.join(DTYPES)}, got "
                            f"{dtype!r}")
    return dict(O=O, R=R, I=I, P=(R + chunk - 1) // chunk, C=chunk, W=w)


def _check_v(v, R, I, chunk):
    """Refuse a vector width the shape cannot take (the autotuner skips such a config)."""
    if v not in (1, 4):
        raise ArgumentError(f"scan kernel: v must be 1 or 4, got {v!r}")
    if v == 4 and (I != 1 or R % 4 or chunk % 4):
        raise ArgumentError(f"scan kernel: v=4 needs contiguous lines (I=1, got {I}) and R "
                            f"({R}) and chunk ({chunk}) multiples of 4")


CONFIGS = {"cpu": [dict(w=8, v=4), dict(w=64, v=4), dict(w=8), dict(w=64), dict(w=1)],
           "default": [dict(w=64), dict(w=256), dict(w=64, v=4)]}


@autotune(configs=CONFIGS, key=("O", "R", "I", "dtype", "exclusive", "chunk", "with_offsets"))
def scan_kernel(O, R, I, dtype="float32", exclusive=False, chunk=64, with_offsets=False, w=8,
                v=1):
    """The PrimFunc scanning x (O, R, I, flat) along R into y: invocation (o, p, i) walks chunk p
    (elements p*chunk ... of line (o, i)) serially, starting from offsets[o, p, i] when
    `with_offsets` (the exclusive scan of the chunk sums) else from 0; `w` invocations per
    workgroup; `v=4` (contiguous lines): 4-element vector loads and stores (on llvmpipe each
    access is a loop over the SIMD lanes whatever its width, so 4 elements per access cost
    about a quarter as much per element)."""
    env = _env(O, R, I, dtype, chunk, w)
    _check_v(v, R, I, chunk)
    if v == 4:
        pad = _IN_LOOP
        steps = "".join(f"{pad}{line}\n" for line in _SCAN4[bool(exclusive)])
        out = "e" if exclusive else "t"
        steps += f"{pad}for v in T.vectorized(4):\n{pad}    y[base + c * 4 + v] = {out}[v]\n"
        offsets = f'offsets: T.Buffer((O * P,), "{dtype}"), ' if with_offsets else ""
        text = _CHUNKS4.format(name="scan", dt=dtype, params=f'{offsets}y: T.Buffer((O * R,), '
                               f'"{dtype}")', start="offsets[g]" if with_offsets else
                               _zero(dtype), step=steps, after="")
        return from_script(text, env=env, file="<vkir.ops.scan>")
    pad = _IN_LOOP
    if exclusive:
        update = f"{pad}y[base + r * I] = run[0]\n{pad}run[0] = run[0] + v\n"
    else:
        update = f"{pad}run[0] = run[0] + v\n{pad}y[base + r * I] = run[0]\n"
    offsets = f'offsets: T.Buffer((O * P * I,), "{dtype}"), ' if with_offsets else ""
    text = _CHUNKS.format(name="scan", dt=dtype, params=f'{offsets}y: T.Buffer((O * R * I,), '
                          f'"{dtype}")', start="offsets[g]" if with_offsets else _zero(dtype),
                          step=f"{pad}v = x[base + r * I]\n{update}", after="")
    return from_script(text, env=env, file="<vkir.ops.scan>")


@autotune(configs=CONFIGS, key=("O", "R", "I", "dtype", "chunk"))
def chunk_sum_kernel(O, R, I, dtype="float32", chunk=64, w=8, v=1):
    """The PrimFunc writing s[o, p, i] = the sum of chunk p of line (o, i) of x (O, R, I):
    the first pass of the chunked scan (`v=4`: 4-element vector loads into four running sums,
    added at the end)."""
    env = _env(O, R, I, dtype, chunk, w)
    _check_v(v, R, I, chunk)
    if v == 4:
        pad = _IN_LOOP
        text = _CHUNKS4.format(
            name="chunk_sums", dt=dtype, params=f's: T.Buffer((O * P,), "{dtype}")',
            start=_zero(dtype),
            step=f"{pad}for v in T.vectorized(4):\n{pad}    e[v] = e[v] + t[v]\n",
            after=f"{_AFTER_LOOP}s[g] = e[0] + e[1] + (e[2] + e[3])\n")
        init = (f"{_AFTER_LOOP}for v in T.vectorized(4):\n{_AFTER_LOOP}    e[v] = {_zero(dtype)}\n")
        text = text.replace(f"{_AFTER_LOOP}for c in T.serial(C // 4):", init +
                            f"{_AFTER_LOOP}for c in T.serial(C // 4):", 1)
        return from_script(text, env=env, file="<vkir.ops.scan sums>")
    text = _CHUNKS.format(name="chunk_sums", dt=dtype, params=f's: T.Buffer((O * P * I,), '
                          f'"{dtype}")', start=_zero(dtype),
                          step=f"{_IN_LOOP}run[0] = run[0] + x[base + r * I]\n",
                          after=f"{_AFTER_LOOP}s[g] = run[0]\n")
    return from_script(text, env=env, file="<vkir.ops.scan sums>")


def chunk_for(O, R, I) -> int:
    """The chunk length for an (O, R, I) scan on a CPU device: one chunk per line when the
    lines alone give enough invocations (or are short), else chunks of 64-256 elements so that
    about 16384 invocations share the work (lavapipe, 2^24 float32: pass 3 takes 0.07 s with
    chunks of 256, 0.11 s with chunks of 1024; pass 1 about the same for both)."""
    lines = O * I
    if R <= 256 or lines >= 4096:
        return R
    chunk = -(-(lines * R) // 16384)
    return int(min(256, max(64, 1 << int(chunk - 1).bit_length())))


LOOKBACK_MIN = 1 << 17   # from this line length a contiguous scan is one pass (scan_lookback)


def _scan_into(dev, xd, res, O, R, I, dtype, exclusive):
    from ..aliasing import overlaps
    from ..api import empty

    chunk = chunk_for(O, R, I)
    # (not in place: the look-back's fallback may read a tile its owner is overwriting)
    if I == 1 and R % 4 == 0 and R >= LOOKBACK_MIN and chunk < R and not overlaps(res, xd):
        from .scan_lookback import lookback_scan
        from .scratch import workspace

        with workspace(dev) as ws:
            lookback_scan(dev, ws, xd, res, O, R, dtype, exclusive)
        return
    if chunk >= R:
        k = scan_kernel.kernel(dev, O=O, R=R, I=I, dtype=dtype, exclusive=exclusive, chunk=R,
                               with_offsets=False)
        k(xd, res)
        return
    P = (R + chunk - 1) // chunk
    sums = empty((O * P * I,), dtype, dev)
    chunk_sum_kernel.kernel(dev, O=O, R=R, I=I, dtype=dtype, chunk=chunk)(xd, sums)
    offsets = empty((O * P * I,), dtype, dev)
    _scan_into(dev, sums, offsets, O, P, I, dtype, True)
    k = scan_kernel.kernel(dev, O=O, R=R, I=I, dtype=dtype, exclusive=exclusive, chunk=chunk,
                           with_offsets=True)
    k(xd, offsets, res)


def cumsum(x, axis=-1, exclusive=False, device=None, out=None):
    """The cumulative sum of x along `axis` (None: over the flattened array), like
    numpy.cumsum; `exclusive=True` gives the sums of the elements before each one (starting
    at 0). Takes float32, int32 and uint32; the result keeps x's dtype (integer sums wrap
    around at 32 bits, where numpy would widen to int64)."""
    call = Call("cumsum", {"x": x}, device, out, dtypes=DTYPES)
    X = call.arrays["x"]
    shape = tuple(X.shape)
    dtype = np.dtype(X.dtype).name
    if axis is None:
        shape = (int(X.size),)
        k = 0
    else:
        if not shape:
            raise ArgumentError(f"vkir.ops.cumsum: axis {axis} given for a 0-d array")
        k = axis_index("cumsum", axis, len(shape))
    res = call.result(shape, dtype)
    if X.size == 0:
        return call.finish(res)
    O = int(np.prod(shape[:k], dtype=np.int64))
    R, I = shape[k], int(np.prod(shape[k + 1:], dtype=np.int64))
    total = O * R * I
    _scan_into(call.device, view(call.device_array("x"), (total,)), view(res, (total,)),
               O, R, I, dtype, bool(exclusive))
    return call.finish(res)


cumsum.kernel = scan_kernel
cumsum.chunk_sum_kernel = chunk_sum_kernel
