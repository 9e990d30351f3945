"""Subgroups are consecutive linear local indices on every driver: llvmpipe forms them from each
row of a workgroup whose x size is not a multiple of the subgroup size (the
"subgroups_split_rows" quirk), so vkir declares such a kernel's workgroup as one row there and
computes threadIdx.x/y from the linear index; other devices keep the 2-D workgroup."""

from dataclasses import replace

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError
from vkir.quirks import LAVAPIPE, SUBGROUPS_SPLIT_ROWS
from vkir.spirv import Target, codegen
from vkir.spirv.tools import disassemble


@T.prim_func
def rows(x: T.Buffer((128,), "int32"), y: T.Buffer((384,), "int32")):
    # a 2 x 2 grid of 4 x 8 workgroups: the workgroup ids keep their axes in a one-row workgroup
    for by in T.thread_binding(2, "blockIdx.y"):
        for bx in T.thread_binding(2, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(4, "threadIdx.x"):
                    i = (by * 2 + bx) * 32 + ty * 4 + tx
                    y[i * 3] = T.subgroup_add(x[i])
                    y[i * 3 + 1] = T.subgroup_invocation_id() * 100 + T.subgroup_id()
                    y[i * 3 + 2] = T.subgroup_shuffle_xor(x[i] * 2 + tx, 5)


@T.prim_func
def rows_plain(x: T.Buffer((32,), "int32"), y: T.Buffer((32,), "int32")):
    for ty in T.thread_binding(8, "threadIdx.y"):
        for tx in T.thread_binding(4, "threadIdx.x"):
            y[ty * 4 + tx] = x[ty * 4 + tx] + ty


def _asm(func, target) -> str:
    return disassemble(codegen(vkir.lower(func), target).words)   # validated by SPIRV-Tools


def test_lavapipe_has_the_quirk_that_codegen_works_around():
    from vkir.spirv.codegen import flat_workgroup

    assert SUBGROUPS_SPLIT_ROWS in LAVAPIPE
    assert flat_workgroup.SUBGROUPS_SPLIT_ROWS_QUIRK == SUBGROUPS_SPLIT_ROWS


def test_with_the_quirk_a_subgroup_kernel_runs_as_one_row():
    quirky = codegen(vkir.lower(rows), Target.lavapipe())
    assert quirky.local_size == (32, 1, 1)
    assert "OpUMod" in disassemble(quirky.words)
    plain = codegen(vkir.lower(rows), replace(Target.lavapipe(), quirks=frozenset()))
    assert plain.local_size == (4, 8, 1)
    assert "LocalSize 4 8 1" in disassemble(plain.words)
    # a kernel without subgroup operations keeps its rows
    assert codegen(vkir.lower(rows_plain), Target.lavapipe()).local_size == (4, 8, 1)


def test_a_row_longer_than_the_device_allows_is_refused():
    lav = Target.lavapipe()
    narrow = replace(lav, limits=replace(lav.limits, max_workgroup_size=(16, 1024, 64)))
    with pytest.raises(UnsupportedError, match="subgroups_split_rows.*maxComputeWorkGroupSize.x = 16"):
        codegen(vkir.lower(rows), narrow)


def test_two_dimensional_subgroups_match_the_interpreter(device, vkir_check):
    x = np.random.default_rng(5).integers(-1000, 1000, 128).astype(np.int32)
    _, got = vkir_check(rows, x, np.zeros(384, np.int32))
    size = device.info.subgroup_size
    lanes = np.arange(128) % 32 % size
    np.testing.assert_array_equal(got[1::3], lanes * 100 + np.arange(128) % 32 // size)
    np.testing.assert_array_equal(got[0::3], x.reshape(-1, size).sum(axis=1).repeat(size))
