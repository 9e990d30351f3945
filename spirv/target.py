"""The compilation target: SPIR-V version, SPIRV-Tools environment, optional features and limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from vkir.errors import ArgumentError

FEATURES = frozenset({
    "float16", "float64", "int8", "int16", "int64",
    "storage_buffer_8bit", "storage_buffer_16bit",
    "storage_push_constant_8bit", "storage_push_constant_16bit",
    "variable_pointers",
})

# the highest SPIR-V version each SPIRV-Tools Vulkan environment accepts
_MAX_SPIRV = {
    "vulkan1.0": (1, 0), "vulkan1.1": (1, 3), "vulkan1.1spv1.4": (1, 4),
    "vulkan1.2": (1, 5), "vulkan1.3": (1, 6), "vulkan1.4": (1, 6),
}


@dataclass(frozen=True)
class Target:
    """What the device accepts. `Target()` is the Vulkan 1.1 baseline with no optional feature.

    `features` names the optional device features the kernel may use (see FEATURES); codegen
    raises UnsupportedError naming a missing one. `env` is the SPIRV-Tools target environment
    used for validation. `precise` decorates float arithmetic NoContraction (GLSL's `precise`),
    so drivers may not fuse or reassociate it: results then match the interpreter bit for bit.
    """

    spirv_version: tuple = (1, 3)
    env: str = "vulkan1.1"
    features: frozenset = field(default_factory=frozenset)
    max_workgroup_invocations: int = 128
    max_shared_memory_bytes: int = 16384
    max_push_constant_bytes: int = 128
    precise: bool = False

    def __post_init__(self):
        object.__setattr__(self, "spirv_version", tuple(int(v) for v in self.spirv_version))
        object.__setattr__(self, "features", frozenset(self.features))
        unknown = self.features - FEATURES
        if unknown:
            raise ArgumentError(f"unknown target features {sorted(unknown)}; "
                             f"known: {sorted(FEATURES)}")
        limit = _MAX_SPIRV.get(self.env)
        if limit is not None and self.spirv_version > limit:
            raise ArgumentError(f"SPIR-V {self.spirv_version[0]}.{self.spirv_version[1]} is too new "
                             f"for {self.env} (at most {limit[0]}.{limit[1]})")
        if self.spirv_version < (1, 3):
            raise ArgumentError("vkir emits SPIR-V 1.3 or newer (StorageBuffer storage class)")

    @staticmethod
    def vulkan13(**kwargs) -> "Target":
        """Vulkan 1.3 with SPIR-V 1.6 (no optional features unless given)."""
        return Target(spirv_version=(1, 6), env="vulkan1.3", **kwargs)

    @staticmethod
    def lavapipe() -> "Target":
        """Mesa lavapipe (llvmpipe): Vulkan 1.3, every optional feature vkir knows."""
        return Target(spirv_version=(1, 6), env="vulkan1.3", features=FEATURES,
                      max_workgroup_invocations=1024, max_shared_memory_bytes=32768,
                      max_push_constant_bytes=128)

    def has(self, feature: str) -> bool:
        assert feature in FEATURES, feature
        return feature in self.features
