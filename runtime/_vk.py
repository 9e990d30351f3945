"""The `vulkan` cffi binding, plus VkResult naming and error conversion.

Setup calls go through the package's Python wrappers (convenient struct building); the hot
dispatch path calls `lib` (the loader's C entry points) directly to keep per-call overhead small.
"""

from __future__ import annotations

from vkir.errors import DeviceError

try:
    import vulkan as vk
except OSError as exc:  # the package dlopens libvulkan when imported
    raise DeviceError(f"no Vulkan loader (libvulkan.so.1) found: install libvulkan1 ({exc})") from None

ffi = vk.ffi
WHOLE_SIZE = 0xFFFFFFFFFFFFFFFF  # VK_WHOLE_SIZE (the package defines it as -1)
lib = vk.lib

# VkResult value -> name ("VK_ERROR_OUT_OF_DEVICE_MEMORY"), from the binding's constants
RESULT_NAMES = {}
for _name in dir(vk):
    if (_name.startswith(("VK_ERROR_", "VK_SUCCESS", "VK_NOT_READY", "VK_TIMEOUT", "VK_INCOMPLETE",
                          "VK_EVENT_")) and not _name.endswith(("_KHR", "_EXT", "_NV", "_INTEL"))
            and isinstance(getattr(vk, _name), int)):
        RESULT_NAMES.setdefault(getattr(vk, _name), _name)
for _name in dir(vk):
    if _name.startswith("VK_ERROR_") and isinstance(getattr(vk, _name), int):
        RESULT_NAMES.setdefault(getattr(vk, _name), _name)
_EXC_RESULT = {cls: code for code, cls in vk.exception_codes.items()}


def result_name(code: int) -> str:
    return RESULT_NAMES.get(code, f"VkResult({code})")


def check(code: int, what: str) -> None:
    """Raise DeviceError naming `what` and the VkResult unless `code` is VK_SUCCESS."""
    if code != vk.VK_SUCCESS:
        raise DeviceError(f"{what} failed: {result_name(code)}")


def call(what: str, fn, *args):
    """Call a `vulkan` package wrapper, turning its exception classes into DeviceError."""
    try:
        return fn(*args)
    except (vk.VkError, vk.VkException) as exc:
        code = _EXC_RESULT.get(type(exc))
        raise DeviceError(f"{what} failed: {result_name(code) if code is not None else exc!r}") from None


def version_string(v: int) -> str:
    return f"{v >> 22 & 0x7F}.{v >> 12 & 0x3FF}.{v & 0xFFF}"


def cstr(arr) -> str:
    """A C char array (or the str the package's wrappers already made of one) as str."""
    if isinstance(arr, str):
        return arr
    return ffi.string(arr).decode(errors="replace")
