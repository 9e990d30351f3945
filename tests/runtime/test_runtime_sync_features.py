"""Device features for atomics and subgroups: DeviceInfo reports them in the codegen target's
vocabulary (lavapipe has int64 and float32 atomics, and every subgroup class vkir uses), and
kernels built for the device get exactly the features it reported."""

import pytest

import vkir
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

    k = vkir.build(argmax, device=device)
    assert SYNC_FEATURES & device.info.features <= k.target.features
    assert "OpCapability Int64Atomics" in k.asm
