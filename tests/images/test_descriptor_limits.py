"""Descriptor limits of images, samplers and texel buffers are checked before the driver sees a
pipeline (vkir.runtime.limits.check_bindings): storage images and storage texel buffers count as
storage images, sampled images, combined image samplers and uniform texel buffers as sampled
images, samplers and combined image samplers as samplers, an array of descriptors by its element
count, and every descriptor but a separate sampler against maxPerStageResources. Unit tests use
a DeviceInfo with small limits; device tests lower one limit of the real device and show that a
kernel with image parameters, a kernel reading through uniform texel buffers (llvmpipe) and a
GLSL shader with every image-like kind are refused by name with nothing created in the driver."""

import dataclasses

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import UnsupportedError
from vkir.quirks import STORAGE_LOADS_PER_LANE
from vkir.runtime import DeviceInfo, Limits, limits

# (descriptor kind, limit classes it counts against: (per-stage field, Vulkan name, per-set
# field, Vulkan name, how messages call the class))
STORAGE = ("max_per_stage_storage_images", "maxPerStageDescriptorStorageImages",
           "max_descriptor_set_storage_images", "maxDescriptorSetStorageImages", "storage images")
SAMPLED = ("max_per_stage_sampled_images", "maxPerStageDescriptorSampledImages",
           "max_descriptor_set_sampled_images", "maxDescriptorSetSampledImages", "sampled images")
SAMPLERS = ("max_per_stage_samplers", "maxPerStageDescriptorSamplers",
            "max_descriptor_set_samplers", "maxDescriptorSetSamplers", "samplers")
KINDS = {"storage_image": (STORAGE,), "storage_texel_buffer": (STORAGE,),
         "sampled_image": (SAMPLED,), "uniform_texel_buffer": (SAMPLED,),
         "combined_image_sampler": (SAMPLED, SAMPLERS), "sampler": (SAMPLERS,)}
IMAGE_FIELDS = [c[0] for c in (STORAGE, SAMPLED, SAMPLERS)] + [c[2] for c in (STORAGE, SAMPLED,
                                                                              SAMPLERS)]


def tiny(**changes) -> DeviceInfo:
    """A DeviceInfo whose descriptor limits are large unless `changes` lowers them."""
    lim = Limits(max_workgroup_size=(128, 128, 64), max_workgroup_invocations=128,
                 max_workgroup_count=(65535,) * 3, max_shared_memory_bytes=16384,
                 max_push_constant_bytes=128, max_storage_buffer_range=1 << 27,
                 min_storage_buffer_offset_alignment=16, non_coherent_atom_size=64,
                 timestamp_period_ns=1.0, max_memory_allocation_count=4096,
                 max_per_stage_storage_buffers=100, max_descriptor_set_storage_buffers=100,
                 max_per_stage_resources=1000, **{f: 100 for f in IMAGE_FIELDS})
    return DeviceInfo(name="tiny", kind="cpu", driver="fake", api_version="1.3",
                      limits=dataclasses.replace(lim, **changes), features=frozenset(), index=0,
                      subgroup_size=4, subgroup_operations=frozenset(), unified_memory=True)


def test_defaults_are_the_vulkan_minimums():
    lim = tiny().limits
    defaults = Limits(**{f.name: getattr(lim, f.name) for f in dataclasses.fields(Limits)
                         if f.default is dataclasses.MISSING})   # the fields without a default
    assert (defaults.max_per_stage_storage_images, defaults.max_per_stage_sampled_images,
            defaults.max_per_stage_samplers, defaults.max_descriptor_set_storage_images,
            defaults.max_descriptor_set_sampled_images, defaults.max_descriptor_set_samplers,
            defaults.max_per_stage_resources) == (4, 16, 16, 24, 96, 96, 128)


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("per_set", [False, True], ids=["stage", "set"])
def test_each_kind_counts_against_its_limits(kind, per_set):
    for cls in KINDS[kind]:
        field, name = (cls[2], cls[3]) if per_set else (cls[0], cls[1])
        info = tiny(**{field: 2})
        limits.check_bindings(info, 1, "kernel k", images=((kind, 2),))    # at the limit
        word = kind.replace("_", " ")
        with pytest.raises(UnsupportedError, match=rf"^kernel k binds 3 {cls[4]} \(3 {word}s\); "
                                                   rf"{name} of 'tiny' is 2$"):
            limits.check_bindings(info, 1, "kernel k", images=((kind, 3),))
        # an array of descriptors counts its elements, beside a single one of the same kind
        with pytest.raises(UnsupportedError, match=rf"binds 3 {cls[4]} .*; {name} "):
            limits.check_bindings(info, 0, "kernel k", images=((kind, 1), (kind, 2)))
    # the limits of the other classes do not count this kind
    others = [c for c in (STORAGE, SAMPLED, SAMPLERS) if c not in KINDS[kind]]
    limits.check_bindings(tiny(**{c[2 if per_set else 0]: 0 for c in others}), 0, "kernel k",
                          images=((kind, 5),))


def test_a_combined_image_sampler_is_a_sampled_image_and_a_sampler():
    combined = (("combined_image_sampler", 2),)
    with pytest.raises(UnsupportedError, match=r"binds 2 sampled images \(2 combined image "
                                               r"samplers\); maxPerStageDescriptorSampledImages"):
        limits.check_bindings(tiny(max_per_stage_sampled_images=1), 0, "s", images=combined)
    with pytest.raises(UnsupportedError, match=r"binds 2 samplers \(2 combined image samplers\); "
                                               r"maxPerStageDescriptorSamplers of 'tiny' is 1"):
        limits.check_bindings(tiny(max_per_stage_samplers=1), 0, "s", images=combined)
    # with separate samplers and sampled images the sum counts
    with pytest.raises(UnsupportedError, match=r"binds 3 samplers \(1 sampler, 2 combined image "
                                               r"samplers\); maxDescriptorSetSamplers .* is 2"):
        limits.check_bindings(tiny(max_descriptor_set_samplers=2), 0, "s",
                              images=combined + (("sampler", 1),))


def test_kinds_of_one_class_add_up():
    images = (("storage_image", 1), ("storage_texel_buffer", 2), ("sampled_image", 1),
              ("uniform_texel_buffer", 3), ("combined_image_sampler", 1))
    with pytest.raises(UnsupportedError, match=r"binds 3 storage images \(1 storage image, 2 "
                                               r"storage texel buffers\); "
                                               r"maxDescriptorSetStorageImages .* is 2"):
        limits.check_bindings(tiny(max_descriptor_set_storage_images=2), 0, "s", images=images)
    with pytest.raises(UnsupportedError, match=r"binds 5 sampled images \(1 sampled image, 1 "
                                               r"combined image sampler, 3 uniform texel "
                                               r"buffers\); maxPerStageDescriptorSampledImages"):
        limits.check_bindings(tiny(max_per_stage_sampled_images=4), 0, "s", images=images)
    limits.check_bindings(tiny(max_per_stage_sampled_images=5, max_per_stage_storage_images=3),
                          0, "s", images=images)


def test_resources_count_every_descriptor_but_separate_samplers():
    images = (("storage_image", 2), ("combined_image_sampler", 2), ("sampler", 5))
    info = tiny(max_per_stage_resources=7)
    limits.check_bindings(info, 3, "shader s", images=images)   # 3 + 2 + 2: at the limit
    with pytest.raises(UnsupportedError, match=r"^shader s binds 8 resources \(3 buffers, 2 "
                                               r"storage images, 2 combined image samplers, 1 "
                                               r"uniform texel buffer\); maxPerStageResources "
                                               r"of 'tiny' is 7$"):
        limits.check_bindings(info, 3, "shader s", images=images + (("uniform_texel_buffer", 1),))
    with pytest.raises(UnsupportedError, match=r"binds 8 buffers; maxPerStageResources"):
        limits.check_bindings(info, 8, "shader s")   # buffers alone: the message as before


def test_texel_reads_are_checked_as_their_storage_buffer_variant_too():
    info = tiny(max_per_stage_storage_buffers=4, max_per_stage_sampled_images=4)
    texels = (("uniform_texel_buffer", 4),)
    limits.check_bindings(info, 1, "kernel k", images=texels)   # a shader's texel buffers
    with pytest.raises(UnsupportedError, match=r"kernel k \(its variant reading its 4 "
                                               r"texel-buffer parameters as storage buffers\) "
                                               r"binds 5 storage buffers; "
                                               r"maxPerStageDescriptorStorageBuffers"):
        limits.check_bindings(info, 1, "kernel k", images=texels, texel_storage=True)
    with pytest.raises(UnsupportedError, match=r"kernel k binds 5 sampled images"):
        limits.check_bindings(info, 0, "kernel k", images=(("uniform_texel_buffer", 5),),
                              texel_storage=True)


def test_an_unknown_kind_is_a_callers_bug():
    with pytest.raises(ValueError, match="'storage'"):
        limits.check_bindings(tiny(), 0, "s", images=(("storage", 1),))


# -- on the device: nothing reaches the driver -----------------------------------------------------
@pytest.fixture
def lowered(device, monkeypatch):
    """lowered(**changes): the device reports these limits from now on (as a stricter GPU
    would), and creating a shader module or pipeline fails the test."""
    from vkir.runtime import pipeline as runtime_pipeline

    def lower(forbid: bool = True, **changes):
        info = device.info
        monkeypatch.setattr(device, "info", dataclasses.replace(
            info, limits=dataclasses.replace(info.limits, **changes)))
        if forbid:
            monkeypatch.setattr(runtime_pipeline, "call",
                                lambda what, *a: pytest.fail(f"{what} reached the driver"))
    return lower


@T.prim_func
def blend(a: T.Texture((4, 4), "rgba8"), b: T.Texture((4, 4), "rgba8"),
          dst: T.Image((4, 4), "rgba32f")):
    for ty in T.thread_binding(4, "threadIdx.y"):
        for tx in T.thread_binding(4, "threadIdx.x"):
            uv = T.float32x2(T.cast(tx, "float32") * 0.25 + 0.125,
                             T.cast(ty, "float32") * 0.25 + 0.125)
            dst[ty, tx] = T.sample(a, uv) * 0.5 + T.sample(b, uv) * 0.25


@pytest.mark.parametrize("changes, message", [
    ({"max_per_stage_sampled_images": 1},
     r"binds 2 sampled images \(2 combined image samplers\); maxPerStageDescriptorSampledImages"),
    ({"max_descriptor_set_samplers": 1},
     r"binds 2 samplers \(2 combined image samplers\); maxDescriptorSetSamplers"),
    ({"max_per_stage_storage_images": 0},
     r"binds 1 storage image \(1 storage image\); maxPerStageDescriptorStorageImages"),
    ({"max_per_stage_resources": 2},
     r"binds 3 resources \(1 storage image, 2 combined image samplers\); maxPerStageResources"),
], ids=["sampled", "samplers", "storage", "resources"])
def test_a_kernel_over_an_image_limit_is_refused_before_the_driver(device, lowered, changes,
                                                                   message):
    _refused_before_the_driver(device, lowered, changes, f"kernel blend {message}",
                               lambda: vkir.build(blend, device=device))


def _refused_before_the_driver(device, lowered, changes, message, make):
    """`make()` raises UnsupportedError matching `message` once the device's limits are lowered
    by `changes`, and no pipeline or launch was created."""
    before = (len(device.pipelines), len(device.launches))
    lowered(**changes)
    with pytest.raises(UnsupportedError, match=rf"{message} of '.*' is "
                                               rf"{next(iter(changes.values()))}$"):
        make()
    assert (len(device.pipelines), len(device.launches)) == before


def test_a_kernel_at_its_image_limits_runs(device, lowered):
    lowered(forbid=False, max_per_stage_sampled_images=2, max_descriptor_set_samplers=2,
            max_per_stage_storage_images=1, max_per_stage_resources=3)
    rng = np.random.default_rng(5)
    a, b = (rng.integers(0, 256, (4, 4, 4), dtype=np.uint8) for _ in range(2))
    got, want = np.zeros((4, 4, 4), np.float32), np.zeros((4, 4, 4), np.float32)
    vkir.build(blend, device=device)(a, b, got)
    vkir.interpret(blend, a, b, want)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@T.prim_func
def sum3(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32"),
         c: T.Buffer((64,), "float32"), out: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        out[tx] = a[tx] + b[tx] + c[tx]


def test_texel_reads_count_as_sampled_images(device, lowered):
    """On llvmpipe the three read-only parameters are uniform texel buffers: sampled images.
    Elsewhere they are storage buffers, which the sampled-image limit does not count."""
    texel = STORAGE_LOADS_PER_LANE in device.info.quirks
    assert vkir.build(sum3, device=device).texel_params == (("a", "b", "c") if texel else ())
    lowered(forbid=texel, max_per_stage_sampled_images=2)
    if texel:
        with pytest.raises(UnsupportedError, match=r"kernel sum3 binds 3 sampled images \(3 "
                                                   r"uniform texel buffers\); "
                                                   r"maxPerStageDescriptorSampledImages of .* is 2"):
            vkir.build(sum3, device=device)
        return
    a, b, c = (np.arange(64, dtype=np.float32) * k for k in (1, 3, 5))
    out = np.zeros(64, np.float32)
    vkir.build(sum3, device=device)(a, b, c, out)
    np.testing.assert_array_equal(out, a + b + c)


SHADER = """#version 450
layout(local_size_x = 4) in;
layout(binding = 0) uniform sampler2D texs[3];
layout(binding = 1) uniform texture2D plain;
layout(binding = 2) uniform sampler smp;
layout(binding = 3) uniform samplerBuffer values;
layout(binding = 4, r32f) uniform writeonly imageBuffer doubled;
layout(binding = 5, rgba32f) uniform writeonly image2D dst[2];
layout(binding = 6, std430) buffer Out { float o[]; };
void main() {
    int i = int(gl_GlobalInvocationID.x);
    vec2 uv = vec2(0.5);
    vec4 s = textureLod(texs[0], uv, 0.0) + textureLod(texs[1], uv, 0.0)
        + textureLod(texs[2], uv, 0.0) + textureLod(sampler2D(plain, smp), uv, 0.0);
    float v = texelFetch(values, i).x;
    imageStore(doubled, i, vec4(2.0 * v));
    imageStore(dst[0], ivec2(i, 0), s);
    imageStore(dst[1], ivec2(i, 0), -s);
    o[i] = v + s.x;
}
"""


@pytest.mark.parametrize("changes, message", [
    ({"max_per_stage_sampled_images": 4},
     r"binds 5 sampled images \(1 sampled image, 3 combined image samplers, 1 uniform texel "
     r"buffer\); maxPerStageDescriptorSampledImages"),
    ({"max_descriptor_set_samplers": 3},
     r"binds 4 samplers \(1 sampler, 3 combined image samplers\); maxDescriptorSetSamplers"),
    ({"max_per_stage_storage_images": 2},
     r"binds 3 storage images \(2 storage images, 1 storage texel buffer\); "
     r"maxPerStageDescriptorStorageImages"),
    ({"max_per_stage_resources": 8},
     r"binds 9 resources \(1 buffer, 2 storage images, 1 storage texel buffer, 1 sampled image, "
     r"3 combined image samplers, 1 uniform texel buffer\); maxPerStageResources"),
], ids=["sampled", "samplers", "storage", "resources"])
def test_a_shader_over_an_image_limit_is_refused_before_the_driver(device, lowered, changes,
                                                                   message):
    _refused_before_the_driver(device, lowered, changes, f"pipeline 'main' {message}",
                               lambda: vkir.compile_glsl(SHADER, device=device))


def test_a_shader_at_its_image_limits_loads(device, lowered):
    lowered(forbid=False, max_per_stage_sampled_images=5, max_descriptor_set_samplers=4,
            max_per_stage_storage_images=3, max_per_stage_resources=9)
    sk = vkir.compile_glsl(SHADER, device=device)
    assert sorted((b.kind, b.count) for b in sk.info.images) == [
        ("combined_image_sampler", 3), ("sampled_image", 1), ("sampler", 1),
        ("storage_image", 2), ("storage_texel_buffer", 1), ("uniform_texel_buffer", 1)]


def test_direct_pipelines_count_image_descriptors(device, lowered):
    from vkir import runtime as rt

    lowered(max_descriptor_set_storage_images=2)
    with pytest.raises(UnsupportedError, match=r"pipeline 'main' binds 3 storage images \(3 "
                                               r"storage images\); maxDescriptorSetStorageImages"):
        rt.get_pipeline(device, b"\0" * 20, "main", (0, 1), 0, ("storage", "storage_image"),
                        slots=((0, 1), (0, 3)))
