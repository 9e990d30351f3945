"""`vkir.ops` calls inside a `vkir.Tape` (or on torch tensors that require grad, as torch
autograd nodes: vkir.autodiff.torch_ops): the differentiable ops (sum, mean, cumsum, softmax,
layer_norm, matmul, conv2d and sort's values) are recorded as one step each, whose backward is
the op's adjoint (vkir.autodiff.op_adjoints); the others (histogram, argsort, argmax, min, max,
transpose) stay refused by name at the call (vkir.ops._common.Call raises UnsupportedError
inside a tape).

`differentiable(op)` wraps an op function: outside a tape it is the op; inside, the op runs with
the tape set aside (its own kernels are not recorded) on DeviceArrays only, and the tape records
an `OpCall` with the same checks as a kernel call (an input written later, an output over memory
a recorded call read, an input changed before backward).
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from ..driver.tape_hook import ACTIVE_TAPE
from ..errors import ArgumentError
from .memory import fingerprint
from .op_adjoints import ADJOINTS

__all__ = ["differentiable", "OpCall"]


class _Name:
    """What a tape's messages read from a recorded step (`call.kernel.name`)."""

    def __init__(self, name: str):
        self.name = name


class OpCall:
    """One recorded op: its inputs and result as the tape's arguments (the result last), in
    the tape's (index, name, read, written, accumulate-only) form, and its options."""

    def __init__(self, op: str, inputs: dict, options: dict, out):
        self.op = op
        self.kernel = _Name(f"vkir.ops.{op}")
        names = [n for n, a in inputs.items() if a is not None]
        self.args = tuple(inputs[n] for n in names) + (out,)
        self.params = tuple((i, n, True, False, False) for i, n in enumerate(names)) + \
            ((len(names), "out", False, True, False),)
        self.options = options
        self.read_sums = ()

    def arrays(self, which):
        """[(array, name)] of the inputs (`which` "read") or of the result ("written")."""
        return [(self.args[i], name) for i, name, r, w, _ in self.params
                if (r if which == "read" else w)]

    def seal(self, out) -> None:
        """Set the result (known once the op ran) and checksum the inputs."""
        self.args = self.args[:-1] + (out,)
        self.read_sums = tuple((i, name, fingerprint(self.args[i]))
                               for i, name, r, _, _ in self.params if r and self.args[i].size)

    def check_unchanged(self, index: int) -> None:
        """ArgumentError where an input changed since the op read it (as a kernel call's)."""
        for i, name, total in self.read_sums:
            if fingerprint(self.args[i]) != total:
                raise ArgumentError(
                    f"vkir.Tape.backward: input {name!r} of recorded call {index} "
                    f"({self.kernel.name}) changed after the call read it (written outside the "
                    "tape or by the host); backward needs the values the call saw: record the "
                    "calls again")

    def backward(self, tape) -> None:
        """Add the op's input gradients into the tape's adjoints (nothing when no gradient
        reached its result)."""
        out = self.args[-1]
        if tape.adjoint_if_reached(out) is None:
            return
        seed = tape.adjoint_if_reached(out).numpy().astype(np.float64)
        inputs = {name: self.args[i].numpy().astype(np.float64)
                  for i, name, r, _, _ in self.params if r}
        grads = ADJOINTS[self.op][1](**inputs, seed=seed,
                                     result=out.numpy().astype(np.float64), **self.options)
        for i, name, r, _, _ in self.params:
            if r and name in grads and np.dtype(self.args[i].dtype).kind == "f":
                tape.add_gradient(self.args[i], grads[name].astype(self.args[i].dtype))


def _torch_grad(args, kwargs) -> bool:
    """Whether an argument is a torch tensor that requires grad, with grad mode on."""
    from ..driver.call_args import is_tensor

    found = [a for a in (*args, *kwargs.values()) if is_tensor(a) and a.requires_grad]
    if not found:
        return False
    import torch

    return torch.is_grad_enabled()


def differentiable(fn):
    """`fn` (a vkir.ops function named as its entry in ADJOINTS), recorded inside a tape."""
    op = fn.__name__
    names = ADJOINTS[op][0]
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tape = ACTIVE_TAPE.get()
        if tape is None and not _torch_grad(args, kwargs):
            return fn(*args, **kwargs)
        from ..driver.arrays import DeviceArray

        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        inputs = {n: values.pop(n) for n in names}
        out = values.pop("out", None)
        device = values.pop("device", None)
        if tape is None:   # tensors that require grad: a torch autograd node
            from .torch_ops import op_with_grad

            return op_with_grad(op, fn, inputs, values, device, out)
        for name, a in [*inputs.items(), ("out", out)]:
            if a is not None and not isinstance(a, DeviceArray):
                raise ArgumentError(f"vkir.Tape: vkir.ops.{op} argument {name!r} is a "
                                    f"{type(a).__name__}; inside a tape arrays must be "
                                    "DeviceArrays (vkir.array), which the tape keeps for "
                                    "backward")
        call = OpCall(op, inputs, values, out)
        result = tape.record_op(call, lambda: fn(*args, **kwargs))
        return result

    return wrapper
