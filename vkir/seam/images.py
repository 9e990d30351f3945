"""The device seam for images: what a backend implements so kernels and existing shaders can
bind images, samplers and texel buffers (vkir.seam.protocol is the seam for buffers); a runtime that has them declares the "images"
capability (vkir.seam.capabilities).

How a backend binds an image (the Vulkan backend: vulkan_images.py):

1. `create_image(fmt, extent, layers, dim, arrayed, what)` makes the backend's image object
   (on Vulkan a vkir.runtime Image: VkImage + memory + VkImageView, resting in GENERAL,
   cleared to zero) for an ImageFormat row of vkir.images.formats; `extent` is (width, height,
   depth), `dim` 1, 2 or 3, `arrayed` a 1-D/2-D array of `layers` layers. An unsupported format
   is UnsupportedError naming the format and the device, before the driver sees it.
   `image_copy_in(image, array)` / `image_copy_out(image, out)` copy host arrays of shape
   `image.shape` (([layers,] [depth,] [height,] width, channels), C-contiguous, the format's
   storage dtype; row pitch is the backend's business).
2. `check_image_format(fmt, use, what)` refuses a use the device lacks for the format:
   "storage", "sampled", "linear" (linear filtering), "atomic", "uniform_texel",
   "storage_texel".
3. `sampler(description, integer)` gives the backend's sampler for a vkir.images.sampling
   Sampler (`integer`: the image's reads are integers); `image_sampler(image, sampler)` the
   pair bound to a combined image sampler.
4. `texel_buffer(fmt, elements, what)` a buffer of `elements` texels with a view of `fmt`,
   copied with the allocator's `copy_in` / `copy_out` like any buffer.
   `buffer_texel_view(buffer, fmt)` a uniform texel buffer view of `fmt` over an existing
   storage buffer of the backend (a kernel's read-only argument, where codegen reads it through
   a texel buffer), or None where the backend cannot view that buffer so (alignment, size,
   usage): the caller then binds it as a storage buffer. A backend without it returns None.
5. A Program made with `ProgramSpec.descriptor_types` naming, per binding, "storage_image",
   "sampled_image", "combined_image_sampler", "sampler", "uniform_texel_buffer" or
   "storage_texel_buffer" (besides "storage" and "uniform") takes, at that binding's place in
   `launch(buffers, ...)`, the image, the image, the image_sampler pair, the sampler, or the
   texel buffer. The launch handles layouts and barriers (sampled images are read in
   SHADER_READ_ONLY_OPTIMAL, storage images in GENERAL).

`images_of(runtime)` is the runtime as an ImageRuntime, or UnsupportedError naming a backend
that has no images.
"""

from __future__ import annotations

import abc

from ..errors import UnsupportedError

__all__ = ["ImageRuntime", "images_of", "IMAGE_DESCRIPTOR_KINDS"]

IMAGE_DESCRIPTOR_KINDS = ("storage_image", "sampled_image", "combined_image_sampler", "sampler",
                          "uniform_texel_buffer", "storage_texel_buffer")


class ImageRuntime(abc.ABC):
    """Images, samplers and texel buffers of one device (see the module docstring)."""

    @abc.abstractmethod
    def create_image(self, fmt, extent: tuple, layers: int = 1, dim: int = 2,
                     arrayed: bool = False, what: str = "an image", levels: int = 1,
                     cube: bool = False):
        """A new image of `levels` mip levels, cleared to zero (`cube`: its six layers are the
        faces of a cube, sampled by direction)."""

    def image_level(self, image, index: int):
        """What binds mip level `index` of `image` alone (and copies it: image_copy_in/out)."""
        raise UnsupportedError(f"mip levels of images are a Vulkan feature; {self!r} has none")

    def generate_mips(self, image, what: str) -> None:
        """Fill levels 1.. of `image` from level 0 (vkir.images.mips defines the result)."""
        raise UnsupportedError(f"{what}: mip levels of images are a Vulkan feature")

    @abc.abstractmethod
    def image_copy_in(self, image, array) -> None:
        """Copy the host array `array` (image.shape, the format's dtype) into `image`."""

    @abc.abstractmethod
    def image_copy_out(self, image, out) -> None:
        """Copy `image` into the host array `out` (waiting for work that writes it)."""

    @abc.abstractmethod
    def check_image_format(self, fmt, use: str, what: str) -> None:
        """UnsupportedError naming the format and device where `use` is not supported."""

    @abc.abstractmethod
    def sampler(self, description, integer: bool = False):
        """The backend's sampler for a vkir Sampler description."""

    @abc.abstractmethod
    def image_sampler(self, image, sampler):
        """What a combined image sampler binding takes."""

    @abc.abstractmethod
    def texel_buffer(self, fmt, elements: int, what: str = "a texel buffer"):
        """A buffer of `elements` texels of `fmt` with its texel view."""


    def buffer_texel_view(self, buffer, fmt):
        """A uniform texel buffer view of ImageFormat `fmt` over `buffer`, or None (bind it as
        a storage buffer)."""
        return None


def images_of(runtime) -> ImageRuntime:
    """`runtime` as an ImageRuntime, or UnsupportedError naming its backend."""
    if isinstance(runtime, ImageRuntime) and "images" in runtime.capabilities:
        return runtime
    raise UnsupportedError(f"images, samplers and texel buffers run on Vulkan devices; "
                           f"{getattr(runtime, 'name', runtime)!r} is a "
                           f"{getattr(runtime, 'kind', '?')} device (no 'images' capability)")
