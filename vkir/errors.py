"""The errors vkir raises for its users; every one derives from `VkirError`."""

__all__ = ["VkirError", "ScriptError", "TypeCheckError", "WellFormedError", "TransformError",
           "ScheduleError", "SpirvValidationError", "UnsupportedError", "LoopLimitError",
           "DeviceError", "ArgumentError", "PerformanceWarning"]


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


class LoopLimitError(UnsupportedError):
    """A loop was cut short by a driver that stops loops early (llvmpipe's limit of 65535 loop
    iterations per invocation), found by the device-side check vkir adds on such drivers where a
    loop's trip count depends on buffer data. The call's results are incomplete. Besides the
    message it carries `loop` (the loop variable's name, or "while" for a while loop) and
    `location` (the "file:line:col" of the loop in the kernel's source, or None)."""

    def __init__(self, message: str, loop: str | None = None, location: str | None = None):
        super().__init__(message)
        self.loop = loop
        self.location = location

    def __reduce__(self):
        return (type(self), (self.args[0], self.loop, self.location))


class DeviceError(VkirError):
    """A Vulkan call failed; the message carries the VkResult name."""


class ArgumentError(VkirError, TypeError, ValueError):
    """A call with wrong arguments: a kernel or interpreter call with the wrong argument count,
    names, shapes, dtypes or values, or any vkir function or IR constructor given a value it
    does not take (an unknown dtype, loop kind or scope, a non-PrimFunc). It is also a TypeError
    and a ValueError, as a wrong call of a Python function is, so code that catches those
    catches it."""


class OutOfBoundsError(VkirError, IndexError):
    """A load, store or atomic outside its buffer or storage image, found by the interpreter or
    by the device-side checks of `vkir.build(f, check_bounds=True)`. Besides the message it
    carries `buffer` (the buffer's or image's name), `index` (the offending index value; the
    device-side checks give all of the access's indices), `invocation` (e.g. {"blockIdx.x": 1,
    "threadIdx.x": 3}, empty when the kernel has no thread bindings) and `location` (the
    "file:line:col" of the access in the kernel's source, or None when the IR has no span)."""

    def __init__(self, message: str, buffer: str | None = None, index=None,
                 invocation: dict | None = None, location: str | None = None):
        super().__init__(message)
        self.buffer = buffer
        self.index = index
        self.invocation = dict(invocation or {})
        self.location = location

    def __reduce__(self):
        return (type(self), (self.args[0], self.buffer, self.index, self.invocation,
                             self.location))


def describe_invocation(invocation: dict) -> str:
    """`(blockIdx.x=1, threadIdx.x=3)` for an invocation's ids (blockIdx first, x before y)."""
    order = sorted(invocation, key=lambda k: (not k.startswith("blockIdx"), k))
    return "(" + ", ".join(f"{k}={invocation[k]}" for k in order) + ")"


class PerformanceWarning(UserWarning):
    """A kernel will run correctly but far slower than it could, for a reason its source can fix:
    `vkir.build` of a kernel with neither a `T.parallel` loop nor a thread binding (it runs as one
    invocation). The message names the kernel and the fix. Silence it with
    `warnings.filterwarnings("ignore", category=vkir.PerformanceWarning)`."""
