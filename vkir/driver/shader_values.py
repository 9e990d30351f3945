"""Values of an existing shader's reflected types as bytes (vkir.driver.shader.ShaderKernel):
push-constant members, specialization constants and buffer blocks given as dicts of their
members, laid out as the module declares (std430 or explicit offsets, strides, row-major
matrices); a buffer_reference member's value becomes a device address (shader_addresses)."""

from __future__ import annotations

import struct

import numpy as np

from ..errors import ArgumentError, UnsupportedError
from .shader_addresses import is_address

__all__ = ["dtype_of", "scalar_bytes", "pack_into"]


def dtype_of(t):
    """The vkir DataType of a reflected scalar type."""
    from ..ir import DataType

    return DataType.parse(t.dtype)


def scalar_bytes(t, value) -> bytes:
    """The bytes of one scalar of reflected type `t` (bool as a 32-bit VkBool32)."""
    if t.kind == "bool":
        return struct.pack("<I", int(bool(value)))
    dt = dtype_of(t)
    return np.array(value).astype(dt.numpy_dtype()).tobytes()


def pack_into(out: bytearray, offset: int, t, value, what: str, addresses=None) -> None:
    """Write `value` laid out as type `t` into `out` at `offset` (std430/explicit layout); a
    buffer_reference member's value becomes an address through `addresses` (ShaderAddresses)."""
    from ..binding import scalar_value

    if is_address(t):
        if addresses is None:
            raise UnsupportedError(f"{what} is a buffer_reference ({t.dtype}), which takes a "
                                   "device address only in calls")
        out[offset:offset + 8] = struct.pack("<Q", addresses.resolve(value, t, what))
        return
    if t.kind in ("bool", "int", "float"):
        raw = scalar_bytes(t, scalar_value(value, dtype_of(t), what))
        out[offset:offset + len(raw)] = raw
        return
    if t.kind == "struct":
        if not isinstance(value, dict):
            raise ArgumentError(f"{what} is a struct: give a dict of its members "
                                f"({', '.join(m.name for m in t.members)})")
        names = [m.name for m in t.members]
        extra = [k for k in value if k not in names] + [n for n in names if n not in value]
        if extra:
            raise ArgumentError(f"{what}: member {extra[0]!r} is unknown or missing "
                                f"(members: {', '.join(names)})")
        for m in t.members:
            pack_into(out, offset + m.offset, m.type, value[m.name], f"{what}.{m.name}",
                       addresses)
        return
    if t.kind not in ("vector", "matrix", "array"):
        raise UnsupportedError(f"{what} has type {t.dtype}, which vkir cannot pack")
    items = value.tolist() if isinstance(value, np.ndarray) else value
    if not isinstance(items, (list, tuple)) or len(items) != t.count:
        kind = {"vector": "components", "matrix": "columns", "array": "elements"}[t.kind]
        raise ArgumentError(f"{what} ({t.dtype}) needs {t.count} {kind}, got {value!r}")
    if t.kind == "matrix" and t.row_major:
        # RowMajor: `stride` (MatrixStride) separates rows; column i's component j lies at
        # row j, component i
        col, scalar = t.element, t.element.element
        for i, column in enumerate(items):
            column = column.tolist() if isinstance(column, np.ndarray) else column
            if not isinstance(column, (list, tuple)) or len(column) != col.count:
                raise ArgumentError(f"{what}[{i}] ({col.dtype}) needs {col.count} components, "
                                    f"got {column!r}")
            for j, value in enumerate(column):
                pack_into(out, offset + j * t.stride + i * scalar.size, scalar, value,
                           f"{what}[{i}][{j}]", addresses)
        return
    step = t.stride or t.element.size
    for i, item in enumerate(items):
        pack_into(out, offset + i * step, t.element, item, f"{what}[{i}]", addresses)
