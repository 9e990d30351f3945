"""Workgroups interpreted together (vkir.interpreter.merge): the same results, the same errors
and the same race reports as one workgroup after another, much faster on grids of many small
workgroups."""

import sys

import numpy as np
import pytest

import vkir
from vkir.interpreter import DataRaceError, OutOfBoundsError
from vkir.interpreter.merge import merge_plan

interp_module = sys.modules["vkir.interpreter.execution"]

VADD = vkir.from_script('''
@T.prim_func
def vadd(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"), c: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            if bx * 64 + tx < n:
                c[bx * 64 + tx] = a[bx * 64 + tx] + b[bx * 64 + tx]
''')

GRID_2D = vkir.from_script('''
@T.prim_func
def scale(a: T.Buffer((40, 72), "int32")):
    for by in T.thread_binding(5, "blockIdx.y"):
        for bx in T.thread_binding(9, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    acc = T.alloc_buffer((2,), "int32", scope="local")
                    acc[0] = by * 8 + ty
                    acc[1] = bx * 8 + tx
                    if acc[1] % 3 == 0:
                        acc[0] = acc[0] * 1000
                    a[by * 8 + ty, bx * 8 + tx] = acc[0] + acc[1]
''')

RACY = vkir.from_script('''
@T.prim_func
def racy(a: T.Buffer((64,), "int32")):
    for bx in T.thread_binding(8, "blockIdx.x"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            a[(bx * 8 + tx) % 60] = bx
''')

OUT_OF_BOUNDS = vkir.from_script('''
@T.prim_func
def oob(a: T.Buffer((100,), "int32"), b: T.Buffer((100,), "int32")):
    for bx in T.thread_binding(8, "blockIdx.x"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            b[bx * 16 + tx] = 1
            a[bx * 16 + tx] = 2
''')

BARRIER = vkir.from_script('''
@T.prim_func
def shifted(a: T.Buffer((64,), "int32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        s = T.alloc_buffer((16,), "int32", scope="shared")
        for tx in T.thread_binding(16, "threadIdx.x"):
            s[tx] = a[bx * 16 + tx]
            T.barrier()
            a[bx * 16 + tx] = s[(tx + 1) % 16]
''')


def sequential(monkeypatch):
    monkeypatch.setattr(interp_module, "merge_plan", lambda func: None)


def test_plans():
    assert merge_plan(VADD) == ("z", 64, False)
    assert merge_plan(GRID_2D) == ("z", 64, False)
    assert merge_plan(BARRIER) == ("z", 16, True)   # shared rows per workgroup, joint barriers


def _merged_runs(monkeypatch) -> list:
    """Record, for each run of the interpreter, whether it ran workgroups together and whether
    it finished (False: it raised, and the interpreter ran again one workgroup at a time)."""
    runs = []
    real = interp_module._run

    def run(func, args, kwargs, check_races, subgroup_size, denormals, merge, native,
            samplers=None):
        try:
            real(func, args, kwargs, check_races, subgroup_size, denormals, merge, native,
                 samplers)
        except Exception:
            runs.append((merge is not None, False))
            raise
        runs.append((merge is not None, True))
    monkeypatch.setattr(interp_module, "_run", run)
    return runs


def test_workgroups_with_barriers_and_shared_memory_run_together(monkeypatch):
    runs = _merged_runs(monkeypatch)
    a = np.arange(64, dtype=np.int32)
    vkir.interpret(BARRIER, a)
    assert runs == [(True, True)]
    np.testing.assert_array_equal(a, np.roll(np.arange(64).reshape(4, 16), -1, axis=1).ravel())


CROSS_BARRIER = vkir.from_script('''
@T.prim_func
def cross(a: T.Buffer((80,), "int32"), b: T.Buffer((64,), "int32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(16, "threadIdx.x"):
            a[bx * 16 + tx] = bx
            T.barrier()
            b[bx * 16 + tx] = a[bx * 16 + tx + 16]
''')

UNEVEN_BARRIER = vkir.from_script('''
@T.prim_func
def uneven(a: T.Buffer((64,), "int32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        s = T.alloc_buffer((16,), "int32", scope="shared")
        for tx in T.thread_binding(16, "threadIdx.x"):
            s[tx] = tx
            if bx < 2:
                T.barrier()
                a[bx * 16 + tx] = s[15 - tx]
            else:
                a[bx * 16 + tx] = s[tx] * 2
''')

MISSING_BARRIER = vkir.from_script('''
@T.prim_func
def missing(a: T.Buffer((64,), "int32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        s = T.alloc_buffer((16,), "int32", scope="shared")
        for tx in T.thread_binding(16, "threadIdx.x"):
            s[tx] = tx
            T.barrier()
            a[bx * 16 + tx] = s[(tx + 1) % 16]
            s[tx] = 0
''')


@pytest.mark.parametrize("func", [CROSS_BARRIER, MISSING_BARRIER])
def test_barriers_never_order_other_workgroups_or_hide_a_race(monkeypatch, func):
    """A barrier orders the accesses of its own workgroup only: a read of another workgroup's
    element after it races (CROSS_BARRIER), as does a write after the barrier racing a read of
    another invocation (MISSING_BARRIER). The merged run finds each race itself."""
    runs = _merged_runs(monkeypatch)
    shapes = [tuple(d.value for d in func.buffer_map[p].shape) for p in func.params]
    with pytest.raises(DataRaceError) as merged:
        vkir.interpret(func, *[np.zeros(s, np.int32) for s in shapes])
    assert runs == [(True, False), (False, False)]
    sequential(monkeypatch)
    with pytest.raises(DataRaceError) as one_by_one:
        vkir.interpret(func, *[np.zeros(s, np.int32) for s in shapes])
    assert str(merged.value) == str(one_by_one.value)


def test_a_barrier_some_workgroups_skip_runs_one_workgroup_at_a_time(monkeypatch):
    runs = _merged_runs(monkeypatch)
    a = np.zeros(64, np.int32)
    vkir.interpret(UNEVEN_BARRIER, a)
    assert runs == [(True, False), (False, True)]   # the joint barrier check sent it back
    want = np.concatenate([np.arange(15, -1, -1)] * 2 + [np.arange(16) * 2] * 2)
    np.testing.assert_array_equal(a, want)


def test_same_results_as_numpy_and_sequential(monkeypatch):
    n = 10_000 + 3
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    vkir.interpret(VADD, a, b, c)
    np.testing.assert_array_equal(c, a + b)
    merged = np.zeros((40, 72), np.int32)
    vkir.interpret(GRID_2D, merged)
    sequential(monkeypatch)
    one_by_one = np.zeros((40, 72), np.int32)
    vkir.interpret(GRID_2D, one_by_one)
    np.testing.assert_array_equal(merged, one_by_one)
    rows, cols = np.meshgrid(np.arange(40), np.arange(72), indexing="ij")
    np.testing.assert_array_equal(merged, np.where(cols % 3 == 0, rows * 1000, rows) + cols)


@pytest.mark.parametrize("func, error", [(RACY, DataRaceError), (OUT_OF_BOUNDS, OutOfBoundsError)])
def test_errors_and_side_effects_are_those_of_one_workgroup_at_a_time(monkeypatch, func, error):
    arrays = [np.zeros(p_shape, np.int32) for p_shape in
              [tuple(d.value for d in func.buffer_map[p].shape) for p in func.params]]
    with pytest.raises(error) as merged:
        vkir.interpret(func, *arrays)
    sequential(monkeypatch)
    again = [np.zeros_like(a) for a in arrays]
    with pytest.raises(error) as one_by_one:
        vkir.interpret(func, *again)
    assert str(merged.value) == str(one_by_one.value)
    for got, want in zip(arrays, again):
        np.testing.assert_array_equal(got, want)


def test_many_workgroups_run_in_few_steps(monkeypatch):
    """2048 workgroups of 64 invocations: one chunk, where one workgroup at a time takes 2048
    steps (the race checker sees each step begin)."""
    from vkir.interpreter.races import RaceChecker

    steps = []
    enter_block, enter_chunk = RaceChecker.enter_block, RaceChecker.enter_chunk
    monkeypatch.setattr(RaceChecker, "enter_block",
                        lambda self, *a: steps.append("block") or enter_block(self, *a))
    monkeypatch.setattr(RaceChecker, "enter_chunk",
                        lambda self, *a: steps.append("chunk") or enter_chunk(self, *a))
    n = 1 << 17
    a = np.ones(n, np.float32)
    c = np.zeros(n, np.float32)
    vkir.interpret(VADD, a, a, c)
    assert steps == ["chunk"] * 2   # 2^17 invocations in chunks of 2^16
    np.testing.assert_array_equal(c, 2)
    steps.clear()
    sequential(monkeypatch)
    vkir.interpret(VADD, a, a, c)
    assert steps == ["block"] * 2048
