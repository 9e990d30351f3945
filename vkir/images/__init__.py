"""Image formats shared by every layer: the script and IR (a format's read and write type), the
interpreter (storage dtype and conversions), SPIR-V codegen (the declared ImageFormat) and the
Vulkan runtime (the VkFormat). A leaf package: it imports nothing of vkir but its errors, so the
runtime, which knows no IR, can use it too."""

from .formats import FORMATS, ImageFormat, image_format

__all__ = ["FORMATS", "ImageFormat", "image_format"]
