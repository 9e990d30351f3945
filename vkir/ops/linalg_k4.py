"""The matmul template's "ka=4" family: A read as float32x4 along k, as the GLSL texel tile does.

Each invocation keeps a `tm` x `tn` tile of C in registers and walks k four steps at a time:
per step it loads one float32x4 of every tile row of A (4 consecutive k) and, for each of the
4 k, one row strip of B (`tn` columns as `v`-wide vectors), then does the `tm` x `tn` x 4
multiply-adds with the 4 k innermost: each accumulator is read, takes its 4 products and is
written back once per step. Tiles of 8 x 8 and more do not fit llvmpipe's 16 vector registers
(one per float per invocation), so the accumulators live on the stack; with k outermost (the
first form of this family) every multiply-add paid a load and a store of its accumulator, and
k innermost is 1.25-1.35x faster per CPU-second on lavapipe (16 x 8 at 1024: 27.8 -> 35.7
GFLOP, 0.34 -> 0.43 of the register-only FMA ceiling), the same on SwiftShader. The
multiply-adds are `T.fma`, as the GLSL tile's: 1.1x per CPU-second on SwiftShader at 512, the
same on lavapipe (like any Fma, a device may still round the product before the add).

The plain template reads one scalar of A per tile row and k: on llvmpipe every load is a loop
over the SIMD lanes whatever its width (or a texel fetch, for read-only buffers), so 4 k per A
load cut its A loads by 4; on SwiftShader it is the form of the fastest GLSL tiles.

Only what the family needs is supported: A and B not transposed, K a multiple of 4, M and N
multiples of the workgroup's tile, no bias or activation. Other calls raise ArgumentError, so
the autotuner skips the family there and the plain template serves them.
"""

from __future__ import annotations

from ..errors import ArgumentError
from ..script import from_script

_TEXT = '''
@T.prim_func
def matmul(A: T.Buffer({a_shape}, "float32"), B: T.Buffer({b_shape}, "float32"),
           C: T.Buffer({c_shape}, "float32")):
    for bz in T.thread_binding(BATCH, "blockIdx.z"):
        for by in T.thread_binding(M // BM, "blockIdx.y"):
            for bx in T.thread_binding(N // BN, "blockIdx.x"):
                for ty in T.thread_binding(WY, "threadIdx.y"):
                    for tx in T.thread_binding(WX, "threadIdx.x"):
                        acc = T.alloc_buffer((TM, TN), "float32", scope="local")
                        av = T.alloc_buffer((TM, 4), "float32", scope="local")
                        bv = T.alloc_buffer((4, TN), "float32", scope="local")
                        for i in T.unroll(TM):
                            for j0 in T.unroll(TN // V):
                                for j in T.vectorized(V):
                                    acc[i, j0 * V + j] = T.float32(0)
                        for k0 in T.serial(K // 4):
                            for i in T.unroll(TM):
                                for u in T.vectorized(4):
                                    av[i, u] = A[{a_index}]
                            for kk in T.unroll(4):
                                for j0 in T.unroll(TN // V):
                                    for j in T.vectorized(V):
                                        bv[kk, j0 * V + j] = B[{b_index}]
                            for i in T.unroll(TM):
                                for j0 in T.unroll(TN // V):
                                    for kk in T.unroll(4):
                                        for j in T.vectorized(V):
                                            acc[i, j0 * V + j] = T.fma(av[i, kk], bv[kk, j0 * V + j], acc[i, j0 * V + j])
                        for i in T.unroll(TM):
                            for j0 in T.unroll(TN // V):
                                for j in T.vectorized(V):
                                    C[{c_index}] = acc[i, j0 * V + j]
'''


def kernel_k4(M, N, K, batch, trans_a, trans_b, bias, activation, tm, tn, wx, wy, v):
    """The "ka=4" PrimFunc for the matmul template's arguments (see linalg.kernel)."""
    why = []
    if trans_a or trans_b:
        why.append("transposed operands")
    if bias is not None or activation is not None:
        why.append("a bias or activation")
    if K % 4:
        why.append(f"K={K} not a multiple of 4")
    if M % (tm * wy) or N % (tn * wx):
        why.append(f"M={M}, N={N} not multiples of the workgroup tile {tm * wy} x {tn * wx}")
    if why:
        raise ArgumentError("matmul kernel: ka=4 (A read as float32x4 along k) does not take "
                            + ", ".join(why))
    lead = (lambda *idx: ", ".join(("bz",) + idx if batch is not None else idx))
    shape = (lambda *d: "(" + ", ".join(("BATCH",) + d if batch is not None else d) + ",)")
    row = "(by * WY + ty) * TM + i"
    # the invocations of a workgroup interleave their column vectors (as the GLSL tile does):
    # vector j0 of invocation tx is columns bx * BN + (j0 * WX + tx) * V, so the lanes of one
    # load or store touch adjacent vectors (1.05x on SwiftShader, the same on lavapipe)
    col = "bx * BN + (j0 * WX + tx) * V + j"
    text = _TEXT.format(a_shape=shape("M", "K"), b_shape=shape("K", "N"),
                        c_shape=shape("M", "N"), a_index=lead(row, "k0 * 4 + u"),
                        b_index=lead("k0 * 4 + kk", col), c_index=lead(row, col))
    env = dict(M=M, N=N, K=K, BATCH=batch or 1, TM=tm, TN=tn, WX=wx, WY=wy, V=v, BM=tm * wy,
               BN=tn * wx)
    return from_script(text, env=env, file="<vkir.ops.matmul ka=4>")
