"""T.subgroup_barrier(): TVM's warp-level sync (`tvm_storage_sync("warp")`) in vkir. It prints and
parses back, validates as OpControlBarrier with Subgroup scope, orders shared-memory writes
within a subgroup on the device, and the interpreter's race checker does not take it for a
workgroup barrier."""

import numpy as np
import pytest

import vkir
from vkir.interpreter.errors import DataRaceError
from vkir.ir import stmt as S
from vkir.ir.traversal import walk

SWAP = vkir.from_script('''
@T.prim_func
def pair_swap(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = T.alloc_buffer((64,), "float32", scope="shared")
        s[tx] = a[tx]
        T.subgroup_barrier()
        b[tx] = s[T.bitwise_xor(tx, 1)]
''')


def test_subgroup_barrier_round_trips_and_validates():
    assert [type(n) for n in walk(SWAP.body) if isinstance(n, S.SubgroupBarrier)] == \
        [S.SubgroupBarrier]
    assert "T.subgroup_barrier()" in SWAP.script()
    vkir.assert_structural_equal(vkir.from_script(SWAP.script()), SWAP)
    assert vkir.spirv.codegen(vkir.lower(SWAP), vkir.spirv.Target()).words   # spirv-val ran


def test_neighbours_in_a_subgroup_exchange_through_shared_memory(device):
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    k = vkir.build(SWAP)
    k(a, b)
    np.testing.assert_array_equal(b, a.reshape(32, 2)[:, ::-1].ravel())
    barriers = [line for line in k.asm.splitlines() if "OpControlBarrier" in line]
    assert len(barriers) == 1 and barriers[0].split()[1:3] == ["%uint_3", "%uint_3"]  # Subgroup


def test_the_race_checker_does_not_take_it_for_a_workgroup_barrier():
    a = np.arange(64, dtype=np.float32)
    with pytest.raises(DataRaceError):
        vkir.interpret(SWAP, a, np.zeros(64, np.float32))
    b = np.zeros(64, np.float32)
    vkir.interpret(SWAP, a, b, check_races=False)
    np.testing.assert_array_equal(b, a.reshape(32, 2)[:, ::-1].ravel())
