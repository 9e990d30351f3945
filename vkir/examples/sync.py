"""Atomics and subgroup operations at work: histograms, sums, a prefix sum, stream compaction,
argmax and a scatter-add. The prefix sum is the chunked scan vkir.ops.cumsum runs (one
invocation per block, no synchronization at all); the other kernels' workgroups have 128
invocations. Nothing depends on the device's subgroup size (any power of two up to 128 gives the same results), which the tests check in the
interpreter for sizes 4 to 64 and on the device for its own.

Each kernel's docstring-like comment says what the host passes; `reference` functions compute
the same results with numpy.
"""

from __future__ import annotations

import numpy as np

from vkir import T

BINS = 256


@T.prim_func
def histogram(x: T.Buffer(("n",), "int32"), hist: T.Buffer((256,), "int32")):
    """hist[v] += 1 for every x[i] == v, with global atomics."""
    # hist[v] += 1 for every x[i] = v (0 <= v < 256), straight into global memory
    for bx in T.thread_binding((n + 127) // 128, "blockIdx.x"):
        for tx in T.thread_binding(128, "threadIdx.x"):
            i = bx * 128 + tx
            if i < n:
                T.atomic_add(hist[x[i]], 1)


@T.prim_func
def histogram_shared(x: T.Buffer(("n",), "int32"), hist: T.Buffer((256,), "int32")):
    """The histogram, privatized per workgroup in shared memory, merged with one atomic per bin."""
    # privatized: each workgroup counts 1024 elements in shared memory, then merges its
    # non-zero bins into the global histogram with one atomic per bin
    for bx in T.thread_binding((n + 1023) // 1024, "blockIdx.x"):
        counts = T.alloc_buffer((256,), "int32", scope="shared")
        for tx in T.thread_binding(128, "threadIdx.x"):
            counts[tx] = 0
            counts[tx + 128] = 0
            T.barrier()
            for k in T.serial(8):
                i = bx * 1024 + k * 128 + tx
                if i < n:
                    T.atomic_add(counts[x[i]], 1)
            T.barrier()
            for k in T.serial(2):
                c = counts[k * 128 + tx]
                if c > 0:
                    T.atomic_add(hist[k * 128 + tx], c)


@T.prim_func
def subgroup_sum(x: T.Buffer(("n",), "float32"), partial: T.Buffer(("m",), "float32")):
    """Per-workgroup partial sums of x with subgroup_add."""
    # m workgroups of 128: each invocation sums a grid-stride slice, subgroup_add reduces each
    # subgroup, and one invocation adds up the per-subgroup sums (one barrier in all)
    for bx in T.thread_binding(m, "blockIdx.x"):
        sums = T.alloc_buffer((128,), "float32", scope="shared")
        for tx in T.thread_binding(128, "threadIdx.x"):
            acc = T.alloc_buffer((1,), "float32", scope="local")
            acc[0] = T.float32(0)
            for k in T.serial((n + 128 * m - 1) // (128 * m)):
                i = (k * m + bx) * 128 + tx
                if i < n:
                    acc[0] = acc[0] + x[i]
            s = T.subgroup_add(acc[0])
            if T.subgroup_elect():
                sums[T.subgroup_id()] = s
            T.barrier()
            if tx == 0:
                acc[0] = T.float32(0)
                for j in T.serial(T.num_subgroups()):
                    acc[0] = acc[0] + sums[j]
                partial[bx] = acc[0]


@T.prim_func
def sum_atomic(x: T.Buffer(("n",), "float32"), total: T.Buffer((1,), "float32")):
    """total[0] += sum(x) in one pass: subgroup sums, then one float atomic per workgroup."""
    # one pass: subgroup_add per subgroup, per-subgroup sums in shared memory, then one float
    # atomic add per workgroup into total[0] (which the host zeroes)
    for bx in T.thread_binding((n + 127) // 128, "blockIdx.x"):
        sums = T.alloc_buffer((128,), "float32", scope="shared")
        for tx in T.thread_binding(128, "threadIdx.x"):
            i = bx * 128 + tx
            s = T.subgroup_add(T.if_then_else(i < n, x[i], T.float32(0)))
            if T.subgroup_elect():
                sums[T.subgroup_id()] = s
            T.barrier()
            if tx == 0:
                acc = T.alloc_buffer((1,), "float32", scope="local")
                acc[0] = T.float32(0)
                for j in T.serial(T.num_subgroups()):
                    acc[0] = acc[0] + sums[j]
                T.atomic_add(total[0], acc[0])


@T.prim_func
def scan_blocks(x: T.Buffer(("n",), "int32"), y: T.Buffer(("n",), "int32"),
                block_sums: T.Buffer(("m",), "int32")):
    """The inclusive scan of x within blocks of 128 elements, and each block's sum."""
    # inclusive prefix sum of each block of 128 elements (m = ceil(n / 128) blocks), the
    # chunked way: one invocation walks one whole block serially (no barrier, no shared
    # memory, no subgroup operation), 8 invocations per workgroup. On CPU drivers, where a
    # workgroup is one host thread and barriers are dear, this is several times faster than
    # scanning a block with 128 invocations, subgroup scans and two barriers.
    for bx in T.thread_binding((m + 7) // 8, "blockIdx.x"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            b = bx * 8 + tx
            if b < m:
                run = T.alloc_buffer((1,), "int32", scope="local")
                run[0] = 0
                for k in T.serial(128):
                    i = b * 128 + k
                    if i < n:
                        run[0] = run[0] + x[i]
                        y[i] = run[0]
                block_sums[b] = run[0]


@T.prim_func
def add_block_offsets(y: T.Buffer(("n",), "int32"), scanned: T.Buffer(("m",), "int32")):
    """Add each block's offset (the scan of the block sums) to the block-wise scan."""
    # y[i] += the inclusive scan of the block sums up to the previous block
    for bx in T.thread_binding(m, "blockIdx.x"):
        for tx in T.thread_binding(128, "threadIdx.x"):
            i = bx * 128 + tx
            if bx > 0 and i < n:
                y[i] = y[i] + scanned[bx - 1]


@T.prim_func
def compact_positive(x: T.Buffer(("n",), "int32"), out: T.Buffer(("n",), "int32"),
                     count: T.Buffer((1,), "int32")):
    """The positive elements of x (in order within each subgroup), with a ballot per subgroup and
    one atomic per subgroup to reserve space; count[0] of them."""
    # out[:count] = the positive elements of x (order kept within a subgroup; count zeroed by
    # the host). The ballot gives each invocation its rank among the kept elements of its
    # subgroup and the subgroup's total; one atomic per subgroup reserves the output space.
    for bx in T.thread_binding((n + 127) // 128, "blockIdx.x"):
        for tx in T.thread_binding(128, "threadIdx.x"):
            i = bx * 128 + tx
            keep = T.if_then_else(i < n, x[i], 0) > 0
            ballot = T.subgroup_ballot(keep)
            lane = T.subgroup_invocation_id()
            bits = T.alloc_buffer((2,), "int32", scope="local")  # [rank, subgroup total]
            bits[0] = 0
            bits[1] = 0
            for w in T.unroll(4):
                word = T.select(w == 0, T.shuffle([ballot], [0]), T.select(
                    w == 1, T.shuffle([ballot], [1]), T.select(
                        w == 2, T.shuffle([ballot], [2]), T.shuffle([ballot], [3]))))
                below = T.if_then_else(lane >= w * 32 + 32, T.uint32(4294967295), T.if_then_else(
                    lane <= w * 32, T.uint32(0),
                    (T.uint32(1) << T.cast(lane - w * 32, "uint32")) - T.uint32(1)))
                mine = word & below
                # population counts (SWAR) of the bits below this lane and of the whole word
                m1 = mine - ((mine >> 1) & T.uint32(1431655765))
                m2 = (m1 & T.uint32(858993459)) + ((m1 >> 2) & T.uint32(858993459))
                m3 = (m2 + (m2 >> 4)) & T.uint32(252645135)
                w1 = word - ((word >> 1) & T.uint32(1431655765))
                w2 = (w1 & T.uint32(858993459)) + ((w1 >> 2) & T.uint32(858993459))
                w3 = (w2 + (w2 >> 4)) & T.uint32(252645135)
                bits[0] = bits[0] + T.cast((m3 * T.uint32(16843009)) >> 24, "int32")
                bits[1] = bits[1] + T.cast((w3 * T.uint32(16843009)) >> 24, "int32")
            base = T.alloc_buffer((1,), "int32", scope="local")
            base[0] = 0
            if T.subgroup_elect():
                base[0] = T.atomic_add(count[0], bits[1])
            start = T.subgroup_broadcast_first(base[0])
            if keep:
                out[start + bits[0]] = x[i]


@T.prim_func
def argmax(x: T.Buffer(("n",), "int32"), best: T.Buffer((1,), "uint64")):
    """The index of the first maximum of x, with a 64-bit atomic max of (value, index)."""
    # best[0] (zeroed by the host) becomes (x[k] as an ordered uint32) << 32 | (2^32 - 1 - k)
    # for the first k holding the maximum: each workgroup reduces its keys with a shared
    # atomic_max, then its invocation 0 publishes the result with a compare-exchange loop (each
    # failed exchange means another workgroup stored a larger key, so the number of workgroups
    # bounds the retries)
    for bx in T.thread_binding((n + 127) // 128, "blockIdx.x"):
        wbest = T.alloc_buffer((1,), "uint64", scope="shared")
        for tx in T.thread_binding(128, "threadIdx.x"):
            if tx == 0:
                wbest[0] = T.uint64(0)
            T.barrier()
            i = bx * 128 + tx
            if i < n:
                ordered = T.reinterpret(x[i], "uint32") ^ T.uint32(2147483648)
                key = (T.cast(ordered, "uint64") << T.uint64(32)) | T.cast(
                    T.uint32(4294967295) - T.cast(i, "uint32"), "uint64")
                T.atomic_max(wbest[0], key)
            T.barrier()
            if tx == 0:
                mine = wbest[0]
                guess = T.alloc_buffer((1,), "uint64", scope="local")
                guess[0] = T.uint64(0)
                for attempt in T.serial((n + 127) // 128):
                    if mine > guess[0]:
                        prev = T.atomic_compare_exchange(best[0], guess[0], mine)
                        guess[0] = T.select(prev == guess[0], mine, prev)


@T.prim_func
def scatter_add(index: T.Buffer(("n",), "int32"), w: T.Buffer(("n",), "float32"),
                out: T.Buffer(("m",), "float32")):
    """out[index[i]] += w[i] with float atomics."""
    # out[index[i]] += w[i] with float atomics (0 <= index[i] < m)
    for bx in T.thread_binding((n + 127) // 128, "blockIdx.x"):
        for tx in T.thread_binding(128, "threadIdx.x"):
            i = bx * 128 + tx
            if i < n:
                T.atomic_add(out[index[i]], w[i])


# ---------------------------------------------------------------------------------------------
# numpy references


def histogram_reference(x: np.ndarray) -> np.ndarray:
    """The 256-bin histogram of values in [0, 256)."""
    return np.bincount(x, minlength=BINS).astype(np.int32)


def argmax_decode(key: int) -> tuple[int, int]:
    """(index, value) from the key `argmax` leaves in best[0]."""
    index = 0xFFFFFFFF - (int(key) & 0xFFFFFFFF)
    bits = (int(key) >> 32) ^ 0x80000000
    return index, bits - (1 << 32) if bits >= 1 << 31 else bits


def scatter_add_reference(index: np.ndarray, w: np.ndarray, m: int) -> np.ndarray:
    """out[index[i]] += w[i], in float64."""
    out = np.zeros(m, np.float64)
    np.add.at(out, index, w.astype(np.float64))
    return out
