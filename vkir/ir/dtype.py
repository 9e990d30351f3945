"""Scalar and vector data types ("int32", "float32x4", "bool", "handle") and pointer types."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ArgumentError, UnsupportedError

CODES = ("int", "uint", "float", "bool", "handle")
_DTYPE_RE = re.compile(r"^(int|uint|float|bool|handle)(\d+)?(?:x(\d+))?$")
# types other toolchains name (TVM, ml_dtypes, torch) that vkir knows and has no lowering for
_KNOWN_UNSUPPORTED = re.compile(r"^(bfloat16|float[468]_e\d+m\d+\w*|float4_e2m1fn\w*)(x\d+)?$")


@dataclass(frozen=True, slots=True)
class DataType:
    """A value type: `code` in CODES, `bits` per lane, and `lanes` (1 for scalars)."""

    code: str
    bits: int
    lanes: int = 1

    def __post_init__(self):
        if self.code not in CODES:
            raise ArgumentError(f"unknown type code {self.code!r} (one of {', '.join(CODES)})")
        if not self.lanes >= 1:
            raise ArgumentError(f"lanes must be positive, got {self.lanes!r}")

    @staticmethod
    def parse(text: "str | DataType") -> "DataType":
        """Parse "int32", "uint8", "float16", "float32x4", "bool", "boolx4" or "handle"."""
        if isinstance(text, DataType):
            return text
        if not isinstance(text, str):
            raise ArgumentError(f"expected a dtype string, got {text!r}")
        m = _DTYPE_RE.match(text.strip())
        if not m:
            if _KNOWN_UNSUPPORTED.match(text.strip()):
                raise UnsupportedError(f"dtype {text!r} is not supported by vkir (no Vulkan "
                                       "lowering of bfloat16 or float8/float6/float4 yet): use "
                                       "float16 or float32")
            raise ArgumentError(f"invalid dtype {text!r}")
        code, bits, lanes = m.group(1), m.group(2), m.group(3)
        if code == "bool":
            if bits is not None and bits != "1":
                raise ArgumentError(f"invalid dtype {text!r}: bool has no bit width")
            nbits = 1
        elif code == "handle":
            nbits = 64
        else:
            if bits is None:
                raise ArgumentError(f"invalid dtype {text!r}: missing bit width")
            nbits = int(bits)
            valid = (16, 32, 64) if code == "float" else (8, 16, 32, 64)
            if nbits not in valid:
                raise ArgumentError(f"invalid dtype {text!r}: {code} has widths {valid}")
        nlanes = int(lanes) if lanes is not None else 1
        if nlanes < 1:
            raise ArgumentError(f"invalid dtype {text!r}: lanes must be positive")
        return DataType(code, nbits, nlanes)

    def __str__(self) -> str:
        base = self.code if self.code in ("bool", "handle") else f"{self.code}{self.bits}"
        return base if self.lanes == 1 else f"{base}x{self.lanes}"

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"

    def __eq__(self, other) -> bool:
        """Equal to another DataType with the same code, bits and lanes, or to its own spelling
        as a string (`load.dtype == "float32x4"`)."""
        if isinstance(other, DataType):
            return self.lanes == other.lanes and self.bits == other.bits and self.code == other.code
        if isinstance(other, str):
            try:
                return self == DataType.parse(other)
            except ValueError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))  # consistent with equality to the string spelling

    def with_lanes(self, lanes: int) -> "DataType":
        """The same element type with `lanes` lanes."""
        return DataType(self.code, self.bits, lanes)

    def element_of(self) -> "DataType":
        """The one-lane element type (`float32x4` -> `float32`)."""
        return DataType(self.code, self.bits, 1)

    @property
    def is_scalar(self) -> bool:
        """True for one lane."""
        return self.lanes == 1

    @property
    def is_vector(self) -> bool:
        """True for more than one lane."""
        return self.lanes > 1

    @property
    def is_int(self) -> bool:
        """True for signed integers."""
        return self.code == "int"

    @property
    def is_uint(self) -> bool:
        """True for unsigned integers."""
        return self.code == "uint"

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (not bool)."""
        return self.code in ("int", "uint")

    @property
    def is_float(self) -> bool:
        """True for floats."""
        return self.code == "float"

    @property
    def is_bool(self) -> bool:
        """True for bool."""
        return self.code == "bool"

    @property
    def is_handle(self) -> bool:
        """True for the opaque handle type."""
        return self.code == "handle"

    @property
    def bytes(self) -> int:
        """Storage size of one value; bool counts one byte (it is stored as int8)."""
        return max(self.bits, 8) // 8 * self.lanes

    def numpy_dtype(self):
        """The numpy dtype of one lane (bool maps to numpy bool)."""
        import numpy as np

        if self.code == "bool":
            return np.dtype(np.bool_)
        if self.code == "handle":
            raise ArgumentError("handle has no numpy type")
        prefix = {"int": "int", "uint": "uint", "float": "float"}[self.code]
        return np.dtype(f"{prefix}{self.bits}")


def type_range(dt) -> tuple | None:
    """The finite (min, max) of an integer or bool type; None for other types."""
    if not isinstance(dt, DataType) or not (dt.is_integer or dt.is_bool):
        return None
    if dt.is_bool:
        return (0, 1)
    if dt.is_uint:
        return (0, (1 << dt.bits) - 1)
    return (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1)


SCOPES = ("global", "shared", "local")


@dataclass(frozen=True, slots=True)
class PointerType:
    """The type of a buffer's `data` var: a typed pointer into a storage scope."""

    element: DataType
    scope: str = "global"

    def __post_init__(self):
        object.__setattr__(self, "element", DataType.parse(self.element))
        if self.scope not in SCOPES:
            raise ArgumentError(f"unknown storage scope {self.scope!r} "
                                f"(one of {', '.join(SCOPES)})")

    def __str__(self) -> str:
        return f"{self.element}* {self.scope}"


int32 = DataType("int", 32)
int64 = DataType("int", 64)
uint32 = DataType("uint", 32)
float32 = DataType("float", 32)
bool_ = DataType("bool", 1)
handle = DataType("handle", 64)
