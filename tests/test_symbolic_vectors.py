"""Vector loads and stores on buffers of symbolic size: a `T.vectorized(4)` loop over
`T.Buffer(("n",), "float32")` with provably aligned indices gets float32x4 accesses through a
cast of `n // 4` whole vectors (never a byte past the array, whatever n is), and
`vkir.build(f, explain=True)` / `Kernel.report()` say which accesses stayed scalar and why."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.lowering import pipeline
from vkir.target import Target


@T.prim_func
def axpb(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32"), s: T.float32):
    for bx in T.thread_binding(n // 8, "blockIdx.x"):
        for tx in T.thread_binding(2, "threadIdx.x"):
            for v in T.vectorized(4):
                B[bx * 8 + tx * 4 + v] = A[bx * 8 + tx * 4 + v] * s + T.float32(1)


EXPECTED = '''
@T.prim_func
def axpb(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32"), s: T.float32):
    A_x4 = T.decl_buffer((n // 4,), "float32x4", data=A.data)
    B_x4 = T.decl_buffer((n // 4,), "float32x4", data=B.data)
    for bx in T.thread_binding(n // 8, "blockIdx.x"):
        for tx in T.thread_binding(2, "threadIdx.x"):
            cse_v1 = bx * 2 + tx
            B_x4[cse_v1] = A_x4[cse_v1] * T.broadcast(s, 4) + T.broadcast(T.float32(1), 4)
'''


@T.prim_func
def mixed(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding(n // 8, "blockIdx.x"):
        for v in T.vectorized(4):
            B[bx * 8 + 1 + v] = A[bx * 8 + v * 2] + A[bx * 8 + v]


def test_lowered_ir_casts_symbolic_parameters():
    low = vkir.lower(axpb, Target.lavapipe())
    vkir.assert_structural_equal(low, vkir.from_script(EXPECTED), map_free_vars=True)
    names = pipeline(Target()).names
    assert names.index("SymbolicVectorCast") == names.index("VectorTypeRewrite") + 1
    assert "SymbolicVectorCast" not in pipeline(Target(), pointer_casts=True).names
    # the interpreter's pipeline has no casts: its lowered IR keeps the scalar accesses
    assert "SymbolicVectorCast" not in pipeline(Target.interp()).names


@pytest.mark.parametrize("n", [64, 40, 13, 8, 3])
def test_vector_loads_on_the_device_match_numpy_and_the_interpreter(device, n):
    k = vkir.build(axpb, device=device)
    assert "OpTypeVector %float 4" in k.asm
    assert vkir.testing.buffer_reads(k.asm)[1] == 1, k.asm   # a load, or a texel fetch
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = np.full(n, -7, np.float32)
    k(a, b, 0.5)
    covered = n // 8 * 8
    want = np.full(n, -7, np.float32)
    want[:covered] = a[:covered] * np.float32(0.5) + np.float32(1)
    np.testing.assert_allclose(b, want, rtol=1e-6)
    assert np.all(b[covered:] == -7)  # no store past what the kernel covers
    ref = np.full(n, -7, np.float32)
    vkir.interpret(axpb, a, ref, 0.5)
    np.testing.assert_allclose(b, ref, rtol=1e-6)
    dev_a, dev_b = vkir.array(a, device=device), vkir.array(np.full(n, -7, np.float32), device=device)
    k(dev_a, dev_b, 0.5)
    np.testing.assert_allclose(dev_b.numpy(), ref, rtol=1e-6)


def test_report_names_the_scalar_accesses_and_why(device, capsys):
    first, times = vkir.build(axpb, device=device).report().splitlines()
    assert first == "kernel axpb: every vector access is a vector load or store"
    assert times.startswith("compile: ") and "ms creating the pipeline in the driver" in times
    k = vkir.build(mixed, device=device, explain=True)
    err = capsys.readouterr().err
    assert err.strip() == k.report()
    lines = k.report().splitlines()
    assert lines[0] == "kernel mixed: 2 vector access(es) done lane by lane:"
    assert lines[1].startswith("  store B[") and "is not a provable multiple of 4" in lines[1]
    assert lines[2].startswith("  load A[") and "not contiguous (stride 2)" in lines[2]
    # the aligned read A[bx * 8 + v] is one vector load (a texel fetch on llvmpipe)
    assert vkir.testing.buffer_reads(k.asm)[1] == 1
    n = 21
    a = np.arange(n, dtype=np.float32)
    b, ref = np.zeros(n, np.float32), np.zeros(n, np.float32)
    k(a, b)
    vkir.interpret(mixed, a, ref)
    np.testing.assert_array_equal(b, ref)
