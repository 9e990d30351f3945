"""SPIR-V for atomics and subgroup operations: every operation validates (SPIRV-Tools), declares
exactly the capabilities it uses, and needs its device feature (UnsupportedError naming it
otherwise). Device tests compare lavapipe's results with the interpreter at the device's
subgroup size."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import vkir
from vkir.testing import expect_features
from vkir.errors import UnsupportedError
from vkir.ir.op import SUBGROUP_OPS
from vkir.spirv import Target, codegen
from vkir.spirv.tools import disassemble

LAVAPIPE = Target.lavapipe()
ATOMIC_OPS = ["add", "sub", "min", "max", "and", "or", "xor", "exchange"]


def _atomic_kernel(op: str, dtype: str, scope: str):
    call = f"T.atomic_{op}(h[tx % 4], v[tx])" if op != "compare_exchange" else \
        "T.atomic_compare_exchange(h[tx % 4], v[tx], v[tx + 1])"
    if scope == "shared":
        return vkir.from_script(f"""
@T.prim_func
def k(acc: T.Buffer((4,), "{dtype}"), v: T.Buffer((65,), "{dtype}"),
      old: T.Buffer((64,), "{dtype}")):
    h = T.alloc_buffer((4,), "{dtype}", scope="shared")
    for tx in T.thread_binding(64, "threadIdx.x"):
        if tx < 4:
            h[tx] = acc[tx]
        T.barrier()
        old[tx] = {call}
        T.barrier()
        if tx < 4:
            acc[tx] = h[tx]
""")
    return vkir.from_script(f"""
@T.prim_func
def k(h: T.Buffer((4,), "{dtype}"), v: T.Buffer((65,), "{dtype}"),
      old: T.Buffer((64,), "{dtype}")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        old[tx] = {call}
""")


def _asm(func, target=LAVAPIPE) -> str:
    return disassemble(codegen(vkir.lower(func, target), target).words)


@pytest.mark.parametrize("scope", ["global", "shared"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("op", ATOMIC_OPS + ["compare_exchange"])
def test_integer_atomics_validate(op, dtype, scope):
    asm = _asm(_atomic_kernel(op, dtype, scope))  # codegen validates with SPIRV-Tools
    assert ("OpCapability Int64Atomics" in asm) == dtype.endswith("64")
    scope_id = 2 if scope == "shared" else 1  # Scope Workgroup / Device
    assert f"%uint_{scope_id} %uint_" in asm.split("OpAtomic", 1)[1].split("\n")[0]
    if op != "compare_exchange":
        name = {"add": "IAdd", "sub": "ISub", "and": "And", "or": "Or", "xor": "Xor",
                "exchange": "Exchange"}.get(op) or \
            ("S" if dtype.startswith("int") else "U") + op.capitalize()
        assert f"OpAtomic{name} " in asm
    else:
        assert "OpAtomicCompareExchange " in asm


@pytest.mark.parametrize("scope", ["global", "shared"])
@pytest.mark.parametrize("op", ["add", "min", "max"])
def test_float_atomics_validate_and_declare_their_capability(op, scope):
    asm = _asm(_atomic_kernel(op, "float32", scope))
    if op != "add" and scope == "global":   # exact T.min/T.max: a compare-exchange loop
        assert "AtomicFloat32MinMaxEXT" not in asm and "OpAtomicFMinEXT" not in asm
        assert "OpAtomicCompareExchange" in asm and "OpLoopMerge" in asm and "OpIsNan" in asm
        return
    cap = "AtomicFloat32AddEXT" if op == "add" else "AtomicFloat32MinMaxEXT"
    ext = "SPV_EXT_shader_atomic_float_add" if op == "add" else \
        "SPV_EXT_shader_atomic_float_min_max"
    assert f"OpCapability {cap}" in asm and f'OpExtension "{ext}"' in asm
    assert f"OpAtomicF{op.capitalize()}EXT " in asm


@pytest.mark.parametrize("dtype,op,feature", [
    ("int64", "add", "atomic_int64_buffer"), ("uint64", "max", "atomic_int64_buffer"),
    ("float32", "add", "atomic_float32_add_shared"),
    ("float32", "min", "atomic_float32_minmax_shared")])
def test_missing_atomic_feature_is_named(dtype, op, feature):
    scope = "shared" if feature.endswith("_shared") else "global"
    features = LAVAPIPE.features - {feature}
    target = Target.vulkan13(features=features)
    with pytest.raises(UnsupportedError, match=feature):
        codegen(vkir.lower(_atomic_kernel(op, dtype, scope), target), target)


def test_float_add_on_a_buffer_without_the_feature_is_a_compare_exchange_loop():
    """No shaderBufferFloat32AtomicAdd (SwiftShader): the add becomes a loop of uint32
    compare-exchanges on a second view of the same binding; the module validates."""
    target = Target.vulkan13(features=LAVAPIPE.features - {"atomic_float32_add_buffer"})
    module = codegen(vkir.lower(_atomic_kernel("add", "float32", "global")), target)
    asm = disassemble(module.words)
    assert "AtomicFloat32AddEXT" not in asm and "OpAtomicFAddEXT" not in asm
    assert "OpAtomicCompareExchange" in asm and "OpLoopMerge" in asm
    views = [b for b in module.bindings if b.param_index == module.bindings[0].param_index]
    assert sorted(str(b.buffer.dtype) for b in views) == ["float32", "uint32"]


def test_float_min_max_on_a_buffer_need_no_feature():
    """Float32 atomic min/max on storage buffers are compare-exchange loops everywhere (the
    device's OpAtomicFMin/FMaxEXT leave NaN and signed zeros undefined), so a device without
    shaderBufferFloat32AtomicMinMax (SwiftShader) runs them too."""
    target = Target.vulkan13(features=LAVAPIPE.features - {"atomic_float32_minmax_buffer"})
    for op in ("min", "max"):
        module = codegen(vkir.lower(_atomic_kernel(op, "float32", "global")), target)
        views = [b for b in module.bindings if b.param_index == module.bindings[0].param_index]
        assert sorted(str(b.buffer.dtype) for b in views) == ["float32", "uint32"]


def test_shared_atomic_features_are_separate():
    target = Target.vulkan13(features=LAVAPIPE.features - {"atomic_int64_shared"})
    codegen(vkir.lower(_atomic_kernel("add", "int64", "global"), target), target)
    with pytest.raises(UnsupportedError, match="atomic_int64_shared"):
        codegen(vkir.lower(_atomic_kernel("add", "int64", "shared"), target), target)


def test_int32_atomics_need_no_feature_and_make_buffers_writable():
    asm = _asm(_atomic_kernel("add", "int32", "global"), Target())
    lines = [ln for ln in asm.splitlines() if "NonWritable" in ln]
    assert lines == ["               OpMemberDecorate %v_block 0 NonWritable"]


def test_barrier_orders_storage_buffer_memory_with_global_atomics():
    # (a target without llvmpipe's memory_barrier_ends_loops quirk: atomics are Relaxed there,
    # tests/test_adjoint_small_grid.py)
    plain = replace(LAVAPIPE, quirks=LAVAPIPE.quirks - {"memory_barrier_ends_loops"})
    glob = _asm(_atomic_kernel("add", "int32", "global"), plain)
    shared = _asm(_atomic_kernel("add", "int32", "shared"), plain)
    # AcquireRelease | UniformMemory on the atomic, and on the barrier of the shared kernel only
    # WorkgroupMemory (no storage-buffer atomics there)
    assert "OpAtomicIAdd %int %" in glob and "%uint_72 = OpConstant %uint 72" in glob
    assert "OpControlBarrier %uint_2 %uint_2 %uint_264" in shared
    k = vkir.from_script("""
@T.prim_func
def k(h: T.Buffer((4,), "int32"), y: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        T.atomic_add(h[tx % 4], 1)
        T.barrier()
        y[tx] = h[tx % 4]
""")
    assert "OpControlBarrier %uint_2 %uint_2 %uint_328" in _asm(k)  # + UniformMemory (64)


# ----------------------------------------------------------------------------------------------
# subgroups


def _subgroup_kernel(op: str, dtype: str):
    arity = SUBGROUP_OPS[op][0]
    if arity == 0:
        expr = f"T.subgroup_{op[9:]}()" if op.startswith("subgroup_") else f"T.{op}()"
        out_dtype = "int32" if op != "subgroup_elect" else "int32"
        if op == "subgroup_elect":
            expr = "T.cast(T.subgroup_elect(), \"int32\")"
        return vkir.from_script(f"""
@T.prim_func
def k(x: T.Buffer((64,), "{dtype}"), y: T.Buffer((64,), "{out_dtype}")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = {expr}
""")
    if op in ("subgroup_all", "subgroup_any"):
        return vkir.from_script(f"""
@T.prim_func
def k(x: T.Buffer((64,), "int32"), y: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = T.cast(T.{op}(x[tx] > 0), "int32")
""")
    if op == "subgroup_ballot":
        return vkir.from_script("""
@T.prim_func
def k(x: T.Buffer((64,), "int32"), y: T.Buffer((64,), "uint32x4")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = T.subgroup_ballot(x[tx] > 0)
""")
    args = "x[tx]" if arity == 1 else "x[tx], 1"
    return vkir.from_script(f"""
@T.prim_func
def k(x: T.Buffer((64,), "{dtype}"), y: T.Buffer((64,), "{dtype}")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = T.{op}({args})
""")


def _dtypes(op: str):
    if op.endswith(("_and", "_or", "_xor")) and SUBGROUP_OPS[op][1] == "arithmetic":
        return ["int32", "uint32"]
    return ["int32", "uint32", "float32", "float32x4"]


CASES = [(op, dt) for op in SUBGROUP_OPS for dt in _dtypes(op)]
CAPS = {"vote": "GroupNonUniformVote", "arithmetic": "GroupNonUniformArithmetic",
        "ballot": "GroupNonUniformBallot", "shuffle": "GroupNonUniformShuffle",
        "shuffle_relative": "GroupNonUniformShuffleRelative"}


@pytest.mark.parametrize("op,dtype", CASES)
def test_subgroup_ops_validate_with_derived_capabilities(op, dtype):
    for target in (LAVAPIPE, Target(features=LAVAPIPE.features)):  # SPIR-V 1.6 and 1.3
        asm = _asm(_subgroup_kernel(op, dtype), target)
        caps = {ln.split()[1] for ln in asm.splitlines() if ln.strip().startswith("OpCapability")}
        cls = SUBGROUP_OPS[op][1]
        want = {"GroupNonUniform"} | ({CAPS[cls]} if cls in CAPS else set())
        if op == "subgroup_broadcast_first" and dtype.startswith("float") and target.quirks:
            want.add(CAPS["shuffle"])   # llvmpipe's broadcast_first_float_crash workaround
        assert caps & {"GroupNonUniform", *CAPS.values()} == want


def test_basic_subgroup_ops_need_no_feature():
    for op in ("subgroup_size", "subgroup_invocation_id", "subgroup_id", "num_subgroups",
               "subgroup_elect"):
        assert "OpCapability GroupNonUniform\n" in _asm(_subgroup_kernel(op, "int32"), Target())


@pytest.mark.parametrize("op", sorted(op for op, (_, cls) in SUBGROUP_OPS.items()
                                      if cls != "basic"))
def test_missing_subgroup_class_is_named(op):
    feature = f"subgroup_{SUBGROUP_OPS[op][1]}"
    target = Target.vulkan13(features=LAVAPIPE.features - {feature})
    with pytest.raises(UnsupportedError, match=feature):
        codegen(vkir.lower(_subgroup_kernel(op, "int32")), target)


def test_dynamic_broadcast_lane_is_a_shuffle_before_spirv_1_5():
    k = vkir.from_script("""
@T.prim_func
def k(x: T.Buffer((64,), "int32"), lane: T.int32, y: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = T.subgroup_broadcast(x[tx], lane)
""")
    assert "OpGroupNonUniformBroadcast %int" in _asm(k)  # SPIR-V 1.6: a uniform lane is fine
    assert "OpGroupNonUniformShuffle %int" in _asm(k, Target(features=LAVAPIPE.features))
    with pytest.raises(UnsupportedError, match="subgroup_shuffle"):
        _asm(k, Target(features=LAVAPIPE.features - {"subgroup_shuffle"}))


def test_64_bit_subgroup_operands_are_refused():
    with pytest.raises(UnsupportedError, match="32-bit or bool"):
        _asm(_subgroup_kernel("subgroup_add", "int64"))


# ----------------------------------------------------------------------------------------------
# on the device


@pytest.mark.device
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "float32"])
def test_device_atomics_match_interpreter(device, dtype):
    ops = ["add", "min", "max"] + (["sub", "and", "or", "xor"] if dtype != "float32" else [])
    rng = np.random.default_rng(3)
    for op in ops:
        for scope in ("global", "shared"):
            where = "shared" if scope == "shared" else "buffer"
            needs = {"int64": ("int64", f"atomic_int64_{where}")}.get(dtype, ())
            if dtype == "float32" and scope == "shared":   # on buffers: loops where needed
                needs = (f"atomic_float32_{'add' if op == 'add' else 'minmax'}_{where}",)
            with expect_features(device, *needs):
                _check_atomic_on_device(device, op, dtype, scope, rng)


def _check_atomic_on_device(device, op, dtype, scope, rng):
    f = _atomic_kernel(op, dtype, scope)
    if dtype == "float32":
        v = rng.integers(-8, 8, 65).astype(np.float32)  # exact sums in any order
    else:
        v = rng.integers(0, 1000, 65).astype(dtype)
    init = np.array([3, 1, 0, 7], dtype)
    got, want = init.copy(), init.copy()
    old = np.zeros(64, dtype)
    vkir.build(f, device=device)(got, v, old)
    vkir.interpret(f, want, v, np.zeros(64, dtype), subgroup_size=device.info.subgroup_size)
    np.testing.assert_array_equal(got, want, err_msg=f"{op} {scope}")


@pytest.mark.device
@pytest.mark.parametrize("op", sorted(SUBGROUP_OPS))
def test_device_subgroup_ops_match_interpreter(device, op):
    rng = np.random.default_rng(4)
    vector = SUBGROUP_OPS[op][0] > 0 and "float32x4" in _dtypes(op) and \
        op not in ("subgroup_all", "subgroup_any", "subgroup_ballot")
    dtype = "float32x4" if vector else "int32"
    f = _subgroup_kernel(op, dtype)
    x = rng.integers(-4, 5, 256 if dtype == "float32x4" else 64).astype(
        "float32" if dtype == "float32x4" else "int32")
    out_dtype, out_n = ("uint32", 256) if op == "subgroup_ballot" else \
        (x.dtype, x.size) if SUBGROUP_OPS[op][0] and op not in ("subgroup_all", "subgroup_any") \
        else ("int32", 64)
    got, want = np.zeros(out_n, out_dtype), np.zeros(out_n, out_dtype)
    vkir.build(f, device=device)(x, got)
    vkir.interpret(f, x, want, subgroup_size=device.info.subgroup_size)
    if op in ("subgroup_shuffle_up", "subgroup_shuffle_down"):
        lane = np.arange(64) % device.info.subgroup_size
        ok = lane >= 1 if op.endswith("up") else lane + 1 < device.info.subgroup_size
        if dtype == "float32x4":
            ok = np.repeat(ok, 4)
        got, want = got[ok], want[ok]  # lanes shifted in from outside the subgroup: undefined
    np.testing.assert_array_equal(got, want)
