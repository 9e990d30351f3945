"""DeviceImages in `vkir.interpret`: each read back to host arrays in the interpreter's image
conventions, and copied back after the run where the kernel changed it.

A texture of several mip levels becomes the list of its levels, level 0 first (each
`img.level(i).numpy()`: vkir.interpreter.image_levels), so `T.sample(tex, uv, lod=)` reads
the levels the device holds; any other image (one level, a level view `img.level(i)`, or a
mipmapped image bound to a storage image parameter, which the device binds as its level 0)
becomes the array of that one level (`img.numpy()`), written back with `img.write` when the run
changed its bytes.
"""

from __future__ import annotations

from ..ir.function import PrimFunc
from ..ir.image_type import ImageType
from .device_images import DeviceImage

__all__ = ["image_host_copies"]


def image_host_copies(func: PrimFunc, args: tuple, kwargs: dict) -> tuple:
    """(args, kwargs, write-back) for interpreting `func`: `args` and `kwargs` with every
    DeviceImage replaced by host arrays as the module docstring says; `write-back()` copies
    each changed one-level array back to its image."""
    textures = {p.name for p in func.params
                if isinstance(p.dtype, ImageType) and p.dtype.sampled}
    names = [p.name for p in func.params]
    copies = []    # (image, host array, bytes before)

    def host(name, a):
        if not isinstance(a, DeviceImage):
            return a
        if name in textures and a.levels > 1:
            return [a.level(i).numpy() for i in range(a.levels)]
        array = a.numpy()
        copies.append((a, array, array.tobytes()))
        return array

    out = tuple(host(names[i] if i < len(names) else None, a) for i, a in enumerate(args))
    kw = {k: host(k, a) for k, a in kwargs.items()}

    def write_back() -> None:
        for image, array, before in copies:
            if array.tobytes() != before:
                image.write(array)

    return out, kw, write_back
