"""`interpret(func, *args)` and `evaluate(expr, env)`: the reference semantics of vkir."""

from __future__ import annotations

import numpy as np

from ..analysis.loop_ranges import check_known_loops
from ..analysis.type_checker import verify_types
from ..errors import ArgumentError, TypeCheckError, WellFormedError
from ..ir.base import show
from ..ir.dtype import DataType
from ..ir.expr import IntImm, Var, convert
from ..ir.function import PrimFunc
from ..ir.stmt import For, While
from ..ir.structural import recursion_headroom
from ..ir.traversal import walk
from ..binding import written_params
from .arguments import bind_arguments
from .compiler import Compiler
from .frames import Frame, RunState
from .errors import InterpreterError, OutOfBoundsError
from .merge import merge_plan
from . import native_loops
from .races import RaceChecker
from .image_closures import attach_samplers
from ..ir.image_type import ImageType

def _compile(func: PrimFunc, denormals: str = "preserve", merge=None, native: str = "never"):
    """Closures for `func`'s body, with params, size vars and parameter buffers in scope;
    `merge` (merge.py) runs the workgroups of the innermost blockIdx loops together, `native`
    (native_loops.mode()) says whether long loops may run in C."""
    compiler = Compiler(denormals, merge, native)
    for p in func.params:
        compiler.bind(p)
    for v in func.size_vars:
        compiler.bind(v)
    for buffer in func.buffer_map.values():
        compiler.bind(buffer)
    return compiler, compiler.stmt(func.body)


DENORMALS = ("preserve", "flush")


def interpret(func: PrimFunc, *args, check_races: bool = True, subgroup_size: int | None = None,
              denormals: str = "preserve", samplers: dict | None = None,
              sub_texel_precision_bits: int = 8, **kwargs) -> None:
    """Run `func` on numpy arrays (buffers are modified in place) and Python/numpy scalars,
    given by position and/or by parameter name (`interpret(f, a, b, c=out)`).

    The explicit-cast checker runs first (an ill-typed program raises `TypeCheckError`, as in
    vkir.build). Symbolic sizes come from the array shapes. Wrong argument count, dtypes or shapes raise
    `vkir.ArgumentError`; out-of-bounds accesses raise `OutOfBoundsError`. Unless `check_races`
    is False, two invocations accessing one element without a barrier ordering them (a data
    race, which the lockstep execution would hide) raise `DataRaceError` (see races.py).

    The target's behaviour is a parameter, so that a device's results are compared like with
    like: subgroup operations group `subgroup_size` consecutive invocations (a power of two from
    1 to 128, as on Vulkan devices; default: the size the function was scheduled for, its
    "subgroup_size" attribute, else 32), and `denormals="flush"` makes float arithmetic flush
    denormal operands and results to zero, as devices without denormal preservation may
    (`Target.denormals`; the default "preserve" is IEEE 754).

    Image parameters take numpy arrays of shape extent + (channels,) of the format's storage
    dtype, written in place; a texture with mip levels takes a list of such arrays, level 0
    first (vkir.interpreter.image_levels); `samplers` gives each texture its vkir.Sampler by
    parameter name (nearest/clamp by default), and `sub_texel_precision_bits` is the device's
    subTexelPrecisionBits, the precision of linear filtering's weights (default 8, what
    lavapipe and SwiftShader have; Vulkan's minimum is 4).
    """
    Prepared(func, subgroup_size, denormals, sub_texel_precision_bits)(
        *args, check_races=check_races, samplers=samplers, **kwargs)


class Prepared:
    """`func` checked once (the options, its types, the plan to run workgroups together) with
    its closures compiled on first use for each way of running it (workgroups together or one
    at a time, long loops in C or not) and kept: a call runs `func` as `interpret` does, without
    checking or compiling again. The interpreter backend (vkir.backends.interp) holds one per
    kernel; `interpret` makes one per call."""

    def __init__(self, func: PrimFunc, subgroup_size: int | None = None,
                 denormals: str = "preserve", sub_texel_precision_bits: int = 8):
        if subgroup_size is None and isinstance(func, PrimFunc):
            subgroup_size = func.attrs.get("subgroup_size", 32)
        if isinstance(subgroup_size, bool) or not isinstance(subgroup_size, int) or \
                subgroup_size < 1 or subgroup_size > 128 or subgroup_size & (subgroup_size - 1):
            raise ArgumentError(f"subgroup_size must be a power of two from 1 to 128, got "
                                f"{subgroup_size!r}")
        if isinstance(sub_texel_precision_bits, bool) or \
                not isinstance(sub_texel_precision_bits, int) or \
                not 1 <= sub_texel_precision_bits <= 16:
            raise ArgumentError(f"sub_texel_precision_bits must be an int from 1 to 16, got "
                                f"{sub_texel_precision_bits!r}")
        self.sub_texel_bits = sub_texel_precision_bits
        if denormals not in DENORMALS:
            raise ArgumentError(f"denormals must be one of {DENORMALS}, got {denormals!r}")
        if not isinstance(func, PrimFunc):
            raise ArgumentError(f"interpret expects a PrimFunc, got {type(func).__name__}")
        try:
            with recursion_headroom():
                verify_types(func)  # what vkir.build refuses as ill-typed does not run here either
                self.plan = merge_plan(func)
        except (TypeCheckError, WellFormedError) as exc:
            raise exc.with_traceback(None) from None   # the message points at the source
        self.func = func
        self.subgroup_size = subgroup_size
        self.denormals = denormals
        self.serial_loops = _has_serial_loops(func)
        self._compiled = {}   # (workgroups together, native mode) -> (Compiler, body closure)

    def compiled(self, merge, native: str):
        """The compiled closures of the function for `merge` (self.plan or None) and `native`."""
        key = (merge is not None, native)
        got = self._compiled.get(key)
        if got is None:
            got = self._compiled[key] = _compile(self.func, self.denormals, merge, native)
        return got

    def warm(self) -> None:
        """Compile now the way a call runs first (workgroups together where planned, long loops
        in C where native_loops.mode() allows them)."""
        self.compiled(self.plan, native_loops.mode() if self.serial_loops else "never")

    def __call__(self, *args, check_races: bool = True, samplers: dict | None = None,
                 **kwargs) -> None:
        """Run the function on `args` (numpy arrays modified in place, scalars), as `interpret`
        (`samplers`: a vkir.Sampler per texture parameter name)."""
        try:
            with recursion_headroom():  # compiling and running deep expressions recurse per level
                _interpret(self, args, kwargs, check_races, samplers)
        except (TypeCheckError, WellFormedError) as exc:
            raise exc.with_traceback(None) from None   # the message points at the source


def _interpret(prepared: Prepared, args: tuple, kwargs: dict, check_races: bool,
               samplers: dict | None = None) -> None:
    subgroup_size, denormals = prepared.subgroup_size, prepared.denormals
    native = native_loops.mode() if prepared.serial_loops else "never"
    plan = prepared.plan
    func = prepared.func
    # the arrays the kernel writes, kept to run again from the start where a run stops early:
    # with workgroups together, an error is reported as one workgroup at a time reports it; a
    # loop in C that fails after writing beyond its invocations' memory, or after the race
    # checker saw its accesses, asks for a run in Python (NativeRestart)
    # (a read-only array is refused by the argument check before anything runs)
    kept = [(a, a.copy()) for a in _written_arrays(func, args, kwargs) if a.flags.writeable] \
        if plan is not None or native != "never" else []
    if native != "never":
        try:
            _interpret_with(prepared, args, kwargs, check_races, subgroup_size, denormals, plan,
                            native, kept, samplers)
            return
        except native_loops.NativeRestart:
            _restore(kept)
    _interpret_with(prepared, args, kwargs, check_races, subgroup_size, denormals, plan, "never",
                    kept, samplers)


def _has_serial_loops(func: PrimFunc) -> bool:
    return any(isinstance(n, While) or (isinstance(n, For) and n.kind != "thread_binding")
               for n in walk(func.body))


def _restore(kept: list) -> None:
    for a, copy in kept:
        np.copyto(a, copy)


def _interpret_with(prepared: Prepared, args: tuple, kwargs: dict, check_races: bool,
                    subgroup_size: int, denormals: str, plan, native: str, kept: list,
                    samplers: dict | None = None) -> None:
    if plan is not None:
        try:
            _run(prepared, args, kwargs, check_races, subgroup_size, denormals, plan, native,
                 samplers)
            return
        except (InterpreterError, OutOfBoundsError, ArgumentError):
            # (a loop range error names the range of the invocation that met it first)
            _restore(kept)
    _run(prepared, args, kwargs, check_races, subgroup_size, denormals, None, native, samplers)


def _written_arrays(func: PrimFunc, args: tuple, kwargs: dict) -> list:
    """The numpy arguments bound to buffers that some store or atomic of `func` writes."""
    written = {func.params[i] for i in written_params(func)}
    by_name = {p.name: p for p in func.params}
    pairs = list(zip(func.params, args)) + [(by_name.get(k), a) for k, a in kwargs.items()]
    return [a for p, a in pairs if isinstance(a, np.ndarray)
            and (p in func.buffer_map or isinstance(getattr(p, "dtype", None), ImageType))
            and p in written]


def _run(prepared: Prepared, args: tuple, kwargs: dict, check_races: bool, subgroup_size: int,
         denormals: str, merge, native: str, samplers: dict | None = None) -> None:
    """One run of `prepared` (its denormal mode is `denormals`) with its closures for `merge`
    and `native`."""
    assert denormals == prepared.denormals
    func = prepared.func
    compiler, body = prepared.compiled(merge, native)
    bindings = bind_arguments(func, args, evaluate, kwargs)
    attach_samplers(func, bindings.values, samplers, prepared.sub_texel_bits)
    # loops whose bounds the sizes and scalars fix are checked before anything runs, as a
    # Kernel checks them before its dispatch (loop_ranges.py); the others when they start
    check_known_loops(func, bindings.values, evaluate, f"kernel {func.name}")
    races = _race_checker(compiler, bindings.values) if check_races else None
    state = RunState(compiler.value_ndims, races, subgroup_size)
    slots = [None] * len(compiler.value_ndims)
    for key, value in bindings.values.items():
        slots[compiler.slot(key)] = value
    for buffer, bb in bindings.buffers.items():
        slots[compiler.slot(buffer)] = bb
    with np.errstate(all="ignore"):
        body(Frame(slots, None, state, key=races.top_key() if races is not None else 0))
        state.finish()
    bindings.finish()


def _race_checker(compiler: Compiler, values: dict):
    """A RaceChecker for a kernel with thread-binding loops (None without: one invocation)."""
    if not compiler.thread_loops:
        return None
    extents = {"threadIdx": {}, "blockIdx": {}}
    names = {}
    for thread, extent, name in compiler.thread_loops:
        kind = thread.split(".")[0]
        if kind not in extents:
            continue
        names.setdefault(thread, name)
        old = extents[kind].get(thread, 1)
        extents[kind][thread] = None if old is None else _extent(extent, values, old)
    return RaceChecker(compiler.sites, names, extents["threadIdx"], extents["blockIdx"],
                       compiler.written)


def _extent(extent, values: dict, old: int):
    """max(old, the extent's value), or None when it depends on more than the arguments."""
    if isinstance(extent, IntImm):
        return max(old, extent.value)
    free = {n for n in walk(extent) if isinstance(n, Var)}
    if not free <= values.keys():
        return None
    return max(old, int(evaluate(extent, {v: values[v] for v in free})))


def evaluate(expr, env: dict | None = None):
    """Value of a closed expression, its free vars taken from `env` (Var -> number).

    Returns a Python int/float/bool for a scalar and a numpy array for a vector.
    """
    env = env or {}
    compiler = Compiler()
    for v in env:
        compiler.bind(v)
    fn = compiler.expr(convert(expr))
    slots = [None] * len(compiler.value_ndims)
    for v, value in env.items():
        if not isinstance(v, Var) or not isinstance(v.dtype, DataType):
            raise InterpreterError(f"evaluate: environment key {show(v)} is not a value variable")
        npdt = v.dtype.numpy_dtype()
        slots[compiler.slot(v)] = (npdt.type(value) if v.dtype.lanes == 1
                                   else np.asarray(value, npdt))
    with np.errstate(all="ignore"):
        result = fn(Frame(slots, None, RunState(compiler.value_ndims)))
    if np.ndim(result) == 0:
        return result.item() if hasattr(result, "item") else result
    return np.asarray(result)
