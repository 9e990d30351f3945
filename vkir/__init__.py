"""vkir: a strongly typed tensor IR compiled to validated SPIR-V and run on any Vulkan device.

`import vkir` is cheap and needs no Vulkan loader: the heavier parts (SPIR-V backend, runtime,
facade) are imported on first use through module-level `__getattr__`.
"""

import importlib.abc
import importlib.util
import sys
from importlib import import_module

from .errors import (
    ArgumentError,
    DeviceError,
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
    "DeviceArray": "vkir.api:DeviceArray",
    "sequence": "vkir.driver.sequences:sequence",
    "Sequence": "vkir.driver.sequences:Sequence",
    "profile": "vkir.driver.profiling:profile",
    "Kernel": "vkir.api:Kernel",
    "load_spirv": "vkir.driver.shader:load_spirv",
    "compile_glsl": "vkir.driver.shader:compile_glsl",
    "ShaderKernel": "vkir.driver.shader:ShaderKernel",
    "Target": "vkir.target:Target",
    "autotune": "vkir.autotune:autotune",
    "from_tvm": "vkir.tvm:from_tvm",
}
_SUBMODULES = {"analysis", "transform", "schedule", "spirv", "runtime", "script", "interpreter", "api",
               "ops", "lowering", "target", "sequences", "profiling", "tvm"}


# `from vkir import *`: the errors, the IR package and every lazily resolved name (never the
# submodules, whose import would load the Vulkan binding)
__all__ = [name for name, value in list(globals().items())
           if isinstance(value, type) and issubclass(value, VkirError)] + ["ir", *_LAZY]


# modules that moved into driver/, cache/ and tools/: their old names still import (the same
# module objects), so code written against the flat layout keeps working
_MOVED = {
    "vkir.sequences": "vkir.driver.sequences", "vkir.profiling": "vkir.driver.profiling",
    "vkir.shader": "vkir.driver.shader", "vkir.dlpack": "vkir.driver.dlpack",
    "vkir.loop_budget": "vkir.driver.loop_budget", "vkir.shape_eval": "vkir.driver.shape_eval",
    "vkir.bounds_check": "vkir.driver.bounds_check", "vkir.cache_root": "vkir.cache.root",
    "vkir.compile_cache": "vkir.cache.compile", "vkir.cli": "vkir.tools.cli",
    "vkir.doctor": "vkir.tools.doctor", "vkir.demo": "vkir.tools.demo",
    "vkir.validate": "vkir.tools.validate", "vkir.validate_jobs": "vkir.tools.validate_jobs",
    "vkir.vector_report": "vkir.tools.vector_report", "vkir.fuzz": "vkir.tools.fuzz",
    "vkir.runtime.quirks": "vkir.quirks",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a moved module's old name as an alias of the module at its new place."""

    @staticmethod
    def new_name(fullname: str) -> str | None:
        for old, new in _MOVED.items():
            if fullname == old or fullname.startswith(old + "."):
                return new + fullname[len(old):]
        return None

    def find_spec(self, fullname, path=None, target=None):
        new = self.new_name(fullname)
        if new is None:
            return None
        real = importlib.util.find_spec(new)
        if real is None:
            return None
        return importlib.util.spec_from_loader(
            fullname, self, is_package=real.submodule_search_locations is not None)

    def create_module(self, spec):
        return import_module(self.new_name(spec.name))

    def exec_module(self, module):
        """Nothing to run: the module ran under its new name."""

    def get_code(self, fullname):
        """The new module's code (`python -m` with an old name)."""
        new = self.new_name(fullname)
        return importlib.util.find_spec(new).loader.get_code(new)


sys.meta_path.insert(0, _MovedModules())   # before the path finder, which would load a
                                           # second copy through the old package's __path__


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
