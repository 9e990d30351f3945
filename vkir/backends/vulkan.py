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
        Device, or None for the default one); with `check_bounds`, a BoundsCheckedKernel; on a
        driver that cuts long loops, with loop-cut checks where the host cannot bound a loop
        (vkir.driver.loop_cut)."""
        from ..driver.arrays import resolve_device
        from ..driver.kernel import Kernel

        from ..driver.loop_cut import with_loop_checks

        dev = resolve_device(device)

        def build(f):   # with loop-cut checks where the driver could cut a loop silently
            return with_loop_checks(f, dev.info.quirks,
                                    lambda g: Kernel(g, dev, pointer_casts, precise))

        if check_bounds:
            from ..driver.bounds_check import BoundsCheckedKernel

            return BoundsCheckedKernel(func, build)
        return build(func)
