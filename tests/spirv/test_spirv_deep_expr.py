"""Codegen stays linear in expression depth on a target with wrap decorations (SPIR-V >= 1.4):
the bounds that prove NoSignedWrap/NoUnsignedWrap are memoized per node (vkir/arith/ranges.py,
vkir.arith.value_range's memo) instead of being recomputed for every subexpression at every level.
The decorations themselves are pinned by the *_lavapipe golden files (test_spirv_golden.py)."""

from __future__ import annotations

import time

import pytest

import vkir
from vkir.arith import value_range
from vkir.ir import Add, IntImm, Let, Var
from vkir.spirv import Target, codegen, disassemble


def _deep_sum(terms: int):
    body = " + ".join(f"A[{k}]" for k in range(terms))
    return vkir.from_script(f'''
def deep(A: T.Buffer(("n",), "int32"), B: T.Buffer((1,), "int32")):
    B[0] = {body}
''')


def test_a_1000_term_sum_compiles_with_wrap_decorations():
    mod = codegen(_deep_sum(1000), Target.lavapipe())  # validated by spirv-val inside codegen
    assert disassemble(mod.words).count("OpIAdd") == 999


@pytest.mark.timing
def test_a_1000_term_sum_compiles_within_a_second():
    func = _deep_sum(1000)
    start = time.perf_counter()
    codegen(func, Target.lavapipe())
    elapsed = time.perf_counter() - start
    assert elapsed < 1.0, f"codegen of a 1000-term sum took {elapsed:.2f} s"


def test_bounded_deep_sum_keeps_its_decorations():
    """Each partial sum of 0 <= tx < 64 stays far from the int32 limits: every OpIAdd (and the
    thread-id arithmetic) is proven not to wrap."""
    terms = " + ".join(["tx"] * 200)
    func = vkir.from_script(f'''
def deep(A: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        A[tx] = {terms}
''')
    text = disassemble(codegen(func, Target.lavapipe()).words)
    assert text.count("OpIAdd") == 199
    assert text.count("NoSignedWrap") >= 199


def test_value_range_memo_matches_a_fresh_analysis_and_respects_lets():
    x, y = Var("x"), Var("y")
    inner = Add(x, IntImm(x.dtype, 1))
    # `inner` means x + 1 for the let's x = 9 inside, and for x in [100, 200] outside
    e = Add(Let(x, IntImm(x.dtype, 9), inner), Add(inner, y))
    env = {x: (100, 200), y: (0, 5)}
    memo: dict = {}
    assert value_range(e, env, memo) == value_range(e, env) == (111, 216)
    assert value_range(inner, env, memo) == (101, 201)
    assert value_range(e, env, memo) == (111, 216)
