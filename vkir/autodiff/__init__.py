"""vkir.autodiff: reverse-mode differentiation of kernels. `grad(f, wrt)` builds the adjoint
PrimFunc by source transformation (vkir.autodiff.adjoint); `Tape` records kernel calls on
DeviceArrays and runs their adjoints backwards (vkir.autodiff.recording)."""

from .adjoint import grad
from .recording import Tape

__all__ = ["Tape", "grad"]
