"""The LSD radix sort behind `vkir.ops.sort`/`argsort` for long lines, and its kernel templates
`radix_count_kernel` and `radix_scatter_kernel`.

Schedule for CPU devices (one workgroup per host thread, 8 invocations per SIMD step, barriers
expensive): no barrier and no shared memory. The keys are 32-bit and order-preserving (floats:
the sign bit flipped for positives, all bits for negatives, -0 as 0 (they tie, as in
numpy), every NaN the largest key; int32:
the sign bit flipped; uint32 as they are). Four passes of 8 bits each; in each pass the line is
cut into P chunks of C consecutive elements and

1. every invocation counts the digits of its chunk into a local array of 256 counters and
   writes them digit-major: counts[d * P + p];
2. an exclusive `vkir.ops.cumsum` of those counts gives each (digit, chunk) its first output
   position (all smaller digits first, then the same digit of earlier chunks);
3. every invocation walks its chunk again in order and writes each element to its digit's next
   position, so the pass is stable, and so is the sort.

Each pass carries a payload: the values for `sort` (their bits kept exactly, NaN payloads
included) or the original positions for `argsort`.
"""

from __future__ import annotations

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import check_positive

_KEY = {
    "float32": ("bits = T.reinterpret(v, \"uint32\")\n"
                "{p}key = T.select(v != v, T.uint32(4294967295), T.select(v == T.float32(0), "
                "T.uint32(2147483648), T.select(bits >= T.uint32(2147483648), ~bits, "
                "bits | T.uint32(2147483648))))"),
    "int32": "key = T.reinterpret(v, \"uint32\") ^ T.uint32(2147483648)",
    "uint32": "key = v",
}

# both passes: invocation p walks chunk p, starting from 256 private counters {c}[d] = {init},
# and takes each element's key and digit d; {use} is what it does with them
_WALK = '''
@T.prim_func
def {name}({params}):
    for bx in T.thread_binding((P + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            p = bx * W + tx
            if p < P:
                {c} = T.alloc_buffer((256,), "int32", scope="local")
                for d in T.serial(256):
                    {c}[d] = {init}
                for i in T.serial(C):
                    e = p * C + i
                    if e < N:
{key}
                        d = T.cast((key >> T.cast(shift, "uint32")) & T.uint32(255), "int32")
{use}'''

_PAD = " " * 24

# {use} of the count pass: add one to the digit's counter; at the chunk's end write them out
_COUNT_USE = """\
                        c[d] = c[d] + 1
                for d in T.serial(256):
                    counts[d * P + p] = c[d]
"""

# {use} of the scatter pass: the key and payload go to the digit's next position
_SCATTER_USE = """\
                        at = o[d]
                        o[d] = at + 1
                        kout[at] = key
                        pout[at] = {payload}
"""


# the walk with `v` = 4: the chunk is read 4 elements per access into the local t (a vector
# load: on llvmpipe a loop over the SIMD lanes whatever its width, through a texel view for
# read-only data), then its elements are taken in order as the scalar walk takes them
_WALK_HEAD = """\
                for i in T.serial(C):
                    e = p * C + i
                    if e < N:
"""
_WALK4_HEAD = """\
                t = T.alloc_buffer((4,), "{st}", scope="local")
                for i in T.serial(C // 4):
                    if p * C + i * 4 < N:
                        for q in T.vectorized(4):
                            t[q] = src[p * C + i * 4 + q]
                        for j in T.unroll(4):
                            e = p * C + i * 4 + j
"""


def _vector_walk(text: str, st: str) -> str:
    """The `v=4` form of a walk's text: the element loop read 4 elements at a time, its body
    (every line indented 24 or more after the loop's head) one level deeper, reading t[j]."""
    head, rest = text.split(_WALK_HEAD)
    body, tail = [], []
    for line in rest.splitlines(keepends=True):
        if not tail and (len(line) - len(line.lstrip(" ")) >= 24 or not line.strip()):
            body.append("    " + line.replace("src[e]", "t[j]") if line.strip() else line)
        else:
            tail.append(line)
    return head + _WALK4_HEAD.format(st=st) + "".join(body) + "".join(tail)


def _check_v(v, N, C):
    if v not in (1, 4):
        raise ArgumentError(f"radix sort kernel: v must be 1 or 4, got {v!r}")
    if v == 4 and (N % 4 or C % 4):
        raise ArgumentError(f"radix sort kernel: v=4 needs N ({N}) and C ({C}) multiples of 4")


def _key_text(dtype, first):
    if not first:
        return f"{_PAD}key = src[e]"
    return f"{_PAD}v = src[e]\n{_PAD}" + _KEY[dtype].format(p=_PAD)


def _check(N, P, C, w):
    check_positive("radix sort kernel", N=N, P=P, C=C, w=w)
    if P * C < N:
        raise ArgumentError(f"radix sort kernel: {P} chunks of {C} do not cover {N} elements")


def _src(dtype, first):
    return f'src: T.Buffer((N,), "{dtype if first else "uint32"}")'


CONFIGS = {"cpu": [dict(w=8, v=4), dict(w=8), dict(w=1)], "default": [dict(w=64)]}


@autotune(configs=CONFIGS, key=("N", "P", "C", "dtype", "first"))
def radix_count_kernel(N, P, C, dtype="float32", first=True, w=8, v=1):
    """The PrimFunc writing counts[d * P + p], the number of elements of chunk p (C elements
    of the N) whose digit (key >> shift) & 255 is d; `first`: src is the data (dtype), else
    the keys of the previous pass (uint32); `v=4`: src read 4 elements per access."""
    _check(N, P, C, w)
    _check_v(v, N, C)
    text = _WALK.format(name="radix_count", params=f'{_src(dtype, first)}, counts: '
                        'T.Buffer((256 * P,), "int32"), shift: T.int32', c="c", init="0",
                        key=_key_text(dtype, first), use=_COUNT_USE)
    if v == 4:
        text = _vector_walk(text, dtype if first else "uint32")
    return from_script(text, env=dict(N=N, P=P, C=C, W=w), file="<vkir.ops.radix count>")


@autotune(configs=CONFIGS, key=("N", "P", "C", "dtype", "first", "with_index"))
def radix_scatter_kernel(N, P, C, dtype="float32", first=True, with_index=False, w=8, v=1):
    """The PrimFunc moving every element of chunk p, in order, to offsets[d * P + p] + (how
    many of its digit came before it in the chunk): the keys into kout, the payload (the
    position when `with_index`, else the value) into pout. The first pass reads the data and
    makes the payload; later ones read keys (src) and the payload (pin); `v=4`: src read 4
    elements per access."""
    _check(N, P, C, w)
    _check_v(v, N, C)
    pt = "int32" if with_index else dtype
    if first:
        pay_in, payload = "", ("e" if with_index else "v")
    else:
        pay_in, payload = f'pin: T.Buffer((N,), "{pt}"), ', "pin[e]"
    params = (f'{_src(dtype, first)}, {pay_in}offsets: T.Buffer((256 * P,), "int32"), '
              f'kout: T.Buffer((N,), "uint32"), pout: T.Buffer((N,), "{pt}"), shift: T.int32')
    text = _WALK.format(name="radix_scatter", params=params, c="o", init="offsets[d * P + p]",
                        key=_key_text(dtype, first), use=_SCATTER_USE.format(payload=payload))
    if v == 4:
        text = _vector_walk(text, dtype if first else "uint32")
    return from_script(text, env=dict(N=N, P=P, C=C, W=w), file="<vkir.ops.radix scatter>")


def chunking(n: int) -> tuple[int, int]:
    """(P chunks, C elements each) for a line of n: about 1024 chunks (enough invocations for
    every host thread), at least 256 elements each (the counters cost 256 steps per chunk),
    at most 16384 (llvmpipe's loop limit is far above)."""
    c = max(256, min(16384, -(-n // 1024)))
    return -(-n // c), c


def radix_sort(dev, xd, result, dtype: str, with_index: bool) -> None:
    """Sort the 1-d DeviceArray xd into result (the sorted values, or the int32 positions
    when `with_index`) with four stable 8-bit passes."""
    from ..api import empty
    from .scan import cumsum

    n = xd.size
    P, C = chunking(n)
    pt = "int32" if with_index else dtype
    keys = [empty((n,), "uint32", dev) for _ in range(2)]
    pays = [empty((n,), pt, dev), result]
    counts = empty((256 * P,), "int32", dev)
    offsets = empty((256 * P,), "int32", dev)
    src, pin = xd, None
    for step in range(4):
        first = step == 0
        count = radix_count_kernel.kernel(dev, N=n, P=P, C=C, dtype=dtype, first=first)
        count(src, counts, 8 * step)
        cumsum(counts, exclusive=True, out=offsets)
        scatter = radix_scatter_kernel.kernel(dev, N=n, P=P, C=C, dtype=dtype, first=first,
                                              with_index=with_index)
        kout, pout = keys[step % 2], pays[step % 2]   # the 4th (odd) pass writes the result
        scatter(*([src] if first else [src, pin]), offsets, kout, pout, 8 * step)
        src, pin = kout, pout
