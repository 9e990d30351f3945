"""Errors the interpreter raises while running a kernel (argument errors use vkir.ArgumentError)."""

from ..errors import VkirError


class InterpreterError(VkirError):
    """The kernel cannot be executed: an unbound variable, an unknown intrinsic, a non-uniform
    allocation size, ..."""


class OutOfBoundsError(InterpreterError, IndexError):
    """A load or store outside its buffer's shape (or outside the bytes behind it)."""


class DataRaceError(InterpreterError):
    """Two invocations access one element, at least one writing, with nothing ordering them (no
    `T.barrier()` between them in one workgroup, or different workgroups): the kernel's result on
    a GPU depends on scheduling, although the interpreter's lockstep execution hides it."""
