"""A driver's quirks depend on its release: llvmpipe's functional bugs (measured on Mesa 22.3.6)
are gone in Mesa 25.0 (measured on 25.0.7), so vkir works around them only before it; a driver
text that names no release gets every quirk of its driver. On the device at hand each of those
quirks is confirmed: a kernel built without the workarounds misbehaves exactly where the device
lists the quirk."""

import subprocess
import sys
import textwrap
from dataclasses import replace

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.driver.loop_cut import needs_checks
from vkir.lowering import pipeline
from vkir.quirks import (BROADCAST_FIRST_FLOAT_CRASH, INT64_SIGNED_COMPARE, LAVAPIPE,
                         LOOP_TRIP_LIMIT, MEMORY_BARRIER_ENDS_LOOPS, NUM_SUBGROUPS_PARTIAL,
                         STORAGE_LOADS_PER_LANE, SUBGROUPS_SPLIT_ROWS, driver_release,
                         quirks_of)
from vkir.runtime.info import DeviceInfo, Limits
from vkir.target import Target

LLVMPIPE = "llvmpipe (LLVM 15.0.6, 256 bits)"
MESA_22 = "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"
MESA_25 = "llvmpipe Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)"
GONE_IN_25 = {LOOP_TRIP_LIMIT, NUM_SUBGROUPS_PARTIAL, INT64_SIGNED_COMPARE,
              BROADCAST_FIRST_FLOAT_CRASH, SUBGROUPS_SPLIT_ROWS, MEMORY_BARRIER_ENDS_LOOPS}


def test_the_release_is_read_from_the_driver_text():
    assert driver_release(MESA_25) == (25, 0, 7)
    assert driver_release(MESA_22) == (22, 3, 6)
    assert driver_release("llvmpipe Mesa 24.1") == (24, 1)
    assert driver_release("SwiftShader driver") is None and driver_release("") is None


def test_llvmpipe_quirks_hold_before_mesa_25_only():
    assert quirks_of(LLVMPIPE, MESA_22) == GONE_IN_25 | {STORAGE_LOADS_PER_LANE} == LAVAPIPE
    assert quirks_of(LLVMPIPE, "llvmpipe Mesa 24.3.4") == LAVAPIPE   # not measured: kept
    # storage-buffer loads still run lane by lane in 25.0: texel reads stay
    assert quirks_of(LLVMPIPE, MESA_25) == {STORAGE_LOADS_PER_LANE}
    assert quirks_of(LLVMPIPE, "llvmpipe Mesa 26.1.0") == {STORAGE_LOADS_PER_LANE}
    assert quirks_of(LLVMPIPE, "") == LAVAPIPE   # no release named: every quirk


def _mesa25_info() -> DeviceInfo:
    """The DeviceInfo of Mesa 25.0.7's lavapipe (its limits abridged)."""
    return DeviceInfo(name=LLVMPIPE, kind="cpu", driver=MESA_25, api_version="1.4.305",
                      limits=Limits(max_workgroup_size=(1024, 1024, 1024),
                                    max_workgroup_invocations=1024,
                                    max_workgroup_count=(65535, 65535, 65535),
                                    max_shared_memory_bytes=32768, max_push_constant_bytes=256,
                                    max_storage_buffer_range=1 << 27,
                                    min_storage_buffer_offset_alignment=16,
                                    non_coherent_atom_size=64, timestamp_period_ns=1.0,
                                    max_memory_allocation_count=(1 << 32) - 1),
                      features=frozenset(), index=0, subgroup_size=8,
                      subgroup_operations=frozenset(), unified_memory=True,
                      quirks=quirks_of(LLVMPIPE, MESA_25))


def test_a_newer_llvmpipe_gets_no_loop_budget():
    """Through the DeviceInfo of a Mesa 25 lavapipe: its target neither splits long loops nor
    checks loops for a cut."""
    info = _mesa25_info()
    target = Target.from_device(info)
    assert LOOP_TRIP_LIMIT not in target.quirks
    assert "SplitLongLoops" not in [p.name for p in pipeline(target).passes]
    assert not needs_checks(DATA_LOOP, target.quirks) and needs_checks(DATA_LOOP, LAVAPIPE)
    old = Target.from_device(replace(info, driver=MESA_22, quirks=quirks_of(LLVMPIPE, MESA_22)))
    assert "SplitLongLoops" in [p.name for p in pipeline(old).passes]


DATA_LOOP = vkir.from_script('''
@T.prim_func
def data_loop(a: T.Buffer((64,), "int32"), n: T.Buffer((1,), "int32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        s = 0
        for j in T.serial(n[0]):
            s += 1
        a[tx] = s
''')


@T.prim_func
def int64_guard(a: T.Buffer((64,), "int32")):
    for tx in T.thread_binding(T.int64(64), "threadIdx.x"):
        if tx < T.int64(32):
            a[tx] = 1


def row_sums(width: int, rows: int):
    """Subgroup sums in a workgroup of `rows` rows of `width` invocations."""
    n = width * rows
    return vkir.from_script(f'''
@T.prim_func
def row_sums(x: T.Buffer(({n},), "int32"), y: T.Buffer(({n},), "int32")):
    for ty in T.thread_binding({rows}, "threadIdx.y"):
        for tx in T.thread_binding({width}, "threadIdx.x"):
            y[ty * {width} + tx] = T.subgroup_add(x[ty * {width} + tx])
''')


@T.prim_func
def subgroup_count(out: T.Buffer((12,), "int32")):
    for tx in T.thread_binding(12, "threadIdx.x"):
        out[tx] = T.num_subgroups()


@pytest.fixture
def plain(device, monkeypatch):
    """The device with its quirks and their workarounds taken away; the quirks it listed."""
    listed = device.info.quirks
    monkeypatch.setattr(device, "info", replace(device.info, quirks=frozenset()))
    return device, listed


def test_the_loop_limit_is_listed_where_the_driver_cuts(plain):
    device, listed = plain
    a = np.zeros(64, np.int32)
    vkir.build(DATA_LOOP, device=device)(a, np.array([200_000], np.int32))
    assert (LOOP_TRIP_LIMIT in listed) == (a[0] != 200_000), a[0]   # 65535 where cut


def test_the_int64_compare_quirk_is_listed_where_compares_fail(plain):
    device, listed = plain
    a = np.zeros(64, np.int32)
    if "int64" not in device.info.features:   # emulated in 32-bit words: the quirk cannot arise
        vkir.build(int64_guard, device=device)(a)
        assert INT64_SIGNED_COMPARE not in listed and a.sum() == 32, a
        return
    vkir.build(int64_guard, device=device)(a)
    assert (INT64_SIGNED_COMPARE in listed) == (a.sum() != 32), a


def test_the_row_quirk_is_listed_where_subgroups_split_rows(plain):
    device, listed = plain
    size = device.info.subgroup_size
    width = max(size // 2, 1)    # rows of half a subgroup: a subgroup spans two rows
    x = np.arange(4 * width, dtype=np.int32) * 7 + 1
    y = np.zeros_like(x)
    vkir.build(row_sums(width, 4), device=device)(x, y)
    linear = x.reshape(-1, size).sum(axis=1).repeat(size)
    assert (SUBGROUPS_SPLIT_ROWS in listed) == (not np.array_equal(y, linear)), y


def test_the_subgroup_count_quirk_is_listed_where_a_partial_subgroup_is_missed(plain):
    device, listed = plain
    out = np.zeros(12, np.int32)
    vkir.build(subgroup_count, device=device)(out)
    want = -(-12 // device.info.subgroup_size)
    assert (NUM_SUBGROUPS_PARTIAL in listed) == (out != want).any(), out


def test_the_broadcast_crash_is_listed_where_the_compiler_aborts(device):
    """In a child process: the driver's compiler aborts the whole process."""
    code = textwrap.dedent("""
        from dataclasses import replace
        import numpy as np
        import vkir
        from vkir.runtime import open_device

        first = vkir.from_script('''
        @T.prim_func
        def first(x: T.Buffer((64,), "float32"), y: T.Buffer((64,), "float32")):
            for tx in T.thread_binding(64, "threadIdx.x"):
                acc = T.alloc_buffer((1,), "float32", scope="local")
                acc[0] = T.float32(0)
                for i in T.serial(4):
                    acc[0] = acc[0] + T.subgroup_broadcast_first(x[tx] * x[tx] + T.cast(i, "float32"))
                y[tx] = acc[0]
        ''')

        dev = open_device()
        dev.info = replace(dev.info, quirks=frozenset())
        vkir.build(first, device=dev)(np.ones(64, np.float32), np.zeros(64, np.float32))
        print("ran")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    crashed = run.returncode != 0
    if crashed:
        assert run.returncode < 0 and "LLVM ERROR" in run.stderr, run.stderr[-2000:]
    else:
        assert run.stdout.strip() == "ran", run.stderr[-2000:]
    assert (BROADCAST_FIRST_FLOAT_CRASH in device.info.quirks) == crashed


def test_doctor_names_the_release_the_quirks_are_for():
    from vkir.tools.doctor import quirk_summary

    mesa25 = replace(_mesa25_info(), quirks=quirks_of(LLVMPIPE, MESA_25))
    assert quirk_summary(mesa25) == "worked around for Mesa 25.0.7: storage_loads_per_lane"
    unnamed = replace(mesa25, driver="llvmpipe", quirks=LAVAPIPE)
    assert quirk_summary(unnamed).startswith("worked around for this driver (it names no Mesa")
    assert "loop_trip_limit_65535" in quirk_summary(unnamed)
