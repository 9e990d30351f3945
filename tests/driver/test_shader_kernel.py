"""ShaderKernel: real GLSL and SPIR-V shaders run from Python (vkir.compile_glsl, vkir.load_spirv)
with several bindings, a uniform buffer, mixed push constants and specialization constants, the
same argument checks as Kernel, and clear errors for invalid or unsupported modules."""

import struct
from pathlib import Path

import numpy as np
import pytest

import vkir
from vkir.errors import ArgumentError, SpirvValidationError, UnsupportedError

pytestmark = pytest.mark.vkir_device
SHADERS = Path(__file__).resolve().parents[1] / "shaders"
REFERENCE_SHADERS = Path(__file__).resolve().parents[2] / "shaders"


def _coeffs(weights, offset, mode):
    """The std140 bytes of the Coeffs uniform block (vec4 weights; float offset; int mode)."""
    raw = struct.pack("<4ffi", *weights, offset, mode)
    return np.frombuffer(raw, np.uint8).copy()


def _affine_inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n).astype(np.float32),
            rng.standard_normal((n, 4)).astype(np.float32), np.zeros(n, np.float32))


@pytest.fixture(scope="module")
def affine(_vulkan_device):
    return vkir.compile_glsl(SHADERS / "affine.comp", specialization={"local_size_x": 32, "SCALE": 2.0},
                             device=_vulkan_device)


def test_affine_matches_numpy(affine, vkir_device):
    assert affine.local_size == (32, 1, 1)
    assert affine.specialization == {0: 32, 1: 2.0}
    assert [b.name for b in affine.bindings] == ["X", "V", "Y", "coeffs"]
    assert [(p.name, p.dtype, p.offset) for p in affine.push_constants] == [
        ("n", "int32", 0), ("alpha", "float32", 4), ("bias", "float32x4", 16)]
    assert "OpEntryPoint GLCompute" in affine.asm and affine.spirv[:4] == b"\x03\x02\x23\x07"
    n = 1000
    x, v, y = _affine_inputs(n)
    bias = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    x_before = x.copy()
    affine(x, v, y, _coeffs((0.5, 1.0, -1.0, 2.0), 0.25, 3), grid=((n + 31) // 32,),
           push={"n": n, "alpha": 1.5, "bias": bias})
    want = 3.0 * x + v @ np.float32([0.5, 1.0, -1.0, 2.0]) + 0.25 + bias[np.arange(n) % 4] + 3
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(x, x_before)


def test_specialization_by_id_sets_local_size_and_bool(vkir_device):
    sk = vkir.compile_glsl(SHADERS / "affine.comp", specialization={0: 64, "USE_BIAS": False},
                           device=vkir_device)
    assert sk.local_size == (64, 1, 1)
    n = 130   # not a multiple of the local size: the shader's bound check keeps the tail
    x, v, y = _affine_inputs(n, seed=1)
    xd, vd, yd = (vkir.array(a, device=vkir_device) for a in (x, v, y))
    sk(xd, vd, yd, _coeffs((1, 0, 0, 0), 0.0, 0), grid=3, push={"n": n, "alpha": 1.0, "bias": (9, 9, 9, 9)})
    np.testing.assert_allclose(yd.numpy(), x + v[:, 0], rtol=1e-6, atol=1e-6)


def test_integer_shader_with_device_arrays_and_atomics(vkir_device):
    sk = vkir.compile_glsl(SHADERS / "counts.comp", device=vkir_device)
    n = 500
    values = np.random.default_rng(2).integers(-3, 4, n).astype(np.int32)
    out = vkir.empty(n, "int32", device=vkir_device)
    counter = vkir.array(np.zeros(5, np.uint32), device=vkir_device)
    sk(vkir.array(values, device=vkir_device), out, counter, grid=(8, 1, 1),
       push={"n": n, "k": -7, "target": 2})
    np.testing.assert_array_equal(out.numpy(), values * -7 + np.arange(n))
    np.testing.assert_array_equal(counter.numpy(), [np.sum(values == 2), 125, 125, 125, 125])


def test_load_spirv_from_path_bytes_and_assembly(tmp_path, vkir_device, glsl):
    words = glsl("scale")
    (tmp_path / "scale.spv").write_bytes(words)
    (tmp_path / "scale.spvasm").write_text(vkir.spirv.disassemble(words))
    x = np.arange(100, dtype=np.float32)
    for source in (tmp_path / "scale.spv", str(tmp_path / "scale.spv"), words,
                   tmp_path / "scale.spvasm"):
        y = np.zeros(100, np.float32)
        # assembly is assembled for the device's environment unless told (not its comment's)
        env = "vulkan1.1" if str(source).endswith(".spvasm") else None
        sk = vkir.load_spirv(source, device=vkir_device, target_env=env)
        sk(x, y, grid=2, push={"n": 90, "alpha": 2.0, "beta": 1.0})
        np.testing.assert_array_equal(y[:90], 2 * x[:90] + 1)
        assert not y[90:].any()


def test_argument_checks(affine, vkir_device):
    x, v, y = _affine_inputs(64)
    c = _coeffs((1, 1, 1, 1), 0, 0)
    push = {"n": 64, "alpha": 1.0, "bias": (0, 0, 0, 0)}
    cases = [
        ((x, v, y), {}, "takes 4 buffers"),
        ((x.astype(np.float64), v, y, c), {}, "dtype float64, expected float32"),
        ((x, v.ravel()[:10].copy(), y, c), {}, "not a whole number of float32x4 elements"),
        ((x, v, y[::2], c), {}, "not C-contiguous"),
        ((x, v, y, c[:20]), {}, "at least 24"),
        ((x, v, y, [1.0]), {}, "must be a vkir or numpy array"),
        ((x, v, y, c), {"push": {**push, "m": 1}}, "no push constant named 'm'"),
        ((x, v, y, c), {"push": {"n": 64, "alpha": 1.0}}, "missing push constant.*'bias'"),
        ((x, v, y, c), {"push": {**push, "n": 2.5}}, "'n' is int32"),
        ((x, v, y, c), {"push": {**push, "bias": (1, 2)}}, "needs 4 components"),
        ((x, v, y, c), {"push": push, "grid": (1, 1, 1, 1)}, "up to 3 ints"),
        ((x, v, y, c), {"push": push, "grid": None}, "give the workgroup counts"),
    ]
    for args, kwargs, message in cases:
        kwargs = {"grid": 2, "push": push, **kwargs}
        with pytest.raises(ArgumentError, match=message):
            affine(*args, **kwargs)
    assert not y.any()   # nothing ran
    frozen = y.copy()
    frozen.setflags(write=False)
    with pytest.raises(ArgumentError, match="written by the shader"):
        affine(x, v, frozen, c, grid=2, push=push)
    readonly_x = x.copy()
    readonly_x.setflags(write=False)   # a read-only input is fine, and never written back
    affine(readonly_x, v, y, c, grid=2, push=push)
    with pytest.raises(UnsupportedError, match="maxComputeWorkGroupCount"):
        affine(x, v, y, c, grid=(vkir_device.info.limits.max_workgroup_count[0] + 1,), push=push)


def test_specialization_checks(vkir_device):
    path = SHADERS / "affine.comp"
    with pytest.raises(ArgumentError, match=r"no specialization constant 'WIDTH' \(the shader has: 0"):
        vkir.compile_glsl(path, specialization={"WIDTH": 4}, device=vkir_device)
    with pytest.raises(ArgumentError, match="specialization constant 'SCALE' is float32, got 'x'"):
        vkir.compile_glsl(path, specialization={"SCALE": "x"}, device=vkir_device)
    too_big = vkir_device.info.limits.max_workgroup_invocations + 1
    with pytest.raises(UnsupportedError, match="local_size_x = .* exceeds maxComputeWorkGroupSize"
                       if too_big > vkir_device.info.limits.max_workgroup_size[0]
                       else "maxComputeWorkGroupInvocations"):
        vkir.compile_glsl(path, specialization={"local_size_x": too_big}, device=vkir_device)


def test_glsl_defines_and_source_text(vkir_device):
    source = (REFERENCE_SHADERS / "vadd.comp").read_text()
    sk = vkir.compile_glsl(source, defines={"WG": 16}, device=vkir_device)
    assert sk.local_size == (16, 1, 1)
    a, b = np.arange(50, dtype=np.float32), np.ones(50, np.float32)
    c = np.zeros(50, np.float32)
    sk(a, b, c, grid=1, push={"n": 50})
    np.testing.assert_array_equal(c, a + 1)


def test_glsl_syntax_error(vkir_device):
    with pytest.raises(vkir.runtime.glsl.GlslError, match="syntax error"):
        vkir.compile_glsl("#version 450\nvoid main() { int x = ; }\n", device=vkir_device)


def test_corrupted_modules_are_refused_before_the_driver(glsl, vkir_device):
    words = bytearray(glsl("scale"))
    with pytest.raises(SpirvValidationError, match="not a SPIR-V module"):
        vkir.load_spirv(bytes(words[:-2]), device=vkir_device)
    with pytest.raises(SpirvValidationError):
        vkir.load_spirv(bytes(words[:len(words) // 2]), device=vkir_device)   # cut mid-module
    bad = bytearray(words)
    struct.pack_into("<I", bad, 20, (1 << 16) | 0xFFFF)   # first instruction: unknown opcode
    with pytest.raises(SpirvValidationError, match="(?i)opcode"):
        vkir.load_spirv(bytes(bad), device=vkir_device)


UNSUPPORTED = """
               OpCapability Shader
               OpCapability {cap}
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %main = OpFunction %void None %fn
          %l = OpLabel
               OpReturn
               OpFunctionEnd
"""


def test_capabilities_the_device_lacks(vkir_device):
    with pytest.raises(UnsupportedError, match="OpCapability Geometry.*does not enable"):
        vkir.load_spirv(UNSUPPORTED.format(cap="Geometry"), device=vkir_device)
    if not vkir_device.info.features & {"atomic_int64_buffer", "atomic_int64_shared"}:
        with pytest.raises(UnsupportedError, match="OpCapability Int64Atomics.*none of the features"):
            vkir.load_spirv(UNSUPPORTED.format(cap="Int64Atomics"), device=vkir_device)
    if "int16" not in vkir_device.info.features:
        with pytest.raises(UnsupportedError, match="lacks the 'int16' feature"):
            vkir.load_spirv(UNSUPPORTED.format(cap="Int16"), device=vkir_device)
    else:
        assert vkir.load_spirv(UNSUPPORTED.format(cap="Int16"), device=vkir_device).local_size == (1, 1, 1)


def test_local_size_id_runs_with_maintenance4_else_is_refused_with_the_fix(vkir_device):
    from vkir.runtime.glsl import compile_glsl

    words = compile_glsl(SHADERS / "affine.comp", target_env="vulkan1.3")
    if "maintenance4" not in vkir_device.info.features:
        with pytest.raises(UnsupportedError, match="LocalSizeId.*vulkan1.2"):
            vkir.load_spirv(words, device=vkir_device)
        return
    k = vkir.load_spirv(words, device=vkir_device, specialization={"local_size_x": 32})
    assert k.info.uses_local_size_id and k.local_size == (32, 1, 1)


def test_missing_file():
    with pytest.raises(ArgumentError, match="no such file: nowhere.spv"):
        vkir.load_spirv("nowhere.spv")
    with pytest.raises(ArgumentError, match="no such file: shaders/typo.cmp"):
        vkir.compile_glsl("shaders/typo.cmp")


def test_calls_from_several_threads(vkir_device):
    from concurrent.futures import ThreadPoolExecutor

    sk = vkir.compile_glsl(SHADERS / "counts.comp", device=vkir_device)

    def work(seed):
        values = np.random.default_rng(seed).integers(-9, 9, 256).astype(np.int32)
        out, counter = np.zeros(256, np.int32), np.zeros(5, np.uint32)
        for k in range(1, 4):
            sk(values, out, counter, grid=4, push={"n": 256, "k": k + seed, "target": 0})
        return values, out, counter, seed

    with ThreadPoolExecutor(4) as pool:
        for values, out, counter, seed in pool.map(work, range(8)):
            np.testing.assert_array_equal(out, values * (3 + seed) + np.arange(256))
            np.testing.assert_array_equal(counter, [3 * np.sum(values == 0)] + [3 * 64] * 4)


def test_shared_memory_limit(vkir_device):
    source = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer A { float a[]; };
shared float scratch[WORDS];
void main() {
    scratch[gl_LocalInvocationID.x] = a[gl_LocalInvocationID.x];
    barrier();
    a[gl_LocalInvocationID.x] = scratch[63 - gl_LocalInvocationID.x];
}
"""
    words = vkir_device.info.limits.max_shared_memory_bytes // 4
    sk = vkir.compile_glsl(source, defines={"WORDS": words}, device=vkir_device)
    assert sk.info.shared_memory_bytes == words * 4
    a = np.arange(64, dtype=np.float32)
    sk(a, grid=1)
    np.testing.assert_array_equal(a, np.arange(64)[::-1])
    with pytest.raises(UnsupportedError, match=f"{words * 4 + 4} bytes of shared memory exceed "
                                               "maxComputeSharedMemorySize"):
        vkir.compile_glsl(source, defines={"WORDS": words + 1}, device=vkir_device)


def test_launch_and_profile(vkir_device):
    sk = vkir.compile_glsl(SHADERS / "counts.comp", device=vkir_device)
    values = np.arange(256, dtype=np.int32)
    out, counter = np.zeros(256, np.int32), vkir.zeros(5, "uint32", device=vkir_device)
    handle = sk.launch(values, out, counter, grid=4, push={"n": 256, "k": 2, "target": 7})
    handle.wait(timeout=60)
    assert handle.done()
    np.testing.assert_array_equal(out, values * 2 + np.arange(256))   # copied back by the wait
    np.testing.assert_array_equal(counter.numpy(), [1, 64, 64, 64, 64])
    with vkir.profile(show=False) as prof:
        sk(values, out, counter, grid=4, push={"n": 256, "k": 3, "target": 7})
    if vkir_device.timestamp_bits:   # timed where the queue has timestamps (lavapipe does)
        assert len(prof.report.samples["counts.comp"]) == 1
    np.testing.assert_array_equal(out, values * 3 + np.arange(256))
    with pytest.raises(ArgumentError, match="launch\\(\\) inside a sequence"):
        with vkir.sequence(device=vkir_device):
            sk.launch(values, out, counter, grid=4, push={"n": 256, "k": 3, "target": 7})


def test_calls_of_many_sizes_keep_a_bounded_set_of_device_copies(affine, vkir_device):
    """Shader kernels and vkir.build's kernels keep device copies of numpy arguments through the
    same bounded cache (vkir.driver.dispatch): calls with 40 sizes hold at most 32 copies."""
    from vkir.driver.dispatch import SCRATCH_BUFFERS

    coeffs = _coeffs((1.0, 0.0, 0.0, 0.0), 0.0, 0)
    for n in range(1, 41):
        x, v, y = _affine_inputs(n, seed=n)
        affine(x, v, y, coeffs, grid=((n + 31) // 32,),
               push={"n": n, "alpha": 1.0, "bias": np.zeros(4, np.float32)})
        np.testing.assert_allclose(y, 2.0 * x + v[:, 0], rtol=1e-5, atol=1e-5)
        assert len(affine._scratch) <= SCRATCH_BUFFERS
    assert len(affine._scratch) > 0
