"""What an existing shader (vkir.driver.shader.ShaderKernel) needs from its device, checked before
the driver sees the module: each OpCapability against the device's features and subgroup
operations, each OpExtension against the Vulkan version or device extension that allows it, each
imported extended instruction set against those Vulkan accepts, and the LocalSizeId execution mode
against maintenance4. A driver handed a module it does not support may crash the process
(SwiftShader stops on an illegal instruction), so what is missing is an UnsupportedError that
names it.
"""

from __future__ import annotations

from ..errors import UnsupportedError
from ..features import BY_NAME, CAPABILITY_FEATURES, SHADER_EXTENSIONS

__all__ = ["check_shader_needs"]

# SPIR-V capabilities a Vulkan compute device always has
# (DeviceGroup is core in Vulkan 1.1, the oldest version vkir runs on)
_BASE_CAPABILITIES = frozenset({"Shader", "Matrix", "Image1D", "Sampled1D", "ImageBuffer",
                                "SampledBuffer", "ImageQuery", "DeviceGroup"})
# capabilities that any one of several features allows (per storage class or float width; what
# vkir's own kernels declare, so that load_spirv accepts their modules on the same device)
_ANY_FEATURE_CAPABILITIES = {
    "Int64Atomics": ("atomic_int64_buffer", "atomic_int64_shared"),
    "AtomicFloat32AddEXT": ("atomic_float32_add_buffer", "atomic_float32_add_shared"),
    "AtomicFloat32MinMaxEXT": ("atomic_float32_minmax_buffer", "atomic_float32_minmax_shared"),
    "SignedZeroInfNanPreserve": tuple(f"float{w}_inf_nan_preserve" for w in (16, 32, 64)),
    "DenormPreserve": tuple(f"float{w}_denorm_preserve" for w in (16, 32, 64)),
    "RoundingModeRTE": tuple(f"float{w}_rounding_rte" for w in (16, 32, 64)),
    # the integer dot product's input kinds come with the one feature
    "DotProductInputAll": ("integer_dot_product",),
    "DotProductInput4x8Bit": ("integer_dot_product",),
    "DotProductInput4x8BitPacked": ("integer_dot_product",),
    # arrays of multisampled storage images come with multisampled storage images
    "ImageMSArray": ("storage_image_multisample",),
}
_SUBGROUP_CAPABILITIES = {
    "GroupNonUniform": "basic", "GroupNonUniformVote": "vote",
    "GroupNonUniformArithmetic": "arithmetic", "GroupNonUniformBallot": "ballot",
    "GroupNonUniformShuffle": "shuffle", "GroupNonUniformShuffleRelative": "shuffle_relative",
    "GroupNonUniformClustered": "clustered", "GroupNonUniformQuad": "quad",
}

# SPIR-V extension -> (the Vulkan version that made it core or None, the device extension that
# allows it before or instead); after the Vulkan specification's table of SPIR-V extensions
_SPIRV_EXTENSIONS = {
    "SPV_KHR_storage_buffer_storage_class": ((1, 1), None),
    "SPV_KHR_variable_pointers": ((1, 1), "VK_KHR_variable_pointers"),
    "SPV_KHR_16bit_storage": ((1, 1), "VK_KHR_16bit_storage"),
    "SPV_KHR_shader_draw_parameters": ((1, 1), "VK_KHR_shader_draw_parameters"),
    "SPV_KHR_device_group": ((1, 1), "VK_KHR_device_group"),
    "SPV_KHR_multiview": ((1, 1), "VK_KHR_multiview"),
    "SPV_KHR_8bit_storage": ((1, 2), "VK_KHR_8bit_storage"),
    "SPV_KHR_float_controls": ((1, 2), "VK_KHR_shader_float_controls"),
    "SPV_KHR_vulkan_memory_model": ((1, 2), "VK_KHR_vulkan_memory_model"),
    "SPV_KHR_physical_storage_buffer": ((1, 2), "VK_KHR_buffer_device_address"),
    "SPV_EXT_descriptor_indexing": ((1, 2), "VK_EXT_descriptor_indexing"),
    "SPV_KHR_shader_atomic_counter_ops": ((1, 2), None),
    "SPV_KHR_non_semantic_info": ((1, 3), "VK_KHR_shader_non_semantic_info"),
    "SPV_KHR_terminate_invocation": ((1, 3), "VK_KHR_shader_terminate_invocation"),
    "SPV_KHR_integer_dot_product": ((1, 3), "VK_KHR_shader_integer_dot_product"),
    "SPV_EXT_demote_to_helper_invocation": ((1, 3), "VK_EXT_shader_demote_to_helper_invocation"),
    "SPV_KHR_subgroup_vote": (None, "VK_EXT_shader_subgroup_vote"),
    "SPV_KHR_shader_ballot": (None, "VK_EXT_shader_subgroup_ballot"),
    "SPV_EXT_shader_atomic_float_add": (None, "VK_EXT_shader_atomic_float"),
    "SPV_EXT_shader_atomic_float_min_max": (None, "VK_EXT_shader_atomic_float2"),
    "SPV_GOOGLE_decorate_string": (None, "VK_GOOGLE_decorate_string"),
    "SPV_GOOGLE_hlsl_functionality1": (None, "VK_GOOGLE_hlsl_functionality1"),
    "SPV_GOOGLE_user_type": (None, "VK_GOOGLE_user_type"),
    "SPV_KHR_subgroup_uniform_control_flow": (None, "VK_KHR_shader_subgroup_uniform_control_flow"),
    "SPV_KHR_relaxed_extended_instruction": (None, "VK_KHR_shader_relaxed_extended_instruction"),
    "SPV_KHR_cooperative_matrix": (None, "VK_KHR_cooperative_matrix"),
    "SPV_KHR_workgroup_memory_explicit_layout":
        (None, "VK_KHR_workgroup_memory_explicit_layout"),
    "SPV_KHR_subgroup_rotate": (None, "VK_KHR_shader_subgroup_rotate"),
    "SPV_KHR_shader_clock": (None, "VK_KHR_shader_clock"),
    "SPV_EXT_physical_storage_buffer": (None, "VK_EXT_buffer_device_address"),
}
# what to do instead where a SPIR-V extension's device extension is missing or left off
_INSTEAD = {
    "VK_EXT_buffer_device_address": "vkir enables VK_KHR_buffer_device_address (Vulkan 1.2 "
    "bufferDeviceAddress), which Vulkan forbids combining with the EXT one: compile the shader "
    "for SPV_KHR_physical_storage_buffer (glslang --target-env vulkan1.2)",
}
# device extensions vkir enables where the device has them: those without a feature struct
# (vkir.features.SHADER_EXTENSIONS) and those whose feature struct vkir chains (enabled below
# the Vulkan version that made them core)
_ENABLED = frozenset(SHADER_EXTENSIONS) | {
    "VK_KHR_variable_pointers", "VK_KHR_16bit_storage", "VK_KHR_8bit_storage",
    "VK_KHR_vulkan_memory_model", "VK_KHR_buffer_device_address",
    "VK_KHR_shader_integer_dot_product", "VK_EXT_shader_atomic_float",
    "VK_EXT_shader_atomic_float2", "VK_KHR_shader_float16_int8"}
# extended instruction sets a Vulkan shader may import (NonSemantic.* also need the
# SPV_KHR_non_semantic_info extension, which the OpExtension check covers)
_VULKAN_SETS = ("GLSL.std.450",)


def check_shader_needs(info, rt, name: str) -> None:
    """UnsupportedError naming the first capability, extension, extended instruction set or
    execution mode of reflected module `info` that the seam Runtime `rt`'s device lacks."""
    for cap in info.capabilities:
        why = _capability_missing(cap, rt)
        if why:
            raise UnsupportedError(f"{name}: the shader declares OpCapability {cap}, but {why} "
                                   f"({rt.name!r})")
    version = _version(rt.target().env)
    for ext in info.extensions:
        why = _extension_missing(ext, version, frozenset(rt.extensions))
        if why:
            raise UnsupportedError(f"{name}: the shader declares OpExtension {ext!r}, but {why} "
                                   f"({rt.name!r})")
    parsed = getattr(info, "_parsed", None)
    for ext_set in getattr(parsed, "ext_inst_imports", ()):
        if ext_set not in _VULKAN_SETS and not ext_set.startswith("NonSemantic."):
            raise UnsupportedError(f"{name}: the shader imports the extended instruction set "
                                   f"{ext_set!r}, which Vulkan does not accept (only GLSL.std.450 "
                                   "and NonSemantic.* sets)")
    if info.uses_local_size_id and "maintenance4" not in rt.features:
        raise UnsupportedError(f"{name}: the shader sets its local size with the LocalSizeId "
                               f"execution mode, which needs the maintenance4 feature that "
                               f"{rt.name!r} lacks; compile it for vulkan1.2 (glslang "
                               "--target-env vulkan1.2 uses the WorkgroupSize builtin instead)")


def _version(env: str) -> tuple:
    """(major, minor) of a target environment such as "vulkan1.2"."""
    digits = env.removeprefix("vulkan").split(".")
    return tuple(int(d) for d in digits[:2])


def _capability_missing(cap: str, rt) -> str:
    """Why the device cannot run capability `cap` ("" when it can)."""
    features = rt.features
    if cap in _BASE_CAPABILITIES:
        return ""
    if cap in CAPABILITY_FEATURES:
        feature = CAPABILITY_FEATURES[cap]
        return "" if feature in features else \
            f"the device lacks the {feature!r} feature{_vulkan_name(feature)}"
    if cap in _ANY_FEATURE_CAPABILITIES:
        wanted = _ANY_FEATURE_CAPABILITIES[cap]
        if features & set(wanted):
            return ""
        if len(wanted) == 1:
            return f"the device lacks the {wanted[0]!r} feature{_vulkan_name(wanted[0])}"
        return f"the device has none of the features {list(wanted)}"
    if cap in _SUBGROUP_CAPABILITIES:
        kind = _SUBGROUP_CAPABILITIES[cap]
        return "" if kind in rt.subgroup_operations else \
            f"the device lacks {kind!r} subgroup operations"
    return "vkir does not enable it on any device"


def _vulkan_name(feature: str) -> str:
    """" (Vulkan struct.member)" of vkir feature `feature`, where Vulkan reports it as one."""
    f = BY_NAME[feature]
    return f" (Vulkan {f.struct}.{f.member})" if f.struct and f.member else ""


def _extension_missing(ext: str, version: tuple, available: frozenset) -> str:
    """Why the device cannot run SPIR-V extension `ext` ("" when it can)."""
    if ext not in _SPIRV_EXTENSIONS:
        return "vkir knows no Vulkan version or device extension that allows it"
    core, device_ext = _SPIRV_EXTENSIONS[ext]
    if core is not None and version >= core:
        return ""
    if device_ext is not None and device_ext in available and device_ext in _ENABLED:
        return ""
    if device_ext is None:
        return f"it needs Vulkan {core[0]}.{core[1]}"
    instead = f"; {_INSTEAD[device_ext]}" if device_ext in _INSTEAD else ""
    if device_ext in available:
        return f"vkir does not enable the device extension {device_ext}{instead}"
    return f"the device lacks the extension {device_ext}{instead}"
