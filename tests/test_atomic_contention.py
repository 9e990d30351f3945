"""Atomics under contention do what docs/semantics.md defines on every driver (found sound on
lavapipe and SwiftShader by benchmarks/atomic_sweep.py): the final value, the old values of adds
forming one chain from the initial to the final value, exactly one compare-exchange winner; and a
target without an atomic's feature refuses it with an UnsupportedError naming that feature."""

from dataclasses import replace

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError
from vkir.spirv import Target, codegen

N = 128


@T.prim_func
def contend(v: T.Buffer((N,), "uint32"), total: T.Buffer((2,), "uint32"),
            olds: T.Buffer((N,), "uint32"), wins: T.Buffer((N,), "uint32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for ty in T.thread_binding(4, "threadIdx.y"):
            for tx in T.thread_binding(16, "threadIdx.x"):
                i = bx * 64 + ty * 16 + tx
                olds[i] = T.atomic_add(total[0], v[i])
                wins[i] = T.atomic_compare_exchange(total[1], T.uint32(7), v[i])


@pytest.fixture(scope="module")
def kernel(_vulkan_device):
    return vkir.build(contend, device=_vulkan_device)


def test_contended_add_and_compare_exchange_keep_their_contract(kernel):
    v = (np.random.default_rng(2).permutation(N) + 1).astype(np.uint32)   # distinct
    total = np.array([1000, 7], np.uint32)
    olds, wins = np.zeros(N, np.uint32), np.zeros(N, np.uint32)
    kernel(v, total, olds, wins)
    assert total[0] == 1000 + v.sum()
    order = np.argsort(olds)   # the adds' order: each saw the sum of those before it
    chain = 1000 + np.concatenate([[0], np.cumsum(v[order])[:-1]])
    np.testing.assert_array_equal(olds[order], chain)
    winner = np.flatnonzero(wins == 7)
    assert winner.size == 1 and total[1] == v[winner[0]]
    assert (np.delete(wins, winner) == total[1]).all()


SHARED_ATOMICS = """
@T.prim_func
def k(v: T.Buffer((64,), "{dt}"), out: T.Buffer((1,), "{dt}")):
    s = T.alloc_buffer((1,), "{dt}", scope="shared")
    for tx in T.thread_binding(64, "threadIdx.x"):
        if tx == 0:
            s[0] = v[0]
        T.barrier()
        T.{op}(s[0], v[tx])
        T.barrier()
        if tx == 0:
            out[0] = s[0]
"""


@pytest.mark.parametrize("op, dt, feature", [
    ("atomic_add", "float32", "atomic_float32_add_shared"),
    ("atomic_max", "float32", "atomic_float32_minmax_shared"),
    ("atomic_min", "int64", "atomic_int64_shared"),
])
def test_a_target_without_the_feature_refuses_naming_it(op, dt, feature):
    full = Target.lavapipe()   # lowered for it: int64 stays native (no EmulateInt64)
    func = vkir.lower(vkir.from_script(SHARED_ATOMICS.format(op=op, dt=dt)), full)
    codegen(func, full)   # lavapipe has every atomic feature
    without = replace(full, features=frozenset(full.features) - {feature})
    with pytest.raises(UnsupportedError, match=f"'{feature}'.*{op}"):
        codegen(func, without)


@T.prim_func
def float_min_max(lo: T.Buffer((8,), "float32"), hi: T.Buffer((8,), "float32"),
                  v: T.Buffer((64,), "float32"), olds: T.Buffer((128,), "float32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            olds[i] = T.atomic_min(lo[i % 8], v[i])
            olds[64 + i] = T.atomic_max(hi[i % 8], v[i])


def test_float_min_and_max_on_buffers_are_t_min_and_t_max_on_every_driver(device):
    """Compare-exchange loops give T.min/T.max's meaning (NaN wins, ties take the operand)
    where the device's OpAtomicFMin/FMaxEXT leave it undefined, under contention (8 invocations
    per element, 2 workgroups); lavapipe lost updates when the loop's compare-exchange itself
    carried AcquireRelease semantics."""
    rng = np.random.default_rng(7)
    v = rng.integers(-50, 50, 64).astype(np.float32)
    v[[3, 17]] = np.nan                       # elements 3 and 1 see a NaN operand
    v[4::8] = [-0.0, 0.0] * 4                 # element 4: signed zeros only
    lo = np.array([60, 60, 60, 60, 0.0, 60, 60, 60], np.float32)
    hi = np.array([-60, -60, -60, -60, -0.0, -60, -60, -60], np.float32)
    lo_got, hi_got, olds = lo.copy(), hi.copy(), np.zeros(128, np.float32)
    vkir.build(float_min_max, device=device)(lo_got, hi_got, v, olds)   # olds: order-dependent
    assert np.isnan(lo_got[[1, 3]]).all() and np.isnan(hi_got[[1, 3]]).all()
    # element 4: T.min/T.max of the zeros in the order the device took them is a zero; the
    # sign depends on that order, so only the value is defined here
    assert lo_got[4] == 0 and hi_got[4] == 0
    ordered = [0, 2, 5, 6, 7]   # element 4 holds signed zeros, 1 and 3 NaN
    np.testing.assert_array_equal(lo_got[ordered], [v[j::8].min() for j in ordered])
    np.testing.assert_array_equal(hi_got[ordered], [v[j::8].max() for j in ordered])
