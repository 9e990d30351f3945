"""Device enumeration, selection, limits and features, and loader discovery."""

import os
import subprocess
import sys

import pytest

from vkir.errors import DeviceError


def test_devices_describe_the_device(device):
    from vkir import runtime

    infos = runtime.devices()
    assert infos and infos[device.info.index] == device.info
    info = device.info
    assert info.kind in ("discrete", "integrated", "virtual", "cpu", "other")
    assert info.name and info.driver and info.api_version.count(".") == 2
    lim = info.limits
    assert len(lim.max_workgroup_size) == 3 and len(lim.max_workgroup_count) == 3
    assert lim.max_workgroup_invocations >= 128  # Vulkan minimum
    assert lim.max_shared_memory_bytes >= 16384 and lim.max_push_constant_bytes >= 128
    assert lim.max_storage_buffer_range >= 1 << 27
    from vkir.features import NAMES

    assert info.features <= NAMES   # only the feature names vkir's table knows
    assert info.subgroup_size >= 1 and "basic" in info.subgroup_operations


def test_lavapipe_reports_its_features(device):
    """lavapipe's known features and quirks; any other device at least reports consistent ones
    (runs everywhere: CI may have a GPU)."""
    from vkir.quirks import driver_release, quirks_of

    info = device.info
    assert info.quirks == quirks_of(info.name, info.driver)
    if "llvmpipe" in info.name:
        assert info.kind == "cpu" and info.unified_memory
        assert {"float16", "int8", "int16", "int64", "float64", "storage_buffer_8bit",
                "storage_buffer_16bit"} <= info.features
        # the loop limit until Mesa 25.0 (tests/test_quirk_releases.py confirms each quirk)
        release = driver_release(info.driver)
        assert ("loop_trip_limit_65535" in info.quirks) == (release is None or release < (25, 0))
    else:
        assert info.kind in ("discrete", "integrated", "virtual", "cpu", "other")
        if "storage_buffer_8bit" in info.features:
            assert "int8" in info.features or info.kind != "cpu"


def test_selection(device, monkeypatch):
    from vkir import runtime

    assert runtime.select(str(device.info.index)) == device.info
    assert runtime.select(device.info) == device.info
    assert runtime.open_device(device.info.index) is device  # opened once per physical device
    if device.info.kind == "cpu":
        assert runtime.select("cpu").kind == "cpu"
    if "llvmpipe" in device.info.name:
        assert runtime.select("lavapipe") == device.info
    if "SwiftShader" in device.info.name:
        assert runtime.select("swiftshader") == device.info
    monkeypatch.setenv("VKIR_DEVICE", str(device.info.index))
    assert runtime.select() == device.info
    with pytest.raises(DeviceError, match="out of range"):
        runtime.select("99")
    with pytest.raises(DeviceError, match="no device matches"):
        runtime.select("no-such-device-name")


def test_best_device_order(device):
    from vkir import runtime
    from vkir.runtime.info import KIND_RANK

    infos = runtime.devices()
    if "VKIR_DEVICE" not in os.environ:
        best = runtime.select()
        assert KIND_RANK[best.kind] == min(KIND_RANK[d.kind] for d in infos)


def test_lavapipe_found_without_icd_environment(device):
    """With the loader unable to find any driver, the runtime retries with the icd.d manifests
    (lavapipe's among them; on a machine with a GPU the device found first may be another)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES", "VK_LAYER_PATH")}
    env["XDG_DATA_DIRS"] = "/nonexistent"  # hides /usr/share/vulkan from the loader
    code = ("from vkir import runtime; infos = runtime.devices(); "
            "print(infos[0].kind, len(runtime.validation_messages()))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    kind, messages = out.stdout.split()
    assert messages == "0"
    assert kind == "cpu" if device.info.kind == "cpu" else kind in (
        "discrete", "integrated", "virtual", "cpu", "other")


def test_validation_messages_are_collected(device):
    from vkir import runtime
    from vkir.runtime._vk import ffi, lib, vk

    if not runtime.validation_requested():
        pytest.skip("VKIR_VALIDATION is off")
    out = ffi.new("VkBuffer*")
    info = vk.VkBufferCreateInfo(size=0, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)
    lib.vkCreateBuffer(device.handle, ffi.addressof(info), ffi.NULL, out)  # size 0 is invalid
    if out[0] != ffi.NULL:
        lib.vkDestroyBuffer(device.handle, out[0], ffi.NULL)
    messages = runtime.validation_messages()  # taking them keeps the fixture's check clean
    assert any("VUID-VkBufferCreateInfo-size-00912" in m for m in messages), messages
