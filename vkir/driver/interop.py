"""`vkir.asarray`: numpy arrays, torch CPU tensors and buffer-protocol objects as device arrays,
in place where the device can use host memory (VK_EXT_external_memory_host, vkir.runtime's
host_import), else with one copy.

The source is first seen as a numpy view without a copy: `np.from_dlpack` for `__dlpack__`
producers (torch, numpy, DLPack 1.x consumers), `memoryview` for the buffer protocol. Its bytes
are imported when they are C-contiguous, writeable, of a dtype vkir arrays hold, and at an address
the device can bind; the DeviceArray (`is_view` True) then holds the view, and through it the
source (a torch tensor through its DLPack manager, a bytearray through its buffer export, which
also keeps it from being resized), for as long as the device memory exists.

Keeping the source alive does not keep its memory in place: `tensor.resize_(...)` and
`tensor.untyped_storage().resize_(0)` free the bytes under a live tensor, and numpy's
`resize(refcheck=False)` moves them. An import of a torch tensor or a numpy array therefore
carries a probe (`_probe`) that compares the source's current data pointer and size with what
was imported; every use of the array (kernel calls, launches, sequences and their replays,
shaders, host reads, the interpreter) asks it first and raises ArgumentError naming the array
where the memory is no longer the source's (docs/interop.md lists the hazards, mmap truncation
among them, which no probe sees).
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError
from .arrays import DeviceArray, array, resolve_device

__all__ = ["asarray"]


def _host_view(obj, copy):
    """(numpy array over `obj`'s memory, whether it is a view of `obj` rather than a copy)."""
    if hasattr(obj, "__dlpack__"):
        try:
            return np.from_dlpack(obj), True
        except (BufferError, RuntimeError, TypeError, ValueError) as exc:
            if copy is False:
                raise ArgumentError(f"asarray(copy=False): the host cannot read this "
                                    f"{type(obj).__name__} in place ({exc})") from None
            try:
                return np.from_dlpack(obj, copy=True), False
            except (BufferError, RuntimeError, TypeError, ValueError):
                pass   # no host copy through DLPack either: try numpy's conversions
    try:
        return np.asarray(memoryview(obj)), True
    except TypeError:
        pass
    if copy is False:
        raise ArgumentError(f"asarray(copy=False): a {type(obj).__name__} has neither "
                            "__dlpack__ nor the buffer protocol, so its values must be copied")
    try:
        return np.asarray(obj), False
    except (TypeError, ValueError) as exc:
        raise ArgumentError(f"asarray: cannot read a {type(obj).__name__} as an array "
                            f"({exc})") from None


def _probe(obj, address: int, nbytes: int):
    """A callable that says why `obj` no longer holds the `nbytes` bytes imported at
    `address` (None while it does), for the sources that can move or free their memory under
    a live object: torch tensors (`resize_`, a storage's `resize_`, `set_`) and numpy arrays
    (`resize(refcheck=False)`); None for the others (a buffer export pins its object)."""
    kind = type(obj).__name__
    if isinstance(obj, np.ndarray):
        def numpy_probe():
            now, size = obj.__array_interface__["data"][0], obj.nbytes
            if now != address or size != nbytes:
                return (f"its {kind} was resized or moved since vkir.asarray imported it "
                        f"({nbytes} bytes at {address:#x}, now {size} at {now:#x}), so the "
                        "imported memory may be freed")
            return None
        return numpy_probe
    data_ptr, storage = getattr(obj, "data_ptr", None), getattr(obj, "untyped_storage", None)
    if not (callable(data_ptr) and callable(storage)):
        return None

    def torch_probe():
        try:
            now = int(obj.data_ptr())
            size = int(obj.nbytes)
            held = obj.untyped_storage()
            start, length = int(held.data_ptr()), int(held.nbytes())
        except Exception as exc:   # noqa: BLE001 - whatever the source says is the reason
            return f"its {kind} cannot say where its memory is ({type(exc).__name__}: {exc})"
        if now != address or size != nbytes or not (
                start <= address and address + nbytes <= start + length):
            return (f"its {kind} was resized or its storage freed since vkir.asarray imported "
                    f"it ({nbytes} bytes at {address:#x}; the tensor now has {size} at "
                    f"{now:#x}, its storage {length} at {start:#x}), so the imported memory "
                    "may be freed")
        return None
    return torch_probe


def _why_not_in_place(dev, host: np.ndarray) -> str | None:
    """None when `host`'s memory can back a device array on `dev`, else why not."""
    from ..runtime.host_import import importable

    if not host.flags.c_contiguous:
        return "it is not C-contiguous"
    if not host.flags.writeable:
        return "it is read-only (kernels could write it)"
    return importable(dev, host.ctypes.data, host.nbytes)


def asarray(obj, device=None, copy=None) -> DeviceArray:
    """`obj` (a DeviceArray, anything with `__dlpack__` or the buffer protocol: numpy arrays,
    torch CPU tensors, memoryview, bytearray; any other array-like is copied) as a device
    array on `device` (None: the default device).

    Where the device has VK_EXT_external_memory_host and the memory is C-contiguous, writeable
    and aligned as the device binds buffers, the memory is used in place: the result's
    `is_view` is True, it keeps `obj` alive, and kernel writes into it show in `obj` after
    the call (or the launch's wait). Otherwise the values are copied once; `copy=False` then
    raises ArgumentError saying why, and `copy=True` always copies."""
    if copy is not None and not isinstance(copy, bool):
        raise ArgumentError(f"asarray: copy must be True, False or None, got {copy!r}")
    dev = resolve_device(device)
    if isinstance(obj, DeviceArray):
        if obj.device is dev and not copy:
            return obj
        if copy is False:
            raise ArgumentError(f"asarray(copy=False): the array lives on "
                                f"{obj.device.info.name!r}, not {dev.info.name!r}")
        return array(obj, device=dev)
    host, in_place = _host_view(obj, copy)
    if host.dtype.kind not in "biuf" or not host.dtype.isnative:
        raise ArgumentError(f"vkir arrays hold bool, int, uint or float data, got {host.dtype}")
    if copy or not in_place:
        if copy is False:
            raise ArgumentError(f"asarray(copy=False): a {type(obj).__name__} cannot be used "
                                "in place")
        return array(host, device=dev)
    why = _why_not_in_place(dev, host)
    if why is None:
        from ..runtime.host_import import HostBuffer

        try:
            address = host.ctypes.data
            buf = HostBuffer(dev, address, host.nbytes, (host, obj),
                             _probe(obj, address, host.nbytes))
        except ArgumentError as exc:   # no host-coherent memory type for these pages
            why = str(exc)
        else:
            return DeviceArray(buf, host.shape, host.dtype, dev)
    if copy is False:
        raise ArgumentError(f"asarray(copy=False): this {type(obj).__name__}'s memory cannot "
                            f"be used in place on {dev.info.name!r}: {why}")
    return array(host, device=dev)
