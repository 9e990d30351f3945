"""DeviceInfo: what one physical device is and can do, queried once from Vulkan.

Feature names match vkir.spirv.Target's feature vocabulary so the facade can derive a codegen
target directly from `DeviceInfo.features`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._vk import cstr, ffi, lib, version_string, vk
from vkir.features import CORE as CORE_STRUCT
from vkir.features import EXTENSION_FEATURES
from vkir.features import TABLE as FEATURE_TABLE
from vkir.limits import Limits
from vkir.quirks import quirks_of

KINDS = {
    vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete",
    vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated",
    vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual",
    vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "cpu",
}
KIND_RANK = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3, "other": 4}

SUBGROUP_OPS = {
    vk.VK_SUBGROUP_FEATURE_BASIC_BIT: "basic",
    vk.VK_SUBGROUP_FEATURE_VOTE_BIT: "vote",
    vk.VK_SUBGROUP_FEATURE_ARITHMETIC_BIT: "arithmetic",
    vk.VK_SUBGROUP_FEATURE_BALLOT_BIT: "ballot",
    vk.VK_SUBGROUP_FEATURE_SHUFFLE_BIT: "shuffle",
    vk.VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT: "shuffle_relative",
    vk.VK_SUBGROUP_FEATURE_CLUSTERED_BIT: "clustered",
    vk.VK_SUBGROUP_FEATURE_QUAD_BIT: "quad",
}
# the subgroup operation classes vkir uses (features "subgroup_<class>")
SUBGROUP_FEATURES = ("basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative")
# device features of subgroup size control (pipeline creation, not kernel code)
SUBGROUP_SIZE_CONTROL = "subgroup_size_control"
COMPUTE_FULL_SUBGROUPS = "compute_full_subgroups"


@dataclass(frozen=True)
class DeviceInfo:
    """One physical device. `features` uses vkir.spirv.Target's names ("float16", "int8", ...)."""

    name: str
    kind: str              # "discrete" | "integrated" | "virtual" | "cpu" | "other"
    driver: str
    api_version: str
    limits: Limits
    features: frozenset
    index: int             # position in vkir.devices()
    subgroup_size: int
    subgroup_operations: frozenset
    unified_memory: bool   # device-local memory is host-visible (no staging copies needed)
    vendor_id: int = 0     # PCI vendor id (0x10DE NVIDIA, 0x1002 AMD, 0x8086 Intel, 0x10005 Mesa)
    device_id: int = 0
    driver_version: int = 0  # vendor-encoded driverVersion
    quirks: frozenset = frozenset()  # known driver bugs worked around by lowering (quirks.py)
    float_controls: "FloatControls" = None  # what the driver guarantees per float width
    subgroup_size_range: tuple = (0, 0)     # (min, max) subgroup sizes a pipeline may get
    # what a compute pipeline may require (subgroup size control): SUBGROUP_SIZE_CONTROL (a
    # required subgroup size) and COMPUTE_FULL_SUBGROUPS (full subgroups)
    subgroup_size_control: frozenset = frozenset()
    extensions: frozenset = frozenset()     # the device extensions it offers (by name)

    def __post_init__(self):
        if self.float_controls is None:
            object.__setattr__(self, "float_controls", FloatControls())
        if self.subgroup_size_range == (0, 0):
            object.__setattr__(self, "subgroup_size_range", (self.subgroup_size, self.subgroup_size))

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, {self.driver}, Vulkan {self.api_version})"


@dataclass(frozen=True)
class FloatControls:
    """VkPhysicalDeviceFloatControlsProperties, as the sets of float widths (16, 32, 64) for
    which a shader may ask the driver to preserve signed zeros, infinities and NaN
    (`signed_zero_inf_nan`), to preserve denormals (`denorm_preserve`) or flush them
    (`denorm_flush`), and to round to nearest even (`rounding_rte`) or toward zero
    (`rounding_rtz`). Where a width is missing, the driver's behaviour is its own: SwiftShader
    flushes some float32 denormals to zero, and rounds uint32 -> float32 toward zero."""

    signed_zero_inf_nan: frozenset = frozenset()
    denorm_preserve: frozenset = frozenset()
    denorm_flush: frozenset = frozenset()
    rounding_rte: frozenset = frozenset()
    rounding_rtz: frozenset = frozenset()

    @staticmethod
    def query(props) -> "FloatControls":
        """From a filled VkPhysicalDeviceFloatControlsProperties."""
        def widths(member):
            return frozenset(w for w in (16, 32, 64) if getattr(props, member.format(w)))

        return FloatControls(widths("shaderSignedZeroInfNanPreserveFloat{}"),
                             widths("shaderDenormPreserveFloat{}"),
                             widths("shaderDenormFlushToZeroFloat{}"),
                             widths("shaderRoundingModeRTEFloat{}"),
                             widths("shaderRoundingModeRTZFloat{}"))

    def features(self) -> frozenset:
        """The Target feature names these controls allow a kernel to declare."""
        return frozenset([f"float{w}_inf_nan_preserve" for w in self.signed_zero_inf_nan]
                         + [f"float{w}_denorm_preserve" for w in self.denorm_preserve]
                         + [f"float{w}_rounding_rte" for w in self.rounding_rte])


# the sType of each feature struct vkir reads (its members come from vkir.features.TABLE)
_STYPES = {
    "VkPhysicalDeviceShaderFloat16Int8Features":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
    "VkPhysicalDevice8BitStorageFeatures": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
    "VkPhysicalDevice16BitStorageFeatures":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
    "VkPhysicalDeviceVulkanMemoryModelFeatures":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
    "VkPhysicalDeviceVariablePointersFeatures":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES,
    "VkPhysicalDeviceShaderAtomicInt64Features":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES,
    "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
    "VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_2_FEATURES_EXT,
    "VkPhysicalDeviceBufferDeviceAddressFeatures":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES,
    "VkPhysicalDeviceShaderIntegerDotProductFeatures":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
    "VkPhysicalDeviceMaintenance4Features":
        vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES,
}


def _feature_structs():
    """(struct name, sType, {member: feature name}) of every extension feature struct, and the
    extensions of those that never became core, from the one feature table."""
    members, extensions = {}, {}
    for f in FEATURE_TABLE:
        if f.struct is None or f.struct == CORE_STRUCT:
            continue
        members.setdefault(f.struct, {})[f.member] = f.name
        if f.extension:
            extensions[f.struct] = f.extension
    return tuple((s, _STYPES[s], m) for s, m in members.items()), extensions


# struct name, sType, {member: feature name}
FEATURE_STRUCTS, EXTENSION_STRUCTS = _feature_structs()
# members of the core VkPhysicalDeviceFeatures -> feature name
CORE_FEATURES = {f.member: f.name for f in FEATURE_TABLE if f.struct == CORE_STRUCT}


def device_extensions(phys) -> set:
    """Names of the device extensions `phys` offers."""
    return {cstr(e.extensionName) for e in vk.vkEnumerateDeviceExtensionProperties(phys, None)}


def feature_chain(extensions: set):
    """A VkPhysicalDeviceFeatures2 with FEATURE_STRUCTS chained (zeroed; extension-only structs
    where the device has the extension); returns (head, structs, the FEATURE_STRUCTS entries)."""
    head = ffi.new("VkPhysicalDeviceFeatures2*")
    head.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
    structs, entries, prev = [], [], head
    for entry in FEATURE_STRUCTS:
        cname, stype, _ = entry
        ext = EXTENSION_STRUCTS.get(cname)
        if ext is not None and ext not in extensions:
            continue
        entries.append(entry)
        s = ffi.new(cname + "*")
        s.sType = stype
        prev.pNext = s
        prev = s
        structs.append(s)
    return head, structs, entries


def query_features(phys, subgroup_operations=frozenset()) -> frozenset:
    """The feature names (vkir.spirv.Target's vocabulary) the device supports; the subgroup
    operation classes it supports in compute shaders are "subgroup_<class>"."""
    available = device_extensions(phys)
    head, structs, entries = feature_chain(available)
    lib.vkGetPhysicalDeviceFeatures2(phys, head)
    names = {name for member, name in CORE_FEATURES.items() if getattr(head.features, member)}
    names.update(name for ext, name in EXTENSION_FEATURES.items() if ext in available)
    for s, (_, _, members) in zip(structs, entries):
        names.update(name for member, name in members.items() if getattr(s, member))
    names.update(f"subgroup_{op}" for op in subgroup_operations if op in SUBGROUP_FEATURES)
    return frozenset(names)


def query_info(index: int, phys) -> DeviceInfo:
    """The DeviceInfo (name, kind, driver, limits, features, subgroup properties) of physical
    device `phys`."""
    props = ffi.new("VkPhysicalDeviceProperties2*")
    props.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
    subgroup = ffi.new("VkPhysicalDeviceSubgroupProperties*")
    subgroup.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
    maintenance3 = ffi.new("VkPhysicalDeviceMaintenance3Properties*")
    maintenance3.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES
    driver = ffi.new("VkPhysicalDeviceDriverProperties*")
    driver.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES
    props.pNext = subgroup
    subgroup.pNext = maintenance3
    base = vk.vkGetPhysicalDeviceProperties(phys)
    has_driver = base.apiVersion >= vk.VK_MAKE_VERSION(1, 2, 0)
    float_controls = ffi.new("VkPhysicalDeviceFloatControlsProperties*")
    float_controls.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES
    if has_driver:
        maintenance3.pNext = driver
        driver.pNext = float_controls
    lib.vkGetPhysicalDeviceProperties2(phys, props)
    controls = FloatControls.query(float_controls) if has_driver else FloatControls()
    preserve = controls.features()
    p = props.properties
    lim = p.limits
    limits = Limits(
        max_workgroup_size=tuple(lim.maxComputeWorkGroupSize),
        max_workgroup_invocations=lim.maxComputeWorkGroupInvocations,
        max_workgroup_count=tuple(lim.maxComputeWorkGroupCount),
        max_shared_memory_bytes=lim.maxComputeSharedMemorySize,
        max_push_constant_bytes=lim.maxPushConstantsSize,
        max_storage_buffer_range=lim.maxStorageBufferRange,
        min_storage_buffer_offset_alignment=lim.minStorageBufferOffsetAlignment,
        non_coherent_atom_size=lim.nonCoherentAtomSize,
        timestamp_period_ns=float(lim.timestampPeriod),
        max_memory_allocation_count=lim.maxMemoryAllocationCount,
        max_uniform_buffer_range=lim.maxUniformBufferRange,
        max_per_stage_storage_buffers=lim.maxPerStageDescriptorStorageBuffers,
        max_per_stage_uniform_buffers=lim.maxPerStageDescriptorUniformBuffers,
        max_descriptor_set_uniform_buffers=lim.maxDescriptorSetUniformBuffers,
        max_descriptor_set_storage_buffers=lim.maxDescriptorSetStorageBuffers,
        max_per_stage_resources=lim.maxPerStageResources,
        max_per_stage_storage_images=lim.maxPerStageDescriptorStorageImages,
        max_per_stage_sampled_images=lim.maxPerStageDescriptorSampledImages,
        max_per_stage_samplers=lim.maxPerStageDescriptorSamplers,
        max_descriptor_set_storage_images=lim.maxDescriptorSetStorageImages,
        max_descriptor_set_sampled_images=lim.maxDescriptorSetSampledImages,
        max_descriptor_set_samplers=lim.maxDescriptorSetSamplers,
        max_bound_descriptor_sets=lim.maxBoundDescriptorSets,
        max_memory_allocation_size=_allocation_limit(maintenance3.maxMemoryAllocationSize, phys),
        sub_texel_precision_bits=lim.subTexelPrecisionBits,
    )
    if has_driver:
        driver_text = " ".join(x for x in (cstr(driver.driverName), cstr(driver.driverInfo)) if x)
    else:
        driver_text = f"driver {p.driverVersion:#x}"
    kind = KINDS.get(p.deviceType, "other")
    operations = frozenset(n for bit, n in SUBGROUP_OPS.items()
                           if subgroup.supportedOperations & bit)
    in_compute = subgroup.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT
    size_range, size_control = _subgroup_size_control(phys, subgroup.subgroupSize)
    return DeviceInfo(
        index=index, name=cstr(p.deviceName), kind=kind, driver=driver_text,
        api_version=version_string(p.apiVersion), limits=limits,
        features=query_features(phys, operations if in_compute else frozenset()) | preserve,
        extensions=frozenset(device_extensions(phys)),
        subgroup_size=subgroup.subgroupSize,
        subgroup_operations=operations,
        unified_memory=kind != "discrete" and _device_local_is_host_visible(phys),
        vendor_id=p.vendorID, device_id=p.deviceID, driver_version=p.driverVersion,
        quirks=quirks_of(cstr(p.deviceName), driver_text),
        float_controls=controls,
        subgroup_size_range=size_range,
        subgroup_size_control=size_control,
    )


def _subgroup_size_control(phys, size: int) -> tuple:
    """((minSubgroupSize, maxSubgroupSize), capability names) where the device reports subgroup size
    control (Vulkan 1.3 or VK_EXT_subgroup_size_control), else ((size, size), nothing). The
    capabilities are "subgroup_size_control" (a compute pipeline may require a subgroup size) and
    "compute_full_subgroups" (it may require full subgroups)."""
    base = vk.vkGetPhysicalDeviceProperties(phys)
    if base.apiVersion < vk.VK_MAKE_VERSION(1, 3, 0) and \
            "VK_EXT_subgroup_size_control" not in device_extensions(phys):
        return (size, size), frozenset()
    props = ffi.new("VkPhysicalDeviceProperties2*")
    props.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
    control = ffi.new("VkPhysicalDeviceSubgroupSizeControlProperties*")
    control.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES
    props.pNext = control
    lib.vkGetPhysicalDeviceProperties2(phys, props)
    if not control.minSubgroupSize:
        return (size, size), frozenset()
    features = ffi.new("VkPhysicalDeviceFeatures2*")
    features.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
    wanted = ffi.new("VkPhysicalDeviceSubgroupSizeControlFeatures*")
    wanted.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES
    features.pNext = wanted
    lib.vkGetPhysicalDeviceFeatures2(phys, features)
    names = set()
    if wanted.subgroupSizeControl and \
            control.requiredSubgroupSizeStages & vk.VK_SHADER_STAGE_COMPUTE_BIT:
        names.add(SUBGROUP_SIZE_CONTROL)
        if wanted.computeFullSubgroups:
            names.add(COMPUTE_FULL_SUBGROUPS)
    return (int(control.minSubgroupSize), int(control.maxSubgroupSize)), frozenset(names)


def _allocation_limit(reported: int, phys) -> int:
    """maxMemoryAllocationSize, or (a Vulkan 1.0 driver that leaves it 0) the largest heap."""
    if reported:
        return int(reported)
    mem = vk.vkGetPhysicalDeviceMemoryProperties(phys)
    return max(int(mem.memoryHeaps[i].size) for i in range(mem.memoryHeapCount))


def _device_local_is_host_visible(phys) -> bool:
    """True when the largest device-local heap has a host-visible memory type."""
    mem = vk.vkGetPhysicalDeviceMemoryProperties(phys)
    heaps = [mem.memoryHeaps[i] for i in range(mem.memoryHeapCount)]
    local = [i for i, h in enumerate(heaps) if h.flags & vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT]
    if not local:
        return True  # no device-local heap at all: everything is host memory
    biggest = max(local, key=lambda i: heaps[i].size)
    want = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
    return any(mem.memoryTypes[t].heapIndex == biggest and (mem.memoryTypes[t].propertyFlags & want) == want
               for t in range(mem.memoryTypeCount))
