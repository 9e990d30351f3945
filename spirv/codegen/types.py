"""vkir data types to SPIR-V type ids, with the device-feature checks each type needs."""

from __future__ import annotations

from vkir.errors import UnsupportedError
from vkir.features import BY_NAME
from vkir.ir import DataType

from ..builder import ModuleBuilder
from ..target import Target

# arithmetic feature per (code, bits); storage feature per bit width
_VALUE_FEATURE = {("int", 8): "int8", ("uint", 8): "int8", ("int", 16): "int16",
                  ("uint", 16): "int16", ("int", 64): "int64", ("uint", 64): "int64",
                  ("float", 16): "float16", ("float", 64): "float64"}
_STORAGE = {bits: (name, BY_NAME[name].capability)
            for bits, name in ((8, "storage_buffer_8bit"), (16, "storage_buffer_16bit"))}


class Types:
    """Maps DataType -> SPIR-V type id through the builder, recording required features."""

    def __init__(self, builder: ModuleBuilder, target: Target, where: str = ""):
        self.b = builder
        self.target = target
        self.required: set[str] = set()
        self.where = where  # kernel name, for error messages
        self._cache: dict[DataType, int] = {}

    def need(self, feature: str, why: str) -> None:
        """Record that the kernel needs `feature`; UnsupportedError when the target lacks it."""
        if feature not in self.target.features:
            raise UnsupportedError(
                f"kernel {self.where!r} needs the device feature {feature!r} ({why}), "
                f"which the target ({self.target.env}) does not have")
        self.required.add(feature)

    def of(self, dt: DataType) -> int:
        """The SPIR-V type of a value of `dt` (scalar or 2..4-lane vector)."""
        tid = self._cache.get(dt)
        if tid is not None:
            return tid
        if dt.lanes == 1:
            tid = self._scalar(dt)
        else:
            if dt.lanes > 4:
                raise UnsupportedError(
                    f"kernel {self.where!r}: {dt} has {dt.lanes} lanes; SPIR-V shaders allow "
                    "vectors of 2, 3 or 4 components")
            tid = self.b.type_vector(self._scalar(dt.element_of()), dt.lanes)
        self._cache[dt] = tid
        return tid

    def _scalar(self, dt: DataType) -> int:
        if dt.code == "bool":
            return self.b.type_bool()
        if dt.code == "handle":
            raise UnsupportedError(f"kernel {self.where!r}: a handle value cannot reach codegen")
        feature = _VALUE_FEATURE.get((dt.code, dt.bits))
        if feature:
            self.need(feature, f"{dt} values")
        if dt.code == "float":
            return self.b.type_float(dt.bits)
        return self.b.type_int(dt.bits, dt.code == "int")

    def bool_of(self, lanes: int) -> int:
        """The id of bool with `lanes` lanes."""
        return self.of(DataType("bool", 1, lanes))

    def storage_element(self, dt: DataType, what: str) -> None:
        """Check that `dt` may live in a storage buffer, declaring the storage capability."""
        if dt.code == "bool":
            raise UnsupportedError(
                f"kernel {self.where!r}: {what} is a bool buffer; bool has no storage layout "
                "(run BoolToInt8 before codegen)")
        if dt.code == "handle":
            raise UnsupportedError(f"kernel {self.where!r}: {what} has element type handle")
        self.of(dt.element_of())  # the value type first: "float16" before "storage_buffer_16bit"
        storage = _STORAGE.get(dt.bits)
        if storage:
            feature, capability = storage
            self.need(feature, f"{what} stores {dt.element_of()} in a storage buffer")
            self.b.capability(capability)
