"""What identifies a kind of device across machines: `Fingerprint`, made from a DeviceInfo.

Devices with equal fingerprints run the same SPIR-V the same way (same driver build, same limits,
features and quirks), so a fleet checks a kernel once per device but tunes once per fingerprint,
spreads a fingerprint's tuning candidates over all of its devices, and keeps tuning results per
fingerprint in the autotune cache.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["Fingerprint"]


@dataclass(frozen=True)
class Fingerprint:
    """One device's identity: name, PCI vendor and device ids, driver text and version, Vulkan
    version, the subgroup sizes a pipeline may get, the feature names vkir uses (`Target`'s) and
    the driver quirks vkir works around; `kind` is the device type ("cpu", "discrete", ...) and
    `subgroup_size` the size a pipeline gets without asking."""

    name: str
    vendor_id: int
    device_id: int
    driver: str
    driver_version: int
    api_version: str
    subgroup_sizes: tuple
    features: frozenset
    quirks: frozenset
    kind: str = "other"
    subgroup_size: int = 0   # what a pipeline gets without asking (the interpreter emulates it)

    @staticmethod
    def of(info) -> "Fingerprint":
        """The fingerprint of a vkir DeviceInfo."""
        low, high = info.subgroup_size_range
        sizes = tuple(s for s in (1, 2, 4, 8, 16, 32, 64, 128) if low <= s <= high) or (info.subgroup_size,)
        return Fingerprint(info.name, int(info.vendor_id), int(info.device_id), info.driver,
                           int(info.driver_version), info.api_version, sizes,
                           frozenset(info.features), frozenset(info.quirks), info.kind,
                           int(info.subgroup_size))

    @property
    def key(self) -> str:
        """A short stable text naming the fingerprint (actor names, tables, labels)."""
        text = repr((self.name, self.vendor_id, self.device_id, self.driver, self.driver_version,
                     self.api_version, self.subgroup_sizes, sorted(self.features), sorted(self.quirks)))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def __repr__(self) -> str:
        return f"Fingerprint({self.name!r}, driver={self.driver!r}, key={self.key!r})"

    def __str__(self) -> str:
        return f"{self.name} ({self.driver}, Vulkan {self.api_version}) [{self.key}]"
