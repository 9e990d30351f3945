"""Devices and device arrays: `vkir.devices()`, `vkir.device()`, `DeviceArray` and the
constructors `array`, `empty`, `zeros`, `full`. Small arrays share device memory blocks
(vkir.runtime.suballoc); an array's memory goes back when it is collected."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ArgumentError
from ..ir import DataType

__all__ = ["devices", "device", "resolve_device", "target_for", "DeviceArray", "array", "empty",
           "zeros", "full", "host_copies", "recorded_imports", "check_recorded"]


# -- devices -------------------------------------------------------------------------------------
def devices():
    """Every Vulkan device: a list of vkir.runtime.DeviceInfo."""
    from .. import runtime

    return runtime.devices()


def device(selector=None):
    """The opened device for `selector` ($VKIR_DEVICE, "cpu"/"lavapipe", "gpu", an index, a
    DeviceInfo), else the best one (discrete > integrated > virtual > cpu)."""
    from .. import runtime

    if selector is not None and not isinstance(selector, (str, int, runtime.DeviceInfo)):
        if isinstance(selector, runtime.Device):
            return selector
        raise ArgumentError(f"device selector must be a str, int or DeviceInfo, got {selector!r}")
    return runtime.open_device(selector)


def resolve_device(dev):
    """An opened runtime Device for `dev`: itself when it is one, else `device(dev)` (a
    selector, a DeviceInfo or None for the default)."""
    from .. import runtime

    return dev if isinstance(dev, runtime.Device) else device(dev)


def target_for(info, precise: bool = False):
    """The vkir.Target of a runtime Device or DeviceInfo (`Target.from_device`); `precise` asks
    for float arithmetic the driver may not contract or reassociate."""
    from dataclasses import replace

    from ..target import Target

    target = Target.from_device(info)
    return replace(target, precise=True) if precise else target


_device = resolve_device  # the former private name


# -- arrays --------------------------------------------------------------------------------------
def _numpy_dtype(dtype) -> np.dtype:
    if isinstance(dtype, str):
        try:
            dtype = DataType.parse(dtype)
        except ValueError:
            pass
    if isinstance(dtype, DataType):
        if dtype.code == "handle":
            raise ArgumentError(f"vkir arrays hold bool, int, uint or float data, got {dtype}")
        return dtype.element_of().numpy_dtype()
    try:
        npd = np.dtype(dtype)
    except TypeError as exc:
        raise ArgumentError(f"unknown dtype {dtype!r}") from exc
    if npd.kind not in "biuf" or npd.byteorder == ">":
        raise ArgumentError(f"vkir arrays hold bool, int, uint or float data, got {npd}")
    return npd


def _shape(shape) -> tuple:
    """`shape` (an int or a sequence of ints) as a tuple of non-negative Python ints."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    try:
        dims = tuple(dims)
    except TypeError:
        raise ArgumentError(f"shape must be an int or a sequence of ints, got {shape!r}") from None
    if not all(isinstance(s, (int, np.integer)) and not isinstance(s, (bool, np.bool_))
               for s in dims):
        raise ArgumentError(f"shape must be an int or a sequence of ints, got {shape!r}")
    if any(s < 0 for s in dims):
        raise ArgumentError(f"negative dimension in shape {shape}")
    return tuple(int(s) for s in dims)


def _lanes(dtype) -> int:
    """Vector lanes of a vkir dtype ("float32x4" -> 4); 1 for scalar and numpy dtypes."""
    if isinstance(dtype, str):
        try:
            dtype = DataType.parse(dtype)
        except ValueError:
            return 1
    return dtype.lanes if isinstance(dtype, DataType) else 1


class DeviceArray:
    """An n-d array in device memory. Bool arrays are stored as int8 bytes (0/1).

    Small arrays share device memory blocks (vkir.runtime.suballoc); the memory is given back
    when the array is collected. Host copies of an array wait for the device work in flight
    that uses it."""

    __slots__ = ("buffer", "shape", "dtype", "device", "__weakref__")

    def __init__(self, buffer, shape: tuple, dtype: np.dtype, dev):
        self.buffer = buffer
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.device = dev

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Size of the device buffer in bytes."""
        return self.buffer.nbytes

    def numpy(self) -> np.ndarray:
        """A new numpy array with the buffer's contents."""
        self.check_source()
        out = np.empty(self.shape, dtype=self.dtype)
        self.buffer.read(out)
        return out

    def host_range(self) -> tuple[int, int] | None:
        """(first, end) host addresses of the array's bytes where the host maps its memory (a
        host-visible buffer, or host memory used in place by `vkir.asarray`), else None
        (device-local memory). Nothing is waited for: what tells which arguments of a call are
        one memory (vkir.aliasing), whichever way each arrived."""
        from ..runtime.host_import import buffer_address

        start = buffer_address(self.buffer)
        return None if start is None else (start, start + self.size * self.dtype.itemsize)

    def check_source(self, what: str | None = None) -> None:
        """ArgumentError where the array is memory of another object (`vkir.asarray`) that no
        longer holds it where it was imported: a torch tensor resized (or its storage), a numpy
        array resized with refcheck=False. The memory may be freed then, so every use of the
        array (calls, launches, sequences, host reads) asks this first. `what` names the array
        in the message (a kernel parameter)."""
        stale = getattr(self.buffer, "stale", None)
        why = None if stale is None else stale()
        if why is not None:
            raise ArgumentError(f"{what or 'this vkir.asarray array'} is memory imported in place "
                                f"and {why}; import the source again (vkir.asarray) after "
                                "resizing it")

    @property
    def is_view(self) -> bool:
        """Whether the array is memory of another object used in place (`vkir.asarray` of a
        numpy array, a torch tensor, a buffer), which the array keeps alive."""
        return bool(getattr(self.buffer, "imported", False))

    def host_view(self) -> np.ndarray | None:
        """A numpy view of the array's memory where the host addresses it in place
        (host-visible and coherent; device work in flight that uses the array is waited for
        first), else None. The view keeps the array alive."""
        from ..runtime.host_import import host_memory

        self.check_source()
        keeper = host_memory(self.buffer, self)
        if keeper is None:
            return None
        return np.frombuffer(keeper, self.dtype, count=self.size).reshape(self.shape)

    @property
    def __array_interface__(self) -> dict:
        """numpy's array interface where the host addresses the memory in place: `np.asarray(a)`
        is then a view (see `host_view`). AttributeError elsewhere, so numpy falls back to
        `__array__` (a copy)."""
        from ..runtime.host_import import host_memory

        self.check_source()
        keeper = host_memory(self.buffer, self)
        if keeper is None:
            raise AttributeError("__array_interface__: this array's memory is not host-visible")
        return {"version": 3, "shape": self.shape, "typestr": self.dtype.str, "data": keeper,
                "strides": None}

    def __array__(self, dtype=None, copy=None):
        """numpy's conversion protocol where the memory is not host-visible (see
        `__array_interface__`): a fresh host copy, so `copy=False` raises ValueError."""
        out = None if copy else self.host_view()
        if out is not None:
            if dtype is None or np.dtype(dtype) == out.dtype:
                return out
            if copy is False:
                raise ValueError(f"converting a {out.dtype} vkir array to {dtype} copies")
            return out.astype(dtype)
        if copy is False:
            raise ValueError("a vkir DeviceArray lives in device memory: converting it to numpy "
                             "always copies (use copy=None or copy=True)")
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of this array (DLPack 1.x, as numpy 2 and torch ask for it):
        kDLCPU, a pointer into the memory, where the host addresses it in place (after the
        device work that uses it); kDLVulkan, an opaque handle that vkir.tvm passes back to
        kernels, for `dl_device=(kDLVulkan, i)` or memory the host cannot address. Versioned
        ("dltensor_versioned") when `max_version` >= (1, 0)."""
        from .dlpack import export

        return export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        """(kDLCPU, 0) on host-addressable memory, else (kDLVulkan, device index)."""
        from .dlpack import device_of

        return device_of(self)

    def write(self, values) -> None:
        """Overwrite the contents with `values` (same shape and dtype)."""
        arr = np.asarray(values)
        if arr.shape != self.shape or arr.dtype != self.dtype:
            raise ArgumentError(f"write of {arr.dtype}{list(arr.shape)} into a "
                                f"{self.dtype}{list(self.shape)} device array")
        self.check_source()
        self.buffer.write(np.ascontiguousarray(arr))

    # -- views: the same memory as another array ----------------------------------------------
    def reshape(self, *shape) -> "DeviceArray":
        """A view of the same memory with another shape of the same size (one -1 is inferred)."""
        wanted = shape[0] if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) \
            else shape
        try:
            wanted = list(wanted)
        except TypeError:
            raise ArgumentError(f"reshape: a shape is ints, got {shape!r}") from None
        if wanted.count(-1) > 1:
            raise ArgumentError(f"reshape{tuple(wanted)}: only one dimension can be -1")
        if -1 in wanted:
            known = math.prod(_shape([s for s in wanted if s != -1]))
            if known == 0 or self.size % known:
                raise ArgumentError(f"cannot reshape a DeviceArray of shape {self.shape} into "
                                    f"{tuple(wanted)}")
            wanted[wanted.index(-1)] = self.size // known
        new = _shape(wanted)
        if math.prod(new) != self.size:
            raise ArgumentError(f"cannot reshape a DeviceArray of shape {self.shape} (size "
                                f"{self.size}) into {new}")
        return DeviceArray(self.buffer, new, self.dtype, self.device)

    def flatten(self) -> "DeviceArray":
        """A 1-d view of the same memory (not a copy, unlike numpy's)."""
        return DeviceArray(self.buffer, (self.size,), self.dtype, self.device)

    def view(self, dtype) -> "DeviceArray":
        """The same bytes as another dtype ("int32", np.uint8, ...): the last dimension scales
        by the ratio of the item sizes, as numpy's `view`."""
        npd = _numpy_dtype(dtype)
        if npd.itemsize == self.dtype.itemsize:
            return DeviceArray(self.buffer, self.shape, npd, self.device)
        last = self.shape[-1] if self.shape else 1
        nbytes = last * self.dtype.itemsize
        if not self.shape or nbytes % npd.itemsize:
            raise ArgumentError(f"view({npd}): a {self.dtype}{list(self.shape)} array's last "
                                f"dimension ({nbytes} bytes) is not a whole number of {npd} items")
        return DeviceArray(self.buffer, (*self.shape[:-1], nbytes // npd.itemsize), npd,
                           self.device)

    def __getitem__(self, key) -> "DeviceArray":
        """A view of contiguous memory: `a[i]` (a row of the first dimension) or `a[i:j]` (rows,
        step 1). Other indexing is an ArgumentError: read the values with `numpy()` first."""
        from ..runtime.slices import slice_buffer

        if not self.shape:
            raise ArgumentError("a 0-d DeviceArray cannot be indexed")
        n = self.shape[0]
        row = math.prod(self.shape[1:]) * self.dtype.itemsize
        if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)):
            i = int(key) + n if key < 0 else int(key)
            if not 0 <= i < n:
                raise ArgumentError(f"index {key} is out of range for {n} rows")
            start, rows, shape = i, 1, self.shape[1:]
        elif isinstance(key, slice) and key.step in (None, 1):
            first, stop, _ = key.indices(n)
            start, rows = first, max(0, stop - first)
            shape = (rows, *self.shape[1:])
        else:
            raise ArgumentError(f"DeviceArray[{key!r}]: views take an int or a slice of step 1 "
                                "over the first dimension (contiguous memory)")
        buffer = slice_buffer(self.buffer, start * row, rows * row)
        return DeviceArray(buffer, shape, self.dtype, self.device)

    def __iter__(self):
        """The rows of the first dimension, each a view (`a[i]`)."""
        if not self.shape:
            raise TypeError("iteration over a 0-d DeviceArray")
        return (self[i] for i in range(self.shape[0]))

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d DeviceArray")
        return self.shape[0]

    def __repr__(self) -> str:
        where = self.device.info.name
        if getattr(self.device, "closed", False):
            return f"DeviceArray({self.dtype}{list(self.shape)}, device={where!r}, closed)"
        stale = getattr(self.buffer, "stale", None)
        if stale is not None and stale() is not None:
            return (f"DeviceArray({self.dtype}{list(self.shape)}, device={where!r}, "
                    "source resized)")
        body = np.array2string(self.numpy(), separator=", ", threshold=20, edgeitems=3,
                               prefix="DeviceArray(")
        return f"DeviceArray({body}, dtype={self.dtype}, device={where!r})"


def _array_args(dtype, device):
    """(dtype, device) of array(); a Device passed where the dtype goes (the earlier signature
    array(values, device)) is taken as the device."""
    from .. import runtime

    if isinstance(dtype, (runtime.Device, runtime.DeviceInfo)) and device is None:
        return None, dtype
    return dtype, device


def array(values, dtype=None, device=None) -> DeviceArray:
    """A device array holding a copy of `values` (any array-like; bool stored as int8),
    converted to `dtype` when given (a numpy or vkir scalar dtype)."""
    from ..runtime.suballoc import allocate

    dtype, device = _array_args(dtype, device)
    dev = resolve_device(device)
    if isinstance(values, DeviceArray):
        values = values.numpy()
    # np.asarray keeps a 0-d value 0-d (np.ascontiguousarray would make it shape (1,))
    arr = np.asarray(values, dtype=None if dtype is None else _numpy_dtype(dtype), order="C")
    if arr.dtype.kind not in "biuf" or arr.dtype.byteorder == ">":
        raise ArgumentError(f"vkir arrays hold bool, int, uint or float data, got {arr.dtype}")
    buf = allocate(dev, arr.nbytes)
    buf.write(arr)
    return DeviceArray(buf, arr.shape, arr.dtype, dev)


def _new(shape, dtype, device) -> DeviceArray:
    from ..runtime.limits import shape_bytes
    from ..runtime.suballoc import allocate

    dev = resolve_device(device)
    shape = _shape(shape)
    lanes = _lanes(dtype)
    if lanes > 1:
        shape = (*shape[:-1], (shape[-1] if shape else 1) * lanes)
    npd = _numpy_dtype(dtype)
    return DeviceArray(allocate(dev, shape_bytes(shape, npd.itemsize)), shape, npd, dev)


def empty(shape, dtype="float32", device=None) -> DeviceArray:
    """An uninitialized device array of `shape` and `dtype` ("float32", np.float32, DataType...):
    as numpy.empty, its contents are whatever the memory held.

    A vector dtype ("float32x4") gives the array of its scalar type with the same bytes, of shape
    S[:-1] + (S[-1] * lanes,): what kernels take for a vector-typed buffer of shape S."""
    return _new(shape, dtype, device)


def zeros(shape, dtype="float32", device=None) -> DeviceArray:
    """A zero-filled device array (shapes and dtypes as `empty`)."""
    out = _new(shape, dtype, device)
    out.buffer.fill_zero()
    return out


def full(shape, value, dtype="float32", device=None) -> DeviceArray:
    """A device array with every element `value` (converted to `dtype`; out-of-range integers
    are an ArgumentError, as numpy 2 refuses them)."""
    out = _new(shape, dtype, device)
    try:
        host = np.full(out.shape, value, dtype=out.dtype)
    except (OverflowError, ValueError, TypeError) as exc:
        raise ArgumentError(f"full: {value!r} is not a {out.dtype} value ({exc})") from None
    out.buffer.write(host)
    return out


def host_copies(arrays) -> tuple:
    """(host arrays, write-back) for a call that runs device arrays on the host (the
    interpreter): `arrays` with each DeviceArray replaced by numpy memory: the memory itself
    where the host maps it (`host_view`: an array imported by `vkir.asarray` is then the very
    bytes of its source, so it and the source passed beside it are one memory, as on the
    device), else one host copy per runtime buffer so that views of one buffer stay views of
    one memory; `write-back()` copies every host copy the run changed back to its buffer."""
    copies = {}     # id(runtime buffer) -> (buffer, host bytes, bytes before)
    out = []
    for a in arrays:
        if not isinstance(a, DeviceArray):
            out.append(a)
            continue
        view = a.host_view()
        if view is not None:
            out.append(view)
            continue
        entry = copies.get(id(a.buffer))
        if entry is None:
            host = a.buffer.read()
            entry = copies[id(a.buffer)] = (a.buffer, host, host.tobytes())
        nbytes = a.size * a.dtype.itemsize
        out.append(entry[1][:nbytes].view(a.dtype).reshape(a.shape))

    def write_back() -> None:
        for buffer, host, before in copies.values():
            if host.tobytes() != before:
                buffer.write(host)

    return out, write_back


def recorded_imports(dispatches) -> tuple:
    """((what, buffer), ...): the memory of recorded dispatches (vkir.runtime Dispatches)
    imported with a probe (`vkir.asarray` of a torch tensor or a numpy array): what their
    bindings bind and the arrays they were recorded with (an import bound in another's memory,
    vkir.aliasing), for `check_recorded` before each replay."""
    out, seen = [], set()

    def add(what, b):
        while b is not None and getattr(b, "stale", None) is None:
            b = getattr(b, "buffer", None)     # a BufferView or texel view: its buffer
        if b is not None and getattr(b, "probe", None) is not None and id(b) not in seen:
            seen.add(id(b))
            out.append((what, b))

    for d in dispatches:
        for i, b in enumerate(list(d.buffers) + [b for b, _ in d.addressed]):
            add(f"{d.name}: the array at binding {i}", b)
        kept = [k for item in d.keep for k in (item if isinstance(item, tuple) else (item,))]
        for a in kept:
            if isinstance(a, DeviceArray):
                add(f"{d.name}: an array it was recorded with", a.buffer)
    return tuple(out)


def check_recorded(imports) -> None:
    """ArgumentError where the source of a recorded import (`recorded_imports`) was resized
    since: a replay would run on memory that may be freed."""
    for what, b in imports:
        why = b.stale()
        if why is not None:
            raise ArgumentError(f"{what} is memory imported in place and {why}; record the "
                                "sequence again with a new import (vkir.asarray) of the resized "
                                "source")
