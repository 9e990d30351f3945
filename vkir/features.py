"""The one table of device features vkir knows: each feature's name (the vocabulary of
`Target.features` and `DeviceInfo.features`), where Vulkan reports it (a feature struct and
member, or a property), and the SPIR-V capability a module declares to use it. The runtime queries
devices from it, codegen and the shader loader map capabilities through it, and `Target` takes
its names from it."""

from __future__ import annotations

from dataclasses import dataclass

CORE = "VkPhysicalDeviceFeatures"   # the core features struct (`features` of Features2)


@dataclass(frozen=True)
class Feature:
    """One device feature: `struct`/`member` where Vulkan reports it (None for features derived
    from properties: subgroup operations and float controls), `extension` when that struct
    belongs to a device extension that never became core, and `capability`, the SPIR-V
    capability tied to exactly this feature (None where several features share one)."""

    name: str
    struct: str | None = None
    member: str | None = None
    capability: str | None = None
    extension: str | None = None


_F16I8 = "VkPhysicalDeviceShaderFloat16Int8Features"
_S8 = "VkPhysicalDevice8BitStorageFeatures"
_S16 = "VkPhysicalDevice16BitStorageFeatures"
_VMM = "VkPhysicalDeviceVulkanMemoryModelFeatures"
_VP = "VkPhysicalDeviceVariablePointersFeatures"
_A64 = "VkPhysicalDeviceShaderAtomicInt64Features"
_AF = "VkPhysicalDeviceShaderAtomicFloatFeaturesEXT"
_AF2 = "VkPhysicalDeviceShaderAtomicFloat2FeaturesEXT"
_BDA = "VkPhysicalDeviceBufferDeviceAddressFeatures"
_DOT = "VkPhysicalDeviceShaderIntegerDotProductFeatures"
_M4 = "VkPhysicalDeviceMaintenance4Features"

TABLE = (
    Feature("float16", _F16I8, "shaderFloat16", "Float16"),
    Feature("int8", _F16I8, "shaderInt8", "Int8"),
    Feature("float64", CORE, "shaderFloat64", "Float64"),
    Feature("int16", CORE, "shaderInt16", "Int16"),
    Feature("int64", CORE, "shaderInt64", "Int64"),
    Feature("storage_buffer_8bit", _S8, "storageBuffer8BitAccess", "StorageBuffer8BitAccess"),
    Feature("storage_push_constant_8bit", _S8, "storagePushConstant8", "StoragePushConstant8"),
    Feature("storage_buffer_16bit", _S16, "storageBuffer16BitAccess",
            "StorageBuffer16BitAccess"),
    Feature("storage_push_constant_16bit", _S16, "storagePushConstant16",
            "StoragePushConstant16"),
    Feature("vulkan_memory_model", _VMM, "vulkanMemoryModel", "VulkanMemoryModel"),
    Feature("vulkan_memory_model_device_scope", _VMM, "vulkanMemoryModelDeviceScope",
            "VulkanMemoryModelDeviceScope"),
    Feature("variable_pointers", _VP, "variablePointersStorageBuffer",
            "VariablePointersStorageBuffer"),
    Feature("variable_pointers_full", _VP, "variablePointers", "VariablePointers"),
    # 8/16-bit members of uniform buffers (and storage buffers) read and written as such
    Feature("uniform_buffer_8bit", _S8, "uniformAndStorageBuffer8BitAccess",
            "UniformAndStorageBuffer8BitAccess"),
    Feature("uniform_buffer_16bit", _S16, "uniformAndStorageBuffer16BitAccess",
            "UniformAndStorageBuffer16BitAccess"),
    # buffer_reference: 64-bit device addresses of buffers (PhysicalStorageBuffer pointers)
    Feature("buffer_device_address", _BDA, "bufferDeviceAddress",
            "PhysicalStorageBufferAddresses"),
    # dot products of packed 8-bit and 16-bit integer vectors (the DotProduct* capabilities)
    Feature("integer_dot_product", _DOT, "shaderIntegerDotProduct", "DotProduct"),
    # the LocalSizeId execution mode (a local size given by specialization constant ids)
    Feature("maintenance4", _M4, "maintenance4"),
    # storage images: formats past Vulkan's guaranteed list (rg32f, r16f, r8, ...), loads and
    # stores of images declared without a format, multisampled storage images
    Feature("storage_image_extended_formats", CORE, "shaderStorageImageExtendedFormats",
            "StorageImageExtendedFormats"),
    Feature("storage_image_read_without_format", CORE, "shaderStorageImageReadWithoutFormat",
            "StorageImageReadWithoutFormat"),
    Feature("storage_image_write_without_format", CORE, "shaderStorageImageWriteWithoutFormat",
            "StorageImageWriteWithoutFormat"),
    Feature("storage_image_multisample", CORE, "shaderStorageImageMultisample",
            "StorageImageMultisample"),
    # arrays of descriptors indexed by values computed in the shader
    Feature("uniform_buffer_array_dynamic_indexing", CORE,
            "shaderUniformBufferArrayDynamicIndexing", "UniformBufferArrayDynamicIndexing"),
    Feature("storage_buffer_array_dynamic_indexing", CORE,
            "shaderStorageBufferArrayDynamicIndexing", "StorageBufferArrayDynamicIndexing"),
    Feature("sampled_image_array_dynamic_indexing", CORE,
            "shaderSampledImageArrayDynamicIndexing", "SampledImageArrayDynamicIndexing"),
    Feature("storage_image_array_dynamic_indexing", CORE,
            "shaderStorageImageArrayDynamicIndexing", "StorageImageArrayDynamicIndexing"),
    # atomics beyond int32/uint32, per storage class (storage buffer / shared memory)
    Feature("atomic_int64_buffer", _A64, "shaderBufferInt64Atomics"),
    Feature("atomic_int64_shared", _A64, "shaderSharedInt64Atomics"),
    Feature("atomic_float32_add_buffer", _AF, "shaderBufferFloat32AtomicAdd",
            extension="VK_EXT_shader_atomic_float"),
    Feature("atomic_float32_add_shared", _AF, "shaderSharedFloat32AtomicAdd",
            extension="VK_EXT_shader_atomic_float"),
    Feature("atomic_float32_minmax_buffer", _AF2, "shaderBufferFloat32AtomicMinMax",
            extension="VK_EXT_shader_atomic_float2"),
    Feature("atomic_float32_minmax_shared", _AF2, "shaderSharedFloat32AtomicMinMax",
            extension="VK_EXT_shader_atomic_float2"),
    # subgroup operation classes (VkPhysicalDeviceSubgroupProperties.supportedOperations)
    *(Feature(f"subgroup_{c}") for c in ("basic", "vote", "arithmetic", "ballot", "shuffle",
                                           "shuffle_relative")),
    # the older subgroup extensions (GL_ARB_shader_group_vote, GL_ARB_shader_ballot in GLSL):
    # the device has the Vulkan extension, which vkir then enables
    Feature("subgroup_vote_khr", capability="SubgroupVoteKHR",
            extension="VK_EXT_shader_subgroup_vote"),
    Feature("subgroup_ballot_khr", capability="SubgroupBallotKHR",
            extension="VK_EXT_shader_subgroup_ballot"),
    # float controls (VkPhysicalDeviceFloatControlsProperties), per float width: the driver may
    # not assume away signed zeros, infinities and NaN, may not flush denormals, rounds to
    # nearest even, where a kernel declares it
    *(Feature(f"float{w}_{what}") for what in ("inf_nan_preserve", "denorm_preserve",
                                               "rounding_rte") for w in (16, 32, 64)),
)

NAMES = frozenset(f.name for f in TABLE)
BY_NAME = {f.name: f for f in TABLE}
# SPIR-V capability -> the one feature it needs
CAPABILITY_FEATURES = {f.capability: f.name for f in TABLE if f.capability}
# features a device has when it offers their Vulkan extension (no feature struct of their own)
EXTENSION_FEATURES = {f.extension: f.name for f in TABLE if f.struct is None and f.extension}
# device extensions without a feature struct that vkir enables wherever the device offers them:
# existing shaders may use their SPIR-V extensions (vkir.driver.shader_needs checks which)
SHADER_EXTENSIONS = ("VK_EXT_shader_subgroup_vote", "VK_EXT_shader_subgroup_ballot",
                     "VK_KHR_shader_non_semantic_info", "VK_GOOGLE_decorate_string",
                     "VK_GOOGLE_hlsl_functionality1", "VK_GOOGLE_user_type",
                     "VK_KHR_shader_subgroup_uniform_control_flow")
