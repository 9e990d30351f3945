"""Device features for atomics and subgroups: DeviceInfo reports them in the codegen target's
vocabulary (lavapipe has int64 and float32 atomics, and every subgroup class vkir uses), and
kernels built for the device get exactly the features it reported."""

import pytest

import vkir
from vkir.testing import expect_features
from vkir.spirv import FEATURES

pytestmark = pytest.mark.device

SYNC_FEATURES = {f for f in FEATURES if f.startswith(("atomic_", "subgroup_"))}


def test_lavapipe_reports_atomic_and_subgroup_features(device):
    info = device.info
    assert {f"subgroup_{c}" for c in ("basic", "vote", "arithmetic", "ballot", "shuffle",
                                      "shuffle_relative")} <= info.features
    for cls in ("basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative"):
        assert (f"subgroup_{cls}" in info.features) == (cls in info.subgroup_operations)
    if "llvmpipe" in info.name:
        assert SYNC_FEATURES <= info.features


def test_kernel_target_carries_the_device_features(device):
    from vkir.examples.sync import argmax

    with expect_features(device, "int64", "atomic_int64_buffer"):  # argmax packs into uint64
        k = vkir.build(argmax, device=device)
        assert SYNC_FEATURES & device.info.features <= k.target.features
        assert "OpCapability Int64Atomics" in k.asm


def test_a_device_without_arithmetic_subgroups_refuses_reductions(device):
    import dataclasses

    from vkir.errors import UnsupportedError
    from vkir.examples.sync import subgroup_sum
    from vkir.spirv import codegen
    from vkir.target import Target

    info = dataclasses.replace(device.info,
                               subgroup_operations=device.info.subgroup_operations - {"arithmetic"})
    target = Target.from_device(info)
    assert "subgroup_arithmetic" not in target.features and "subgroup_ballot" in target.features
    with pytest.raises(UnsupportedError, match="subgroup_arithmetic"):
        codegen(vkir.lower(subgroup_sum, target), target)
