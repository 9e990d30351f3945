"""Aliased arguments (vkir.aliasing): one array, or overlapping views of one, passed for several
buffer parameters of which one is written, is ONE memory on the device (one buffer, each name at
its offset) exactly as in the interpreter, or the same ArgumentError everywhere; nothing a kernel
writes through one name is lost by copying the other back. Each case runs on the device kernel,
the interpreter backend and vkir.interpret (and shaders where they apply)."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError

pytestmark = pytest.mark.vkir_device


@T.prim_func
def ones_then_prefix(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    # one invocation: a = 1 everywhere, then b[i + 1] += a[i]; through one memory the second
    # loop reads what it wrote a step before (a prefix count: x[i] = i + 1)
    for i in T.serial(64):
        a[i] = T.float32(1)
    for i in T.serial(63):
        b[i + 1] = b[i + 1] + a[i]


@T.prim_func
def shift_add(a: T.Buffer((128,), "float32"), b: T.Buffer((128,), "float32")):
    # a is only read, b only written: b[i] = a[i] + 1 in order, in one invocation
    for i in T.serial(128):
        b[i] = a[i] + T.float32(1)


@T.prim_func
def step_in_place(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    # a = a + 1 shifted by one through two names: b[i + 1] = a[i] + 1 in order
    for i in T.serial(63):
        b[i + 1] = a[i] + T.float32(1)


@T.prim_func
def add_one(a: T.Buffer((256,), "float32"), b: T.Buffer((256,), "float32")):
    # the classic in-place a = a + 1, one element per invocation
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            b[bx * 64 + tx] = a[bx * 64 + tx] + T.float32(1)


@T.prim_func
def add_into(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32"),
             c: T.Buffer((64,), "float32")):
    for i in T.serial(64):
        c[i] = a[i] + b[i]


@T.prim_func
def grid_and_flat(g: T.Buffer((8, 8), "float32"), f: T.Buffer((64,), "float32")):
    # g (2-d) and f (1-d) over one device buffer: f[i + 1] += g's element i
    for i in T.serial(64):
        g[i // 8, i % 8] = T.float32(1)
    for i in T.serial(63):
        f[i + 1] = f[i + 1] + g[i // 8, i % 8]


def _runners(func, device):
    """Every way a kernel runs: the device kernel, the interpreter backend, vkir.interpret."""
    return {"device": vkir.build(func, device=device),
            "interp": vkir.build(func, device="interp"),
            "interpret": lambda *args: vkir.interpret(func, *args)}


PREFIX = np.arange(1, 65, dtype=np.float32)


@pytest.mark.parametrize("how", ["device", "interp", "interpret", "bounds_checked"])
def test_one_array_for_two_written_parameters_is_one_memory(how, device):
    run = (vkir.build(ones_then_prefix, device=device, check_bounds=True)
           if how == "bounds_checked" else _runners(ones_then_prefix, device)[how])
    x = np.zeros(64, np.float32)
    run(x, x)
    np.testing.assert_array_equal(x, PREFIX)
    # separate arrays stay separate
    a, b = np.zeros(64, np.float32), np.zeros(64, np.float32)
    run(a, b)
    np.testing.assert_array_equal(a, np.ones(64, np.float32))
    np.testing.assert_array_equal(b, np.r_[0, np.ones(63)].astype(np.float32))


@pytest.mark.parametrize("how", ["device", "interp", "interpret"])
def test_read_and_written_names_of_one_array(how, device):
    run = _runners(step_in_place, device)[how]
    x = np.zeros(64, np.float32)
    run(x, x)        # through one memory each step reads the previous one's result
    np.testing.assert_array_equal(x, np.arange(64, dtype=np.float32))
    y = np.arange(256, dtype=np.float32)
    _runners(add_one, device)[how](y, y)
    np.testing.assert_array_equal(y, np.arange(256, dtype=np.float32) + 1)


@pytest.mark.parametrize("how", ["device", "interp", "interpret"])
def test_overlapping_views_at_an_aligned_offset_share_one_buffer(how, device):
    run = _runners(shift_add, device)[how]
    x = np.arange(192, dtype=np.float32)
    run(x[0:128], x[64:192])    # b starts 256 bytes after a: b[i] is a[i + 64]
    want = np.arange(192, dtype=np.float32)
    for i in range(128):
        want[64 + i] = want[i] + 1
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("how", ["device", "interp", "interpret"])
def test_overlap_at_an_unaligned_offset_is_the_same_error_everywhere(how, device):
    run = _runners(shift_add, device)[how]
    x = np.arange(256, dtype=np.float32)
    before = x.copy()
    with pytest.raises(ArgumentError, match=r"'a' and 'b' share memory.*'b' starts 20 bytes"):
        run(x[0:128], x[5:133])
    np.testing.assert_array_equal(x, before)   # refused before anything ran


def test_device_array_aliases_in_a_sequence(device):
    k = vkir.build(ones_then_prefix, device=device)
    x = vkir.zeros(64, "float32", device=device)
    with vkir.sequence(device=device) as seq:
        k(x, x)
    seq.wait()
    np.testing.assert_array_equal(x.numpy(), PREFIX)


def test_overlap_in_a_launch_is_one_memory(device):
    k = vkir.build(ones_then_prefix, device=device)
    x = np.zeros(64, np.float32)
    k.launch(x, x).wait()
    np.testing.assert_array_equal(x, PREFIX)
    y = np.arange(192, dtype=np.float32)
    vkir.build(shift_add, device=device).launch(y[0:128], y[64:192]).wait()
    assert y[128] == 2 and y[191] == 65


@pytest.mark.parametrize("how", ["device", "interp", "interpret"])
def test_reading_only_aliases_keep_working(how, device):
    run = _runners(add_into, device)[how]
    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    run(x, x, out)
    np.testing.assert_array_equal(out, 2 * np.arange(64, dtype=np.float32))
    y = np.arange(65, dtype=np.float32)
    run(y[0:64], y[1:65], out)     # overlapping read-only views need no alignment
    np.testing.assert_array_equal(out, 2 * np.arange(64, dtype=np.float32) + 1)
    np.testing.assert_array_equal(x, np.arange(64, dtype=np.float32))


@pytest.mark.parametrize("how", ["device", "interp", "interpret"])
def test_device_array_views_of_one_buffer(how, device):
    run = _runners(grid_and_flat, device)[how]
    flat = vkir.zeros(64, "float32", device=device)
    grid = vkir.DeviceArray(flat.buffer, (8, 8), flat.dtype, flat.device)
    run(grid, flat)
    np.testing.assert_array_equal(flat.numpy(), PREFIX)
    x = vkir.zeros(64, "float32", device=device)
    run_same = _runners(ones_then_prefix, device)[how]
    run_same(x, x)
    np.testing.assert_array_equal(x.numpy(), PREFIX)


PREFIX_GLSL = """
#version 450
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer A { float a[]; };
layout(std430, binding = 1) buffer B { float b[]; };
layout(push_constant) uniform P { int n; };
void main() {
    for (int i = 0; i < n; i++) a[i] = 1.0;
    for (int i = 0; i + 1 < n; i++) b[i + 1] = b[i + 1] + a[i];
}
"""


def test_shader_binds_aliases_as_one_buffer(device):
    sk = vkir.compile_glsl(PREFIX_GLSL, device=device)
    x = np.zeros(64, np.float32)
    sk(x, x, grid=1, push={"n": 64})
    np.testing.assert_array_equal(x, PREFIX)
    y = np.zeros(64, np.float32)
    sk.launch(y, y, grid=1, push={"n": 64}).wait()
    np.testing.assert_array_equal(y, PREFIX)
    d = vkir.zeros(64, "float32", device=device)
    sk(d, d, grid=1, push={"n": 64})
    np.testing.assert_array_equal(d.numpy(), PREFIX)
    z = np.zeros(192, np.float32)    # b starts 256 bytes into a: one buffer, two offsets
    sk(z[0:128], z[64:192], grid=1, push={"n": 128})
    want = np.r_[np.ones(128), np.zeros(64)].astype(np.float32)
    for i in range(127):
        want[64 + i + 1] += want[i]
    np.testing.assert_array_equal(z, want)
    w = np.zeros(64, np.float32)
    with pytest.raises(ArgumentError,
                       match=r"\"binding 0 \('A'\)\" and \"binding 1 \('B'\)\" share memory"):
        sk(w[0:32], w[4:36], grid=1, push={"n": 32})
    assert not w.any()


def test_strided_views_cannot_share_a_buffer():
    x = np.zeros(128, np.float32)
    with pytest.raises(ArgumentError, match="'a' and 'b' share memory.*strided"):
        vkir.interpret(step_in_place, x[0:128:2], x[1:128:2])
    y = np.zeros(128, np.float32)
    vkir.interpret(step_in_place, y[::2], y[::2])    # the same view twice: one memory
    np.testing.assert_array_equal(y[::2], np.arange(64, dtype=np.float32))
    assert not y[1::2].any()


def test_aliased_calls_run_code_that_declares_its_buffers_aliased(device):
    """SPIR-V lets a driver take undecorated buffers as restrict, and a NonWritable one as memory
    nothing writes: a call binding one memory to a written buffer and another runs a variant
    whose buffers are all decorated Aliased, none NonWritable."""
    from vkir.driver.aliased_spirv import aliased
    from vkir.spirv import disassemble

    k = vkir.build(ones_then_prefix, device=device)
    asm = disassemble(aliased(k.spirv, k.target.env))
    assert asm.count("Aliased") == 2 and "Aliased" not in k.asm
    # the read-only name no longer says that nothing writes its memory
    step = vkir.build(step_in_place, device=device)
    # (on llvmpipe the read-only name is a texel buffer: aliased calls run the storage-buffer
    # variant, vkir.driver.texel_views)
    words = step._words[step._storage_for(step.program)] if step.texel_params else step.spirv
    assert "NonWritable" in disassemble(words)
    assert "NonWritable" not in disassemble(aliased(words, step.target.env))
    k(np.zeros(64, np.float32), np.zeros(64, np.float32))
    assert not k._aliased               # separate arrays: the plain pipeline
    x = np.zeros(64, np.float32)
    k(x, x)
    assert list(k._aliased) == [k.pipeline]
    np.testing.assert_array_equal(x, PREFIX)
