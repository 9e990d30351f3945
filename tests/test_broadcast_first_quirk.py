"""A subgroup broadcast-first of a float computed in a loop runs on every driver: llvmpipe's
compiler aborts the process on it (the "broadcast_first_float_crash" quirk), so vkir shuffles the
float from the first active lane there; other devices keep OpGroupNonUniformBroadcastFirst."""

from dataclasses import replace

import numpy as np

import vkir
from vkir import T
from vkir.quirks import BROADCAST_FIRST_FLOAT_CRASH, LAVAPIPE
from vkir.spirv import Target, codegen
from vkir.spirv.tools import disassemble


@T.prim_func
def first_square_sum(x: T.Buffer((256,), "float32"), y: T.Buffer((256,), "float32")):
    for bx in T.thread_binding(4, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            acc = T.alloc_buffer((1,), "float32", scope="local")
            acc[0] = T.float32(0)
            for i in T.serial(16):
                acc[0] = acc[0] + T.subgroup_broadcast_first(
                    x[bx * 64 + tx] * x[bx * 64 + tx] + T.cast(i, "float32"))
            y[bx * 64 + tx] = acc[0]


@T.prim_func
def first_int(x: T.Buffer((64,), "int32"), y: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        y[tx] = T.subgroup_broadcast_first(x[tx] * 2)


def _asm(func, target) -> str:
    return disassemble(codegen(vkir.lower(func), target).words)   # validated by SPIRV-Tools


def test_lavapipe_has_the_quirk_that_codegen_works_around():
    from vkir.spirv.codegen import sync

    assert BROADCAST_FIRST_FLOAT_CRASH in LAVAPIPE
    assert sync.BROADCAST_FIRST_FLOAT_QUIRK == BROADCAST_FIRST_FLOAT_CRASH


def test_with_the_quirk_floats_are_shuffled_from_the_first_lane_and_ints_are_not():
    quirky = _asm(first_square_sum, Target.lavapipe())
    assert "OpGroupNonUniformShuffle %float" in quirky
    assert "OpGroupNonUniformBroadcastFirst %float" not in quirky
    assert "OpGroupNonUniformBroadcastFirst %uint" in quirky   # the lane number
    plain = _asm(first_square_sum, replace(Target.lavapipe(), quirks=frozenset()))
    assert "OpGroupNonUniformBroadcastFirst %float" in plain
    assert "OpGroupNonUniformShuffle" not in plain
    assert "OpGroupNonUniformBroadcastFirst %int" in _asm(first_int, Target.lavapipe())


def test_float_broadcast_first_in_a_loop_matches_the_interpreter(device, vkir_check):
    x = np.random.default_rng(3).standard_normal(256).astype(np.float32)
    _, got = vkir_check(first_square_sum, x, np.zeros(256, np.float32))
    size = device.info.subgroup_size
    firsts = (x[::size] ** 2).repeat(size)[:256]
    want = (firsts[:, None] + np.arange(16, dtype=np.float32)).sum(axis=1, dtype=np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5)
