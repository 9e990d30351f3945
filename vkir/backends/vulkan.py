"""Vulkan as a backend: `vkir.build(f)` (or `device=` a Vulkan device selector, or "vulkan")
lowers for the device's Target, generates and validates SPIR-V and creates the pipeline; the
result is a vkir Kernel (vkir.driver.kernel), bounds-checked where asked."""

from __future__ import annotations

from ..ir import PrimFunc
from .base import Backend


class VulkanBackend(Backend):
    """Kernels on Vulkan devices."""

    name = "vulkan"

    def target(self, precise: bool = False):
        """The Target of the default Vulkan device."""
        from ..driver.arrays import resolve_device, target_for

        return target_for(resolve_device(None).info, precise)

    def kernel(self, func: PrimFunc, device=None, *, pointer_casts: bool = False,
               precise: bool = False, check_bounds: bool = False):
        """The device Kernel of `func` on `device` (a selector as for vkir.device, an opened
        Device, or None for the default one); with `check_bounds`, a BoundsCheckedKernel."""
        from ..driver.arrays import resolve_device
        from ..driver.kernel import Kernel

        dev = resolve_device(device)
        if check_bounds:
            from ..driver.bounds_check import BoundsCheckedKernel

            return BoundsCheckedKernel(
                func, lambda checked: Kernel(checked, dev, pointer_casts, precise))
        return Kernel(func, dev, pointer_casts, precise)
