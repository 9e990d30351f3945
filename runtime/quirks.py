"""Known driver bugs, by driver: the names a device's `DeviceInfo.quirks` lists.

Each quirk is worked around by lowering for the devices that have it (vkir.lowering.pipeline
reads `Target.quirks`), so that a kernel computes the interpreter's result everywhere.

- "loop_trip_limit_65535": llvmpipe (lavapipe) leaves any loop after 65535 iterations, silently
  (a hand-written GLSL shader does the same); the SplitLongLoops pass turns loops that may run
  longer into chunks of unrolled iterations (the budget is shared by every loop of the kernel,
  so nesting alone would not help; each back edge now runs 64 bodies).

Known and not yet worked around (found by the fuzzing campaign, python -m vkir.fuzz): llvmpipe
folds `x * 0.0` to 0 for an infinite or NaN x and `x - -0.0` to x for x = -0.0 in some
expression shapes, even with SignedZeroInfNanPreserve declared (which vkir does where the device
supports it), so such results can differ from the interpreter's IEEE ones.
"""

from __future__ import annotations

LOOP_TRIP_LIMIT = "loop_trip_limit_65535"

# (substring of the device or driver name, lowercase) -> the quirks of that driver
_TABLE = (
    ("llvmpipe", frozenset({LOOP_TRIP_LIMIT})),
)


def quirks_of(device_name: str, driver: str) -> frozenset:
    """The quirks of a device, from its name and driver description (case-insensitive)."""
    text = f"{device_name} {driver}".lower()
    found = frozenset()
    for needle, names in _TABLE:
        if needle in text:
            found |= names
    return found
