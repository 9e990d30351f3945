"""Capabilities an existing shader declares are enabled where the device has their feature
(extended storage-image formats such as rg32f, r16f and r8; format-less image stores; dynamically
indexed arrays of uniform blocks; multisampled storage images; DeviceGroup, core in Vulkan 1.1),
and refused naming the Vulkan feature the device lacks (format-less image loads, off on lavapipe
and SwiftShader). They were refused as "vkir does not enable it on any device", even for the
module of vkir's own rg32f kernel. Our own small shaders, on lavapipe and SwiftShader."""

from types import SimpleNamespace

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError
from vkir.spirv import assemble, disassemble

EXTENDED = """#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(binding = 0, rg32f) uniform image2D pairs;
layout(binding = 1, r16f) uniform writeonly image2D halves;
layout(binding = 2, r8) uniform writeonly image2D bytes;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    vec4 v = imageLoad(pairs, p);
    imageStore(pairs, p, vec4(v.y, v.x * 2.0, 0.0, 0.0));
    imageStore(halves, p, vec4(v.x + 0.5));
    imageStore(bytes, p, vec4(float(p.x + p.y) / 8.0));
}
"""

WRITE_WITHOUT_FORMAT = """#version 450
layout(local_size_x = 4, local_size_y = 4) in;
layout(binding = 0) uniform writeonly image2D dst;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(dst, p, vec4(p.x, p.y, 1.0, 2.0));
}
"""

READ_WITHOUT_FORMAT = """#version 450
#extension GL_EXT_shader_image_load_formatted : require
layout(local_size_x = 4) in;
layout(binding = 0) uniform readonly image2D src;
layout(binding = 1) buffer O { float o[]; };
void main() { o[gl_GlobalInvocationID.x] = imageLoad(src, ivec2(gl_GlobalInvocationID.x, 0)).x; }
"""

# a uniform block array indexed by a dynamically uniform value (glslang declares no capability
# for it; DXC and hand-written modules declare UniformBufferArrayDynamicIndexing)
UNIFORM_ARRAY = """#version 450
layout(local_size_x = 4) in;
layout(binding = 0) uniform U { vec4 v; } us[2];
layout(binding = 1) buffer O { float o[]; };
layout(push_constant) uniform P { uint which; };
void main() { uint i = gl_GlobalInvocationID.x; o[i] = us[which].v[i]; }
"""

MULTISAMPLED = """#version 450
layout(local_size_x = 4) in;
layout(binding = 0, rgba8) uniform writeonly image2DMS ms;
void main() { imageStore(ms, ivec2(gl_GlobalInvocationID.xy), 0, vec4(1.0)); }
"""


@T.prim_func
def swap(img: T.Image((4, 8), "rg32f")):
    for ty in T.thread_binding(4, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            v = img[ty, tx]
            img[ty, tx] = T.float32x4(v[1], v[0] * 2.0, 0.0, 0.0)


def _declaring(source: str, *capabilities: str) -> bytes:
    """The module of GLSL `source` with `capabilities` declared too."""
    from vkir.runtime.glsl import compile_glsl

    asm = disassemble(compile_glsl(source, target_env="vulkan1.1"))
    extra = "".join(f"OpCapability {c}\n" for c in capabilities)
    return assemble(asm.replace("OpCapability Shader\n", "OpCapability Shader\n" + extra, 1),
                    "vulkan1.1")


@pytest.mark.vkir_device
def test_vkir_own_rg32f_kernel_module_loads_and_runs(vkir_device):
    k = vkir.build(swap, device=vkir_device)
    sk = vkir.load_spirv(k.spirv, entry="swap", device=vkir_device)
    assert "StorageImageExtendedFormats" in sk.info.capabilities
    a = np.random.default_rng(0).uniform(-1, 1, (4, 8, 2)).astype(np.float32)
    before = a.copy()
    sk(a, grid=1)
    np.testing.assert_array_equal(a[..., 0], before[..., 1])
    np.testing.assert_array_equal(a[..., 1], before[..., 0] * 2)


@pytest.mark.vkir_device
def test_extended_storage_image_formats_run(vkir_device):
    sk = vkir.compile_glsl(EXTENDED, device=vkir_device)
    assert "StorageImageExtendedFormats" in sk.info.capabilities
    # multiples of 1/256: v.x + 0.5 is a float16 value, whichever way a driver rounds
    a = np.random.default_rng(1).integers(-256, 256, (4, 4, 2)).astype(np.float32) / 256
    halves, bytes_ = np.zeros((4, 4), np.float16), np.zeros((4, 4), np.uint8)
    before = a.copy()
    sk(a, halves, bytes_, grid=(1, 1))
    np.testing.assert_array_equal(a[..., 0], before[..., 1])
    np.testing.assert_array_equal(a[..., 1], before[..., 0] * 2)
    np.testing.assert_array_equal(halves, (before[..., 0] + np.float32(0.5)).astype(np.float16))
    y, x = np.mgrid[0:4, 0:4]
    np.testing.assert_array_equal(bytes_, np.round((x + y) / 8 * 255).astype(np.uint8))


@pytest.mark.vkir_device
def test_an_image_without_format_is_written(vkir_device):
    sk = vkir.compile_glsl(WRITE_WITHOUT_FORMAT, device=vkir_device)
    assert "StorageImageWriteWithoutFormat" in sk.info.capabilities
    out = np.zeros((4, 4, 4), np.float32)
    sk(out, grid=(1, 1), formats={"dst": "rgba32f"})
    y, x = np.mgrid[0:4, 0:4]
    want = np.stack([x, y, np.ones_like(x), np.full_like(x, 2)], axis=-1).astype(np.float32)
    np.testing.assert_array_equal(out, want)


@pytest.mark.vkir_device
def test_format_less_loads_need_the_feature_and_the_refusal_names_it(vkir_device):
    if "storage_image_read_without_format" in vkir_device.info.features:
        pytest.skip("the device has shaderStorageImageReadWithoutFormat")  # neither CPU driver
    with pytest.raises(UnsupportedError, match=r"OpCapability StorageImageReadWithoutFormat, "
                       r"but the device lacks the 'storage_image_read_without_format' feature "
                       r"\(Vulkan VkPhysicalDeviceFeatures.shaderStorageImageReadWithoutFormat\)"):
        vkir.compile_glsl(READ_WITHOUT_FORMAT, device=vkir_device)


@pytest.mark.vkir_device
def test_dynamic_uniform_array_indexing_device_group_and_multisample_capabilities(vkir_device):
    words = _declaring(UNIFORM_ARRAY, "UniformBufferArrayDynamicIndexing", "DeviceGroup",
                       "StorageImageMultisample")
    sk = vkir.load_spirv(words, device=vkir_device)
    assert {"UniformBufferArrayDynamicIndexing", "DeviceGroup", "StorageImageMultisample"} <= \
        set(sk.info.capabilities)
    u0, u1 = np.float32([1, 2, 3, 4]), np.float32([10, 20, 30, 40])
    for which, want in ((1, u1), (0, u0)):
        out = np.zeros(4, np.float32)
        sk([u0, u1], out, grid=1, push={"which": which})
        np.testing.assert_array_equal(out, want)


@pytest.mark.vkir_device
def test_a_multisampled_image_is_refused_by_name(vkir_device):
    with pytest.raises(UnsupportedError, match=r"binding 0 \('ms'\) is a multisampled image"):
        vkir.compile_glsl(MULTISAMPLED, device=vkir_device)


def _needs(capabilities=(), extensions=(), features=(), device_extensions=()):
    """check_shader_needs on a reflected-module stand-in and a Vulkan 1.3 device stand-in."""
    from vkir.driver.shader_needs import check_shader_needs

    info = SimpleNamespace(capabilities=tuple(capabilities), extensions=tuple(extensions),
                           uses_local_size_id=False)
    rt = SimpleNamespace(features=frozenset(features), subgroup_operations=frozenset(),
                         extensions=tuple(device_extensions), name="stand-in",
                         target=lambda: SimpleNamespace(env="vulkan1.3"))
    check_shader_needs(info, rt, "sk")


def test_each_capability_names_the_vulkan_feature_it_needs():
    for cap, member in [("StorageImageExtendedFormats", "shaderStorageImageExtendedFormats"),
                        ("StorageImageWriteWithoutFormat", "shaderStorageImageWriteWithoutFormat"),
                        ("UniformBufferArrayDynamicIndexing",
                         "shaderUniformBufferArrayDynamicIndexing"),
                        ("StorageImageMultisample", "shaderStorageImageMultisample"),
                        ("ImageMSArray", "shaderStorageImageMultisample")]:
        with pytest.raises(UnsupportedError, match=f"OpCapability {cap}, but the device lacks "
                           rf"the '\w+' feature \(Vulkan VkPhysicalDeviceFeatures.{member}\)"):
            _needs([cap])
    _needs(["DeviceGroup"])   # core in Vulkan 1.1: nothing to enable
    _needs(["StorageImageExtendedFormats", "ImageMSArray"],
           features=["storage_image_extended_formats", "storage_image_multisample"])


def test_spv_ext_physical_storage_buffer_names_vk_ext_buffer_device_address():
    ext = "SPV_EXT_physical_storage_buffer"
    with pytest.raises(UnsupportedError, match=f"OpExtension '{ext}', but the device lacks the "
                       "extension VK_EXT_buffer_device_address; vkir enables "
                       "VK_KHR_buffer_device_address"):
        _needs(extensions=[ext], device_extensions=["VK_KHR_buffer_device_address"])
    with pytest.raises(UnsupportedError, match="vkir does not enable the device extension "
                       "VK_EXT_buffer_device_address; .*SPV_KHR_physical_storage_buffer"):
        _needs(extensions=[ext], device_extensions=["VK_EXT_buffer_device_address"])
