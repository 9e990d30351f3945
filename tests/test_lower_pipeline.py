"""The default lowering pipeline (vkir.lowering) on representative kernels: vector add with a
symbolic size, 2-D matmul, shared-memory tree reduction, vectorized and vector-typed kernels,
an explicit pointer cast, a bool mask, a CSE-heavy kernel, a reduction with a fused epilogue, and
a software-pipelined tiled matmul (async stage, shared memory) and a synchronous per-thread
pipeline.

For each: `vkir.lower(f, verify_each=True)` passes the explicit-cast checker after every pass; every
intermediate function is also well formed; the result passes `verify_types(target="vulkan")` and
`verify_well_formed`, lowering is deterministic, the lowered function interprets bit for bit like
the original on random inputs, its SPIR-V validates in SPIRV-Tools, and (device tests) it runs
on the Vulkan device like the interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest

import vkir
from vkir.testing import interpret_lowered, random_arguments
from vkir import ir
from vkir.analysis import verify_types, verify_well_formed
from vkir.tools.demo import VADD_SOURCE
from vkir.lowering import default_passes, lower

from pipeline_reference import synchronous

MATMUL = '''
@T.prim_func
def matmul(A: T.Buffer((48, 40), "float32"), B: T.Buffer((40, 24), "float32"),
           C: T.Buffer((48, 24), "float32")):
    for by in T.thread_binding(6, "blockIdx.y"):
        for bx in T.thread_binding(3, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    acc = T.alloc_buffer((1,), "float32", scope="local")
                    acc[0] = T.float32(0)
                    for k in T.serial(40):
                        acc[0] = acc[0] + A[by * 8 + ty, k] * B[k, bx * 8 + tx]
                    C[by * 8 + ty, bx * 8 + tx] = acc[0]
'''

REDUCE = '''
@T.prim_func
def block_sum(A: T.Buffer(("n",), "float32"), B: T.Buffer(((n + 63) // 64,), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            S = T.alloc_buffer((64,), "float32", scope="shared")
            i = bx * 64 + tx
            if i < n:
                S[tx] = A[i]
            else:
                S[tx] = T.float32(0)
            T.barrier()
            for s in T.serial(6):
                if tx < (32 >> s):
                    S[tx] = S[tx] + S[tx + (32 >> s)]
                T.barrier()
            if tx == 0:
                B[bx] = S[0]
'''

AXPY4 = '''
@T.prim_func
def axpy4(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"),
          C: T.Buffer((1024,), "float32"), alpha: T.float32):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(4):
                C[bx * 256 + tx * 4 + v] = A[bx * 256 + tx * 4 + v] * alpha + B[bx * 256 + tx * 4 + v]
'''

ROWS = '''
@T.prim_func
def rows(A: T.Buffer(("n", 4), "float32"), B: T.Buffer(("n", 4), "int32"),
         C: T.Buffer(("n", 4), "float32")):
    for bx in T.thread_binding((n + 31) // 32, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            if bx * 32 + tx < n:
                for v in T.vectorized(4):
                    C[bx * 32 + tx, v] = T.exp(A[bx * 32 + tx, 3 - v]) + T.cast(B[bx * 32 + tx, v] * v, "float32")
'''

VEC_TYPED = '''
@T.prim_func
def vec_typed(A: T.Buffer(("n",), "float32x4"), B: T.Buffer(("n",), "float32"),
              C: T.Buffer(("n",), "float32x4")):
    for bx in T.thread_binding((n + 15) // 16, "blockIdx.x"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            i = bx * 16 + tx
            if i < n:
                C[i] = T.select(A[i] > T.broadcast(B[i], 4), A[i] * 2.0, T.broadcast(B[i], 4) - A[i])
'''

VEC_SHARED = '''
@T.prim_func
def vec_shared(A: T.Buffer((512,), "float32"), B: T.Buffer((512,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            S = T.alloc_buffer((128,), "float32", scope="shared")
            for v in T.vectorized(4):
                S[tx * 4 + v] = A[bx * 128 + tx * 4 + v]
            T.barrier()
            for v in T.vectorized(4):
                B[bx * 128 + tx * 4 + v] = S[124 - tx * 4 + v] + S[tx * 4 + v]
'''

POINTER_CAST = '''
@T.prim_func
def pointer_cast(A: T.Buffer((256,), "float32"), B: T.Buffer((64,), "float32x4")):
    A4 = T.decl_buffer((64,), "float32x4", data=A.data)
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            B[bx * 32 + tx] = A4[bx * 32 + tx] * A4[bx * 32 + tx]
'''

BOOL_MASK = '''
@T.prim_func
def bool_mask(A: T.Buffer(("n",), "float32"), M: T.Buffer(("n",), "bool"),
              B: T.Buffer(("n",), "float32"), P: T.Buffer(("n",), "bool")):
    for bx in T.thread_binding((n + 31) // 32, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            if i < n:
                B[i] = T.select(M[i], A[i], T.float32(0))
                P[i] = M[i] and A[i] > T.float32(0) or not M[i] and A[i] < T.float32(-1)
'''

BOOL_MASK_VEC = '''
@T.prim_func
def bool_mask_vec(A: T.Buffer((64, 4), "float32"), M: T.Buffer((64, 4), "bool"),
                  B: T.Buffer((64, 4), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            for v in T.vectorized(4):
                B[bx * 32 + tx, v] = T.if_then_else(M[bx * 32 + tx, v], A[bx * 32 + tx, v], -A[bx * 32 + tx, v])
'''

CSE = '''
@T.prim_func
def cse(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32"), C: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 31) // 32, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            if bx * 32 + tx < n:
                x = A[bx * 32 + tx]
                B[bx * 32 + tx] = T.exp(x * 0.5) + T.exp(x * 0.5) * x
                C[bx * 32 + tx] = (bx * 32 + tx) * (bx * 32 + tx) + (bx * 32 + tx) // 3
'''

FUSED = '''
@T.prim_func
def matmul_bias_relu(A: T.Buffer((16, 8), "float32"), B: T.Buffer((8, 12), "float32"),
                     C: T.Buffer((16, 12), "float32"), D: T.Buffer((16, 12), "float32")):
    temp = T.alloc_buffer((16, 12), "float32")
    for i in T.thread_binding(16, "blockIdx.x"):
        for j in T.thread_binding(12, "threadIdx.x"):
            temp[i, j] = T.float32(0)
            for k in T.serial(8):
                temp[i, j] = temp[i, j] + A[i, k] * B[k, j]
    for i in T.thread_binding(16, "blockIdx.x"):
        for j in T.thread_binding(12, "threadIdx.x"):
            D[i, j] = T.max(temp[i, j] + C[i, j], T.float32(0))
'''

PIPELINED = '''
@T.prim_func
def pipelined_matmul(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
                     C: T.Buffer((32, 32), "float32")):
    for by in T.thread_binding(4, "blockIdx.y"):
        for bx in T.thread_binding(4, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    A_sh = T.alloc_buffer((8, 8), "float32", scope="shared")
                    B_sh = T.alloc_buffer((8, 8), "float32", scope="shared")
                    acc = T.alloc_buffer((1,), "float32", scope="local")
                    acc[0] = T.float32(0)
                    for ko in T.serial(4, annotations={ANNOTATIONS}):
                        A_sh[ty, tx] = A[by * 8 + ty, ko * 8 + tx]
                        B_sh[ty, tx] = B[ko * 8 + ty, bx * 8 + tx]
                        for kk in T.serial(8):
                            acc[0] = acc[0] + A_sh[ty, kk] * B_sh[kk, tx]
                    C[by * 8 + ty, bx * 8 + tx] = acc[0]
'''
_ASYNC = ('"software_pipeline_stage": [0, 0, 1], "software_pipeline_order": [0, 1, 2], '
          '"software_pipeline_async_stages": [0]')
PIPELINED_LOCAL = '''
@T.prim_func
def pipelined_local(A: T.Buffer((64, 16), "float32"), C: T.Buffer((64, 16), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            B = T.alloc_buffer((1,), "float32", scope="local")
            for i in T.serial(16, annotations={"software_pipeline_stage": [0, 1],
                                               "software_pipeline_order": [0, 1]}):
                B[0] = A[bx * 32 + tx, i] * T.float32(2)
                C[bx * 32 + tx, i] = B[0] + T.float32(1)
'''


def _fused():
    from vkir.schedule import fuse_reduction_epilogue

    return fuse_reduction_epilogue(vkir.from_script(FUSED), "temp")


KERNELS = {
    "vadd": lambda: vkir.from_script(VADD_SOURCE),
    "matmul": lambda: vkir.from_script(MATMUL),
    "block_sum": lambda: vkir.from_script(REDUCE),
    "axpy4": lambda: vkir.from_script(AXPY4),
    "rows": lambda: vkir.from_script(ROWS),
    "vec_typed": lambda: vkir.from_script(VEC_TYPED),
    "vec_shared": lambda: vkir.from_script(VEC_SHARED),
    "pointer_cast": lambda: vkir.from_script(POINTER_CAST),
    "bool_mask": lambda: vkir.from_script(BOOL_MASK),
    "bool_mask_vec": lambda: vkir.from_script(BOOL_MASK_VEC),
    "cse": lambda: vkir.from_script(CSE),
    "fused_epilogue": _fused,
    "pipelined_async": lambda: vkir.from_script(
        PIPELINED.replace("{ANNOTATIONS}", "{" + _ASYNC + "}")),
    "pipelined_local": lambda: vkir.from_script(PIPELINED_LOCAL),
}
SIZE = 77  # the value of every symbolic size


def arguments(func, seed=0) -> list:
    """Random inputs (outputs too: a kernel must overwrite what it writes) for `func`'s params:
    symbolic sizes SIZE, scalars 1.5 or 3, integers in [-100, 100)."""
    return random_arguments(func, seed, sizes=SIZE, int_range=(-100, 100),
                            scalars=lambda p: np.float32(1.5) if p.dtype.is_float else 3)


def interpret(func, args) -> list:
    """The arrays after `interpret(func)` on copies of `args` (bools as int8 where lowered)."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpret_lowered(func, *args)  # 8-bit buffers as words where EmulateInt8 ran
    return args


@pytest.fixture(scope="module")
def lowered():
    """name -> (original, lowered with verify_each=True)."""
    out = {}
    for name, make in KERNELS.items():
        func = make()
        out[name] = (func, vkir.lower(func, verify_each=True))
    return out


@pytest.mark.parametrize("name", list(KERNELS))
def test_every_intermediate_is_well_typed_and_well_formed(name):
    func = KERNELS[name]()
    verify_types(func)
    verify_well_formed(func)
    for p in default_passes():
        func = p(func)
        try:
            verify_types(func)
            verify_well_formed(func)
        except vkir.VkirError as exc:
            raise AssertionError(f"after {p!r}:\n{func.script()}") from exc


@pytest.mark.parametrize("name", list(KERNELS))
def test_lowered_kernel_is_checked_and_interprets_like_the_original(lowered, name):
    func, low = lowered[name]
    verify_types(low, target="vulkan")
    verify_well_formed(low)
    vkir.assert_structural_equal(vkir.lower(func), low)  # deterministic
    vkir.assert_structural_equal(lower(func), low)  # the facade runs vkir.lowering's pipeline
    for seed in range(2):
        args = arguments(func, seed)
        # a pipeline-annotated loop races as written: compare with its synchronous meaning
        want, got = interpret(synchronous(func), args), interpret(low, args)
        for p, w, g in zip(func.params, want, got):
            np.testing.assert_array_equal(g, w, err_msg=f"{name}: parameter {p.name}")


@pytest.mark.parametrize("name", list(KERNELS))
def test_lowered_kernel_generates_valid_spirv(lowered, name):
    from vkir import spirv
    from vkir.spirv.tools import diagnose

    target = spirv.Target.lavapipe()
    module = spirv.codegen(lowered[name][1], target)
    problem = diagnose(module.words, target.env)
    assert problem is None, f"{name}: {problem.report()}"


def test_what_the_pipeline_did():
    """Spot checks that the representative kernels exercise the passes they are here for."""
    def low(name):
        return lower(KERNELS[name]())

    def nodes(func, cls):
        return [n for n in ir.walk(func.body) if isinstance(n, cls)]

    # FlattenBuffer: every access in the lowered matmul is 1-d
    assert all(len(n.indices) == 1 for n in nodes(low("matmul"), (ir.BufferLoad, ir.BufferStore)))
    # VectorizeLoop + VectorTypeRewrite: axpy4 reads and writes float32x4 buffers
    axpy = low("axpy4")
    assert {str(axpy.buffer_map[p].dtype) for p in axpy.params if p in axpy.buffer_map} == \
        {"float32x4"}
    assert not [f for f in nodes(axpy, ir.For) if f.kind == "vectorized"]
    # BoolToInt8: no bool buffer is left
    for name in ("bool_mask", "bool_mask_vec"):
        func = low(name)
        assert not [b for b in func.buffer_map.values() if b.dtype.element_of().is_bool]
    # CommonSubexprElim: exp(A[i] * 0.5) is computed once
    assert sum(isinstance(n, ir.Call) and n.op == "exp" for n in ir.walk(low("cse").body)) == 1
    # InjectSoftwarePipeline + LowerAsync: no async node left; the pipelined loops lost one
    # iteration to the prologue; the double-buffered tiles are synchronised once per k-tile
    func = low("pipelined_async")
    assert not nodes(func, (ir.AsyncScope, ir.AsyncCommitQueue, ir.AsyncWaitQueue))
    (ko,) = [f for f in nodes(func, ir.For) if f.loop_var.name == "ko"]
    assert ko.extent == ir.const(3)
    assert len(nodes(ko, ir.Barrier)) == 1
    (i,) = [f for f in nodes(low("pipelined_local"), ir.For) if f.loop_var.name == "i"]
    assert i.extent == ir.const(15)


@pytest.mark.device
@pytest.mark.parametrize("name", list(KERNELS))
def test_lowered_kernel_runs_on_device_like_the_interpreter(device, name):
    func = KERNELS[name]()
    k = vkir.build(func, device=device)
    vkir.assert_structural_equal(k.ir, lower(func, k.target))
    args = arguments(func, 3)
    want = interpret(synchronous(func), args)
    k(*args)
    for p, w, g in zip(func.params, want, args):
        if isinstance(w, np.ndarray) and w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5, err_msg=f"{name}: {p.name}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{name}: {p.name}")
