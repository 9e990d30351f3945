"""Device images and texel buffers: VkImage + memory + VkImageView, and VkBuffer + VkBufferView.

An `Image` holds one vkir.images format, an extent (width, height, depth), a layer count
and a dimensionality (1, 2 or 3; `arrayed` for 1-D and 2-D arrays; `cube`: six square layers
viewed as a cube, faces +x, -x, +y, -y, +z, -z), and `levels` mip levels (vkir.runtime.mips). Tiling is optimal; the
usages are every one of storage and sampled that the device's VkFormatProperties allow for the
format, plus transfers. Whether the device supports the format is asked before the driver sees
it (`check_format`), and refused with UnsupportedError naming the format and the device.

Layouts: an image rests in GENERAL (storage images); host copies move it to TRANSFER_DST_OPTIMAL
or TRANSFER_SRC_OPTIMAL and back; a launch that samples it
moves it to SHADER_READ_ONLY_OPTIMAL around its dispatch (launch.py, `read_only_barriers`) and
back. Host copies go through the device's staging buffer with vkCmdCopyBufferToImage /
vkCmdCopyImageToBuffer; staged rows are padded to the device's optimalBufferCopyRowPitchAlignment
(`bufferRowLength`), so the caller always gives and gets tightly packed, C-contiguous arrays of
shape `extent + (channels,)` (origin top-left: row 0 is y = 0). A new image is cleared to zero.

A `TexelBuffer` is a runtime Buffer made with the texel-buffer usages and a VkBufferView of one
format, bound as a uniform or storage texel buffer. Images and texel buffers are freed when
collected, like buffers (Device.track), and bound by launches like buffers (launch.py).
"""

from __future__ import annotations

import math

import numpy as np

from vkir.errors import ArgumentError, UnsupportedError
from vkir.images import ImageFormat

from ._vk import call, check, ffi, lib, vk
from .memory import USAGE, Buffer, check_alive, memory_barrier

GENERAL = vk.VK_IMAGE_LAYOUT_GENERAL
READ_ONLY = vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL
TO_DEVICE = vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL   # during host -> image copies and clears
TO_HOST = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL     # during image -> host copies
ANY_ACCESS = (vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
              | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
SHADER = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
TRANSFER = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
COLOR = vk.VK_IMAGE_ASPECT_COLOR_BIT
_TYPES = {1: vk.VK_IMAGE_TYPE_1D, 2: vk.VK_IMAGE_TYPE_2D, 3: vk.VK_IMAGE_TYPE_3D}
VIEWS = {(1, False): vk.VK_IMAGE_VIEW_TYPE_1D, (1, True): vk.VK_IMAGE_VIEW_TYPE_1D_ARRAY,
         (2, False): vk.VK_IMAGE_VIEW_TYPE_2D, (2, True): vk.VK_IMAGE_VIEW_TYPE_2D_ARRAY,
         (3, False): vk.VK_IMAGE_VIEW_TYPE_3D}
# what each use of an image needs of the format (VkFormatFeatureFlags)
IMAGE_FEATURES = {"storage": vk.VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT,
                  "sampled": vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT,
                  "linear": vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT,
                  "atomic": vk.VK_FORMAT_FEATURE_STORAGE_IMAGE_ATOMIC_BIT}
BUFFER_FEATURES = {"uniform_texel": vk.VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT,
                   "storage_texel": vk.VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT,
                   "atomic": vk.VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_ATOMIC_BIT}
_USE_NAMES = {"storage": "storage images", "sampled": "sampled images",
              "linear": "linear filtering", "atomic": "image atomics",
              "uniform_texel": "uniform texel buffers", "storage_texel": "storage texel buffers"}


def format_features(device, fmt: ImageFormat) -> tuple:
    """(optimal-tiling features, buffer features) of `fmt` on `device` (queried once)."""
    got = device.format_properties.get(fmt.vk_format)
    if got is None:
        props = vk.vkGetPhysicalDeviceFormatProperties(device.physical, fmt.vk_format)
        got = device.format_properties[fmt.vk_format] = (props.optimalTilingFeatures,
                                                         props.bufferFeatures)
    return got


def check_format(device, fmt: ImageFormat, use: str, what: str = "an image") -> None:
    """UnsupportedError naming the format and the device unless `fmt` supports `use` there
    ("storage", "sampled", "linear" or "atomic" for images, "uniform_texel",
    "storage_texel" for texel buffers)."""
    image, buffer = format_features(device, fmt)
    bits = IMAGE_FEATURES.get(use)
    have = image if bits is not None else buffer
    bits = bits if bits is not None else BUFFER_FEATURES[use if use != "atomic" else "atomic"]
    if not have & bits:
        raise UnsupportedError(f"{what}: format {fmt.name} ({vk_format_name(fmt.vk_format)}) does not "
                               f"support {_USE_NAMES[use]} on {device.info.name!r} "
                               "(VkFormatProperties)")


def vk_format_name(value: int) -> str:
    """The VK_FORMAT_* name of a VkFormat value, for messages (the number when it has none)."""
    for name in dir(vk):
        if name.startswith("VK_FORMAT_") and getattr(vk, name) == value:
            return name
    return f"VkFormat {value}"


def device_limits(device) -> dict:
    """The device limits images and texel buffers need, by their Vulkan names (queried once)."""
    got = device.format_properties.get("limits")
    if got is None:
        props = vk.vkGetPhysicalDeviceProperties(device.physical)
        got = device.format_properties["limits"] = {
            name: int(getattr(props.limits, name))
            for name in ("optimalBufferCopyRowPitchAlignment", "maxTexelBufferElements")}
    return got


class Image:
    """A device image of `format` (an ImageFormat) with `extent` (width, height, depth),
    `layers` array layers and `dim` 1, 2 or 3 (`arrayed`: a 1-D or 2-D array view);
    `shape` is the host array's shape (layers, depth, height, width as present, channels last).
    `usages` holds "storage" and/or "sampled"."""

    def __init__(self, device, fmt: ImageFormat, extent: tuple, layers: int = 1, dim: int = 2,
                 arrayed: bool = False, what: str = "an image", levels: int = 1,
                 cube: bool = False):
        self.device, self.format, self.dim = device, fmt, dim
        self.cube = bool(cube)   # six square 2-D layers viewed as a cube (sampled only)
        assert not cube or (dim == 2 and arrayed and layers == 6)
        self.extent = tuple(int(n) for n in extent)
        self.layers, self.arrayed, self.levels = int(layers), bool(arrayed), int(levels)
        self.level_views = []   # views of single levels (vkir.runtime.mips), freed with it
        self.level_objects = {}   # level index -> its vkir.runtime.mips.ImageLevel
        assert dim in (1, 2, 3) and len(self.extent) == 3 and not (arrayed and dim == 3)
        self.handle = self.memory = self.view = None
        features, _ = format_features(device, fmt)
        self.usages = frozenset(u for u in ("storage", "sampled") if features & IMAGE_FEATURES[u]
                                and (u != "storage" or fmt.storable))   # never sRGB storage
        if not self.usages:
            check_format(device, fmt, "sampled", what)
        usage = vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT | vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT
        usage |= vk.VK_IMAGE_USAGE_STORAGE_BIT if "storage" in self.usages else 0
        usage |= vk.VK_IMAGE_USAGE_SAMPLED_BIT if "sampled" in self.usages else 0
        self._check_extent(usage, what)
        with device.lifetime, device._lock:
            device.check_open()
            device.collect()
            self.serial = device.next_serial()
            self._create(usage)
        self.device.one_shot(self._record_clear)

    @property
    def shape(self) -> tuple:
        """The host array's shape: ([layers,] [depth,] [height,] width, channels)."""
        w, h, d = self.extent
        axes = {1: (w,), 2: (h, w), 3: (d, h, w)}[self.dim]
        return ((self.layers,) if self.arrayed else ()) + axes + (self.format.channels,)

    @property
    def nbytes(self) -> int:
        """Bytes of the tightly packed host array."""
        return math.prod(self.shape) * np.dtype(self.format.storage_dtype).itemsize

    def _check_extent(self, usage: int, what: str) -> None:
        try:
            props = vk.vkGetPhysicalDeviceImageFormatProperties(
                self.device.physical, self.format.vk_format, _TYPES[self.dim],
                vk.VK_IMAGE_TILING_OPTIMAL, usage, self._flags())
        except vk.VkErrorFormatNotSupported:
            raise UnsupportedError(f"{what}: a {self.dim}-D image of format {self.format.name} is "
                                   f"not supported on {self.device.info.name!r}") from None
        top = (props.maxExtent.width, props.maxExtent.height, props.maxExtent.depth)
        for axis, n, cap in zip("xyz", self.extent, top):
            if n > cap:
                raise UnsupportedError(f"{what}: extent {n} along {axis} exceeds the "
                                       f"{self.format.name} {self.dim}-D image limit {cap} of "
                                       f"{self.device.info.name!r}")
        if self.levels > props.maxMipLevels:
            raise UnsupportedError(f"{what}: {self.levels} mip levels exceed maxMipLevels "
                                   f"{props.maxMipLevels} of {self.device.info.name!r}")
        if self.layers > props.maxArrayLayers:
            raise UnsupportedError(f"{what}: {self.layers} layers exceed maxArrayLayers "
                                   f"{props.maxArrayLayers} of {self.device.info.name!r}")

    def _flags(self) -> int:
        return vk.VK_IMAGE_CREATE_CUBE_COMPATIBLE_BIT if self.cube else 0

    def _create(self, usage: int) -> None:
        device = self.device
        dev = device.handle
        w, h, d = self.extent
        info = vk.VkImageCreateInfo(
            flags=self._flags(),
            imageType=_TYPES[self.dim], format=self.format.vk_format,
            extent=vk.VkExtent3D(width=w, height=h, depth=d), mipLevels=self.levels,
            arrayLayers=self.layers, samples=vk.VK_SAMPLE_COUNT_1_BIT,
            tiling=vk.VK_IMAGE_TILING_OPTIMAL, usage=usage,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED)
        out = ffi.new("VkImage*")
        check(lib.vkCreateImage(dev, ffi.addressof(info), ffi.NULL, out), "vkCreateImage")
        image = out[0]
        req = ffi.new("VkMemoryRequirements*")
        lib.vkGetImageMemoryRequirements(dev, image, req)
        mem = ffi.new("VkDeviceMemory*")
        alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=device.memory_type(
            req.memoryTypeBits, 0, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
        r = lib.vkAllocateMemory(dev, ffi.addressof(alloc), ffi.NULL, mem)
        if r:
            lib.vkDestroyImage(dev, image, ffi.NULL)
            check(r, f"vkAllocateMemory({req.size} bytes for an image)")
        self.handle, self.memory = image, mem[0]
        check(lib.vkBindImageMemory(dev, image, mem[0], 0), "vkBindImageMemory")
        view_info = vk.VkImageViewCreateInfo(
            image=image, viewType=vk.VK_IMAGE_VIEW_TYPE_CUBE if self.cube else
            VIEWS[self.dim, self.arrayed], format=self.format.vk_format,
            subresourceRange=self._range())
        self.view = call("vkCreateImageView", vk.vkCreateImageView, dev, view_info, None)
        handle, memory, view, level_views = self.handle, self.memory, self.view, self.level_views

        def destroy():
            for one in level_views:
                lib.vkDestroyImageView(dev, one, ffi.NULL)
            lib.vkDestroyImageView(dev, view, ffi.NULL)
            lib.vkDestroyImage(dev, handle, ffi.NULL)
            lib.vkFreeMemory(dev, memory, ffi.NULL)

        device.track(self, destroy)

    def _range(self):
        """Every level and layer (what layout barriers move and the image's own view covers)."""
        return vk.VkImageSubresourceRange(aspectMask=COLOR, baseMipLevel=0,
                                          levelCount=self.levels, baseArrayLayer=0,
                                          layerCount=self.layers)

    def _record_clear(self, cmd) -> None:
        layout_barrier(cmd, [self], vk.VK_IMAGE_LAYOUT_UNDEFINED, TO_DEVICE, 0,
                       vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                       TRANSFER)
        color = ffi.new("VkClearColorValue*")   # all zero bits: 0 for every format kind
        lib.vkCmdClearColorImage(cmd, self.handle, TO_DEVICE, color, 1, ffi.new(
            "VkImageSubresourceRange*", {"aspectMask": COLOR, "levelCount": self.levels,
                                         "layerCount": self.layers}))
        layout_barrier(cmd, [self], TO_DEVICE, GENERAL, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                       ANY_ACCESS, TRANSFER, SHADER | TRANSFER)

    # -- host copies ----------------------------------------------------------------------------
    def level_extent(self, level: int) -> tuple:
        """(width, height, depth) of mip level `level`."""
        return tuple(max(1, n >> level) for n in self.extent)

    def _pitch(self, level: int = 0) -> int:
        """Bytes per staged row: the packed row rounded up to the device's
        optimalBufferCopyRowPitchAlignment (and to whole texels)."""
        texel = self.format.texel_bytes
        align = max(1, device_limits(self.device)["optimalBufferCopyRowPitchAlignment"])
        step = texel * align // math.gcd(texel, align)
        return -(-self.level_extent(level)[0] * texel // step) * step

    def _region(self, pitch: int, level: int = 0):
        w, h, d = self.level_extent(level)
        sub = vk.VkImageSubresourceLayers(aspectMask=COLOR, mipLevel=level, baseArrayLayer=0,
                                          layerCount=self.layers)
        return ffi.new("VkBufferImageCopy*", {
            "bufferOffset": 0, "bufferRowLength": pitch // self.format.texel_bytes,
            "bufferImageHeight": h, "imageSubresource": sub,
            "imageExtent": {"width": w, "height": h, "depth": d}})

    def _planes(self, level: int = 0) -> int:
        _, h, d = self.level_extent(level)
        return self.layers * d * h

    def write(self, array: np.ndarray, level: int = 0) -> None:
        """Copy the host array (this image's shape, or mip level `level`'s, and
        format.storage_dtype, C-contiguous) in."""
        src = self._checked(array, level)
        device = self.device
        pitch = self._pitch(level)
        row = self.level_extent(level)[0] * self.format.texel_bytes
        staged = np.zeros((self._planes(level), pitch), np.uint8)
        staged[:, :row] = src.reshape(-1).view(np.uint8).reshape(self._planes(level), row)
        if device._inflight:
            device.wait_for(serial=self.serial)
        with device.lifetime, device._lock:
            check_alive(self)
            stage = device.staging(staged.nbytes)
            stage.write_prefix(staged.reshape(-1))
            region = self._region(pitch, level)

            def record(cmd):
                layout_barrier(cmd, [self], GENERAL, TO_DEVICE, ANY_ACCESS,
                               vk.VK_ACCESS_TRANSFER_WRITE_BIT, SHADER | TRANSFER, TRANSFER)
                lib.vkCmdCopyBufferToImage(cmd, stage.handle, self.handle, TO_DEVICE, 1, region)
                layout_barrier(cmd, [self], TO_DEVICE, GENERAL, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                               ANY_ACCESS, TRANSFER, SHADER | TRANSFER)

            device.one_shot(record)

    def read(self, out: np.ndarray | None = None, level: int = 0) -> np.ndarray:
        """Copy the image (mip level `level` of it) into `out` (that level's shape and dtype,
        C-contiguous) or a new array, and return it."""
        if out is None:
            out = np.empty(self.level_shape(level), np.dtype(self.format.storage_dtype))
        dst = self._checked(out, level)
        device = self.device
        pitch = self._pitch(level)
        row = self.level_extent(level)[0] * self.format.texel_bytes
        staged = np.empty((self._planes(level), pitch), np.uint8)
        if device._inflight:
            device.wait_for(serial=self.serial)
        with device.lifetime, device._lock:
            check_alive(self)
            stage = device.staging(staged.nbytes)
            region = self._region(pitch, level)

            def record(cmd):
                layout_barrier(cmd, [self], GENERAL, TO_HOST, ANY_ACCESS,
                               vk.VK_ACCESS_TRANSFER_READ_BIT, SHADER | TRANSFER, TRANSFER)
                lib.vkCmdCopyImageToBuffer(cmd, self.handle, TO_HOST, stage.handle, 1, region)
                layout_barrier(cmd, [self], TO_HOST, GENERAL, 0, ANY_ACCESS, TRANSFER,
                               SHADER | TRANSFER)
                memory_barrier(cmd, TRANSFER, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                               vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)

            device.one_shot(record)
            stage._read_prefix(staged.reshape(-1))
        dst.reshape(-1).view(np.uint8).reshape(self._planes(level), row)[:] = staged[:, :row]
        return out

    def level_shape(self, level: int) -> tuple:
        """The host array's shape for mip level `level`."""
        w, h, d = self.level_extent(level)
        axes = {1: (w,), 2: (h, w), 3: (d, h, w)}[self.dim]
        return ((self.layers,) if self.arrayed else ()) + axes + (self.format.channels,)

    def _checked(self, array, level: int = 0) -> np.ndarray:
        shape = self.level_shape(level)
        if not isinstance(array, np.ndarray) or array.dtype != np.dtype(self.format.storage_dtype) or \
                array.size != math.prod(shape) or not array.flags.c_contiguous:
            raise ArgumentError(f"{self!r} copies C-contiguous {self.format.storage_dtype} arrays of "
                                f"shape {shape}, got {getattr(array, 'dtype', type(array))} "
                                f"{getattr(array, 'shape', '')}")
        return array

    def __repr__(self) -> str:
        return (f"<vkir Image #{getattr(self, 'serial', '?')} {self.format.name} {self.shape[:-1]} "
                f"on {self.device.info.name}>")


def layout_barrier(cmd, images, old: int, new: int, src_access: int, dst_access: int,
                   src_stage: int, dst_stage: int) -> None:
    """Record one image memory barrier per image moving it from layout `old` to `new`."""
    barriers = [vk.VkImageMemoryBarrier(
        srcAccessMask=src_access, dstAccessMask=dst_access, oldLayout=old, newLayout=new,
        srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
        image=img.handle, subresourceRange=img._range()) for img in images]
    if barriers:
        vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 0, None, 0, None,
                                len(barriers), barriers)


def read_only_barriers(cmd, images, before: bool) -> None:
    """Around a dispatch that samples `images`: GENERAL -> SHADER_READ_ONLY_OPTIMAL before it
    (after earlier shader and transfer writes), and back after it."""
    if before:
        layout_barrier(cmd, images, GENERAL, READ_ONLY,
                       vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                       vk.VK_ACCESS_SHADER_READ_BIT, SHADER | TRANSFER, SHADER)
    else:
        layout_barrier(cmd, images, READ_ONLY, GENERAL, 0,
                       vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
                       | vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                       SHADER, SHADER | TRANSFER)


class TexelBuffer(Buffer):
    """A runtime Buffer with a VkBufferView of `format` (an ImageFormat), bound as a uniform or
    storage texel buffer; `elements` texels."""

    __slots__ = ("format", "view", "elements")
    usage = USAGE | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | \
        vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT

    def __init__(self, device, fmt: ImageFormat, elements: int, what: str = "a texel buffer"):
        cap = device_limits(device)["maxTexelBufferElements"]
        if elements > cap:
            raise UnsupportedError(f"{what}: {elements} texels exceed maxTexelBufferElements "
                                   f"{cap} of {device.info.name!r}")
        _, features = format_features(device, fmt)
        if not features & (BUFFER_FEATURES["uniform_texel"] | BUFFER_FEATURES["storage_texel"]):
            check_format(device, fmt, "uniform_texel", what)
        self.format, self.elements, self.view = fmt, int(elements), None
        super().__init__(device, max(1, elements) * fmt.texel_bytes)

    def _track(self, device) -> None:
        info = vk.VkBufferViewCreateInfo(buffer=self.handle, format=self.format.vk_format,
                                         offset=0, range=self.nbytes)
        dev = device.handle
        handle, memory = self.handle, self.memory
        try:
            self.view = call("vkCreateBufferView", vk.vkCreateBufferView, dev, info, None)
        except BaseException:
            lib.vkDestroyBuffer(dev, handle, ffi.NULL)
            lib.vkFreeMemory(dev, memory, ffi.NULL)
            raise
        view = self.view

        def destroy():
            lib.vkDestroyBufferView(dev, view, ffi.NULL)
            lib.vkDestroyBuffer(dev, handle, ffi.NULL)
            lib.vkFreeMemory(dev, memory, ffi.NULL)

        device.track(self, destroy)
