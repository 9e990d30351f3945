"""The one-pass scan behind `vkir.ops.cumsum` for long contiguous lines: `lookback_scan_kernel`
(a decoupled look-back with fallback) and `zero_kernel` (its status words cleared per call).

Each invocation scans one tile of C consecutive elements of a line, 4 per access, with no
barrier, no shared memory and no subgroup operation (on lavapipe each costs more than the scan
itself: a row-wise form with subgroup scans, or with per-row sums in shared memory, took 2x the
CPU time of this one). The tile is

1. claimed: the invocation takes the next tile number from a counter (atomic), so tiles are
   started in order whatever order the device runs workgroups in (lavapipe gives each host
   thread a contiguous range of workgroups: with tiles fixed by workgroup, the second thread's
   tiles found nothing published before them);
2. summed (the read from memory) and the sum published (the tile's aggregate, status 1);
3. given its exclusive prefix by looking back over the tiles before it in its line to the
   nearest one with its inclusive prefix published (status 2; or the line's start), then
   adding the aggregates of the tiles after that one in order, going forward: one not
   published yet (status 0) is asked again up to SPIN times (its claimer runs, so it comes
   soon) and then summed here from the data with the same operations its owner uses, so that
   no invocation ever waits on another for good (no forward-progress assumption); then the
   tile's inclusive prefix is published. Every inclusive prefix is thus the same chain
   I(p) = I(p - 1) + A(p) whichever tiles published first: float results are the same bits
   from run to run;
4. scanned into y, reading the tile again (from the cache).

C is 2^k + 64 (chunk_of): tiles 2^k elements apart put the 8 SIMD lanes' streams in one L1
set (a copy walking chunks of 8192: 14.5 ms of CPU for 2^24 float32 on lavapipe, 11.8 with 8256). Integer
sums are exact (wrapping); float sums are added in another order than numpy's serial one (as
the chunked scan's are), the same order in every run.
"""

from __future__ import annotations

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import check_positive

_KERNEL = """
@T.prim_func
def scan_lookback(x: T.Buffer((O * R,), "{dt}"), y: T.Buffer((O * R,), "{dt}"),
                  agg: T.Buffer((NT,), "uint32"), incl: T.Buffer((NT,), "uint32"),
                  status: T.Buffer((NT + 1,), "uint32")):
    for bx in T.thread_binding((NT + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            if bx * W + tx < NT:
                g = T.cast(T.atomic_add(status[NT], T.uint32(1)), "int32")
                p = g % PL
                base = g // PL * R + p * C
                n = T.min(R - p * C, C)
                e = T.alloc_buffer((4,), "{dt}", scope="local")
                for v in T.vectorized(4):
                    e[v] = {zero}
                for c in T.serial(C // 4):
                    if c * 4 < n:
                        for v in T.vectorized(4):
                            e[v] = e[v] + x[base + c * 4 + v]
                total = e[0] + e[1] + (e[2] + e[3])
                T.atomic_exchange(agg[g], T.reinterpret(total, "uint32"))
                T.atomic_exchange(status[g], T.uint32(1))
                run = T.alloc_buffer((1,), "{dt}", scope="local")
                run[0] = {zero}
                j = T.alloc_buffer((2,), "int32", scope="local")
                j[0] = p - 1
                j[1] = -1
                while j[0] >= 0:
                    if T.atomic_add(status[g - p + j[0]], T.uint32(0)) == T.uint32(2):
                        j[1] = j[0]
                        j[0] = -1
                    else:
                        j[0] = j[0] - 1
                if j[1] >= 0:
                    run[0] = T.reinterpret(T.atomic_add(incl[g - p + j[1]], T.uint32(0)),
                                           "{dt}")
                j[0] = j[1] + 1
                j[1] = 0
                while j[0] < p:
                    q = g - p + j[0]
                    if T.atomic_add(status[q], T.uint32(0)) >= T.uint32(1):
                        run[0] = run[0] + T.reinterpret(T.atomic_add(agg[q], T.uint32(0)),
                                                        "{dt}")
                        j[0] = j[0] + 1
                    elif j[1] < SPIN:
                        j[1] = j[1] + 1
                    else:
                        for v in T.vectorized(4):
                            e[v] = {zero}
                        for c in T.serial(C // 16):
                            for k in T.unroll(4):
                                for v in T.vectorized(4):
                                    e[v] = e[v] + x[base - (p - j[0]) * C + c * 16 + k * 4 + v]
                        run[0] = run[0] + (e[0] + e[1] + (e[2] + e[3]))
                        j[0] = j[0] + 1
                T.atomic_exchange(incl[g], T.reinterpret(run[0] + total, "uint32"))
                T.atomic_exchange(status[g], T.uint32(2))
                u = T.alloc_buffer((4,), "{dt}", scope="local")
                for c in T.serial(C // 4):
                    if c * 4 < n:
                        for v in T.vectorized(4):
                            u[v] = x[base + c * 4 + v]
{scan}                        for v in T.vectorized(4):
                            y[base + c * 4 + v] = {out}[v]
"""

# the step once u holds 4 elements: the values to write (the inclusive prefix in u, or the
# exclusive one in o) from run[0], the sum of everything before them, which then moves on
_PAD = " " * 24
_SCAN = {
    False: ["u[0] = run[0] + u[0]", "u[1] = u[0] + u[1]", "u[2] = u[1] + u[2]",
            "u[3] = u[2] + u[3]", "run[0] = u[3]"],
    True: ['o = T.alloc_buffer((4,), "{dt}", scope="local")', "o[0] = run[0]",
           "o[1] = o[0] + u[0]", "o[2] = o[1] + u[1]", "o[3] = o[2] + u[2]",
           "run[0] = o[3] + u[3]"],
}

DTYPES = ("float32", "int32", "uint32")
SPIN = 1024   # times a tile whose aggregate is missing is asked again before it is summed here


def tiles(R: int, chunk: int) -> int:
    """The tiles of a line of R elements."""
    return -(-R // chunk)


def chunk_of(O: int, R: int, log_chunk: int) -> int:
    """The tile length for O lines of R: 2^k + 64 elements (the 64 keeps the SIMD lanes'
    tiles out of one cache set) with k as large as leaves about 128 tiles in all, between
    min(12, log_chunk) and log_chunk (lavapipe, 2^24 float32, CPU ms per scan: tiles of
    2^10 + 16: 48, 2^12 + 64: 28, 2^13 + 64: 23.5, 2^15 + 64: 20.5; each tile costs its claim,
    publications and look-back). Past 2^15 an invocation's two walks over its tile near
    llvmpipe 22.3's budget of 65535 loop iterations (with fallbacks)."""
    k = max(1, O * R // 128).bit_length() - 1
    return (1 << max(min(12, log_chunk), min(k, log_chunk))) + 64


@autotune(configs={"cpu": [dict(w=8, log_chunk=15), dict(w=8, log_chunk=13)],
                   "default": [dict(w=64, log_chunk=8), dict(w=64, log_chunk=10)]},
          key=("O", "R", "dtype", "exclusive"))
def lookback_scan_kernel(O, R, dtype="float32", exclusive=False, w=8, log_chunk=15, spin=SPIN,
                         chunk=None):
    """The PrimFunc scanning each of the O contiguous lines of R elements of x into y
    (inclusive, or `exclusive`) in one pass: one invocation per tile of `chunk` consecutive
    elements (default `chunk_of(O, R, log_chunk)`), `w` invocations per workgroup; agg, incl
    and status (tiles + 1 words, zeroed before the call) are its look-back state (module
    docstring); `spin`: how many times a tile without a published sum is asked again before
    it is summed from the data (16 elements per iteration: on llvmpipe 22.3 an invocation's
    loops stop after 65535 iterations in all, and vkir then raises, so the walk's worst case
    keeps far below that)."""
    if chunk is None:
        check_positive("look-back scan kernel", O=O, R=R, log_chunk=log_chunk)
        chunk = chunk_of(O, R, log_chunk)
    check_positive("look-back scan kernel", O=O, R=R, w=w, chunk=chunk)
    if dtype not in DTYPES:
        raise ArgumentError(f"look-back scan kernel: dtype must be one of {', '.join(DTYPES)}, "
                            f"got {dtype!r}")
    if R % 4 or chunk % 16:
        raise ArgumentError(f"look-back scan kernel: R ({R}) must be a multiple of 4 and chunk "
                            f"({chunk}) of 16")
    PL = tiles(R, chunk)
    zero = f"T.{dtype}(0)"
    scan = "".join(f"{_PAD}{ln.format(dt=dtype)}\n" for ln in _SCAN[bool(exclusive)])
    text = _KERNEL.format(dt=dtype, zero=zero, scan=scan, out="o" if exclusive else "u")
    env = dict(O=O, R=R, W=w, C=chunk, PL=PL, NT=O * PL, SPIN=int(spin))
    return from_script(text, env=env, file="<vkir.ops.scan_lookback>")


_ZERO = '''
@T.prim_func
def zero_words(a: T.Buffer((N,), "uint32")):
    for bx in T.thread_binding((N + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            if bx * 64 + tx < N:
                a[bx * 64 + tx] = T.uint32(0)
'''


@autotune(configs={"cpu": [dict()], "default": [dict()]}, key=("N",))
def zero_kernel(N):
    """The PrimFunc setting the N words of a to 0 (the look-back's status words, per call: a
    kernel rather than a host write, so that it is recorded in a `vkir.sequence()` too)."""
    check_positive("zero kernel", N=N)
    return from_script(_ZERO, env=dict(N=N), file="<vkir.ops.scan_lookback zero>")


def lookback_scan(dev, ws, xd, res, O: int, R: int, dtype: str, exclusive: bool) -> None:
    """Scan the O lines of R contiguous elements of xd into res with `lookback_scan_kernel`,
    its state from the workspace `ws` (vkir.ops.scratch)."""
    from ..driver.sequences import current, sequence

    k = lookback_scan_kernel.kernel(dev, O=O, R=R, dtype=dtype, exclusive=exclusive)
    PL = tiles(R, chunk_of(O, R, k.config["log_chunk"]))
    nt = O * PL
    agg, incl = ws.take((nt,), "uint32"), ws.take((nt,), "uint32")
    status = ws.take((nt + 1,), "uint32")
    zero = zero_kernel.kernel(dev, N=nt + 1)
    if current() is not None:   # recorded in the caller's sequence
        zero(status)
        k(xd, res, agg, incl, status)
        return
    with sequence(dev) as seq:  # one submission for both
        zero(status)
        k(xd, res, agg, incl, status)
    seq.wait()
