"""Validated runs (VKIR_VALIDATION=1) ask the layer for synchronization validation that follows
each shader's accesses, and keep each message's id."""

import os
import subprocess
import sys
import textwrap

from vkir.runtime.layer_settings import SETTINGS, settings_environment

PROBE = textwrap.dedent("""
    import os, vulkan as vk, vkir
    from vkir.runtime import open_device, validation_messages
    dev = open_device()
    print("env", os.environ.get("VK_KHRONOS_VALIDATION_SYNCVAL_SHADER_ACCESSES_HEURISTIC"))
    try:   # size 0 breaks a valid-usage rule the layer reports (the driver is not reached)
        buf = vk.vkCreateBuffer(dev.handle, vk.VkBufferCreateInfo(
            size=0, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        vk.vkDestroyBuffer(dev.handle, buf, None)
    except vk.VkError:
        pass
    for m in validation_messages():
        print("message", m)
""")


def test_the_shader_accesses_heuristic_is_requested():
    assert "syncval_shader_accesses_heuristic" in SETTINGS
    env = settings_environment()
    assert env["VK_KHRONOS_VALIDATION_SYNCVAL_SHADER_ACCESSES_HEURISTIC"] == "1"
    assert env["VK_VALIDATION_SYNCVAL_SHADER_ACCESSES_HEURISTIC"] == "1"


def test_validated_run_sets_the_setting_and_keeps_message_ids():
    env = dict(os.environ, VKIR_VALIDATION="1")
    env.pop("VK_KHRONOS_VALIDATION_SYNCVAL_SHADER_ACCESSES_HEURISTIC", None)
    run = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "env 1" in lines
    messages = [line for line in lines if line.startswith("message ")]
    assert messages, run.stdout + run.stderr
    assert any("[VUID-VkBufferCreateInfo-size-00912 (id 0x" in m for m in messages), messages
