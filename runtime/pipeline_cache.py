"""The driver's pipeline cache (VkPipelineCache data) kept between processes, and checked before
a driver parses it.

The data lives in vkir's cache root as `pipelines-<pipelineCacheUUID>.bin`, sealed by
vkir.store (an HMAC under a per-user key kept apart from the cache). Data is handed to the driver
only when the seal verifies and its header is this device's (header version one, vendor id,
device id and pipelineCacheUUID); anything else (planted, corrupted, another device's) is
ignored, and the driver starts with an empty cache.
"""

from __future__ import annotations

import struct
from pathlib import Path

from vkir import store

HEADER = struct.Struct("=IIII16s")   # headerSize, headerVersion, vendorID, deviceID, UUID
HEADER_VERSION_ONE = 1


def cache_file(properties) -> Path | None:
    """Where the pipeline cache of the device with these VkPhysicalDeviceProperties persists;
    None when there is no disk cache."""
    root = store.cache_folder("pipelines")
    if root is None:
        return None
    return root / f"pipelines-{bytes(properties.pipelineCacheUUID).hex()}.bin"


def header_matches(data: bytes, properties) -> bool:
    """Whether `data` starts with a version-one pipeline cache header of this device."""
    if len(data) < HEADER.size:
        return False
    size, version, vendor, device, uuid = HEADER.unpack_from(data)
    return (HEADER.size <= size <= len(data) and version == HEADER_VERSION_ONE
            and vendor == properties.vendorID and device == properties.deviceID
            and uuid == bytes(properties.pipelineCacheUUID))


def load(path: Path | None, properties) -> bytes:
    """The verified pipeline cache data at `path` for this device, or b"" (nothing usable)."""
    if path is None:
        return b""
    data = store.unseal(f"pipelines/{path.name}", store.read(path))
    if data is None or not header_matches(data, properties):
        return b""
    return data


def save(path: Path | None, data: bytes) -> bool:
    """Store the driver's pipeline cache data at `path` (sealed, atomically); False when it
    was not stored (no disk cache, an unsafe or unwritable folder)."""
    if path is None or not data:
        return False
    return store.write(path, store.seal(f"pipelines/{path.name}", data))
