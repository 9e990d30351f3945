"""What reflection reads from a SPIR-V compute module (vkir.spirv.reflection): its types
(`SpirvType`, `SpirvMember`) and the interface an entry point has (`DescriptorBinding`,
`ReflectedPushConstant`, `SpecConstant`, `EntryPoint`, and all of it as a `ShaderInfo`), as frozen
dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SpirvType", "SpirvMember", "DescriptorBinding", "ReflectedPushConstant",
           "SpecConstant", "EntryPoint", "ShaderInfo"]


# -- types ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpirvType:
    """One SPIR-V type. `kind` is "bool", "int", "float", "vector", "matrix", "array",
    "runtime_array", "struct", "pointer", "void" or "other"; `element` is the component/column/
    element/pointee type; `count` the vector size, matrix column count or array length;
    `stride` the ArrayStride or MatrixStride; `members` a struct's SpirvMembers."""

    kind: str
    bits: int = 0
    signed: bool = False
    element: "SpirvType | None" = None
    count: int = 0
    stride: int = 0
    members: tuple = ()
    name: str = ""
    storage_class: str = ""
    row_major: bool = False   # a matrix laid out by rows (RowMajor): `stride` separates rows

    @property
    def dtype(self) -> str:
        """The vkir dtype name of a scalar or vector ("int32", "uint32", "float32x4"), else the
        type written as SPIR-V would ("struct Params", "float32[4]", "mat4x4<float32>")."""
        if self.kind == "bool":
            return "bool"
        if self.kind == "int":
            return f"{'int' if self.signed else 'uint'}{self.bits}"
        if self.kind == "float":
            return f"float{self.bits}"
        if self.kind == "vector":
            return f"{self.element.dtype}x{self.count}"
        if self.kind == "matrix":
            return f"mat{self.count}x{self.element.count}<{self.element.element.dtype}>"
        if self.kind == "array":
            return f"{self.element.dtype}[{self.count}]"
        if self.kind == "runtime_array":
            return f"{self.element.dtype}[]"
        if self.kind == "struct":
            return f"struct {self.name}".rstrip()
        if self.kind == "pointer" and self.storage_class == "PhysicalStorageBuffer":
            return f"{self.element.dtype}*"   # a buffer_reference: a device address
        return self.kind

    @property
    def scalar(self) -> "SpirvType | None":
        """The one scalar type every leaf of this type has, or None when they differ."""
        if self.kind in ("bool", "int", "float"):
            return self
        if self.kind in ("vector", "matrix", "array", "runtime_array"):
            return self.element.scalar
        if self.kind == "struct" and self.members:
            leaves = {m.type.scalar for m in self.members}
            return leaves.pop() if len(leaves) == 1 else None
        return None

    @property
    def size(self) -> int:
        """Bytes this type occupies in an explicitly laid out block (0 for a runtime array)."""
        if self.kind in ("int", "float", "pointer"):
            return self.bits // 8   # a pointer: 8 (a PhysicalStorageBuffer address), else 0
        if self.kind == "bool":
            return 4
        if self.kind == "vector":
            return self.element.size * self.count
        if self.kind == "matrix":
            vectors = self.element.count if self.row_major else self.count
            return (self.stride or self.element.size) * vectors
        if self.kind == "array":
            return (self.stride or self.element.size) * self.count
        if self.kind == "struct":
            if len(self.members) > 1 and not any(m.offset for m in self.members):
                return sum(m.type.size for m in self.members)   # no layout (Workgroup memory)
            return max((m.offset + m.type.size for m in self.members), default=0)
        return 0

    def __str__(self) -> str:
        return self.dtype

    def __repr__(self) -> str:
        return f"SpirvType({self.dtype})"


@dataclass(frozen=True)
class SpirvMember:
    """One member of a struct: name (OpMemberName), type and Offset."""

    name: str
    type: SpirvType
    offset: int
    readonly: bool = False
    writeonly: bool = False


# -- reflected interface -------------------------------------------------------------------------
@dataclass(frozen=True)
class DescriptorBinding:
    """A descriptor binding a shader declares (reflected; vkir.abi.Binding is the binding of a
    kernel vkir compiled): `kind` "storage" or "uniform"; `name` the variable's name or else
    its block's; `type` the block struct; `element` the element type of the block's trailing
    runtime array (None without one) with `array_stride` and `offset` of that array; `readonly`
    (NonWritable) / `writeonly` (NonReadable); `count` descriptors (an array of blocks)."""

    set: int
    binding: int
    kind: str
    name: str
    type: SpirvType
    readonly: bool
    writeonly: bool
    element: SpirvType | None = None
    array_stride: int = 0
    offset: int = 0
    count: int = 1

    @property
    def fixed_size(self) -> int:
        """Bytes before the runtime array (the whole block when it has none)."""
        return self.offset if self.element is not None else self.type.size


@dataclass(frozen=True)
class ReflectedPushConstant:
    """One push-constant block member: name, type, byte offset and size."""

    name: str
    type: SpirvType
    offset: int
    size: int

    @property
    def dtype(self) -> str:
        """The member's vkir dtype name."""
        return self.type.dtype


@dataclass(frozen=True)
class SpecConstant:
    """A specialization constant: SpecId, OpName, type and default value."""

    id: int
    name: str
    type: SpirvType
    default: object
    # its other OpNames (`const uint strideB = N;` names N's id strideB too); not compared
    aliases: tuple = field(default=(), compare=False)

    @property
    def dtype(self) -> str:
        """The constant's vkir dtype name."""
        return self.type.dtype


@dataclass(frozen=True)
class EntryPoint:
    """An entry point: name and execution model ("GLCompute", ...)."""

    name: str
    execution_model: str


@dataclass(frozen=True)
class ShaderInfo:
    """What one entry point of a module needs. `local_size` uses the specialization constants'
    defaults; `local_size_ids` holds per axis the SpecId that sets it (None: a constant);
    `specialize(values)` gives the local size for {SpecId: value}."""

    entry: EntryPoint
    entry_points: tuple
    local_size: tuple
    local_size_ids: tuple
    bindings: tuple
    push_constants: tuple
    push_constant_size: int
    spec_constants: tuple
    capabilities: tuple
    extensions: tuple
    version: tuple
    push_block: str = ""
    uses_local_size_id: bool = False   # the LocalSizeId execution mode (Vulkan: maintenance4)
    shared_memory_bytes: int = 0       # Workgroup variables (array lengths as specialized)
    plain_inputs: tuple = ()           # Input variables without a BuiltIn (nothing feeds them)
    other_descriptors: tuple = ()      # (set, binding, name, kind) of images, samplers, ...
    # the parsed module and the pointer types of the Workgroup variables the entry point uses:
    # what a specialization recomputes without parsing the words again
    _parsed: object = field(default=None, compare=False, repr=False)
    _workgroup_types: tuple = field(default=(), compare=False, repr=False)
    images: tuple = ()                 # ImageBindings (spirv/image_reflection.py), by binding

    def specialize(self, values: dict) -> tuple:
        """The local size with {SpecId: value} applied (others keep their defaults)."""
        return tuple(int(values.get(i, n)) if i is not None else n
                     for n, i in zip(self.local_size, self.local_size_ids))

    def specialized_shared_memory_bytes(self, values: dict) -> int:
        """Bytes of shared memory with {SpecId: value} applied (array lengths may follow
        specialization constants), from the module as parsed once by `reflect`."""
        if not values or self._parsed is None:
            return self.shared_memory_bytes
        m = self._parsed.specialized(values)
        return sum(m.type(t).element.size for t in self._workgroup_types)
