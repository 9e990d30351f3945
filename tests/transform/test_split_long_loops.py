"""SplitLongLoops: long serial loops become chunks of unrolled iterations (llvmpipe's shared
65535-iteration loop budget), exactly, for constant and symbolic extents; only targets with the
"loop_trip_limit_65535" quirk get it; and on the device a 10^6-iteration loop counts to 10^6."""

from __future__ import annotations

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.ir import While, structural_equal
from vkir.ir.traversal import walk
from vkir.lowering import pipeline
from vkir.quirks import (
    BROADCAST_FIRST_FLOAT_CRASH, INT64_SIGNED_COMPARE, LOOP_TRIP_LIMIT, MEMORY_BARRIER_ENDS_LOOPS,
    NUM_SUBGROUPS_PARTIAL, STORAGE_LOADS_PER_LANE, SUBGROUPS_SPLIT_ROWS, quirks_of,
)
from vkir.target import Target
from vkir.transform import SplitLongLoops


@T.prim_func
def count_const(a: T.Buffer((1,), "int32")):
    for j in T.serial(1000000):
        a[0] = a[0] + 1


@T.prim_func
def count_n(a: T.Buffer((1,), "int32"), n: T.int32):
    for j in T.serial(n):
        a[0] = a[0] + 1


@T.prim_func
def nest(a: T.Buffer((40,), "int64"), n: T.int32, m: T.int32):
    for i in T.serial(2, n):
        for j in T.serial(m):
            a[(i * 3 + j) % 40] = a[(i * 3 + j) % 40] * T.int64(3) + T.cast(i - j, "int64")


def test_constant_extent_becomes_exact_chunks_without_a_guard():
    @T.prim_func
    def expected(a: T.Buffer((1,), "int32")):
        for j_o in T.serial(15625):
            for j_i in T.unroll(64):
                j = j_o * 64 + j_i
                a[0] = a[0] + 1

    assert structural_equal(SplitLongLoops()(count_const), expected, map_free_vars=True)


def test_symbolic_extent_gets_a_guard_and_a_ceildiv():
    @T.prim_func
    def expected(a: T.Buffer((1,), "int32"), n: T.int32):
        for j_o in T.serial(T.select(n > 0, (n - 1) // 64 + 1, 0)):
            for j_i in T.unroll(64):
                if j_o * 64 + j_i < n:
                    j = j_o * 64 + j_i
                    a[0] = a[0] + 1

    assert structural_equal(SplitLongLoops()(count_n), expected, map_free_vars=True)


def test_short_loops_are_left_alone():
    @T.prim_func
    def short(a: T.Buffer((1,), "int32")):
        for j in T.serial(16384):
            a[0] = a[0] + 1

    assert SplitLongLoops()(short) is short


@pytest.mark.parametrize("factor", [2, 4])
def test_split_nest_computes_what_the_original_computes(factor):
    split = SplitLongLoops(threshold=3, max_factor=factor)(nest)
    assert split is not nest
    for n in range(-1, 12):
        for m in (-2, 0, 1, 3, 5, 8, 9):
            want = np.arange(40, dtype=np.int64)
            got = want.copy()
            vkir.interpret(nest, want, n, m)
            vkir.interpret(split, got, n, m)
            np.testing.assert_array_equal(got, want)


def test_only_targets_with_the_quirk_split_loops():
    names = [p.name for p in pipeline(Target.lavapipe()).passes]
    assert names[-1] == "SplitLongLoops"
    assert "SplitLongLoops" not in [p.name for p in pipeline(Target.vulkan("vulkan1.3")).passes]
    assert "SplitLongLoops" not in [p.name for p in pipeline(Target.interp()).passes]


def test_quirk_table_detects_llvmpipe_by_name():
    assert quirks_of("llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe Mesa 22.3.6") == \
        {LOOP_TRIP_LIMIT, NUM_SUBGROUPS_PARTIAL, INT64_SIGNED_COMPARE, STORAGE_LOADS_PER_LANE,
         BROADCAST_FIRST_FLOAT_CRASH, SUBGROUPS_SPLIT_ROWS, MEMORY_BARRIER_ENDS_LOOPS}
    assert LOOP_TRIP_LIMIT not in quirks_of("NVIDIA H100", "NVIDIA 550.54")
    assert quirks_of("NVIDIA H200", "NVIDIA 580.159.04") == {"flushes_denormals"}


@pytest.mark.device
def test_device_quirks_and_a_million_iterations(device):
    info = device.info
    assert info.quirks == quirks_of(info.name, info.driver)
    assert Target.from_device(device).quirks == info.quirks
    a = np.zeros(1, np.int32)
    vkir.build(count_const)(a)
    assert a[0] == 1000000
    for n in (1000003, 65536, 7, 0, -3):
        a[:] = 0
        vkir.build(count_n)(a, n)
        assert a[0] == max(n, 0)


@T.prim_func
def third_hit(a: T.Buffer(("n",), "int32"), at: T.Buffer((1,), "int32"), t: T.int32):
    hits = 0
    at[0] = -1
    for i in T.serial(n):
        if a[i] == t:
            hits += 1
        if hits == 3:
            at[0] = i
            break


def test_while_loop_runs_guarded_copies_of_one_body():
    """A while loop runs WHILE_MAX_FACTOR guarded iterations per back edge through an unrolled
    loop over a single body, so the IR stays well formed (each variable bound once) and lowering
    for llvmpipe passes the checkers."""
    from vkir.analysis import verify_well_formed
    from vkir.ir import stmt as S
    from vkir.ir.traversal import walk
    from vkir.transform.split_long_loops import WHILE_MAX_FACTOR

    split = SplitLongLoops()(third_hit)
    verify_well_formed(split)
    loops = [n for n in walk(split.body) if isinstance(n, S.While)]
    assert len(loops) == 1
    copies = loops[0].body
    assert isinstance(copies, S.For) and copies.kind == "unrolled"
    assert copies.extent.value == WHILE_MAX_FACTOR
    assert isinstance(copies.body, S.IfThenElse)
    assert structural_equal(copies.body.condition, loops[0].condition)
    original = [n for n in walk(third_hit.body) if isinstance(n, S.While)][0]
    assert structural_equal(copies.body.then_case, original.body)
    lowered = vkir.lower(third_hit, Target.lavapipe())   # checks types and well-formedness
    assert any(isinstance(n, S.While) for n in walk(lowered.body))
    a = np.arange(100000, dtype=np.int32) % 1000
    at = np.zeros(1, np.int32)
    vkir.interpret(split, a, at, 7)
    assert at[0] == 2007


def test_a_while_loop_with_an_atomic_condition_is_not_split():
    """Each copy of a split while loop evaluates its condition again: an atomic there would run
    more often (50 iterations counted 52 on lavapipe)."""
    f = vkir.from_script('''
@T.prim_func
def atomic_while(a: T.Buffer((1,), "int32"), n: T.Buffer((1,), "int32")):
    while T.atomic_add(a[0], 1) < n[0] - 1:
        pass
''')
    assert SplitLongLoops()(f) is f
    assert SplitLongLoops(factor=16, only=frozenset(
        n for n in walk(f.body) if isinstance(n, While)))(f) is f


def test_a_constant_loop_the_chunk_covers_is_unrolled_whole():
    f = vkir.from_script('''
@T.prim_func
def three(a: T.Buffer((1,), "int32")):
    for j in T.serial(3):
        a[0] = a[0] + 1
''')
    out = SplitLongLoops(factor=4, only=frozenset({f.body.loop_var}))(f)
    assert out.body.kind == "unrolled" and out.body.extent.value == 3
