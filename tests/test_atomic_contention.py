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
    func = vkir.lower(vkir.from_script(SHARED_ATOMICS.format(op=op, dt=dt)))
    full = Target.lavapipe()
    codegen(func, full)   # lavapipe has every atomic feature
    without = replace(full, features=frozenset(full.features) - {feature})
    with pytest.raises(UnsupportedError, match=f"'{feature}'.*{op}"):
        codegen(func, without)
