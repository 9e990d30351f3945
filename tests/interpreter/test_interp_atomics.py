"""Atomics in the interpreter: every operation returns the old value and applies in invocation
order (deterministic), on global and shared buffers; atomics never race with each other, but an
atomic and a plain access of the same element without a barrier between them is a DataRaceError
(also across workgroups, which nothing orders)."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.interpreter import DataRaceError, interpret

rng = np.random.default_rng(12)


def _sequential(op, init, values, expected=None):
    """(final value, old value seen by each update) applying `values` one at a time in order."""
    cur = init
    olds = []
    for k, v in enumerate(values):
        olds.append(cur)
        if op == "compare_exchange":
            cur = v if cur == expected[k] else cur
        else:
            cur = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "min": min, "max": max,
                   "and": lambda a, b: a & b, "or": lambda a, b: a | b,
                   "xor": lambda a, b: a ^ b, "exchange": lambda a, b: b}[op](cur, v)
    return cur, olds


def _kernel(op: str, dtype: str, scope: str):
    """64 invocations update element 0 with v[tx] and record the old values."""
    call = f"T.atomic_{op}(target[0], v[tx])"
    if op == "compare_exchange":
        call = "T.atomic_compare_exchange(target[0], e[tx], v[tx])"
    if scope == "global":
        body = f"""
    for tx in T.thread_binding(64, "threadIdx.x"):
        old[tx] = {call.replace('target', 'acc')}"""
    else:
        body = f"""
    target = T.alloc_buffer((1,), "{dtype}", scope="shared")
    for tx in T.thread_binding(64, "threadIdx.x"):
        if tx == 0:
            target[0] = acc[0]
        T.barrier()
        old[tx] = {call}
        T.barrier()
        if tx == 0:
            acc[0] = target[0]"""
    src = f"""
@T.prim_func
def k(acc: T.Buffer((1,), "{dtype}"), v: T.Buffer((64,), "{dtype}"),
      e: T.Buffer((64,), "{dtype}"), old: T.Buffer((64,), "{dtype}")):{body}
"""
    return vkir.from_script(src)


OPS = ["add", "sub", "min", "max", "and", "or", "xor", "exchange", "compare_exchange"]


@pytest.mark.parametrize("scope", ["global", "shared"])
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
@pytest.mark.parametrize("op", OPS)
def test_atomic_integer_ops_apply_in_invocation_order(op, dtype, scope):
    npdt = np.dtype(dtype)
    info = np.iinfo(npdt)
    lo, hi = (max(info.min, -1000), min(info.max, 1000)) if op not in ("and", "or", "xor") \
        else (0, min(info.max, 1 << 20))
    v = rng.integers(lo, hi, 64, dtype=npdt)
    e = rng.integers(lo, hi, 64, dtype=npdt)
    acc = np.array([rng.integers(lo, hi)], npdt)
    if op == "compare_exchange":
        e[::3] = v[::3]   # some exchanges succeed: expected chained to the previous desired
        for k in range(1, 64, 3):
            e[k] = v[k - 1]
    old = np.zeros(64, npdt)
    want, olds = _sequential(op, int(acc[0]), [int(x) for x in v], [int(x) for x in e])
    interpret(_kernel(op, dtype, scope), acc, v, e, old)
    assert int(acc[0]) == np.array(want).astype(npdt)  # integers wrap like the device's
    assert [int(x) for x in old] == [int(np.array(o).astype(npdt)) for o in olds]


@pytest.mark.parametrize("op", ["add", "min", "max"])
def test_atomic_float32_ops(op):
    v = rng.standard_normal(64).astype(np.float32)
    acc = np.array([0.5], np.float32)
    old = np.zeros(64, np.float32)
    e = np.zeros(64, np.float32)
    interpret(_kernel(op, "float32", "global"), acc, v, e, old)
    cur = np.float32(0.5)
    olds = []
    for x in v:
        olds.append(cur)
        cur = {"add": lambda a, b: np.float32(a + b), "min": min, "max": max}[op](cur, x)
    assert acc[0] == cur
    np.testing.assert_array_equal(old, np.array(olds, np.float32))


@T.prim_func
def histogram(x: T.Buffer((512,), "int32"), h: T.Buffer((8,), "int32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(128, "threadIdx.x"):
            T.atomic_add(h[x[bx * 128 + tx]], 1)


def test_atomics_of_many_workgroups_do_not_race():
    x = rng.integers(0, 8, 512).astype(np.int32)
    h = np.zeros(8, np.int32)
    interpret(histogram, x, h)
    np.testing.assert_array_equal(h, np.bincount(x, minlength=8))


@T.prim_func
def plain_after_atomic(x: T.Buffer((64,), "int32"), h: T.Buffer((4,), "int32"),
                       y: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        T.atomic_add(h[x[tx]], 1)
        y[tx] = h[x[tx]]


@T.prim_func
def plain_after_atomic_barrier(x: T.Buffer((64,), "int32"), h: T.Buffer((4,), "int32"),
                               y: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        T.atomic_add(h[x[tx]], 1)
        T.barrier()
        y[tx] = h[x[tx]]


@T.prim_func
def write_then_atomic(h: T.Buffer((4,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        if tx == 5:
            h[2] = 7
        T.atomic_or(h[2], 1)


@T.prim_func
def cross_workgroup(h: T.Buffer((4,), "int32"), y: T.Buffer((2,), "int32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            if bx == 0:
                T.atomic_add(h[1], 1)
            T.barrier()
            if bx == 1 and tx == 0:
                y[0] = h[1]


def test_plain_read_after_atomic_without_barrier_is_a_race():
    x = np.full(64, 1, np.int32)
    with pytest.raises(DataRaceError, match=r"h\[1\].*updated atomically.*no T.barrier"):
        interpret(plain_after_atomic, x, np.zeros(4, np.int32), np.zeros(64, np.int32))


def test_barrier_orders_atomic_and_plain_read():
    x = rng.integers(0, 4, 64).astype(np.int32)
    y = np.zeros(64, np.int32)
    interpret(plain_after_atomic_barrier, x, np.zeros(4, np.int32), y)
    np.testing.assert_array_equal(y, np.bincount(x, minlength=4)[x])


def test_plain_write_then_atomic_without_barrier_is_a_race():
    with pytest.raises(DataRaceError, match=r"h\[2\].*written by thread \(tx=5\).*updated "
                                            r"atomically"):
        interpret(write_then_atomic, np.zeros(4, np.int32))


def test_atomic_and_plain_access_in_other_workgroups_race():
    with pytest.raises(DataRaceError, match="different workgroups"):
        interpret(cross_workgroup, np.zeros(4, np.int32), np.zeros(2, np.int32))


def test_same_invocation_may_mix_atomic_and_plain_access():
    @T.prim_func
    def own(h: T.Buffer((64,), "int32"), y: T.Buffer((64,), "int32")):
        for tx in T.thread_binding(64, "threadIdx.x"):
            h[tx] = tx
            y[tx] = T.atomic_add(h[tx], 10)
            y[tx] = y[tx] + h[tx]

    h, y = np.zeros(64, np.int32), np.zeros(64, np.int32)
    interpret(own, h, y)
    np.testing.assert_array_equal(h, np.arange(64) + 10)
    np.testing.assert_array_equal(y, 2 * np.arange(64) + 10)


def test_atomic_out_of_bounds_is_reported():
    from vkir.interpreter import OutOfBoundsError

    x = np.full(512, 9, np.int32)
    with pytest.raises(OutOfBoundsError):
        interpret(histogram, x, np.zeros(8, np.int32))


def test_naive_read_modify_write_race_suggests_an_atomic():
    @T.prim_func
    def naive(x: T.Buffer((256,), "int32"), h: T.Buffer((8,), "int32")):
        for bx in T.thread_binding(2, "blockIdx.x"):
            for tx in T.thread_binding(128, "threadIdx.x"):
                h[x[bx * 128 + tx]] += 1

    x = np.full(256, 3, np.int32)
    with pytest.raises(DataRaceError, match=r"h\[3\].*use an atomic, e\.g\. "
                                            r"T\.atomic_add\(h\[\.\.\.\], v\)"):
        interpret(naive, x, np.zeros(8, np.int32))
