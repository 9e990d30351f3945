"""vkir: a strongly typed tensor IR compiled to validated SPIR-V and run on any Vulkan device.

`import vkir` is cheap and needs no Vulkan loader: the heavier parts (SPIR-V backend, runtime,
facade) are imported on first use through module-level `__getattr__`.
"""

from importlib import import_module

from .errors import (
    ArgumentError,
    DeviceError,
    LoopLimitError,
    OutOfBoundsError,
    ScheduleError,
    ScriptError,
    SpirvValidationError,
    TransformError,
    TypeCheckError,
    UnsupportedError,
    VkirError,
    WellFormedError,
)
from . import ir

__version__ = "0.1.0"

# public name -> "module:attribute", resolved lazily on first access
_LAZY = {
    "T": "vkir.script:T",
    "from_script": "vkir.script:from_script",
    "structural_equal": "vkir.ir.structural:structural_equal",
    "assert_structural_equal": "vkir.ir.structural:assert_structural_equal",
    "interpret": "vkir.api:interpret",
    "lower": "vkir.api:lower",
    "build": "vkir.api:build",
    "devices": "vkir.api:devices",
    "device": "vkir.api:device",
    "array": "vkir.api:array",
    "empty": "vkir.api:empty",
    "zeros": "vkir.api:zeros",
    "full": "vkir.api:full",
    "asarray": "vkir.driver.interop:asarray",
    "DeviceArray": "vkir.api:DeviceArray",
    "image": "vkir.driver.device_images:image",
    "empty_image": "vkir.driver.device_images:empty_image",
    "DeviceImage": "vkir.driver.device_images:DeviceImage",
    "Sampler": "vkir.images.sampling:Sampler",
    "sequence": "vkir.driver.sequences:sequence",
    "Sequence": "vkir.driver.sequences:Sequence",
    "profile": "vkir.driver.profiling:profile",
    "Kernel": "vkir.api:Kernel",
    "load_spirv": "vkir.driver.shader_sources:load_spirv",
    "compile_glsl": "vkir.driver.shader_sources:compile_glsl",
    "ShaderKernel": "vkir.driver.shader:ShaderKernel",
    "Target": "vkir.target:Target",
    "autotune": "vkir.autotuning:autotune",
    "from_tvm": "vkir.tvm:from_tvm",
    "PerformanceWarning": "vkir.errors:PerformanceWarning",
    "grad": "vkir.autodiff.adjoint:grad",
    "Tape": "vkir.autodiff.recording:Tape",
    "map": "vkir.mapping:map",
}
_SUBMODULES = {"analysis", "transform", "schedule", "spirv", "runtime", "script", "interpreter", "api",
               "ops", "lowering", "target", "tvm", "driver", "cache", "tools", "testing", "fleet", "autodiff",
               "torch"}


# `from vkir import *`: the errors, the IR package and every lazily resolved name (never the
# submodules, whose import would load the Vulkan binding)
__all__ = [name for name, value in list(globals().items())
           if isinstance(value, type) and issubclass(value, VkirError)] + ["ir", *_LAZY]


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name].split(":")
        value = getattr(import_module(module), attr)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return import_module(f"vkir.{name}")
    raise AttributeError(f"module 'vkir' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _SUBMODULES)
