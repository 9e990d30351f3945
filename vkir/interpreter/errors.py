"""Errors the interpreter raises while running a kernel (argument errors use vkir.ArgumentError)."""

from ..errors import VkirError


class InterpreterError(VkirError):
    """The kernel cannot be executed: an unbound variable, an unknown intrinsic, a non-uniform
    allocation size, ..."""


class OutOfBoundsError(InterpreterError, IndexError):
    """A load or store outside its buffer's shape (or outside the bytes behind it)."""
