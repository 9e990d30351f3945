"""Lowered kernels written with the script front end (used by the golden and device tests)."""

from __future__ import annotations

from vkir import T


@T.prim_func
def vadd(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32"),
         C: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                C[i] = A[i] + B[i]


@T.prim_func
def saxpy(alpha: T.float32, X: T.Buffer(("n",), "float32"), Y: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 127) // 128, "blockIdx.x"):
        for tx in T.thread_binding(128, "threadIdx.x"):
            i = bx * 128 + tx
            if i < n:
                Y[i] = alpha * X[i] + Y[i]


@T.prim_func
def cast_x4(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
    A_x4 = T.decl_buffer((n // 4,), "float32x4", data=A.data)
    B_x4 = T.decl_buffer((n // 4,), "float32x4", data=B.data)
    for bx in T.thread_binding((n // 4 + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n // 4:
                B_x4[i] = A_x4[i] + T.broadcast(A[i * 4], 4)


@T.prim_func
def block_sum(A: T.Buffer(("n",), "float32"), Out: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            partial = T.alloc_buffer((64,), "float32", scope="shared")
            partial[tx] = T.if_then_else(bx * 64 + tx < n, A[bx * 64 + tx], T.float32(0))
            T.barrier()
            for k in T.serial(6):
                step = 32 >> k
                if tx < step:
                    partial[tx] = partial[tx] + partial[tx + step]
                T.barrier()
            if tx == 0:
                Out[bx] = partial[0]


@T.prim_func
def local_loops(A: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                acc = T.alloc_buffer((4,), "int32", scope="local")
                for j in T.unroll(4):
                    acc[j] = j * i
                for k in T.serial(1, 3):
                    acc[0] = acc[0] + acc[k]
                for v in T.vectorized(2):
                    acc[v] = acc[v] - 1
                A[i] = acc[0]
