"""The demo's kernels: a vector add with a symbolic size (also as script text, `VADD_SOURCE`),
a shared-memory tree reduction with barriers (`block_sum`) and a tiled matmul through shared
memory (`matmul`). `vkir demo` (vkir.tools.demo) runs them; the benchmarks and the README use the
same ones."""

from __future__ import annotations

from vkir import T
from vkir.script import from_script

__all__ = ["VADD_SOURCE", "vadd", "block_sum", "matmul"]

# the vector add as script text too: the benchmarks parse it cold, the CLI tests write it to a file
VADD_SOURCE = '''
@T.prim_func
def vadd(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"),
         c: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                c[i] = a[i] + b[i]
'''
vadd = from_script(VADD_SOURCE)


@T.prim_func
def block_sum(x: T.Buffer(("n",), "float32"), partial: T.Buffer(("m",), "float32")):
    """Partial sums of `x` (one per workgroup) by a shared-memory tree reduction."""
    # m workgroups of 128 threads; each thread accumulates a grid-stride slice, then the
    # workgroup reduces its 128 values in shared memory (a tree with a barrier per level)
    for bx in T.thread_binding(m, "blockIdx.x"):
        s = T.alloc_buffer((128,), "float32", scope="shared")
        for tx in T.thread_binding(128, "threadIdx.x"):
            acc = T.alloc_buffer((1,), "float32", scope="local")
            acc[0] = T.float32(0)
            for k in T.serial((n + 128 * m - 1) // (128 * m)):
                i = (k * m + bx) * 128 + tx
                if i < n:
                    acc[0] = acc[0] + x[i]
            s[tx] = acc[0]
            T.barrier()
            for level in T.unroll(7):
                stride = 64 >> level
                if tx < stride:
                    s[tx] = s[tx] + s[tx + stride]
                T.barrier()
            if tx == 0:
                partial[bx] = s[0]


@T.prim_func
def matmul(A: T.Buffer(("M", "K"), "float32"), B: T.Buffer(("K", "N"), "float32"),
           C: T.Buffer(("M", "N"), "float32")):
    """C = A @ B with tiles in shared memory."""
    # 16x16 output tiles; A and B tiles staged through shared memory
    for by in T.thread_binding((M + 15) // 16, "blockIdx.y"):
        for bx in T.thread_binding((N + 15) // 16, "blockIdx.x"):
            As = T.alloc_buffer((16, 16), "float32", scope="shared")
            Bs = T.alloc_buffer((16, 16), "float32", scope="shared")
            for ty in T.thread_binding(16, "threadIdx.y"):
                for tx in T.thread_binding(16, "threadIdx.x"):
                    acc = T.alloc_buffer((1,), "float32", scope="local")
                    acc[0] = T.float32(0)
                    row = by * 16 + ty
                    col = bx * 16 + tx
                    for k0 in T.serial((K + 15) // 16):
                        As[ty, tx] = T.if_then_else(row < M and k0 * 16 + tx < K,
                                                    A[row, k0 * 16 + tx], T.float32(0))
                        Bs[ty, tx] = T.if_then_else(k0 * 16 + ty < K and col < N,
                                                    B[k0 * 16 + ty, col], T.float32(0))
                        T.barrier()
                        for k in T.serial(16):
                            acc[0] = acc[0] + As[ty, k] * Bs[k, tx]
                        T.barrier()
                    if row < M and col < N:
                        C[row, col] = acc[0]
