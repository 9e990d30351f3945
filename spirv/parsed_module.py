"""A SPIR-V module parsed for reflection (vkir.spirv.reflection): `module_words` reads the
32-bit words of a binary (either byte order), `ParsedModule` indexes its instructions (names,
decorations, types, constants, entry points, execution modes, variables, the ids each function
uses) and lays out its types, evaluating specialization constants (OpSpecConstantOp's integer and
logical operations) with the defaults or the values given. Opcodes and enumerants come from the
Khronos grammar (vkir.spirv.khronos_grammar).
"""

from __future__ import annotations

import copy
import struct
from functools import cache

from ..errors import SpirvValidationError, UnsupportedError
from .khronos_grammar import grammar
from .reflected_types import SpirvMember, SpirvType

__all__ = ["ParsedModule", "module_words", "enumerant_names"]


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
def enumerant_names(kind: str) -> dict:
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


class ParsedModule:
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
        self.ext_inst_imports: list = []     # names of the extended instruction sets imported
        self.functions: dict = {}            # function id -> set of words used in its body
        decoration = enumerant_names("Decoration")
        storage = enumerant_names("StorageClass")
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
            elif code in (op["OpDecorate"], op["OpDecorateId"], op["OpDecorateString"]):
                self.decorations.setdefault(ops[0], {})[decoration.get(ops[1], ops[1])] = ops[2:]
            elif code in (op["OpMemberDecorate"], op["OpMemberDecorateString"]):
                self.member_decorations.setdefault((ops[0], ops[1]), {})[
                    decoration.get(ops[2], ops[2])] = ops[3:]
            elif code == op["OpGroupDecorate"]:
                # a decoration group's decorations all come before the group is applied
                group = self.decorations.get(ops[0], {})
                for target in ops[1:]:
                    self.decorations.setdefault(target, {}).update(group)
            elif code == op["OpGroupMemberDecorate"]:
                group = self.decorations.get(ops[0], {})
                for target, member in zip(ops[1::2], ops[2::2]):
                    self.member_decorations.setdefault((target, member), {}).update(group)
            elif code == op["OpEntryPoint"]:
                name, nxt = _string(ops, 2)
                self.entry_points.append((enumerant_names("ExecutionModel").get(ops[0], str(ops[0])),
                                          ops[1], name, tuple(ops[nxt:])))
            elif code == op["OpExecutionMode"]:
                self.modes.append((ops[0], enumerant_names("ExecutionMode").get(ops[1]), ops[2:]))
            elif code == op["OpExecutionModeId"]:
                self.mode_ids.append((ops[0], enumerant_names("ExecutionMode").get(ops[1]), ops[2:]))
            elif code == op["OpCapability"]:
                self.capabilities.append(enumerant_names("Capability").get(ops[0], str(ops[0])))
            elif code == op["OpExtension"]:
                self.extensions.append(_string(ops, 0)[0])
            elif code == op["OpExtInstImport"]:
                self.ext_inst_imports.append(_string(ops, 1)[0])
        self.types: dict = {}                # type id -> SpirvType, laid out on first use
        self._laying_out: set = set()        # type ids being laid out (to stop at a cycle)

    def specialized(self, values: dict) -> "ParsedModule":
        """The same parsed module with specialization {SpecId: value} (types are laid out
        again: an array's length may be a specialization constant)."""
        other = copy.copy(self)
        other.specialization = dict(values)
        other.types = {}
        other._laying_out = set()
        return other

    # -- types ---------------------------------------------------------------------------------
    def type(self, tid: int) -> SpirvType:
        """The laid-out SpirvType of type id `tid` (made once per parsed module)."""
        got = self.types.get(tid)
        if got is None:
            if tid in self._laying_out:
                # a type that holds a pointer to itself (a buffer_reference linked list): the
                # inner mention is a stub with the name and no members
                return self._stub(tid)
            self._laying_out.add(tid)
            try:
                got = self.types[tid] = self._make_type(tid)
            finally:
                self._laying_out.discard(tid)
        return got

    def _stub(self, tid: int) -> SpirvType:
        """The type `tid` without what it contains (where laying it out would recurse)."""
        code, ops = self.insts[tid]
        if grammar().opnames.get(code) == "OpTypePointer":
            storage = enumerant_names("StorageClass").get(ops[0], str(ops[0]))
            return SpirvType("pointer", bits=64 if storage == "PhysicalStorageBuffer" else 0,
                             element=SpirvType("struct", name=self.names.get(ops[1], "")),
                             storage_class=storage)
        return SpirvType("struct", name=self.names.get(tid, ""))

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
            storage = enumerant_names("StorageClass").get(ops[0], str(ops[0]))
            # a PhysicalStorageBuffer pointer is a 64-bit device address in a block
            return SpirvType("pointer", bits=64 if storage == "PhysicalStorageBuffer" else 0,
                             element=self.type(ops[1]), storage_class=storage)
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
        if name in ("OpConstantComposite", "OpSpecConstantComposite"):
            return tuple(self.constant(c) for c in ops[1:])   # gl_WorkGroupSize, ...
        raise UnsupportedError(f"reflection cannot evaluate the constant %{cid} ({name}); "
                               "specialization constants computed by OpSpecConstantOp are not "
                               "supported where reflection needs their value")

    def _spec_op(self, cid: int, ops):
        """The value of an OpSpecConstantOp over integer or bool constants (array lengths such
        as `shared float tmp[BS * 2]`), with the specialization applied."""
        t = self.type(ops[0])
        opname = grammar().opnames.get(ops[1], str(ops[1]))
        if opname == "OpCompositeExtract":   # gl_WorkGroupSize.x: literal indexes, not ids
            value = self.constant(ops[2])
            for index in ops[3:]:
                value = value[index]
            return value
        if opname == "OpVectorShuffle":
            both = tuple(self.constant(ops[2])) + tuple(self.constant(ops[3]))
            return tuple(both[i] for i in ops[4:])
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
