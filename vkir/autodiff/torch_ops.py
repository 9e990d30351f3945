"""Differentiable `vkir.ops` calls on torch tensors that require grad (what the ops'
vkir.autodiff.op_tape wrapper calls then): each call is one torch autograd node whose backward
is the op's adjoint (vkir.autodiff.op_adjoints, float64 on the host). Its inputs are saved with
`save_for_backward`, so one changed in place before backward is torch's own RuntimeError.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import ArgumentError
from .op_adjoints import ADJOINTS

__all__ = ["op_with_grad"]


class _OpFunction(torch.autograd.Function):
    """A differentiable `vkir.ops` call on tensors: the op forward, its adjoint
    (vkir.autodiff.op_adjoints, float64 on the host) backward."""

    @staticmethod
    def forward(ctx, op, fn, names, options, device, *tensors):
        args = {n: (t.detach() if isinstance(t, torch.Tensor) else t)
                for n, t in zip(names, tensors)}
        result = fn(**args, **options, device=device)
        kept = [t if isinstance(t, torch.Tensor) else None for t in tensors]
        ctx.save_for_backward(*(t for t in kept if t is not None), result)
        ctx.layout = (op, names, options, [t is not None for t in kept])
        return result

    @staticmethod
    def backward(ctx, seed):
        op, names, options, present = ctx.layout
        saved = list(ctx.saved_tensors)
        result = saved.pop()
        values = {n: saved.pop(0) for n, here in zip(names, present) if here}
        grads = ADJOINTS[op][1](**{n: t.double().numpy() for n, t in values.items()},
                                seed=seed.double().numpy(), result=result.double().numpy(),
                                **options)
        out = [None] * 5
        for n, here, need in zip(names, present, ctx.needs_input_grad[5:]):
            g = grads.get(n) if here and need else None
            out.append(None if g is None else
                       torch.from_numpy(np.ascontiguousarray(g)).to(values[n].dtype))
        return tuple(out)


def op_with_grad(op: str, fn, inputs: dict, options: dict, device, out):
    """`vkir.ops.<op>` (`fn`) on tensors of which one requires grad: a torch autograd node
    whose backward is the op's adjoint. `out=` is refused (torch cannot differentiate a
    write into an existing tensor here)."""
    if out is not None:
        raise ArgumentError(f"vkir.ops.{op}: out= with inputs that require grad; drop out= "
                            "(the result is a new tensor) or call it under torch.no_grad()")
    names = tuple(inputs)
    return _OpFunction.apply(op, fn, names, options, device, *inputs.values())
