"""Robustness fuzzing of the passes, the schedule primitive, lowering and codegen.

Every pass in vkir.transform (default options and the main option variants),
`vkir.schedule.fuse_reduction_epilogue`, `vkir.lower` and `vkir.spirv.codegen(vkir.lower(f))` are
applied to hand-written odd-but-valid kernels (zero-extent loops, symbolic extents, nested thread
bindings, empty bodies, shadowing lets, vector-typed buffers, decl_buffer casts, async scopes,
pipeline annotations that do not fit, bool buffers, strides and offsets...) and to the random
well-typed kernels of tests/test_property_pipeline.py under random pass sequences. The only
exceptions allowed are VkirError subclasses with a message, and only where they are expected: each
odd kernel has its list of refusing passes (and the pipeline refuses exactly those kernels), pairs
of passes never refuse, and in random sequences a pass refuses only programs vkir.lower refuses
too (the sequence then goes on without it). When a pass succeeds, its output passes verify_types
and verify_well_formed and `vkir.interpret` computes what it computes on the input.
Examples are derandomized (the same ones on every run).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vkir
from vkir.testing import interpret_lowered, random_arguments
from vkir import transform as TR
from vkir.analysis import verify_types, verify_well_formed
from vkir.errors import VkirError

from test_property_pipeline import kernels, run_interpreter, assert_outputs_match

PASSES = (
    TR.FlattenBuffer(), TR.VectorizeLoop(), TR.Simplify(), TR.VectorTypeRewrite(),
    TR.VectorTypeRewrite(allowed_lanes=(2, 4, 8)), TR.PointerCastVectorize(),
    TR.PointerCastVectorize(target="vulkan"), TR.BoolToInt8(), TR.CommonSubexprElim(),
    TR.CommonSubexprElim(identify_equiv_terms=True), TR.InjectSoftwarePipeline(), TR.LowerAsync(),
    TR.SplitLongLoops(threshold=2, max_factor=4),  # small limits: the odd kernels' loops split
    TR.SymbolicVectorCast(target="vulkan"), TR.EmulateInt8(), TR.BindParallel(),
    TR.EmulateInt64(),
)


def test_every_pass_is_fuzzed():
    assert {type(p).__name__ for p in PASSES} == set(TR._PASSES)


# odd but valid kernels
ODD = {
"zero_extent": '''
def f(A: T.Buffer((8,), "float32")):
    for i in T.serial(0):
        A[i] = 1.0
    for i in T.vectorized(0):
        A[i] = 2.0
    for i in T.serial(3, 3):
        A[i] = 3.0
''',
"symbolic": '''
def f(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
    for i in T.serial(n):
        B[i] = A[i] * 2.0
    for i in T.serial(n // 4):
        for v in T.vectorized(4):
            B[i * 4 + v] = A[i * 4 + v] + 1.0
''',
"nested_threads": '''
def f(A: T.Buffer((8, 8), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for by in T.thread_binding(2, "blockIdx.y"):
            for tx in T.thread_binding(4, "threadIdx.x"):
                for ty in T.thread_binding(4, "threadIdx.y"):
                    A[bx * 4 + tx, by * 4 + ty] = A[bx * 4 + tx, by * 4 + ty] + 1.0
''',
"empty": '''
def f(A: T.Buffer((8,), "float32")):
    pass
''',
"empty_loops": '''
def f(A: T.Buffer((8,), "float32")):
    for i in T.serial(4):
        pass
    for i in T.vectorized(4):
        pass
    if A[0] > 1.0:
        pass
    else:
        pass
''',
"lets_shadow": '''
def f(A: T.Buffer((8,), "int32")):
    for i in T.serial(4):
        x = i + 1
        A[x] = x * x + x * x
    for i in T.serial(4):
        x = i * 2
        A[x] = x * x + x * x
''',
"vector_buffer2": '''
def f(A: T.Buffer((4,), "float32x4"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        A[i] = A[i] + B[T.ramp(i * 4, 1, 4)]
    for i in T.serial(2):
        A[T.ramp(i * 2, 1, 2)] = A[T.ramp(i * 2, 1, 2)]
''',
"decl_cast": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "int32")):
    V = T.decl_buffer((4,), "float32x4", data=A.data)
    I = T.decl_buffer((16,), "int32", data=A.data)
    for i in T.serial(4):
        V[i] = V[i] * T.broadcast(2.0, 4)
    for i in T.serial(16):
        B[i] = I[i]
''',
"decl_cast_2d": '''
def f(A: T.Buffer((4, 4), "float32")):
    V = T.decl_buffer((4,), "float32x4", data=A.data)
    for i in T.serial(4):
        V[i] = V[i] + T.broadcast(A[i, 0], 4)
''',
"async": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for tx in T.thread_binding(4, "threadIdx.x"):
        S = T.alloc_buffer((4,), "float32", scope="shared")
        with T.async_commit_queue(0):
            with T.async_scope():
                S[tx] = A[tx]
        with T.async_wait_queue(0, 0):
            T.barrier()
            B[tx] = S[3 - tx]
''',
"async_bare": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    with T.async_scope():
        B[0] = A[0]
''',
"annot_not_pipelined": '''
def f(A: T.Buffer((16,), "float32")):
    for i in T.serial(4, annotations={"software_pipeline_stage": [0, 1], "software_pipeline_order": [0, 1]}):
        A[i] = 1.0
    for i in T.serial(4, annotations={"foo": 1}):
        A[i] = 2.0
    for i in T.vectorized(4, annotations={"software_pipeline_stage": [0], "software_pipeline_order": [0]}):
        A[i] = 3.0
''',
"annot_bad": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4, annotations={"software_pipeline_stage": [0, "a"], "software_pipeline_order": [0, 1]}):
        B[i] = A[i]
        A[i] = B[i]
''',
"annot_bad2": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4, annotations={"software_pipeline_stage": 1, "software_pipeline_order": None}):
        B[i] = A[i]
        A[i] = B[i]
''',
"annot_bad3": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4, annotations={"software_pipeline_stage": [0, 1], "software_pipeline_order": [0, 0], "software_pipeline_async_stages": [5]}):
        B[i] = A[i]
        A[i] = B[i]
''',
"annot_bad4": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4, annotations={"software_pipeline_stage": [0, -1], "software_pipeline_order": [1, 0], "software_pipeline_async_stages": "x"}):
        B[i] = A[i]
        A[i] = B[i]
''',
"pipeline_sym": '''
def f(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
    for tx in T.thread_binding(1, "threadIdx.x"):
        S = T.alloc_buffer((1,), "float32", scope="shared")
        for i in T.serial(n, annotations={"software_pipeline_stage": [0, 1], "software_pipeline_order": [0, 1], "software_pipeline_async_stages": [0]}):
            S[0] = A[i]
            B[i] = S[0] * 2.0
''',
"pipeline_zero": '''
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for tx in T.thread_binding(1, "threadIdx.x"):
        S = T.alloc_buffer((1,), "float32", scope="shared")
        for i in T.serial(0, annotations={"software_pipeline_stage": [0, 1], "software_pipeline_order": [0, 1]}):
            S[0] = A[i]
            B[i] = S[0] * 2.0
''',
"pipeline_one_stmt": '''
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8, annotations={"software_pipeline_stage": [0], "software_pipeline_order": [0]}):
        B[i] = A[i]
''',
"pipeline_empty_body": '''
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8, annotations={"software_pipeline_stage": [0, 1], "software_pipeline_order": [0, 1]}):
        pass
''',
"bool_buf": '''
def f(A: T.Buffer((8,), "bool"), B: T.Buffer((8,), "bool"), C: T.Buffer((8,), "float32")):
    for i in T.serial(8):
        B[i] = A[i] and not A[7 - i]
        C[i] = T.select(B[i], 1.0, 0.0)
    for i in T.serial(2):
        for v in T.vectorized(4):
            B[i * 4 + v] = A[i * 4 + v] or C[i * 4 + v] > 0.5
''',
"bool_vec": '''
def f(A: T.Buffer((8,), "bool"), C: T.Buffer((8,), "int32")):
    for i in T.serial(2):
        C[T.ramp(i * 4, 1, 4)] = T.select(A[T.ramp(i * 4, 1, 4)], T.broadcast(1, 4), T.broadcast(0, 4))
''',
"bool_local": '''
def f(A: T.Buffer((8,), "float32")):
    L = T.alloc_buffer((8,), "bool", scope="local")
    for i in T.serial(8):
        L[i] = A[i] > 0.0
    for i in T.serial(8):
        A[i] = T.select(L[i], A[i], 0.0)
''',
"zero_dim": '''
def f(A: T.Buffer((), "float32"), B: T.Buffer((1,), "float32")):
    A[()] = A[()] + B[0]
''',
"vectorized_nested": '''
def f(A: T.Buffer((4, 4), "float32")):
    for i in T.vectorized(4):
        for j in T.vectorized(4):
            A[i, j] = A[j, i] + 1.0
''',
"vectorized_if": '''
def f(A: T.Buffer((16,), "float32"), n: T.int32):
    for i in T.vectorized(16):
        if i < n:
            A[i] = A[i] + 1.0
        else:
            A[i] = 0.0
''',
"vectorized_let_loop": '''
def f(A: T.Buffer((16,), "float32")):
    for i in T.vectorized(4):
        x = i * 4
        for j in T.serial(4):
            A[x + j] = A[x + j] * 2.0
''',
"vectorized_sym": '''
def f(A: T.Buffer(("n",), "float32")):
    for i in T.vectorized(n):
        A[i] = 1.0
''',
"vectorized_barrier": '''
def f(A: T.Buffer((16,), "float32")):
    for i in T.vectorized(4):
        A[i] = 1.0
        T.barrier()
''',
"vectorized_alloc": '''
def f(A: T.Buffer((16,), "float32")):
    for i in T.vectorized(4):
        L = T.alloc_buffer((1,), "float32", scope="local")
        L[0] = A[i]
        A[i] = L[0] + 1.0
''',
"vectorized_vector_buffer": '''
def f(A: T.Buffer((4,), "float32x4")):
    for i in T.vectorized(4):
        A[i] = A[i] + T.broadcast(1.0, 4)
''',
"vectorized_ramp_in": '''
def f(A: T.Buffer((16,), "float32")):
    for i in T.vectorized(4):
        A[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4, 1, 4)] * T.broadcast(2.0, 4)
''',
"cse_stuff": '''
def f(A: T.Buffer((16,), "float32"), n: T.int32):
    for i in T.serial(4):
        A[i] = T.exp(A[i] + 1.0) + T.exp(A[i] + 1.0) + T.cast(n * 2 + 1, "float32") * T.cast(n * 2 + 1, "float32")
        if n * 3 > 2:
            A[i + 4] = T.cast(n * 3, "float32")
''',
"ifte": '''
def f(A: T.Buffer((16,), "float32"), n: T.int32):
    for i in T.serial(16):
        A[i] = T.if_then_else(i < n, A[T.min(i, 15)], 0.0)
''',
"int64_loop": '''
def f(A: T.Buffer((16,), "float32")):
    for i in T.serial(T.int64(16)):
        A[i] = 1.0
''',
"int64_vec": '''
def f(A: T.Buffer((16,), "float32")):
    for i in T.vectorized(T.int64(4)):
        A[i] = 1.0
''',
"strided": '''
def f(A: T.Buffer((4, 4), "float32", strides=(8, 1)), B: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        B[i, j] = A[i, j]
''',
"elem_offset": '''
def f(A: T.Buffer((4,), "float32", elem_offset=2), B: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        B[i] = A[i]
''',
"reduction": '''
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
    temp = T.alloc_buffer((4,), "float32")
    for i in T.serial(4):
        temp[i] = 0.0
        for k in T.serial(8):
            temp[i] = temp[i] + A[i, k]
    for i in T.serial(4):
        B[i] = T.max(temp[i] + C[i], 0.0)
''',
"reduction_weird": '''
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    temp = T.alloc_buffer((4,), "float32")
    for i in T.serial(4):
        temp[i] = 0.0
    for i in T.serial(4):
        B[i] = temp[i]
''',
"reduction_noinit": '''
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    temp = T.alloc_buffer((4,), "float32")
    for i in T.serial(4):
        for k in T.serial(8):
            temp[i] = temp[i] + A[i, k]
    for i in T.serial(4):
        B[i] = temp[i] * 2.0
''',
"reduction_zero": '''
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    temp = T.alloc_buffer((4,), "float32")
    for i in T.serial(4):
        temp[i] = 0.0
        for k in T.serial(0):
            temp[i] = temp[i] + A[i, k]
    for i in T.serial(4):
        B[i] = temp[i] * 2.0
''',
"reduction_shifted": '''
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    temp = T.alloc_buffer((4,), "float32")
    for i in T.serial(4):
        temp[i] = 0.0
        for k in T.serial(8):
            temp[i] = temp[i] + A[i, k]
    for i in T.serial(3):
        B[i] = temp[i + 1]
''',
"reduction_vec": '''
def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4,), "float32")):
    temp = T.alloc_buffer((4,), "float32")
    for i in T.vectorized(4):
        temp[i] = 0.0
    for k in T.serial(8):
        for i in T.vectorized(4):
            temp[i] = temp[i] + A[i, k]
    for i in T.serial(4):
        B[i] = temp[i]
''',
"reduction_local_scalar": '''
def f(A: T.Buffer((8,), "float32"), B: T.Buffer((1,), "float32")):
    temp = T.alloc_buffer((1,), "float32", scope="local")
    temp[0] = 0.0
    for k in T.serial(8):
        temp[0] = temp[0] + A[k]
    B[0] = temp[0] * 0.5
''',
"reduction_int": '''
def f(A: T.Buffer((4, 8), "int32"), B: T.Buffer((4,), "int32")):
    temp = T.alloc_buffer((4,), "int32")
    for i in T.serial(4):
        temp[i] = 0
        for k in T.serial(8):
            temp[i] = temp[i] + A[i, k]
    for i in T.serial(4):
        B[i] = T.min(T.max(temp[i], -5), 5)
''',
"shared_2d": '''
def f(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
    for ty in T.thread_binding(4, "threadIdx.y"):
        for tx in T.thread_binding(4, "threadIdx.x"):
            S = T.alloc_buffer((4, 4), "float32", scope="shared")
            S[ty, tx] = A[ty, tx]
            T.barrier()
            B[ty, tx] = S[tx, ty]
''',
"shuffle": '''
def f(V: T.Buffer((4,), "float32x4")):
    for i in T.serial(4):
        V[i] = T.shuffle([V[i], V[3 - i]], [7, 6, 1, 0])
''',
"reinterpret": '''
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "int32")):
    for i in T.serial(4):
        B[i] = T.reinterpret(A[i], "int32") ^ 7
''',
"unroll": '''
def f(A: T.Buffer((4,), "float32")):
    for i in T.unroll(4):
        A[i] = A[i] + 1.0
''',
"lanes8": '''
def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(2):
        B[T.ramp(i * 8, 1, 8)] = A[T.ramp(i * 8, 1, 8)]
    for i in T.serial(8):
        B[T.ramp(i * 2, 1, 2)] = A[T.ramp(i * 2, 1, 2)]
''',
"ramp_unaligned": '''
def f(A: T.Buffer((17,), "float32"), B: T.Buffer((16,), "float32")):
    for i in T.serial(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4 + 1, 1, 4)]
''',
"fp16_vec": '''
def f(A: T.Buffer((16,), "float16"), B: T.Buffer((16,), "float16")):
    for i in T.vectorized(16):
        B[i] = A[i] * T.float16(2.0)
''',
"int8_vec": '''
def f(A: T.Buffer((16,), "int8"), B: T.Buffer((16,), "int8")):
    for i in T.vectorized(16):
        B[i] = A[i] + T.int8(1)
''',
"u8_shift": '''
def f(A: T.Buffer((16,), "uint8"), B: T.Buffer((16,), "uint8")):
    for i in T.serial(16):
        B[i] = (A[i] >> 1) | (A[i] << 7)
''',
"int64": '''
def f(A: T.Buffer((4,), "int64"), B: T.Buffer((4,), "int64")):
    for i in T.serial(4):
        B[i] = A[i] * T.int64(3) // T.int64(2)
''',
"float64": '''
def f(A: T.Buffer((4,), "float64"), B: T.Buffer((4,), "float64")):
    for i in T.serial(4):
        B[i] = T.sqrt(T.fabs(A[i]))
''',
"side_effect_call": '''
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    T.evaluate(T.call("int32", "tvm_side_effect", n))
    A[0] = n
''',
"evaluate_expr": '''
def f(A: T.Buffer((4,), "int32"), n: T.int32):
    T.evaluate(n + 1)
    T.evaluate(A[0])
''',
"let_expr": '''
def f(A: T.Buffer((16,), "int32"), n: T.int32):
    A[0] = T.let(q := n * 2, q + T.let(r := q + 1, r * q))
    for i in T.vectorized(4):
        A[i] = T.let(q := i * 2, q + q)
''',
"thread_loop_serial_inside_vec": '''
def f(A: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(16, "threadIdx.x"):
        for v in T.vectorized(4):
            A[tx * 4 + v] = A[tx * 4 + v] + 1.0
''',
"big_extent_thread": '''
def f(A: T.Buffer((4096,), "float32")):
    for tx in T.thread_binding(4096, "threadIdx.x"):
        A[tx] = 1.0
''',
"threadidx_sym": '''
def f(A: T.Buffer(("n",), "float32")):
    for tx in T.thread_binding(n, "threadIdx.x"):
        A[tx] = 1.0
''',
"two_thread_loops_same": '''
def f(A: T.Buffer((8,), "float32")):
    for tx in T.thread_binding(4, "threadIdx.x"):
        A[tx] = 1.0
    for tx in T.thread_binding(4, "threadIdx.x"):
        A[tx + 4] = 2.0
''',
"thread_nonzero_min": '''
def f(A: T.Buffer((8,), "float32")):
    for tx in T.thread_binding(2, 6, "threadIdx.x"):
        A[tx] = 1.0
''',
"large_shared": '''
def f(A: T.Buffer((8,), "float32")):
    for tx in T.thread_binding(4, "threadIdx.x"):
        S = T.alloc_buffer((100000,), "float32", scope="shared")
        S[tx] = 1.0
        A[tx] = S[tx]
''',
"local_big_vec": '''
def f(A: T.Buffer((8,), "float32x4")):
    L = T.alloc_buffer((8,), "float32x4", scope="local")
    for i in T.serial(8):
        L[i] = A[i]
    for i in T.serial(8):
        A[i] = L[7 - i]
''',
"global_alloc": '''
def f(A: T.Buffer((8,), "float32")):
    G = T.alloc_buffer((8,), "float32")
    for i in T.serial(8):
        G[i] = A[i]
        A[i] = G[i] * 2.0
''',
"scalar_params": '''
def f(A: T.Buffer((8,), "float32"), x: T.float32, k: T.int32, b: T.bool, h: T.float16, u: T.uint32):
    for i in T.serial(8):
        A[i] = T.select(b, x, T.cast(k, "float32")) + T.cast(h, "float32") + T.cast(u, "float32")
''',
"uses_param_extent": '''
def f(A: T.Buffer((8,), "float32"), k: T.int32):
    for i in T.serial(k):
        A[i % 8] = 1.0
''',
"only_scalar": '''
def f(k: T.int32):
    T.evaluate(k)
''',
"no_params": '''
def f():
    pass
''',
}


# ---------------------------------------------------------------------------------------------
# checks


def _arguments(func, seed=0):
    """Random numpy arguments for `func`: symbolic sizes 8, small values (ints in -5..4), 1.5 or 3
    for float or int scalars."""
    return random_arguments(func, seed, sizes=8, int_range=(-5, 5),
                            scalars=lambda p: True if p.dtype.is_bool else
                            1.5 if p.dtype.is_float else 3)


def _run(func, args, original=None):
    """Copies of `args` after interpret(func, ...) (bool arrays as int8 where BoolToInt8 changed
    a buffer to int8; sizes only 8-bit buffers named bound on `original`'s signature)."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpret_lowered(func, *args, original=original)  # 8-bit buffers as words (EmulateInt8)
    return args


def _same(got, want, what):
    for k, (g, w) in enumerate(zip(got, want)):
        if not isinstance(w, np.ndarray):
            continue
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{what}: argument {k}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what}: argument {k}")


def _refusal_is_precise(err: VkirError, what: str):
    assert str(err).strip(), f"{what} raised {type(err).__name__} without a message"
    # tests/checker_plugin.py turns an ill-typed pass result into this TypeCheckError: a pass bug
    assert "into an ill-typed one" not in str(err), f"{what}: {err}"


def apply_checked(name, func, transform, want, may_refuse=True):
    """`transform(func)` refuses with a VkirError (only where `may_refuse`), or returns a
    well-typed, well-formed function that interprets like `func` (`want`: the input's results,
    None if it cannot run). Returns None for a refusal."""
    try:
        out = transform(func)
    except VkirError as err:
        _refusal_is_precise(err, f"{name}")
        if not may_refuse:
            pytest.fail(f"{name} refused a program that it must accept: {err}")
        return None
    verify_types(out)
    verify_well_formed(out)
    if want is not None:
        _same(_run(out, _ARGS[id(func)], original=func), want, name)
    return out


_ARGS = {}


def _reference(func):
    verify_types(func)
    verify_well_formed(func)
    args = _ARGS[id(func)] = _arguments(func)
    try:
        return _run(func, args)
    except VkirError:  # e.g. an out-of-bounds access for these sizes: compare nothing
        return None


def _fuse(func):
    return vkir.schedule.fuse_reduction_epilogue(func, "temp")


def _codegen(func):
    lowered = vkir.lower(func)
    for target in (vkir.spirv.Target(), vkir.spirv.Target.lavapipe()):
        try:
            vkir.spirv.codegen(lowered, target)
        except vkir.UnsupportedError as err:
            _refusal_is_precise(err, "codegen")
    return lowered


# the passes that refuse each odd kernel (all others must accept it): a pass that refused more
# (or everything) fails, and so does one that stopped refusing what it cannot handle
EXPECTED_REFUSALS = {
    **{name: {"InjectSoftwarePipeline"} for name in (
        "annot_bad", "annot_bad2", "annot_bad3", "annot_bad4", "annot_not_pipelined",
        "pipeline_empty_body")},
    **{name: {"VectorizeLoop"} for name in (
        "vectorized_alloc", "vectorized_barrier", "vectorized_let_loop", "vectorized_nested",
        "vectorized_sym")},
}


def _pipeline_accepts(func) -> bool:
    try:
        vkir.lower(func)
    except VkirError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_kernels_survive_every_pass(name):
    func = vkir.from_script(ODD[name])
    want = _reference(func)
    expected = EXPECTED_REFUSALS.get(name, set())
    refused = {p.name for p in PASSES
               if apply_checked(f"{p!r} on {name}", func, p, want) is None}
    assert refused == expected, f"{name}: refused by {sorted(refused)}, expected {sorted(expected)}"
    lowered = apply_checked(f"vkir.lower on {name}", func, vkir.lower, want)
    assert (lowered is None) == bool(refused), f"{name}: a pass refuses what the pipeline accepts"
    apply_checked(f"codegen of {name}", func, _codegen, want)
    if name.startswith("reduction"):
        apply_checked(f"fuse_reduction_epilogue on {name}", func, _fuse, want)


@pytest.mark.parametrize("name", ["vector_buffer2", "decl_cast", "bool_buf", "async",
                                  "lets_shadow", "strided", "elem_offset", "reduction"])
def test_odd_kernels_survive_pairs_of_passes(name):
    func = vkir.from_script(ODD[name])
    want = _reference(func)
    for a in PASSES:
        for b in PASSES:
            apply_checked(f"{a!r} then {b!r} on {name}", func, lambda f: b(a(f)), want,
                          may_refuse=False)


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_kernels_survive_random_pass_sequences(data):
    kernel = data.draw(kernels(), label="kernel")
    func = kernel.func()
    seq = data.draw(st.lists(st.sampled_from(PASSES), min_size=1, max_size=4), label="passes")
    out = func
    for p in seq:  # a pass may refuse only what the whole pipeline refuses; then it is skipped
        try:
            out = p(out)
        except VkirError as err:
            _refusal_is_precise(err, repr(p))
            assert not _pipeline_accepts(out), f"{p!r} refused a program vkir.lower accepts: {err}"
    verify_types(out)
    verify_well_formed(out)
    assert_outputs_match(kernel, run_interpreter(out, kernel), run_interpreter(func, kernel),
                         approx=False)


# ---------------------------------------------------------------------------------------------
# reproducers of the crashes this fuzzing found


def test_flatten_buffer_counts_elem_offset_in_the_flat_extent():
    """FlattenBuffer gave a buffer with elem_offset=2 and shape (4,) a flat view of 4 elements
    (reading element 4 + 2 out of bounds); the view spans offset + count elements."""
    func = vkir.from_script(ODD["elem_offset"])
    flat = TR.FlattenBuffer()(func)
    decls = [n for n in vkir.ir.walk(flat.body) if isinstance(n, vkir.ir.DeclBuffer)]
    assert [(d.buffer.name, d.buffer.shape[0].value) for d in decls] == [("A_flat", 6)]
    a, b = np.arange(1, 5, dtype=np.float32), np.zeros(4, np.float32)
    vkir.interpret(flat, a, b)  # the argument is the logical array; the offset is layout
    np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("buffer", [None, 3, 1.5, ["temp"]])
def test_fuse_reduction_epilogue_rejects_a_non_buffer(buffer):
    """A `buffer` that is neither a Buffer nor a name was an AttributeError from inside."""
    func = vkir.from_script(ODD["reduction"])
    with pytest.raises(TypeError, match="must be a Buffer or a buffer name"):
        vkir.schedule.fuse_reduction_epilogue(func, buffer)


def test_fuse_reduction_epilogue_and_codegen_reject_a_non_function():
    with pytest.raises(TypeError, match="expects a PrimFunc"):
        vkir.schedule.fuse_reduction_epilogue(None, "temp")
    with pytest.raises(TypeError, match="expects a lowered PrimFunc"):
        vkir.spirv.codegen("not a function")
    func = vkir.lower(vkir.from_script(ODD["unroll"]))
    with pytest.raises(TypeError, match="expects a vkir.spirv.Target"):
        vkir.spirv.codegen(func, "vulkan1.1")


@pytest.mark.parametrize("buffer, message", [
    ("nope", "no allocation of buffer 'nope'"),
    ("A", "is a function parameter"),
    ("B", "is a function parameter"),
])
def test_fuse_reduction_epilogue_names_the_buffer_it_cannot_fuse(buffer, message):
    func = vkir.from_script(ODD["reduction"])
    with pytest.raises(vkir.ScheduleError, match=message):
        vkir.schedule.fuse_reduction_epilogue(func, buffer)


def _deep_kernel(depth: int):
    return vkir.from_script(
        'def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "int32")):\n'
        "    A[0] = " + " + ".join(["A[1]"] * depth) + "\n"
        "    B[0] = " + " * ".join(["(B[1] + 1)"] * depth) + "\n")


def test_deep_expressions_go_through_every_stage():
    """A 450-term sum (the parser accepts up to ~2500) hit Python's recursion limit in the
    passes, verify_types, the interpreter and codegen: RecursionError from deep inside. Like the
    parser and printer, they now raise the limit while they run."""
    func = _deep_kernel(450)
    verify_types(func)
    verify_well_formed(func)
    for p in (TR.CommonSubexprElim(identify_equiv_terms=True), TR.FlattenBuffer()):
        verify_types(p(func))
    lowered = vkir.lower(func)
    vkir.spirv.codegen(lowered)  # (Target.lavapipe() works too, in quadratic time: ~4 s)
    for f in (func, lowered):
        a, b = np.ones(4, np.float32), np.full(4, 2, np.int32)
        vkir.interpret(f, a, b)
        assert a[0] == 450 and b[0] == np.int32(np.uint32(pow(3, 450, 2**32)).view(np.int32))
