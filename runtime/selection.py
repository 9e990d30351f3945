"""Device enumeration and selection.

`$VKIR_DEVICE` picks a device: "lavapipe" (or "llvmpipe": Mesa's CPU driver only), "swiftshader"
(Google's CPU driver only), "cpu" (any CPU driver), "gpu" (the best GPU), an index into
`devices()`, or any other text found in a device's name; without it the best device wins:
discrete > integrated > virtual > cpu.
"""

from __future__ import annotations

import os
import threading

from vkir import config
from vkir.errors import DeviceError

from .device import Device
from .info import KIND_RANK, DeviceInfo, query_info
from .instance import get_instance, on_fork_in_child

# selectors that name one driver: matched against the device name and driver text, never "any CPU"
DRIVER_SELECTORS = {"lavapipe": "llvmpipe", "llvmpipe": "llvmpipe", "swiftshader": "swiftshader"}

# where Debian's chromium-common installs SwiftShader's ICD manifest (outside the loader's folders)
SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json"

_opened: dict = {}
_lock = threading.Lock()


def _abandon_after_fork() -> None:
    """In a forked child: every device opened by the parent is closed unused (see
    Device.abandon_after_fork) and the next open_device() creates a new one."""
    global _lock
    _lock = threading.Lock()
    for dev in _opened.values():
        dev.abandon_after_fork()
    _opened.clear()
    _forked_with_driver.append(True)


# non-empty in a child forked after the parent loaded a driver: a device opened there is probed
# first (some drivers' worker threads do not follow a fork, and the child's work would never run)
_forked_with_driver: list = []
FORK_PROBE_SECONDS = 5.0


on_fork_in_child(_abandon_after_fork)


def devices() -> list[DeviceInfo]:
    """Every physical device the Vulkan loader reports (lavapipe included)."""
    inst = get_instance()
    infos = inst.__dict__.get("_infos")
    if infos is None:
        with inst.lifetime:   # not destroyed by a shutdown meanwhile
            infos = [query_info(i, p) for i, p in enumerate(inst.physical_devices)]
        inst._infos = infos
    return list(infos)


def select(selector=None) -> DeviceInfo:
    """The DeviceInfo chosen by `selector` (None: $VKIR_DEVICE, else the best device)."""
    infos = devices()
    if not infos:
        raise DeviceError("no Vulkan device found (install mesa-vulkan-drivers for lavapipe)")
    where = ""
    if selector is None:
        selector = config.device_selector()
        where = " (from $VKIR_DEVICE)"
    if selector is None:
        return min(infos, key=lambda d: (KIND_RANK[d.kind], d.index))
    if isinstance(selector, DeviceInfo):
        return infos[selector.index]
    text = str(selector).strip().lower()
    names = ", ".join(f"{d.index}: {d.name} ({d.kind})" for d in infos)
    if text.lstrip("-").isdigit():
        index = int(text)
        if not 0 <= index < len(infos):
            raise DeviceError(f"device index {index}{where} out of range; available: {names}")
        return infos[index]
    if text in DRIVER_SELECTORS:
        needle = DRIVER_SELECTORS[text]
        matches = [d for d in infos if needle in f"{d.name} {d.driver}".lower()]
    elif text == "cpu":
        matches = [d for d in infos if d.kind == "cpu"]
    elif text == "gpu":
        matches = [d for d in infos if d.kind in ("discrete", "integrated", "virtual")]
    else:
        matches = [d for d in infos if text in d.name.lower()]
    if not matches:
        hint = ""
        if text == "swiftshader" and os.path.exists(SWIFTSHADER_ICD):
            hint = (f" (SwiftShader is installed but not visible to the Vulkan loader: "
                    f"VK_ICD_FILENAMES={SWIFTSHADER_ICD} selects it)")
        raise DeviceError(f"no device matches {selector!r}{where}; available: {names}{hint}")
    return min(matches, key=lambda d: (KIND_RANK[d.kind], d.index))


def open_device(selector=None) -> Device:
    """The opened (logical) Device for `selector`, created once per physical device."""
    info = select(selector)
    dev = _opened.get(info.index)
    if dev is None or dev.closed:
        with _lock:
            dev = _opened.get(info.index)
            if dev is None or dev.closed:
                inst = get_instance()
                dev = Device(inst, info, inst.physical_devices[info.index])  # closed at shutdown
                if _forked_with_driver:
                    dev.probe(FORK_PROBE_SECONDS, "in this process forked from one that used it")
                _opened[info.index] = dev
    return dev


def validation_messages(clear: bool = True) -> list[str]:
    """Validation-layer messages collected so far (empty unless VKIR_VALIDATION=1)."""
    inst = get_instance()
    return inst.take_messages() if clear else list(inst.messages)
