"""A SPIR-V module builder: the logical-layout sections, id allocation, deduplicated types and
constants, decorations, and capabilities/extensions derived from what the module uses.

Instructions are encoded straight to 32-bit words (opcodes from the Khronos grammar). The builder
knows nothing about vkir; `vkir.spirv.codegen` drives it.
"""

from __future__ import annotations

import struct
from array import array

import numpy as np

from .khronos_grammar import Grammar, grammar

_GENERATOR = 0  # unregistered generator id


def _string_words(text: str) -> list[int]:
    """A literal string operand: UTF-8, NUL-terminated, padded to whole words (little-endian)."""
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


class ModuleBuilder:
    """Builds one SPIR-V module section by section.

    Ids come from `new_id()`. Types and constants are deduplicated by structural key (struct
    types are not, since decorations make them distinct). `capability(name)` records a capability
    and, from the grammar, the extension it needs when the module's version predates it.
    """

    def __init__(self, version: tuple[int, int] = (1, 3)):
        self.g: Grammar = grammar()
        self._op = self.g.opcodes
        self.version = tuple(version)
        self.bound = 1
        self.capabilities: dict[str, None] = {}
        self.extensions: dict[str, None] = {}
        self.ext_imports: list[int] = []
        self.entry_points: list[int] = []
        self.exec_modes: list[int] = []
        self.debug: list[int] = []
        self.annotations: list[int] = []
        self.globals: list[int] = []
        self.functions: list[int] = []
        self._types: dict = {}
        self._consts: dict = {}
        self._named: set[int] = set()
        self.constant_ids: set[int] = set()
        self._glsl: int | None = None
        self.capability("Shader")

    # ------------------------------------------------------------------------------------------
    # basics

    def new_id(self) -> int:
        """A fresh result id (the module's bound grows by one)."""
        i = self.bound
        self.bound += 1
        return i

    def encode(self, out: list[int], opname: str, *operands) -> None:
        """Append one instruction; operands are ints (words), strs (literal strings) or lists."""
        words: list[int] = []
        for o in operands:
            if isinstance(o, int):
                words.append(o)
            elif isinstance(o, str):
                words.extend(_string_words(o))
            else:
                words.extend(o)
        out.append(((len(words) + 1) << 16) | self._op[opname])
        out.extend(words)

    def enum(self, kind: str, name: str) -> int:
        """The value of enumerant `name` of operand kind `kind` (from the grammar)."""
        return self.g.enums[kind][name].value

    def capability(self, name: str) -> None:
        """Declare a capability, plus the extension it needs before it became core."""
        if name in self.capabilities:
            return
        e = self.g.enumerant("Capability", name)
        self.capabilities[e.name] = None
        if e.extensions and (e.version is None or e.version > self.version):
            for ext in e.extensions:
                self.extensions[ext] = None

    def glsl_std_450(self) -> int:
        """The id of the GLSL.std.450 extended instruction set (imported on first use)."""
        if self._glsl is None:
            self._glsl = self.new_id()
            self.encode(self.ext_imports, "OpExtInstImport", self._glsl, "GLSL.std.450")
        return self._glsl

    # ------------------------------------------------------------------------------------------
    # debug names and decorations

    def name(self, target: int, text: str) -> None:
        """OpName, once per id (later names for the same id are ignored)."""
        if target in self._named or not text:
            return
        self._named.add(target)
        self.encode(self.debug, "OpName", target, text)

    def member_name(self, struct_id: int, member: int, text: str) -> None:
        """OpMemberName: a debug name for a struct member."""
        self.encode(self.debug, "OpMemberName", struct_id, member, text)

    def decorate(self, target: int, decoration: str, *literals) -> None:
        """OpDecorate `target` with `decoration` and its literal operands."""
        self.encode(self.annotations, "OpDecorate", target, self.enum("Decoration", decoration),
                    *literals)

    def member_decorate(self, struct_id: int, member: int, decoration: str, *literals) -> None:
        """OpMemberDecorate a struct member with `decoration` and its literals."""
        self.encode(self.annotations, "OpMemberDecorate", struct_id, member,
                    self.enum("Decoration", decoration), *literals)

    # ------------------------------------------------------------------------------------------
    # types (deduplicated)

    def _type(self, key, opname: str, *operands) -> int:
        tid = self._types.get(key)
        if tid is None:
            tid = self.new_id()
            self.encode(self.globals, opname, tid, *operands)
            self._types[key] = tid
        return tid

    def type_void(self) -> int:
        """The id of OpTypeVoid (deduplicated)."""
        return self._type(("void",), "OpTypeVoid")

    def type_bool(self) -> int:
        """The id of OpTypeBool (deduplicated)."""
        return self._type(("bool",), "OpTypeBool")

    def type_int(self, bits: int, signed: bool) -> int:
        """The id of an integer type of `bits` (deduplicated; requires the Int8/16/64 capability).
        """
        cap = {8: "Int8", 16: "Int16", 64: "Int64"}.get(bits)
        if cap:
            self.capability(cap)
        return self._type(("int", bits, signed), "OpTypeInt", bits, int(signed))

    def type_float(self, bits: int) -> int:
        """The id of a float type of `bits` (deduplicated; requires Float16/Float64)."""
        cap = {16: "Float16", 64: "Float64"}.get(bits)
        if cap:
            self.capability(cap)
        return self._type(("float", bits), "OpTypeFloat", bits)

    def type_vector(self, elem: int, count: int) -> int:
        """The id of a vector of 2 to 4 `elem` components."""
        assert 2 <= count <= 4, count
        return self._type(("vec", elem, count), "OpTypeVector", elem, count)

    def type_pointer(self, storage_class: str, elem: int) -> int:
        """The id of a pointer to `elem` in `storage_class`."""
        sc = self.enum("StorageClass", storage_class)
        return self._type(("ptr", sc, elem), "OpTypePointer", sc, elem)

    def type_function(self, ret: int, *params: int) -> int:
        """The id of a function type."""
        return self._type(("fn", ret, params), "OpTypeFunction", ret, *params)

    def type_array(self, elem: int, length: int, stride: int | None = None) -> int:
        """A fixed array of `length` elements (ArrayStride only for explicitly laid out memory)."""
        length_id = self.constant_uint(length)
        tid = self._type(("array", elem, length, stride), "OpTypeArray", elem, length_id)
        if stride is not None and ("stride", tid) not in self._types:
            self._types[("stride", tid)] = tid
            self.decorate(tid, "ArrayStride", stride)
        return tid

    def type_runtime_array(self, elem: int, stride: int) -> int:
        """The id of a runtime array of `elem`, decorated with ArrayStride `stride`."""
        tid = self._type(("rtarray", elem, stride), "OpTypeRuntimeArray", elem)
        if ("stride", tid) not in self._types:
            self._types[("stride", tid)] = tid
            self.decorate(tid, "ArrayStride", stride)
        return tid

    def type_image(self, sampled_type: int, dim: str, arrayed: bool, sampled: int,
                   image_format: str) -> int:
        """The id of an OpTypeImage (deduplicated): `dim` "1D"/"2D"/"3D", `sampled` 1 (read
        through a sampler) or 2 (a storage image), `image_format` a SPIR-V ImageFormat name."""
        dim_v, fmt_v = self.enum("Dim", dim), self.enum("ImageFormat", image_format)
        return self._type(("image", sampled_type, dim_v, arrayed, sampled, fmt_v), "OpTypeImage",
                          sampled_type, dim_v, 0, int(arrayed), 0, sampled, fmt_v)

    def type_sampled_image(self, image_type: int) -> int:
        """The id of the OpTypeSampledImage of `image_type` (deduplicated)."""
        return self._type(("sampled_image", image_type), "OpTypeSampledImage", image_type)

    def type_struct(self, *members: int) -> int:
        """A new struct type (never deduplicated: its decorations make it unique)."""
        tid = self.new_id()
        self.encode(self.globals, "OpTypeStruct", tid, *members)
        return tid

    # ------------------------------------------------------------------------------------------
    # constants (deduplicated)

    def constant_bool(self, value: bool) -> int:
        """The id of OpConstantTrue/False (deduplicated)."""
        key = ("bool", bool(value))
        cid = self._consts.get(key)
        if cid is None:
            cid = self.new_id()
            op = "OpConstantTrue" if value else "OpConstantFalse"
            self.encode(self.globals, op, self.type_bool(), cid)
            self._consts[key] = cid
            self.constant_ids.add(cid)
        return cid

    def constant(self, type_id: int, code: str, bits: int, value) -> int:
        """A scalar numeric constant of type `type_id` (code "int", "uint" or "float")."""
        if code == "float":
            value = float(value)
            if bits in (16, 32):   # rounded as the type stores it (too large: a signed infinity)
                with np.errstate(over="ignore"):
                    narrow = np.array(value, dtype=f"float{bits}")
                words = [int(narrow.view(f"uint{bits}"))]
            else:
                lo, hi = struct.unpack("<II", struct.pack("<d", value))
                words = [lo, hi]
            key = (type_id, tuple(words))
        else:
            value = int(value) & ((1 << bits) - 1)
            if code == "int" and bits < 32 and value >> (bits - 1):
                value |= (0xFFFFFFFF << bits) & 0xFFFFFFFF  # narrow signed: sign-extended word
            words = [value & 0xFFFFFFFF] if bits <= 32 else [value & 0xFFFFFFFF, value >> 32]
            key = (type_id, tuple(words))
        cid = self._consts.get(key)
        if cid is None:
            cid = self.new_id()
            self.encode(self.globals, "OpConstant", type_id, cid, words)
            self._consts[key] = cid
            self.constant_ids.add(cid)
        return cid

    def constant_uint(self, value: int) -> int:
        """The id of a uint32 constant."""
        return self.constant(self.type_int(32, False), "uint", 32, value)

    def constant_composite(self, type_id: int, parts: tuple[int, ...]) -> int:
        """The id of a composite constant of `parts` (deduplicated)."""
        key = ("composite", type_id, tuple(parts))
        cid = self._consts.get(key)
        if cid is None:
            cid = self.new_id()
            self.encode(self.globals, "OpConstantComposite", type_id, cid, *parts)
            self._consts[key] = cid
            self.constant_ids.add(cid)
        return cid

    def global_variable(self, pointer_type: int, storage_class: str) -> int:
        """A module-scope OpVariable of `pointer_type` in `storage_class`."""
        vid = self.new_id()
        self.encode(self.globals, "OpVariable", pointer_type, vid,
                    self.enum("StorageClass", storage_class))
        return vid

    # ------------------------------------------------------------------------------------------
    # the module

    def to_bytes(self) -> bytes:
        """The module as little-endian words: header, then the sections in logical-layout order."""
        out = array("I", [self.g.magic, (self.version[0] << 16) | (self.version[1] << 8),
                          _GENERATOR, self.bound, 0])
        for cap in self.capabilities:
            enc: list[int] = []
            self.encode(enc, "OpCapability", self.enum("Capability", cap))
            out.extend(enc)
        for ext in self.extensions:
            enc = []
            self.encode(enc, "OpExtension", ext)
            out.extend(enc)
        out.extend(self.ext_imports)
        enc = []
        self.encode(enc, "OpMemoryModel", self.enum("AddressingModel", "Logical"),
                    self.enum("MemoryModel", "GLSL450"))
        out.extend(enc)
        for section in (self.entry_points, self.exec_modes, self.debug, self.annotations,
                        self.globals, self.functions):
            out.extend(section)
        if out.itemsize != 4:  # pragma: no cover - platforms where C unsigned int is not 32-bit
            raise RuntimeError("array('I') is not 32-bit on this platform")
        return out.tobytes()
