"""Compile cost grows with the source, not faster: float floor division and modulo are a fixed
number of SPIR-V instructions (their exact remainder is a loop, not 191 unrolled steps that
llvmpipe took minutes to compile for float64x4), and common subexpression elimination does a
bounded amount of work per node of a long sum (it used to be cubic in the sum's depth).
The measures are sizes and counts (instructions, Python calls), never wall time."""

from __future__ import annotations

import sys
import tracemalloc

import numpy as np
import pytest

import vkir
from vkir import ir
from vkir.spirv import codegen
from vkir.target import Target
from vkir.transform.common_subexpr_elim import eliminate

_OP_LOOP_MERGE, _OP_UMOD = 246, 137


def _opcodes(words: bytes) -> list[int]:
    """The opcode of every instruction of a SPIR-V binary."""
    code = np.frombuffer(words, dtype="<u4")
    out, i = [], 5
    while i < len(code):
        out.append(int(code[i]) & 0xFFFF)
        i += int(code[i]) >> 16
    return out


def _divisions(dtype: str, lanes: int, ops, terms: int = 1):
    """A kernel storing, per output, the sum of `terms` copies of each of `ops` (`//`, `%`,
    `T.fmod`) applied to two loaded vectors."""
    vt = dtype if lanes == 1 else f"{dtype}x{lanes}"
    idx = "i" if lanes == 1 else f"T.ramp(i * {lanes}, 1, {lanes})"
    a, b = f"A[{idx}]", f"B[{idx}]"
    parts = [f"T.fmod({a}, {b})" if op == "fmod" else f"({a} {op} {b})" for op in ops] * terms
    return vkir.from_script(f'''
@T.prim_func
def f(A: T.Buffer((64,), "{dtype}"), B: T.Buffer((64,), "{dtype}"),
      C: T.Buffer((64,), "{dtype}")):
    for i in T.thread_binding({64 // lanes}, thread="threadIdx.x"):
        C[{idx}] = {" + ".join(parts)}
''')


def _spirv(func) -> list[int]:
    target = Target.lavapipe()
    return _opcodes(codegen(vkir.lower(func, target), target).words)


@pytest.mark.parametrize("dtype, lanes", [("float64", 4), ("float64", 1), ("float32", 4),
                                          ("float16", 2)])
def test_float_floor_division_modulo_and_fmod_are_a_bounded_number_of_instructions(dtype, lanes):
    ops = _spirv(_divisions(dtype, lanes, ["//", "%", "fmod"]))
    # one remainder loop per operation, one integer remainder before it and REMAINDER_UNROLL in
    # it (the fully unrolled form had 192 OpUMod and some 1,600 instructions per float64
    # operation)
    from vkir.spirv.codegen.float_division import REMAINDER_UNROLL

    assert ops.count(_OP_LOOP_MERGE) == 3
    assert ops.count(_OP_UMOD) == 3 * (1 + REMAINDER_UNROLL)
    # (lavapipe compares int64 on 32-bit halves, its int64_signed_compare quirk: some 45 more
    # instructions per float64 operation than the 211 of a plain int64 compare)
    assert len(ops) < 3 * 270


def test_ninety_float64_floor_divisions_cost_ninety_times_one():
    one = len(_spirv(_divisions("float64", 1, ["//"])))
    ninety = len(_spirv(_divisions("float64", 1, ["//"], terms=90)))
    assert ninety < 90 * 240 and ninety <= 90 * one


# -- the device computes the loop's remainder exactly, lane by lane ------------------------------

def _float64_operands() -> tuple[np.ndarray, np.ndarray]:
    """Pairs whose exponents differ by nothing up to the whole float64 range (so the remainder
    loop runs 0 to 186 times, a different count in each lane), and the special values."""
    info = np.finfo(np.float64)
    xs = np.array([0.0, -0.0, 1.0, -1.0, 1.1, 3.3, -7.0, 1e9, 2.0 ** 53 + 2, 1e300, -1e-300,
                   float(info.max), float(info.tiny), float(info.smallest_subnormal),
                   -float(info.smallest_subnormal), np.inf, -np.inf, np.nan, 0.1, -2.5e-7])
    a, b = np.repeat(xs, len(xs)), np.tile(xs, len(xs))
    n = len(a) // 64 * 64
    return a[:n], b[:n]


@pytest.mark.device
def test_float64x4_division_builds_quickly_and_matches_numpy_bit_for_bit(device):
    a, b = _float64_operands()
    n = len(a)
    f = vkir.from_script(f'''
@T.prim_func
def f(a: T.Buffer(({n // 4},), "float64x4"), b: T.Buffer(({n // 4},), "float64x4"),
      q: T.Buffer(({n // 4},), "float64x4"), r: T.Buffer(({n // 4},), "float64x4"),
      t: T.Buffer(({n // 4},), "float64x4")):
    for bx in T.thread_binding({n // 64}, thread="blockIdx.x"):
        for tx in T.thread_binding(16, thread="threadIdx.x"):
            q[bx * 16 + tx] = a[bx * 16 + tx] // b[bx * 16 + tx]
            r[bx * 16 + tx] = a[bx * 16 + tx] % b[bx * 16 + tx]
            t[bx * 16 + tx] = T.fmod(a[bx * 16 + tx], b[bx * 16 + tx])
''')
    if "float64" not in device.info.features:
        with pytest.raises(vkir.UnsupportedError):
            vkir.build(f)
        return
    out = [np.zeros(n, np.float64) for _ in range(3)]
    vkir.build(f)(a, b, *out)
    with np.errstate(all="ignore"):
        want = (np.floor_divide(a, b), np.remainder(a, b), np.fmod(a, b))
    keep = _promised(device, a, b, *want)
    for name, got, exp in zip(("//", "%", "fmod"), out, want):
        same = (got.view(np.uint64) == exp.view(np.uint64)) | (np.isnan(got) & np.isnan(exp))
        bad = np.flatnonzero(~same & keep)
        assert bad.size == 0, (f"{a[bad[0]]!r} {name} {b[bad[0]]!r}: device {got[bad[0]]!r}, "
                               f"numpy {exp[bad[0]]!r} ({bad.size} differ)")


def _promised(device, *arrays) -> np.ndarray:
    """The elements the bit-for-bit promise covers: all, except denormal operands and results
    on a driver that flushes float64 denormals (docs/semantics.md)."""
    keep = np.ones(len(arrays[0]), bool)
    if 64 in device.info.float_controls.denorm_preserve or \
            "flushes_denormals" not in device.info.quirks:
        return keep
    tiny = np.finfo(np.float64).tiny
    for x in arrays:
        keep &= ~((x != 0) & (np.abs(x) < tiny))
    return keep


# -- common subexpression elimination on a long sum ----------------------------------------------

def _long_sum(n: int) -> ir.Stmt:
    """A[0] = x*y + A[x + 1] + x*y + A[x + 2] + ... (n terms, a left-deep chain of Adds)."""
    x, y = ir.Var("x", "int32"), ir.Var("y", "int32")
    buf = ir.decl_buffer((64,), "int32", "A")
    e = ir.Mul(x, y)
    for k in range(1, n):
        e = ir.Add(e, ir.Mul(x, y) if k % 2 else
                   ir.BufferLoad(buf, (ir.Add(x, ir.IntImm("int32", k % 7)),)))
    return ir.BufferStore(buf, e, (ir.IntImm("int32", 0),))


def _python_calls(fn, *args) -> int:
    """How many Python functions (and generator steps) `fn(*args)` runs: its work, counted."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return count


def test_cse_work_grows_linearly_with_a_sum():
    body_200, body_400 = _long_sum(200), _long_sum(400)
    small = _python_calls(eliminate, body_200, False)
    large = _python_calls(eliminate, body_400, False)
    # (it was quadratic in calls and cubic in time: 343 calls per term at 200, 592 at 400)
    assert large <= 2.1 * small
    assert large < 150 * 400


def test_cse_of_a_1600_term_sum_binds_the_repeated_product():
    out = eliminate(_long_sum(1600), False)
    assert isinstance(out, ir.LetStmt) and out.var.name == "cse_v1"
    assert isinstance(out.value, ir.Mul)
    uses = sum(1 for n in ir.walk(out.body) if n is out.var)
    assert uses == 801  # the first term and every odd one


def _distinct_sum(n: int) -> ir.Stmt:
    """A[0] = x*y + A[1] + x*y + A[3] + ... (n terms, the loads all different)."""
    x, y = ir.Var("x", "int32"), ir.Var("y", "int32")
    buf = ir.decl_buffer((4096,), "int32", "A")
    e = ir.Mul(x, y)
    for k in range(1, n):
        e = ir.Add(e, ir.Mul(x, y) if k % 2 else ir.BufferLoad(buf, (ir.IntImm("int32", k),)))
    return ir.BufferStore(buf, e, (ir.IntImm("int32", 0),))


def _peak_bytes(fn, *args) -> int:
    """The most memory `fn(*args)` held at once (Python allocations)."""
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_cse_with_equivalent_terms_holds_memory_linear_in_a_sum():
    # every prefix of a sum of n different terms normalized was a polynomial of up to n terms
    # (it grew 3.9 times from 300 to 600 terms)
    small = _peak_bytes(eliminate, _distinct_sum(300), True)
    large = _peak_bytes(eliminate, _distinct_sum(600), True)
    assert large <= 2.8 * small
