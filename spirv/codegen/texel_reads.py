"""Read-only buffer parameters read through uniform texel buffers (mixed into the kernel emitter).

Why: llvmpipe (lavapipe) turns every storage-buffer load whose address it cannot prove uniform
into a loop over the 8 lanes of its SIMD registers (the "storage_loads_per_lane" quirk,
vkir.quirks); a texel fetch (OpImageFetch on a samplerBuffer) takes its texture path instead,
one vector load per lane, and about doubles the read bandwidth of memory-bound kernels
(docs/performance.md). So on a Vulkan target with that quirk, a parameter buffer that the kernel
only reads (no store, no atomic, no pointer cast of the same parameter) and whose element type is
a 32-bit float, int or uint, scalar or 4-lane vector, is declared as a UniformConstant
OpTypeImage of dim Buffer (Sampled=1, format R32f/Rgba32f/R32i/...) at the binding number its
storage buffer would have had, and each element is one OpImageFetch (a scalar element is lane 0
of the fetched texel). The result is the element itself, so the interpreter's values are kept
bit for bit. The host binds a VkBufferView over the argument's buffer range (vkir.abi.Binding
`texel`); a call whose argument cannot be viewed that way runs the storage-buffer variant.

A parameter the kernel also casts (a DeclBuffer of another element type over its data: the
4-lane vector accesses of SymbolicVectorCast for a parameter of symbolic size) has several
bindings, all bound to the one argument. Where none of them is written and each has the same
32-bit scalar type, scalar or 4-lane (`float32` and `float32x4`), every one of them is a texel
buffer of the 4-lane format (`rgba32f`), so that one view serves them all: a 4-lane element is
one texel, scalar element j is lane j % 4 of texel j // 4 (OpVectorExtractDynamic), and a
binding the kernel never reads is declared so too. Such a view exists only for an argument of
whole texels (the host checks it; other calls run the storage-buffer variant).

Everything else (stores, atomics, shared and local memory, other element types) keeps its
storage-buffer form.
"""

from __future__ import annotations

from dataclasses import dataclass

from vkir.ir import Buffer, DataType

from .access import flat_index

QUIRK = "storage_loads_per_lane"   # vkir.quirks.STORAGE_LOADS_PER_LANE (codegen imports no quirks)
_INT32 = DataType("int", 32)
# (scalar type code, lanes) -> (vkir format name, SPIR-V ImageFormat)
_FORMATS = {("float", 1): ("r32f", "R32f"), ("float", 4): ("rgba32f", "Rgba32f"),
            ("int", 1): ("r32i", "R32i"), ("int", 4): ("rgba32i", "Rgba32i"),
            ("uint", 1): ("r32ui", "R32ui"), ("uint", 4): ("rgba32ui", "Rgba32ui")}
_SPIRV_FORMATS = dict(_FORMATS.values())   # vkir format name -> SPIR-V ImageFormat
_LANES = {name: (4 if name.startswith("rgba") else 1) for name, _ in _FORMATS.values()}


def texel_format(dtype: DataType) -> tuple | None:
    """(vkir format name, SPIR-V ImageFormat) of the texels holding elements of `dtype`, or None
    for an element type no texel format holds exactly."""
    if dtype.bits != 32:
        return None
    return _FORMATS.get((dtype.code, dtype.lanes))


def uses_texel_reads(target) -> bool:
    """Whether codegen for `target` reads read-only parameters through texel buffers: a Vulkan
    target of a driver with the quirk (other backends bind storage buffers only)."""
    return QUIRK in target.quirks and target.kind == "vulkan"


@dataclass(frozen=True)
class TexelMemory:
    """A parameter read through a uniform texel buffer."""

    var: int           # the UniformConstant variable
    image_type: int    # its OpTypeImage
    elem: DataType     # the IR element type (32-bit, 1 or 4 lanes)
    format: str        # vkir format name of the view
    packed: bool = False   # scalar elements in a 4-lane view: element j in texel j // 4


def shared_texel_format(siblings) -> str:
    """The one 4-lane vkir format of every binding of a parameter with several (`siblings`:
    its cast bindings), or "": some binding is written, or not all share one 32-bit scalar type
    of 1 or 4 lanes, or none reads 4-lane elements."""
    elem = siblings[0].dtype.element_of()
    if any(b.writable for b in siblings) or any(
            b.dtype.element_of() != elem or b.dtype.lanes not in (1, 4) for b in siblings):
        return ""
    if not any(b.readable and b.dtype.lanes == 4 for b in siblings):
        return ""
    fmt = texel_format(elem.with_lanes(4))
    return fmt[0] if fmt is not None else ""


class TexelReadMixin:
    """Declares texel-buffer parameters (`texel_binding`) and emits their loads (`texel_load`)."""

    def texel_eligible(self, sb, shared: bool) -> str:
        """The vkir format name of storage binding `sb` read as a texel buffer, or "" where it
        keeps its storage buffer: the target lacks the quirk, the kernel writes it, no texel
        format holds its element type, or its parameter has other bindings (`shared`: casts)
        that cannot share one 4-lane view with it (shared_texel_format)."""
        if not uses_texel_reads(self.target) or sb.writable:
            return ""
        if shared:
            return shared_texel_format([b for b in self.iface.bindings.values()
                                        if b.param_index == sb.param_index])
        fmt = texel_format(sb.dtype)
        return fmt[0] if fmt is not None and sb.readable else ""

    def texel_binding(self, sb, fmt: str) -> None:
        """Declare binding `sb` as a uniform texel buffer of vkir format `fmt`."""
        b = self.b
        spirv_format = _SPIRV_FORMATS[fmt]
        b.capability("SampledBuffer")
        image_t = b.type_image(self.ty(sb.dtype.element_of()), "Buffer", False, 1, spirv_format)
        var = b.global_variable(b.type_pointer("UniformConstant", image_t), "UniformConstant")
        b.name(var, sb.buffer.name)
        b.decorate(var, "DescriptorSet", 0)
        b.decorate(var, "Binding", sb.binding)
        self.interface_vars.append((var, "UniformConstant"))
        packed = sb.dtype.lanes == 1 and _LANES[fmt] == 4
        self.texels[(sb.data, sb.dtype)] = TexelMemory(var, image_t, sb.dtype, fmt, packed)

    def texel_load(self, mem: TexelMemory, buffer: Buffer, indices: tuple) -> int:
        """The id of the value read from texel-buffer parameter `buffer` at `indices`: one
        OpImageFetch per index lane (int32 coordinates: a view holds at most
        maxTexelBufferElements texels, which the host checked), lane 0 of a scalar element
        (lane j % 4 of texel j // 4 for a `packed` one)."""
        index = flat_index(buffer, indices)
        idt = index.dtype.element_of()
        image = self.op("OpLoad", mem.image_type, mem.var)
        texel_t = self.ty(mem.elem.with_lanes(4))
        parts = []
        for i in self.lane_indices(index):
            if idt != _INT32:
                i = self.convert(i, idt, _INT32)
            if mem.packed:
                at = self.op("OpShiftRightLogical", self.ty(_INT32), i, self.const(_INT32, 2))
                texel = self.op("OpImageFetch", texel_t, image, at)
                lane = self.op("OpBitwiseAnd", self.ty(_INT32), i, self.const(_INT32, 3))
                parts.append(self.op("OpVectorExtractDynamic", self.ty(mem.elem), texel, lane))
                continue
            texel = self.op("OpImageFetch", texel_t, image, i)
            if mem.elem.lanes == 1:
                texel = self.op("OpCompositeExtract", self.ty(mem.elem), texel, 0)
            parts.append(texel)
        if len(parts) == 1:
            return parts[0]
        lanes = buffer.dtype.lanes * indices[-1].dtype.lanes
        return self.op("OpCompositeConstruct", self.ty(buffer.dtype.with_lanes(lanes)), *parts)
