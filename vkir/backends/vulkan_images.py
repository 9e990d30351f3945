"""The Vulkan backend's ImageRuntime (vkir.seam.images): vkir.runtime Images, samplers
and texel buffers behind the seam. VulkanRuntime (vulkan.py) inherits it; `self.device` is the
opened vkir.runtime Device."""

from __future__ import annotations

from ..seam.images import ImageRuntime


class VulkanImages(ImageRuntime):
    """Images of a vkir.runtime Device (`self.device`)."""

    def create_image(self, fmt, extent: tuple, layers: int = 1, dim: int = 2,
                     arrayed: bool = False, what: str = "an image", levels: int = 1,
                     cube: bool = False):
        """A vkir.runtime Image (cleared to zero, resting in GENERAL)."""
        from ..runtime.images import Image

        return Image(self.device, fmt, extent, layers, dim, arrayed, what, levels, cube)

    def image_level(self, image, index: int):
        """A vkir.runtime.mips ImageLevel: a view of one level, copied like an Image."""
        from ..runtime.mips import level

        return level(image, index)

    def generate_mips(self, image, what: str) -> None:
        """vkir.runtime.mips.generate_mips: a chain of blits."""
        from ..runtime.mips import generate_mips

        generate_mips(image, what)

    def image_copy_in(self, image, array) -> None:
        """Image.write: staged with the device's row pitch."""
        image.write(array)

    def image_copy_out(self, image, out) -> None:
        """Image.read into `out`."""
        image.read(out)

    def check_image_format(self, fmt, use: str, what: str) -> None:
        """vkir.runtime.images.check_format (VkFormatProperties)."""
        from ..runtime.images import check_format

        check_format(self.device, fmt, use, what)

    def sampler(self, description, integer: bool = False):
        """vkir.runtime.get_sampler: one VkSampler per device and description."""
        from ..runtime.samplers import get_sampler

        return get_sampler(self.device, description, integer)

    def image_sampler(self, image, sampler):
        """A vkir.runtime ImageSampler."""
        from ..runtime.samplers import ImageSampler

        return ImageSampler(image, sampler)

    def texel_buffer(self, fmt, elements: int, what: str = "a texel buffer"):
        """A vkir.runtime TexelBuffer (a Buffer with a VkBufferView)."""
        from ..runtime.images import TexelBuffer

        return TexelBuffer(self.device, fmt, elements, what)

    def buffer_texel_view(self, buffer, fmt):
        """A vkir.runtime TexelView over the runtime buffer `buffer`, or None where Vulkan
        allows none (vkir.runtime.buffer_texels)."""
        from ..runtime.buffer_texels import texel_view

        return texel_view(buffer, fmt)
