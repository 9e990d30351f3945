"""On the device: a matmul with a clipping epilogue, fused in each of the five
spellings of the fusion with bounds that depend on the output indices, builds and runs on lavapipe
and matches numpy (inputs of both signs); the intermediate buffer is gone."""

import numpy as np
import pytest

import vkir
from vkir import ir
from vkir.schedule import fuse_reduction_epilogue

SPELLINGS = [
    "T.min(T.max(temp[i, j], lo), hi)",
    "T.min(hi, T.max(temp[i, j], lo))",
    "T.min(T.max(lo, temp[i, j]), hi)",
    "T.max(T.min(temp[i, j], hi), lo)",
    "T.max(lo, T.min(temp[i, j], hi))",
]

TEMPLATE = '''
@T.prim_func
def mm_clip(A: T.Buffer((32, 16), "float32"), B: T.Buffer((16, 24), "float32"),
            D: T.Buffer((32, 24), "float32")):
    temp = T.alloc_buffer((32, 24), "float32")
    for i in T.thread_binding(32, "blockIdx.x"):
        for j in T.thread_binding(24, "threadIdx.x"):
            temp[i, j] = T.float32(0)
            for k in T.serial(16):
                temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i in T.thread_binding(32, "blockIdx.x"):
        for j in T.thread_binding(24, "threadIdx.x"):
            D[i, j] = {expr}
'''
LO, HI = "T.float32(-1) - T.cast(j % 3, \"float32\")", "T.float32(1) + T.cast(i % 4, \"float32\")"


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_fused_clipping_matmul_on_device(device, spelling):
    func = vkir.from_script(TEMPLATE.format(
        expr=spelling.replace("lo", f"({LO})").replace("hi", f"({HI})")))
    fused = fuse_reduction_epilogue(func, "temp")
    assert not any(isinstance(n, (ir.AllocBuffer, ir.DeclBuffer)) and n.buffer.name == "temp"
                   for n in ir.walk(fused.body))
    rng = np.random.default_rng(SPELLINGS.index(spelling))
    a = (rng.standard_normal((32, 16)) * 2).astype("float32")
    b = rng.standard_normal((16, 24)).astype("float32")
    lo = -1.0 - (np.arange(24) % 3)[None, :]
    hi = 1.0 + (np.arange(32) % 4)[:, None]
    want = np.clip(a.astype(np.float64) @ b, lo, hi)  # lo < hi: every spelling is this
    d = np.zeros((32, 24), "float32")
    vkir.build(fused, device=device)(a, b, d)
    np.testing.assert_allclose(d, want, rtol=1e-5, atol=1e-5)
    assert (d == lo).sum() > 0 and (d == hi).sum() > 0 and ((d > lo) & (d < hi)).sum() > 0
    ref = np.zeros_like(d)
    vkir.interpret(func, a, b, ref)  # the unfused function, interpreted
    np.testing.assert_allclose(d, ref, rtol=1e-5, atol=1e-5)
