"""Subgroup sizes are pinned, never assumed: a kernel with subgroup operations is created with the
subgroup size it was built for (or refused), and `Kernel.subgroup_size` says which one it runs
with. Runs on every driver the suite runs on."""

from types import SimpleNamespace

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError
from vkir.ops.norm import softmax_kernel
from vkir.runtime import SubgroupRequirement, subgroup_requirement


def fake_device(low, high, *control):
    return SimpleNamespace(name="Test GPU", subgroup_size_range=(low, high),
                           subgroup_size_control=frozenset(control))


def test_a_size_the_device_can_pin_is_required_with_full_subgroups_where_possible():
    info = fake_device(8, 64, "subgroup_size_control", "compute_full_subgroups")
    assert subgroup_requirement(info, 32, 256, "kernel k") == SubgroupRequirement(32, True)
    assert subgroup_requirement(info, 32, 100, "kernel k") == SubgroupRequirement(32, False)
    no_full = fake_device(8, 64, "subgroup_size_control")
    assert subgroup_requirement(no_full, 16, 256, "kernel k") == SubgroupRequirement(16, False)


def test_a_fixed_size_needs_no_request():
    assert subgroup_requirement(fake_device(32, 32), 32, 64, "kernel k") is None


def test_a_size_outside_the_range_is_refused():
    with pytest.raises(UnsupportedError, match=r"kernel k is built for subgroup size 64, but "
                                               r"Test GPU runs subgroups of 8 to 32 invocations"):
        subgroup_requirement(fake_device(8, 32, "subgroup_size_control"), 64, 64, "kernel k")
    with pytest.raises(UnsupportedError, match="runs subgroups of 32 invocations"):
        subgroup_requirement(fake_device(32, 32), 16, 64, "kernel k")


def test_a_varying_size_without_size_control_is_refused():
    with pytest.raises(UnsupportedError, match="may run any size from 8 to 64 and offers no "
                                               "subgroup size control"):
        subgroup_requirement(fake_device(8, 64), 32, 64, "kernel k")


@T.prim_func
def subgroup_sums(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for i in T.thread_binding(64, "threadIdx.x"):
        b[i] = T.subgroup_add(a[i])


@T.prim_func
def plain(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for i in T.thread_binding(64, "threadIdx.x"):
        b[i] = a[i] * T.float32(2)


@pytest.mark.device
def test_kernel_with_subgroup_operations_runs_with_the_pinned_size():
    dev = vkir.device()
    k = vkir.build(subgroup_sums)
    assert k.module.uses_subgroups
    assert k.subgroup_size == dev.info.subgroup_size
    requirement = k.pipeline.key[-1]
    control = dev.info.subgroup_size_control
    if "subgroup_size_control" in control:
        assert requirement == SubgroupRequirement(k.subgroup_size, "compute_full_subgroups" in control)
    a = np.arange(64, dtype=np.float32)
    got = np.zeros(64, np.float32)
    k(a, got)
    want = np.zeros(64, np.float32)
    vkir.interpret(subgroup_sums, a, want, subgroup_size=k.subgroup_size)
    np.testing.assert_array_equal(got, want)
    size = k.subgroup_size
    np.testing.assert_array_equal(got, np.repeat(a.reshape(-1, size).sum(axis=1), size))


@pytest.mark.device
def test_kernel_without_subgroups_reports_the_device_default_and_pins_nothing():
    dev = vkir.device()
    k = vkir.build(plain)
    assert not k.module.uses_subgroups
    assert k.subgroup_size == dev.info.subgroup_size
    assert not any(isinstance(part, SubgroupRequirement) for part in k.pipeline.key)


@pytest.mark.device
def test_a_schedule_built_for_another_subgroup_size_is_refused_not_wrong():
    """A softmax scheduled for twice the device's subgroup size used to sum every row to 2.0."""
    dev = vkir.device()
    size = dev.info.subgroup_size
    low, high = dev.info.subgroup_size_range
    wrong = softmax_kernel(4, 8 * size, subgroup=True, subgroup_size=2 * high, w=4 * high)
    assert wrong.attrs["subgroup_size"] == 2 * high
    with pytest.raises(UnsupportedError, match=f"built for subgroup size {2 * high}"):
        vkir.build(wrong)
    right = softmax_kernel(4, 8 * size, subgroup=True, subgroup_size=size, w=4 * size)
    k = vkir.build(right)
    assert k.subgroup_size == size
    x = np.random.default_rng(0).standard_normal((4, 8 * size)).astype(np.float32)
    y = np.zeros_like(x)
    k(x, y)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-5)
