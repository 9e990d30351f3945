"""Codegen from hand-built lowered IR: every kernel validates for Vulkan 1.1 (SPIR-V 1.3), Vulkan
1.2 (SPIR-V 1.5) and Vulkan 1.3 (SPIR-V 1.6), and the dispatch description (bindings, push
constants, sizes) is right."""

from __future__ import annotations

import re

import pytest

from vkir import UnsupportedError
from vkir.ir import (AllocBuffer, Add, BufferLoad, BufferStore, Cast, DeclBuffer, For, IntImm,
                     Var, const, decl_buffer, Ramp)
from vkir.spirv import Target, codegen, disassemble, validate

import spirv_kernels as K

ENVS = {
    "vulkan1.1": lambda feats: Target(features=feats),
    "vulkan1.2": lambda feats: Target(spirv_version=(1, 5), env="vulkan1.2", features=feats),
    "vulkan1.3": lambda feats: Target.vulkan13(features=feats),
}


@pytest.mark.parametrize("env", sorted(ENVS))
@pytest.mark.parametrize("factory,features", K.ALL, ids=[f.__name__ for f, _ in K.ALL])
def test_every_kernel_validates(factory, features, env):
    target = ENVS[env](features)
    mod = codegen(factory(), target)
    validate(mod.words, target.env)  # codegen validated already; check the contract holds
    asm = disassemble(mod.words)
    assert f"; Version: {target.spirv_version[0]}.{target.spirv_version[1]}" in asm
    assert mod.required_features <= target.features


def _asm(func, target=None):
    mod = codegen(func, target)
    return mod, disassemble(mod.words)


def test_vadd_interface():
    mod, asm = _asm(K.k_vadd())
    f = K.k_vadd()
    assert mod.entry_point == "vadd"
    assert mod.local_size == (64, 1, 1)
    assert [(b.binding, b.param_index, b.readable, b.writable) for b in mod.bindings] == [
        (0, 0, True, False), (1, 1, True, False), (2, 2, False, True)]
    assert [b.buffer.name for b in mod.bindings] == ["A", "B", "C"]
    (pc,) = mod.push_constants
    assert pc.var.name == "n" and pc.offset == 0 and str(pc.dtype) == "int32"
    assert mod.push_constant_size == 4
    assert mod.grid[1] == IntImm("int32", 1) and mod.grid[2] == IntImm("int32", 1)
    assert f is not None and "FloorDiv" in repr(mod.grid[0])
    assert mod.shared_memory_bytes == 0 and mod.required_features == frozenset()
    # readable names, storage-buffer layout, builtins
    for text in ('OpName %A "A"', "OpDecorate %_runtimearr_float ArrayStride 4",
                 "OpMemberDecorate %A_block 0 NonWritable", "OpMemberDecorate %C_block 0 "
                 "NonReadable", "OpDecorate %WorkgroupId BuiltIn WorkgroupId",
                 "OpDecorate %LocalInvocationId BuiltIn LocalInvocationId",
                 "OpExecutionMode %vadd LocalSize 64 1 1", "StorageBuffer"):
        assert text in asm, text


def test_interface_lists_all_globals_from_spirv_1_4():
    _, old = _asm(K.k_vadd())
    _, new = _asm(K.k_vadd(), Target.vulkan13())
    entry_old = next(line for line in old.splitlines() if "OpEntryPoint" in line)
    entry_new = next(line for line in new.splitlines() if "OpEntryPoint" in line)
    assert "%A" not in entry_old and "%WorkgroupId" in entry_old
    for name in ("%A", "%B", "%C", "%push_constants", "%WorkgroupId", "%LocalInvocationId"):
        assert name in entry_new


def test_push_constant_layout_std430():
    mod, asm = _asm(K.k_scalar_params(), Target(features=K.ALL_FEATURES))
    layout = [(pc.var.name, pc.offset, str(pc.dtype)) for pc in mod.push_constants]
    # bool/int8/float16 travel widened to 32 bits; 8-byte members are 8-aligned; n last
    assert layout == [("flag", 0, "uint32"), ("small", 4, "int32"), ("big", 8, "int64"),
                      ("d", 16, "float64"), ("hf", 24, "float32"), ("n", 28, "int32")]
    assert mod.push_constant_size == 32
    assert [b.param_index for b in mod.bindings] == [5]
    assert "OpMemberDecorate %PushConstants 3 Offset 16" in asm


def test_pointer_cast_gets_own_aliased_binding():
    mod, asm = _asm(K.k_pointer_cast())
    got = [(b.binding, b.param_index, str(b.buffer.dtype), b.readable, b.writable)
           for b in mod.bindings]
    assert got == [(0, 0, "float32", True, False), (1, 1, "float32", False, False),
                   (2, 0, "float32x4", True, False), (3, 1, "float32x4", False, True)]
    for name in ("A", "B", "A_x4", "B_x4"):
        assert f"OpDecorate %{name} Aliased" in asm
    assert "OpDecorate %_runtimearr_v4float ArrayStride 16" in asm


def test_flatten_view_shares_binding_and_is_not_aliased():
    mod, asm = _asm(K.k_flatten_view())
    assert [(b.param_index, b.buffer.name) for b in mod.bindings] == [(0, "A"), (1, "B")]
    assert "Aliased" not in asm
    assert [pc.var.name for pc in mod.push_constants] == ["m", "n"]


def test_vec3_buffers_are_packed_scalars():
    mod, asm = _asm(K.k_vec3_buffers())
    assert "ArrayStride 4" in asm and "ArrayStride 12" not in asm and "ArrayStride 16" not in asm
    assert "OpCompositeConstruct %v3float" in asm


def test_ramp_on_scalar_buffer_is_scalarized():
    """Codegen never vectorizes beyond the IR: a Ramp on a float buffer is 4 scalar accesses."""
    _, asm = _asm(K.k_ramp_scalar_buffer())
    assert "%_ptr_StorageBuffer_v4float" not in asm
    assert asm.count("OpLoad %float") == 4 and asm.count("OpStore") == 4


def test_ramp_on_vector_buffer_moves_n_times_m_lanes():
    _, asm = _asm(K.k_ramp_vector_buffer())
    assert asm.count("OpLoad %v2float") == 2
    assert "OpCompositeConstruct %v4float" in asm and "OpVectorShuffle %v2float" in asm


def test_shared_memory_and_barrier():
    mod, asm = _asm(K.k_shared_reduce())
    assert mod.shared_memory_bytes == 64 * 4
    assert "Workgroup" in asm and "%partial = OpVariable" in asm
    assert "OpControlBarrier %uint_2 %uint_2 %uint_264" in asm  # AcquireRelease|WorkgroupMemory
    assert "SequentiallyConsistent" not in asm
    # no explicit layout on workgroup memory
    array_line = next(line for line in asm.splitlines() if "OpTypeArray %float" in line)
    array_id = array_line.split("=")[0].strip()
    assert f"OpDecorate {array_id} ArrayStride" not in asm


def test_loops_are_structured():
    _, asm = _asm(K.k_local_loops())
    # the serial and vectorized loops; the unrolled one (constant trip count 4) became four
    # copies of its body (tests/spirv/test_spirv_ranges.py checks unrolling in detail)
    assert asm.count("OpLoopMerge") == 2
    assert "Unroll" not in asm
    assert "OpPhi" not in asm
    assert re.search(r"%acc = OpVariable %_ptr_Function_\w+ Function", asm)
    assert 'OpName %k "k"' in asm and 'OpName %v "v"' in asm


def test_if_then_else_evaluates_one_side():
    _, asm = _asm(K.k_select_shuffle())
    assert "OpPhi" in asm and "OpSelectionMerge" in asm
    assert "OpVectorShuffle" in asm and "OpAny" in asm and "OpAll" in asm


def test_signed_remainder_never_uses_srem_or_smod():
    _, asm = _asm(K.k_int_ops())
    assert "OpSRem" not in asm and "OpSMod" not in asm
    assert "OpSDiv" in asm and "OpUMod" in asm and "OpUDiv" in asm
    assert "SAbs" in asm and "OpShiftRightArithmetic" in asm and "OpShiftRightLogical" in asm


def test_float_math_uses_glsl_std_450():
    _, asm = _asm(K.k_float_math())
    assert 'OpExtInstImport "GLSL.std.450"' in asm
    for name in ("Exp", "Log", "InverseSqrt", "Tanh", "RoundEven", "Pow", "Atan2", "Fma",
                 "FAbs", "Floor", "Ceil", "Trunc", "Asinh"):
        assert f" {name} " in asm, name
    assert "OpIsNan" in asm and "OpIsInf" in asm
    # fmod is exact integer arithmetic on the bits: drivers' OpFRem is a - b * trunc(a / b)
    assert "OpFRem" not in asm and "OpUMod" in asm


def test_narrow_types_declare_capabilities_and_extensions():
    mod, asm = _asm(K.k_narrow_storage(), Target(features=K.ALL_FEATURES))
    for cap in ("Int8", "Int16", "Int64", "Float16", "StorageBuffer8BitAccess",
                "StorageBuffer16BitAccess"):
        assert f"OpCapability {cap}" in asm, cap
    assert 'OpExtension "SPV_KHR_8bit_storage"' in asm
    assert "SPV_KHR_16bit_storage" not in asm  # core in SPIR-V 1.3
    assert mod.required_features == {"int8", "int16", "int64", "float16",
                                     "storage_buffer_8bit", "storage_buffer_16bit"}
    _, asm6 = _asm(K.k_narrow_storage(), Target.vulkan13(features=K.ALL_FEATURES))
    assert "OpExtension" not in asm6  # both storage extensions are core in SPIR-V 1.5+


def test_plain_kernel_declares_only_shader():
    _, asm = _asm(K.k_vadd())
    caps = [line.split()[-1] for line in asm.splitlines() if "OpCapability" in line]
    assert caps == ["Shader"]
    assert "OpExtension" not in asm


# ----------------------------------------------------------------------------------------------
# device features and limits


@pytest.mark.parametrize("factory,feature", [
    (K.k_narrow_storage, "float16"), (K.k_half_vectors, "float16"),
    (K.k_scalar_params, "int8"), (K.k_casts, "int8"),
])
def test_missing_feature_is_named(factory, feature):
    missing = K.ALL_FEATURES - {feature}
    with pytest.raises(UnsupportedError, match=f"'{feature}'"):
        codegen(factory(), Target(features=missing))


def test_storage_feature_is_separate_from_arithmetic_feature():
    feats = K.ALL_FEATURES - {"storage_buffer_16bit"}
    with pytest.raises(UnsupportedError, match="storage_buffer_16bit"):
        codegen(K.k_narrow_storage(), Target(features=feats))


def test_float16_without_feature():
    n = Var("n")
    a = decl_buffer((n,), "float16", "A")
    f = K.kernel("half", [a], K.grid1d(n, 64, lambda i: BufferStore(
        a, Add(BufferLoad(a, (i,)), const(1.0, "float16")), (i,))))
    with pytest.raises(UnsupportedError, match="'float16'"):
        codegen(f)
    mod = codegen(f, Target(features={"float16", "storage_buffer_16bit"}))
    assert mod.required_features == {"float16", "storage_buffer_16bit"}


def test_bool_buffer_is_refused():
    n = Var("n")
    a = decl_buffer((n,), "bool", "Mask")
    f = K.kernel("mask", [a], K.grid1d(n, 64, lambda i: BufferStore(a, const(True, "bool"), (i,))))
    with pytest.raises(UnsupportedError, match="BoolToInt8"):
        codegen(f)


def test_shared_memory_cast_is_refused():
    n = Var("n")
    a = decl_buffer((n,), "float32", "A")
    sh = decl_buffer((64,), "float32", "sh", scope="shared")
    sh4 = decl_buffer((16,), "float32x4", "sh4", data=sh.data, scope="shared")
    body = K.grid1d(n, 64, lambda i: AllocBuffer(sh, DeclBuffer(sh4, BufferStore(
        a, BufferLoad(sh, (0,)), (i,)))))
    with pytest.raises(UnsupportedError, match="pointer casts of shared/local"):
        codegen(K.kernel("shcast", [a], body))


def test_shared_memory_limit():
    n = Var("n")
    a = decl_buffer((n,), "float32", "A")
    sh = decl_buffer((8192,), "float32", "big", scope="shared")
    body = K.grid1d(n, 64, lambda i: AllocBuffer(sh, BufferStore(a, BufferLoad(sh, (i,)), (i,))))
    with pytest.raises(UnsupportedError, match="32768 bytes of shared memory"):
        codegen(K.kernel("bigshared", [a], body))
    assert codegen(K.kernel("bigshared", [a], body), Target.lavapipe()).shared_memory_bytes == 32768


def test_thread_extents_must_agree():
    n = Var("n")
    a = decl_buffer((n,), "int32", "A")
    t1, t2 = Var("t1"), Var("t2")
    body = For(t1, 0, 64, "thread_binding", BufferStore(a, t1, (t1,)), thread="threadIdx.x")
    other = For(t2, 0, 32, "thread_binding", BufferStore(a, t2, (t2,)), thread="threadIdx.x")
    from vkir.ir import seq

    with pytest.raises(UnsupportedError, match="threadIdx.x"):
        codegen(K.kernel("mismatch", [a], seq(body, other)))


def test_workgroup_size_limit():
    n = Var("n")
    a = decl_buffer((n,), "int32", "A")
    t = Var("t")
    body = For(t, 0, 256, "thread_binding", BufferStore(a, t, (t,)), thread="threadIdx.x")
    with pytest.raises(UnsupportedError, match="256 invocations"):
        codegen(K.kernel("wide", [a], body))
    assert codegen(K.kernel("wide", [a], body), Target.lavapipe()).local_size == (256, 1, 1)


def test_too_many_lanes_is_refused():
    n = Var("n")
    a = decl_buffer((n,), "float32x4", "A")
    f = K.kernel("eight", [a], K.grid1d(n, 64, lambda i: BufferStore(
        a, BufferLoad(a, (Ramp(i, 1, 2),)), (Ramp(i, 1, 2),))))
    with pytest.raises(UnsupportedError, match="8 lanes"):
        codegen(f)


def test_float64_transcendental_is_refused_with_reason():
    n = Var("n")
    a = decl_buffer((n,), "float64", "A")
    from vkir.ir import Call

    f = K.kernel("exp64", [a], K.grid1d(n, 64, lambda i: BufferStore(
        a, Call("float64", "exp", (BufferLoad(a, (i,)),)), (i,))))
    with pytest.raises(UnsupportedError, match="float64"):
        codegen(f, Target(features={"float64"}))
    g = K.kernel("sqrt64", [a], K.grid1d(n, 64, lambda i: BufferStore(
        a, Call("float64", "sqrt", (Cast("float64", BufferLoad(a, (i,))),)), (i,))))
    assert codegen(g, Target(features={"float64"})).required_features == {"float64"}


def test_grid_is_closed_over_params_and_sizes():
    """A let hoisted above the thread loops (as CSE does) is substituted into the grid, and a
    constant thread extent expression is folded into the local size."""
    from vkir.ir import FloorDiv, IfThenElse, LT, LetStmt, Mul
    from vkir.ir.traversal import walk

    n = Var("n")
    a = decl_buffer((n,), "int32", "A")
    q, bx, tx = Var("q"), Var("bx"), Var("tx")
    body = For(bx, 0, FloorDiv(Add(q, 63), 64), "thread_binding", For(
        tx, 0, Mul(8, 8), "thread_binding",
        IfThenElse(LT(Add(Mul(bx, 64), tx), q), BufferStore(a, q, (Add(Mul(bx, 64), tx),))),
        thread="threadIdx.x"), thread="blockIdx.x")
    mod = codegen(K.kernel("hoisted", [a], LetStmt(q, FloorDiv(n, 4), body)))
    assert mod.local_size == (64, 1, 1)
    free = {v for v in walk(mod.grid[0]) if isinstance(v, Var)}
    assert free == {n}
