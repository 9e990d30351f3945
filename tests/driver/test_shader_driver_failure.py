"""A driver whose compiler fails on a valid module: lavapipe answered VK_ERROR_UNKNOWN at pipeline
creation for 7 of 2,000 mutated valid kernels of the fuzzing campaign, and vkir passed on
"vkCreateComputePipelines failed: VK_ERROR_UNKNOWN" with no hint. The error now says what
happened (the driver failed to compile a module spirv-val accepts), names the driver and the
module's SHA-256 and says to report it. The failure is injected (no module trips the drivers
reliably), on lavapipe and SwiftShader; the device stays usable."""

import hashlib

import numpy as np
import pytest
import vulkan

import vkir
from vkir import T
from vkir.errors import DeviceError

pytestmark = pytest.mark.vkir_device

SHADER = """#version 450
layout(local_size_x = 4) in;
layout(binding = 0) buffer B { float b[]; };
void main() { b[gl_GlobalInvocationID.x] += 41.5; }
"""


@T.prim_func
def add_one(a: T.Buffer((8,), "float32")):
    for i in T.thread_binding(8, "threadIdx.x"):
        a[i] = a[i] + T.float32(1.25)


@pytest.fixture
def failing_compiler(monkeypatch):
    """vkCreateComputePipelines answers VK_ERROR_UNKNOWN, as lavapipe's compiler did."""
    def fail(*args):
        raise vulkan.VkErrorUnknown()
    monkeypatch.setattr(vulkan, "vkCreateComputePipelines", fail)


def _says_what_happened(message: str, device, spirv: bytes, entry: str) -> None:
    assert message.startswith("vkCreateComputePipelines failed: VK_ERROR_UNKNOWN: the driver")
    assert f"the driver {device.info.driver!r} of {device.info.name!r} failed to compile entry " \
           f"point {entry!r} of a SPIR-V module that spirv-val accepts" in message
    assert f"sha256 {hashlib.sha256(spirv).hexdigest()}" in message
    assert "This is a driver bug" in message and "report it to the driver's maintainers" in message


def test_a_shader_the_driver_fails_to_compile(vkir_device, failing_compiler, monkeypatch):
    from vkir.runtime.glsl import compile_glsl

    words = compile_glsl(SHADER)
    with pytest.raises(DeviceError) as info:
        vkir.load_spirv(words, device=vkir_device)
    _says_what_happened(str(info.value), vkir_device, words, "main")
    monkeypatch.undo()                              # the device still works afterwards
    b = np.arange(4, dtype=np.float32)
    vkir.load_spirv(words, device=vkir_device)(b, grid=1)
    np.testing.assert_array_equal(b, np.arange(4) + 41.5)


def test_a_kernel_the_driver_fails_to_compile(vkir_device, failing_compiler):
    with pytest.raises(DeviceError) as info:
        vkir.build(add_one, device=vkir_device)
    message = str(info.value)
    assert "failed to compile entry point 'add_one'" in message and "sha256 " in message
