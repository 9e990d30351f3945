"""Backends other than Vulkan: what `vkir.build(f, device=NAME)` compiles and runs a kernel with.

A backend is a `Backend` (base.py): it names its `Target`, compiles a PrimFunc into an
`Executable` (the lowered function plus whatever the backend needs to run it) and runs that on
checked arguments. `BackendKernel` gives every backend the Kernel interface: the same call
signature, argument checks (vkir.binding), write-back of numpy arguments and `profile()`.
The interpreter (`device="interp"`) is the first such backend; BACKENDS maps names to them.
"""

from .base import Backend, BackendKernel, Executable
from .interp import InterpBackend

BACKENDS = {"interp": InterpBackend}

__all__ = ["Backend", "BackendKernel", "Executable", "InterpBackend", "BACKENDS", "backend"]


def backend(name: str) -> Backend:
    """The backend called `name` (a key of BACKENDS)."""
    return BACKENDS[name]()
