"""Bounds checks for a user's SPIR-V module (`vkir.compile_glsl(..., check_bounds=True)`): a
rewrite after which no access through an array index leaves its array, so that an out-of-bounds
index in a shader cannot crash the driver (lavapipe runs shaders in the host process).

Every OpAccessChain (or OpInBoundsAccessChain) into Workgroup, Private, Function, StorageBuffer
or Uniform memory has each index that is not a constant known to be in range compared (unsigned,
so a negative index is out of range too) with its length: an array's constant or specialization
length, a vector's or matrix's size, a buffer's runtime array's element count. The chain then uses each
index where it is in range and 0 where not, so the pointer always lies inside the array. Each
load, store or atomic through such a pointer runs only when every index was in range: a store or
atomic out of range is dropped, a load gives 0 (OpConstantNull), and one out-of-range access per
dispatch is written to a record buffer the rewrite adds (uint words at `record_binding`: the
site number + 1, the dimension, the index as 32 bits, a spare word, then the element count of
each buffer variable's runtime array, which the host writes before the run: a descriptor's
range, hence OpArrayLength, may be larger than the array passed). The host reads it after the
dispatch and raises OutOfBoundsError naming the array (vkir.driver.shader_bounds).

Not covered (documented): pointers passed to functions, OpCopyMemory, OpPtrAccessChain, physical
pointers, a specialization-constant length of another width than its index, an access in a
loop header block (it is clamped into the array, not dropped, and not reported), and image and
texel-buffer coordinates (OpImageRead, OpImageWrite, OpImageFetch, OpImageTexelPointer), which
index no array.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from functools import cache

from .khronos_grammar import core_grammar_file, grammar

RECORD_WORDS = 4
_GUARDED = {4: "Workgroup", 6: "Private", 7: "Function", 12: "StorageBuffer", 2: "Uniform"}
_SCOPE_DEVICE, _RELAXED = 1, 0


@dataclass(frozen=True)
class BoundsSite:
    """One checked access: `variable` (the OpName of the array's variable, else "%id"),
    `storage` (its storage class), `access` ("load", "store" or "atomic") and, per checked
    dimension, its length (None where it is only known on the device) and whether its index is
    signed."""

    variable: str
    storage: str
    access: str
    lengths: tuple
    signed: tuple


@dataclass(frozen=True)
class Instrumented:
    """The rewritten module (`words`, bytes), its `sites` (the record's first word is the index
    of one + 1), the binding of its record buffer and, per runtime array (record word
    RECORD_WORDS + i), the (binding, byte offset, array stride) its element count follows from."""

    words: bytes
    sites: tuple
    record_binding: int
    runtime_arrays: tuple = ()

    @property
    def record_size(self) -> int:
        """Words of the record buffer."""
        return RECORD_WORDS + len(self.runtime_arrays)


@cache
def _result_shapes() -> dict:
    """opcode -> (has a result type, has a result id), from the Khronos grammar."""
    core = json.loads(core_grammar_file().read_text())
    out = {}
    for inst in core["instructions"]:
        kinds = [o["kind"] for o in inst.get("operands", ())]
        out[inst["opcode"]] = ("IdResultType" in kinds[:1], "IdResult" in kinds[:2])
    return out


def _split(words) -> list:
    out, pos = [], 5
    while pos < len(words):
        count = words[pos] >> 16
        assert count > 0 and pos + count <= len(words), "malformed SPIR-V (validate it first)"
        out.append(list(words[pos:pos + count]))
        pos += count
    return out


def _inst(name: str, *operands) -> list:
    code = grammar().opcodes[name]
    return [((len(operands) + 1) << 16) | code, *operands]


def _op(ins) -> int:
    return ins[0] & 0xFFFF


class _Rewriter:
    """The module's declarations, the ids it adds and the declarations it appends."""

    def __init__(self, words):
        self.header = list(words[:5])
        self.insts = _split(words)
        self.version = (words[1] >> 16) & 0xFF, (words[1] >> 8) & 0xFF
        op = grammar().opcodes
        self.op = op
        self.types: dict = {}        # id -> instruction (OpType*)
        self.constants: dict = {}    # id -> instruction (OpConstant*, OpSpecConstant*)
        self.variables: dict = {}    # id -> (pointer type id, storage class), function ones too
        self.names: dict = {}
        self.member_names: dict = {}  # (struct id, member) -> name
        self.decorations: dict = {}   # (id, decoration) -> literals
        self.member_offsets: dict = {}  # (struct id, member) -> Offset
        self.result_type: dict = {}  # id -> type id of every typed result
        self.new_types: list = []    # appended before the first function
        self.new_annotations: list = []
        self._cache: dict = {}
        shapes = _result_shapes()
        type_ops = {v for k, v in op.items() if k.startswith("OpType")}
        for ins in self.insts:
            code = _op(ins)
            if code in type_ops:
                self.types[ins[1]] = ins
            elif code == op["OpName"]:
                self.names.setdefault(ins[1], _string(ins[2:]))
            elif code == op["OpMemberName"]:
                self.member_names[ins[1], ins[2]] = _string(ins[3:])
            elif code == op["OpDecorate"]:
                self.decorations[ins[1], ins[2]] = ins[3:]
            elif code == op["OpMemberDecorate"] and \
                    ins[3] == grammar().enum("Decoration", "Offset"):
                self.member_offsets[ins[1], ins[2]] = ins[4]
            elif code == op["OpVariable"]:
                self.variables[ins[2]] = (ins[1], ins[3])
            has_type, has_result = shapes.get(code, (False, False))
            if has_type and has_result:
                self.result_type[ins[2]] = ins[1]
                if grammar().opnames.get(code, "").startswith(("OpConstant", "OpSpecConstant")):
                    self.constants[ins[2]] = ins

    # -- ids, types and constants --------------------------------------------------------------
    def new_id(self) -> int:
        self.header[3] += 1
        return self.header[3] - 1

    def _find_type(self, name: str, *operands) -> int:
        code = self.op[name]
        for tid, ins in self.types.items():
            if _op(ins) == code and ins[2:] == list(operands):
                return tid
        key = (name, operands)
        if key not in self._cache:
            tid = self._cache[key] = self.new_id()
            ins = _inst(name, tid, *operands)
            self.types[tid] = ins
            self.new_types.append(ins)
        return self._cache[key]

    def bool_type(self) -> int:
        return self._find_type("OpTypeBool")

    def int_type(self, bits: int, signed: int) -> int:
        return self._find_type("OpTypeInt", bits, signed)

    def pointer_type(self, storage: int, pointee: int) -> int:
        return self._find_type("OpTypePointer", storage, pointee)

    def constant(self, tid: int, value: int) -> int:
        key = ("const", tid, value)
        if key not in self._cache:
            bits = self.types[tid][2]
            cid = self._cache[key] = self.new_id()
            words = [value & 0xFFFFFFFF] + ([(value >> 32) & 0xFFFFFFFF] if bits == 64 else [])
            self.new_types.append(_inst("OpConstant", tid, cid, *words))
        return self._cache[key]

    def null(self, tid: int) -> int:
        key = ("null", tid)
        if key not in self._cache:
            cid = self._cache[key] = self.new_id()
            self.new_types.append(_inst("OpConstantNull", tid, cid))
        return self._cache[key]

    def constant_value(self, cid: int) -> int | None:
        """The value of a plain integer OpConstant, else None."""
        ins = self.constants.get(cid)
        if ins is None or _op(ins) != self.op["OpConstant"]:
            return None
        t = self.types.get(ins[1])
        if t is None or _op(t) != self.op["OpTypeInt"]:
            return None
        value = ins[3] | ((ins[4] << 32) if len(ins) > 4 else 0)
        if t[3] and value >> (t[2] - 1):
            value -= 1 << t[2]
        return value


def _string(words) -> str:
    raw = struct.pack(f"<{len(words)}I", *words)
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


@dataclass
class _Chain:
    """What is known of a checked access chain's pointer: the root variable, its storage class,
    the in-range condition and the checked dimensions (index id, type id, condition id,
    length, signed)."""

    root: int
    storage: int
    ok: int
    dims: list
    name: str


def instrument(data: bytes, record_binding: int) -> Instrumented:
    """The module `data` (valid SPIR-V) with bounds checks and a record buffer at
    `record_binding` in descriptor set 0 (see the module docstring)."""
    from .parsed_module import module_words

    r = _Rewriter(module_words(data))
    op = r.op
    uint = r.int_type(32, 0)
    boolean = r.bool_type()
    storage_buffer = r.version >= (1, 3)
    sc = 12 if storage_buffer else 2
    binding = grammar().enum("Decoration", "Binding")
    stride_deco = grammar().enum("Decoration", "ArrayStride")
    slots: dict = {}        # buffer variable with a trailing runtime array -> its record word
    runtime_arrays = []
    for vid, (ptype, storage) in r.variables.items():
        struct_id = r.types[ptype][3] if ptype in r.types else None
        block = r.types.get(struct_id)
        if storage in (12, 2) and block is not None and _op(block) == op["OpTypeStruct"] \
                and len(block) > 2 and _op(r.types[block[-1]]) == op["OpTypeRuntimeArray"] \
                and (vid, binding) in r.decorations:
            slots[vid] = RECORD_WORDS + len(runtime_arrays)
            runtime_arrays.append((r.decorations[vid, binding][0],
                                   r.member_offsets.get((struct_id, len(block) - 3), 0),
                                   r.decorations.get((block[-1], stride_deco), (0,))[0]))
    words_count = r.constant(uint, RECORD_WORDS + len(runtime_arrays))
    array = r.new_id()
    r.new_types.append(_inst("OpTypeArray", array, uint, words_count))
    block = r.new_id()
    r.new_types.append(_inst("OpTypeStruct", block, array))
    record = r.new_id()
    r.new_types.append(_inst("OpVariable", r.pointer_type(sc, block), record, sc))
    r.new_annotations += [
        _inst("OpDecorate", array, grammar().enum("Decoration", "ArrayStride"), 4),
        _inst("OpDecorate", block, grammar().enum("Decoration",
                                                  "Block" if storage_buffer else "BufferBlock")),
        _inst("OpMemberDecorate", block, 0, grammar().enum("Decoration", "Offset"), 0),
        _inst("OpDecorate", record, grammar().enum("Decoration", "DescriptorSet"), 0),
        _inst("OpDecorate", record, grammar().enum("Decoration", "Binding"), record_binding)]
    element_ptr = r.pointer_type(sc, uint)

    sites: list = []
    out_functions: list = []
    first_function = next(i for i, ins in enumerate(r.insts) if _op(ins) == op["OpFunction"])
    body = r.insts[first_function:]
    chains: dict = {}
    function, blocks = None, None
    for ins in body:
        code = _op(ins)
        if code == op["OpFunction"]:
            function, blocks = [ins], []
        elif code == op["OpLabel"]:
            blocks.append([ins])
        elif code == op["OpFunctionEnd"]:
            out_functions.append((function, blocks, ins))
        elif blocks:
            blocks[-1].append(ins)
        else:
            function.append(ins)

    def pointee(ptr_type: int) -> int:
        t = r.types[ptr_type]
        assert _op(t) == op["OpTypePointer"]
        return t[3]

    def checked_chain(ins, emit) -> list:
        """`ins` (an access chain) with its indices clamped, after the checks `emit` gets."""
        base, indices = ins[3], ins[4:]
        parent = chains.get(base)
        if parent is not None:
            root, storage, t = parent.root, parent.storage, pointee(r.result_type[base])
        elif base in r.variables and r.variables[base][1] in _GUARDED:
            root, storage = base, r.variables[base][1]
            t = pointee(r.variables[base][0])
        else:
            return ins
        dims, new_indices = [], []
        for k, idx in enumerate(indices):
            tins = r.types[t]
            tcode = _op(tins)
            length = None      # id of the length, of the index's width
            known = None       # its value when constant
            itype = r.result_type.get(idx)
            if tcode == op["OpTypeStruct"]:
                new_indices.append(idx)          # a member: a constant the validator checked
                t = tins[2 + r.constant_value(idx)]
                continue
            if itype not in r.types or _op(r.types[itype]) != op["OpTypeInt"]:
                new_indices.append(idx)
                t = tins[2]
                continue
            ibits, isigned = r.types[itype][2], r.types[itype][3]
            if tcode == op["OpTypeArray"]:
                known = r.constant_value(tins[3])
                if known is not None:
                    length = r.constant(itype, known)
                elif r.result_type.get(tins[3]) is not None and \
                        r.types[r.result_type[tins[3]]][2] == ibits:
                    length = tins[3]   # a specialization constant of the index's width
                elem = tins[2]
            elif tcode in (op["OpTypeVector"], op["OpTypeMatrix"]):
                known = tins[3]
                length = r.constant(itype, known)
                elem = tins[2]
            elif tcode == op["OpTypeRuntimeArray"] and k == 1 and parent is None \
                    and root in slots:
                where, words = r.new_id(), r.new_id()   # the count the host wrote
                emit(_inst("OpAccessChain", element_ptr, where, record, r.constant(uint, 0),
                           r.constant(uint, slots[root])))
                emit(_inst("OpLoad", uint, words, where))
                if ibits == 32:
                    length = words
                else:
                    length = r.new_id()
                    emit(_inst("OpUConvert", r.int_type(ibits, 0), length, words))
                elem = tins[2]
            else:
                new_indices.append(idx)   # nothing known of this level: left as it is
                t = tins[2]
                continue
            value = r.constant_value(idx)
            if length is None or (known is not None and value is not None and 0 <= value < known):
                new_indices.append(idx)
            else:
                cond, clamped = r.new_id(), r.new_id()
                emit(_inst("OpULessThan", boolean, cond, idx, length))
                emit(_inst("OpSelect", itype, clamped, cond, idx, r.constant(itype, 0)))
                dims.append((idx, itype, cond, known, bool(isigned)))
                new_indices.append(clamped)
            t = elem
        all_dims = (parent.dims if parent is not None else []) + dims
        if not all_dims:
            return ins
        ok = all_dims[0][2]
        for d in all_dims[1:]:
            nxt = r.new_id()
            emit(_inst("OpLogicalAnd", boolean, nxt, ok, d[2]))
            ok = nxt
        name = parent.name if parent is not None else _variable_name(r, root, indices)
        chains[ins[2]] = _Chain(root, storage, ok, all_dims, name)
        return [ins[0] & 0xFFFF | ((4 + len(new_indices)) << 16), ins[1], ins[2], base,
                *new_indices]

    def report(chain: _Chain, access: str) -> tuple[list, int]:
        """(the blocks that record an out-of-range access of `chain`, their first label);
        the last branches to a label filled in by the caller (index -1 of its last word)."""
        site = len(sites)
        sites.append(BoundsSite(chain.name, _GUARDED[chain.storage], access,
                                tuple(d[3] for d in chain.dims), tuple(d[4] for d in chain.dims)))
        start, write, done = r.new_id(), r.new_id(), r.new_id()
        code = [_inst("OpLabel", start)]
        zero = r.constant(uint, 0)
        p0 = r.new_id()
        code.append(_inst("OpAccessChain", element_ptr, p0, record, zero, zero))
        old, won = r.new_id(), r.new_id()
        code.append(_inst("OpAtomicCompareExchange", uint, old, p0, r.constant(uint, _SCOPE_DEVICE),
                          r.constant(uint, _RELAXED), r.constant(uint, _RELAXED),
                          r.constant(uint, site + 1), zero))
        code.append(_inst("OpIEqual", boolean, won, old, zero))
        code.append(_inst("OpSelectionMerge", done, 0))
        code.append(_inst("OpBranchConditional", won, write, done))
        code.append(_inst("OpLabel", write))
        index = dim = None
        # the first dimension out of range: selects from the last dimension to the first
        for n, (idx, itype, cond, _, _) in reversed(list(enumerate(chain.dims))):
            as_uint = idx
            if r.types[itype][2] != 32:
                as_uint = r.new_id()
                code.append(_inst("OpUConvert", uint, as_uint, idx))
            elif r.types[itype][3]:
                as_uint = r.new_id()
                code.append(_inst("OpBitcast", uint, as_uint, idx))
            d = r.constant(uint, n)
            if index is None:
                index, dim = as_uint, d
            else:
                ni, nd = r.new_id(), r.new_id()
                code.append(_inst("OpSelect", uint, ni, cond, index, as_uint))
                code.append(_inst("OpSelect", uint, nd, cond, dim, d))
                index, dim = ni, nd
        for word, value in ((1, dim), (2, index)):
            p = r.new_id()
            code.append(_inst("OpAccessChain", element_ptr, p, record, zero, r.constant(uint, word)))
            code.append(_inst("OpStore", p, value))
        code.append(_inst("OpBranch", done))
        code.append(_inst("OpLabel", done))
        code.append(_inst("OpBranch", 0))   # to the caller's merge block
        return code, start

    loads = {op["OpLoad"]}
    stores = {op["OpStore"]}
    atomics = {v for k, v in op.items() if k.startswith("OpAtomic") and k != "OpAtomicStore"
               and k not in ("OpAtomicFlagClear",)}
    new_body = []
    for function, blocks, end in out_functions:
        new_body.extend(function)
        renamed: dict = {}     # original label -> label of its last piece
        out_blocks = []
        for blk in blocks:
            label = blk[0][1]
            current = [blk[0]]
            header_of_loop = any(_op(x) == op["OpLoopMerge"] for x in blk)
            for ins in blk[1:]:
                code = _op(ins)
                if code in (op["OpAccessChain"], op["OpInBoundsAccessChain"]):
                    ins = checked_chain(ins, current.append)
                    current.append(ins)
                    continue
                if code in loads:
                    ptr, access = ins[3], "load"
                elif code in stores:
                    ptr, access = ins[1], "store"
                elif code in atomics and len(ins) > 3:
                    ptr, access = ins[3], "atomic"
                elif code == op["OpAtomicStore"]:
                    ptr, access = ins[1], "store"
                else:
                    current.append(ins)
                    continue
                chain = chains.get(ptr)
                if chain is None or header_of_loop:
                    current.append(ins)   # unchecked, or clamped only (a loop header)
                    continue
                do, merge = r.new_id(), r.new_id()
                oob, oob_label = report(chain, access)
                oob[-1] = _inst("OpBranch", merge)
                current.append(_inst("OpSelectionMerge", merge, 0))
                current.append(_inst("OpBranchConditional", chain.ok, do, oob_label))
                out_blocks.append(current)
                has_result = code in loads or (code in atomics and len(ins) > 3)
                if has_result:
                    result, rtype = ins[2], ins[1]
                    ins = list(ins)
                    ins[2] = r.new_id()
                out_blocks.append([_inst("OpLabel", do), ins, _inst("OpBranch", merge)])
                out_blocks.extend(_blocks_of(oob, op["OpLabel"]))
                current = [_inst("OpLabel", merge)]
                if has_result:   # out of range: 0 of the loaded (or atomic's) type
                    current.append(_inst("OpPhi", rtype, result, ins[2], do, r.null(rtype),
                                         _last_label(oob, op)))
                renamed[label] = merge
            out_blocks.append(current)
        for blk in out_blocks:
            for ins in blk:
                if _op(ins) == op["OpPhi"]:
                    for i in range(4, len(ins), 2):
                        ins[i] = renamed.get(ins[i], ins[i])
            new_body.extend(blk)
        new_body.append(end)

    globals_ = r.insts[:first_function]
    decl_ops = {v for k, v in op.items() if k.startswith(("OpType", "OpConstant", "OpSpecConstant"))}
    decl_ops |= {op["OpVariable"], op["OpUndef"]}
    first_decl = next((i for i, ins in enumerate(globals_) if _op(ins) in decl_ops), len(globals_))
    globals_ = globals_[:first_decl] + r.new_annotations + globals_[first_decl:] + r.new_types
    if r.version >= (1, 4):
        for i, ins in enumerate(globals_):
            if _op(ins) == op["OpEntryPoint"]:
                globals_[i] = [ins[0] + (1 << 16), *ins[1:], record]
    words = r.header + [w for ins in globals_ + new_body for w in ins]
    return Instrumented(struct.pack(f"<{len(words)}I", *words), tuple(sites), record_binding,
                        tuple(runtime_arrays))


def _variable_name(r: _Rewriter, root: int, indices) -> str:
    """The variable's OpName; for an unnamed buffer block, "Block.member" of the member the
    chain selects; else "%id"."""
    name = r.names.get(root, "")
    if name:
        return name
    struct_id = r.types[r.variables[root][0]][3]
    block = r.names.get(struct_id, "")
    if block and _op(r.types[struct_id]) == r.op["OpTypeStruct"] and indices:
        member = r.constant_value(indices[0])
        return f"{block}.{r.member_names.get((struct_id, member), member)}"
    return block or f"%{root}"


def _blocks_of(code: list, label_op: int) -> list:
    """`code` (instructions) cut into blocks at its labels."""
    out = []
    for ins in code:
        if _op(ins) == label_op:
            out.append([ins])
        else:
            out[-1].append(ins)
    return out


def _last_label(code: list, op) -> int:
    """The label of the last block of `code` (the one that branches on)."""
    return [ins[1] for ins in code if _op(ins) == op["OpLabel"]][-1]
