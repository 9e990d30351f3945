"""`vkir.map(func)`: a `@T.func` device function applied element by element over arrays, with
numpy's broadcasting, as one kernel launch.

```python
@T.func
def shade(n: T.float32x3, l: T.float32x3) -> T.float32:
    return T.max(T.dot(n, l), T.float32(0))

y = vkir.map(shade)(normals, light)     # (..., 3) and (3,) arrays -> a (...) array
```

Each parameter takes an array of its element type; a vector parameter (`T.float32x3`) takes an
array whose last axis has the vector's lanes (that axis is the vector), and a vector result adds
such an axis. The other axes broadcast as numpy's do (a Python number is a 0-d array of the
parameter's type). numpy arrays in give a numpy array out; any vkir DeviceArray in gives a
DeviceArray out, on its device (all device arrays must share one); torch CPU tensors are read in
place (numpy views of their memory) and give a torch tensor out. `out=` takes the result array
(numpy, torch or DeviceArray, of the result's exact shape and dtype) and is returned.

The kernel is written once per (function, argument dimensions) and built once per device. Where
every argument has the result's shape, holds one element, or is a tile of the result's last
axes of whole groups of 8 elements (a bias row), and neither the parameters nor the result are
vectors (the common case: `vkir.map(axpy)(a, x, y)`), the arrays are taken as flat and the
kernel is the hand-written vadd's form (`flat_kernel_script`): each invocation
computes `ELEMENTS` consecutive results as float32x4-wide vector operations (one 4-lane load
of the element type per full-size or tile argument, one-element arguments broadcast), 64
invocations per workgroup, the last partial group element by element. On drivers whose storage accesses cost
a loop over the SIMD lanes per 32- or 64-bit component (lavapipe: the "storage_loads_per_lane"
quirk) and that have 64-bit integers, a 32-bit result is stored eight elements at a time as one
uint64x4 (half the store loops; `vkir.benchmarks.access_forms vadd_layouts` measures the forms).
Otherwise it is the script

    for i0 in T.parallel(n0):           # one parallel loop per result axis
        for i1 in T.parallel(n1):
            out[i0, i1] = func(a[T.min(i0, a0 - 1), ...], ...)

(`T.min` with the argument's own extent reads index 0 of an axis of length 1: the broadcast),
which vkir.build binds to the device's grid with a workgroup size chosen for it. Shapes that do
not broadcast, wrong dtypes and wrong lanes are `ArgumentError`s naming the shapes.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import ArgumentError
from .ir.dtype import DataType
from .script.device_functions import DeviceFunction

__all__ = ["map"]


def map(func, *, device=None):  # noqa: A001 - vkir.map, as Warp's wp.map
    """A callable applying the device function `func` over arrays (see the module doc);
    `device` is where numpy-only calls run (the default device when None)."""
    if not isinstance(func, DeviceFunction):
        raise ArgumentError(f"vkir.map expects a @T.func device function, got "
                            f"{type(func).__name__}")
    return Mapped(func, device)


class Mapped:
    """`vkir.map(func)`: call it with one array (or number) per parameter of `func`, and
    optionally `out=`. `kernels` holds the Kernels built so far, by (argument dimensions,
    device)."""

    def __init__(self, func: DeviceFunction, device=None):
        self.func = func
        self.device = device
        self.kernels = {}
        self._wide_stores = {}   # per device: (wide_stores, the device, kept alive for its id)

    def __repr__(self):
        return f"vkir.map({self.func.name})"

    def __call__(self, *arrays, out=None):
        from .driver.arrays import DeviceArray
        from .driver.call_args import is_tensor, tensor_as_numpy

        fn = self.func
        # torch tensors as numpy views of their memory; a torch result for torch arguments
        tensors = [a for a in arrays if is_tensor(a)]
        arrays = tuple(tensor_as_numpy(a, f"{self!r}") if is_tensor(a) else a for a in arrays)
        out_tensor = out if is_tensor(out) else None
        if out_tensor is not None:
            out = tensor_as_numpy(out, f"{self!r}: out=")
        if len(arrays) != len(fn.params):
            raise ArgumentError(f"{self!r}: {fn.signature()} takes {len(fn.params)} arrays, got "
                                f"{len(arrays)}")
        args, shapes = [], []
        for value, (name, dtype) in zip(arrays, fn.params):
            arg, shape = self._argument(value, name, dtype)
            args.append(arg)
            shapes.append(shape)
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            given = ", ".join(f"{name} {tuple(a.shape)}" for a, (name, _) in zip(args, fn.params))
            elements = ", ".join(str(tuple(s)) for s in shapes)
            raise ArgumentError(f"{self!r}: the arguments' shapes do not broadcast: {given} "
                                f"(element shapes {elements}, a vector parameter's lanes taken "
                                f"off its last axis)") from None
        on_device = [a for a in args if isinstance(a, DeviceArray)]
        if len({id(a.device) for a in on_device}) > 1:
            raise ArgumentError(f"{self!r}: the device arrays are on different devices")
        device = on_device[0].device if on_device else self.device
        ret = fn.ret
        lanes = (ret.lanes,) if ret.lanes > 1 else ()
        full = shape + lanes                 # the result's shape
        inner = (shape or (1,)) + lanes      # what the kernel writes (a 0-d result: 1 element)
        out_dtype = np.dtype(ret.element_of().numpy_dtype())
        if out is None:
            if on_device:
                from .driver.arrays import empty

                out = empty(inner, out_dtype, device=device)   # (1,) for a 0-d device result
            else:
                out = np.empty(full, out_dtype)
        elif not isinstance(out, (np.ndarray, DeviceArray)):
            raise ArgumentError(f"{self!r}: out= must be a numpy array or a DeviceArray, got "
                                f"{type(out).__name__}")
        elif tuple(out.shape) not in (full, inner) or np.dtype(out.dtype) != out_dtype:
            raise ArgumentError(f"{self!r}: out= has shape {tuple(out.shape)} and dtype "
                                f"{np.dtype(out.dtype)}; the result has shape {full} and dtype "
                                f"{out_dtype}")
        target = out.reshape(inner) if isinstance(out, np.ndarray) else out   # a view
        flat = _flat_kinds(fn, shapes, shape)
        if flat is not None:
            self._run_flat(flat, args, target, device)
        else:
            kernel = self._kernel(tuple(len(s) for s in shapes), len(inner) - len(lanes), device)
            kernel(*[a if len(s) or fn.params[k][1].lanes > 1 else _one_d(a)
                     for k, (a, s) in enumerate(zip(args, shapes))], target)
        if out_tensor is not None:
            return out_tensor
        if tensors and isinstance(out, np.ndarray):
            import torch

            return torch.from_numpy(out)
        return out

    def _argument(self, value, name: str, dtype: DataType):
        """(the array for parameter `name`, its element shape: the shape less the lanes axis)."""
        from .driver.arrays import DeviceArray

        element = np.dtype(dtype.element_of().numpy_dtype())
        if isinstance(value, (bool, int, float, np.generic)) and dtype.lanes == 1:
            value = np.asarray(value, element)
        if not isinstance(value, (np.ndarray, DeviceArray)):
            raise ArgumentError(f"{self!r}: argument '{name}' must be a numpy array, a "
                                f"DeviceArray or a number, got {type(value).__name__}")
        if np.dtype(value.dtype) != element:
            raise ArgumentError(f"{self!r}: argument '{name}' ({dtype}) takes {element} "
                                f"elements, got {np.dtype(value.dtype)}")
        shape = tuple(value.shape)
        if dtype.lanes > 1:
            if not shape or shape[-1] != dtype.lanes:
                raise ArgumentError(f"{self!r}: argument '{name}' is {dtype}: its last axis "
                                    f"must have {dtype.lanes} lanes, got shape {shape}")
            shape = shape[:-1]
        if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
            value = np.ascontiguousarray(value)
        return value, shape

    def _kernel(self, ndims: tuple, out_ndim: int, device):
        from .api import build
        from .script import from_script

        key = (ndims, out_ndim, id(device) if device is not None else None)
        kernel = self.kernels.get(key)
        if kernel is None:
            text = kernel_script(self.func, ndims, out_ndim)
            prim = from_script(text, env={"f": self.func}, file=f"<vkir.map({self.func.name})>")
            kernel = build(prim, device=device) if device is not None else build(prim)
            self.kernels[key] = (kernel, device)
            return kernel
        return kernel[0]


    def _run_flat(self, kinds: tuple, args: list, target, device) -> None:
        """Run the flat kernel (see flat_kernel_script) on `args` (by `kinds`) into `target`."""
        n = math.prod(target.shape)
        wide = self._wide(device)
        group = 8 if wide else 4
        whole = n // group * group          # the elements of whole groups
        tail = n != whole
        kernel = self._flat_kernel(kinds, wide, tail, device)
        call = []
        for a, kind in zip((_flat(a) for a in args), kinds):
            if kind == "one":
                call.append(a)
                continue
            size = whole if kind == "full" else a.shape[0]   # a tile: a multiple of 8
            # a slice is a new buffer (and a new texel view) per call: only where needed
            head = a if size == a.shape[0] else a[:size]
            call.append(head.reshape(size // 4, 4))   # a view: 4-lane elements
            if tail:
                call.append(a)
        kernel(*call, _flat(target))

    def _wide(self, device) -> bool:
        """Whether this function's flat kernels on `device` store uint64x4 (wide_stores)."""
        key = id(device) if device is not None else None
        if key not in self._wide_stores:
            self._wide_stores[key] = (wide_stores(self.func, device), device)
        return self._wide_stores[key][0]

    def _flat_kernel(self, kinds: tuple, wide: bool, tail: bool, device):
        from .api import build
        from .script import from_script

        key = ("flat", kinds, tail, id(device) if device is not None else None)
        kernel = self.kernels.get(key)
        if kernel is None:
            text = flat_kernel_script(self.func, kinds, wide, tail)
            prim = from_script(text, env={"f": self.func}, file=f"<vkir.map({self.func.name})>")
            built = build(prim, device=device) if device is not None else build(prim)
            self.kernels[key] = (built, device)
            return built
        return kernel[0]


# results per invocation of a flat kernel, and its workgroup size (see the module doc)
ELEMENTS = 16
WORKGROUP = 64
_STORE_LOOP_QUIRK = "storage_loads_per_lane"   # vkir.quirks.STORAGE_LOADS_PER_LANE


def wide_stores(func: DeviceFunction, device) -> bool:
    """Whether a flat kernel of `func` on `device` stores its results as uint64x4 (eight 32-bit
    elements at once): a 32-bit scalar result on a device with the per-lane store loops of
    llvmpipe and with 64-bit integers (the interpreter and other devices: no)."""
    ret = func.ret
    if ret.lanes != 1 or ret.bits != 32:
        return False
    if device is None:
        from .api import device as default_device

        device = default_device()
    info = getattr(device, "info", None)
    return (info is not None and _STORE_LOOP_QUIRK in getattr(info, "quirks", ())
            and "int64" in getattr(info, "features", ()))


def _flat_kinds(func: DeviceFunction, shapes: list, shape: tuple) -> tuple | None:
    """For each argument, "full" (it has the result's shape), "one" (a single element) or
    "tile" (past leading axes of length 1, the result's last axes, a multiple of 8 elements:
    repeated along the leading ones, as a bias row is), when the call can run the flat kernel
    (no vector parameter or result, every argument one of these, at least one full one of at
    least 8 elements); else None."""
    if func.ret.lanes != 1 or any(dtype.lanes != 1 for _, dtype in func.params):
        return None
    if math.prod(shape) < 8:
        return None
    kinds = []
    for s in shapes:
        if tuple(s) == tuple(shape):
            kinds.append("full")
        elif math.prod(s) == 1:
            kinds.append("one")
        elif _is_tile(tuple(s), tuple(shape)):
            kinds.append("tile")
        else:
            return None
    return tuple(kinds) if "full" in kinds else None


def _is_tile(s: tuple, shape: tuple) -> bool:
    """Whether an argument of element shape `s` is a tile of the result's `shape`: less its
    leading 1s, the result's last axes, with a multiple of 8 elements (whole groups)."""
    while s and s[0] == 1:
        s = s[1:]
    return (0 < len(s) < len(shape) + 1 and tuple(shape[len(shape) - len(s):]) == s
            and math.prod(s) % 8 == 0)


def _flat(a):
    """`a` as a 1-d array of its elements (a view: numpy arrays here are C-contiguous)."""
    size = math.prod(a.shape)
    return a.reshape(size) if tuple(a.shape) != (size,) else a


def flat_kernel_script(func: DeviceFunction, kinds: tuple, wide: bool = False,
                       tail: bool = False) -> str:
    """The script of the flat kernel applying `func` (named `f` in its env) to arguments of
    kinds `kinds` (see the module doc): a "full" argument k is `a{k}`, its first 4 * q elements
    as q 4-lane vectors (plus, with `tail`, the whole array again as `t{k}` of n elements, for
    the results past the last whole group); a "tile" argument k is `a{k}`, all its m{k}
    elements as 4-lane vectors (and `t{k}` with `tail`), element i of the result reading its
    element i % m{k}; a "one" argument is `a{k}` of one element. Groups of
    4 results (8 with `wide`) are computed as 4-lane vectors; each invocation takes ELEMENTS
    consecutive results, and the invocation after the last whole group (with `tail`) computes
    the rest one by one. With `wide`, a group of eight 32-bit results is stored as one
    uint64x4 through a pointer cast of `out`. Parameters typed as 4-lane vectors keep
    whole-vector reads (texel fetches on lavapipe), where a pointer cast of a scalar parameter
    would make them storage-buffer reads."""
    ret = func.ret
    group = 8 if wide else 4                  # results per group (one store)
    per = ELEMENTS // group                   # groups per invocation
    params = []
    for k, ((_, dtype), kind) in enumerate(zip(func.params, kinds)):
        if kind == "one":
            params.append(f'a{k}: T.Buffer((1,), "{dtype}")')
        else:
            vectors, elements = ('"q"', '"n"') if kind == "full" else (f'"m{k}"', f'"n{k}"')
            params.append(f'a{k}: T.Buffer(({vectors},), "{dtype}x4")')
            if tail:
                params.append(f't{k}: T.Buffer(({elements},), "{dtype}")')
    params.append(f'out: T.Buffer(("n",), "{ret}")')

    def call(lane: str | None, at: str = "") -> str:
        """f of the arguments: lane `lane` of the group's values (local copies of the loaded
        vectors), or element `at` of the tail."""
        def tail_at(k, kind):
            return f"t{k}[{at}]" if kind == "full" else f"t{k}[({at}) % n{k}]"

        return "f(" + ", ".join(
            f"a{k}[0]" if kind == "one" else
            (f"x{k}[{lane}]" if lane is not None else tail_at(k, kind))
            for k, kind in enumerate(kinds)) + ")"

    groups = "q // 2" if wide else "q"
    launched = f"{groups} + 1" if tail else groups
    lines = [f"def map_{func.name}({', '.join(params)}):"]
    if wide:
        lines.append('    out_w = T.decl_buffer((n // 8,), "uint64x4", data=out.data)')
    lines += [f"    for bx in T.thread_binding(({launched} + {per * WORKGROUP - 1}) // "
              f"{per * WORKGROUP}, 'blockIdx.x'):",
              f"        for tx in T.thread_binding({WORKGROUP}, 'threadIdx.x'):"]
    pad = " " * 12
    # each full argument's group is loaded as whole 4-lane vectors into a local copy x{k}
    # (indexing a loaded vector by lane in a vectorized loop would become a select chain)
    for k, ((_, dtype), kind) in enumerate(zip(func.params, kinds)):
        if kind != "one":
            lines.append(f'{pad}x{k} = T.alloc_buffer(({group},), "{dtype}", scope="local")')
    if wide:
        lines.append(f'{pad}r = T.alloc_buffer((8,), "{ret}", scope="local")')
    lines += [f"{pad}for u in T.unroll({per}):",
              f"{pad}    g = (bx * {WORKGROUP} + tx) * {per} + u",
              f"{pad}    if g < {groups}:"]
    for h in range(group // 4):
        at = f"g * {group // 4} + {h}"
        lines += [f"{pad}        x{k}[T.ramp({4 * h}, 1, 4)] = "
                  + (f"a{k}[{at}]" if kind == "full" else f"a{k}[({at}) % m{k}]")
                  for k, kind in enumerate(kinds) if kind != "one"]
    if wide:
        for h in (0, 1):
            lines += [f"{pad}        for v in T.vectorized(4):",
                      f"{pad}            r[{4 * h} + v] = {call(f'{4 * h} + v')}"]
        halves = ", ".join(f'T.reinterpret(r[T.ramp({4 * h}, 1, 4)], "uint64x2")' for h in (0, 1))
        lines.append(f"{pad}        out_w[g] = T.shuffle([{halves}], [0, 1, 2, 3])")
    else:
        lines += [f"{pad}        for v in T.vectorized(4):",
                  f"{pad}            out[g * 4 + v] = {call('v')}"]
    if tail:
        lines += [f"{pad}    if g == {groups}:",
                  f"{pad}        for v in T.serial({group}):",
                  f"{pad}            if g * {group} + v < n:",
                  f"{pad}                out[g * {group} + v] = {call(None, f'g * {group} + v')}"]
    return "\n".join(lines) + "\n"


def kernel_script(func: DeviceFunction, ndims: tuple, out_ndim: int) -> str:
    """The script of the kernel applying `func` (named `f` in its env) to arguments of element
    dimensions `ndims` (a 0-d scalar argument is passed as a 1-element array), the result having
    `out_ndim` >= 1 axes (see the module doc)."""
    out = [f"o{d}" for d in range(out_ndim)]
    index = [f"i{d}" for d in range(out_ndim)]
    params, values = [], []
    for k, ((name, dtype), nd) in enumerate(zip(func.params, ndims)):
        element, lanes = dtype.element_of(), dtype.lanes
        dims = [f"a{k}_{d}" for d in range(nd)]
        shape = [f'"{d}"' for d in dims] + ([str(lanes)] if lanes > 1 else [])
        params.append(f'a{k}: T.Buffer(({", ".join(shape or ["1"])},), "{element}")')
        # argument axis d lines up with result axis d + out_ndim - nd (numpy's rule)
        at = [f"T.min({index[d + out_ndim - nd]}, {dims[d]} - 1)" for d in range(nd)]
        if lanes > 1:
            parts = ", ".join(f"a{k}[{', '.join([*at, str(lane)])}]" for lane in range(lanes))
            values.append(f"T.{dtype}({parts})")
        else:
            values.append(f"a{k}[{', '.join(at or ['0'])}]")
    ret = func.ret
    out_shape = [f'"{o}"' for o in out] + ([str(ret.lanes)] if ret.lanes > 1 else [])
    params.append(f'out: T.Buffer(({", ".join(out_shape)},), "{ret.element_of()}")')
    lines = [f"def map_{func.name}({', '.join(params)}):"]
    for d in range(out_ndim):
        lines.append("    " * (d + 1) + f"for {index[d]} in T.parallel({out[d]}):")
    pad = "    " * (out_ndim + 1)
    call = f"f({', '.join(values)})"
    at = ", ".join(index)
    if ret.lanes > 1:
        lines.append(f"{pad}r = {call}")
        lines += [f"{pad}out[{at}, {lane}] = r[{lane}]" for lane in range(ret.lanes)]
    else:
        lines.append(f"{pad}out[{at}] = {call}")
    return "\n".join(lines) + "\n"


def _one_d(a):
    return a.reshape(1) if isinstance(a, np.ndarray) else a
