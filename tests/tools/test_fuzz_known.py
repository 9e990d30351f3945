"""The fuzzing campaign's known driver classes (vkir/tools/fuzz/known.py) and its defined
conversions: a mismatch a known driver bug explains is counted by class, not a finding, matched
by its rule on the program and the results (never by program id); generated programs convert a
float to an integer only where the result is defined."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

import vkir
from vkir.ir import Cast, Let
from vkir.ir.traversal import walk
from vkir.tools import fuzz
from vkir.tools.fuzz.bits import same_bits
from vkir.tools.fuzz.known import Case, explain
from vkir.tools.fuzz.programs import convert

LLVMPIPE = SimpleNamespace(name="llvmpipe (LLVM 15.0.6, 256 bits)",
                           driver="llvmpipe Mesa 22.3.6 (LLVM 15.0.6)")
SWIFTSHADER = SimpleNamespace(name="SwiftShader Device (Subzero)", driver="SwiftShader driver")

ZERO_TIMES = '''
@T.prim_func
def zero_times(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"),
               C: T.Buffer((8,), "float32")):
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        C[tx] = A[tx] * 0.0 + B[tx]
'''
A = np.array([-1, np.inf, np.nan, 2, -0.0, 3, -np.inf, 1], np.float32)
B = np.array([1, 1, 1, 1, -0.0, -0.0, -0.0, -0.0], np.float32)
# what IEEE (the interpreter) gives, and what llvmpipe (Mesa 22.3.6) computes: x * 0.0 -> 0.0,
# then 0.0 + y -> y
IEEE = np.array([1, np.nan, np.nan, 1, -0.0, 0.0, np.nan, 0.0], np.float32)
FOLDED = B.copy()


def _case(source, got, inputs=(A, B), subgroup_size=32):
    func = vkir.from_script(source)
    out = np.zeros(8, np.float32)
    return Case(func, [*inputs, out], [*inputs, np.asarray(got, np.float32)], subgroup_size)


def test_the_interpreter_gives_ieee():
    c = np.zeros(8, np.float32)
    vkir.interpret(vkir.from_script(ZERO_TIMES), A, B, c)
    assert same_bits(c, IEEE) and not same_bits(c, FOLDED)


def test_a_fold_of_x_times_zero_is_the_llvmpipe_class():
    assert explain(_case(ZERO_TIMES, FOLDED), LLVMPIPE) == "llvmpipe-zero-fold"
    # folded in some lanes only ("in some expression shapes"): each lane is one of the two
    some = np.where(np.arange(8) < 4, FOLDED, IEEE)
    assert explain(_case(ZERO_TIMES, some), LLVMPIPE) == "llvmpipe-zero-fold"


def test_other_differences_are_new_findings():
    wrong = FOLDED.copy()
    wrong[3] = 2.0   # neither IEEE's 1 nor the fold's
    assert explain(_case(ZERO_TIMES, wrong), LLVMPIPE) is None
    assert explain(_case(ZERO_TIMES, FOLDED), SWIFTSHADER) is None   # not SwiftShader's bug
    no_zero = ZERO_TIMES.replace("* 0.0", "* 1.0")
    assert explain(_case(no_zero, FOLDED), LLVMPIPE) is None   # nothing to fold


def test_a_zero_the_driver_knows_is_folded_too():
    """T.cast(tx, "float32") in a workgroup of one invocation is the constant 0.0 to llvmpipe,
    through a let binding and a select too."""
    source = '''
@T.prim_func
def known_zero(A: T.Buffer((1,), "float32"), B: T.Buffer((1,), "float32"),
               C: T.Buffer((1,), "float32")):
    for tx in T.thread_binding(1, thread="threadIdx.x"):
        C[0] = A[0] * T.cast(T.let(v := T.cast(tx, "float32"), T.select(v < 1.0, v, 0.0)),
                             "float32")
'''
    inputs = (np.array([np.inf], np.float32), np.zeros(1, np.float32))
    func = vkir.from_script(source)
    case = Case(func, [*inputs, np.zeros(1, np.float32)],
                [*inputs, np.zeros(1, np.float32)], 32)
    assert explain(case, LLVMPIPE) == "llvmpipe-zero-fold"


def test_zero_minus_x_folded_to_minus_x_is_known():
    """llvmpipe computes 0.0 - x as -x: 0.0 - 0.0 gives -0.0, not 0.0."""
    source = ZERO_TIMES.replace("A[tx] * 0.0 + B[tx]", "0.0 - A[tx] * B[tx]")
    a, b = np.array([0, 1, 2, 0, -0.0, 3, 4, 5], np.float32), np.ones(8, np.float32)
    negated = -(a * b)
    assert explain(_case(source, negated, (a, b)), LLVMPIPE) == "llvmpipe-zero-fold"
    assert explain(_case(source, negated + 1, (a, b)), LLVMPIPE) is None


@pytest.mark.parametrize("zero", ["T.ceil(T.cast(tx, \"float32\"))",
                                  "T.select(B[0] > B[0], B[0], T.cast(tx, \"float32\"))"])
def test_zeros_of_rounding_and_self_comparison_are_known_too(zero):
    source = f'''
@T.prim_func
def known_zero(A: T.Buffer((1,), "float32"), B: T.Buffer((1,), "float32"),
               C: T.Buffer((1,), "float32")):
    for tx in T.thread_binding(1, thread="threadIdx.x"):
        C[0] = {zero} * A[0]
'''
    inputs = (np.array([-3.0], np.float32), np.array([np.nan], np.float32))
    case = Case(vkir.from_script(source), [*inputs, np.zeros(1, np.float32)],
                [*inputs, np.zeros(1, np.float32)], 32)   # IEEE: -0.0; the fold: 0.0
    assert explain(case, LLVMPIPE) == "llvmpipe-zero-fold"


def test_float64_to_float16_rounded_twice_is_an_llvmpipe_class():
    source = '''
@T.prim_func
def narrow(A: T.Buffer((3,), "float64"), C: T.Buffer((3,), "float16")):
    for tx in T.thread_binding(3, thread="threadIdx.x"):
        C[tx] = T.cast(A[tx], "float16")
'''
    a = np.array([1304.5 + 2.0**-20, 1 + 2.0**-11 + 2.0**-40, 3.0])
    assert a.astype(np.float16).tolist() == [1305.0, 1.0009765625, 3.0]   # rounded once
    twice = a.astype(np.float32).astype(np.float16)
    assert twice.tolist() == [1304.0, 1.0, 3.0]
    case = Case(vkir.from_script(source), [a, np.zeros(3, np.float16)], [a, twice], 32)
    assert explain(case, LLVMPIPE) == "llvmpipe-float64-to-float16-twice"
    assert explain(case, SWIFTSHADER) is None
    wrong = Case(case.func, case.inputs, [a, np.array([1306, 1, 3], np.float16)], 32)
    assert explain(wrong, LLVMPIPE) is None


def test_flushed_denormals_are_the_swiftshader_class():
    source = '''
@T.prim_func
def halve(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"),
          C: T.Buffer((8,), "float32")):
    for tx in T.thread_binding(8, thread="threadIdx.x"):
        C[tx] = A[tx] * 0.5 + B[tx]
'''
    a = np.array([1e-40, -1e-40, 2, 4, 1e-39, 0, 1, 3], np.float32)
    b = np.zeros(8, np.float32)
    flushed = np.where(np.abs(a) < 1e-38, np.float32(0), a * np.float32(0.5))   # +-0 + 0.0
    assert explain(_case(source, flushed, (a, b)), SWIFTSHADER) == "swiftshader-denormal-flush"
    assert explain(_case(source, flushed, (a, b)), LLVMPIPE) is None


@pytest.mark.parametrize("src", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dst", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                 "uint64"])
def test_generated_conversions_are_defined_for_every_value(src, dst):
    """`convert` sends NaN, infinities and values the integer type cannot hold to 0, and
    converts every other value (the largest ones in range included where the float type holds
    them exactly) by truncation."""
    bits = int(dst.lstrip("uint"))
    lo, hi = (-2 ** (bits - 1), 2 ** (bits - 1) - 1) if dst.startswith("int") else (0, 2**bits - 1)
    f = np.dtype(src).type
    candidates = [np.nan, np.inf, -np.inf, 0.5, -0.75, 127.9, -128.9, 255.5, -1.0, 65504.0,
                  -65504.0, 2.0**31, -2.0**31, 2.0**32, 2.0**63, -2.0**63, 2.0**64, 1e300]
    with np.errstate(over="ignore"):
        values = np.array([f(v) for v in candidates], src)
    source = f'''
@T.prim_func
def conv(A: T.Buffer(({len(values)},), "{src}"), C: T.Buffer(({len(values)},), "{dst}")):
    for i in T.serial({len(values)}):
        C[i] = {convert("A[i]", src, dst, 1, "v")}
'''
    out = np.zeros(len(values), dst)
    vkir.interpret(vkir.from_script(source), values, out)
    for v, got in zip(values.tolist(), out.tolist()):
        t = math.trunc(v) if math.isfinite(v) else None
        defined = t is not None and lo <= t <= hi
        if not defined:
            assert got == 0, (src, dst, v, got)
        else:   # (the lowest value may be sent to 0 where the float type rounds its bound up)
            assert got == t or (t == lo and got == 0), (src, dst, v, got)


def test_generated_programs_convert_floats_to_integers_only_through_the_guard():
    for k in range(150):
        source, _, _ = fuzz.program(3, k, mutants=0.0)
        func = vkir.from_script(source)
        for n in walk(func.body):
            if isinstance(n, Cast) and n.value.dtype.is_float and not n.dtype.is_float:
                assert isinstance(n.value, Let), source


WIDE_ZERO_TIMES = '''
@T.prim_func
def zero_times(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"),
               C: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(16, thread="blockIdx.x"):
        for tx in T.thread_binding(64, thread="threadIdx.x"):
            C[bx * 64 + tx] = A[bx * 64 + tx] * 0.0 + B[bx * 64 + tx]
'''


@pytest.mark.device
def test_a_known_class_is_counted_not_a_finding(device):
    """The campaign's inputs hold infinities and NaNs (1024 elements: dozens of them), which
    llvmpipe's x * 0.0 turns into zeros."""
    report = fuzz.run(1, device=device,
                      make_program=lambda seed, index: (WIDE_ZERO_TIMES, frozenset(), False))
    (outcome,) = report.outcomes
    if "llvmpipe" in device.info.name.lower():   # (a later Mesa may compute IEEE's result)
        assert outcome.kind in ("known:llvmpipe-zero-fold", "ok"), outcome.detail
    else:
        assert outcome.kind == "ok", outcome.detail
    assert not report.findings
    assert sum(report.known.values()) == (outcome.kind != "ok")
