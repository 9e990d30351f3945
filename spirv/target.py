"""The compilation target of the SPIR-V backend is vkir.Target (one description for passes,
checker and codegen); it is re-exported here as vkir.spirv.Target."""

from vkir.target import FEATURES, Limits, Target

__all__ = ["FEATURES", "Limits", "Target"]
