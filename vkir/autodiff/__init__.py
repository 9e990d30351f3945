"""vkir.autodiff: reverse-mode differentiation of kernels. `grad(f, wrt)` builds the adjoint
PrimFunc by source transformation (vkir.autodiff.adjoint); `adjoint_kernels(f, wrt)` the same
adjoint as kernels that gather shared reads instead of adding them atomically
(vkir.autodiff.staged); `Tape` records kernel calls on DeviceArrays and runs their adjoints
backwards (vkir.autodiff.recording)."""

from .adjoint import grad
from .recording import Tape
from .staged import AdjointKernels, BuiltAdjoint, adjoint_kernels

__all__ = ["AdjointKernels", "BuiltAdjoint", "Tape", "adjoint_kernels", "grad"]
