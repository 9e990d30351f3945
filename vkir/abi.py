"""What a backend hands to the runtime: the validated binary plus its dispatch description
(storage-buffer bindings, image bindings, push constants, workgroup size and grid). It lives
below the SPIR-V backend so that a kernel loaded from the compile cache needs no code
generator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ir import Buffer, DataType, PrimExpr, Var


@dataclass(frozen=True)
class Binding:
    """One storage buffer at descriptor set 0, `binding`, bound to argument `param_index`.

    Several bindings share a `param_index` when the kernel casts that parameter's data to another
    element type (an explicit DeclBuffer pointer cast): bind the same VkBuffer to each.

    `texel` names a vkir image format ("r32f", "rgba32f", "r32ui", ...) where codegen reads this
    read-only parameter through a uniform texel buffer instead (a driver with the
    "storage_loads_per_lane" quirk): bind a VkBufferView of that format over the argument's
    buffer range. "" for a storage buffer.
    """

    binding: int
    param_index: int
    buffer: Buffer
    readable: bool
    writable: bool
    texel: str = ""

    @property
    def kind(self) -> str:
        """The descriptor kind a ProgramSpec names for this binding."""
        return "uniform_texel_buffer" if self.texel else "storage"


@dataclass(frozen=True)
class ImageParam:
    """One image parameter's descriptor at set 0, `binding` (after the storage buffers), bound
    to argument `param_index`: `kind` "storage_image" (T.Image) or "combined_image_sampler"
    (T.Texture, its sampler given at call time); `dim` "1d", "2d" or "3d"; `arrayed` (layers);
    `format` the SPIR-V ImageFormat name of the declared format and `image_format` vkir's name
    for it; `lane` the scalar dtype of a read; `readonly` (NonWritable) / `writeonly`
    (NonReadable) as the kernel uses it. Its attributes are those of a reflected
    vkir.spirv.ImageBinding, so kernels and existing shaders bind images the same way."""

    binding: int
    param_index: int
    kind: str
    name: str
    dim: str
    arrayed: bool
    format: str
    image_format: str
    lane: str
    readonly: bool
    writeonly: bool
    set: int = 0
    count: int = 1
    depth: bool = False

    @property
    def axes(self) -> int:
        """Axes of a host array's extent: the image's dimensions plus one for layers (a cube:
        its faces, height and width)."""
        return 3 if self.dim == "cube" else int(self.dim[0]) + int(self.arrayed)

    @property
    def written(self) -> bool:
        """Whether the kernel may change the image (a storage image it writes or updates)."""
        return self.kind == "storage_image" and not self.readonly


@dataclass(frozen=True)
class PushConstant:
    """A scalar parameter or symbolic size stored at byte `offset` of the push-constant block as
    `dtype` (std430). Types narrower than 32 bits, and bool, travel widened to 32 bits."""

    var: Var
    offset: int
    dtype: DataType


@dataclass(frozen=True)
class SpirvModule:
    """A validated compute kernel and how to dispatch it."""

    words: bytes
    entry_point: str
    local_size: tuple[int, int, int]
    grid: tuple[PrimExpr, PrimExpr, PrimExpr]
    bindings: tuple[Binding, ...]
    push_constants: tuple[PushConstant, ...]
    push_constant_size: int
    shared_memory_bytes: int
    required_features: frozenset
    # blockIdx.x is WorkgroupId.x + WorkgroupId.y * NumWorkgroups.x, and workgroups past the grid
    # do nothing: a 1-D grid wider than the device's per-dimension count runs as a 2-D dispatch
    folds_grid: bool = False
    # image parameters' descriptors (ImageParam), numbered after the storage buffers
    images: tuple = ()

    @property
    def uses_subgroups(self) -> bool:
        """Whether the module declares the GroupNonUniform capability (any subgroup operation or
        subgroup builtin), so that its results depend on the subgroup size it runs with."""
        return uses_subgroups(self.words)


_OP_CAPABILITY = 17
_GROUP_NON_UNIFORM = 61


def uses_subgroups(words: bytes) -> bool:
    """Whether the SPIR-V binary `words` declares the GroupNonUniform capability (capabilities
    come first, right after the 5-word header)."""
    code = np.frombuffer(words, dtype="<u4")
    i = 5
    while i < len(code):
        count, opcode = int(code[i]) >> 16, int(code[i]) & 0xFFFF
        if opcode != _OP_CAPABILITY or count < 2:
            return False
        if int(code[i + 1]) == _GROUP_NON_UNIFORM:
            return True
        i += count
    return False

