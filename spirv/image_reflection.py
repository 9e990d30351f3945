"""Reflection of the image-like descriptors of a module (vkir.spirv.reflection calls it): storage
images, sampled images, combined image samplers, samplers and uniform/storage texel buffers,
each as an `ImageBinding` with its kind, dimensionality, arrayed-ness, declared format and the
type its reads give."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnsupportedError
from .khronos_grammar import grammar
from .parsed_module import ParsedModule, enumerant_names

__all__ = ["ImageBinding", "image_binding"]

_DIMS = {"1D": "1d", "2D": "2d", "3D": "3d", "Cube": "cube", "Rect": "rect", "Buffer": "buffer",
         "SubpassData": "subpass"}


@dataclass(frozen=True)
class ImageBinding:
    """An image-like descriptor a shader declares. `kind`: "storage_image", "sampled_image",
    "combined_image_sampler", "sampler", "uniform_texel_buffer" or "storage_texel_buffer";
    `dim`: "1d", "2d", "3d", "cube", "buffer" (texel buffers), "" for a sampler; `arrayed`: an
    image array (layers); `format`: the SPIR-V ImageFormat name ("Rgba8", "Unknown");
    `lane`: the scalar dtype of a read ("float32", "uint32", "int32"; "" for a sampler);
    `readonly` (NonWritable) / `writeonly` (NonReadable); `count` descriptors; `depth`: a
    depth (comparison) image; `multisampled`: an image of several samples per texel."""

    set: int
    binding: int
    kind: str
    name: str
    dim: str = ""
    arrayed: bool = False
    format: str = "Unknown"
    lane: str = ""
    readonly: bool = False
    writeonly: bool = False
    count: int = 1
    depth: bool = False
    multisampled: bool = False

    @property
    def axes(self) -> int:
        """Axes of a host array's extent: the image's dimensions plus one for layers."""
        return {"1d": 1, "2d": 2, "3d": 3, "buffer": 1, "cube": 3}.get(self.dim, 0) + \
            int(self.arrayed)

    @property
    def written(self) -> bool:
        """Whether a call's data may be changed by the shader (storage kinds not NonWritable)."""
        return self.kind in ("storage_image", "storage_texel_buffer") and not self.readonly


def image_binding(m: ParsedModule, vid: int, ptype_id: int) -> ImageBinding | None:
    """The ImageBinding of the UniformConstant variable `vid` (pointer type `ptype_id`), or None
    when it is no image, sampler or texel buffer (an acceleration structure, ...)."""
    deco = m.decorations.get(vid, {})
    tid = m.insts[ptype_id][1][1]
    code, ops = m.insts.get(tid, (None, ()))
    opname = grammar().opnames.get(code, "")
    count = 1
    if opname == "OpTypeRuntimeArray":
        raise UnsupportedError(f"binding {m.names.get(vid, vid)!r} is a runtime-sized array of "
                               "descriptors, which vkir cannot bind")
    if opname == "OpTypeArray":
        count = int(m.constant(ops[1]))
        tid = ops[0]
        code, ops = m.insts.get(tid, (None, ()))
        opname = grammar().opnames.get(code, "")
    common = dict(set=deco.get("DescriptorSet", (0,))[0], binding=deco.get("Binding", (0,))[0],
                  name=m.names.get(vid, "") or f"%{vid}", readonly="NonWritable" in deco,
                  writeonly="NonReadable" in deco, count=count)
    if opname == "OpTypeSampler":
        return ImageBinding(kind="sampler", **common)
    combined = opname == "OpTypeSampledImage"
    if combined:
        code, ops = m.insts[ops[0]]
        opname = grammar().opnames.get(code, "")
    if opname != "OpTypeImage":
        return None
    sampled_type = m.type(ops[0])
    dim = _DIMS.get(enumerant_names("Dim").get(ops[1], ""), "other")
    lane = "float32" if sampled_type.kind == "float" else \
        ("int32" if sampled_type.signed else "uint32")
    storage = ops[5] == 2
    if dim == "buffer":   # glslang declares samplerBuffer as a sampled image of a buffer
        kind = "storage_texel_buffer" if storage else "uniform_texel_buffer"
    else:
        kind = "storage_image" if storage else "sampled_image"
    if combined and dim != "buffer":
        kind = "combined_image_sampler"
    return ImageBinding(kind=kind, dim=dim, arrayed=bool(ops[3]),
                        format=enumerant_names("ImageFormat").get(ops[6], "Unknown"), lane=lane,
                        depth=ops[2] == 1, multisampled=bool(ops[4]), **common)
