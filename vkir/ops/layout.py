"""`vkir.ops.transpose(x, axes)`: permute the axes of an array, and its kernel template
`transpose_kernel(shape, axes, ...)`.

Schedule: each invocation writes `v` consecutive output elements with one vector store, reading
the input elements they come from (a gather); `w` invocations per workgroup.
"""

from __future__ import annotations

import numpy as np

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ._common import Call, view

_TEXT = '''
@T.prim_func
def transpose(x: T.Buffer((TOTAL,), "float32"), y: T.Buffer((TOTAL,), "float32")):
    for bx in T.thread_binding((TOTAL // V + W - 1) // W, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            e = (bx * W + tx) * V
            if e < TOTAL:
                for v in T.vectorized(V):
                    y[e + v] = x[{index}]
'''


@autotune(configs={"cpu": [dict(w=64, v=4), dict(w=64, v=1)],
                   "default": [dict(w=256, v=4), dict(w=256, v=1)]},
          key=("shape", "axes"))
def transpose_kernel(shape, axes, w=64, v=4):
    """The PrimFunc y = x.transpose(axes) on flat buffers of x's size (`shape` is x's shape):
    output element e reads the input element at the position its coordinates map to."""
    shape = tuple(int(s) for s in shape)
    axes = tuple(int(a) for a in axes)
    if sorted(axes) != list(range(len(shape))):
        raise ArgumentError(f"transpose kernel: axes {list(axes)} are not a permutation of "
                            f"{len(shape)} dims")
    total = int(np.prod(shape, dtype=np.int64))
    if v not in (1, 2, 4) or total % v or total == 0:
        raise ArgumentError(f"transpose kernel: {total} elements are not a multiple of the "
                            f"vector width {v}")
    in_strides = [int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]
    out_shape = [shape[a] for a in axes]
    terms = []
    for k, a in enumerate(axes):
        after = int(np.prod(out_shape[k + 1:], dtype=np.int64))
        coord = f"(e + v) // {after}" if after > 1 else "(e + v)"
        if k > 0:
            coord = f"{coord} % {out_shape[k]}"
        terms.append(f"{coord} * {in_strides[a]}" if in_strides[a] != 1 else coord)
    text = _TEXT.format(index=" + ".join(terms) or "0")
    return from_script(text, env=dict(TOTAL=total, W=w, V=v), file="<vkir.ops.transpose>")


def transpose(x, axes=None, device=None, out=None):
    """x with its axes permuted (`axes` default: reversed), like numpy.transpose."""
    call = Call("transpose", {"x": x}, device, out)
    X = call.arrays["x"]
    nd = X.ndim
    if axes is None:
        axes = tuple(range(nd))[::-1]
    try:
        axes = tuple(int(a) % nd if -nd <= int(a) < nd else None for a in axes) if nd else ()
    except TypeError:
        raise ArgumentError(f"vkir.ops.transpose: axes must be a sequence of ints, got "
                            f"{axes!r}") from None
    if None in axes or sorted(axes) != list(range(nd)):
        raise ArgumentError(f"vkir.ops.transpose: axes {list(axes)} are not a permutation of "
                            f"{nd} dims")
    out_shape = tuple(X.shape[a] for a in axes)
    res = call.result(out_shape)
    if X.size == 0:
        return call.finish(res)
    k = transpose_kernel.kernel(call.device, shape=tuple(X.shape), axes=axes)
    k(view(call.device_array("x"), (X.size,)), view(res, (X.size,)))
    return call.finish(res)


transpose.kernel = transpose_kernel
