"""Buffer addresses of existing shaders: the values of `buffer_reference` (SPIR-V
PhysicalStorageBuffer pointer) members, in push constants or in a buffer given as a dict of its
members (ShaderKernel, vkir.driver.shader).

A pointer member takes

- a DeviceArray: its device address (the array is kept alive for the call, the launch or the
  sequence that uses it, and a sequence orders barriers by it as by a bound buffer);
- a numpy array: copied into a device buffer of its own for the call and, unless every member
  of the pointed-to block is NonWritable (`readonly`), copied back after it (not inside a
  sequence, which makes no hidden copies);
- an int: a device address as is (0 is the null pointer), e.g. `device_address(a) + 16`.

`device_address(array)` is the address of a DeviceArray's first byte, what a buffer_reference
linked list built in one array links with. Everything goes through the device seam: the
runtime's allocator makes, fills and addresses the buffers (`Allocator.address`).
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError

__all__ = ["ShaderAddresses", "device_address", "is_address"]


def is_address(t) -> bool:
    """Whether reflected type `t` is a buffer_reference (a PhysicalStorageBuffer pointer)."""
    return t.kind == "pointer" and t.storage_class == "PhysicalStorageBuffer"


def device_address(array) -> int:
    """The 64-bit device address of DeviceArray `array`'s first element, as a shader's
    buffer_reference holds it (UnsupportedError on a device without bufferDeviceAddress)."""
    from .arrays import DeviceArray
    from .dispatch import as_runtime

    if not isinstance(array, DeviceArray):
        raise ArgumentError(f"device_address takes a vkir DeviceArray, got {type(array).__name__}")
    return as_runtime(array.device).allocator.address(array.buffer)


def _written(pointee) -> bool:
    """Whether a shader may write through a pointer to `pointee` (a block is read-only when
    every member is NonWritable)."""
    if pointee is None or pointee.kind != "struct" or not pointee.members:
        return True
    return not all(m.readonly for m in pointee.members)


class ShaderAddresses:
    """The pointer values of one call of shader `name` on seam runtime `rt` (`device`: the
    runtime's device). `resolve(value, type, what)` gives the address to pack; afterwards `keep`
    holds what must stay alive while the work may run, `addressed` the (device buffer, access)
    pairs reached, and `copy_back()` returns numpy pointees. `device_only` refuses numpy
    pointees (sequences)."""

    def __init__(self, name: str, rt, device_only: bool = False):
        self.name, self.rt, self.device_only = name, rt, device_only
        self.keep: list = []
        self.addressed: list = []
        self.copies: list = []   # (device buffer, numpy array) to copy back

    def resolve(self, value, t, what: str) -> int:
        """The address a pointer member of type `t` takes for `value` (see the module)."""
        from .arrays import DeviceArray

        pointee = t.element
        mode = "rw" if _written(pointee) else "r"
        if isinstance(value, DeviceArray):
            if value.device is not self.rt.device:
                raise ArgumentError(f"{what} points to an array on {value.device.info.name!r}, "
                                    f"the shader runs on {self.rt.name!r}")
            self.keep.append(value)
            self.addressed.append((value.buffer, mode))
            return self.rt.allocator.address(value.buffer)
        if isinstance(value, np.ndarray):
            if self.device_only:
                raise ArgumentError(f"{what} is a numpy array; inside a sequence a pointer takes "
                                    "a DeviceArray (vkir.array), since a sequence makes no "
                                    "hidden copies")
            if not value.flags.c_contiguous:
                raise ArgumentError(f"{what} is not C-contiguous (use np.ascontiguousarray)")
            if not value.nbytes:
                raise ArgumentError(f"{what} is an empty array; a pointer needs memory to point to")
            alloc = self.rt.allocator
            buf = alloc.allocate(value.nbytes)
            alloc.copy_in(buf, value)
            self.keep.append(buf)
            self.addressed.append((buf, mode))
            if mode == "rw" and value.flags.writeable:
                self.copies.append((buf, value))
            return alloc.address(buf)
        if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            if not 0 <= int(value) < 1 << 64:
                raise ArgumentError(f"{what}: a device address is a 64-bit unsigned int, got "
                                    f"{value!r}")
            return int(value)
        if value is None:
            return 0
        raise ArgumentError(f"{what} is a buffer_reference ({t.dtype}): give a DeviceArray, a "
                            f"numpy array or a device address, got {type(value).__name__}")

    def copy_back(self) -> None:
        """Copy the numpy pointees back from their device buffers (after the work ended)."""
        for buf, host in self.copies:
            self.rt.allocator.copy_out(buf, host)

    def readbacks(self) -> list:
        """The copy-backs as a LaunchHandle runs them at the end: [(reader, host array)]."""
        return [(_Readback(self.rt.allocator, buf), host) for buf, host in self.copies]


class _Readback:
    """One copy-back of a numpy pointee (`read(out)`), for LaunchHandle."""

    __slots__ = ("allocator", "buf")

    def __init__(self, allocator, buf):
        self.allocator, self.buf = allocator, buf

    def read(self, out) -> None:
        self.allocator.copy_out(self.buf, out)


def pack_block(binding, value: dict, pack, what: str) -> np.ndarray:
    """The bytes (a uint8 array) of buffer `binding`'s block given as a dict of its members:
    each member packed by `pack(out, offset, type, value, what)`; a trailing runtime array takes
    a list or array of any length."""
    block = binding.type
    names = [m.name for m in block.members]
    extra = [k for k in value if k not in names]
    missing = [n for n in names if n not in value]
    if extra or missing:
        raise ArgumentError(f"{what}: member {(extra or missing)[0]!r} is "
                            f"{'unknown' if extra else 'missing'} (the block has: "
                            f"{', '.join(names)})")
    size, tail = block.size, None
    if binding.element is not None:
        tail = block.members[-1]
        items = value[tail.name]
        items = items.tolist() if isinstance(items, np.ndarray) else items
        if not isinstance(items, (list, tuple)):
            raise ArgumentError(f"{what}.{tail.name} is a runtime array: give a list or array")
        size = binding.offset + len(items) * binding.array_stride
    out = bytearray(max(size, binding.fixed_size, 4))
    for m in block.members:
        if m is tail:
            step = binding.array_stride or tail.type.element.size
            for i, item in enumerate(items):
                pack(out, m.offset + i * step, tail.type.element, item, f"{what}.{m.name}[{i}]")
        else:
            pack(out, m.offset, m.type, value[m.name], f"{what}.{m.name}")
    return np.frombuffer(bytes(out), dtype=np.uint8).copy()
