"""Target: the one description of what a compilation is for (backend kind, limits, features,
subgroup size, quirks, and for Vulkan the SPIR-V version and SPIRV-Tools environment).

Passes, the explicit-cast checker and codegen take a `Target`; a Kernel builds one from its device
with `Target.from_device(dev)`; offline compilation writes one by hand (`Target.vulkan("vulkan1.3")`,
`Target.lavapipe()`, `Target.interp()`). A short name ("vulkan", "vulkan1.1", "vulkan1.3",
"lavapipe", "interp") is accepted wherever a target is, and means `Target.named(name)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from .errors import ArgumentError
from .features import NAMES
from .limits import UNLIMITED, Limits
from .seam.registry import backend_names, has_backend
from .quirks import LAVAPIPE

# the built-in kinds; any backend registered in the entry point group "vkir.backends" is a kind
# too (vkir.seam.registry), so a package installed beside vkir adds one
KINDS = ("vulkan", "interp", "wgpu")
# the kinds that run on the host, without SPIR-V; every other kind's kernels are SPIR-V for a
# Vulkan environment (WebGPU's through its translator, another package's as its backend runs it)
HOST_KINDS = ("interp",)
SPIRV_KINDS = tuple(k for k in KINDS if k not in HOST_KINDS)

FEATURES = NAMES   # every device feature vkir knows (vkir.features)

# the SPIRV-Tools Vulkan environments an existing shader is assembled and validated for
# (vkir.load_spirv's target_env, `vkir validate --target-env`)
TARGET_ENVS = ("vulkan1.0", "vulkan1.1", "vulkan1.2", "vulkan1.3")

# the SPIR-V version vkir emits for each SPIRV-Tools Vulkan environment (the highest it accepts);
# Vulkan 1.0 is absent: vkir needs SPIR-V 1.3's StorageBuffer storage class
SPIRV_VERSIONS = {
    "vulkan1.1": (1, 3), "vulkan1.1spv1.4": (1, 4), "vulkan1.2": (1, 5),
    "vulkan1.3": (1, 6), "vulkan1.4": (1, 6),
}

# what Mesa's lavapipe (llvmpipe) gets wrong, carried so that a pass can work around it
LAVAPIPE_QUIRKS = LAVAPIPE
# what it does not offer of the features vkir knows (its float controls keep no denormals;
# format-less image loads and dynamically indexed arrays of images are off in Mesa 22)
LAVAPIPE_LACKS = frozenset({"float16_denorm_preserve", "float32_denorm_preserve",
                            "float64_denorm_preserve", "storage_image_read_without_format",
                            "sampled_image_array_dynamic_indexing",
                            "storage_image_array_dynamic_indexing"})


@dataclass(frozen=True)
class Target:
    """What a kernel is compiled for. `Target()` is the Vulkan 1.1 baseline with no optional
    feature and Vulkan's minimum limits.

    `kind` is the backend ("vulkan", "interp", "wgpu": WebGPU, which takes Vulkan SPIR-V, or
    any backend registered in the entry point group "vkir.backends"). `features` names the optional device features
    a kernel may use (see FEATURES); codegen raises UnsupportedError naming a missing one.
    `subgroup_size` is the device's (None when unknown offline). `quirks` names driver bugs that
    passes work around (e.g. "loop_trip_limit_65535"). For Vulkan, `env` is the SPIRV-Tools
    environment used for validation and `spirv_version` the module version emitted. `precise`
    decorates float arithmetic NoContraction (GLSL's `precise`) so drivers may not fuse or
    reassociate it: results then match the interpreter bit for bit; it is a codegen option kept
    on the target so that everything one compilation depends on is in one hashable value.
    """

    kind: str = "vulkan"
    limits: Limits = field(default_factory=Limits)
    features: frozenset = field(default_factory=frozenset)
    subgroup_size: int | None = None
    quirks: frozenset = field(default_factory=frozenset)
    spirv_version: tuple = (1, 3)
    env: str = "vulkan1.1"
    precise: bool = False

    def __post_init__(self):
        if not has_backend(self.kind):
            raise ArgumentError(f"unknown target kind {self.kind!r}; expected one of "
                                f"{backend_names()} (the backends registered in the entry point "
                                "group 'vkir.backends')")
        if not isinstance(self.limits, Limits):
            object.__setattr__(self, "limits", Limits.of(self.limits))
        object.__setattr__(self, "spirv_version", tuple(int(v) for v in self.spirv_version))
        object.__setattr__(self, "features", frozenset(self.features))
        object.__setattr__(self, "quirks", frozenset(self.quirks))
        unknown = self.features - FEATURES
        if unknown:
            raise ArgumentError(f"unknown target features {sorted(unknown)}; known: {sorted(FEATURES)}")
        if not self.is_vulkan:
            return
        limit = SPIRV_VERSIONS.get(self.env)
        if limit is None:
            raise ArgumentError(f"unknown Vulkan environment {self.env!r}; expected one of "
                             f"{sorted(SPIRV_VERSIONS)}")
        if self.spirv_version > limit:
            raise ArgumentError(f"SPIR-V {self.spirv_version[0]}.{self.spirv_version[1]} is too new "
                             f"for {self.env} (at most {limit[0]}.{limit[1]})")
        if self.spirv_version < (1, 3):
            raise ArgumentError("vkir emits SPIR-V 1.3 or newer (StorageBuffer storage class)")

    # -- constructors --------------------------------------------------------------------------
    @staticmethod
    def vulkan(env: str = "vulkan1.1", **kwargs) -> "Target":
        """A Vulkan target for a SPIRV-Tools environment ("vulkan1.1", "vulkan1.2", "vulkan1.3",
        "vulkan1.4"), emitting the newest SPIR-V it accepts; no optional feature unless given."""
        if env not in SPIRV_VERSIONS:
            raise ArgumentError(f"unknown Vulkan environment {env!r}; expected one of "
                             f"{sorted(SPIRV_VERSIONS)} (vkir needs Vulkan 1.1 or newer)")
        kwargs.setdefault("spirv_version", SPIRV_VERSIONS[env])
        return Target(kind="vulkan", env=env, **kwargs)

    @staticmethod
    def vulkan13(**kwargs) -> "Target":
        """Vulkan 1.3 with SPIR-V 1.6 (no optional features unless given)."""
        return Target.vulkan("vulkan1.3", **kwargs)

    @staticmethod
    def lavapipe() -> "Target":
        """Mesa lavapipe (llvmpipe) as vkir sees it: Vulkan 1.3, every optional feature vkir
        knows but denormal preservation, its limits and quirks; for compiling without the
        device."""
        return Target.vulkan("vulkan1.3", features=FEATURES - LAVAPIPE_LACKS, quirks=LAVAPIPE_QUIRKS,
                             limits=Limits(max_workgroup_size=(1024, 1024, 1024),
                                           max_workgroup_invocations=1024,
                                           max_shared_memory_bytes=32768,
                                           max_push_constant_bytes=128,
                                           max_storage_buffer_range=(1 << 31) - 1))

    @staticmethod
    def interp() -> "Target":
        """The interpreter (vkir.interpret) as a backend: every feature, no device limits."""
        return Target(kind="interp", limits=UNLIMITED, features=FEATURES, env="")

    @staticmethod
    def from_device(dev) -> "Target":
        """The target of an opened vkir.runtime Device or a DeviceInfo: the newest SPIR-V its
        Vulkan version accepts, its features, limits, subgroup size and quirks."""
        info = getattr(dev, "info", dev)
        try:
            major, minor = (int(v) for v in str(info.api_version).split(".")[:2])
        except (AttributeError, ValueError):
            raise ArgumentError(f"Target.from_device expects a vkir device or DeviceInfo, got "
                            f"{type(dev).__name__}") from None
        if (major, minor) >= (1, 3):
            env = "vulkan1.3"
        elif (major, minor) >= (1, 2):
            env = "vulkan1.2"
        else:
            env = "vulkan1.1"
        # the subgroup operation classes ("subgroup_vote", ...; not the extension features
        # "subgroup_vote_khr", ..., which stay as the device reports them)
        classes = {f for f in info.features if f.startswith("subgroup_") and not f.endswith("_khr")}
        features = frozenset(info.features) - classes
        operations = getattr(info, "subgroup_operations", None)
        if operations is None:  # no subgroup report: whatever the features say
            operations = {f[len("subgroup_"):] for f in classes}
        # the subgroup classes come from VkPhysicalDeviceSubgroupProperties.supportedOperations
        features |= {f"subgroup_{op}" for op in operations}
        return Target.vulkan(env, features=features & FEATURES,
                             limits=Limits.of(info.limits),
                             subgroup_size=getattr(info, "subgroup_size", None),
                             quirks=frozenset(getattr(info, "quirks", frozenset())))

    @staticmethod
    def named(name: str) -> "Target":
        """The target a short name stands for: "vulkan" (= "vulkan1.1"), "vulkan1.1", "vulkan1.2",
        "vulkan1.3", "vulkan1.4", "lavapipe", "interp"."""
        if name == "vulkan":
            return Target()
        if name in SPIRV_VERSIONS:
            return Target.vulkan(name)
        if name == "lavapipe":
            return Target.lavapipe()
        if name == "interp":
            return Target.interp()
        raise ArgumentError(f"unknown target {name!r}; expected a vkir.Target or one of "
                         f"{['vulkan', *sorted(SPIRV_VERSIONS), 'lavapipe', 'interp']}")

    @staticmethod
    def coerce(target) -> "Target | None":
        """`target` as a Target: None stays None, a name becomes `Target.named(name)`, an opened
        device or a DeviceInfo becomes `Target.from_device(target)`."""
        if target is None or isinstance(target, Target):
            return target
        if isinstance(target, str):
            return Target.named(target)
        if hasattr(getattr(target, "info", target), "api_version"):
            return Target.from_device(target)
        raise ArgumentError(f"unknown target {target!r}: expected a vkir.Target, a target name, "
                         "a device or None")

    # -- queries -------------------------------------------------------------------------------
    @property
    def is_vulkan(self) -> bool:
        """True for targets that get Vulkan SPIR-V (codegen, bool buffers stored as int8): Vulkan
        and WebGPU."""
        return self.kind not in HOST_KINDS

    @property
    def denormals(self) -> str:
        """How float arithmetic treats denormals on this target: "flush" where the driver flushes
        them and cannot be asked not to (the "flushes_denormals" quirk), else "preserve" (IEEE
        754). vkir.interpret takes it (`denormals=`) to compute what such a device computes."""
        return "flush" if "flushes_denormals" in self.quirks else "preserve"

    def has(self, feature: str) -> bool:
        """Whether the target has the optional `feature` (a name of FEATURES)."""
        if feature not in FEATURES:
            raise ArgumentError(f"unknown feature {feature!r}; known: {sorted(FEATURES)}")
        return feature in self.features

    def key(self) -> str:
        """A canonical text of every field, equal across processes for equal targets (sets
        sorted): what an on-disk cache keys on."""
        parts = []
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, frozenset):
                v = sorted(v)
            parts.append(f"{f.name}={v!r}")
        return "Target(" + ", ".join(parts) + ")"
