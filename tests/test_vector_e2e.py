"""Vector typing end to end on a Vulkan device (lavapipe in CI): `T.vectorized` loops become
`float32x4` storage buffers and OpTypeVector loads/stores (VectorTypeRewrite), unaligned accesses
are scalarized and still correct, explicit pointer casts (PointerCastVectorize) bind one VkBuffer
twice, shared memory is vector-typed too, and bool masks work. Every result is checked against
numpy and the interpreter, with the validation layer on."""

import re

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.testing import buffer_reads
from vkir.transform import FlattenBuffer, PointerCastVectorize, Simplify, VectorizeLoop

pytestmark = pytest.mark.device


def _types(asm: str) -> dict[str, str]:
    """Result id -> type id of every typed instruction in a disassembly."""
    out = {}
    for line in asm.splitlines():
        m = re.match(r"\s*(%\w+) = Op\w+ (%\w+)", line)
        if m and not re.match(r"\s*%\w+ = OpType", line):
            out[m.group(1)] = m.group(2)
    return out


def vector_accesses(asm: str, vector="%v4float") -> tuple[int, int]:
    """(number of reads producing `vector`: OpLoads, or texel fetches of four channels where
    llvmpipe reads a read-only buffer as a texel buffer; number of OpStore writing a `vector`
    value)."""
    assert re.search(rf"{vector} = OpTypeVector %float 4", asm), "no OpTypeVector %float 4"
    types = _types(asm)
    loads = buffer_reads(asm, vector=vector)[1]
    stores = sum(types.get(obj) == vector for obj in re.findall(r"OpStore %\w+ (%\w+)", asm))
    return loads, stores


def _param_dtypes(func) -> list[str]:
    return [str(func.buffer_map[p].dtype) for p in func.params if p in func.buffer_map]


def _interpret(func, *args):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    vkir.interpret(func, *args)
    return args


# ----------------------------------------------------------------------------------------------
# VectorTypeRewrite: vector loads and stores


@T.prim_func
def axpy4(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"),
          C: T.Buffer((4096,), "float32")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(4):
                C[bx * 256 + tx * 4 + v] = A[bx * 256 + tx * 4 + v] * 2.0 + B[bx * 256 + tx * 4 + v]


def test_vectorized_loop_gives_vector_loads_and_stores(device):
    k = vkir.build(axpy4, device=device)
    assert _param_dtypes(k.ir) == ["float32x4"] * 3
    loads, stores = vector_accesses(k.asm)
    assert (loads, stores) == (2, 1)
    assert buffer_reads(k.asm)[0] == 0  # nothing scalarized
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 4096)).astype("float32")
    c = np.zeros(4096, "float32")
    k(a, b, c)
    np.testing.assert_allclose(c, a * 2 + b, rtol=1e-6)
    np.testing.assert_array_equal(c, _interpret(axpy4, a, b, np.zeros_like(c))[2])


@T.prim_func
def halves(A: T.Buffer((1024,), "int32"), B: T.Buffer((1024,), "int32")):
    for bx in T.thread_binding(8, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(2):
                B[bx * 128 + tx * 2 + v] = A[bx * 128 + tx * 2 + v] * 3 - A[bx * 128 + tx * 2]


def test_two_lane_int_vectors(device):
    k = vkir.build(halves, device=device)
    assert _param_dtypes(k.ir) == ["int32x2", "int32x2"]
    assert re.search(r"%v2int = OpTypeVector %int 2", k.asm)
    assert len(re.findall(r"= OpLoad %v2int ", k.asm)) == 2  # the ramp, and the lane-0 read
    a = np.random.default_rng(5).integers(-1000, 1000, 1024).astype("int32")
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_array_equal(b, a * 3 - np.repeat(a[::2], 2))


@T.prim_func
def rows4(A: T.Buffer(("n", 4), "float32"), B: T.Buffer(("n", 4), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            if bx * 64 + tx < n:
                for v in T.vectorized(4):
                    B[bx * 64 + tx, v] = T.exp(A[bx * 64 + tx, v]) - A[bx * 64 + tx, 3 - v]


@pytest.mark.parametrize("n", [1, 63, 64, 1000])
def test_symbolic_rows_through_the_flat_alias(device, n):
    k = vkir.build(rows4, device=device)
    assert _param_dtypes(k.ir) == ["float32x4", "float32x4"]
    a = np.random.default_rng(n).standard_normal((n, 4)).astype("float32")
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_allclose(b, np.exp(a) - a[:, ::-1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, _interpret(rows4, a, np.zeros_like(a))[1], rtol=1e-6,
                               atol=1e-6)


def test_rows_kernel_loads_each_row_once(device):
    asm = vkir.build(rows4, device=device).asm
    loads, stores = vector_accesses(asm)
    assert stores == 1 and loads >= 1
    assert buffer_reads(asm)[0] == 0  # A[.., 3 - v] is a shuffle of the vector, not a scalar load


# ----------------------------------------------------------------------------------------------
# refusals still run correctly, scalarized


@T.prim_func
def shifted(A: T.Buffer((4097,), "float32"), B: T.Buffer((4096,), "float32")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(4):
                B[bx * 256 + tx * 4 + v] = A[bx * 256 + tx * 4 + v + 1] + 1.0


def test_unaligned_offset_is_scalarized_and_correct(device):
    k = vkir.build(shifted, device=device)
    assert _param_dtypes(k.ir) == ["float32", "float32x4"]
    loads, stores = vector_accesses(k.asm)
    assert (loads, stores) == (0, 1)
    assert buffer_reads(k.asm)[0] == 4  # one per lane
    a = np.random.default_rng(1).standard_normal(4097).astype("float32")
    b = np.zeros(4096, "float32")
    k(a, b)
    np.testing.assert_array_equal(b, a[1:] + np.float32(1))


@T.prim_func
def runtime_offset(A: T.Buffer((4100,), "float32"), B: T.Buffer((4096,), "float32"),
                   off: T.int32):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(4):
                B[bx * 256 + tx * 4 + v] = A[bx * 256 + tx * 4 + v + off] * 3.0


@pytest.mark.parametrize("off", [0, 1, 3, 4])
def test_offset_only_known_at_run_time(device, off):
    k = vkir.build(runtime_offset, device=device)
    assert _param_dtypes(k.ir) == ["float32", "float32x4"]
    a = np.random.default_rng(off).standard_normal(4100).astype("float32")
    b = np.zeros(4096, "float32")
    k(a, b, off)
    np.testing.assert_array_equal(b, a[off:off + 4096] * np.float32(3))


# ----------------------------------------------------------------------------------------------
# shared memory becomes vector-typed workgroup memory


@T.prim_func
def reverse_blocks(A: T.Buffer((2048,), "float32"), B: T.Buffer((2048,), "float32")):
    for bx in T.thread_binding(8, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            S = T.alloc_buffer((256,), "float32", scope="shared")
            for v in T.vectorized(4):
                S[tx * 4 + v] = A[bx * 256 + tx * 4 + v]
            T.barrier()
            for v in T.vectorized(4):
                B[bx * 256 + tx * 4 + v] = S[(63 - tx) * 4 + v]


def test_shared_memory_vector_typed(device):
    k = vkir.build(reverse_blocks, device=device)
    allocs = [n.buffer for n in vkir.ir.walk(k.ir) if isinstance(n, vkir.ir.AllocBuffer)]
    assert [str(b.dtype) for b in allocs] == ["float32x4"]
    assert re.search(r"OpTypeArray %v4float", k.asm)
    assert vector_accesses(k.asm) == (2, 2)
    a = np.random.default_rng(2).standard_normal(2048).astype("float32")
    b = np.zeros_like(a)
    k(a, b)
    want = a.reshape(8, 64, 4)[:, ::-1, :].reshape(-1)
    np.testing.assert_array_equal(b, want)


# ----------------------------------------------------------------------------------------------
# PointerCastVectorize: one buffer read as float32 and float32x4


@T.prim_func
def plus_element(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"), k: T.int32):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(4):
                B[bx * 256 + tx * 4 + v] = A[bx * 256 + tx * 4 + v] + A[k]


def _cast_vectorized(func):
    for p in (FlattenBuffer(), VectorizeLoop(), Simplify(), PointerCastVectorize(target="vulkan")):
        func = p(func)
    return func


def test_pointer_cast_binds_the_buffer_twice(device):
    # the default pipeline must leave A scalar: it is read at a lane no analysis can know
    plain = vkir.build(plus_element, device=device)
    assert _param_dtypes(plain.ir) == ["float32", "float32x4"]
    assert vector_accesses(plain.asm) == (0, 1)

    casted = _cast_vectorized(plus_element)
    k = vkir.build(casted, device=device)
    a_bindings = [b for b in k.module.bindings if b.param_index == 0]
    assert sorted(str(b.buffer.dtype) for b in a_bindings) == ["float32", "float32x4"]
    assert vector_accesses(k.asm) == (1, 1)
    assert len(re.findall(r"OpDecorate %\w+ Aliased", k.asm)) >= 2
    a = np.random.default_rng(3).standard_normal(4096).astype("float32")
    for index in (0, 5, 4095):
        b = np.zeros_like(a)
        k(a, b, index)
        np.testing.assert_array_equal(b, a + a[index])
        np.testing.assert_array_equal(b, _interpret(casted, a, np.zeros_like(a), index)[1])


def test_build_option_pointer_casts(device):
    """vkir.build(..., pointer_casts=True) runs PointerCastVectorize inside the default pipeline."""
    k = vkir.build(plus_element, device=device, pointer_casts=True)
    assert vector_accesses(k.asm) == (1, 1)
    assert sorted(c.name for c in _casts(k.ir)) == ["A_x4", "B_x4"]
    a = np.random.default_rng(4).standard_normal(4096).astype("float32")
    b = np.zeros_like(a)
    k(a, b, 7)
    np.testing.assert_array_equal(b, a + a[7])


@T.prim_func
def write_then_read(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"),
                    C: T.Buffer((256,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(4):
                B[bx * 256 + tx * 4 + v] = A[bx * 256 + tx * 4 + v] * 2.0
            C[bx * 64 + tx] = B[bx * 256 + tx * 4 + 3] - B[bx * 256 + tx * 4]


def test_store_through_the_cast_then_read_through_the_scalar_view(device):
    # within one invocation the vec4 store through B_x4 must be seen by the float loads of B:
    # both descriptors of the one VkBuffer are decorated Aliased
    casted = _cast_vectorized(write_then_read)
    assert sorted(c.name for c in _casts(casted)) == ["A_x4", "B_x4"]
    k = vkir.build(casted, device=device)
    assert vector_accesses(k.asm) == (1, 1)
    assert len(re.findall(r"= OpLoad %float ", k.asm)) == 2
    a = np.random.default_rng(6).standard_normal(1024).astype("float32")
    b, c = np.zeros_like(a), np.zeros(256, "float32")
    k(a, b, c)
    np.testing.assert_array_equal(b, a * 2)
    np.testing.assert_array_equal(c, 2 * a[3::4] - 2 * a[0::4])


def _casts(func):
    return [n.buffer for n in vkir.ir.walk(func) if isinstance(n, vkir.ir.DeclBuffer)
            and n.buffer.dtype != n.buffer.data.dtype.element]


def test_pointer_cast_of_shared_memory_is_refused_for_vulkan():
    with pytest.raises(vkir.UnsupportedError, match="shared buffer 'S'"):
        _cast_vectorized(reverse_blocks)


# ----------------------------------------------------------------------------------------------
# bool masks (stored as int8 by BoolToInt8)


@T.prim_func
def masked(M: T.Buffer((1024,), "bool"), A: T.Buffer((1024,), "float32"),
           B: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for v in T.vectorized(4):
                B[bx * 256 + tx * 4 + v] = T.select(M[bx * 256 + tx * 4 + v],
                                                    A[bx * 256 + tx * 4 + v], -1.0)


def test_bool_mask_kernel(device):
    k = vkir.build(masked, device=device)
    assert _param_dtypes(k.ir)[1:] == ["float32x4", "float32x4"]
    rng = np.random.default_rng(4)
    m = rng.random(1024) < 0.5
    a = rng.standard_normal(1024).astype("float32")
    b = np.zeros_like(a)
    k(m, a, b)
    np.testing.assert_array_equal(b, np.where(m, a, np.float32(-1)))
    np.testing.assert_array_equal(b, _interpret(masked, m, a, np.zeros_like(a))[2])


def test_vector_buffers_take_and_give_arrays_with_a_lane_axis():
    """A float32x4 buffer of shape (8,) takes the natural (8, 4) array (and still the flat one),
    on the device and in the interpreter alike; a wrong lane count is refused."""
    import numpy as np

    import vkir

    f = vkir.from_script('''
@T.prim_func
def scale4(a: T.Buffer((8,), "float32x4"), b: T.Buffer((8,), "float32x4")):
    for i in T.thread_binding(8, "threadIdx.x"):
        b[i] = a[i] * T.broadcast(T.float32(2), 4)
''')
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    k = vkir.build(f)
    b = np.zeros((8, 4), np.float32)
    k(a, b)
    np.testing.assert_array_equal(b, 2 * a)
    c = np.zeros((8, 4), np.float32)
    vkir.interpret(f, a, c)
    np.testing.assert_array_equal(c, b)
    flat = np.zeros(32, np.float32)
    k(a.ravel(), flat)
    np.testing.assert_array_equal(flat, b.ravel())
    on_device = vkir.array(np.zeros((8, 4), np.float32))
    k(vkir.array(a), on_device)
    assert on_device.shape == (8, 4)
    np.testing.assert_array_equal(on_device.numpy(), b)
    with pytest.raises(vkir.ArgumentError, match="needs 1 dims, got an array of shape"):
        k(np.zeros((8, 3), np.float32), flat)
