"""The device seam: what a device backend implements (protocol.py: a core Runtime of an
allocator, programs, launches, limits and a target), the optional capabilities it may declare
(capabilities.py: existing shaders, images in images.py, sequences, timestamps, aliasing), and
the registry of backends (registry.py: the entry point group `vkir.backends`).

It sits below the kernels that use it (vkir.driver) and the backends that implement it
(vkir.backends), and imports neither: kernels reach a device only through it.
"""

from .capabilities import CAPABILITIES, ShaderRuntime, require, shaders_of
from .images import ImageRuntime, images_of
from .protocol import Allocator, Done, Launch, Program, ProgramSpec, Runtime, Waitable
from .registry import GROUP, backend_class, backend_names, has_backend

__all__ = ["Allocator", "Done", "Launch", "Program", "ProgramSpec", "Runtime", "Waitable",
           "CAPABILITIES", "ShaderRuntime", "require", "shaders_of", "ImageRuntime", "images_of",
           "GROUP", "backend_class", "backend_names", "has_backend"]
