"""Known driver bugs, by driver and driver release: the names a device's `DeviceInfo.quirks`
lists. This is the one table of them: the runtime reads a device's quirks from it,
`Target.lavapipe()` and the lowering name theirs through it.

Each entry holds for the releases of its driver before the first one measured without it (None:
every release measured has it). The release is read from the driver text (Vulkan's driverName and
driverInfo: "llvmpipe Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)"); where it cannot be read, every quirk
of the driver is assumed. The llvmpipe bugs below were measured on Mesa 22.3.6 and gone on Mesa
25.0.7 (Debian's bookworm-backports build, with the same LLVM 15.0.6), except
storage_loads_per_lane; the releases in between were not measured and keep the workarounds,
which compute the same on a driver without the bug.

Each quirk is worked around by lowering for the devices that have it (vkir.lowering.pipeline
reads `Target.quirks`), so that a kernel computes the interpreter's result everywhere.

- "loop_trip_limit_65535": llvmpipe (lavapipe) before Mesa 25.0 leaves any loop after 65535
  iterations, silently (a hand-written GLSL shader does the same); the budget is shared by every
  loop of an invocation. A Kernel compiles its loops plainly and picks, per call, a variant with
  the loops that need it split into unrolled chunks (vkir.driver.loop_budget), or raises
  UnsupportedError where none fits; a kernel with loops the call cannot bound (a count read from
  a buffer) checks them on the device and raises LoopLimitError for a cut (vkir.driver.loop_cut).

- "int64_signed_compare": llvmpipe (Mesa 22.3, LLVM 15) evaluates a signed 64-bit `<` or `<=`
  on a value sign-extended from the invocation id as false where it holds (`tx < 32` for an
  int64 thread index; hand-written GLSL fails the same way), so guarded stores never ran. Codegen
  compares such values on their 32-bit words (high words signed, then low words unsigned:
  spirv/codegen/wide_compare.py), which is exact.
- "uint_to_float_rtz": SwiftShader converts uint32 values of 2^31 and above to float32 rounding
  toward zero (and offers no RoundingModeRTE to ask otherwise); codegen converts such values in
  two exact halves and one correctly rounded add.
- "num_subgroups_partial": llvmpipe reports NumSubgroups = 1 for a 12- or 13-invocation
  workgroup (a partial second subgroup) while SubgroupId reaches 1; codegen computes the count
  from the workgroup size and the subgroup size instead of reading the builtin.
- "flushes_denormals": SwiftShader flushes some float32 denormal operands to zero and cannot be
  asked not to (no DenormPreserve): 0.0 // 1e-45 becomes 0 / 0. No lowering can help; results
  that involve denormals are outside the bit-for-bit promise there (docs/semantics.md).
  NVIDIA's driver does the same for float32 (it offers DenormPreserve for float16 only; measured
  on an H200, driver 580.159: 0.0 // 1e-45 is NaN and float32 -> float64 flushes 1e-45).

- "storage_loads_per_lane": llvmpipe (Mesa 22.3 and 25.0) turns each storage-buffer load whose
  address it cannot prove uniform into a loop over the 8 lanes of its SIMD registers (extract the
  lane's offset, test its exec-mask bit and the bound, one scalar load), while a texel fetch is
  one vector load per lane (docs/performance.md). Not a wrong result but a slow one: codegen for
  Vulkan reads the read-only 32-bit scalar and 4-lane parameter buffers of a kernel through
  uniform texel buffers (spirv/codegen/texel_reads.py), and a Kernel binds a VkBufferView over
  each such argument, or runs its storage-buffer variant for a call whose argument cannot be
  viewed (vkir.driver.texel_views).
- "broadcast_first_float_crash": llvmpipe's compiler (Mesa 22.3, LLVM 15) aborts the whole
  process ("LLVM ERROR: Cannot select") on a subgroup broadcast-first of a float computed inside
  a loop (a hand-written GLSL `subgroupBroadcastFirst(x * 2.0)` in a loop does the same);
  integers and values computed outside the loop compile. Codegen broadcasts the first active
  lane's number instead and shuffles the float from that lane (spirv/codegen/sync.py), which
  computes the same.
- "subgroups_split_rows": llvmpipe forms its subgroups from each row of a workgroup: where the
  workgroup has several rows (y or z size above 1) and its x size is not a multiple of the
  subgroup size, a subgroup holds only the x-chunk of one row, the lanes past the row's end
  inactive, while SubgroupId still counts linear indices (a 4 x 8 workgroup with subgroups of 8:
  SubgroupLocalInvocationId of invocation (0, 1) is 0, not 4, and `subgroup_add` sums 4
  invocations, not 8). Every subgroup operation then combines other invocations than vkir's
  linear subgroups. Found by benchmarks/subgroup_sweep.py ("2d" cases). Codegen declares such a
  kernel's workgroup as one row of X * Y * Z invocations and computes threadIdx.x/y/z from the
  linear index (spirv/codegen/flat_workgroup.py), which gives the linear layout; a kernel whose
  workgroup exceeds maxComputeWorkGroupSize.x that way is refused with UnsupportedError.
- "memory_barrier_ends_loops": llvmpipe (Mesa 22.3, LLVM 15) stops every invocation of a
  workgroup at the second barrier of a loop with a run-time trip count that holds a memory
  barrier (an OpMemoryBarrier, or the Acquire/Release semantics of an atomic) where some 8-lane
  SIMD row of the workgroup runs none of its trips (all its lanes out of bounds or past a
  branch): the rest of the loop and of the kernel is skipped, silently (a 256-wide workgroup
  with 32 invocations in bounds adds `T.atomic_add(h[q], 1)` for q = 0 and 1 of k only, and
  stores nothing after the loop; the adjoint of a dense layer from vkir.grad lost every row of
  d_w but the last where n * m left a row of its workgroup idle: n * m = 64, 128, 240).
  Unrolled code, constant-count loops and loops that every row enters are right; the "idle"
  cases of benchmarks/atomic_sweep.py show it. llvmpipe compiles every atomic as a sequentially
  consistent LLVM atomic whatever its SPIR-V semantics, so codegen gives atomics Relaxed
  semantics and the compare-exchange loops of float atomics no fences there
  (spirv/codegen/sync.py, images.py), which orders memory as before.
- "float16_texel_overflow_nan": SwiftShader stores NaN, not infinity, when a kernel writes a
  float32 well beyond float16's range (70000, 1e5, 3e38, infinities) to a float16 image format
  (rgba16f, rg16f, r16f); 65520 to 65537 still become infinity. Found by
  benchmarks/image_sweep.py.
  Codegen clamps such lanes to +-65536 before the write (spirv/codegen/images.py), which stores
  the infinity Vulkan's rounding gives; NaN stays NaN.
- "buffer_reference_merge_crash": SwiftShader's compiler crashes the process on a
  buffer_reference (PhysicalStorageBuffer) pointer that takes different values on different
  control-flow paths (a pointer variable assigned in a branch or a loop, as a linked-list walk
  writes it). vkir's kernels never make one; an existing shader that does is refused by name
  before the driver (vkir.driver.pointer_merges).

Known and not yet worked around (found by the fuzzing campaign, python -m vkir.tools.fuzz): llvmpipe
folds `x * 0.0` to 0 for an infinite or NaN x and `x - -0.0` to x for x = -0.0 in some
expression shapes, even with SignedZeroInfNanPreserve declared (which vkir does where the device
supports it), so such results can differ from the interpreter's IEEE ones.
Found by benchmarks/image_sweep.py: SwiftShader garbles the float16 texel written in lane 1 or 3
of a write whose lane 0 or 2 is NaN (rgba16f [NaN, 2, 3, 4] stores [NaN, 2.004, 3, 4]; a large
value there becomes NaN), and its linear filtering reads the snorm code -128 as -128/127, not -1. lavapipe and SwiftShader filter float32 textures linearly as
a + w * (b - a): neighbouring texels whose difference overflows float32 (|a - b| > 3.4e38) give
infinity or NaN, even at texel centres where the weight of b is 0 (docs/semantics.md, "Images").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LOOP_TRIP_LIMIT = "loop_trip_limit_65535"
FLUSHES_DENORMALS = "flushes_denormals"
UINT_TO_FLOAT_RTZ = "uint_to_float_rtz"
NUM_SUBGROUPS_PARTIAL = "num_subgroups_partial"
INT64_SIGNED_COMPARE = "int64_signed_compare"
STORAGE_LOADS_PER_LANE = "storage_loads_per_lane"
BUFFER_REFERENCE_MERGE_CRASH = "buffer_reference_merge_crash"
BROADCAST_FIRST_FLOAT_CRASH = "broadcast_first_float_crash"
SUBGROUPS_SPLIT_ROWS = "subgroups_split_rows"
FLOAT16_TEXEL_OVERFLOW_NAN = "float16_texel_overflow_nan"
MEMORY_BARRIER_ENDS_LOOPS = "memory_barrier_ends_loops"

MESA_25_0 = (25, 0)   # the first Mesa release measured without llvmpipe's functional bugs


@dataclass(frozen=True)
class Entry:
    """Quirk `name` of the drivers whose device name or driver text contains `needle`
    (lowercase), up to (not including) release `fixed_in` (None: no release is known without
    it)."""

    needle: str
    name: str
    fixed_in: tuple | None = None

    def holds(self, text: str, release: tuple | None) -> bool:
        """True for a device whose lowercase name and driver text is `text`, of driver release
        `release` (None: unknown, so assumed to have the bug)."""
        if self.needle not in text:
            return False
        return self.fixed_in is None or release is None or release < self.fixed_in


TABLE = (
    Entry("llvmpipe", LOOP_TRIP_LIMIT, MESA_25_0),
    Entry("llvmpipe", NUM_SUBGROUPS_PARTIAL, MESA_25_0),
    Entry("llvmpipe", INT64_SIGNED_COMPARE, MESA_25_0),
    Entry("llvmpipe", BROADCAST_FIRST_FLOAT_CRASH, MESA_25_0),
    Entry("llvmpipe", SUBGROUPS_SPLIT_ROWS, MESA_25_0),
    Entry("llvmpipe", MEMORY_BARRIER_ENDS_LOOPS, MESA_25_0),
    # Mesa 25.0 still reads storage buffers lane by lane: texel buffers stay about 1.5x faster
    # for a per-lane vec4 (benchmarks/access_forms.py loads)
    Entry("llvmpipe", STORAGE_LOADS_PER_LANE),
    # SwiftShader (Subzero) too: vkir's ka=4 matmul tile reading through texel buffers passes
    # the GLSL texel tile at 512^3 (benchmarks.glsl_reference)
    Entry("swiftshader", STORAGE_LOADS_PER_LANE),
    Entry("swiftshader", FLUSHES_DENORMALS),
    Entry("swiftshader", UINT_TO_FLOAT_RTZ),
    Entry("swiftshader", BUFFER_REFERENCE_MERGE_CRASH),
    Entry("swiftshader", FLOAT16_TEXEL_OVERFLOW_NAN),
    Entry("nvidia", FLUSHES_DENORMALS),
)

_MESA_RELEASE = re.compile(r"\bmesa (\d+)\.(\d+)(?:\.(\d+))?")


def driver_release(driver: str) -> tuple | None:
    """The driver's release as a tuple of numbers, read from its driver text (Mesa's
    driverInfo: "Mesa 25.0.7-2~bpo12+1" -> (25, 0, 7)), or None where it names none. Mesa's
    drivers report driverVersion 1, so the text is the one source."""
    found = _MESA_RELEASE.search(driver.lower())
    if found is None:
        return None
    return tuple(int(part) for part in found.groups() if part is not None)


def quirks_of(device_name: str, driver: str) -> frozenset:
    """The quirks of a device, from its name and driver text (case-insensitive), for the driver
    release that text names (every quirk of the driver where it names none)."""
    text = f"{device_name} {driver}".lower()
    release = driver_release(driver)
    return frozenset(e.name for e in TABLE if e.holds(text, release))


LAVAPIPE = quirks_of("llvmpipe", "")   # lavapipe of an unknown release: all of llvmpipe's quirks
