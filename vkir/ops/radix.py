"""The LSD radix sort behind `vkir.ops.sort`/`argsort` for long lines, and its kernel templates
`radix_count_kernel`, `radix_offsets_kernel` and `radix_scatter_kernel`.

Schedule for CPU devices (one workgroup per host thread, 8 invocations per SIMD step, barriers
expensive, every storage-buffer access a loop over the SIMD lanes): no shared memory in the
passes over the data. The keys are 32-bit and order-preserving (floats: the sign bit flipped
for positives, all bits for negatives, -0 as 0 (they tie, as in numpy), every NaN the largest
key; int32: the sign bit flipped; uint32 as they are). Up to four passes of 8 bits each (8
bits, not 11: an 11-bit scatter spreads its writes over 8x more places and cost twice an
8-bit one on lavapipe, so three 11-bit passes lost to four 8-bit ones); in each pass the line
is cut into P chunks of C consecutive elements and

1. every invocation counts the digits of its chunk into a local array of 256 counters and
   writes them digit-major: counts[d * P + p];
2. `radix_offsets_kernel` turns those counts into each (digit, chunk)'s first output position
   (all smaller digits first, then the same digit of earlier chunks);
3. every invocation walks its chunk again in order and writes each element to its digit's next
   position, so the pass is stable, and so is the sort.

The first count also writes, per chunk, the AND and the OR of its keys and (floats) how many
of its elements a key does not give back exactly (-0.0, and NaNs other than numpy's own): a
pass whose digit is the same in every key is skipped (small integers need one or two passes),
and `sort` carries no payload when every value is its key's inverse, the last pass writing the
inverse of each key (one store per element and pass instead of two). Otherwise each pass
carries a payload: the values (their bits kept exactly, NaN payloads and -0.0 included) or, for
`argsort`, the original positions. The last pass writes only the result.
"""

from __future__ import annotations

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import check_positive

BITS = 8          # digit width
BINS = 1 << BITS  # counters per chunk
PASSES = 32 // BITS

_PAD = " " * 28   # the indentation of an element's statements in the walk

# the key of a value v (its bits `bits` for floats): order-preserving, -0 tied with 0, NaNs last;
# zeros and NaNs told by their bits (`mag`, the bits without the sign), not by float compares,
# which a driver that flushes subnormals to zero would answer wrongly for them
_KEY = {
    "float32": ("bits = T.reinterpret(v, \"uint32\")\n"
                "{p}mag = bits & T.uint32(2147483647)\n"
                "{p}key = T.select(mag > T.uint32(2139095040), T.uint32(4294967295), "
                "T.select(mag == T.uint32(0), T.uint32(2147483648), "
                "T.select(bits >= T.uint32(2147483648), ~bits, bits | T.uint32(2147483648))))"),
    "int32": "key = T.reinterpret(v, \"uint32\") ^ T.uint32(2147483648)",
    "uint32": "key = v",
}

# the value a key stands for (the inverse of _KEY where it is one-to-one: 0 is +0.0 and the NaN
# key numpy's NaN, 0x7fc00000)
_VALUE = {
    "float32": ('T.reinterpret(T.select(key == T.uint32(4294967295), T.uint32(2143289344), '
                'T.select(key >= T.uint32(2147483648), key & T.uint32(2147483647), ~key)), '
                '"float32")'),
    "int32": 'T.reinterpret(key ^ T.uint32(2147483648), "int32")',
    "uint32": "key",
}

# a float value its key does not give back: -0.0, or a NaN other than 0x7fc00000
_INEXACT = ("T.select(bits == T.uint32(2147483648) or (mag > T.uint32(2139095040) and "
            "bits != T.uint32(2143289344)), T.uint32(1), T.uint32(0))")

# both passes: invocation p walks chunk p (4 elements per access with V = 4: a vector load, on
# llvmpipe one lane loop or texel fetch for the four) from 256 private counters c[d] = {init},
# taking each element's key and digit d; {use} is what it does with them, {tail} what follows
_WALK = '''
@T.prim_func
def {name}({params}):
    for bx in T.thread_binding((P + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            p = bx * W + tx
            if p < P:
                c = T.alloc_buffer((BINS,), "int32", scope="local")
                for d in T.serial(BINS):
                    c[d] = {init}
{setup}                t = T.alloc_buffer((V,), "{st}", scope="local")
                for i in T.serial(C // V):
                    if p * C + i * V < N:
                        for q in T.vectorized(V):
                            t[q] = src[p * C + i * V + q]
                        for j in T.unroll(V):
                            e = p * C + i * V + j
{key}
                            d = T.cast((key >> T.cast(shift, "uint32")) & T.uint32(MASK), "int32")
{use}{tail}'''


def _key_text(dtype, first):
    if not first:
        return f"{_PAD}key = t[j]"
    return f"{_PAD}v = t[j]\n{_PAD}" + _KEY[dtype].format(p=_PAD)


def _check(N, P, C, w, v):
    check_positive("radix sort kernel", N=N, P=P, C=C, w=w)
    if P * C < N:
        raise ArgumentError(f"radix sort kernel: {P} chunks of {C} do not cover {N} elements")
    if v not in (1, 4):
        raise ArgumentError(f"radix sort kernel: v must be 1 or 4, got {v!r}")
    if v == 4 and (N % 4 or C % 4):
        raise ArgumentError(f"radix sort kernel: v=4 needs N ({N}) and C ({C}) multiples of 4")


def _env(N, P, C, w, v):
    return dict(N=N, P=P, C=C, W=w, V=v, BINS=BINS, MASK=BINS - 1)


def _src(dtype, first):
    return f'src: T.Buffer((N,), "{dtype if first else "uint32"}")'


CONFIGS = {"cpu": [dict(w=8, v=4), dict(w=8), dict(w=1)], "default": [dict(w=64)]}

# the first count's statistics: per chunk the AND and the OR of its keys and its inexact values
_STATS_SETUP = """\
                s = T.alloc_buffer((3,), "uint32", scope="local")
                s[0] = T.uint32(4294967295)
                s[1] = T.uint32(0)
                s[2] = T.uint32(0)
"""
_STATS_USE = f"""\
{_PAD}s[0] = s[0] & key
{_PAD}s[1] = s[1] | key
"""
_STATS_TAIL = """\
                stats[p] = s[0]
                stats[P + p] = s[1]
                stats[2 * P + p] = s[2]
"""


@autotune(configs=CONFIGS, key=("N", "P", "C", "dtype", "first"))
def radix_count_kernel(N, P, C, dtype="float32", first=True, w=8, v=1):
    """The PrimFunc writing counts[d * P + p], the number of elements of chunk p (C elements
    of the N) whose digit (key >> shift) & 255 is d; `first`: src is the data (dtype), else
    the keys of the previous pass (uint32), and it also writes stats[p], stats[P + p] and
    stats[2P + p]: the AND and the OR of the chunk's keys, and how many of its values their
    key does not give back (float -0.0 and NaNs other than 0x7fc00000); `v=4`: src read 4
    elements per access."""
    _check(N, P, C, w, v)
    params = f'{_src(dtype, first)}, counts: T.Buffer((BINS * P,), "int32"), '
    use = f"{_PAD}c[d] = c[d] + 1\n"
    tail = ("                for d in T.serial(BINS):\n"
            "                    counts[d * P + p] = c[d]\n")
    setup = ""
    if first:
        params += 'stats: T.Buffer((3 * P,), "uint32"), '
        setup, tail = _STATS_SETUP, tail + _STATS_TAIL
        use += _STATS_USE
        if dtype == "float32":
            use += f"{_PAD}s[2] = s[2] + {_INEXACT}\n"
    text = _WALK.format(name="radix_count", params=params + "shift: T.int32", init="0",
                        setup=setup, st=dtype if first else "uint32",
                        key=_key_text(dtype, first), use=use, tail=tail)
    return from_script(text, env=_env(N, P, C, w, v), file="<vkir.ops.radix count>")


PAYLOADS = ("none", "value", "index")


@autotune(configs=CONFIGS, key=("N", "P", "C", "dtype", "first", "payload", "last"))
def radix_scatter_kernel(N, P, C, dtype="float32", first=True, payload="value", last=False,
                         w=8, v=1):
    """The PrimFunc moving every element of chunk p, in order, to offsets[d * P + p] + (how
    many of its digit came before it in the chunk). `payload` is what travels with the keys:
    "value" (the element, bit for bit), "index" (its position in the data, int32) or "none".
    A pass that is not `last` writes the keys to kout (and the payload to pout); the `last`
    one writes only the result to out: the payload, or with "none" the value of each key.
    The first pass reads the data (src) and makes keys and payload; later ones read the keys
    (src) and the payload (pin); `v=4`: src read 4 elements per access."""
    _check(N, P, C, w, v)
    if payload not in PAYLOADS:
        raise ArgumentError(f"radix sort kernel: payload must be one of {', '.join(PAYLOADS)}, "
                            f"got {payload!r}")
    pt = "int32" if payload == "index" else dtype
    params = _src(dtype, first) + ", "
    if payload != "none" and not first:
        params += f'pin: T.Buffer((N,), "{pt}"), '
    params += 'offsets: T.Buffer((BINS * P,), "int32"), '
    use = f"{_PAD}at = c[d]\n{_PAD}c[d] = at + 1\n"
    value = {"value": "v" if first else "pin[e]", "index": "e" if first else "pin[e]",
             "none": None}[payload]
    if last:
        params += f'out: T.Buffer((N,), "{pt}"), '
        use += f"{_PAD}out[at] = {value if value else _VALUE[dtype]}\n"
    else:
        params += 'kout: T.Buffer((N,), "uint32"), '
        use += f"{_PAD}kout[at] = key\n"
        if value:
            params += f'pout: T.Buffer((N,), "{pt}"), '
            use += f"{_PAD}pout[at] = {value}\n"
    text = _WALK.format(name="radix_scatter", params=params + "shift: T.int32",
                        init="offsets[d * P + p]", setup="", st=dtype if first else "uint32",
                        key=_key_text(dtype, first), use=use, tail="")
    return from_script(text, env=_env(N, P, C, w, v), file="<vkir.ops.radix scatter>")


_OFFSETS = '''
@T.prim_func
def radix_offsets(counts: T.Buffer((BINS * P,), "int32"), offsets: T.Buffer((BINS * P,), "int32")):
    for bx in T.thread_binding(1, "blockIdx.x"):
        totals = T.alloc_buffer((BINS,), "int32", scope="shared")
        for tx in T.thread_binding(BINS, "threadIdx.x"):
            run = T.alloc_buffer((1,), "int32", scope="local")
            run[0] = 0
            for p in T.serial(P):
                run[0] = run[0] + counts[tx * P + p]
            totals[tx] = run[0]
            T.barrier()
            run[0] = 0
            for d in T.serial(BINS):
                if d < tx:
                    run[0] = run[0] + totals[d]
            for p in T.serial(P):
                offsets[tx * P + p] = run[0]
                run[0] = run[0] + counts[tx * P + p]
'''


@autotune(configs={"cpu": [dict()], "default": [dict()]}, key=("P",))
def radix_offsets_kernel(P):
    """The PrimFunc turning digit-major counts (counts[d * P + p]: chunk p's elements of digit
    d) into offsets[d * P + p], the first output position of chunk p's digit-d elements: the
    elements of all smaller digits, then those of digit d in earlier chunks. One workgroup of
    256 invocations, one per digit, and one barrier (an exclusive scan of 256 * P counts in
    one dispatch)."""
    check_positive("radix offsets kernel", P=P)
    return from_script(_OFFSETS, env=dict(P=P, BINS=BINS), file="<vkir.ops.radix offsets>")


def chunking(n: int) -> tuple[int, int]:
    """(P chunks, C elements each) for a line of n: C a multiple of 4, at least 1024 (the 256
    counters cost 256 steps per chunk, and 256 * P counts are scanned per pass), at most 4096
    (measured on lavapipe, 2^20 float32: 4096 was the fastest of 1024-16384), and P at least
    128 where n allows it (16 workgroups of 8 for the host threads)."""
    c = max(1024, min(4096, 4 * -(-n // 512)))
    return -(-n // c), c


def varying_passes(and_bits: int, or_bits: int) -> list[int]:
    """The passes (0 = lowest digit) whose digit differs between keys whose AND is `and_bits`
    and OR `or_bits`; pass 0 when every key is the same (one pass still writes the result)."""
    varying = and_bits ^ or_bits
    return [k for k in range(PASSES) if (varying >> (BITS * k)) & (BINS - 1)] or [0]


def radix_sort(dev, xd, result, dtype: str, with_index: bool) -> None:
    """Sort the 1-d DeviceArray xd into result (the sorted values, or the int32 positions
    when `with_index`) with stable 8-bit passes: those whose digit varies, keys only when
    every value is its key's inverse (`sort`), else with the values or positions. Inside a
    `vkir.sequence()` recording (nothing runs until it is submitted, so the first count's
    statistics cannot be read) every pass runs, with the payload.

    The passes before the last alternate between two sets of buffers: the one the last pass
    reads, and `result` itself (unless it is xd's memory) with a payload buffer; scratch
    memory comes from the device's workspace (vkir.ops.scratch). After the first count (whose
    statistics are read back) the passes are one submission (a sequence): one wait instead of
    one per dispatch, each of which a loaded host can stretch."""
    from ..driver.sequences import current
    from .scratch import workspace

    with workspace(dev) as ws:
        _radix_sort(dev, ws, xd, result, dtype, with_index, current() is None)


def _plan(stats, with_index: bool) -> tuple[list[int], str]:
    """(the passes to run, the payload) from the first count's statistics (3 x P)."""
    import numpy as np

    and_bits = int(np.bitwise_and.reduce(stats[0]))
    or_bits = int(np.bitwise_or.reduce(stats[1]))
    payload = "index" if with_index else ("value" if int(stats[2].sum()) else "none")
    return varying_passes(and_bits, or_bits), payload


def _radix_sort(dev, ws, xd, result, dtype, with_index, readable) -> None:
    from ..aliasing import overlaps

    n = xd.size
    P, C = chunking(n)
    counts = ws.take((BINS * P,), "int32")
    offsets = ws.take((BINS * P,), "int32")
    stats = ws.take((3 * P,), "uint32")
    radix_count_kernel.kernel(dev, N=n, P=P, C=C, dtype=dtype, first=True)(xd, counts, stats, 0)
    if readable:
        passes, payload = _plan(stats.numpy().reshape(3, P), with_index)
    else:
        passes, payload = list(range(PASSES)), "index" if with_index else "value"
    pt = "int32" if with_index else dtype
    in_place = overlaps(result, xd)
    if in_place and len(passes) == 1:   # a second pass by the same digit changes nothing
        passes = passes * 2

    def new_set():
        return [ws.take((n,), "uint32")] + ([ws.take((n,), pt)] if payload != "none" else [])

    inner = len(passes) - 1   # the passes before the last, which write keys (and payloads)
    a = new_set() if inner else None
    b = None
    if inner > 1:
        b = new_set() if in_place else [result.view("uint32")] + (
            [ws.take((n,), pt)] if payload != "none" else [])
    sets = [a if (inner - 1 - step) % 2 == 0 else b for step in range(inner)]
    offsets_k = radix_offsets_kernel.kernel(dev, P=P)
    if readable:   # the passes as one submission (see radix_sort); inside a sequence, its own
        from ..driver.sequences import sequence

        with sequence(dev) as seq:
            _passes(dev, xd, result, dtype, n, P, C, passes, payload, sets, counts, offsets,
                    stats, offsets_k)
        seq.wait()
        return
    _passes(dev, xd, result, dtype, n, P, C, passes, payload, sets, counts, offsets, stats,
            offsets_k)


def _passes(dev, xd, result, dtype, n, P, C, passes, payload, sets, counts, offsets, stats,
            offsets_k) -> None:
    """Run (or record) the count, offsets and scatter kernels of every pass."""
    src = pin = None
    for step, k in enumerate(passes):
        first, last = step == 0, step == len(passes) - 1
        if first:
            src = xd
            if k != 0:  # pass 0 was skipped: count this pass's digit of the data
                radix_count_kernel.kernel(dev, N=n, P=P, C=C, dtype=dtype, first=True)(
                    xd, counts, stats, BITS * k)
        else:
            radix_count_kernel.kernel(dev, N=n, P=P, C=C, dtype=dtype, first=False)(
                src, counts, BITS * k)
        offsets_k(counts, offsets)
        scatter = radix_scatter_kernel.kernel(dev, N=n, P=P, C=C, dtype=dtype, first=first,
                                              payload=payload, last=last)
        ins = [src] + ([pin] if payload != "none" and not first else []) + [offsets]
        if last:
            scatter(*ins, result, BITS * k)
            return
        scatter(*ins, *sets[step], BITS * k)
        src, pin = sets[step][0], (sets[step][1] if payload != "none" else None)
