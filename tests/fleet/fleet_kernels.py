"""The kernel body both fleet test modules tune on the actors: `doubling`, behind their autotuned
templates (each module keeps its own template, with its own configs, so their tuning caches stay
apart). The vector add they both send is vkir.tools.demo's `vadd`.

The actors cannot import test-side modules, so every module that sends these registers this one
with `ray.cloudpickle.register_pickle_by_value` (as it registers itself).
"""

from vkir import T


def doubling(n, w):
    """The PrimFunc c = 2 * a for n float32 elements, `w` invocations per workgroup (n a
    multiple of w)."""
    @T.prim_func
    def f(a: T.Buffer((n,), "float32"), c: T.Buffer((n,), "float32")):
        for bx in T.thread_binding(n // w, "blockIdx.x"):
            for tx in T.thread_binding(w, "threadIdx.x"):
                c[bx * w + tx] = a[bx * w + tx] * T.float32(2)
    return f
