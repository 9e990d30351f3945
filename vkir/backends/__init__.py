"""Backends: what `vkir.build(f, device=...)` compiles and runs a kernel with.

A backend is a `Backend` (base.py) that gives the `kernel()` of a function. A host backend names
its `Target`, compiles a PrimFunc into an `Executable` (the lowered function plus whatever it
needs to run it), and `BackendKernel` gives it the Kernel interface: the same call signature,
argument checks (vkir.binding), write-back of numpy arguments and `profile()`. The interpreter
(`device="interp"`) is such a backend. A device backend implements the device seam (vkir.seam:
a core Runtime of an allocator, programs, limits and a target, plus the capabilities it
declares) and its kernels are vkir Kernels: Vulkan (vulkan.py) and WebGPU through wgpu-py
(wgpu.py, `device="wgpu"`, the extra `vkir[wgpu]`).

Backends are registered through the entry point group `vkir.backends` (vkir.seam.registry),
vkir's own three too, so a package installed beside vkir adds one. BACKENDS maps their names
(each a `Target.kind`) to their classes; `vkir.build` uses "vulkan" unless `device` names
another. The seam's classes are re-exported here for a backend's writer.
"""

from ..seam import (CAPABILITIES, Allocator, Done, ImageRuntime, Launch, Program, ProgramSpec,
                    Runtime, ShaderRuntime, Waitable)
from ..seam.registry import BackendTable, backend_class
from .base import Backend, BackendKernel, DeviceBackend, Executable
from .interp import InterpBackend
from .vulkan import VulkanBackend
from .wgpu import WgpuBackend

BACKENDS = BackendTable()

__all__ = ["Backend", "BackendKernel", "DeviceBackend", "Executable", "InterpBackend",
           "VulkanBackend", "WgpuBackend", "BACKENDS", "backend",
           # the seam a device backend implements (vkir.seam), for writers of backends
           "Runtime", "Allocator", "Program", "ProgramSpec", "Launch", "Waitable", "Done",
           "CAPABILITIES", "ShaderRuntime", "ImageRuntime"]


def backend(name: str) -> Backend:
    """The backend registered as `name` (a key of BACKENDS), made anew."""
    return backend_class(name)()
