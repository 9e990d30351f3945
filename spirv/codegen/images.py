"""Image parameters in SPIR-V (mixed into the kernel emitter).

A `T.TextureCube` is a combined image sampler of Dim Cube (not arrayed), sampled by a float32x3
direction. A `T.Image` parameter is a UniformConstant storage image (OpTypeImage, Sampled=2, the declared
format, NonReadable/NonWritable where the kernel only writes/reads it); a `T.Texture` is a
combined image sampler (OpTypeSampledImage over Sampled=1, format Unknown as Vulkan samples any
format), its sampler chosen at call time. Their bindings follow the storage buffers', in
parameter order.

A storage image of a format SPIR-V has no ImageFormat for (bgra8) is declared "Unknown" and
may only be written (StorageImageWriteWithoutFormat); a read is refused, since devices do not
read such images.

The IR indexes images in numpy order (`img[y, x]`, the layer first); SPIR-V coordinates are x
first (the layer last), so index tuples are reversed. Reads are OpImageRead, writes
OpImageWrite, `T.sample` OpImageSampleExplicitLod at its Lod (0 by default), `T.image_size` OpImageQuerySize (a
texture: OpImageQuerySizeLod at level 0), and atomics go through OpImageTexelPointer. On a
device with the "float16_texel_overflow_nan" quirk a write to a float16 format clamps lanes
beyond +-65536 first (vkir.quirks).
"""

from __future__ import annotations

from dataclasses import dataclass

from vkir.abi import ImageParam
from vkir.errors import UnsupportedError
from vkir.ir import Call, DataType
from vkir.ir.image import ImageLoad, ImageSample, ImageSize, ImageStore
from vkir.ir.image_type import ImageType
from vkir.ir.op import is_atomic
from vkir.ir.traversal import walk

_INT32 = DataType("int", 32)
_UINT32 = DataType("uint", 32)
_FLOAT32 = DataType("float", 32)
_DIMS = {1: "1D", 2: "2D", 3: "3D"}
# vkir.quirks.FLOAT16_TEXEL_OVERFLOW_NAN (codegen imports no vkir.quirks)
FLOAT16_TEXEL_QUIRK = "float16_texel_overflow_nan"


@dataclass
class _Image:
    """The emitter's record of one image parameter."""

    param: ImageParam
    var: int            # the UniformConstant variable
    type_id: int        # the OpTypeImage (or OpTypeSampledImage for a texture)
    image_type_id: int  # the OpTypeImage
    itype: ImageType


def image_access(func) -> dict:
    """{image Var: (read, written)} from the kernel body: reads (and samples), writes and
    atomics (which do both). T.image_size is neither."""
    access = {p: [False, False] for p in func.params if isinstance(p.dtype, ImageType)}
    for n in walk(func.body):
        if isinstance(n, Call) and is_atomic(n.op) and n.args and isinstance(n.args[0], ImageLoad):
            access[n.args[0].image][:] = [True, True]
        elif isinstance(n, ImageLoad):
            access[n.image][0] = True
        elif isinstance(n, ImageSample):
            access[n.texture][0] = True
        elif isinstance(n, ImageStore):
            access[n.image][1] = True
    return {v: tuple(a) for v, a in access.items()}


class ImageMixin:
    """Declares image parameters (`_image_params`) and emits their accesses."""

    def _image_params(self) -> None:
        """One descriptor per image parameter, numbered after the storage buffers."""
        access = image_access(self.func)
        number = len(self.iface.bindings)
        for index, p in enumerate(self.func.params):
            itype = p.dtype
            if not isinstance(itype, ImageType):
                continue
            fmt = itype.fmt
            read, written = access[p]
            lane = self.ty(DataType.parse(fmt.lane_dtype))
            dim = "Cube" if itype.cube else _DIMS[itype.dims]
            arrayed = itype.layered and not itype.cube   # a cube's faces are no array
            if itype.dims == 3 and itype.layered:
                raise UnsupportedError(f"kernel {self.func.name!r}: image {p.name!r} is a "
                                       "layered 3-D image, which Vulkan has no view for")
            if itype.dims == 1:
                self.b.capability("Sampled1D" if itype.sampled else "Image1D")
            if itype.sampled:
                image_t = self.b.type_image(lane, dim, arrayed, 1, "Unknown")
                type_id = self.b.type_sampled_image(image_t)
                kind, readonly, writeonly = "combined_image_sampler", True, False
            else:
                if fmt.extended:
                    self.b.capability("StorageImageExtendedFormats")
                if fmt.spirv_format == "Unknown":   # bgra8: SPIR-V names no such format
                    if read:
                        raise UnsupportedError(
                            f"kernel {self.func.name!r}: storage image {p.name!r} of format "
                            f"{fmt.name} is read, but SPIR-V has no {fmt.name} format and "
                            "devices do not read storage images without one (lavapipe and "
                            "SwiftShader report no STORAGE_READ_WITHOUT_FORMAT); only write "
                            "it, or read it as a T.Texture")
                    self.b.capability("StorageImageWriteWithoutFormat")
                image_t = type_id = self.b.type_image(lane, dim, itype.layered, 2,
                                                      fmt.spirv_format)
                kind, readonly, writeonly = "storage_image", not written, not read and written
            var = self.b.global_variable(self.b.type_pointer("UniformConstant", type_id),
                                         "UniformConstant")
            self.b.name(var, p.name)
            self.b.decorate(var, "DescriptorSet", 0)
            self.b.decorate(var, "Binding", number)
            if not itype.sampled:
                if readonly:
                    self.b.decorate(var, "NonWritable")
                if writeonly:
                    self.b.decorate(var, "NonReadable")
            self.interface_vars.append((var, "UniformConstant"))
            param = ImageParam(number, index, kind, p.name, dim.lower(), arrayed,
                               fmt.spirv_format, fmt.name, fmt.lane_dtype, readonly, writeonly)
            self.images[p] = _Image(param, var, type_id, image_t, itype)
            number += 1

    def image_bindings(self) -> tuple:
        """The ImageParams of the kernel, in binding order."""
        return tuple(im.param for im in self.images.values())

    def _image(self, var) -> _Image:
        return self.images[var]

    def _coords(self, indices, what: str) -> int:
        """The int32 coordinate (vector) of numpy-order `indices`, x first."""
        ids = [self.expr(i) for i in reversed(indices)]
        for i in indices:
            if i.dtype != _INT32:
                raise UnsupportedError(f"kernel {self.func.name!r}: {what} is indexed by "
                                       f"{i.dtype}; image coordinates are int32")
        if len(ids) == 1:
            return ids[0]
        return self.op("OpCompositeConstruct", self.ty(_INT32.with_lanes(len(ids))), *ids)

    def e_image_load(self, e: ImageLoad) -> int:
        """OpImageRead of one texel (the format's 4-lane type)."""
        im = self._image(e.image)
        coords = self._coords(e.indices, f"image {e.image.name!r}")
        image = self.op("OpLoad", im.type_id, im.var)
        return self.op("OpImageRead", self.ty(e.dtype), image, coords)

    def s_image_store(self, s: ImageStore) -> None:
        """OpImageWrite of one texel."""
        im = self._image(s.image)
        coords = self._coords(s.indices, f"image {s.image.name!r}")
        value = self.expr(s.value)
        if im.itype.fmt.storage_dtype == "float16" and FLOAT16_TEXEL_QUIRK in self.target.quirks:
            value = self._float16_texel_in_range(s.value.dtype, value)
        image = self.op("OpLoad", im.type_id, im.var)
        self.do("OpImageWrite", image, coords, value)

    def _float16_texel_in_range(self, dt: DataType, value: int) -> int:
        """The texel to write to a float16 format on a device with the quirk: lanes beyond
        +-65536 (infinities included) clamped to +-65536, which still rounds to +-inf; NaN
        fails the comparison and stays NaN."""
        t = self.ty(dt)
        big = self.op("OpFOrdGreaterThan", self.ty(DataType("bool", 1, dt.lanes)),
                      self.glsl("FAbs", t, value), self.const(dt, 65536.0))
        clamped = self.glsl("FClamp", t, value, self.const(dt, -65536.0), self.const(dt, 65536.0))
        return self.op("OpSelect", t, big, clamped, value)

    def e_image_sample(self, e: ImageSample) -> int:
        """OpImageSampleExplicitLod at the sample's level of detail (0 when it names none)."""
        im = self._image(e.texture)
        coords = self.expr(e.coords)
        level = self.const(_FLOAT32, 0.0) if e.lod is None else self.expr(e.lod)
        image = self.op("OpLoad", im.type_id, im.var)
        lod = self.b.g.bits("ImageOperands", "Lod")
        return self.op("OpImageSampleExplicitLod", self.ty(e.dtype), image, coords, lod, level)

    def e_image_size(self, e: ImageSize) -> int:
        """OpImageQuerySize (a texture's level 0 through OpImageQuerySizeLod)."""
        self.b.capability("ImageQuery")
        im = self._image(e.image)
        loaded = self.op("OpLoad", im.type_id, im.var)
        t = self.ty(e.dtype)
        if im.itype.sampled:
            image = self.op("OpImage", im.image_type_id, loaded)
            return self.op("OpImageQuerySizeLod", t, image, self.const(_INT32, 0))
        return self.op("OpImageQuerySize", t, loaded)

    def image_atomic(self, e: Call) -> int:
        """An atomic on the texel of an r32ui/r32i storage image (OpImageTexelPointer)."""
        target = e.args[0]
        im = self._image(target.image)
        fmt = im.itype.fmt
        if fmt.name not in ("r32ui", "r32i"):
            raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} on image "
                                   f"{target.image.name!r} of format {fmt.name}; image atomics "
                                   "need r32ui or r32i")
        dt = DataType.parse(fmt.lane_dtype)
        t = self.ty(dt)
        coords = self._coords(target.indices, f"image {target.image.name!r}")
        ptr = self.op("OpImageTexelPointer", self.b.type_pointer("Image", t), im.var, coords,
                      self.const(_UINT32, 0))
        scope = self.const(_UINT32, self.b.enum("Scope", "Device"))
        sem = self.atomic_semantics("AcquireRelease", "ImageMemory")   # (sync.py: quirk)
        values = [self.expr(a) for a in e.args[1:]]
        if e.op == "atomic_compare_exchange":
            unequal = self.atomic_semantics("Acquire", "ImageMemory")
            expected, desired = values
            return self.op("OpAtomicCompareExchange", t, ptr, scope, sem, unequal, desired,
                           expected)
        from .sync import ATOMIC_OPCODES

        names = ATOMIC_OPCODES.get(e.op)
        if names is None:
            raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} on an image texel")
        return self.op(names[1 if dt.is_uint else 0], t, ptr, scope, sem, values[0])
