"""A fused matmul with a clipping epilogue, built and run on the device (lavapipe in CI)."""

import numpy as np

import vkir
from vkir import T
from vkir.schedule import fuse_reduction_epilogue


@T.prim_func
def matmul_relu6(A: T.Buffer((64, 32), "float32"), B: T.Buffer((32, 48), "float32"),
                 D: T.Buffer((64, 48), "float32")):
    temp = T.alloc_buffer((64, 48), "float32")
    for i in T.thread_binding(64, "blockIdx.x"):
        for j in T.thread_binding(48, "threadIdx.x"):
            temp[i, j] = T.float32(0)
            for k in T.serial(32):
                temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i in T.thread_binding(64, "blockIdx.x"):
        for j in T.thread_binding(48, "threadIdx.x"):
            D[i, j] = T.max(T.min(temp[i, j], T.float32(6)), T.float32(0))


def test_fused_clipping_matmul_runs_on_device(device):
    fused = fuse_reduction_epilogue(matmul_relu6, "temp")
    kernel = vkir.build(fused)
    assert "OpVariable" in kernel.asm
    rng = np.random.default_rng(7)
    a = (rng.standard_normal((64, 32)) * 2).astype("float32")
    b = rng.standard_normal((32, 48)).astype("float32")
    d = np.zeros((64, 48), "float32")
    kernel(a, b, d)
    np.testing.assert_allclose(d, np.clip(a @ b, 0, 6), rtol=1e-5, atol=1e-5)
    assert 0 < (d == 6).sum() and 0 < (d == 0).sum()  # both bounds were hit
    interpreted = np.zeros_like(d)
    vkir.interpret(fused, a, b, interpreted)
    np.testing.assert_allclose(d, interpreted, rtol=1e-5, atol=1e-5)
