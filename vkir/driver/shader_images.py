"""Images, samplers and texel buffers of existing shaders (ShaderKernel, vkir.driver.shader).

A shader's positional arguments are its descriptors in binding order, buffers and images alike;
separate samplers are not arguments but come from `samplers={name: vkir.Sampler(...)}` (as do
the samplers of combined image samplers; nearest/clamp by default). An image argument is a
DeviceImage or (except inside a sequence) a numpy array of shape `extent + (channels,)`; a
texel buffer argument a numpy array of shape (n,) or (n, channels). The format is the one the
shader declares, else `formats={name: format}`, else the one format that stores the array's
dtype and channels with reads of the shader's type (vkir.images.host_layout.infer_format).
Numpy data is copied into a device image (or texel buffer) for the call, and written ones are
copied back (a launch's when its wait observes the end: `readbacks`). An array of descriptors
(`image2D mips[13]`) takes a list or tuple of that many images; a separate sampler array binds
`samplers[name]` (one Sampler or a list) to each element.

Everything goes through the image seam (vkir.seam.images); no vkir.runtime here.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError, UnsupportedError
from ..images import image_format
from ..images.host_layout import format_of_spirv, infer_format, texel_shape
from ..images.sampling import DEFAULT_SAMPLER, Sampler

__all__ = ["ShaderImages"]
_SAMPLED = ("sampled_image", "combined_image_sampler")


class ShaderImages:
    """The image-like bindings of one shader (`images`: reflected ImageBindings) on seam runtime
    `rt`; `name` names the shader in messages."""

    def __init__(self, name: str, images: tuple, rt):
        from ..seam import images_of

        self.name, self.images = name, tuple(images)
        self.rt = images_of(rt) if self.images else rt
        for b in self.images:
            what = f"{name}: binding {b.binding} ({b.name!r})"
            if b.dim not in ("1d", "2d", "3d", "buffer", "", "cube") or \
                    (b.dim == "cube" and (b.arrayed or b.kind not in _SAMPLED)):
                shown = f"{b.dim}{' array' if b.arrayed else ''}"
                raise UnsupportedError(f"{what} is a {shown} image; vkir binds 1-D, 2-D and 3-D "
                                       "images (and arrays of 1-D and 2-D ones) and sampled "
                                       "cube images")
            if getattr(b, "multisampled", False):   # (vkir's own image parameters never are)
                raise UnsupportedError(f"{what} is a multisampled image; vkir binds images of "
                                       "one sample per texel")
            if b.format != "Unknown" and format_of_spirv(b.format) is None:
                raise UnsupportedError(f"{what} declares image format {b.format}, which vkir "
                                       "has no row for")
        # the arguments a call passes: every image-like binding but the separate samplers
        self.arguments = tuple(b for b in self.images if b.kind != "sampler")
        self._names = {b.name for b in self.images}

    @property
    def access(self) -> tuple:
        """"r", "w" or "rw" per binding in `images` order (what a sequence orders barriers by)."""
        return tuple(("" if b.writeonly else "r") + ("w" if b.written else "") or "r"
                     for b in self.images for _ in range(b.count))

    @property
    def kinds(self) -> tuple:
        """The descriptor kind of each binding, in `images` order (what a ProgramSpec names)."""
        return tuple(b.kind for b in self.images)

    def check_options(self, samplers, formats) -> tuple:
        """({name: Sampler}, {name: ImageFormat}) from a call's `samplers=` and `formats=`."""
        samplers, formats = samplers or {}, formats or {}
        for what, d in (("samplers", samplers), ("formats", formats)):
            if not isinstance(d, dict):
                raise ArgumentError(f"{self.name}: {what} must be a dict {{binding name: ...}}, "
                                    f"got {type(d).__name__}")
            for key in d:
                if key not in self._names:
                    have = ", ".join(sorted(self._names)) or "none"
                    raise ArgumentError(f"{self.name}: {what} names {key!r}, which is no image "
                                        f"or sampler binding of the shader (it has: {have})")
        for key, s in samplers.items():
            for one in (s if isinstance(s, (list, tuple)) else (s,)):
                if not isinstance(one, Sampler):
                    raise ArgumentError(f"{self.name}: samplers[{key!r}] must be a vkir.Sampler "
                                        f"(or a list of them for an array), got "
                                        f"{type(one).__name__}")
        return samplers, {k: image_format(v) for k, v in formats.items()}

    def bind(self, args, samplers=None, formats=None, device_only: bool = False) -> tuple:
        """(the backend's objects for every descriptor in `images` order (array elements in
        order), copy-backs [(device image or texel buffer, host array)]) for the call's image
        arguments `args` (in `arguments` order); `device_only` refuses numpy data (sequences)."""
        samplers, formats = self.check_options(samplers, formats)
        given = dict(zip(((b.set, b.binding) for b in self.arguments), args))
        out, copies = [], []
        for b in self.images:
            what = f"{self.name}: binding {b.binding}" + (f" of set {b.set}" if b.set else "") \
                + f" ({b.name!r})"
            chosen = samplers.get(b.name, DEFAULT_SAMPLER)
            chosen = _elements(chosen, b, f"{self.name}: samplers[{b.name!r}]", "Sampler") \
                if isinstance(chosen, (list, tuple)) else (chosen,) * b.count
            if b.kind == "sampler":
                out.extend(self.rt.sampler(one, False) for one in chosen)
                continue
            a = given[(b.set, b.binding)]
            items = _elements(a, b, what, "image") if b.count > 1 else (a,)
            for i, (item, desc) in enumerate(zip(items, chosen)):
                where = what + (f"[{i}]" if b.count > 1 else "")
                out.append(self._one(b, item, desc, formats.get(b.name), where, copies,
                                     device_only))
        return out, copies

    def _one(self, b, a, desc, given, what: str, copies: list, device_only: bool):
        """The backend object of one descriptor of binding `b` for argument `a` (`desc`: the
        Sampler of a combined image sampler)."""
        rt = self.rt
        if b.dim == "buffer":
            return self._texel(b, a, given, what, copies, device_only)
        img = self._image(b, a, given, what, copies, device_only)
        fmt = img.format
        rt.check_image_format(fmt, "sampled" if b.kind in _SAMPLED else "storage", what)
        if b.kind == "combined_image_sampler":
            if desc.filter == "linear":
                rt.check_image_format(fmt, "linear", what)
            img = rt.image_sampler(img, rt.sampler(desc, fmt.is_integer))
        return img

    def _format(self, b, given, dtype, channels: int, what: str):
        declared = _declared_format(b)
        if given is not None and declared is not None and given != declared:
            raise ArgumentError(f"{what} declares format {declared.name}; formats= gives "
                                f"{given.name}")
        fmt = declared or given or infer_format(dtype, channels, b.lane, what)
        if fmt.lane_dtype != b.lane:
            raise ArgumentError(f"{what} reads {b.lane} values; format {fmt.name} gives "
                                f"{fmt.lane_dtype}")
        return fmt

    def _image(self, b, a, given, what: str, copies: list, device_only: bool):
        """The backend image for argument `a` of image binding `b`."""
        from .device_images import DeviceImage
        from .same_device import check_same_device

        if isinstance(a, DeviceImage):
            check_same_device(what, a.device, self.rt, "the shader")
            declared = _declared_format(b)
            if declared is not None and a.image_format != declared:
                raise ArgumentError(f"{what} declares format {declared.name}; the DeviceImage "
                                    f"is {a.format}")
            if a.image_format.lane_dtype != b.lane:
                raise ArgumentError(f"{what} reads {b.lane}; the image is {a.format}")
            if (b.dim == "cube") != a.cube:
                raise ArgumentError(f"{what} is a {b.dim} image; got a DeviceImage of shape "
                                    f"{a.shape}{' (a cube)' if a.cube else ''}")
            if b.dim == "cube":
                return a.handle
            if a.dim != int(b.dim[0]) or a.layered != b.arrayed:
                raise ArgumentError(f"{what} is a {b.dim}{' array' if b.arrayed else ''} image; "
                                    f"got a DeviceImage of shape {a.shape}"
                                    f"{' (layered)' if a.layered else ''}")
            return a.handle
        if device_only:
            raise ArgumentError(f"{what} is a numpy array; inside a sequence images must be "
                                "DeviceImages (vkir.image), since a sequence makes no hidden copies")
        a = self._host(a, what, b.written)
        channels = a.shape[-1] if a.ndim > b.axes else 1
        fmt = self._format(b, given, a.dtype, channels, what)
        extent = texel_shape(fmt, a.shape, what)
        if len(extent) != b.axes:
            raise ArgumentError(f"{what} is a {b.dim}{' array' if b.arrayed else ''} image of "
                                f"{fmt.name}; an array of shape {a.shape} does not hold one")
        if a.dtype != np.dtype(fmt.storage_dtype):
            raise ArgumentError(f"{what} holds {fmt.name} texels ({fmt.storage_dtype} channels), "
                                f"got an array of {a.dtype}")
        cube = b.dim == "cube"   # six faces: a 2-D image of six layers, viewed as a cube
        dim = 2 if cube else int(b.dim[0])
        arrayed = b.arrayed or cube
        space = extent[1:] if arrayed else extent
        size = tuple(reversed(space)) + (1,) * (3 - dim)
        if cube and (extent[0] != 6 or extent[1] != extent[2]):
            raise ArgumentError(f"{what} is a cube image: an array of shape (6, size, size, "
                                f"channels), got {a.shape}")
        img = self.rt.create_image(fmt, size, extent[0] if arrayed else 1, dim, arrayed, what,
                                   **({"cube": True} if cube else {}))
        full = a.reshape(img.shape)
        if not b.writeonly or not b.written:
            self.rt.image_copy_in(img, full)
        if b.written:
            copies.append(("image", img, full))
        return img

    def _texel(self, b, a, given, what: str, copies: list, device_only: bool):
        """The backend texel buffer for argument `a` of texel-buffer binding `b`."""
        if device_only:
            raise ArgumentError(f"{what} is a texel buffer, which takes numpy data only; inside "
                                "a sequence nothing numpy can be bound, since a sequence makes "
                                "no hidden copies: call the shader outside the sequence")
        if not isinstance(a, np.ndarray):
            raise ArgumentError(f"{what} is a texel buffer: pass a numpy array of shape (n,) or "
                                f"(n, channels), got {type(a).__name__}")
        a = self._host(a, what, b.written)
        if a.ndim not in (1, 2):
            raise ArgumentError(f"{what} is a texel buffer: an array of shape (n,) or "
                                f"(n, channels), got shape {a.shape}")
        channels = a.shape[1] if a.ndim == 2 else 1
        fmt = self._format(b, given, a.dtype, channels, what)
        if a.dtype != np.dtype(fmt.storage_dtype) or channels != fmt.channels:
            raise ArgumentError(f"{what} holds {fmt.name} texels ({fmt.channels} "
                                f"{fmt.storage_dtype} channels), got {a.dtype} of shape {a.shape}")
        self.rt.check_image_format(fmt, b.kind[:-len("_buffer")], what)
        buf = self.rt.texel_buffer(fmt, a.shape[0], what)
        self.rt.allocator.copy_in(buf, a)
        if b.written:
            copies.append(("buffer", buf, a))
        return buf

    @staticmethod
    def _host(a, what: str, written: bool) -> np.ndarray:
        if not isinstance(a, np.ndarray):
            raise ArgumentError(f"{what} must be a vkir.DeviceImage or a numpy array, got "
                                f"{type(a).__name__}")
        if not a.flags.c_contiguous:
            raise ArgumentError(f"{what} is not C-contiguous (use np.ascontiguousarray)")
        if written and not a.flags.writeable:
            raise ArgumentError(f"{what} is written by the shader, but its array is read-only")
        return a

    def copy_back(self, copies) -> None:
        """Copy written device images and texel buffers back into their host arrays."""
        for kind, obj, host in copies:
            if kind == "image":
                self.rt.image_copy_out(obj, host)
            else:
                self.rt.allocator.copy_out(obj, host)

    def readbacks(self, copies) -> list:
        """The copy-backs `copies` (from `bind`) as a launch's handle takes them: [(readback,
        host array)], each readback's `read(host)` run when the wait observes the end."""
        return [(_Readback(self, kind, obj), host) for kind, obj, host in copies]


class _Readback:
    """One written image or texel buffer of a launch, copied back by `read(host)`."""

    __slots__ = ("images", "kind", "obj")

    def __init__(self, images: ShaderImages, kind: str, obj):
        self.images, self.kind, self.obj = images, kind, obj

    def read(self, host) -> None:
        self.images.copy_back([(self.kind, self.obj, host)])


def _declared_format(b):
    """The format binding `b` declares: a vkir kernel's parameter names its own (`image_format`:
    a texture's too, and bgra8, which SPIR-V declares "Unknown"); a reflected shader's binding
    only its SPIR-V ImageFormat (None for "Unknown": the data decides)."""
    name = getattr(b, "image_format", None)
    return image_format(name) if name else format_of_spirv(b.format)


def _elements(a, b, what: str, noun: str) -> tuple:
    """The `b.count` elements an array of descriptors takes from the list or tuple `a`."""
    if not isinstance(a, (list, tuple)) or len(a) != b.count:
        got = f"{len(a)}" if isinstance(a, (list, tuple)) else f"a {type(a).__name__}"
        raise ArgumentError(f"{what} is an array of {b.count} descriptors: give a list of "
                            f"{b.count} {noun}s, got {got}")
    return tuple(a)
