"""SymbolicVectorCast: vector accesses for kernel parameters of symbolic size.

VectorTypeRewrite changes a parameter's element type only when its extent is a provable multiple
of the vector width; `T.Buffer(("n",), "float32")` proves nothing, so its aligned ramps would stay
lane-by-lane accesses. This pass, run after it for Vulkan, gives exactly those parameters an
explicit cast of `n // L` whole vectors (PointerCastVectorize restricted to parameters of
unprovable extent; Vulkan binds the same buffer to an aliased descriptor). Every aligned ramp
that is in bounds of the parameter is in bounds of the cast, so no byte past the array is ever
touched, whatever n is; accesses the cast cannot take stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import PrimFunc
from ..target import Target
from .base import Pass
from .pointer_cast_vectorize import PointerCastVectorize


@dataclass(frozen=True)
class SymbolicVectorCast(Pass):
    """Cast aligned vector accesses of parameters whose extent is not a provable multiple of the
    width to explicit vector-typed DeclBuffers (see the module docstring)."""

    target: Target | None = None

    def transform(self, func: PrimFunc) -> PrimFunc:
        """PointerCastVectorize restricted to parameters of unprovable extent."""
        return PointerCastVectorize(target=self.target, unprovable_extents_only=True).transform(func)
