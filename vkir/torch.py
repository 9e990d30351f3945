"""`vkir.torch`: vkir kernels as torch custom ops.

    layer = vkir.torch.op(affine_tanh, outputs=("y",))   # the custom op "vkir::affine_tanh"
    y = layer(x, w, b)                                    # a new tensor, shaped from the buffers
    y.sum().backward()                                    # runs vkir.grad's adjoint kernel

`op(func, *, outputs, name=None)` registers `torch.library.custom_op(f"vkir::{name}")` for a
`@T.prim_func` (or a built Kernel): its inputs are the parameters not named in `outputs`, in
parameter order (buffers as tensors, scalar parameters as Python numbers); its outputs are new
tensors, allocated from the output buffers' shapes with the symbolic sizes bound from the inputs'
shapes (and scalar arguments), and returned alone or as a tuple in `outputs` order. A fake
implementation gives `torch.compile` the same shapes and dtypes, so a model calling the op
compiles to one graph with the op as one node.

The autograd formula is a second custom op, `vkir::<name>_backward`, that runs the adjoint
kernel of `vkir.grad(func, wrt=<the float buffer inputs>)` on the saved inputs and outputs and
the incoming gradients: being an op with a fake implementation too, it traces under
`torch.compile` and `torch.library.opcheck`. Inputs are saved with `ctx.save_for_backward`, so
changing one in place before backward is torch's own RuntimeError (its version counter), never a
different gradient.

Tensors reach the kernel as vkir kernel calls take them (vkir.driver.call_args): CPU memory used
in place where the device can import it, else copied. The registry of ops is torch.library's;
this module only remembers which function each of its names was made for, so that asking again
returns the same op and another function under a taken name is refused.
"""

from __future__ import annotations

import operator
import threading

import numpy as np
import torch

from .errors import ArgumentError, UnsupportedError
from .ir import Add, Cast, FloorDiv, FloorMod, IntImm, Max, Min, Mul, Sub, Var

__all__ = ["op"]

_BINARY = {Add: operator.add, Sub: operator.sub, Mul: operator.mul, FloorDiv: operator.floordiv,
           FloorMod: operator.mod, Min: min, Max: max}
_SCALARS = {"float": "float", "int": "int", "uint": "int", "bool": "bool"}

# "vkir::name" -> (PrimFunc, custom op): what `op` made in this process (see the docstring)
_MADE: dict = {}
_MADE_LOCK = threading.Lock()


def op(func, *, outputs, name=None):
    """The torch custom op `vkir::<name or func.name>` that runs `func` (a @T.prim_func or a
    Kernel): inputs are the parameters not in `outputs`, outputs new tensors (a tuple for
    several, in `outputs` order). The same function (or a structurally equal one: the script
    run again) and name give the same op; the name of another function is an ArgumentError."""
    from .driver.kernel import Kernel
    from .ir import PrimFunc

    kernel = func if isinstance(func, Kernel) else None
    prim = kernel.func if kernel is not None else func
    if not isinstance(prim, PrimFunc):
        raise ArgumentError(f"vkir.torch.op: expected a @T.prim_func or a Kernel, got "
                            f"{type(func).__name__}")
    outputs = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    opname = name or prim.name
    if not isinstance(opname, str) or not opname.isidentifier():
        raise ArgumentError(f"vkir.torch.op: name must be an identifier, got {opname!r}")
    qualname = f"vkir::{opname}"
    with _MADE_LOCK:
        found = _MADE.get(qualname)
        if found is not None:
            if found[2] != outputs or not (found[0] is prim or _same(found[0], prim)):
                raise ArgumentError(f"vkir.torch.op: {qualname!r} is already the op of "
                                    f"{found[0].name} (outputs {list(found[2])}); give this one "
                                    "another name=")
            return found[1]
        spec = _Spec(prim, outputs, kernel, opname)
        custom = _register(spec, qualname)
        _MADE[qualname] = (prim, custom, outputs)
        return custom


class _Spec:
    """What the op of one function needs: its parameters split into inputs and outputs, the
    output shapes and dtypes, the float inputs that get gradients, and (built on first use)
    the kernel and its adjoint."""

    def __init__(self, func, outputs, kernel, name):
        from .autodiff.recording import accesses

        self.func, self.kernel, self.name = func, kernel, name
        params = []    # (name, Buffer or None, Var)
        for var in func.params:
            buf = func.buffer_map.get(var)
            params.append((buf.name if buf is not None else var.name, buf, var))
        names = [p[0] for p in params]
        unknown = [o for o in outputs if o not in names]
        if unknown or len(set(outputs)) != len(outputs) or not outputs:
            raise ArgumentError(f"vkir.torch.op: outputs {list(outputs)} must name distinct "
                                f"buffer parameters of {func.name} ({', '.join(names)})")
        self.params = params
        self.inputs = [p for p in params if p[0] not in outputs]
        self.outputs = [next(p for p in params if p[0] == o) for o in outputs]
        reads, writes = accesses(func)
        for pname, buf, _ in self.outputs:
            if buf is None:
                raise ArgumentError(f"vkir.torch.op: output {pname!r} of {func.name} is a scalar "
                                    "parameter; outputs are buffers")
            if pname not in writes:
                raise ArgumentError(f"vkir.torch.op: {func.name} never writes output {pname!r}")
        for pname, buf, _ in self.inputs:
            if buf is not None and pname in writes:
                raise ArgumentError(f"vkir.torch.op: {func.name} writes {pname!r}, which is not "
                                    f"in outputs; name every buffer the kernel writes there "
                                    "(a torch op returns what it writes)")
        # outputs the kernel reads or only accumulates into start as zeros
        self.zeroed = {p[0] for p in self.outputs if p[0] in reads or writes[p[0]]}
        self.wrt = [p[0] for p in self.inputs if p[1] is not None and p[1].dtype.is_float
                    and p[0] in reads]
        self._kernel, self._adjoints = kernel, {}   # wrt subset -> adjoint Kernel
        self._lock = threading.Lock()

    # -- schema and shapes -------------------------------------------------------------------
    def schema(self) -> str:
        args = ", ".join(f"{_schema_type(buf, var)} {pname}" for pname, buf, var in self.inputs)
        rets = "Tensor" if len(self.outputs) == 1 else \
            "(" + ", ".join("Tensor" for _ in self.outputs) + ")"
        return f"({args}) -> {rets}"

    def backward_schema(self) -> str:
        args = [f"{_schema_type(buf, var)} {pname}" for pname, buf, var in self.inputs]
        args += [f"Tensor {pname}" for pname, _, _ in self.outputs]
        args += [f"Tensor d_{pname}" for pname, _, _ in self.outputs]
        args.append("bool[] needs")
        rets = "Tensor" if len(self.wrt) == 1 else \
            "(" + ", ".join("Tensor" for _ in self.wrt) + ")"
        return f"({', '.join(args)}) -> {rets}"

    def sizes(self, args) -> dict:
        """{size Var: value} bound from the inputs' shapes and scalar arguments (ints or, in a
        fake run, torch SymInts); ArgumentError for a tensor of the wrong rank or dtype."""
        env = {}
        for (pname, buf, var), a in zip(self.inputs, args):
            if buf is None:
                env[var] = a
                continue
            if not isinstance(a, torch.Tensor):
                raise ArgumentError(f"vkir::{self.name}: argument {pname!r} must be a tensor, "
                                    f"got {type(a).__name__}")
            want = _torch_dtype(buf)
            if a.dtype != want or a.dim() != len(buf.shape):
                raise ArgumentError(f"vkir::{self.name}: argument {pname!r} takes a {want} "
                                    f"tensor of {len(buf.shape)} dims, got a {a.dtype} tensor of "
                                    f"shape {list(a.shape)}")
            for dim, size in zip(buf.shape, a.shape):
                if isinstance(dim, Var) and dim not in env:
                    env[dim] = size
        return env

    def output_shapes(self, env) -> list:
        return [[_value(dim, env, self.name, pname) for dim in buf.shape]
                for pname, buf, _ in self.outputs]

    def new_outputs(self, args, fake: bool) -> list:
        env = self.sizes(args)
        out = []
        for (pname, buf, _), shape in zip(self.outputs, self.output_shapes(env)):
            make = torch.zeros if pname in self.zeroed and not fake else torch.empty
            out.append(make(shape, dtype=_torch_dtype(buf)))
        return out

    # -- kernels -------------------------------------------------------------------------------
    def forward_kernel(self):
        with self._lock:
            if self._kernel is None or (self.kernel is None and self._kernel.device.closed):
                from .api import build   # (again after the default device was shut down)

                self._kernel = build(self.func)
            return self._kernel

    def adjoint_kernel(self, wrt: tuple):
        """The adjoint kernel for the gradients of the inputs `wrt` (built once per subset:
        a backward computes only the gradients torch asks for)."""
        with self._lock:
            found = self._adjoints.get(wrt)
            if found is None or found.device.closed:
                from .autodiff.staged import adjoint_kernels

                # gathered where the reads' index maps invert: no contended atomics
                device = self._kernel.device if self._kernel is not None else None
                found = self._adjoints[wrt] = adjoint_kernels(self.func, wrt).build(device)
            return found

    def run(self, args) -> list:
        """The forward: new output tensors, written by the kernel."""
        outs = self.new_outputs(args, False)
        by_name = dict(zip((p[0] for p in self.inputs), (_contiguous(a) for a in args)))
        by_name.update(zip((p[0] for p in self.outputs), outs))
        self.forward_kernel()(*(by_name[p[0]] for p in self.params))
        return outs

    def run_backward(self, args) -> list:
        """The gradients of the `wrt` inputs from the adjoint kernel: `args` are the op's
        inputs, its outputs, the outputs' gradients, then which `wrt` gradients are needed
        (the others come back as empty tensors)."""
        n, m = len(self.inputs), len(self.outputs)
        inputs, outs, seeds, needs = args[:n], args[n:n + m], args[n + m:n + 2 * m], args[-1]
        by_name = dict(zip((p[0] for p in self.inputs), (_contiguous(a) for a in inputs)))
        by_name.update(zip((p[0] for p in self.outputs), (_contiguous(a) for a in outs)))
        wrt = tuple(w for w, need in zip(self.wrt, needs) if need)
        grads = {w: torch.zeros_like(by_name[w]) for w in wrt}
        if wrt:
            # the adjoint may consume its seeds: it gets copies
            seeds = [s.detach().clone(memory_format=torch.contiguous_format) for s in seeds]
            self.adjoint_kernel(wrt)(*(by_name[p[0]] for p in self.params), *seeds,
                                     *grads.values())
        return [grads.get(w, _unneeded(by_name[w])) for w in self.wrt]


def _register(spec: _Spec, qualname: str):
    """The custom op of `spec` with its fake implementation and, where an input is a float
    buffer the kernel reads, its autograd formula (through the backward op)."""
    def forward(*args):
        outs = spec.run(args)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def fake(*args):
        outs = spec.new_outputs(args, True)
        return outs[0] if len(outs) == 1 else tuple(outs)

    custom = torch.library.custom_op(qualname, forward, mutates_args=(),
                                     schema=spec.schema())
    custom.register_fake(fake)
    if not spec.wrt:
        return custom

    def backward_impl(*args):
        grads = spec.run_backward(args)
        return grads[0] if len(grads) == 1 else tuple(grads)

    def backward_fake(*args):
        named = dict(zip((p[0] for p in spec.inputs), args))
        grads = [torch.empty_like(named[w]) if need else _unneeded(named[w])
                 for w, need in zip(spec.wrt, args[-1])]
        return grads[0] if len(grads) == 1 else tuple(grads)

    back = torch.library.custom_op(f"{qualname}_backward", backward_impl, mutates_args=(),
                                   schema=spec.backward_schema())
    back.register_fake(backward_fake)
    n = len(spec.inputs)

    def setup_context(ctx, inputs, output):
        outs = (output,) if len(spec.outputs) == 1 else tuple(output)
        tensors = [a for a in inputs if isinstance(a, torch.Tensor)]
        ctx.scalars = [None if isinstance(a, torch.Tensor) else a for a in inputs]
        ctx.save_for_backward(*tensors, *outs)

    def backward(ctx, *grads):
        saved = list(ctx.saved_tensors)
        inputs = [saved.pop(0) if s is None else s for s in ctx.scalars]
        outs = saved
        seeds = [torch.zeros_like(o) if g is None else g for o, g in zip(outs, grads)]
        wanted = dict(zip((p[0] for p in spec.inputs), ctx.needs_input_grad))
        result = back(*inputs, *outs, *seeds, [bool(wanted[w]) for w in spec.wrt])
        result = (result,) if len(spec.wrt) == 1 else tuple(result)
        by_name = {w: g for w, g in zip(spec.wrt, result) if wanted[w]}
        return tuple(by_name.get(p[0]) for p in spec.inputs[:n])

    custom.register_autograd(backward, setup_context=setup_context)
    return custom


def _same(a, b) -> bool:
    """Whether PrimFuncs a and b are one function (the same script run again, as a notebook
    cell or a re-run program does, parses to an equal one)."""
    from .ir.structural import structural_equal

    return structural_equal(a, b, map_free_vars=True)


def _unneeded(like):
    """What the backward op gives for a gradient torch did not ask for: an empty tensor."""
    return like.new_empty((0,))


def _contiguous(a):
    return a.contiguous() if isinstance(a, torch.Tensor) else a


def _torch_dtype(buf):
    """The torch dtype of a buffer's elements."""
    npd = np.dtype(buf.dtype.element_of().numpy_dtype())
    if npd == np.bool_:
        return torch.bool
    return torch.from_numpy(np.empty(0, npd)).dtype


def _schema_type(buf, var) -> str:
    if buf is not None:
        return "Tensor"
    kind = _SCALARS.get(var.dtype.code)
    if kind is None or var.dtype.lanes != 1:
        raise UnsupportedError(f"vkir.torch.op: scalar parameter {var.name!r} of type "
                               f"{var.dtype} has no torch schema type")
    return kind


def _value(expr, env, opname: str, pname: str):
    """The value of shape expression `expr` (ints or SymInts from `env`)."""
    t = type(expr)
    if t is IntImm:
        return expr.value
    if t is Var:
        if expr not in env:
            raise ArgumentError(f"vkir::{opname}: the size {expr.name!r} of output {pname!r} is "
                                "not the size of any input's dimension; outputs are shaped from "
                                "the inputs")
        return env[expr]
    if t is Cast:
        return _value(expr.value, env, opname, pname)
    fn = _BINARY.get(t)
    if fn is None:
        raise UnsupportedError(f"vkir::{opname}: output {pname!r} has a shape entry of kind "
                               f"{t.__name__}, which vkir.torch cannot evaluate")
    return fn(_value(expr.a, env, opname, pname), _value(expr.b, env, opname, pname))
