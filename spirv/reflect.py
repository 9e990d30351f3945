"""Reflection: what a SPIR-V compute module needs from its caller, read from the binary.

`reflect(words, entry="main")` returns a `ShaderInfo`: the entry points, the local size (the
LocalSize or LocalSizeId execution mode, overridden by a constant decorated with the
WorkgroupSize builtin, as glslang emits for `layout(local_size_x_id = 0) in;`), the descriptor
bindings the entry point uses (set, binding, storage or uniform buffer, NonWritable/NonReadable,
the element type and array stride of a trailing runtime array), the push-constant block members
(names from OpMemberName, types, offsets) and the specialization constants (SpecId, name, type,
default). Opcodes and enumerants come from the Khronos grammar (vkir.spirv.grammar), so nothing
here is a hand-copied table. The module is assumed valid (validate it with SPIRV-Tools first);
what reflection cannot describe raises UnsupportedError.
"""

from __future__ import annotations

import copy
import struct
from dataclasses import dataclass, field
from functools import cache

from ..errors import ArgumentError, SpirvValidationError, UnsupportedError
from .grammar import grammar


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
        if self.kind in ("int", "float"):
            return self.bits // 8
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
class PushConstant:
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


def _laid_out_matrix(t: SpirvType, deco: dict) -> SpirvType:
    """A struct member's type with its matrix layout (MatrixStride, RowMajor) applied to the
    matrix it is or holds (through arrays)."""
    if t.kind == "matrix" and "MatrixStride" in deco:
        return SpirvType("matrix", element=t.element, count=t.count,
                         stride=deco["MatrixStride"][0], row_major="RowMajor" in deco)
    if t.kind in ("array", "runtime_array") and t.element.kind in ("matrix", "array"):
        inner = _laid_out_matrix(t.element, deco)
        if inner is not t.element:
            return SpirvType(t.kind, element=inner, count=t.count, stride=t.stride)
    return t


# -- parsing -------------------------------------------------------------------------------------
def _string(words, start: int) -> tuple[str, int]:
    """A nul-terminated UTF-8 literal string at word `start`: (text, index of the next word)."""
    raw = bytearray()
    i = start
    while i < len(words):
        chunk = struct.pack("<I", words[i])
        i += 1
        end = chunk.find(b"\0")
        if end >= 0:
            raw += chunk[:end]
            return raw.decode(errors="replace"), i
        raw += chunk
    return raw.decode(errors="replace"), i


@cache
def _names(kind: str) -> dict:
    """value -> enumerant name of an operand kind (first name for aliased values)."""
    out = {}
    for name, e in grammar().enums[kind].items():
        out.setdefault(e.value, e.name)
    return out


def module_words(data) -> tuple:
    """The 32-bit words of a module (bytes of either byte order, or a sequence of words);
    SpirvValidationError when it is not one."""
    if isinstance(data, (list, tuple)):
        return tuple(int(w) for w in data)
    data = bytes(data)
    if len(data) % 4 or len(data) < 20:
        raise SpirvValidationError(f"not a SPIR-V module: {len(data)} bytes (a module is a whole "
                                   "number of 32-bit words, 5 of them header)")
    words = struct.unpack(f"<{len(data) // 4}I", data)
    if words[0] != grammar().magic:
        swapped = struct.unpack(f">{len(data) // 4}I", data)
        if swapped[0] == grammar().magic:
            return swapped
        raise SpirvValidationError(f"not a SPIR-V module: magic number {words[0]:#010x}, "
                                   f"expected {grammar().magic:#010x}")
    return words


class _Module:
    """The instructions of a module, indexed by what reflection looks up."""

    def __init__(self, words, specialization=None):
        self.specialization = dict(specialization or {})   # SpecId -> value overriding defaults
        g = grammar()
        op = g.opcodes
        self.words = words
        self.version = ((words[1] >> 16) & 0xFF, (words[1] >> 8) & 0xFF)
        self.names, self.member_names = {}, {}
        self.all_names: dict = {}            # id -> every OpName it has, in order
        self.decorations: dict = {}          # id -> {decoration name: literals}
        self.member_decorations: dict = {}   # (id, member) -> {decoration name: literals}
        self.insts: dict = {}                # result id -> (opcode, operand words)
        self.entry_points, self.modes, self.mode_ids = [], [], []
        self.variables = []                  # (id, pointer type id, storage class)
        self.capabilities, self.extensions = [], []
        self.functions: dict = {}            # function id -> set of words used in its body
        decoration = _names("Decoration")
        storage = _names("StorageClass")
        typed_results = {op[n] for n in (
            "OpConstant", "OpConstantTrue", "OpConstantFalse", "OpConstantComposite",
            "OpSpecConstant", "OpSpecConstantTrue", "OpSpecConstantFalse",
            "OpSpecConstantComposite", "OpSpecConstantOp", "OpConstantNull")}
        type_ops = {v for k, v in op.items() if k.startswith("OpType")}
        current = None
        pos = 5
        while pos < len(words):
            count, code = words[pos] >> 16, words[pos] & 0xFFFF
            if count == 0 or pos + count > len(words):
                raise SpirvValidationError(f"malformed SPIR-V: instruction at word {pos} has "
                                           f"word count {count}")
            ops = words[pos + 1:pos + count]
            pos += count
            if current is not None:
                if code == op["OpFunctionEnd"]:
                    current = None
                else:
                    self.functions[current].update(ops)
                continue
            if code == op["OpFunction"]:
                current = ops[1]
                self.functions[current] = set()
            elif code in type_ops:
                self.insts[ops[0]] = (code, ops[1:])
            elif code in typed_results:
                self.insts[ops[1]] = (code, (ops[0],) + tuple(ops[2:]))
            elif code == op["OpVariable"]:
                self.variables.append((ops[1], ops[0], storage.get(ops[2], str(ops[2]))))
            elif code == op["OpName"]:
                name = _string(ops, 1)[0]
                self.names.setdefault(ops[0], name)   # the first: the declaration's own name
                self.all_names.setdefault(ops[0], []).append(name)
            elif code == op["OpMemberName"]:
                self.member_names[(ops[0], ops[1])] = _string(ops, 2)[0]
            elif code == op["OpDecorate"]:
                self.decorations.setdefault(ops[0], {})[decoration.get(ops[1], ops[1])] = ops[2:]
            elif code == op["OpMemberDecorate"]:
                self.member_decorations.setdefault((ops[0], ops[1]), {})[
                    decoration.get(ops[2], ops[2])] = ops[3:]
            elif code == op["OpEntryPoint"]:
                name, nxt = _string(ops, 2)
                self.entry_points.append((_names("ExecutionModel").get(ops[0], str(ops[0])),
                                          ops[1], name, tuple(ops[nxt:])))
            elif code == op["OpExecutionMode"]:
                self.modes.append((ops[0], _names("ExecutionMode").get(ops[1]), ops[2:]))
            elif code == op["OpExecutionModeId"]:
                self.mode_ids.append((ops[0], _names("ExecutionMode").get(ops[1]), ops[2:]))
            elif code == op["OpCapability"]:
                self.capabilities.append(_names("Capability").get(ops[0], str(ops[0])))
            elif code == op["OpExtension"]:
                self.extensions.append(_string(ops, 0)[0])
        self._types: dict = {}

    def specialized(self, values: dict) -> "_Module":
        """The same parsed module with specialization {SpecId: value} (types are laid out
        again: an array's length may be a specialization constant)."""
        other = copy.copy(self)
        other.specialization = dict(values)
        other._types = {}
        return other

    # -- types ---------------------------------------------------------------------------------
    def type(self, tid: int) -> SpirvType:
        got = self._types.get(tid)
        if got is None:
            got = self._types[tid] = self._make_type(tid)
        return got

    def _make_type(self, tid: int) -> SpirvType:
        g = grammar()
        code, ops = self.insts[tid]
        name = g.opnames.get(code, "")
        stride = self.decorations.get(tid, {}).get("ArrayStride", (0,))[0]
        if name == "OpTypeBool":
            return SpirvType("bool", 32)
        if name == "OpTypeInt":
            return SpirvType("int", ops[0], bool(ops[1]))
        if name == "OpTypeFloat":
            return SpirvType("float", ops[0])
        if name == "OpTypeVector":
            return SpirvType("vector", element=self.type(ops[0]), count=ops[1])
        if name == "OpTypeMatrix":
            return SpirvType("matrix", element=self.type(ops[0]), count=ops[1])
        if name == "OpTypeArray":
            return SpirvType("array", element=self.type(ops[0]), count=int(self.constant(ops[1])),
                             stride=stride)
        if name == "OpTypeRuntimeArray":
            return SpirvType("runtime_array", element=self.type(ops[0]), stride=stride)
        if name == "OpTypePointer":
            return SpirvType("pointer", element=self.type(ops[1]),
                             storage_class=_names("StorageClass").get(ops[0], str(ops[0])))
        if name == "OpTypeStruct":
            members = []
            for i, mid in enumerate(ops):
                deco = self.member_decorations.get((tid, i), {})
                mtype = _laid_out_matrix(self.type(mid), deco)
                members.append(SpirvMember(self.member_names.get((tid, i), ""), mtype,
                                           deco.get("Offset", (0,))[0], "NonWritable" in deco,
                                           "NonReadable" in deco))
            return SpirvType("struct", members=tuple(members), name=self.names.get(tid, ""))
        if name == "OpTypeVoid":
            return SpirvType("void")
        return SpirvType("other", name=name)

    # -- constants -----------------------------------------------------------------------------
    def constant(self, cid: int):
        """The value of a scalar constant (a specialization constant's default)."""
        code, ops = self.insts[cid]
        name = grammar().opnames[code]
        if name in ("OpSpecConstant", "OpSpecConstantTrue", "OpSpecConstantFalse"):
            spec_id = self.decorations.get(cid, {}).get("SpecId")
            if spec_id is not None and spec_id[0] in self.specialization:
                return self.specialization[spec_id[0]]
        if name in ("OpConstantTrue", "OpSpecConstantTrue"):
            return True
        if name in ("OpConstantFalse", "OpSpecConstantFalse"):
            return False
        if name == "OpConstantNull":
            return 0
        if name in ("OpConstant", "OpSpecConstant"):
            t = self.type(ops[0])
            return _decode(t, ops[1:])
        if name == "OpSpecConstantOp":
            return self._spec_op(cid, ops)
        raise UnsupportedError(f"reflection cannot evaluate the constant %{cid} ({name}); "
                               "specialization constants computed by OpSpecConstantOp are not "
                               "supported where reflection needs their value")

    def _spec_op(self, cid: int, ops):
        """The value of an OpSpecConstantOp over integer or bool constants (array lengths such
        as `shared float tmp[BS * 2]`), with the specialization applied."""
        t = self.type(ops[0])
        opname = grammar().opnames.get(ops[1], str(ops[1]))
        args = [self.constant(a) for a in ops[2:]]
        fn = _SPEC_OPS.get(opname)
        if fn is None or t.kind not in ("int", "bool"):
            raise UnsupportedError(f"reflection cannot evaluate the specialization constant "
                                   f"%{cid} (OpSpecConstantOp {opname})")
        value = fn(*args)
        if t.kind == "bool":
            return bool(value)
        value = int(value) & ((1 << t.bits) - 1)
        if t.signed and value >= 1 << (t.bits - 1):
            value -= 1 << t.bits
        return value


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


# the OpSpecConstantOp operations reflection evaluates (integer and logical ones)
_SPEC_OPS = {
    "OpIAdd": lambda a, b: a + b, "OpISub": lambda a, b: a - b, "OpIMul": lambda a, b: a * b,
    "OpUDiv": lambda a, b: a // b, "OpSDiv": _trunc_div,
    "OpUMod": lambda a, b: a % b, "OpSRem": lambda a, b: a - b * _trunc_div(a, b),
    "OpSMod": lambda a, b: a - b * (a // b),
    "OpShiftLeftLogical": lambda a, b: a << b, "OpShiftRightLogical": lambda a, b: a >> b,
    "OpShiftRightArithmetic": lambda a, b: a >> b,
    "OpBitwiseOr": lambda a, b: a | b, "OpBitwiseAnd": lambda a, b: a & b,
    "OpBitwiseXor": lambda a, b: a ^ b, "OpNot": lambda a: ~a, "OpSNegate": lambda a: -a,
    "OpUConvert": lambda a: a, "OpSConvert": lambda a: a,
    "OpSelect": lambda c, a, b: a if c else b,
    "OpIEqual": lambda a, b: a == b, "OpINotEqual": lambda a, b: a != b,
    "OpULessThan": lambda a, b: a < b, "OpSLessThan": lambda a, b: a < b,
    "OpUGreaterThan": lambda a, b: a > b, "OpSGreaterThan": lambda a, b: a > b,
    "OpULessThanEqual": lambda a, b: a <= b, "OpSLessThanEqual": lambda a, b: a <= b,
    "OpUGreaterThanEqual": lambda a, b: a >= b, "OpSGreaterThanEqual": lambda a, b: a >= b,
    "OpLogicalAnd": lambda a, b: a and b, "OpLogicalOr": lambda a, b: a or b,
    "OpLogicalNot": lambda a: not a, "OpLogicalEqual": lambda a, b: a == b,
    "OpLogicalNotEqual": lambda a, b: a != b,
}


def _decode(t: SpirvType, words) -> object:
    raw = struct.pack(f"<{len(words)}I", *words)
    if t.kind == "float":
        return struct.unpack({16: "<e", 32: "<f", 64: "<d"}[t.bits], raw[:t.bits // 8])[0]
    value = int.from_bytes(raw[:max(4, t.bits // 8)], "little")
    value &= (1 << t.bits) - 1
    if t.signed and value >> (t.bits - 1):
        value -= 1 << t.bits
    return value


def reflect(data, entry: str = "main", specialization=None) -> ShaderInfo:
    """The ShaderInfo of entry point `entry` (bytes, or a sequence of words); sizes that depend
    on specialization constants use `specialization` ({SpecId: value}) where it names them, else
    the defaults."""
    m = _Module(module_words(data), specialization)
    points = tuple(EntryPoint(name, model) for model, _, name, _ in m.entry_points)
    chosen = [e for e in m.entry_points if e[2] == entry]
    if not chosen:
        found = ", ".join(f"{p.name!r} ({p.execution_model})" for p in points) or "none"
        raise ArgumentError(f"the module has no entry point named {entry!r} (found: {found})")
    model, fid, name, interface = chosen[0]
    local, ids = _local_size(m, fid)
    size_id = any(t == fid and mode == "LocalSizeId" for t, mode, _ in m.mode_ids)
    # what the code uses, and the entry point's inputs and outputs: from SPIR-V 1.4 on the
    # interface also lists every buffer, used or not, and the buffers a call takes must not
    # depend on the module's version
    in_code = _used_ids(m, fid, ())
    io = {vid for vid, _, storage in m.variables if storage in ("Input", "Output")}
    used = in_code | (set(interface) & io)
    bindings, push, push_block, shared, plain_inputs, others = [], [], "", 0, [], []
    workgroup = []
    for vid, ptype_id, storage in m.variables:
        if vid not in used:
            continue
        ptype = m.type(ptype_id)
        if storage in ("StorageBuffer", "Uniform", "UniformConstant"):
            b = _binding(m, vid, ptype_id, storage)
            if b is not None:
                bindings.append(b)
            elif storage == "UniformConstant":
                others.append(_other_descriptor(m, vid, ptype_id))
        elif storage == "Workgroup":
            shared += ptype.element.size
            workgroup.append(ptype_id)
        elif storage == "Input" and "BuiltIn" not in m.decorations.get(vid, {}) and \
                not _block_of_builtins(m, ptype.element):
            plain_inputs.append(m.names.get(vid, "") or f"%{vid}")
        elif storage == "PushConstant":
            block = ptype.element
            push_block = m.names.get(vid, "") or block.name
            push = [PushConstant(mem.name or f"member{i}", mem.type, mem.offset, mem.type.size)
                    for i, mem in enumerate(block.members)]
    bindings.sort(key=lambda b: (b.set, b.binding))
    specs = {}   # one per SpecId (glslang may emit two constants with the same SpecId)
    for cid, (code, ops) in m.insts.items():
        spec_id = m.decorations.get(cid, {}).get("SpecId")
        if spec_id is None:
            continue
        own = m.names.get(cid, "")
        spec = SpecConstant(spec_id[0], own, m.type(ops[0]), m.constant(cid),
                            tuple(n for n in m.all_names.get(cid, ()) if n != own))
        if spec.id not in specs or (spec.name and not specs[spec.id].name):
            specs[spec.id] = spec
    size = max((p.offset + p.size for p in push), default=0)
    return ShaderInfo(EntryPoint(name, model), points, local, ids, tuple(bindings), tuple(push),
                      size, tuple(specs[i] for i in sorted(specs)), tuple(m.capabilities), tuple(m.extensions), m.version,
                      push_block, size_id, shared, tuple(plain_inputs), tuple(sorted(others)),
                      m, tuple(workgroup))


_IMAGE_KINDS = {0: "image", 1: "sampled image", 2: "storage image"}


def _other_descriptor(m: _Module, vid: int, ptype_id: int) -> tuple:
    """(set, binding, name, kind) of a descriptor that is not a buffer block: an image, a sampler,
    a combined image sampler, a texel buffer, an acceleration structure, ..."""
    deco = m.decorations.get(vid, {})
    tid = m.insts[ptype_id][1][1]
    code, ops = m.insts.get(tid, (None, ()))
    opname = grammar().opnames.get(code, "")
    while opname in ("OpTypeArray", "OpTypeRuntimeArray"):
        tid = ops[0]
        code, ops = m.insts.get(tid, (None, ()))
        opname = grammar().opnames.get(code, "")
    if opname == "OpTypeImage":
        dim = _names("Dim").get(ops[1], "")
        kind = _IMAGE_KINDS.get(ops[5], "image")
        if dim == "Buffer":
            kind = "storage texel buffer" if ops[5] == 2 else "uniform texel buffer"
    elif opname == "OpTypeSampledImage":
        kind = "combined image sampler"
    elif opname == "OpTypeSampler":
        kind = "sampler"
    else:
        kind = opname[len("OpType"):].lower() or "descriptor"
    return (deco.get("DescriptorSet", (0,))[0], deco.get("Binding", (0,))[0],
            m.names.get(vid, "") or f"%{vid}", kind)


def _block_of_builtins(m: _Module, t) -> bool:
    """Whether type `t` is a struct whose members are all BuiltIn-decorated (a gl_PerVertex-like
    block), which counts as a built-in input."""
    if getattr(t, "kind", None) != "struct":
        return False
    tid = next((k for k, v in m._types.items() if v is t), None)
    count = len(t.members)
    return tid is not None and count > 0 and all(
        "BuiltIn" in m.member_decorations.get((tid, i), {}) for i in range(count))


def _binding(m: _Module, vid: int, ptype_id: int, storage: str) -> DescriptorBinding | None:
    deco = m.decorations.get(vid, {})
    struct_id = m.insts[ptype_id][1][1]
    block, count = m.type(struct_id), 1
    if block.kind == "array":
        struct_id = m.insts[struct_id][1][0]
        block, count = block.element, block.count
    elif block.kind == "runtime_array":
        raise UnsupportedError(f"binding {m.names.get(vid, vid)!r} is a runtime-sized array of "
                               "descriptors, which vkir cannot bind")
    if block.kind != "struct":
        if storage == "UniformConstant":
            return None  # samplers and images are not buffers (reflected elsewhere, not here)
        raise UnsupportedError(f"binding {m.names.get(vid, vid)!r} is not a block")
    block_deco = m.decorations.get(struct_id, {})
    kind = "uniform" if storage == "Uniform" and "BufferBlock" not in block_deco else "storage"
    members = block.members
    readonly = "NonWritable" in deco or (bool(members) and all(x.readonly for x in members))
    writeonly = "NonReadable" in deco or (bool(members) and all(x.writeonly for x in members))
    element, stride, offset = None, 0, 0
    if members and members[-1].type.kind == "runtime_array":
        last = members[-1]
        element, stride, offset = last.type.element, last.type.stride, last.offset
    name = m.names.get(vid, "") or block.name
    return DescriptorBinding(deco.get("DescriptorSet", (0,))[0], deco.get("Binding", (0,))[0], kind, name,
                   block, readonly, writeonly, element, stride,
                   offset, count)


def _local_size(m: _Module, fid: int) -> tuple[tuple, tuple]:
    """(local size with defaults, SpecId per axis or None) for the entry function `fid`."""
    size, ids = (1, 1, 1), (None, None, None)
    for target, mode, lits in m.modes:
        if target == fid and mode == "LocalSize":
            size = tuple(int(v) for v in lits[:3])
    for target, mode, operands in m.mode_ids:
        if target == fid and mode == "LocalSizeId":
            size, ids = _composite_axes(m, operands[:3])
    for cid, deco in m.decorations.items():
        if deco.get("BuiltIn", (None,))[0] == grammar().enum("BuiltIn", "WorkgroupSize") \
                and cid in m.insts:
            code, ops = m.insts[cid]
            size, ids = _composite_axes(m, ops[1:4])
    return size, ids


def _composite_axes(m: _Module, ids) -> tuple[tuple, tuple]:
    values, spec_ids = [], []
    for cid in ids:
        values.append(int(m.constant(cid)))
        code, _ = m.insts[cid]
        spec = m.decorations.get(cid, {}).get("SpecId")
        spec_ids.append(spec[0] if spec and grammar().opnames[code].startswith("OpSpec") else None)
    return tuple(values), tuple(spec_ids)


def _used_ids(m: _Module, fid: int, interface: tuple) -> set:
    """Ids the entry point may use: its interface plus every id named in the functions it
    reaches (a word of an instruction that equals an id counts; over-approximating is safe)."""
    used = set(interface)
    seen, todo = set(), [fid]
    while todo:
        f = todo.pop()
        if f in seen or f not in m.functions:
            continue
        seen.add(f)
        body = m.functions[f]
        used |= body
        todo.extend(x for x in body if x in m.functions)
    return used
