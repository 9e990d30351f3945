"""The public facade: the names `vkir.build`, `vkir.device`, `vkir.array`, ... resolve to. It
only re-exports: devices and device arrays live in vkir.driver.arrays, lowering, building and
calling kernels in vkir.driver.kernel (which joins the SPIR-V backend and the runtime, both
imported lazily so that `import vkir` needs no Vulkan loader)."""

from __future__ import annotations

from .driver.arrays import (DeviceArray, array, device, devices, empty, full, resolve_device,
                            target_for, zeros)
from .driver.dispatch import SCRATCH_BUFFERS
from .driver.kernel import Kernel, Profile, build, check_layouts, interpret, lower

__all__ = ["devices", "device", "target_for", "DeviceArray", "array", "empty", "zeros", "full",
           "interpret", "lower", "build", "Kernel", "Profile", "resolve_device", "check_layouts",
           "SCRATCH_BUFFERS"]
