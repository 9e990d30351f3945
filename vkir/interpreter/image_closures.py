"""Images in the interpreter: how an image argument is held, and the closures of image reads,
writes, samples, sizes and atomics.

An image argument is its numpy array (shape extent + (channels,), the format's storage dtype)
viewed as a buffer of `channels`-lane texels over the array's bytes (a `BoundBuffer`), so texel
positions, bounds errors (OutOfBoundsError, as for buffers, naming the image as an image:
`image_error`) and the race checker are the buffers' own: two invocations touching one texel,
one writing, without a barrier, race.
Conversions and sampling are vkir.images.texels and vkir.images.filtering; a texture also
holds the Sampler the call gave it, the device's sub-texel precision and its mip levels past
level 0 (a list of arrays passed for it: vkir.interpreter.image_levels), read only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError
from ..images.cube import sample_cube
from ..images.filtering import sample
from ..images.formats import ImageFormat
from ..images.texels import decode, encode
from ..ir.buffer import Buffer
from ..ir.image_type import ImageType
from .errors import OutOfBoundsError
from .memory import BoundBuffer, Storage, load, make_bound, positions, store


@dataclass(slots=True)
class BoundImage:
    """An image argument: `bb` views its texels (storage dtype, `channels` lanes); `fmt` its
    format; a texture's `sampler` (a vkir.Sampler), `sub_texel_bits` and `levels`: its mip
    levels after level 0 (arrays of shape extent + (channels,), vkir.interpreter.image_levels)."""

    bb: BoundBuffer
    itype: ImageType
    fmt: ImageFormat
    sampler: object = None
    sub_texel_bits: int = 8
    levels: tuple = ()

    def chain(self):
        """What vkir.images.filtering samples: the texels of level 0, or the list of every
        level's when the texture has more than one."""
        return [self.array(), *self.levels] if self.levels else self.array()

    def array(self) -> np.ndarray:
        """The texels as an array of shape extent + (channels,) over the argument's bytes."""
        view = self.bb.storage.view(self.bb.npdt)
        return view[:int(np.prod(self.bb.shape)) * self.fmt.channels].reshape(
            tuple(self.bb.shape) + (self.fmt.channels,))


def image_error(err: OutOfBoundsError) -> OutOfBoundsError:
    """`err`, raised by the buffer view of an image, naming the image as one ("image img: ..."
    where the view says "buffer img: ..."); the offending invocation's row is kept."""
    text = str(err)
    assert text.startswith(f"buffer {err.buffer}:"), text
    out = OutOfBoundsError("image" + text[len("buffer"):], err.buffer, err.index)
    out.row = getattr(err, "row", None)
    return out


def bind_image(var, storage: Storage, extent) -> BoundImage:
    """The BoundImage of image parameter `var` over `storage` with `extent` (numpy order)."""
    itype = var.dtype
    fmt = itype.fmt
    lanes = f"x{fmt.channels}" if fmt.channels > 1 else ""
    view = Buffer(var.name, var, f"{fmt.storage_dtype}{lanes}", tuple(int(n) for n in extent))
    return BoundImage(make_bound(view, storage, extent, (), 0), itype, fmt)


def attach_samplers(func, values: dict, samplers, sub_texel_bits: int) -> None:
    """Give each texture parameter among `values` (Var -> BoundImage) its sampler from
    `samplers` ({name: vkir.Sampler}; nearest/clamp where none is given); ArgumentError for a
    name that is no texture or a value that is no Sampler."""
    from ..images.sampling import DEFAULT_SAMPLER, Sampler

    samplers = dict(samplers or {})
    textures = {p.name: p for p in func.params if isinstance(p.dtype, ImageType)
                and p.dtype.sampled}
    for name, s in samplers.items():
        if name not in textures:
            raise ArgumentError(f"kernel {func.name}: samplers= names {name!r}, which is not a "
                                f"texture parameter (textures: {', '.join(textures) or 'none'})")
        if not isinstance(s, Sampler):
            raise ArgumentError(f"kernel {func.name}: the sampler of {name!r} must be a "
                                f"vkir.Sampler, got {type(s).__name__}")
    for name, p in textures.items():
        bound = values[p]
        bound.sampler = samplers.get(name, DEFAULT_SAMPLER)
        bound.sub_texel_bits = sub_texel_bits
        if bound.fmt.is_integer and bound.sampler.filter == "linear":
            raise ArgumentError(f"kernel {func.name}: texture {name!r} has the integer format "
                                f"{bound.fmt.name}, which Vulkan samples with nearest "
                                "filtering only")


class ImageClosures:
    """Compiler methods for image nodes (mixed into Compiler)."""

    def image_getter(self, var):
        """Closure giving the BoundImage bound to image parameter `var`."""
        s = self.slot(var)
        return lambda fr: fr.slots[s]

    def _texel_positions(self, fidx, locate):
        def where(fr, image):
            try:
                return positions(image.bb, [f(fr) for f in fidx], 1, fr.tid, fr.wgrow)
            except OutOfBoundsError as err:
                raise locate(image_error(err), fr) from None
        return where

    def e_ImageLoad(self, e):
        """A bounds-checked texel read, converted to the format's 4-lane type."""
        get = self.image_getter(e.image)
        site = self.site("read", e)
        where = self._texel_positions([self.expr(i) for i in e.indices], self.locator(site))
        channels = e.image.dtype.fmt.channels

        def image_load(fr):
            image = get(fr)
            p = where(fr, image)
            raw = load(image.bb, p)
            races = fr.state.races
            if races is not None:
                races.read(image.bb, p, fr, site, channels)
            if channels == 1:
                raw = np.asarray(raw)[..., None]
            return decode(image.fmt, raw)
        return image_load

    def s_ImageStore(self, s):
        """A bounds-checked texel write of the value converted to the format."""
        get = self.image_getter(s.image)
        site = self.site("write", s)
        where = self._texel_positions([self.expr(i) for i in s.indices], self.locator(site))
        fv = self.expr(s.value)
        channels = s.image.dtype.fmt.channels
        self.written.add(s.image)

        def image_store(fr):
            image = get(fr)
            p = where(fr, image)
            raw = encode(image.fmt, fv(fr))
            if channels == 1:
                raw = raw[..., 0]
            if np.ndim(raw) > np.ndim(p):   # one texel, a value per invocation
                p = np.broadcast_to(p, np.shape(raw))
            store(image.bb, p, raw)
            races = fr.state.races
            if races is not None:
                races.write(image.bb, p, fr, site, channels)
        return image_store

    def e_ImageSample(self, e):
        """T.sample: the texture's sampler applied at the coordinates and level of detail
        (vkir.images.filtering: lod clamped to the texture's levels, the nearest level or a
        blend of two as the sampler's filter says; no lod= reads level 0)."""
        get = self.image_getter(e.texture)
        fc = self.expr(e.coords)
        flod = None if e.lod is None else self.expr(e.lod)
        layered = e.texture.dtype.layered
        lanes = e.coords.dtype.lanes
        if e.texture.dtype.cube:
            def cube_sample(fr):
                image = get(fr)
                raw = image.array() if flod is None else image.chain()   # no lod: level 0
                return sample_cube(image.fmt, raw, np.asarray(fc(fr), np.float32),
                                   image.sampler, sub_texel_bits=image.sub_texel_bits,
                                   lod=None if flod is None else flod(fr))
            return cube_sample

        def image_sample(fr):
            image = get(fr)
            coords = np.asarray(fc(fr), np.float32)
            if lanes == 1:
                coords = coords[..., None]
            if flod is None:   # no lod: level 0
                return sample(image.fmt, image.array(), coords, image.sampler, layered=layered,
                              sub_texel_bits=image.sub_texel_bits)
            chain = image.chain()
            return sample(image.fmt, chain if isinstance(chain, list) else [chain], coords,
                          image.sampler, layered=layered, sub_texel_bits=image.sub_texel_bits,
                          lod=flod(fr))
        return image_sample

    def e_ImageSize(self, e):
        """T.image_size: the extent, x first (then y, z, layers)."""
        get = self.image_getter(e.image)
        itype = e.image.dtype
        one = len(itype.shape) == 1
        if itype.cube:   # a face's width and height
            return lambda fr: np.array(get(fr).bb.shape[:0:-1], np.int32)

        def image_size(fr):
            shape = get(fr).bb.shape
            spatial = shape[1:] if itype.layered else shape
            xyz = tuple(reversed(spatial)) + ((shape[0],) if itype.layered else ())
            if one:
                return np.int32(xyz[0])
            return np.array(xyz, np.int32)
        return image_size
