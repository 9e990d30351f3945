"""Codegen that relies on proven integer ranges (vkir/arith/ranges.py), and unrolling.

- Floor/truncating division and modulo use the unsigned instructions only where the dividend is
  proven non-negative and the divisor positive; a power-of-two floor division/modulo is a shift or
  mask for any dividend; otherwise the signed lowering stays (with a one-comparison fix where the
  divisor's sign is known).
- Integer +, -, * carry NoSignedWrap / NoUnsignedWrap (SPIR-V >= 1.4) only where the bounds prove
  the operation cannot wrap.
- An unrolled loop with a constant trip count becomes copies of its body.
Every module is validated by codegen; the device tests compare lavapipe with the interpreter,
including the dividends and divisors where a wrong lowering would differ (negative, INT_MIN).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from vkir import T
from vkir.ir import BufferStore, FloorDiv, For, Mul, Var, decl_buffer
from vkir.spirv import Target, codegen, disassemble

import spirv_kernels as K

V13 = Target.vulkan13()


def _asm(func, target=V13) -> str:
    return disassemble(codegen(func, target).words)


def _body(asm: str) -> str:
    return asm[asm.index("OpFunction "):]


def _decorated(asm: str, decoration: str) -> set[str]:
    return set(re.findall(rf"OpDecorate (%\w+) {decoration}\b", asm))


def _defined_by(asm: str, opname: str) -> list[str]:
    return re.findall(rf"(%\w+) = {opname} ", asm)


# -- division and modulo -----------------------------------------------------------------------

@T.prim_func
def div_by_thread_index(A: T.Buffer(("n",), "int32"), O: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                O[i] = i // 3 + i % 3 + T.truncdiv(i, 5) + T.truncmod(i, 5) + tx // 3


@T.prim_func
def div_of_loaded_value(A: T.Buffer(("n",), "int32"), O: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                O[i] = A[i] // 3 + A[i] % 3 + T.truncdiv(A[i], 5) + T.truncmod(A[i], 5)


@T.prim_func
def div_by_loaded_value(A: T.Buffer(("n",), "int32"), O: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                O[i] = i // A[i]


@T.prim_func
def div_by_power_of_two(A: T.Buffer(("n",), "int32"), O: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                O[i] = A[i] // 8 + A[i] % 16


def test_proven_nonnegative_division_is_unsigned():
    body = _body(_asm(div_by_thread_index))
    assert "OpSDiv" not in body and "OpSelect " not in body  # no signed lowering, no sign fix
    assert body.count("OpUDiv") == 3 and body.count("OpUMod") == 2
    # the unsigned instructions work on uint bit patterns of the int values
    assert re.search(r"OpUDiv %uint %\w+ %\w+", body)


def test_unprovable_dividend_keeps_signed_lowering():
    body = _body(_asm(div_of_loaded_value))
    assert "OpUDiv" not in body and "OpUMod" not in body
    assert body.count("OpSDiv") == 4
    # the divisor is a positive constant: the floor fix is one comparison (r < 0), no test of
    # the divisor's sign at run time
    assert "OpLogicalNotEqual" not in body and "OpINotEqual" not in body
    assert body.count("OpSelect ") == 2


def test_divisor_of_unknown_sign_keeps_full_floor_fix():
    body = _body(_asm(div_by_loaded_value))
    assert "OpUDiv" not in body and "OpSDiv" in body
    assert "OpLogicalNotEqual" in body  # sign(r) != sign(b) decided at run time


def test_power_of_two_floor_division_is_a_shift_for_any_dividend():
    body = _body(_asm(div_by_power_of_two))
    assert "OpSDiv" not in body and "OpUDiv" not in body and "OpUMod" not in body
    assert re.search(r"OpShiftRightArithmetic %int %\w+ %int_3\b", body)
    assert re.search(r"OpBitwiseAnd %int %\w+ %int_15\b", body)


def test_vector_floor_division_by_negative_constant():
    """K.k_vector_int_ops divides int32x4 loads by a broadcast -3: signed (unknown dividend),
    the floor fix a single r > 0 test (negative divisor)."""
    body = _body(_asm(K.k_vector_int_ops()))
    assert "OpSDiv %v4int" in body and "OpUDiv" not in body
    assert "OpSGreaterThan %v4bool" in body and "OpLogicalNotEqual" not in body


# -- wrap decorations --------------------------------------------------------------------------

def test_index_arithmetic_is_decorated_where_proven():
    asm = _asm(K.k_vadd())
    nsw, nuw = _decorated(asm, "NoSignedWrap"), _decorated(asm, "NoUnsignedWrap")
    # bx * 64 and bx * 64 + tx: bx < (n + 63) // 64 <= 2^25, tx < 64 (the other, unsigned
    # multiplication linearizes the folded grid: WorkgroupId.y * NumWorkgroups.x)
    mul = _defined_by(asm, "OpIMul %int")
    assert len(mul) == 1 and mul[0] in nsw and mul[0] in nuw
    assert "%i" in nsw and "%i" in nuw


def test_no_decoration_before_spirv_1_4():
    assert "Wrap" not in _asm(K.k_vadd(), Target())


@T.prim_func
def wrap_cases(A: T.Buffer(("n",), "int32"), O: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                a = A[i] + 1           # a loaded value: may wrap
                b = n + 100            # n >= 0: no unsigned wrap, but may pass INT_MAX
                c = tx - 64            # in [-64, -1]: no signed wrap, unsigned wraps
                d = i * 4              # i can reach 2^31 - 65: may wrap
                O[i] = a + b + c + d


def test_unprovable_operations_are_not_decorated():
    asm = _asm(wrap_cases)
    nsw, nuw = _decorated(asm, "NoSignedWrap"), _decorated(asm, "NoUnsignedWrap")
    assert "%a" not in nsw | nuw
    assert "%b" in nuw and "%b" not in nsw
    assert "%c" in nsw and "%c" not in nuw
    assert "%d" not in nsw | nuw


def test_size_var_only_known_nonnegative_as_a_direct_extent():
    """A size only used inside an extent expression (here m in the shape m * 2) may be negative
    as far as codegen knows, so m // 3 stays signed; n, an extent itself, is non-negative."""
    m = Var("m")
    a = decl_buffer((Mul(m, 2),), "int32", "A")
    i = Var("i")
    body = For(i, 0, 1, "thread_binding", BufferStore(a, FloorDiv(m, 3), (i,)),
               thread="threadIdx.x")
    func = K.kernel("size_expr", [a], body)
    text = _body(_asm(func))
    assert "OpSDiv" in text and "OpUDiv" not in text

    n = Var("n")
    b = decl_buffer((n,), "int32", "B")
    func = K.kernel("size_direct", [b], For(i, 0, 1, "thread_binding",
                                           BufferStore(b, FloorDiv(n, 3), (i,)),
                                           thread="threadIdx.x"))
    text = _body(_asm(func))
    assert "OpUDiv" in text and "OpSDiv" not in text


def test_loop_counter_increment_never_wraps():
    """A serial loop's var stays below min + extent, so its increment is NoSignedWrap; with a
    non-negative start also NoUnsignedWrap."""
    asm = _asm(K.k_local_loops())
    increments = re.findall(r"(%\w+) = OpIAdd %int %[kv] %int_1\b", asm)
    assert len(increments) == 2
    for rid in increments:
        assert rid in _decorated(asm, "NoSignedWrap") and rid in _decorated(asm, "NoUnsignedWrap")


# -- unrolling ---------------------------------------------------------------------------------

@T.prim_func
def unrolled(A: T.Buffer(("n",), "float32"), B: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 255) // 256, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for j in T.unroll(4):
                i = bx * 256 + j * 64 + tx
                if i < n:
                    B[i] = A[i] * T.float32(2)


@T.prim_func
def unrolled_symbolic(A: T.Buffer(("n",), "float32")):
    for tx in T.thread_binding(1, "threadIdx.x"):
        for j in T.unroll(n):
            A[j] = A[j] + T.float32(1)


@T.prim_func
def unrolled_alloc(A: T.Buffer(("n",), "float32")):
    for tx in T.thread_binding(1, "threadIdx.x"):
        for j in T.unroll(2):
            t = T.alloc_buffer((1,), "float32", scope="local")
            t[0] = A[j]
            A[j] = t[0] + T.float32(1)


def test_constant_unroll_becomes_copies():
    asm = _asm(unrolled)
    body = _body(asm)
    assert "OpLoopMerge" not in body
    # four copies, each with its bounds check, and the guard of the folded grid
    assert body.count("OpFMul") == 4 and body.count("OpSelectionMerge") == 5
    # each copy's offset j * 64 folded to a constant
    for c in (64, 128, 192):
        assert re.search(rf"OpIAdd %int %\w+ %int_{c}\b", body)


def test_unroll_with_symbolic_extent_or_allocation_stays_a_hinted_loop():
    for func in (unrolled_symbolic, unrolled_alloc):
        body = _body(_asm(func))
        assert body.count("OpLoopMerge") == 1 and " Unroll" in body


# -- device numerics ---------------------------------------------------------------------------

@T.prim_func
def div_mix(A: T.Buffer(("n",), "int32"), D: T.Buffer(("n",), "int32"),
            O: T.Buffer(("m",), "int32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            i = bx * 64 + tx
            if i < n:
                x = A[i]
                d = D[i]
                O[i * 12] = x // d                 # signs unknown
                O[i * 12 + 1] = x % d
                O[i * 12 + 2] = x // 8              # shift, any x
                O[i * 12 + 3] = x % 8               # mask, any x
                O[i * 12 + 4] = i // 3              # proven: unsigned
                O[i * 12 + 5] = i % 3
                O[i * 12 + 6] = T.truncdiv(x, 8)    # x unknown: signed
                O[i * 12 + 7] = T.truncmod(x, 8)
                O[i * 12 + 8] = x // 7              # positive divisor: one-comparison fix
                O[i * 12 + 9] = x % 7
                O[i * 12 + 10] = x // -7            # negative divisor
                O[i * 12 + 11] = x % -7


@T.prim_func
def loop_index(A: T.Buffer(("n",), "int32"), O: T.Buffer(("n",), "int32")):
    for bx in T.thread_binding((n + 255) // 256, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for j in T.serial(4):
                i = bx * 256 + j * 64 + tx
                if i < n:
                    O[i] = A[i] + (i % 64) * 1000 + i // 64


@pytest.mark.device
def test_division_lowerings_match_interpreter(device):
    import vkir

    rng = np.random.default_rng(7)
    n = 300
    a = rng.integers(-1000, 1000, n).astype(np.int32)
    a[:6] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1, 0, -8, -9]
    d = rng.integers(-20, 20, n).astype(np.int32)
    d[d == 0] = 3
    d[0] = 5  # never INT_MIN / -1
    k = vkir.build(div_mix, device=device)
    assert "OpUDiv" in k.asm and "OpShiftRightArithmetic" in k.asm and "NoSignedWrap" in k.asm
    got = np.zeros(12 * n, np.int32)
    k(a, d, got)
    want = np.zeros(12 * n, np.int32)
    vkir.interpret(div_mix, a, d, want)
    np.testing.assert_array_equal(got.reshape(n, 12), want.reshape(n, 12))


@pytest.mark.device
def test_unrolled_and_serial_index_arithmetic_on_device(device):
    import vkir

    n = 1000
    a = np.arange(n, dtype=np.int32) * 3 - 777
    for func in (loop_index, unrolled):
        arr = a if func is loop_index else a.astype(np.float32)
        out = np.zeros_like(arr)
        vkir.build(func, device=device)(arr, out)
        want = np.zeros_like(arr)
        vkir.interpret(func, arr, want)
        np.testing.assert_array_equal(out, want)
