"""vkir's pytest plugin in a pytest session of its own (pytester, in a subprocess): vkir_check
passes a correct kernel and fails one that writes out of bounds, checks a user's GLSL shader
against a numpy reference, the vkir_device marker and fixture work (a device again after a test
shut the runtime down), a validation-layer message fails the test that caused it, and without a
Vulkan device the device tests skip with the reason."""

import re
from pathlib import Path

SCALE = Path(__file__).resolve().parents[1] / "shaders" / "scale.comp"

USER_TESTS = f'''
import numpy as np
import pytest

import vkir
from vkir import T


@T.prim_func
def affine(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32"), c: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        b[tx] = a[tx] * T.float32(2) + T.float32(1)
        c[tx] = tx * 3


@T.prim_func
def shifted(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        b[tx + 1] = a[tx]


def test_correct_kernel(vkir_check):
    a = np.arange(64, dtype=np.float32)
    b, c = np.zeros(64, np.float32), np.zeros(64, np.int32)
    got_a, got_b, got_c = vkir_check(affine, a, b, c)
    assert got_b[3] == 7.0 and got_c[5] == 15 and not b.any()   # the caller's arrays are copies


def test_out_of_bounds_write(vkir_check):
    vkir_check(shifted, np.ones(64, np.float32), np.zeros(64, np.float32))


@pytest.mark.vkir_device
def test_user_shader(vkir_check, vkir_device):
    sk = vkir.compile_glsl({str(SCALE)!r}, device=vkir_device)

    def reference(x, y):
        y[:50] = 2 * x[:50] + 1

    vkir_check(sk, np.arange(64, dtype=np.float32), np.zeros(64, np.float32), reference=reference,
               grid=1, push={{"n": 50, "alpha": 2.0, "beta": 1.0}})


def test_shutdown_mid_session(vkir_device):
    vkir.runtime.shutdown()
    with pytest.raises(vkir.DeviceError, match="device closed"):
        vkir.empty(4, device=vkir_device)


def test_after_a_shutdown(vkir_device, vkir_check):
    assert not vkir_device.closed
    vkir_check(affine, np.arange(64, dtype=np.float32), np.zeros(64, np.float32),
               np.zeros(64, np.int32))


def test_validation_message(vkir_device):
    from vkir.runtime._vk import ffi, lib, vk

    out = ffi.new("VkBuffer*")
    info = vk.VkBufferCreateInfo(size=0, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)
    lib.vkCreateBuffer(vkir_device.handle, ffi.addressof(info), ffi.NULL, out)  # size 0: invalid
    if out[0] != ffi.NULL:
        lib.vkDestroyBuffer(vkir_device.handle, out[0], ffi.NULL)
'''


def test_plugin_session(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("--vkir-validation", "--vkir-device=cpu", "-p",
                                           "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=4, failed=2)
    out = result.stdout.str()
    # the header names the device, its driver and driver version, and its device key
    assert re.search(r"vkir device: .+, driver .+ \(driverVersion 0x[0-9a-f]+\) \(device key "
                     r"[a-z0-9.-]+\)", out), out[:2000]
    assert "PASSED test_user.py::test_correct_kernel" in out
    assert "PASSED test_user.py::test_user_shader" in out
    assert "PASSED test_user.py::test_after_a_shutdown" in out
    assert "FAILED test_user.py::test_out_of_bounds_write" in out
    # found on the device (vkir_check builds with check_bounds=True), naming the invocation
    assert "OutOfBoundsError: kernel shifted: buffer b: index 64 is out of bounds" in out
    assert "threadIdx.x=63" in out
    assert "FAILED test_user.py::test_validation_message" in out
    assert "Vulkan validation-layer message(s) during call" in out
    assert "VUID-VkBufferCreateInfo-size-00912" in out


def test_no_device_skips_with_the_reason(pytester, monkeypatch, tmp_path):
    pytester.makepyfile(test_user='''
import pytest

def test_fixture(vkir_device):
    pass

@pytest.mark.vkir_device
def test_marker():
    pass

def test_pure():
    pass
''')
    monkeypatch.setenv("VK_ICD_FILENAMES", str(tmp_path / "missing_icd.json"))
    monkeypatch.setenv("VK_DRIVER_FILES", str(tmp_path / "missing_icd.json"))
    monkeypatch.setenv("VKIR_VALIDATION", "0")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=2)
    assert "no Vulkan device" in result.stdout.str()
