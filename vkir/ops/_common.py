"""What every op shares: argument handling (numpy or DeviceArray inputs, `device=`, `out=`),
checking a template's sizes, building a tuned template's kernel once per device and shape, and
the `distribute_tile` schedule step the register-tiled templates use.
"""

from __future__ import annotations

import numpy as np

from ..errors import ArgumentError, UnsupportedError
from ..ir import For, Mutator, SeqStmt, Var, seq, substitute

TILE = "register_tile"  # loop annotation: distribute this nest over the statements inside it


# -- the register-tile schedule step -------------------------------------------------------------
def distribute_tile(func):
    """Distribute every loop nest annotated `register_tile` over the statements of its body:
    `for i, j: (init; for k: update; finish)` becomes `for i, j: init`, `for k: for i, j: update`,
    `for i, j: finish`, so that each step of the reduction loop updates the whole tile (kept in
    registers) and reuses every value it loads. Exact when the tile's iterations write disjoint
    elements, which the templates guarantee (each writes its own tile element)."""
    return func.with_body(_Distribute().visit(func.body))


class _Distribute(Mutator):
    def visit_For(self, node):
        if TILE not in node.annotations:
            return self.generic_visit(node)
        loops = []
        inner = node
        while isinstance(inner, For):
            loops.append(inner)
            inner = inner.body
        parts = inner.seq if isinstance(inner, SeqStmt) else (inner,)
        out = []
        for part in parts:
            reduce_loops = []
            while isinstance(part, For) and part.kind == "serial":
                reduce_loops.append(part)
                part = part.body
            out.append(_wrap(reduce_loops, _fresh_nest(loops, part)))
        return seq(*out)


def _fresh_nest(loops, body):
    """The loops around `body`, with fresh loop variables (each copy binds its own: SSA)."""
    mapping = {loop.loop_var: Var(loop.loop_var.name, loop.loop_var.dtype) for loop in loops}
    body = substitute(body, mapping)
    for loop in reversed(loops):
        annotations = {k: v for k, v in loop.annotations.items() if k != TILE}
        body = For(mapping[loop.loop_var], loop.min, loop.extent, loop.kind, body, loop.thread,
                   annotations)
    return body


def _wrap(loops, body):
    for loop in reversed(loops):
        body = For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.thread,
                   loop.annotations)
    return body


# -- arguments -------------------------------------------------------------------------------------
class Call:
    """The arguments of one op call, resolved: the device, the inputs as DeviceArrays, and
    whether the caller gets a DeviceArray back (or a torch tensor: torch CPU tensors in, read
    as numpy views of their memory, give a tensor out; `out=` may be a contiguous tensor,
    written in place)."""

    def __init__(self, op: str, inputs: dict, device=None, out=None, dtypes=("float32",)):
        from ..api import DeviceArray, resolve_device
        from ..driver.call_args import is_tensor, tensor_as_numpy
        from ..driver.tape_hook import ACTIVE_TAPE

        if ACTIVE_TAPE.get() is not None:   # its kernels would be recorded on temporaries
            raise UnsupportedError(f"vkir.ops.{op} inside a vkir.Tape: {op} is not "
                                   "differentiable (the tape records sum, mean, cumsum, "
                                   "softmax, layer_norm, matmul, conv2d and sort); call it "
                                   "outside the tape's block")
        self.op = op
        self.returns_torch = any(is_tensor(a) for a in inputs.values())
        inputs = {name: tensor_as_numpy(a, f"vkir.ops.{op}: {name}") if is_tensor(a) else a
                  for name, a in inputs.items()}
        self.out_tensor = out if is_tensor(out) else None
        if self.out_tensor is not None:
            out = tensor_as_numpy(out, f"vkir.ops.{op}: out")
            if not out.flags.c_contiguous:
                raise ArgumentError(f"vkir.ops.{op}: out is a non-contiguous tensor; pass a "
                                    "contiguous one")
        devs = {id(a.device): a.device for a in inputs.values() if isinstance(a, DeviceArray)}
        if len(devs) > 1:
            raise ArgumentError(f"vkir.ops.{op}: inputs live on different devices")
        if isinstance(out, DeviceArray):
            devs.setdefault(id(out.device), out.device)
            if len(devs) > 1:
                raise ArgumentError(f"vkir.ops.{op}: `out` lives on another device than the inputs")
        found = next(iter(devs.values()), None)
        if device is not None:
            dev = resolve_device(device)
            if found is not None and found is not dev:
                raise ArgumentError(f"vkir.ops.{op}: inputs live on {found.info.name!r}, "
                                    f"device= asks for {dev.info.name!r}")
        else:
            dev = found if found is not None else resolve_device(None)
        self.device = dev
        self.returns_device = any(isinstance(a, DeviceArray) for a in inputs.values())
        self.out = out
        self.arrays = {}
        for name, a in inputs.items():
            if a is None:
                self.arrays[name] = None
            elif isinstance(a, DeviceArray):
                self.arrays[name] = a
            else:
                arr = np.asarray(a)
                self.arrays[name] = arr
        for name, a in self.arrays.items():
            if a is not None and np.dtype(a.dtype).name not in dtypes:
                raise ArgumentError(f"vkir.ops.{op}: {name} has dtype {a.dtype}; {op} takes "
                                    f"{', '.join(dtypes)} arrays (convert with .astype)")

    def device_array(self, name):
        """Input `name` as a DeviceArray on the call's device (numpy inputs copied in)."""
        from ..api import DeviceArray, array

        a = self.arrays[name]
        if isinstance(a, DeviceArray):
            return a
        a = array(np.ascontiguousarray(a), device=self.device)
        self.arrays[name] = a
        return a

    def result(self, shape, dtype="float32"):
        """The DeviceArray the kernel writes: `out` when it is a DeviceArray of the right shape
        and dtype, else a new one."""
        from ..api import DeviceArray, empty

        shape = tuple(int(s) for s in shape)
        out = self.out
        if out is not None:
            if tuple(out.shape) != shape or np.dtype(out.dtype) != np.dtype(dtype):
                raise ArgumentError(f"vkir.ops.{self.op}: out has {np.dtype(out.dtype)}"
                                    f"{list(out.shape)}, the result is {np.dtype(dtype)}{list(shape)}")
            if isinstance(out, DeviceArray):
                return out
            if not isinstance(out, np.ndarray) or not out.flags.writeable:
                raise ArgumentError(f"vkir.ops.{self.op}: out must be a DeviceArray or a "
                                    "writeable numpy array")
        return empty(shape, dtype, device=self.device)

    def finish(self, result):
        """What the caller gets: `out` (filled), the DeviceArray, or a numpy array."""
        from ..api import DeviceArray

        if self.out is not None and not isinstance(self.out, DeviceArray):
            self.out[...] = result.numpy()
            return self.out if self.out_tensor is None else self.out_tensor
        if self.out is not None or self.returns_device:
            return result
        if self.returns_torch:
            import torch

            return torch.from_numpy(result.numpy())
        return result.numpy()


def view(a, shape):
    """A DeviceArray sharing `a`'s buffer with another shape of the same size."""
    from ..api import DeviceArray

    shape = tuple(int(s) for s in shape)
    assert int(np.prod(shape, dtype=np.int64)) == a.size
    return DeviceArray(a.buffer, shape, a.dtype, a.device)


def check_positive(what: str, **values) -> None:
    """Raise ArgumentError naming the first of `values` (a template's sizes and schedule
    parameters) that is not a positive int: "<what>: <name> must be a positive int"."""
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise ArgumentError(f"{what}: {name} must be a positive int, got {value!r}")


def axis_index(op: str, axis, ndim: int) -> int:
    """`axis` normalized to 0..ndim-1 (negative counts from the end)."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise ArgumentError(f"vkir.ops.{op}: axis must be an int or None, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ArgumentError(f"vkir.ops.{op}: axis {axis} is out of range for {ndim} dims")
    return int(axis) % ndim
