"""Atomics and subgroup operations (mixed into the kernel emitter).

Atomics: one OpAtomic* on the pointer to the element, at Device scope for storage buffers and
Workgroup scope for shared memory, with AcquireRelease semantics on that storage class (the
unequal case of a compare-exchange: Acquire). A barrier in a kernel with atomics on storage
buffers also orders storage-buffer memory, so an atomic followed by a barrier is visible to the
workgroup; the end of the dispatch makes it visible to the next one. int64/uint64 atomics and
float32 add/min/max need their device features, named in the UnsupportedError otherwise, except
on a storage buffer: float32 add without the feature, and float32 min and max always (the
device's OpAtomicFMin/FMaxEXT leave NaN and signed zeros to the driver), are compare-exchange
loops on a uint32 view of the same binding.

Subgroup operations: OpGroupNonUniform* at Subgroup scope; the capability of each class (vote,
arithmetic, ballot, shuffle, shuffle_relative) is declared when used, and the target must have
the matching feature ("subgroup_<class>"; the basic class is required of every Vulkan 1.1
device, so it needs none). Ids come from the SubgroupSize,
SubgroupLocalInvocationId, SubgroupId and NumSubgroups builtins.
"""

from __future__ import annotations

import math

from dataclasses import replace

from vkir.errors import UnsupportedError
from vkir.ir import BufferLoad, Call, DataType, IntImm
from vkir.ir.op import SUBGROUP_OPS

_UINT32 = DataType("uint", 32)
_INT32 = DataType("int", 32)
_FLOAT32 = DataType("float", 32)
_BOOL = DataType("bool", 1)

# op -> (signed int, unsigned int, float) instruction
ATOMIC_OPCODES = {
    "atomic_add": ("OpAtomicIAdd", "OpAtomicIAdd", "OpAtomicFAddEXT"),
    "atomic_sub": ("OpAtomicISub", "OpAtomicISub", None),
    "atomic_min": ("OpAtomicSMin", "OpAtomicUMin", "OpAtomicFMinEXT"),
    "atomic_max": ("OpAtomicSMax", "OpAtomicUMax", "OpAtomicFMaxEXT"),
    "atomic_and": ("OpAtomicAnd", "OpAtomicAnd", None),
    "atomic_or": ("OpAtomicOr", "OpAtomicOr", None),
    "atomic_xor": ("OpAtomicXor", "OpAtomicXor", None),
    "atomic_exchange": ("OpAtomicExchange", "OpAtomicExchange", None),
}
_FLOAT_ATOMIC = {"atomic_add": ("add", "AtomicFloat32AddEXT"),
                 "atomic_min": ("minmax", "AtomicFloat32MinMaxEXT"),
                 "atomic_max": ("minmax", "AtomicFloat32MinMaxEXT")}

# reduction kind -> (int instruction (signed, unsigned), float instruction, bool instruction)
_ARITH = {
    "add": (("OpGroupNonUniformIAdd",) * 2, "OpGroupNonUniformFAdd", None),
    "mul": (("OpGroupNonUniformIMul",) * 2, "OpGroupNonUniformFMul", None),
    "min": (("OpGroupNonUniformSMin", "OpGroupNonUniformUMin"), "OpGroupNonUniformFMin", None),
    "max": (("OpGroupNonUniformSMax", "OpGroupNonUniformUMax"), "OpGroupNonUniformFMax", None),
    "and": (("OpGroupNonUniformBitwiseAnd",) * 2, None, "OpGroupNonUniformLogicalAnd"),
    "or": (("OpGroupNonUniformBitwiseOr",) * 2, None, "OpGroupNonUniformLogicalOr"),
    "xor": (("OpGroupNonUniformBitwiseXor",) * 2, None, "OpGroupNonUniformLogicalXor"),
}
# vkir.quirks.BROADCAST_FIRST_FLOAT_CRASH (codegen imports no vkir.quirks)
BROADCAST_FIRST_FLOAT_QUIRK = "broadcast_first_float_crash"
# vkir.quirks.MEMORY_BARRIER_ENDS_LOOPS: llvmpipe stops a workgroup at a loop's memory barriers
MEMORY_BARRIER_QUIRK = "memory_barrier_ends_loops"
_CAPABILITY = {"basic": "GroupNonUniform", "vote": "GroupNonUniformVote",
               "arithmetic": "GroupNonUniformArithmetic", "ballot": "GroupNonUniformBallot",
               "shuffle": "GroupNonUniformShuffle",
               "shuffle_relative": "GroupNonUniformShuffleRelative"}
_BUILTIN = {"subgroup_size": "SubgroupSize", "subgroup_invocation_id": "SubgroupLocalInvocationId",
            "subgroup_id": "SubgroupId", "num_subgroups": "NumSubgroups"}
_SHUFFLE = {"subgroup_broadcast": "OpGroupNonUniformBroadcast",
            "subgroup_shuffle": "OpGroupNonUniformShuffle",
            "subgroup_shuffle_xor": "OpGroupNonUniformShuffleXor",
            "subgroup_shuffle_up": "OpGroupNonUniformShuffleUp",
            "subgroup_shuffle_down": "OpGroupNonUniformShuffleDown"}


class SyncMixin:
    """`atomic(e)` and `subgroup(e)` for Call nodes of those kinds."""

    # -- atomics -------------------------------------------------------------------------------

    def atomic_semantics(self, *bits: str) -> int:
        """The MemorySemantics id of an atomic: `bits` ("AcquireRelease", "UniformMemory"...),
        or Relaxed (0) on a target with the memory_barrier_ends_loops quirk (llvmpipe before
        Mesa 25), which stops a workgroup at the memory barriers of a loop that some of its
        rows skip, and runs every atomic as a sequentially consistent LLVM atomic whatever its
        semantics say (vkir.quirks)."""
        if MEMORY_BARRIER_QUIRK in self.target.quirks:
            return self.const(_UINT32, 0)
        return self.const(_UINT32, self.b.g.bits("MemorySemantics", *bits))

    def atomic(self, e: Call) -> int:
        """The result id (the old value) of an atomic on a global or shared element."""
        target = e.args[0]
        if not isinstance(target, BufferLoad) or target.dtype.lanes != 1:
            raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} needs one scalar buffer "
                                   f"element as its first argument in `{e}`")
        dt = target.dtype
        mem, ptrs, split = self._element_pointers(target.buffer, target.indices)
        if len(ptrs) != 1 or split != 1:
            raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} on a vector element")
        shared = mem.storage_class == "Workgroup"
        if mem.storage_class == "Function":
            raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} on local buffer "
                                   f"{target.buffer.name!r} (atomics need global or shared)")
        where = "shared" if shared else "buffer"
        why = f"{e.op} on {dt} in `{e}`"
        if dt.is_float:
            entry = _FLOAT_ATOMIC.get(e.op)
            if entry is None or dt.bits != 32:
                raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} on {dt} has no "
                                       "Vulkan instruction (float32 add, min and max only)")
            if e.op == "atomic_add" and not shared and \
                    not self.target.has("atomic_float32_add_buffer"):
                return self._float_by_compare_exchange(target, self.expr(e.args[1]), "OpFAdd")
            if e.op in ("atomic_min", "atomic_max") and not shared:
                # OpAtomicFMin/FMaxEXT leave NaN and -0.0 vs 0.0 to the device: the loop
                # computes T.min / T.max exactly, with or without the device feature
                return self._float_by_compare_exchange(target, self.expr(e.args[1]), e.op)
            self.types.need(f"atomic_float32_{entry[0]}_{where}", why)
            self.b.capability(entry[1])
        elif dt.bits == 64:
            self.types.need(f"atomic_int64_{where}", why)
            self.b.capability("Int64Atomics")
        elif dt.bits != 32 or not dt.is_integer:
            raise UnsupportedError(f"kernel {self.func.name!r}: {e.op} on {dt}: atomics take "
                                   "int32, uint32, int64, uint64 or float32 elements")
        scope = self.const(_UINT32, self.b.enum("Scope", "Workgroup" if shared else "Device"))
        storage = "WorkgroupMemory" if shared else "UniformMemory"
        sem = self.atomic_semantics("AcquireRelease", storage)
        values = [self.expr(a) for a in e.args[1:]]
        t = self.ty(dt)
        if e.op == "atomic_compare_exchange":
            unequal = self.atomic_semantics("Acquire", storage)
            expected, desired = values
            return self.op("OpAtomicCompareExchange", t, ptrs[0], scope, sem, unequal, desired,
                           expected)
        name = ATOMIC_OPCODES[e.op][2 if dt.is_float else 1 if dt.is_uint else 0]
        return self.op(name, t, ptrs[0], scope, sem, values[0])

    def _float_by_compare_exchange(self, target: BufferLoad, value: int, combine: str) -> int:
        """A float32 atomic on a storage buffer as a loop: combine the last value seen with
        `value` ("OpFAdd", or "atomic_min"/"atomic_max" with T.min/T.max's meaning: NaN wins,
        ties give `value`) and publish the result with a uint32 compare-exchange on the same
        element (interface.py gave the buffer a uint32 view), until no other invocation changed
        the element in between. Returns the old value, as the OpAtomicF*EXT would. Used for
        adds where the device has no shaderBufferFloat32AtomicAdd, and for every min and max.
        Without the fences on a target with the memory_barrier_ends_loops quirk (see
        atomic_semantics): there they would end the kernel's loops early."""
        view = replace(target.buffer, dtype=_UINT32)
        _, ptrs, _ = self._element_pointers(view, target.indices)
        u, f = self.ty(_UINT32), self.ty(_FLOAT32)
        scope = self.const(_UINT32, self.b.enum("Scope", "Device"))
        relaxed = self.const(_UINT32, 0)
        # relaxed compare-exchanges between two fences: the ordering of an AcquireRelease
        # atomic (llvmpipe loses updates when the compare-exchange in this loop carries the
        # AcquireRelease semantics itself: 12 of 20 contended runs of atomic_min were wrong)
        fenced = MEMORY_BARRIER_QUIRK not in self.target.quirks
        if fenced:
            fence = self.const(_UINT32, self.b.g.bits("MemorySemantics", "AcquireRelease",
                                                      "UniformMemory"))
            self.do("OpMemoryBarrier", scope, fence)
        first = self.op("OpAtomicLoad", u, ptrs[0], scope, relaxed)
        entry = self.label
        header, body, cont, merge = (self.b.new_id() for _ in range(4))
        old, seen = self.b.new_id(), self.b.new_id()
        self.do("OpBranch", header)
        self.start_block(header)
        self.b.encode(self.code, "OpPhi", u, old, first, entry, seen, cont)
        self.do("OpLoopMerge", merge, cont, self.b.enum("LoopControl", "None"))
        self.do("OpBranch", body)
        self.start_block(body)
        current = self.op("OpBitcast", f, old)
        if combine == "OpFAdd":
            total = self.op("OpFAdd", f, current, value)
        else:
            total = self.float_minmax(combine == "atomic_min", _FLOAT32, current, value)
        self.b.encode(self.code, "OpAtomicCompareExchange", u, seen, ptrs[0], scope, relaxed,
                      relaxed, self.op("OpBitcast", u, total), old)
        done = self.op("OpIEqual", self.ty(DataType("bool", 1)), seen, old)
        self.do("OpBranchConditional", done, merge, cont)
        self.start_block(cont)
        self.do("OpBranch", header)
        self.start_block(merge)
        if fenced:
            self.do("OpMemoryBarrier", scope, fence)
        return self.op("OpBitcast", f, old)

    # -- subgroups -----------------------------------------------------------------------------

    def _subgroup_class(self, e: Call, cls: str) -> None:
        if cls != "basic":  # every Vulkan 1.1 device has basic subgroup operations in compute
            self.types.need(f"subgroup_{cls}", f"{e.op} in `{e}`")
        self.b.capability("GroupNonUniform")
        self.b.capability(_CAPABILITY[cls])

    def _subgroup_builtin(self, name: str) -> int:
        """The int32 value of a subgroup builtin, loaded at its first use."""
        var = self.builtins.get(name)
        if var is None:
            pt = self.b.type_pointer("Input", self.ty(_UINT32))
            var = self.b.global_variable(pt, "Input")
            self.b.decorate(var, "BuiltIn", self.b.enum("BuiltIn", name))
            self.b.name(var, name)
            self.interface_vars.append((var, "Input"))
            self.builtins[name] = var
        return self.op("OpBitcast", self.ty(_INT32), self.op("OpLoad", self.ty(_UINT32), var))

    def _as_uint(self, arg) -> int:
        if isinstance(arg, IntImm) and arg.value >= 0:
            return self.const(_UINT32, arg.value)
        v = self.expr(arg)
        return v if arg.dtype == _UINT32 else self.op("OpBitcast", self.ty(_UINT32), v)

    def subgroup(self, e: Call) -> int:
        """The result id of a subgroup operation (GroupNonUniform instructions)."""
        op = e.op
        cls = SUBGROUP_OPS[op][1]
        self._subgroup_class(e, cls)
        if op == "num_subgroups" and "num_subgroups_partial" in self.target.quirks and \
                self.target.subgroup_size:
            # llvmpipe reports 1 for a workgroup with a partial second subgroup: count them
            x, y, z = self.local_size()
            return self.const(_INT32, -(-(x * y * z) // self.target.subgroup_size))
        if op in _BUILTIN:
            return self._subgroup_builtin(_BUILTIN[op])
        scope = self.const(_UINT32, self.b.enum("Scope", "Subgroup"))
        t = self.ty(e.dtype)
        if op == "subgroup_elect":
            return self.op("OpGroupNonUniformElect", t, scope)
        if op in ("subgroup_all", "subgroup_any", "subgroup_ballot"):
            name = {"subgroup_all": "OpGroupNonUniformAll", "subgroup_any": "OpGroupNonUniformAny",
                    "subgroup_ballot": "OpGroupNonUniformBallot"}[op]
            return self.op(name, t, scope, self.expr(e.args[0]))
        x = e.args[0]
        sdt = x.dtype.element_of()
        if not sdt.is_bool and sdt.bits != 32:
            raise UnsupportedError(f"kernel {self.func.name!r}: {op} on {x.dtype}: subgroup "
                                   "operations take 32-bit or bool operands")
        if op == "subgroup_broadcast_first":
            if sdt.is_float and BROADCAST_FIRST_FLOAT_QUIRK in self.target.quirks:
                return self._broadcast_first_by_shuffle(e, t, scope, self.expr(x))
            return self.op("OpGroupNonUniformBroadcastFirst", t, scope, self.expr(x))
        if op in _SHUFFLE:
            lane = e.args[1]
            name = _SHUFFLE[op]
            if op == "subgroup_broadcast" and self.b.version < (1, 5) and \
                    not isinstance(lane, IntImm):
                # OpGroupNonUniformBroadcast takes a constant lane before SPIR-V 1.5; a shuffle
                # from a (uniform) lane computes the same
                self._subgroup_class(e, "shuffle")
                name = "OpGroupNonUniformShuffle"
            return self.op(name, t, scope, self.expr(x), self._as_uint(lane))
        name = op[len("subgroup_"):]
        group = "Reduce"
        if name.startswith("inclusive_"):
            group, name = "InclusiveScan", name[len("inclusive_"):]
        elif name.startswith("exclusive_"):
            group, name = "ExclusiveScan", name[len("exclusive_"):]
        ints, flt, boolean = _ARITH[name]
        inst = boolean if sdt.is_bool else flt if sdt.is_float else ints[1 if sdt.is_uint else 0]
        if inst is None:
            raise UnsupportedError(f"kernel {self.func.name!r}: {op} on {x.dtype}")
        operation = self.b.enum("GroupOperation", group)
        value = self.expr(x)
        result = self.op(inst, t, scope, operation, value)
        if sdt.is_float and name in ("min", "max"):
            result = self._propagate_nan(x.dtype, scope, operation, value, result)
        return result

    def _broadcast_first_by_shuffle(self, e: Call, t: int, scope: int, value: int) -> int:
        """The first active invocation's `value` as a shuffle from that invocation's lane: the
        lane number (an integer, which llvmpipe broadcasts correctly) is broadcast instead of
        the float, which crashes llvmpipe's compiler inside a loop."""
        self._subgroup_class(e, "shuffle")
        lane = self.op("OpBitcast", self.ty(_UINT32),
                       self._subgroup_builtin("SubgroupLocalInvocationId"))
        first = self.op("OpGroupNonUniformBroadcastFirst", self.ty(_UINT32), scope, lane)
        return self.op("OpGroupNonUniformShuffle", t, scope, value, first)

    def _propagate_nan(self, dt, scope: int, operation: int, value: int, result: int) -> int:
        """A float subgroup min/max (or scan) whose inputs include a NaN is NaN, as the
        interpreter computes it; SPIR-V leaves it undefined (drivers return the other operand).
        The same group operation over a 1.0-where-NaN flag says which results saw one."""
        t = self.ty(dt)
        bt = self.types.bool_of(dt.lanes)
        one, zero = self.const(dt, 1.0), self.const(dt, 0.0)
        flag = self.op("OpSelect", t, self.op("OpIsNan", bt, value), one, zero)
        seen = self.op("OpGroupNonUniformFMax", t, scope, operation, flag)
        hit = self.op("OpFOrdGreaterThan", bt, seen, zero)
        return self.op("OpSelect", t, hit, self.const(dt, math.nan), result)
