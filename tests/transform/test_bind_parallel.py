"""BindParallel and `T.parallel`: the outer parallel nest becomes blockIdx.x/threadIdx.x with a
workgroup size chosen from the target, other parallel loops run serially, `vkir.build` warns
about kernels that run as one invocation, and bound kernels compute what the interpreter does
on the device (with the grid folded where it may exceed the per-dimension limit)."""

import dataclasses
import warnings

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import PerformanceWarning
from vkir.target import Limits, Target
from vkir.testing import check_pass, same_results
from vkir.transform import BindParallel
from vkir.transform.bind_parallel import parallelism, workgroup_size

LAVAPIPE_LIKE = Target(limits=Limits(max_workgroup_size=(1024, 1024, 1024),
                                     max_workgroup_invocations=1024), subgroup_size=8)


@T.prim_func
def nest(a: T.Buffer(("n", "m"), "float32"), b: T.Buffer(("n", "m"), "float32")):
    for i in T.parallel(n):
        for j in T.parallel(1, m):
            b[i, j] = a[i, j] * 2.0


@T.prim_func
def nest_bound(a: T.Buffer(("n", "m"), "float32"), b: T.Buffer(("n", "m"), "float32")):
    for bx in T.thread_binding((n * (m - 1) + 255) // 256, "blockIdx.x"):
        for tx in T.thread_binding(256, "threadIdx.x"):
            linear = bx * 256 + tx
            if linear < n * (m - 1):
                i = linear // (m - 1)
                j = 1 + linear % (m - 1)
                b[i, j] = a[i, j] * 2.0


def test_the_outer_nest_is_bound_to_the_grid():
    check_pass(BindParallel(target=LAVAPIPE_LIKE), nest, nest_bound)
    same_results(nest, nest_bound, seeds=range(2), arguments=lambda seed: [
        np.random.default_rng(seed).random((5, 9), dtype="float32"), np.zeros((5, 9), "float32")])
    assert parallelism(nest) == "parallel" and parallelism(nest_bound) == "threads"


@T.prim_func
def small(a: T.Buffer((10,), "float32")):
    for i in T.parallel(10):
        a[i] = a[i] + 1.0


@T.prim_func
def small_bound(a: T.Buffer((10,), "float32")):
    for bx in T.thread_binding(1, "blockIdx.x", annotations={"chunkable_parallel": 1}):
        for tx in T.thread_binding(16, "threadIdx.x"):
            linear = bx * 16 + tx
            if linear < 10:
                i = linear
                a[i] = a[i] + 1.0


def test_a_constant_extent_gets_a_workgroup_no_larger_than_it_needs():
    check_pass(BindParallel(target=LAVAPIPE_LIKE), small, small_bound)


def test_workgroup_size_from_limits_and_subgroup_size():
    assert workgroup_size(LAVAPIPE_LIKE) == 256
    swiftshader_like = Target(limits=Limits(max_workgroup_size=(256, 256, 64),
                                            max_workgroup_invocations=256), subgroup_size=4)
    assert workgroup_size(swiftshader_like) == 256
    assert workgroup_size(Target()) == 128                      # Vulkan's minimum limits
    odd = dataclasses.replace(Target(), subgroup_size=48)
    assert workgroup_size(odd) == 96                             # a whole number of subgroups
    assert workgroup_size(LAVAPIPE_LIKE, vkir.ir.IntImm("int32", 3)) == 8


@T.prim_func
def inner_parallel(a: T.Buffer((4, 8), "float32")):
    for t in T.serial(4):
        for i in T.parallel(8):
            a[t, i] = a[t, i] + 1.0


@T.prim_func
def inner_serial(a: T.Buffer((4, 8), "float32")):
    for t in T.serial(4):
        for i in T.serial(8):
            a[t, i] = a[t, i] + 1.0


@T.prim_func
def threaded(a: T.Buffer((4, 8), "float32")):
    for t in T.thread_binding(4, "threadIdx.x"):
        for i in T.parallel(8):
            a[t, i] = a[t, i] + 1.0


@T.prim_func
def threaded_serial(a: T.Buffer((4, 8), "float32")):
    for t in T.thread_binding(4, "threadIdx.x"):
        for i in T.serial(8):
            a[t, i] = a[t, i] + 1.0


def test_parallel_loops_that_cannot_be_bound_run_serially():
    check_pass(BindParallel(target=LAVAPIPE_LIKE), inner_parallel, inner_serial)
    check_pass(BindParallel(target=LAVAPIPE_LIKE), threaded, threaded_serial)
    assert parallelism(inner_parallel) == "serial parallel"


def test_parallel_loops_print_parse_and_interpret():
    vkir.assert_structural_equal(vkir.from_script(nest.script()), nest)
    a = np.arange(12, dtype="float32").reshape(3, 4)
    b = np.zeros_like(a)
    vkir.interpret(nest, a, b)
    np.testing.assert_array_equal(b[:, 1:], a[:, 1:] * 2)
    assert not b[:, 0].any()


def test_build_warns_for_a_kernel_that_runs_one_invocation():
    with pytest.warns(PerformanceWarning, match=r"kernel inner_serial runs as a single "
                                                r"invocation: .*T\.parallel\(n\)"):
        vkir.build(inner_serial, device="interp")
    with pytest.warns(PerformanceWarning, match="kernel inner_parallel .* not one outer loop"):
        vkir.build(inner_parallel, device="interp")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerformanceWarning)
        vkir.build(nest, device="interp")
        vkir.build(threaded, device="interp")


def test_lowering_binds_for_the_target():
    lowered = vkir.lower(small, LAVAPIPE_LIKE)
    assert "thread_binding(16" in lowered.script()


@pytest.fixture(scope="module")
def built(_vulkan_device):
    return vkir.build(nest, device=_vulkan_device)


def test_device_values(device, built):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 7)).astype("float32")
    b = np.zeros_like(a)
    built(a, b)
    want = np.zeros_like(a)
    vkir.interpret(nest, a, want)
    np.testing.assert_array_equal(b, want)
    size = workgroup_size(Target.from_device(device))
    assert f"LocalSize {size} 1 1" in built.asm
    # the symbolic grid may exceed 65535 workgroups: codegen folds it over two dimensions
    assert "NumWorkgroups" in built.asm
