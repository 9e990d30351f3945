"""VkSamplers, one per device and vkir.Sampler description, and the pairs a combined image
sampler binding takes.

`get_sampler(device, sampler, integer)` makes (once) the VkSampler of a `vkir.images.sampling.Sampler`:
filter, address mode on every axis, border colour (the INT_ variant for integer formats, where
Vulkan reads integer borders), unnormalized coordinates where asked; mip levels are selected by
the explicit level of detail with the filter's own mode (nearest filtering reads the nearest
level, linear filtering blends two: vkir.images.filtering), the lod clamped only to the image's
levels. Samplers live until the device closes (there are few distinct ones).
`ImageSampler(image, sampler)` is what a launch binds to a combined image sampler.
"""

from __future__ import annotations

from vkir.images.sampling import BORDER_COLORS, Sampler

from ._vk import call, vk

_FILTERS = {"nearest": vk.VK_FILTER_NEAREST, "linear": vk.VK_FILTER_LINEAR}
_MIPMAP = {"nearest": vk.VK_SAMPLER_MIPMAP_MODE_NEAREST,
           "linear": vk.VK_SAMPLER_MIPMAP_MODE_LINEAR}
_ADDRESS = {"clamp": vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
            "repeat": vk.VK_SAMPLER_ADDRESS_MODE_REPEAT,
            "mirror": vk.VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT,
            "border": vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER}


class DeviceSampler:
    """One VkSampler (`handle`) of `description` (a vkir Sampler) on `device`; `serial` names
    it in launch keys."""

    __slots__ = ("device", "description", "integer", "handle", "serial")

    def __init__(self, device, description: Sampler, integer: bool):
        self.device, self.description, self.integer = device, description, integer
        f = _FILTERS[description.filter]
        a = _ADDRESS[description.address]
        kind = "INT" if integer else "FLOAT"
        border = getattr(vk, f"VK_BORDER_COLOR_{kind}_{BORDER_COLORS[description.border]}")
        info = vk.VkSamplerCreateInfo(
            magFilter=f, minFilter=f, mipmapMode=_MIPMAP[description.filter],
            addressModeU=a, addressModeV=a, addressModeW=a, mipLodBias=0.0,
            anisotropyEnable=vk.VK_FALSE, maxAnisotropy=1.0, compareEnable=vk.VK_FALSE,
            compareOp=vk.VK_COMPARE_OP_ALWAYS, minLod=0.0, maxLod=vk.VK_LOD_CLAMP_NONE,
            borderColor=border,
            unnormalizedCoordinates=vk.VK_FALSE if description.normalized else vk.VK_TRUE)
        self.handle = call("vkCreateSampler", vk.vkCreateSampler, device.handle, info, None)
        self.serial = device.next_serial()

    def __repr__(self) -> str:
        return f"<vkir DeviceSampler {self.description} on {self.device.info.name}>"


def get_sampler(device, description: Sampler, integer: bool = False) -> DeviceSampler:
    """The device's VkSampler for `description` (made on first use; `integer`: for a format
    whose reads are integers, which takes the integer border colour)."""
    key = (description, bool(integer))
    with device.lifetime, device._lock:
        device.check_open()
        got = device.samplers.get(key)
        if got is None:
            got = device.samplers[key] = DeviceSampler(device, description, bool(integer))
    return got


class ImageSampler:
    """An image and a sampler bound together to one combined image sampler binding."""

    __slots__ = ("image", "sampler", "device", "serial", "serials")

    def __init__(self, image, sampler: DeviceSampler):
        self.image, self.sampler, self.device = image, sampler, image.device
        self.serial = (image.serial, sampler.serial)
        self.serials = self.serial

    def __repr__(self) -> str:
        return f"<vkir ImageSampler {self.image!r} with {self.sampler.description}>"
