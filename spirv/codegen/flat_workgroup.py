"""One-row workgroups for subgroup kernels on llvmpipe (the "subgroups_split_rows" quirk).

vkir defines a subgroup as `subgroup_size` consecutive invocations of the workgroup's linear
local index (x + X * (y + Y * z)). llvmpipe (lavapipe) instead forms its subgroups from each row
of the workgroup: for a workgroup whose x size is not a multiple of the subgroup size and that has
more than one row (4 x 8 with subgroups of 8), a subgroup holds the x-chunk of one row only
(lanes past the row's end inactive), while SubgroupId still counts linear indices, so every
subgroup operation combines the wrong invocations. A one-row workgroup of the same invocations
has the linear layout, so for kernels that use subgroup operations on such a driver, codegen
declares the workgroup as (X * Y * Z, 1, 1) and computes threadIdx.x/y/z from the linear index
(which LocalInvocationId.x then is): the same invocations, in the same subgroups as the
interpreter's.
"""

from __future__ import annotations

from vkir.errors import UnsupportedError
from vkir.ir import Call, DataType
from vkir.ir.op import is_subgroup
from vkir.ir.traversal import walk

# vkir.quirks.SUBGROUPS_SPLIT_ROWS (codegen imports no vkir.quirks)
SUBGROUPS_SPLIT_ROWS_QUIRK = "subgroups_split_rows"
_UINT32 = DataType("uint", 32)


def needs_flat_workgroup(func, target, sizes: tuple[int, int, int]) -> bool:
    """Whether a kernel of `func` with workgroup `sizes` must run as one row on `target`: the
    target splits subgroups by rows, the workgroup has several rows whose length is not a
    multiple of the subgroup size (or the size is unknown, as offline), and the kernel uses
    subgroup operations."""
    x, y, z = sizes
    size = target.subgroup_size
    if SUBGROUPS_SPLIT_ROWS_QUIRK not in target.quirks or y * z == 1 or \
            (size and x % size == 0):
        return False
    return any(isinstance(n, Call) and is_subgroup(n.op) for n in walk(func.body))


def flat_size(func, target, sizes: tuple[int, int, int]) -> tuple[int, int, int]:
    """The one-row workgroup (X * Y * Z, 1, 1), or UnsupportedError where the device's
    maxComputeWorkGroupSize.x is smaller."""
    total = sizes[0] * sizes[1] * sizes[2]
    cap = target.limits.max_workgroup_size[0]
    if total > cap:
        raise UnsupportedError(
            f"kernel {func.name!r}: workgroup {tuple(sizes)} uses subgroup operations, and this "
            f"driver forms subgroups by rows (quirk {SUBGROUPS_SPLIT_ROWS_QUIRK!r}); running it "
            f"as one row of {total} invocations exceeds maxComputeWorkGroupSize.x = {cap}: use "
            "an x size that is a multiple of the subgroup size, or fewer invocations")
    return (total, 1, 1)


class FlatWorkgroupMixin:
    """threadIdx components from the linear local index of a one-row workgroup."""

    def flat_thread_id(self, axis: str, linear: int, sizes: tuple[int, int, int]) -> int:
        """The uint32 id of `threadIdx.<axis>` in the logical workgroup `sizes`, from the
        `linear` local index (LocalInvocationId.x of the one-row workgroup)."""
        u32 = self.ty(_UINT32)
        x, y, _ = sizes
        if axis == "x":
            return self.op("OpUMod", u32, linear, self.const(_UINT32, x))
        row = self.op("OpUDiv", u32, linear, self.const(_UINT32, x))
        if axis == "y":
            return self.op("OpUMod", u32, row, self.const(_UINT32, y))
        return self.op("OpUDiv", u32, row, self.const(_UINT32, y))
