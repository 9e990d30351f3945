"""The validation layer settings vkir turns on in validated runs, and whether the installed layer
knows them (read from its manifest, so that `vkir doctor` can say so without loading Vulkan)."""

from __future__ import annotations

import glob
import os

LAYER_DIRS = ("/usr/share/vulkan/explicit_layer.d", "/usr/local/share/vulkan/explicit_layer.d",
              "/etc/vulkan/explicit_layer.d")

# validation layer settings turned on in validated runs: synchronization validation that follows
# the buffers each shader really accesses (without it a missing barrier between two dispatches
# that write one buffer goes unreported). Requested through VK_EXT_layer_settings where the layer
# offers it, and through the layer's environment variables otherwise.
SETTINGS = ("syncval_shader_accesses_heuristic",)


def settings_environment() -> dict:
    """The environment variables that ask the validation layer for SETTINGS (both spellings
    layers read: VK_KHRONOS_VALIDATION_<NAME> and VK_VALIDATION_<NAME>)."""
    env = {}
    for name in SETTINGS:
        env[f"VK_KHRONOS_VALIDATION_{name.upper()}"] = "1"
        env[f"VK_VALIDATION_{name.upper()}"] = "1"
    return env


def layer_knows(setting: str) -> bool:
    """Whether the installed validation layer's manifest lists `setting` (older layers do not
    have the shader-accesses heuristic, and ignore the request)."""
    folders = [p for p in os.environ.get("VK_LAYER_PATH", "").split(os.pathsep) if p] + list(LAYER_DIRS)
    for folder in folders:
        for path in glob.glob(os.path.join(folder, "*khronos_validation*.json")):
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    if f'"{setting}"' in f.read():
                        return True
            except OSError:
                continue
    return False
