"""Kernels: `lower`, `build` and `Kernel`, and `interpret` on device arrays.

`build` joins the two halves that know nothing of each other: the SPIR-V backend (vkir.spirv: a
lowered PrimFunc -> SpirvModule) and a device backend behind the device seam
(vkir.backends.protocol: SPIR-V bytes + buffers + push-constant bytes + group counts -> a
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
import struct
import threading
import time
import weakref

import numpy as np

from ..binding import Signature, written_params
from ..errors import ArgumentError, TypeCheckError, UnsupportedError, WellFormedError
from ..ir import DataType, For, IntImm, PrimFunc, While
from ..ir.dtype import type_range
from ..ir.walk import walk
from ..lowering import LOOP_TRIP_LIMIT
from ..timing import Timing
from ..aliasing import Arg, plan
from .arrays import DeviceArray, host_copies, target_for
from .loop_ranges import check_call as check_loop_ranges
from .dispatch import (ScratchBuffers, as_runtime, check_profile_counts, copy_back, run, stage,
                       submit)
from .profiling import ACTIVE_PROFILER
from .sequences import ACTIVE_SEQUENCE, LaunchHandle

__all__ = ["interpret", "lower", "build", "Kernel", "Profile", "check_layouts"]


def interpret(func: PrimFunc, *args, **kwargs) -> None:
    """vkir.interpreter.interpret (same arguments and options), also on vkir DeviceArrays: each
    is copied to the host, and back when the kernel changed it, so one call site runs on the
    device and in the interpreter (device arrays over one buffer share one host copy)."""
    from ..interpreter import interpret as _interpret

    keys = tuple(kwargs)
    host, write_back = host_copies(list(args) + [kwargs[k] for k in keys])
    _interpret(func, *host[:len(args)], **dict(zip(keys, host[len(args):])))
    write_back()


# -- lowering and building -----------------------------------------------------------------------
def lower(func: PrimFunc, target=None, *, instruments=(), verify_each: bool = False,
          pointer_casts: bool = False) -> PrimFunc:
    """The default pass pipeline for `target` (a vkir.Target, a target name or a device; None is
    the Vulkan 1.1 baseline), see vkir.lowering: `instruments` are called around every pass,
    `verify_each` runs the explicit-cast checker after every pass, `pointer_casts` adds
    PointerCastVectorize."""
    from ..lowering import lower as _lower

    return _lower(func, target, instruments=instruments, verify_each=verify_each,
                  pointer_casts=pointer_casts)


def _build(func: PrimFunc, device, pointer_casts: bool, precise: bool, check_bounds: bool):
    """The Kernel `build` returns (see there): the backend a name in BACKENDS selects ("interp",
    "vulkan"), else Vulkan on the device `device` selects."""
    from ..backends import BACKENDS

    if isinstance(device, str) and device in BACKENDS:
        backend, device = BACKENDS[device](), None
    else:
        backend = BACKENDS["vulkan"]()
    return backend.kernel(func, device, pointer_casts=pointer_casts, precise=precise,
                          check_bounds=check_bounds)


def build(func: PrimFunc, *, device=None, pointer_casts: bool = False,
          precise: bool = False, explain: bool = False, check_bounds: bool = False) -> "Kernel":
    """Lower, generate SPIR-V for `device` (validated by codegen) and create the (cached)
    pipeline; `device="interp"` gives a Kernel run by the interpreter instead (same calls, same
    errors; see vkir.backends). `pointer_casts=True` vectorizes aligned accesses through explicit pointer casts
    (one VkBuffer bound to aliased descriptors) where the VectorTypeRewriter must scalarize.
    `precise=True` forbids the driver to fuse or reassociate float arithmetic (NoContraction),
    so float results equal vkir.interpret's bit for bit, at some cost in speed. `explain=True`
    prints `Kernel.report()` to stderr: which vector accesses stayed scalar, and why.
    `check_bounds=True` adds device-side bounds checks (vkir.driver.bounds_check): an out-of-bounds
    access is skipped and the call raises vkir.OutOfBoundsError naming the buffer, the index,
    the invocation and the source line (the interpreter always checks)."""
    if not isinstance(func, PrimFunc):
        raise ArgumentError(f"vkir.build expects a PrimFunc (a @T.prim_func), got {type(func).__name__}")
    try:
        kernel = _build(func, device, pointer_casts, precise, check_bounds)
    except (TypeCheckError, WellFormedError) as exc:
        # the message names the node, the rule and the source line: vkir's own frames only
        # hide it from a user reading the traceback
        raise exc.with_traceback(None) from None
    if explain:
        import sys

        print(kernel.report(), file=sys.stderr)
    return kernel


def check_layouts(func: PrimFunc) -> None:
    """Kernel arguments are compact row-major arrays of the buffer's shape, bound as they are: a
    parameter buffer with explicit strides or an elem_offset would index past the array's end."""
    for p in func.params:
        buf = func.buffer_map.get(p)
        if buf is None:
            continue
        offset = buf.elem_offset
        if buf.strides or not (isinstance(offset, IntImm) and offset.value == 0):
            raise UnsupportedError(
                f"kernel {func.name}: parameter buffer {buf.name!r} has explicit strides or an "
                "elem_offset; vkir.build binds compact row-major arrays, so declare the buffer "
                "with its full extent and index it (or alias it with T.decl_buffer) in the body")


def _pack(dtype: DataType, value) -> bytes:
    """std430 bytes of one push-constant scalar of `dtype` (as codegen laid it out)."""
    if dtype.code == "float":
        return np.array(value, dtype=f"float{dtype.bits}").tobytes()
    if dtype.code == "bool":
        return struct.pack("<I", int(bool(value)))
    return np.array(int(value)).astype(f"{'u' if dtype.code == 'uint' else ''}int{dtype.bits}").tobytes()




def _scalar_key(value):
    """A cache key for a scalar argument that tells apart what == confuses: a float by its bit
    pattern (0.0 and -0.0 differ, a nan equals itself), everything else by type and value."""
    if isinstance(value, (float, np.floating)):
        return (float, struct.pack("<d", float(value)))
    return (type(value), value)


def _values_key(values: tuple) -> tuple:
    """`values` (bound sizes and scalars) as a hashable key with floats by bit pattern."""
    return tuple(struct.pack("<d", v) if type(v) is float else v for v in values)


def _release_programs(programs: list) -> None:
    """Give back every program a dropped Kernel held (its plain one and its loop variants)."""
    for program in programs:
        program.release()


Profile = Timing  # the one timing record (vkir.timing), under the name Kernel.profile used


class Kernel(metaclass=abc.ABCMeta):
    """A compiled kernel on one device. `spirv` (bytes), `asm` (disassembly), `ir` (the lowered
    PrimFunc), `module` (the SpirvModule), `compile_seconds` (lower + codegen + validate +
    pipeline), `subgroup_size` (the invocations per subgroup it runs with: pinned at pipeline
    creation for a kernel with subgroup operations, else the device's default size). Call it with
    device arrays, numpy arrays and Python scalars.

    It runs on any device backend behind the seam: `dev` is a backend's Runtime
    (vkir.backends.protocol) or an opened Vulkan device; `device` is the backend's device object
    and `pipeline` its compiled program (a vkir.runtime Pipeline on Vulkan). Host backends'
    kernels and bounds-checked kernels are registered as Kernels too (`isinstance(k,
    vkir.Kernel)` holds for every `vkir.build` result), each with the same calls, launches,
    profiles and errors."""

    def __init__(self, func: PrimFunc, dev, pointer_casts: bool = False, precise: bool = False):
        from ..cache.compile import compile_vulkan
        from .shape_eval import evaluate

        t0 = time.perf_counter()
        check_layouts(func)
        self.func = func
        rt = self._rt = as_runtime(dev)
        self.device = rt.device
        self.target = rt.target(precise)
        built_for = func.attrs.get("subgroup_size")  # a schedule made for one subgroup size
        if built_for is not None and built_for != self.target.subgroup_size:
            self.target = dataclasses.replace(self.target, subgroup_size=int(built_for))
        # lowered and compiled, or loaded from the disk compile cache (vkir.cache.compile);
        # codegen validated the words before they were used or stored, so nothing unvalidated
        # reaches vkCreateShaderModule
        # on a driver that cuts long loops (llvmpipe) the loops are compiled plainly; a call whose
        # sizes need more iterations than the driver runs gets a variant with split loops
        # (vkir.driver.loop_budget), chosen from its push-constant values
        self._loop_limited = LOOP_TRIP_LIMIT in self.target.quirks and any(
            (isinstance(n, For) and n.kind != "thread_binding") or isinstance(n, While)
            for n in walk(func.body))
        target = self.target
        if LOOP_TRIP_LIMIT in target.quirks:
            target = dataclasses.replace(target, quirks=target.quirks - {LOOP_TRIP_LIMIT})
        self._compile_target = target  # (a local: the closure must not hold self)
        self._compiled = compile_vulkan(
            func, target, pointer_casts=pointer_casts,
            lower=lambda: lower(func, target, pointer_casts=pointer_casts))
        self.module = self._compiled.module
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
        self._release = weakref.finalize(self, _release_programs, self._held)
        self._release.atexit = False
        self._lock = threading.Lock()  # guards the scratch buffers of calls with numpy arguments
        self.compile_seconds = time.perf_counter() - t0
        self._evaluate = evaluate
        self._writes = tuple(sorted({b.param_index for b in self.module.bindings if b.writable}))
        # aliased arguments: written as the device or the source (what the interpreter sees) says
        self._alias_writes = frozenset(self._writes) | written_params(func)
        # sizes and scalars are bound on the user's signature; codegen's push constants and grid
        # name the lowered function's vars, mapped back through the aliases where a pass renewed one
        self._signature = Signature(func, evaluate, where=f"kernel {func.name}",
                                    written=self._writes, array_types=(DeviceArray, np.ndarray),
                                    array_kinds="a vkir or numpy array", exact=True)
        self._params = self._signature.params
        self._env_vars = self._signature.env_vars
        self._aliases = self._compiled.aliases
        self._binding_params = tuple(b.param_index for b in self.module.bindings)
        self._derived = {}     # _values_key(env values) -> (push bytes, groups)
        self._scratch = ScratchBuffers(rt)    # device copies of numpy arguments
        self._asm = None
        self._memo = None      # (argument keys, Launch) of the last all-device-array call

    def _spec(self, words: bytes):
        """The ProgramSpec of SPIR-V `words` with this kernel's bindings, push-constant block,
        workgroup size and subgroup requirement (every variant has the same)."""
        from ..backends.protocol import ProgramSpec

        module = self.module
        return ProgramSpec(words, module.entry_point, tuple(b.binding for b in module.bindings),
                           module.push_constant_size, tuple(module.local_size), self._subgroup,
                           f"kernel {self.func.name}")

    # -- properties --------------------------------------------------------------------------
    @property
    def pipeline(self):
        """The backend's compiled program for the plain kernel (a vkir.runtime Pipeline on
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
        vkir.tools.vector_report), then what a first call waits for: vkir's compile, the driver's
        pipeline creation and the first dispatch."""
        from ..tools.vector_report import report

        first = self.first_run_seconds
        return (report(self.ir) + f"\ncompile: {self.compile_seconds * 1e3:.1f} ms in vkir, "
                f"{self.pipeline_seconds * 1e3:.1f} ms creating the pipeline in the driver; first "
                + ("call not made yet" if first is None else
                   f"call {first * 1e3:.1f} ms (a lazy driver compiles then)"))

    def __repr__(self) -> str:
        return f"<vkir Kernel {self.name} on {self._rt.name}>"

    def _check_limits(self) -> None:
        """Every per-pipeline device limit, before the driver sees the module: storage buffers
        per stage and set, push-constant bytes, workgroup size per axis, invocations and shared
        memory (codegen checks the last three against the target too; the target carries no
        per-axis sizes and no descriptor limits)."""
        module = self.module
        self._rt.check_limits(len(module.bindings), module.push_constant_size, module.local_size,
                              module.shared_memory_bytes, f"kernel {self.func.name}")

    def _check_index_range(self, env) -> None:
        """Each buffer argument's element count fits the integer type of its shape (the kernel
        computes flat indices in it): a larger product would wrap around on the device."""
        for p in self._signature.buffer_params:
            if not p.dims:
                continue
            count = 1
            for expr, _ in p.dims:
                count *= expr.value if isinstance(expr, IntImm) else int(self._evaluate(expr, env))
            hi = max(type_range(expr.dtype)[1] for expr, _ in p.dims)
            if count > hi:
                raise ArgumentError(f"kernel {self.name}: argument {p.name!r} has {count} elements, "
                                    f"more than its {p.dims[0][0].dtype} indices reach ({hi})")

    def _program_for(self, env) -> object:
        """The program a call with these size/scalar values runs: the plain one, or on a driver
        that cuts long loops the variant whose split loops fit its budget (UnsupportedError
        where none does: a loop is never cut short)."""
        if not self._loop_limited:
            return self.program
        from .loop_budget import choose_split, loops_for_call

        split = choose_split(loops_for_call(self.ir, env), self.name, repr(self._rt.name))
        if split.factor == 1 or not split.loops:
            return self.program
        key = (split.factor, split.loops, split.whole)
        program = self._variants.get(key)
        if program is None:
            program = self._variants[key] = self._compile_variant(split)
        return program

    def _compile_variant(self, split):
        """The program of the lowered function with `split`'s loops split (SplitLongLoops)."""
        from ..spirv import codegen
        from ..transform import SplitLongLoops

        t0 = time.perf_counter()
        module = codegen(SplitLongLoops(factor=split.factor, only=split.loops,
                                        whole=split.whole)(self.ir),
                         self._compile_target)
        layout = [(pc.var.name, pc.offset, pc.dtype) for pc in module.push_constants]
        assert layout == [(pc.var.name, pc.offset, pc.dtype) for pc in self.module.push_constants]
        assert [b.binding for b in module.bindings] == [b.binding for b in self.module.bindings]
        program = self._rt.program(self._spec(module.words))
        self._held.append(program)
        self._words[program] = module.words
        self.compile_seconds += time.perf_counter() - t0
        return program

    def _for_aliases(self, program, aliases):
        """`program`, or where a written argument shares memory with another (`aliases`, see
        vkir.aliasing) its variant whose buffers are declared Aliased (vkir.driver.aliased_spirv;
        made on first use)."""
        if not aliases:
            return program
        if not self._rt.aliasing:
            names = [self._params[m.position].name for m in aliases[0].members]
            raise UnsupportedError(f"kernel {self.name}: arguments {', '.join(map(repr, names))} "
                                   f"share memory and one is written; {self._rt.name!r} cannot "
                                   "bind one memory to several buffers of a dispatch (pass copies)")
        variant = self._aliased.get(program.handle)
        if variant is None:
            from .aliased_spirv import aliased

            words = aliased(self._words[program], self.target.env)
            variant = self._rt.program(self._spec(words))
            self._held.append(variant)
            self._words[variant] = words
            self._aliased[program.handle] = variant
        return variant

    def _derive(self, values):
        """(push-constant bytes, group counts, program) for these size/scalar values
        (memoized)."""
        key = _values_key(values)
        got = self._derived.get(key)
        if got is not None:
            return got
        env = dict(zip(self._env_vars, values))
        self._check_index_range(env)
        check_loop_ranges(self.func, env, self.name)   # a loop never wraps (loop_ranges.py)
        for lowered, original in self._aliases.items():
            if original in env:
                env[lowered] = env[original]
        push = bytearray(self.module.push_constant_size)
        for pc in self.module.push_constants:
            if pc.var not in env:
                raise ArgumentError(f"kernel {self.name}: push constant {pc.var.name} has no value")
            value = env[pc.var]
            if pc.dtype.code in ("int", "uint"):
                lo, hi = type_range(pc.dtype)
                if not lo <= int(value) <= hi:
                    raise ArgumentError(f"kernel {self.name}: {pc.var.name} = {value} does not fit the "
                                        f"kernel's {pc.dtype} (the shapes are too large for it)")
            raw = _pack(pc.dtype, value)
            push[pc.offset:pc.offset + len(raw)] = raw
        groups = []
        caps = self._rt.limits.max_workgroup_count
        for axis, expr in enumerate(self.module.grid):
            n = int(self._evaluate(expr, env)) if not isinstance(expr, IntImm) else expr.value
            if n < 0:
                raise ArgumentError(f"kernel {self.name}: blockIdx.{'xyz'[axis]} extent {expr} = {n} "
                                    "is negative for these arguments")
            groups.append(n)
        if groups[0] > caps[0] and self.module.folds_grid:
            # blockIdx.x = WorkgroupId.x + WorkgroupId.y * width; workgroups past n do nothing
            width = caps[0]
            groups = [width, -(-groups[0] // width), 1]
        self._rt.check_grid(tuple(groups), f"kernel {self.name}")   # the call's one limit check
        got = (bytes(push), tuple(groups), self._program_for(env))
        if len(self._derived) > 1024:
            self._derived.clear()
        self._derived[key] = got
        return got

    def _prepare(self, args, kwargs=None):
        """All checks, then the runtime buffers (numpy arguments copied in) and launch data."""
        bound = self._signature.bind(args, kwargs)
        args = bound.args
        push, groups, program = self._derive(bound.values)
        buffers, host = {}, {}
        for p in self._signature.buffer_params:
            a = args[p.index]
            if isinstance(a, DeviceArray):
                buffers[p.index] = self._on_device(p, a)
            else:
                host[p.index] = a
        aliases = self._alias_groups(args)
        program = self._for_aliases(program, aliases)
        # every check passed: only now is anything copied (aliased arrays into one buffer)
        staged, copies = stage(host, self._writes.__contains__,
                               [g for g in aliases if not g.on_device],
                               self._scratch.copy_in, self._scratch.view)
        buffers.update(staged)
        return [buffers[i] for i in self._binding_params], push, groups, (copies, host), program

    def _alias_groups(self, args) -> tuple:
        """The groups of buffer arguments over one memory with a writer (vkir.aliasing);
        ArgumentError where one cannot be bound as one buffer."""
        return plan([Arg(p.index, p.name, args[p.index], p.index in self._alias_writes)
                     for p in self._signature.buffer_params], f"kernel {self.name}")

    def _on_device(self, p, a):
        """The device buffer of DeviceArray argument `a` for parameter `p`; ArgumentError where
        it lives on another device than the kernel (DeviceError when the kernel's was closed:
        an array made after a shutdown is on the new device, and the kernel is what is stale)."""
        if a.device is not self.device:
            self._rt.check_open()
            raise ArgumentError(f"kernel {self.name}: argument {p.name!r} lives on "
                                f"{a.device.info.name!r}, the kernel on "
                                f"{self._rt.name!r}")
        return a.buffer

    def _copy_back(self, copies):
        copy_back(*copies, self._scratch.copy_out)

    def _memo_hit(self, args):
        """The launch of the previous call when `args` are the same device arrays and equal
        scalars (the per-call fast path: no re-checking, no lookups)."""
        memo = self._memo
        if memo is None or len(args) != len(memo[0]):
            return None
        for a, key in zip(args, memo[0]):
            if type(key) is weakref.ref:
                if key() is not a:
                    return None
            elif _scalar_key(a) != key:
                return None
        return memo[1]

    def __call__(self, *args, **kwargs) -> None:
        """Dispatch on `args` (by position and/or by parameter name) and wait; numpy arrays are
        copied in and the written ones back."""
        if kwargs:
            args = self._signature.arguments(args, kwargs)
        if ACTIVE_SEQUENCE.get() is not None or ACTIVE_PROFILER.get() is not None:
            self._call_recorded(args)
            return
        launch = self._memo_hit(args)
        if launch is not None and launch.run(True, args):  # an evicted launch is destroyed
            return
        if any(isinstance(a, np.ndarray) for a in args):
            with self._lock:  # the scratch buffers are this kernel's: one call at a time
                buffers, push, groups, copies, program = self._prepare(args)
                program.launch(buffers, push, groups).run(keep=args)
                self._copy_back(copies)
            return
        buffers, push, groups, _, program = self._prepare(args)
        launch = program.launch(buffers, push, groups)
        launch.run(keep=args)
        self._memo = (tuple(weakref.ref(a) if isinstance(a, DeviceArray) else _scalar_key(a)
                            for a in args), launch)

    # -- sequences, launches, profiles -------------------------------------------------------
    def _device_buffers(self, args):
        """Check `args`; (push bytes, groups, {param index: runtime Buffer}, numpy arguments
        by param index, program, alias groups) with every DeviceArray on this kernel's device."""
        bound = self._signature.bind(args)
        push, groups, program = self._derive(bound.values)
        buffers, host = {}, {}
        for p in self._signature.buffer_params:
            a = bound.args[p.index]
            if isinstance(a, DeviceArray):
                buffers[p.index] = self._on_device(p, a)
            else:
                host[p.index] = a
        aliases = self._alias_groups(bound.args)
        return push, groups, buffers, host, self._for_aliases(program, aliases), aliases

    def dispatch_spec(self, *args, **kwargs):
        """The recordable dispatch of `self(*args, **kwargs)` (checked as a call is; a
        vkir.runtime.Dispatch on Vulkan): what a sequence records. Every buffer argument must be a DeviceArray."""
        args = self._signature.arguments(args, kwargs)
        push, groups, buffers, host, program, _ = self._device_buffers(args)
        if host:
            p = self._params[min(host)]
            raise ArgumentError(f"kernel {self.name}: argument {p.name!r} is a numpy array; "
                                "inside a sequence buffers must be DeviceArrays (vkir.array), "
                                "since a sequence makes no hidden copies")
        access = tuple(("r" if b.readable or not b.writable else "") + ("w" if b.writable else "")
                       for b in self.module.bindings)
        return program.dispatch(tuple(buffers[i] for i in self._binding_params), access, push,
                                groups, self.name, (self, tuple(args)))

    def _call_recorded(self, args) -> None:
        """A call inside `vkir.sequence()` (recorded) or `vkir.profile()` (timed)."""
        seq = ACTIVE_SEQUENCE.get()
        if seq is not None:
            seq.add(self.dispatch_spec(*args))
            return
        with self._lock:  # the scratch buffers of numpy arguments
            buffers, push, groups, copies, program = self._prepare(args)
            run(self._rt, program, buffers, push, groups, self.name, args,
                ACTIVE_PROFILER.get())
            self._copy_back(copies)

    def launch(self, *args, **kwargs) -> LaunchHandle:
        """Submit `self(*args, **kwargs)` without waiting: a handle with `wait(timeout=None)` and
        `done()`. Numpy arguments are copied in now (each launch has its own device copies) and
        the ones the kernel writes are copied back when the wait observes the end. Any number
        of launches may be in flight; each starts after the work submitted before it, as on
        one queue."""
        args = self._signature.arguments(args, kwargs)
        if ACTIVE_SEQUENCE.get() is not None:
            raise ArgumentError(f"kernel {self.name}: launch() inside a sequence; call the kernel "
                                "instead (the sequence submits when its block ends)")
        if ACTIVE_PROFILER.get() is not None:
            self._call_recorded(args)
            return LaunchHandle(None, (), self.name)
        push, groups, buffers, host, program, aliases = self._device_buffers(args)
        return submit(self._rt, program, buffers, push, groups, self.name, args, host,
                      self._writes.__contains__, [g for g in aliases if not g.on_device],
                      self._binding_params)

    def profile(self, *args, repeat: int = 50, warmup: int = 1, **kwargs) -> Profile:
        """Run `repeat` times; device seconds per run from timestamp queries (wall time where
        the queue has none). Numpy arguments are copied in once and written ones back at the end."""
        check_profile_counts(f"kernel {self.name}", repeat, warmup)
        with self._lock:
            buffers, push, groups, copies, program = self._prepare(args, kwargs)
            t = program.profile(buffers, push, groups, repeat, warmup)
            self._copy_back(copies)
        return t
