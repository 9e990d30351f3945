"""The errors vkir raises for its users; every one derives from `VkirError`."""


class VkirError(Exception):
    """Base class of every error vkir reports to its users."""


class ScriptError(VkirError):
    """A mistake in T.prim_func source; the message points at file:line:col with a caret."""


class TypeCheckError(VkirError):
    """The explicit-cast checker found an ill-typed node (the message names node and rule)."""


class WellFormedError(VkirError):
    """Scoping or SSA violation: an undefined or doubly bound variable, a buffer out of scope."""


class TransformError(VkirError):
    """A pass refuses its input (e.g. invalid software-pipeline annotations)."""


class ScheduleError(VkirError):
    """A schedule primitive cannot apply to the given function."""


class SpirvValidationError(VkirError):
    """SPIRV-Tools rejected an emitted module; carries the message and nearby disassembly."""


class UnsupportedError(VkirError):
    """The target device lacks a capability or limit that the kernel needs."""


class DeviceError(VkirError):
    """A Vulkan call failed; the message carries the VkResult name."""


class ArgumentError(VkirError, TypeError, ValueError):
    """A call with wrong arguments: a kernel or interpreter call with the wrong argument count,
    names, shapes, dtypes or values, or any vkir function or IR constructor given a value it
    does not take (an unknown dtype, loop kind or scope, a non-PrimFunc). It is also a TypeError
    and a ValueError, as a wrong call of a Python function is, so code that catches those
    catches it."""
