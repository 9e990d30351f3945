"""How host (numpy) arrays hold images: the extent an array of a format describes, and the
format a numpy array bound to a binding that declares none (a sampled image, a uniform texel
buffer) is read as.

An image argument is an array of shape `extent + (channels,)` of the format's storage dtype,
C-contiguous, origin top-left (row 0 is y = 0); a 1-channel format may drop the channel axis.
The extent's axes are ([layers,] [depth,] [height,] width).
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .formats import FORMATS, ImageFormat

__all__ = ["texel_shape", "infer_format", "format_of_spirv"]
_BY_SPIRV = {f.spirv_format: f for f in FORMATS.values() if f.spirv_format != "Unknown"}


def texel_shape(fmt: ImageFormat, shape: tuple, what: str) -> tuple:
    """The extent of a host array of `shape` holding `fmt` texels: `shape` without its last axis
    (which must be `fmt.channels`), or `shape` itself for a 1-channel format given without the
    channel axis. ArgumentError naming `what` otherwise."""
    shape = tuple(int(n) for n in shape)
    if shape and shape[-1] == fmt.channels and (fmt.channels > 1 or len(shape) > 1):
        extent = shape[:-1]
    elif fmt.channels == 1:
        extent = shape
    else:
        raise ArgumentError(f"{what}: an array of shape {shape} does not hold {fmt.name} texels; "
                            f"its last axis must be the {fmt.channels} channels")
    if not 1 <= len(extent) <= 4 or any(n < 1 for n in extent):
        raise ArgumentError(f"{what}: image extent {extent} from array shape {shape}; an image "
                            "has 1 to 3 axes (one more for layers), each at least 1")
    return extent


def format_of_spirv(name: str) -> ImageFormat | None:
    """The format a SPIR-V ImageFormat enumerant ("Rgba8", "R32ui") names; None for "Unknown"
    (the caller's data decides) and for formats vkir has no row for."""
    return _BY_SPIRV.get(name)


def infer_format(dtype, channels: int, lane: str, what: str) -> ImageFormat:
    """The one format whose storage dtype is `dtype` with `channels` components and whose reads
    give `lane` ("float32", "uint32" or "int32"), preferring the formats Vulkan guarantees: how a
    numpy array bound to a binding that declares no format is read. ArgumentError naming `what`
    when none fits."""
    dt = np.dtype(dtype)
    fits = [f for f in FORMATS.values()
            if np.dtype(f.storage_dtype) == dt and f.channels == channels and f.lane_dtype == lane]
    fits = [f for f in fits if f.guaranteed] or fits
    if len(fits) != 1:
        names = ", ".join(f.name for f in fits) or "none"
        raise ArgumentError(f"{what}: no single image format stores {channels} {dt} "
                            f"component(s) read as {lane} (fitting: {names}); pass a DeviceImage "
                            "made with vkir.image(array, format), or formats={name: format}")
    return fits[0]
