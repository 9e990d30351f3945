"""`adjoint_kernels(f, wrt)`: the adjoint of f as a short sequence of kernels without contended
atomics where the reads' index maps can be inverted.

`vkir.grad` returns one kernel: each invocation runs its statements backwards and adds the
adjoints of reads that several invocations share (`w[k, j]` of a dense layer, read by every row
i) into d_w with atomic adds, all invocations contending for the same few elements. Here the
first kernel is that adjoint with those reads left out; where their statement's seed is a
local's adjoint it writes the seed into a scratch buffer indexed by the invocation (the
`d_pre[i, j]` of the layer). Then one gather kernel per such wrt buffer, launched over its
index space, sums each element's contributions over the iterations that read it
(vkir.autodiff.gather): `d_w[k, j] = sum_i seed[i, j] * x[i, k]`, one writer per element. A
gradient of few elements each read in many iterations (a bias, a scalar weight) is gathered in
chunks, each element's sum cut into parts over more invocations, which a last kernel adds. Reads
whose map cannot be inverted (a data-dependent index, a value that depends on a local the
gather cannot recompute) keep their atomic adds in the first kernel.

Every kernel takes the same arguments: f's parameters, the seeds d_<output>, the gradients
d_<wrt> (added into, as with vkir.grad), then the scratch buffers (`scratch_shapes(args)`
gives their shapes for the call's arguments; their contents need no initial value).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..errors import UnsupportedError
from ..ir import IntImm, PrimFunc, Var, decl_buffer
from .adjoint import prepare
from .derivatives import where
from .gather import gather_kernel, iterations, plan, sum_kernel


@dataclass(frozen=True)
class AdjointKernels:
    """The kernels of one adjoint, run in order with the same arguments (see the module doc).
    `gathered`: the wrt names whose shared reads are summed by gather kernels; `atomic`: those
    whose shared reads still use atomic adds in the first kernel."""

    kernels: tuple
    scratch: tuple
    gathered: tuple
    atomic: tuple
    func: PrimFunc

    def build(self, device=None) -> "BuiltAdjoint":
        """The kernels built for `device` (vkir.build), callable as one adjoint kernel."""
        from ..api import build

        return BuiltAdjoint(self, [build(k, device=device) for k in self.kernels])

    def scratch_shapes(self, args) -> list:
        """The shape of each scratch buffer for a call of f with `args` (f's parameters in
        order: arrays with a .shape for the buffers), its size variables bound from them."""
        sizes = {}
        f = self.func
        for var, arg in zip(f.params, args):
            buf = f.buffer_map.get(var)
            if buf is None:
                continue
            for dim, n in zip(buf.shape, getattr(arg, "shape", ())):
                if isinstance(dim, Var):
                    sizes.setdefault(dim, int(n))
        return [tuple(d.value if not isinstance(d, Var) else sizes[d] for d in b.shape)
                for b in self.scratch]


# a gradient of at most SMALL elements whose gather runs LONG iterations per element (or a
# number only known at run time) is summed in CHUNKS parts, then the parts are added up
SMALL, LONG, CHUNKS = 64, 4096, 32


def _elements(buf):
    n = 1
    for d in buf.shape:
        if not isinstance(d, IntImm):
            return None
        n *= d.value
    return n


def _chunks(buf, sites) -> int:
    """How many parts each element's gather is cut into (1: none)."""
    n = _elements(buf)
    if n is None or n > SMALL:
        return 1
    most = iterations(sites)
    return CHUNKS if most is None or most >= LONG else 1


class BuiltAdjoint:
    """The built kernels of an AdjointKernels, called as one kernel: `(*args, *seeds, *grads)`
    as vkir.grad's adjoint takes them (DeviceArrays, numpy arrays or torch tensors). The scratch
    buffers of the last call's shapes are kept for the next (a launch on buffers the runtime
    has seen before costs less); calls from several threads take turns, since they share them."""

    def __init__(self, plan: AdjointKernels, kernels):
        self.plan, self.kernels = plan, list(kernels)
        self.device = self.kernels[0].device
        self._lock = threading.Lock()
        self._scratch = ((), [])   # (shapes, arrays)

    def __call__(self, *args) -> None:
        from ..driver.arrays import empty

        shapes = tuple(self.plan.scratch_shapes(args[:len(self.plan.func.params)]))
        with self._lock:
            if self._scratch[0] != shapes:
                self._scratch = (shapes, [empty(shape, b.dtype, device=self.device)
                                          for shape, b in zip(shapes, self.plan.scratch)])
            for k in self.kernels:
                k(*args, *self._scratch[1])


def adjoint_kernels(f: PrimFunc, wrt) -> AdjointKernels:
    """The adjoint of f with respect to `wrt` (as vkir.grad takes them) as a first kernel plus
    one gather kernel per wrt buffer whose shared reads can be gathered (the module's doc)."""
    setup = prepare(f, wrt)
    func = setup.func
    sizes = {d for b in func.buffer_map.values() for d in b.shape if isinstance(d, Var)}
    gather = plan(func.body, set(setup.shared), setup.seeds, setup.grads, setup.last, sizes)
    for buf, read in setup.shared.items():
        if buf not in gather.sites and buf.dtype != "float32":
            raise UnsupportedError(
                f"vkir.grad: several invocations of {func.name} may read the same element of "
                f"{buf.name!r}{where(read)} through an index vkir cannot invert, so the "
                f"adjoint adds into d_{buf.name} with T.atomic_add, which has no {buf.dtype} "
                "form (float32 only); make each invocation read its own elements, or take the "
                "gradient in float32")
    scratch = []
    for entries in gather.scratch.values():
        scratch += [buf for buf, _, _ in entries if buf not in scratch]
    splits = {}
    for buf, sites in gather.sites.items():
        chunks = _chunks(buf, sites)
        if chunks > 1:
            partial = decl_buffer((_elements(buf), chunks), buf.dtype, f"part_{buf.name}")
            splits[buf] = (partial, chunks)
            scratch.append(partial)
    kernels = [setup.adjoint(setup.stage_one(gather), func.name + "_grad", scratch)]
    params, bmap = setup.params(scratch)
    for buf, sites in gather.sites.items():
        name = f"{func.name}_grad_{buf.name}"
        kernels.append(gather_kernel(name, params, bmap, buf, setup.grads[buf], sites,
                                     func.attrs, splits.get(buf)))
        if buf in splits:
            kernels.append(sum_kernel(name + "_sum", params, bmap, buf, setup.grads[buf],
                                      *splits[buf], func.attrs))
    names = [b.name for b in setup.grads]
    return AdjointKernels(tuple(kernels), tuple(scratch),
                          tuple(n for n, b in zip(names, setup.grads) if b in gather.sites),
                          tuple(n for n, b in zip(names, setup.grads)
                                if b in setup.shared and b not in gather.sites), func)
