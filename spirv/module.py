"""What codegen hands to the runtime (SpirvModule, Binding, PushConstant): defined in vkir.abi,
below the backend, so that the compile cache can rebuild them without importing codegen."""

from vkir.abi import Binding, ImageParam, PushConstant, SpirvModule

__all__ = ["Binding", "ImageParam", "PushConstant", "SpirvModule"]
