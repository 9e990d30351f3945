"""Errors the interpreter raises while running a kernel (argument errors use vkir.ArgumentError;
out-of-bounds accesses raise vkir.OutOfBoundsError, shared with the device-side checks)."""

from ..errors import OutOfBoundsError, VkirError

__all__ = ["InterpreterError", "OutOfBoundsError", "DataRaceError"]


class InterpreterError(VkirError):
    """The kernel cannot be executed: an unbound variable, an unknown intrinsic, a non-uniform
    allocation size, ..."""


class DataRaceError(InterpreterError):
    """Two invocations access one element, at least one writing, with nothing ordering them (no
    `T.barrier()` between them in one workgroup, or different workgroups): the kernel's result on
    a GPU depends on scheduling, although the interpreter's lockstep execution hides it."""
