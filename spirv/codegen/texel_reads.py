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


class TexelReadMixin:
    """Declares texel-buffer parameters (`texel_binding`) and emits their loads (`texel_load`)."""

    def texel_eligible(self, sb, shared: bool) -> str:
        """The vkir format name of storage binding `sb` read as a texel buffer, or "" where it
        keeps its storage buffer: the target lacks the quirk, the kernel writes it or casts its
        parameter (`shared`), or no texel format holds its element type."""
        if not uses_texel_reads(self.target) or shared or sb.writable or not sb.readable:
            return ""
        fmt = texel_format(sb.dtype)
        return fmt[0] if fmt is not None else ""

    def texel_binding(self, sb, fmt: str) -> None:
        """Declare binding `sb` as a uniform texel buffer of vkir format `fmt`."""
        b = self.b
        spirv_format = texel_format(sb.dtype)[1]
        b.capability("SampledBuffer")
        image_t = b.type_image(self.ty(sb.dtype.element_of()), "Buffer", False, 1, spirv_format)
        var = b.global_variable(b.type_pointer("UniformConstant", image_t), "UniformConstant")
        b.name(var, sb.buffer.name)
        b.decorate(var, "DescriptorSet", 0)
        b.decorate(var, "Binding", sb.binding)
        self.interface_vars.append((var, "UniformConstant"))
        self.texels[(sb.data, sb.dtype)] = TexelMemory(var, image_t, sb.dtype, fmt)

    def texel_load(self, mem: TexelMemory, buffer: Buffer, indices: tuple) -> int:
        """The id of the value read from texel-buffer parameter `buffer` at `indices`: one
        OpImageFetch per index lane (int32 coordinates: a view holds at most
        maxTexelBufferElements texels, which the host checked), lane 0 of a scalar element."""
        index = flat_index(buffer, indices)
        idt = index.dtype.element_of()
        image = self.op("OpLoad", mem.image_type, mem.var)
        texel_t = self.ty(mem.elem.with_lanes(4))
        parts = []
        for i in self.lane_indices(index):
            if idt != _INT32:
                i = self.convert(i, idt, _INT32)
            texel = self.op("OpImageFetch", texel_t, image, i)
            if mem.elem.lanes == 1:
                texel = self.op("OpCompositeExtract", self.ty(mem.elem), texel, 0)
            parts.append(texel)
        if len(parts) == 1:
            return parts[0]
        lanes = buffer.dtype.lanes * indices[-1].dtype.lanes
        return self.op("OpCompositeConstruct", self.ty(buffer.dtype.with_lanes(lanes)), *parts)
