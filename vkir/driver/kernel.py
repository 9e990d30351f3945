"""Kernels: `Kernel`, and (from vkir.driver.building) `lower`, `build` and `interpret` on device
arrays.

Kernel is made of parts with one job each: this module builds it (compile, limits, the plain
program) and shows it (properties, report); kernel_values.py derives a call's push bytes, grid
and program from its size and scalar values; kernel_variants.py holds its programs (loop-split and
Aliased variants); kernel_calls.py runs calls, launches, recordings and profiles.

`build` joins the two halves that know nothing of each other: the SPIR-V backend (vkir.spirv: a
lowered PrimFunc -> SpirvModule) and a device backend behind the device seam
(vkir.seam.protocol: SPIR-V bytes + buffers + push-constant bytes + group counts -> a
dispatch). A Kernel is backend-neutral: it binds the signature, computes push bytes and the grid,
plans aliasing and writes results back, and leaves memory, programs and launches to the
backend's `Runtime` (Vulkan's, vkir.backends.vulkan, is the only one that imports
vkir.runtime). Both halves are imported lazily so that `import vkir` needs no Vulkan loader.

A Kernel call checks every argument (count, dtype, shape, contiguity, device) and binds the
symbolic sizes from the shapes BEFORE anything is copied or recorded, so a bad call raises
ArgumentError and leaves every buffer untouched. Push-constant bytes and group counts are computed
once per distinct set of size/scalar values; the runtime reuses the pre-recorded command buffer
when the arguments are the same device buffers. Float scalars are cache keys by their bit
pattern (0.0 and -0.0, and each nan, are different arguments).

A Kernel is safe to call from several threads (calls with numpy arguments share its scratch
buffers and take its lock); a collected Kernel releases its pipeline; a Kernel or an array whose
device was closed raises DeviceError.
"""

from __future__ import annotations

import abc
import dataclasses
import threading
import time
import weakref

import numpy as np

from ..binding import Signature, written_params
from ..ir import For, PrimFunc, While
from ..ir.traversal import walk
from ..lowering import LOOP_TRIP_LIMIT
from ..timing import Timing
from .arrays import DeviceArray
from .device_images import DeviceImage
from .shader_images import ShaderImages
from .building import build, check_layouts, interpret, lower
from .dispatch import ScratchBuffers, as_runtime
from .kernel_calls import KernelCalls
from .kernel_values import CallValues
from .kernel_variants import ProgramVariants, release_programs
from .texel_views import TexelBinding

__all__ = ["interpret", "lower", "build", "Kernel", "Profile", "check_layouts", "compile_target"]


Profile = Timing  # the one timing record (vkir.timing), under the name Kernel.profile used


def scheduled_target(func: PrimFunc, target):
    """`target` (a device's Target) with the subgroup size a schedule of `func` was made for."""
    built_for = func.attrs.get("subgroup_size")
    if built_for is not None and built_for != target.subgroup_size:
        return dataclasses.replace(target, subgroup_size=int(built_for))
    return target


def compile_target(func: PrimFunc, target):
    """The Target a Kernel of `func` compiles for on a device whose Target is `target`: the
    schedule's subgroup size, and without the loop-limit quirk (loops are compiled plainly; a
    call whose sizes need more iterations than the driver runs gets a split variant). Whoever
    compiles for a device elsewhere (a fleet's job, built where it starts) uses the same."""
    target = scheduled_target(func, target)
    if LOOP_TRIP_LIMIT in target.quirks:
        target = dataclasses.replace(target, quirks=target.quirks - {LOOP_TRIP_LIMIT})
    return target


class Kernel(CallValues, ProgramVariants, KernelCalls, TexelBinding, metaclass=abc.ABCMeta):
    """A compiled kernel on one device. `spirv` (bytes), `asm` (disassembly), `ir` (the lowered
    PrimFunc), `module` (the SpirvModule), `compile_seconds` (lower + codegen + validate +
    pipeline), `subgroup_size` (the invocations per subgroup it runs with: pinned at pipeline
    creation for a kernel with subgroup operations, else the device's default size), `func` (the
    PrimFunc it compiles: T.parallel loops bound to the grid) and `source` (the PrimFunc as
    passed to vkir.build). Call it with device arrays, numpy arrays and Python scalars.

    It runs on any device backend behind the seam: `dev` is a backend's Runtime
    (vkir.seam.protocol) or an opened Vulkan device; `device` is the backend's device object
    and `pipeline` its compiled program (a vkir.runtime ComputePipeline on Vulkan). Host backends'
    kernels and bounds-checked kernels are registered as Kernels too (`isinstance(k,
    vkir.Kernel)` holds for every `vkir.build` result), each with the same calls, launches,
    profiles and errors."""

    def __init__(self, func: PrimFunc, dev, pointer_casts: bool = False, precise: bool = False):
        from ..cache.compile import compile_vulkan
        from .shape_eval import evaluate

        t0 = time.perf_counter()
        check_layouts(func)
        self.func = func
        self.source = func   # the function as written (its builder sets it: before BindParallel)
        rt = self._rt = as_runtime(dev)
        self.device = rt.device
        self.target = scheduled_target(func, rt.target(precise))
        # lowered and compiled, or loaded from the disk compile cache (vkir.cache.compile);
        # codegen validated the words before they were used or stored, so nothing unvalidated
        # reaches vkCreateShaderModule
        # on a driver that cuts long loops (llvmpipe) the loops are compiled plainly; a call whose
        # sizes need more iterations than the driver runs gets a variant with split loops
        # (vkir.driver.loop_budget), chosen from its push-constant values
        self._loop_limited = LOOP_TRIP_LIMIT in self.target.quirks and any(
            (isinstance(n, For) and n.kind != "thread_binding") or isinstance(n, While)
            for n in walk(func.body))
        target = compile_target(func, self.target)
        self._compile_target = target  # (a local: the closure must not hold self)
        self._compiled = compile_vulkan(
            func, target, pointer_casts=pointer_casts,
            lower=lambda: lower(func, target, pointer_casts=pointer_casts))
        self.module = self._compiled.module
        # image parameters bind through the image seam, as existing shaders' do (shader_images):
        # a backend without images refuses them here, before a program is made
        self._images = ShaderImages(f"kernel {func.name}", self.module.images, rt)
        self._check_limits()
        # a kernel with subgroup operations was built for the target's subgroup size: the
        # pipeline requires it (or the build fails where the device cannot guarantee it)
        subgroup = None
        self.subgroup_size = rt.subgroup_size
        if self.module.uses_subgroups and self.target.subgroup_size:
            self.subgroup_size = self.target.subgroup_size
            subgroup = rt.subgroup_requirement(self.subgroup_size, self.module.local_size[0],
                                               f"kernel {func.name}")
        self._subgroup = subgroup
        self.program = rt.program(self._spec(self.module.words))
        # a dropped Kernel gives its programs back (the last holder destroys a pipeline and its
        # launches)
        self._variants = {}             # (factor, loops) -> Program of a split variant
        self._held = [self.program]     # every program this kernel holds (released together)
        self._words = {self.program: self.module.words}   # SPIR-V of each held program
        self._aliased = {}              # program handle -> its variant with every buffer Aliased
        self._splits = {}               # loop-split variant -> its split (loop_budget)
        self._setup_texels()            # texel-buffer reads (texel_views.py)
        self._release = weakref.finalize(self, release_programs, self._held)
        self._release.atexit = False
        self._lock = threading.Lock()  # guards the scratch buffers of calls with numpy arguments
        self.compile_seconds = time.perf_counter() - t0
        self._evaluate = evaluate
        self._writes = tuple(sorted({b.param_index for b in self.module.bindings if b.writable}))
        # aliased arguments: written as the device or the source (what the interpreter sees) says
        self._alias_writes = frozenset(self._writes) | written_params(func)
        # sizes and scalars are bound on the user's signature; codegen's push constants and grid
        # name the lowered function's vars, mapped back through the aliases where a pass renewed one
        self._writes += tuple(b.param_index for b in self.module.images if b.written)
        self._image_params = tuple(b.param_index for b in self.module.images)
        self._signature = Signature(func, evaluate, where=f"kernel {func.name}",
                                    written=self._writes,
                                    array_types=(DeviceArray, np.ndarray, DeviceImage),
                                    array_kinds="a vkir or numpy array", exact=True)
        self._params = self._signature.params
        self._env_vars = self._signature.env_vars
        self._aliases = self._compiled.aliases
        self._binding_params = tuple(b.param_index for b in self.module.bindings)
        self._derived = {}     # _values_key(env values) -> (push bytes, groups)
        self._scratch = ScratchBuffers(rt)    # device copies of numpy arguments
        self._asm = None
        self._memo = None      # (argument keys, Launch) of the last all-device-array call

    # -- properties --------------------------------------------------------------------------
    @property
    def pipeline(self):
        """The backend's compiled program for the plain kernel (a vkir.runtime ComputePipeline on
        Vulkan, cached per device and SPIR-V)."""
        return self.program.handle

    @property
    def ir(self) -> PrimFunc:
        """The lowered PrimFunc (lowered again on first access for a kernel from the cache)."""
        return self._compiled.ir

    @property
    def spirv(self) -> bytes:
        """The SPIR-V module as bytes (validated by SPIRV-Tools)."""
        return self.module.words

    @property
    def asm(self) -> str:
        """The SPIR-V disassembly (made on first use)."""
        if self._asm is None:
            from ..spirv import disassemble

            self._asm = disassemble(self.module.words)
        return self._asm

    @property
    def name(self) -> str:
        """The kernel's name: its PrimFunc's."""
        return self.func.name

    @property
    def pipeline_seconds(self) -> float:
        """Seconds the driver took to create this kernel's pipelines (vkCreateShaderModule and
        vkCreateComputePipelines; the loop variants a call needed included): on a cold driver
        cache, the driver's own compile, which a first call waits for beside `compile_seconds`.
        Drivers that compile lazily (llvmpipe) do most of it in the first dispatch instead:
        see `first_run_seconds`."""
        return sum(p.create_seconds for p in self._held)

    @property
    def first_run_seconds(self) -> float | None:
        """Wall seconds of the first synchronous dispatch of this kernel's pipeline (a lazy
        driver's compile plus the run itself); None before the first call."""
        return self.program.first_run_seconds

    def report(self) -> str:
        """Which vector accesses of the lowered kernel are done lane by lane, and why (see
        vkir.transform.vector_report), then what a first call waits for: vkir's compile, the
        driver's pipeline creation and the first dispatch."""
        from ..transform.vector_report import report

        first = self.first_run_seconds
        return (report(self.ir) + f"\ncompile: {self.compile_seconds * 1e3:.1f} ms in vkir, "
                f"{self.pipeline_seconds * 1e3:.1f} ms creating the pipeline in the driver; first "
                + ("call not made yet" if first is None else
                   f"call {first * 1e3:.1f} ms (a lazy driver compiles then)"))

    def __repr__(self) -> str:
        return f"<vkir Kernel {self.name} on {self._rt.name}>"

    def _check_limits(self) -> None:
        """Every per-pipeline device limit, before the driver sees the module: storage buffers,
        storage images, sampled images (image parameters' combined image samplers and the
        uniform texel buffers of texel reads) and samplers per stage and set, resources per
        stage, push-constant bytes, workgroup size per axis, invocations and shared memory
        (codegen checks the last three against the target too; the target carries no per-axis
        sizes and no descriptor limits). A kernel with texel reads is checked as it binds them
        and as its storage-buffer variant binds them (vkir.driver.texel_views)."""
        module = self.module
        images = tuple(("uniform_texel_buffer", 1) for b in module.bindings if b.texel) \
            + tuple((b.kind, b.count) for b in module.images)
        self._rt.check_limits(sum(not b.texel for b in module.bindings), module.push_constant_size,
                              module.local_size, module.shared_memory_bytes,
                              f"kernel {self.func.name}", images=images)
