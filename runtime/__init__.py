"""vkir.runtime: run SPIR-V compute kernels on a Vulkan device through the `vulkan` package.

It imports no other vkir part except vkir.errors, vkir.timing and vkir.config (the VKIR_*
environment variables): it takes SPIR-V bytes, the binding numbers of
the storage buffers, push-constant bytes and group counts.

    dev = open_device()                      # $VKIR_DEVICE or the best device
    buf = Buffer(dev, nbytes); buf.write(a); buf.read(out)
    pipe = get_pipeline(dev, spirv, "main", bindings=(0, 1, 2), push_constant_size=4)
    dispatch(dev, pipe, [x, y, z], push=struct.pack("<i", n), groups=(gx, 1, 1))
    profile(dev, pipe, [x, y, z], push, groups, repeat=50) -> Timing(median, min, max, ...)
    release_pipeline(dev, pipe)              # the last release destroys it and its launches

Every device limit is checked (runtime.limits) before the driver sees a pipeline, a dispatch or an
allocation; after `shutdown()` (or `Device.close()`) every use of the device raises DeviceError.
"""

from .device import Device
from .images import Image, TexelBuffer, check_format
from .info import DeviceInfo, Limits
from .instance import get_instance, shutdown, validation_requested
from .launch import RecordedLaunch, Timing, dispatch, get_launch, profile
from .memory import Buffer
from .pipeline import ComputePipeline, SubgroupRequirement, get_pipeline, release_pipeline, subgroup_requirement
from .recording import Dispatch, Recording
from .samplers import DeviceSampler, ImageSampler, get_sampler
from .submission import Submission
from .suballoc import SubBuffer, allocate
from .selection import devices, open_device, select, validation_messages

__all__ = [
    "Buffer", "Device", "Image", "TexelBuffer", "check_format", "DeviceSampler", "ImageSampler",
    "get_sampler", "Dispatch", "Recording", "SubBuffer", "Submission", "allocate", "DeviceInfo", "RecordedLaunch", "Limits", "ComputePipeline", "Timing", "devices", "dispatch",
    "get_instance", "get_launch", "get_pipeline", "open_device", "profile", "release_pipeline",
    "select", "shutdown", "SubgroupRequirement", "subgroup_requirement", "validation_messages", "validation_requested",
]
