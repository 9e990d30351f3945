"""Backends: what `vkir.build(f, device=...)` compiles and runs a kernel with.

A backend is a `Backend` (base.py) that gives the `kernel()` of a function. Vulkan (vulkan.py)
gives device kernels; a host backend names its `Target`, compiles a PrimFunc into an
`Executable` (the lowered function plus whatever it needs to run it), and `BackendKernel` gives it
the Kernel interface: the same call signature, argument checks (vkir.binding), write-back of
numpy arguments and `profile()`. The interpreter (`device="interp"`) is such a backend.
A device backend implements the device seam (protocol.py: a Runtime with an allocator, programs
made from SPIR-V and device queries) and its kernels are vkir Kernels: Vulkan (vulkan.py) and
WebGPU through wgpu-py (wgpu.py, `device="wgpu"`, the extra `vkir[wgpu]`).
BACKENDS maps names (each a `Target.kind`) to them; `vkir.build` uses "vulkan" unless `device`
names another.
"""

from .base import Backend, BackendKernel, Executable
from .interp import InterpBackend
from .vulkan import VulkanBackend
from .wgpu import WgpuBackend

BACKENDS = {"interp": InterpBackend, "vulkan": VulkanBackend, "wgpu": WgpuBackend}

__all__ = ["Backend", "BackendKernel", "Executable", "InterpBackend", "VulkanBackend",
           "WgpuBackend", "BACKENDS", "backend"]


def backend(name: str) -> Backend:
    """The backend called `name` (a key of BACKENDS)."""
    return BACKENDS[name]()
