"""Read-only parameters read through uniform texel buffers on llvmpipe (the storage_loads_per_lane
quirk): codegen (which bindings, spirv-val), numerics against the interpreter on both drivers
(SwiftShader keeps storage buffers), bounds checks, aliasing, the storage-buffer fallback,
sequences, launches and the compile cache."""

import types

import numpy as np
import pytest

import vkir
from vkir.quirks import STORAGE_LOADS_PER_LANE
from vkir.script import T
from vkir.spirv import codegen
from vkir.target import Target


@T.prim_func
def mixed(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32x4"),
          i: T.Buffer(("n",), "int32"), u: T.Buffer(("n",), "uint32"),
          c: T.Buffer(("n",), "float32"), d: T.Buffer(("n",), "uint32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            j = bx * 64 + tx
            if j < n:
                v = b[(j * 7) % n]
                c[j] = a[n - 1 - j] * T.float32(0.5) + v[1] - v[3] + T.cast(i[j], "float32")
                d[j] = u[(j * 3) % n] ^ T.uint32(0x5A5A5A5A)


@T.prim_func
def in_place(x: T.Buffer(("n",), "float32"), y: T.Buffer(("n",), "float32")):
    # x is read and written: it stays a storage buffer; y is only read
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            j = bx * 64 + tx
            if j < n:
                x[j] = x[j] + y[j]


@T.prim_func
def shifted(a: T.Buffer(("n",), "float32"), c: T.Buffer(("n",), "float32"), k: T.int32):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            j = bx * 64 + tx
            if j < n:
                c[j] = a[j + k]


@T.prim_func
def narrow(h: T.Buffer((64,), "float16"), p: T.Buffer((64,), "float32x2"),
           c: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        c[tx] = T.cast(h[tx], "float32") + p[tx][0]


def _texel_reads(dev) -> bool:
    """Whether vkir reads through texel buffers on this device (lavapipe and SwiftShader: both
    load storage buffers lane by lane)."""
    return STORAGE_LOADS_PER_LANE in dev.info.quirks


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal((n, 4)).astype(np.float32),
            rng.integers(-1000, 1000, n).astype(np.int32),
            rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32))


def _want(n, seed=0):
    a, b, i, u = _inputs(n, seed)
    c, d = np.zeros(n, np.float32), np.zeros(n, np.uint32)
    vkir.interpret(mixed, a, b, i, u, c, d)
    return c, d


@pytest.fixture(scope="module")
def kernel(_vulkan_device):
    return vkir.build(mixed, device=_vulkan_device)


# -- codegen ---------------------------------------------------------------------------------

def test_codegen_reads_read_only_parameters_through_texel_buffers():
    target = Target.lavapipe()
    assert STORAGE_LOADS_PER_LANE in target.quirks
    module = codegen(vkir.lower(mixed, target), target)   # validated by spirv-val in codegen
    got = {b.buffer.name: (b.texel, b.kind) for b in module.bindings}
    assert got == {"a": ("r32f", "uniform_texel_buffer"), "b": ("rgba32f", "uniform_texel_buffer"),
                   "i": ("r32i", "uniform_texel_buffer"), "u": ("r32ui", "uniform_texel_buffer"),
                   "c": ("", "storage"), "d": ("", "storage")}
    asm = vkir.spirv.disassemble(module.words)
    assert asm.count("OpImageFetch") == 4 and "SampledBuffer" in asm
    assert [b.binding for b in module.bindings] == list(range(6))


def test_written_narrow_and_other_targets_keep_storage_buffers():
    target = Target.lavapipe()
    module = codegen(vkir.lower(in_place, target), target)
    assert {b.buffer.name: b.texel for b in module.bindings} == {"x": "", "y": "r32f"}
    module = codegen(vkir.lower(narrow, target), target)
    assert all(b.texel == "" for b in module.bindings)   # float16 and 2-lane elements
    plain = Target.lavapipe()
    plain = type(plain)(**{**plain.__dict__, "quirks": plain.quirks - {STORAGE_LOADS_PER_LANE}})
    module = codegen(vkir.lower(mixed, plain), plain)
    assert all(b.texel == "" for b in module.bindings)
    assert "OpImageFetch" not in vkir.spirv.disassemble(module.words)
    wgpu = type(target)(**{**target.__dict__, "kind": "wgpu"})   # WebGPU binds storage only
    assert all(b.texel == "" for b in codegen(vkir.lower(mixed, wgpu), wgpu).bindings)


# -- on the device ---------------------------------------------------------------------------

def test_numerics_match_the_interpreter(kernel, device):
    n = 1000
    want_c, want_d = _want(n)
    assert kernel.texel_params == (("a", "b", "i", "u") if _texel_reads(device) else ())
    a, b, i, u = _inputs(n)
    c, d = np.zeros(n, np.float32), np.zeros(n, np.uint32)
    kernel(a, b, i, u, c, d)   # numpy arguments (in place or staged)
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(d, want_d)
    arrays = [vkir.array(x, device) for x in (a, b, i, u)]
    C, D = vkir.empty(n, "float32", device), vkir.empty(n, "uint32", device)
    for _ in range(2):   # the second call reuses the launch and its views
        kernel(*arrays, C, D)
        np.testing.assert_array_equal(C.numpy(), want_c)
        np.testing.assert_array_equal(D.numpy(), want_d)
    t = kernel.profile(*arrays, C, D, repeat=2, warmup=0)
    assert t.median > 0
    np.testing.assert_array_equal(C.numpy(), want_c)
    assert not kernel._storage_programs   # every argument was viewed: no fallback


def test_fallback_when_an_argument_cannot_be_viewed(device, monkeypatch):
    k = vkir.build(mixed, device=device)
    n = 300
    want_c, want_d = _want(n, 3)
    monkeypatch.setattr(type(k._rt), "buffer_texel_view", lambda self, buffer, fmt: None)
    arrays = [vkir.array(x, device) for x in _inputs(n, 3)]
    C, D = vkir.empty(n, "float32", device), vkir.empty(n, "uint32", device)
    k(*arrays, C, D)
    np.testing.assert_array_equal(C.numpy(), want_c)
    np.testing.assert_array_equal(D.numpy(), want_d)
    assert bool(k._storage_programs) == _texel_reads(device)


def test_views_respect_alignment_and_size_limits(device):
    if not _texel_reads(device):
        return
    from vkir.images import image_format
    from vkir.runtime.buffer_texels import texel_limits, viewable

    align, cap = texel_limits(device)
    buf = vkir.empty(64, "float32", device).buffer
    fmt = image_format("rgba32f")
    assert viewable(buf, fmt)

    def fake(offset, nbytes):
        return types.SimpleNamespace(device=device, usage=buf.usage, offset=offset, nbytes=nbytes)

    assert viewable(fake(align, 16 * 8), fmt)
    assert align == 1 or not viewable(fake(align + 4, 16 * 8), fmt)   # misaligned offset
    assert not viewable(fake(0, 16 * (cap + 1)), fmt)                  # too many texels
    assert not viewable(fake(0, 0), fmt)                               # empty
    assert not viewable(fake(0, 24), fmt)                              # not whole texels
    assert not viewable(types.SimpleNamespace(device=device, usage=0, offset=0, nbytes=16), fmt)


def test_out_of_bounds_reads_are_checked_as_in_the_interpreter(device):
    k = vkir.build(shifted, device=device, check_bounds=True)
    assert k.texel_params == (("a",) if _texel_reads(device) else ())
    a = np.arange(100, dtype=np.float32)
    c = np.zeros(100, np.float32)
    k(a, c, 0)
    np.testing.assert_array_equal(c, a)
    with pytest.raises(vkir.OutOfBoundsError) as dev_err:
        k(a, np.zeros(100, np.float32), 5)
    with pytest.raises(vkir.OutOfBoundsError) as int_err:
        vkir.interpret(shifted, a, np.zeros(100, np.float32), 5)
    assert dev_err.value.buffer == int_err.value.buffer == "a"


def test_a_buffer_read_and_written_stays_a_storage_buffer(device):
    k = vkir.build(in_place, device=device)
    assert k.texel_params == (("y",) if _texel_reads(device) else ())
    x = np.arange(200, dtype=np.float32)
    X = vkir.array(x, device)
    k(X, X)   # aliased: x and y are one memory, the storage-buffer variant runs
    np.testing.assert_array_equal(X.numpy(), x + x)
    assert bool(k._storage_programs) == _texel_reads(device)
    Y = vkir.array(np.ones(200, np.float32), device)
    k(X, Y)
    np.testing.assert_array_equal(X.numpy(), x + x + 1)


def test_sequences_and_launches_order_texel_reads(kernel, device):
    n = 256
    a, b, i, u = _inputs(n, 5)
    add = vkir.build(in_place, device=device)
    X = vkir.array(a, device)
    arrays = [vkir.array(x, device) for x in (b, i, u)]
    C, D = vkir.empty(n, "float32", device), vkir.empty(n, "uint32", device)
    with vkir.sequence():
        add(X, vkir.array(np.ones(n, np.float32), device))   # writes X through a storage buffer
        kernel(X, *arrays, C, D)                              # then reads it through a texel view
        add(X, C)                                             # reads C, written just before
    shifted_a = a + np.float32(1)
    want_c = np.zeros(n, np.float32)
    want_d = np.zeros(n, np.uint32)
    vkir.interpret(mixed, shifted_a, b, i, u, want_c, want_d)
    np.testing.assert_array_equal(C.numpy(), want_c)
    np.testing.assert_array_equal(X.numpy(), shifted_a + want_c)
    handle = kernel.launch(X, *arrays, C, D)
    handle.wait()
    want_c2 = np.zeros(n, np.float32)
    vkir.interpret(mixed, shifted_a + want_c, b, i, u, want_c2, want_d)
    np.testing.assert_array_equal(C.numpy(), want_c2)
    c = np.zeros(n, np.float32)
    kernel.launch(a, b, i, u, c, np.zeros(n, np.uint32)).wait()   # numpy arguments staged
    np.testing.assert_array_equal(c, _want(n, 5)[0])


def test_compile_cache_keeps_texel_bindings(device, tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    first = vkir.build(mixed, device=device)
    again = vkir.build(mixed, device=device)
    assert again._compiled.cached and not first._compiled.cached
    assert [b.texel for b in again.module.bindings] == [b.texel for b in first.module.bindings]
    n = 130
    want_c, want_d = _want(n, 7)
    c, d = np.zeros(n, np.float32), np.zeros(n, np.uint32)
    again(*_inputs(n, 7), c, d)
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(d, want_d)


# -- parameters of symbolic size read through 4-lane casts -------------------------------------

@T.prim_func
def casted(x: T.Buffer(("n",), "float32"), k: T.Buffer(("n",), "int32"),
           y: T.Buffer(("n",), "float32")):
    # x and k are read as 4-lane vectors (SymbolicVectorCast) and x as scalars too (reversed)
    for bx in T.thread_binding((n + 255) // 256, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            g = bx * 64 + tx
            if g < n // 4:
                for v in T.vectorized(4):
                    y[g * 4 + v] = x[g * 4 + v] * T.cast(k[g * 4 + v], "float32") \
                        + x[n - 1 - g * 4 - v]
            if g == n // 4:
                for r in T.serial(n % 4):
                    y[g * 4 + r] = x[g * 4 + r] + T.cast(k[g * 4 + r], "float32")


def _casted_inputs(n):
    rng = np.random.default_rng(n)
    return rng.standard_normal(n).astype(np.float32), rng.integers(-9, 9, n).astype(np.int32)


def test_cast_parameters_share_one_four_lane_texel_format():
    target = Target.lavapipe()
    module = codegen(vkir.lower(casted, target), target)   # validated by spirv-val in codegen
    got = {}
    for b in module.bindings:
        got.setdefault(b.param_index, set()).add(b.texel)
    assert got == {0: {"rgba32f"}, 1: {"rgba32i"}, 2: {""}}
    assert len([b for b in module.bindings if b.param_index == 0]) == 2   # the scalar and x4
    assert "OpVectorExtractDynamic" in vkir.spirv.disassemble(module.words)


def test_cast_parameters_match_the_interpreter(device):
    k = vkir.build(casted, device=device)
    assert k.texel_params == (("x", "k") if _texel_reads(device) else ())
    for n in (1000, 1001, 3):   # whole texels: views; else the storage-buffer variant
        x, ki = _casted_inputs(n)
        want = np.zeros(n, np.float32)
        vkir.interpret(casted, x, ki, want)
        y = vkir.empty(n, "float32", device)
        k(vkir.array(x, device), vkir.array(ki, device), y)
        np.testing.assert_array_equal(y.numpy(), want, err_msg=f"n={n}")
        if n == 1000:
            assert not k._storage_programs
