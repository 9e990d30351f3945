"""Mip levels of a device image: a view of one level (`ImageLevel`, bound as a storage image or
a texture of that level alone, as mipmap generators and FidelityFX SPD bind each level they
write), and `generate_mips` (every level from the one above it, by vkCmdBlitImage).

An Image made with `levels=n` has one VkImageView over all its levels (what a texture samples
with `textureLod` / `T.sample(..., lod=)`); `level(image, i)` adds a view of level i alone,
destroyed with the image. A level's `serial` is the pair (image serial, its own): launches are
cached per level, and work on a level is work on the image (host copies wait for it).
A launch that samples an image and writes one of its levels keeps the image in GENERAL
(launch.py: a level counts as its image there).

`generate_mips(image)` blits level i - 1 onto level i for i = 1 .. n - 1 with linear filtering
(nearest for integer formats, which Vulkan does not filter); it needs the format's
BLIT_SRC/BLIT_DST (and linear-filter) features, refused with UnsupportedError naming the format
and the device otherwise. vkir.images.mips states what it computes.
"""

from __future__ import annotations

from vkir.errors import ArgumentError, UnsupportedError

from ._vk import call, vk
from .images import GENERAL, SHADER, TRANSFER, TO_DEVICE, TO_HOST, ANY_ACCESS, COLOR, VIEWS, \
    format_features, vk_format_name
from .memory import check_alive

__all__ = ["ImageLevel", "level", "generate_mips"]


class ImageLevel:
    """Mip level `index` of runtime Image `image`: `view` (that level alone), `extent` and
    `shape` (the level's), and the image's format, layers and dimensionality; `serial` is
    (image serial, own serial)."""

    __slots__ = ("image", "index", "view", "serial", "device")

    def __init__(self, image, index: int, view, serial: int):
        self.image, self.index, self.view = image, index, view
        self.device = image.device
        self.serial = (image.serial, serial)

    parent = property(lambda self: self.image, doc="The Image this is a level of.")
    handle = property(lambda self: self.image.handle, doc="The VkImage.")
    format = property(lambda self: self.image.format, doc="The image's ImageFormat.")
    dim = property(lambda self: self.image.dim, doc="1, 2 or 3.")
    layers = property(lambda self: self.image.layers, doc="Array layers.")
    arrayed = property(lambda self: self.image.arrayed, doc="Whether the view is an array.")
    usages = property(lambda self: self.image.usages, doc="The image's usages.")
    levels = 1

    @property
    def extent(self) -> tuple:
        """(width, height, depth) of this level."""
        return self.image.level_extent(self.index)

    @property
    def shape(self) -> tuple:
        """The host array's shape for this level."""
        return self.image.level_shape(self.index)

    def _range(self):
        return vk.VkImageSubresourceRange(aspectMask=COLOR, baseMipLevel=self.index,
                                          levelCount=1, baseArrayLayer=0,
                                          layerCount=self.image.layers)

    def write(self, array) -> None:
        """Copy a host array of this level's shape in."""
        self.image.write(array, self.index)

    def read(self, out=None):
        """Copy this level into `out` (or a new array) and return it."""
        return self.image.read(out, self.index)

    def __repr__(self) -> str:
        return f"<vkir ImageLevel {self.index} of {self.image!r}>"


def level(image, index: int) -> ImageLevel:
    """The ImageLevel of mip level `index` of `image` (a view made on first use)."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < image.levels:
        raise ArgumentError(f"{image!r} has mip levels 0 to {image.levels - 1}, got {index!r}")
    device = image.device
    cache = image.level_objects
    got = cache.get(index)
    if got is not None:
        return got
    with device.lifetime, device._lock:
        check_alive(image)
        info = vk.VkImageViewCreateInfo(
            image=image.handle, viewType=VIEWS[image.dim, image.arrayed],
            format=image.format.vk_format,
            subresourceRange=vk.VkImageSubresourceRange(
                aspectMask=COLOR, baseMipLevel=index, levelCount=1, baseArrayLayer=0,
                layerCount=image.layers))
        view = call("vkCreateImageView", vk.vkCreateImageView, device.handle, info, None)
        image.level_views.append(view)
        got = cache[index] = ImageLevel(image, index, view, device.next_serial())
    return got


def _barrier(cmd, image, index: int, old: int, new: int, src_access: int, dst_access: int,
             src_stage: int, dst_stage: int) -> None:
    barrier = vk.VkImageMemoryBarrier(
        srcAccessMask=src_access, dstAccessMask=dst_access, oldLayout=old, newLayout=new,
        srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
        dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, image=image.handle,
        subresourceRange=vk.VkImageSubresourceRange(aspectMask=COLOR, baseMipLevel=index,
                                                    levelCount=1, baseArrayLayer=0,
                                                    layerCount=image.layers))
    vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, None, 0, None, 1, [barrier])


def generate_mips(image, what: str = "generate_mips") -> None:
    """Fill levels 1 .. levels - 1 of `image` from level 0, each blitted from the one above."""
    fmt = image.format
    device = image.device
    features, _ = format_features(device, fmt)
    need = vk.VK_FORMAT_FEATURE_BLIT_SRC_BIT | vk.VK_FORMAT_FEATURE_BLIT_DST_BIT
    if not fmt.is_integer:
        need |= vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT
    if features & need != need:
        raise UnsupportedError(f"{what}: format {fmt.name} ({vk_format_name(fmt.vk_format)}) cannot be "
                               f"blitted{'' if fmt.is_integer else ' with linear filtering'} on "
                               f"{device.info.name!r} (VkFormatProperties)")
    if image.levels == 1:
        return
    flt = vk.VK_FILTER_NEAREST if fmt.is_integer else vk.VK_FILTER_LINEAR
    if device._inflight:
        device.wait_for(serial=image.serial)

    def corner(extent):
        return [vk.VkOffset3D(x=0, y=0, z=0), vk.VkOffset3D(x=extent[0], y=extent[1],
                                                            z=extent[2])]

    def record(cmd):
        read, write = vk.VK_ACCESS_TRANSFER_READ_BIT, vk.VK_ACCESS_TRANSFER_WRITE_BIT
        for i in range(1, image.levels):
            _barrier(cmd, image, i - 1, GENERAL, TO_HOST, ANY_ACCESS, read, SHADER | TRANSFER,
                     TRANSFER)
            _barrier(cmd, image, i, GENERAL, TO_DEVICE, ANY_ACCESS, write, SHADER | TRANSFER,
                     TRANSFER)
            region = vk.VkImageBlit(
                srcSubresource=vk.VkImageSubresourceLayers(
                    aspectMask=COLOR, mipLevel=i - 1, baseArrayLayer=0,
                    layerCount=image.layers),
                srcOffsets=corner(image.level_extent(i - 1)),
                dstSubresource=vk.VkImageSubresourceLayers(
                    aspectMask=COLOR, mipLevel=i, baseArrayLayer=0, layerCount=image.layers),
                dstOffsets=corner(image.level_extent(i)))
            vk.vkCmdBlitImage(cmd, image.handle, TO_HOST, image.handle, TO_DEVICE, 1, [region],
                              flt)
            _barrier(cmd, image, i - 1, TO_HOST, GENERAL, read, ANY_ACCESS, TRANSFER,
                     SHADER | TRANSFER)
            _barrier(cmd, image, i, TO_DEVICE, GENERAL, write, ANY_ACCESS, TRANSFER,
                     SHADER | TRANSFER)

    with device.lifetime, device._lock:
        check_alive(image)
        device.one_shot(record)
