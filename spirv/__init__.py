"""vkir.spirv: the SPIR-V backend (grammar-driven module builder, codegen from lowered vkir,
in-process SPIRV-Tools validation, disassembly and assembly)."""

from .codegen import codegen
from .module import Binding, PushConstant, SpirvModule
from .target import FEATURES, Target
from .tools import assemble, disassemble, validate

__all__ = ["Target", "FEATURES", "SpirvModule", "Binding", "PushConstant", "codegen",
           "validate", "disassemble", "assemble"]
