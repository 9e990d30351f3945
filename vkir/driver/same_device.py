"""The check that a device argument (an array, an image) lives on the device of the kernel or
shader it is passed to, with the error that says why not.

Two devices differ for two reasons, and the error tells them apart: one of them was closed (by
`vkir.runtime.shutdown()` or its `close()`: an array made before a shutdown and a kernel built
after it, on the device opened since, both on "llvmpipe"), a DeviceError naming the closed one;
or the argument was made on another device than the kernel's, an ArgumentError naming both.
"""

from __future__ import annotations

from ..errors import ArgumentError, DeviceError


def check_same_device(what: str, device, rt, holder: str = "the kernel") -> None:
    """Raise unless `device` (the runtime Device the argument `what` lives on) is the one of
    `rt`, the seam Runtime of `holder` (the kernel or shader it is passed to): DeviceError where
    the holder's device or the argument's was closed, else ArgumentError naming both devices."""
    if device is getattr(rt, "device", None):
        return
    rt.check_open()            # the kernel's device closed: the kernel is what is stale
    check_open = getattr(device, "check_open", None)   # a vkir.runtime Device's
    try:
        if check_open is not None:
            check_open()       # the argument's: the array is
    except DeviceError as exc:
        raise DeviceError(f"{what}: {exc}") from None
    raise ArgumentError(f"{what} lives on {device.info.name!r}, {holder} on {rt.name!r}")
